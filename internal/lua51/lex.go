package lua51

import (
	"fmt"
	"strconv"
	"strings"
)

// token is a Lua 5.1 token: a byte value for a one-character token, or
// one of the constants below (llex.h's RESERVED, in the same order).
type token int

const (
	tkAnd token = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

// tokenText is how messages name each token from tkAnd on (luaX_tokens).
var tokenText = [...]string{
	"and", "break", "do", "else", "elseif",
	"end", "false", "for", "function", "if",
	"in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=",
	"<number>", "<name>", "<string>", "<eof>",
}

// reserved maps each reserved word to its token.
var reserved = func() map[string]token {
	m := map[string]token{}
	for t := tkAnd; t <= tkWhile; t++ {
		m[tokenText[t-tkAnd]] = t
	}
	return m
}()

// eoz is the character past the end of the source.
const eoz = -1

// errSyntax is a syntax error of the chunk: Lua's message, whole.
type errSyntax string

func (e errSyntax) Error() string { return string(e) }

// lexer is Lua 5.1's lexical analyzer (llex.c): it reads tokens one by
// one, and words its errors, and those of the parser, as Lua does.
type lexer struct {
	src     string
	next    int // index of the character after current
	current int // the current character, or eoz
	// line is the line the lexer is on; lastLine the line it was on
	// when the current token was asked for (Lua's lastline).
	line, lastLine int
	// buf is the text of the last token read (Lua's buffer: a name,
	// number or string as written, escapes resolved), which messages
	// quote for those tokens.
	buf   []byte
	chunk string // the chunk's name in messages (luaO_chunkid)

	tok      token // the current token
	ahead    token // the look-ahead token, tkEOS when none
	hasAhead bool
}

func newLexer(src, chunk string) *lexer {
	lx := &lexer{src: src, line: 1, lastLine: 1, chunk: chunk}
	lx.advance()
	return lx
}

// advance reads the next character.
func (lx *lexer) advance() {
	if lx.next < len(lx.src) {
		lx.current = int(lx.src[lx.next])
		lx.next++
		return
	}
	lx.current = eoz
	lx.next = len(lx.src) + 1
}

func (lx *lexer) save(c int) { lx.buf = append(lx.buf, byte(c)) }

func (lx *lexer) saveAndAdvance() {
	lx.save(lx.current)
	lx.advance()
}

func (lx *lexer) atNewline() bool { return lx.current == '\n' || lx.current == '\r' }

// fail raises a syntax error at the current line, quoting tok's text
// when tok is not 0 (luaX_lexerror).
func (lx *lexer) fail(msg string, tok token) {
	msg = fmt.Sprintf("%s:%d: %s", lx.chunk, lx.line, msg)
	if tok != 0 {
		msg = fmt.Sprintf("%s near '%s'", msg, lx.text(tok))
	}
	panic(errSyntax(msg))
}

// text is how a message quotes tok (txtToken): the text read for a
// name, number or string (up to a NUL, as C strings end there).
func (lx *lexer) text(tok token) string {
	switch tok {
	case tkName, tkString, tkNumber:
		s := string(lx.buf)
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return s
	}
	return tokenString(tok)
}

// tokenString names a token in messages (luaX_token2str).
func tokenString(tok token) string {
	if tok < tkAnd {
		if tok < 32 || tok == 127 {
			return fmt.Sprintf("char(%d)", tok)
		}
		return string([]byte{byte(tok)})
	}
	return tokenText[tok-tkAnd]
}

// syntaxError raises msg about the current token (luaX_syntaxerror).
func (lx *lexer) syntaxError(msg string) { lx.fail(msg, lx.tok) }

// nextToken moves to the next token (luaX_next).
func (lx *lexer) nextToken() {
	lx.lastLine = lx.line
	if lx.hasAhead {
		lx.tok, lx.hasAhead = lx.ahead, false
		return
	}
	lx.tok = lx.scan()
}

// lookahead reads the token after the current one (luaX_lookahead).
func (lx *lexer) lookahead() token {
	lx.ahead, lx.hasAhead = lx.scan(), true
	return lx.ahead
}

func (lx *lexer) newline() {
	old := lx.current
	lx.advance()
	if lx.atNewline() && lx.current != old {
		lx.advance() // \n\r or \r\n
	}
	lx.line++
}

func isSpace(c int) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c int) bool { return isAlpha(c) || isDigit(c) }

// scan reads one token (llex).
func (lx *lexer) scan() token {
	lx.buf = lx.buf[:0]
	for {
		switch c := lx.current; {
		case c == '\n' || c == '\r':
			lx.newline()
		case c == '-':
			lx.advance()
			if lx.current != '-' {
				return '-'
			}
			lx.advance()
			if lx.current == '[' {
				sep := lx.skipSep()
				lx.buf = lx.buf[:0]
				if sep >= 0 {
					lx.longString(sep, false)
					lx.buf = lx.buf[:0]
					continue
				}
			}
			for !lx.atNewline() && lx.current != eoz {
				lx.advance()
			}
		case c == '[':
			sep := lx.skipSep()
			if sep >= 0 {
				lx.longString(sep, true)
				return tkString
			}
			if sep == -1 {
				return '['
			}
			lx.fail("invalid long string delimiter", tkString)
		case c == '=' || c == '<' || c == '>' || c == '~':
			lx.advance()
			if lx.current != '=' {
				return token(c)
			}
			lx.advance()
			return map[int]token{'=': tkEq, '<': tkLe, '>': tkGe, '~': tkNe}[c]
		case c == '"' || c == '\'':
			lx.shortString(c)
			return tkString
		case c == '.':
			lx.saveAndAdvance()
			if lx.current == '.' {
				lx.saveAndAdvance()
				if lx.current == '.' {
					lx.saveAndAdvance()
					return tkDots
				}
				return tkConcat
			}
			if !isDigit(lx.current) {
				return '.'
			}
			lx.numeral()
			return tkNumber
		case c == eoz:
			return tkEOS
		case isSpace(c):
			lx.advance()
		case isDigit(c):
			lx.numeral()
			return tkNumber
		case isAlpha(c) || c == '_':
			for isAlnum(lx.current) || lx.current == '_' {
				lx.saveAndAdvance()
			}
			if t, ok := reserved[string(lx.buf)]; ok {
				return t
			}
			return tkName
		default:
			lx.advance()
			return token(c)
		}
	}
}

// numeral reads a number (read_numeral): digits and dots, an exponent,
// then any letters, digits and underscores, which must make a number.
func (lx *lexer) numeral() {
	for isDigit(lx.current) || lx.current == '.' {
		lx.saveAndAdvance()
	}
	if lx.current == 'E' || lx.current == 'e' {
		lx.saveAndAdvance()
		if lx.current == '+' || lx.current == '-' {
			lx.saveAndAdvance()
		}
	}
	for isAlnum(lx.current) || lx.current == '_' {
		lx.saveAndAdvance()
	}
	if _, ok := str2d(string(lx.buf)); !ok {
		lx.fail("malformed number", tkNumber)
	}
}

// skipSep reads the [ or ] of a long bracket and the = after it: the
// level (the number of =) when the same bracket follows, else -level-1.
func (lx *lexer) skipSep() int {
	count, s := 0, lx.current
	lx.saveAndAdvance()
	for lx.current == '=' {
		lx.saveAndAdvance()
		count++
	}
	if lx.current == s {
		return count
	}
	return -count - 1
}

// longString reads a long string or, when !keep, a long comment
// (read_long_string). A [[ inside is text: the Lua of the reference
// redis-server (Debian's liblua5.1) is built without LUA_COMPAT_LSTR,
// whose nesting check or count would refuse or pair it.
func (lx *lexer) longString(sep int, keep bool) {
	lx.saveAndAdvance() // the second [
	if lx.atNewline() {
		lx.newline()
	}
	for {
		switch lx.current {
		case eoz:
			if keep {
				lx.fail("unfinished long string", tkEOS)
			}
			lx.fail("unfinished long comment", tkEOS)
		case ']':
			if lx.skipSep() == sep {
				lx.saveAndAdvance()
				return
			}
		case '\n', '\r':
			lx.save('\n')
			lx.newline()
			if !keep {
				lx.buf = lx.buf[:0]
			}
		default:
			if keep {
				lx.saveAndAdvance()
			} else {
				lx.advance()
			}
		}
	}
}

// shortString reads a quoted string (read_string).
func (lx *lexer) shortString(del int) {
	lx.saveAndAdvance()
	for lx.current != del {
		switch lx.current {
		case eoz:
			lx.fail("unfinished string", tkEOS)
		case '\n', '\r':
			lx.fail("unfinished string", tkString)
		case '\\':
			lx.advance() // the \ is not kept
			var c int
			switch lx.current {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				lx.save('\n')
				lx.newline()
				continue
			case eoz:
				continue // unfinished, said on the next round
			default:
				if !isDigit(lx.current) {
					lx.saveAndAdvance() // \\, \", \' and any other
					continue
				}
				c = 0
				for i := 0; i < 3 && isDigit(lx.current); i++ {
					c = 10*c + lx.current - '0'
					lx.advance()
				}
				if c > 255 {
					lx.fail("escape sequence too large", tkString)
				}
				lx.save(c)
				continue
			}
			lx.save(c)
			lx.advance()
		default:
			lx.saveAndAdvance()
		}
	}
	lx.saveAndAdvance() // the closing quote
}

// str2d reads s as a number the way Lua 5.1's luaO_str2d does with C's
// strtod (glibc's, which reads hexadecimal too) and strtoul: the whole
// text, blanks around it allowed.
func str2d(s string) (float64, bool) {
	t := strings.TrimLeft(s, " \t\n\r\v\f")
	n := strtodPrefix(t)
	if n == 0 {
		return 0, false
	}
	f, ok := parseStrtod(t[:n])
	if !ok {
		return 0, false
	}
	rest := t[n:]
	if rest != "" && (rest[0] == 'x' || rest[0] == 'X') {
		// "0x" with no digit: strtod read the 0, strtoul reads it again
		// (and nothing more, so the x remains).
		return 0, false
	}
	if strings.TrimLeft(rest, " \t\n\r\v\f") != "" {
		return 0, false
	}
	return f, true
}

// strtodPrefix is the length of the longest prefix of s that strtod
// reads as a number (decimal or hexadecimal, signed, "inf", "nan").
func strtodPrefix(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	lower := strings.ToLower(s[i:])
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return i + 8
	case strings.HasPrefix(lower, "inf"):
		return i + 3
	case strings.HasPrefix(lower, "nan"):
		return i + 3
	}
	digits := func(j int, hex bool) int {
		for j < len(s) && (isDigit(int(s[j])) || hex && strings.IndexByte("abcdefABCDEF", s[j]) >= 0) {
			j++
		}
		return j
	}
	hex := len(s) > i+2 && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X')
	start := i
	if hex {
		start = i + 2
	}
	j := digits(start, hex)
	mant := j - start
	if j < len(s) && s[j] == '.' {
		k := digits(j+1, hex)
		mant += k - j - 1
		j = k
	}
	if mant == 0 {
		if hex {
			return i + 1 // the 0 before the x
		}
		return 0
	}
	exp := byte('e')
	if hex {
		exp = 'p'
	}
	if j < len(s) && (s[j]|0x20) == exp {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if e := digits(k, false); e > k {
			j = e
		}
	}
	return j
}

// parseStrtod converts a prefix strtodPrefix accepted.
func parseStrtod(s string) (float64, bool) {
	body := strings.TrimLeft(s, "+-")
	lower := strings.ToLower(body)
	if strings.HasPrefix(lower, "inf") || strings.HasPrefix(lower, "nan") {
		f, err := strconv.ParseFloat(s[:len(s)-len(body)]+lower[:3], 64)
		return f, err == nil
	}
	if strings.HasPrefix(lower, "0x") && !strings.Contains(lower, "p") {
		s += "p0" // Go wants the binary exponent C may leave out
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true // strtod gives ±HUGE_VAL or 0, and Lua takes it
		}
		return 0, false
	}
	return f, true
}
