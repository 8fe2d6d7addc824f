package resp

import (
	"bytes"
	"math"

	"github.com/redamo/redamo/commands"
)

// Redis's framing limits (networking.c).
const (
	// inlineMax bounds an inline request, and the count line of a multibulk
	// request or bulk, that has no line ending yet (PROTO_INLINE_MAX_SIZE).
	inlineMax = 64 * 1024
	// maxMultibulk is the largest argument count Redis 7.0 accepts (INT_MAX).
	maxMultibulk = math.MaxInt32
	// Before AUTH, Redis 7.0.15 refuses requests with more than 10 arguments
	// or an argument over 16 KB, so unauthenticated clients cannot make the
	// server buffer much.
	unauthMultibulk = 10
	unauthBulk      = 16384
)

// protocolError is a malformed request; Redis replies "-ERR Protocol error:
// <msg>" and closes the connection.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

// The protocol errors, worded as Redis 7.0 words them.
var (
	errTooBigInline     = &protocolError{"too big inline request"}
	errTooBigMbulkCount = &protocolError{"too big mbulk count string"}
	errTooBigBulkCount  = &protocolError{"too big bulk count string"}
	errInvalidMultibulk = &protocolError{"invalid multibulk length"}
	errInvalidBulk      = &protocolError{"invalid bulk length"}
	errUnbalancedQuotes = &protocolError{"unbalanced quotes in request"}
	errUnauthMultibulk  = &protocolError{"unauthenticated multibulk length"}
	errUnauthBulk       = &protocolError{"unauthenticated bulk length"}
)

// parser reads a client's requests exactly as Redis 7.0's
// processInputBuffer does: inline and multibulk requests, its limits and its
// quirks (it finds lines by '\r' and skips the byte after it unchecked, skips
// the two bytes after a bulk's data unchecked, ignores *0 and negative
// counts, stops a line search at a NUL byte).
//
// It parses in place: a request's arguments are slices of the caller's
// input, so an ordinary request costs no copy. A request that has not fully
// arrived stays in the input, where the caller must present it again (from
// its first byte, with more bytes after it) on the next call; the parser
// remembers how far it got, so a request arriving in many pieces is parsed
// once, not once per piece.
//
// Like Redis, it checks the unauthenticated limits against the connection's
// state as of the request being parsed: the caller runs each request before
// it asks for the next, so an AUTH earlier in a pipeline has taken effect.
type parser struct {
	// maxBulk is proto-max-bulk-len; authRequired tells whether the
	// connection is still unauthenticated (both read at each header, as the
	// server may change them between requests).
	maxBulk      func() int64
	authRequired func() bool

	// The multibulk request under way, while it is incomplete.
	multi    bool  // its count line has been read
	argsLeft int   // bulks still expected
	off      int   // where the next header (bulkLen < 0) or bulk data starts
	bulkLen  int64 // length of the bulk whose data is awaited, -1 for none
	marks    []int // start and end offsets of the bulks read so far

	args [][]byte // the last request's arguments (reused)
}

// maxKeptArgs bounds the argument slices a connection keeps between
// requests: a rare huge request does not pin its memory for good.
const maxKeptArgs = 1024

// indexLine returns the index of the first c in b, or -1 if there is none or
// a NUL comes first (Redis searches its query buffer with strchr).
func indexLine(b []byte, c byte) int {
	// Header lines are a few bytes: one pass over them beats two
	// IndexByte calls, which win on long inline lines.
	n := min(len(b), shortLine)
	for i, x := range b[:n] {
		switch x {
		case c:
			return i
		case 0:
			return -1
		}
	}
	i := bytes.IndexByte(b[n:], c)
	if i < 0 || bytes.IndexByte(b[n:n+i], 0) >= 0 {
		return -1
	}
	return n + i
}

// shortLine is how far indexLine scans byte by byte.
const shortLine = 32

// next parses the request at the start of in. It returns the request's
// length n and its arguments, which are slices of in valid until the next
// call; n is 0 when the request is incomplete (read more, then call again
// with in starting at the same request). A request of no arguments (an empty
// line, *0) has n > 0 and no args: skip it. A non-nil error is a protocol
// error at the start of in (the requests before it are not affected); the
// connection ends there, and so does the parser.
func (p *parser) next(in []byte) (args [][]byte, n int, err error) {
	if !p.multi {
		if cap(p.args) > maxKeptArgs {
			p.args, p.marks = nil, nil
		}
		if len(in) == 0 {
			return nil, 0, nil
		}
		if in[0] != '*' {
			return p.inline(in)
		}
		if n, err := p.multibulkHeader(in); n > 0 || err != nil {
			return nil, n, err
		}
		if !p.multi {
			return nil, 0, nil
		}
	}
	for p.argsLeft > 0 {
		if p.bulkLen < 0 {
			ok, err := p.bulkHeader(in[p.off:])
			if !ok || err != nil {
				return nil, 0, err
			}
		}
		// The data, then two bytes Redis skips without looking at them.
		if int64(len(in)-p.off-2) < p.bulkLen {
			return nil, 0, nil
		}
		end := p.off + int(p.bulkLen)
		p.marks = append(p.marks, p.off, end)
		p.off, p.bulkLen = end+2, -1
		p.argsLeft--
	}
	args = p.args[:0]
	for i := 0; i < len(p.marks); i += 2 {
		args = append(args, in[p.marks[i]:p.marks[i+1]:p.marks[i+1]])
	}
	p.args, n = args, p.off
	p.multi, p.off, p.marks = false, 0, p.marks[:0]
	return args, n, nil
}

// need returns how many bytes past in the request under way still needs at
// least, 0 when unknown: the caller may size its buffer by it, and by nothing
// a client merely announced.
func (p *parser) need(in []byte) int64 {
	if !p.multi || p.bulkLen < 0 {
		return 0
	}
	return max(p.bulkLen+2-int64(len(in)-p.off), 0)
}

// inline parses one inline request (a line of space-separated arguments).
// The line is unquoted in place.
func (p *parser) inline(in []byte) (args [][]byte, n int, err error) {
	nl := indexLine(in, '\n')
	if nl < 0 {
		if len(in) > inlineMax {
			return nil, 0, errTooBigInline
		}
		return nil, 0, nil
	}
	line := in[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, ok := splitArgs(line, p.args[:0])
	if !ok {
		return nil, 0, errUnbalancedQuotes
	}
	p.args = args
	return args, nl + 1, nil
}

// multibulkHeader parses "*<count>" at the start of in. It returns n > 0 for
// an ignored count (empty or negative), else starts the request (p.multi)
// when the line is complete.
func (p *parser) multibulkHeader(in []byte) (n int, err error) {
	cr := indexLine(in, '\r')
	if cr < 0 {
		if len(in) > inlineMax {
			return 0, errTooBigMbulkCount
		}
		return 0, nil
	}
	if cr > len(in)-2 {
		// The byte after '\r' has not arrived yet.
		return 0, nil
	}
	count, ok := parseLength(in[1:cr])
	if !ok || count > maxMultibulk {
		return 0, errInvalidMultibulk
	}
	if count > unauthMultibulk && p.authRequired != nil && p.authRequired() {
		return 0, errUnauthMultibulk
	}
	if count <= 0 {
		// Redis ignores empty and negative counts.
		return cr + 2, nil
	}
	p.multi, p.argsLeft, p.off, p.bulkLen = true, int(count), cr+2, -1
	return 0, nil
}

// bulkHeader parses "$<length>" at the start of in (the input from p.off);
// ok is false when it has not fully arrived.
func (p *parser) bulkHeader(in []byte) (ok bool, err error) {
	cr := indexLine(in, '\r')
	if cr < 0 {
		if len(in) > inlineMax {
			return false, errTooBigBulkCount
		}
		return false, nil
	}
	if cr > len(in)-2 {
		return false, nil
	}
	if in[0] != '$' {
		return false, &protocolError{"expected '$', got '" + string(in[:1]) + "'"}
	}
	n, ok := parseLength(in[1:cr])
	if !ok || n < 0 || n > p.maxBulkLen() {
		return false, errInvalidBulk
	}
	if n > unauthBulk && p.authRequired != nil && p.authRequired() {
		return false, errUnauthBulk
	}
	p.off += cr + 2
	p.bulkLen = n
	return true, nil
}

func (p *parser) maxBulkLen() int64 {
	if p.maxBulk == nil {
		return commands.DefaultProtoMaxBulkLen
	}
	return p.maxBulk()
}

// parseLength parses a count as Redis's string2ll does: an optional '-', no
// '+', no leading zeros, no spaces, at most 20 characters, within int64.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= 21 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// splitArgs splits an inline request as Redis's sdssplitargs does, appending
// the arguments to args: blanks separate arguments; "double quotes" allow \n
// \r \t \b \a \xHH and \<c> escapes; 'single quotes' allow \'; a closing
// quote must be followed by a blank or the end of the line. ok is false for
// unbalanced quotes.
//
// It unquotes in place: an argument is never longer than its source text,
// so each one is written over its own source (w never passes i) and is a
// slice of line.
func splitArgs(line []byte, args [][]byte) (_ [][]byte, ok bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		start, w := i, i
		put := func(c byte) {
			line[w] = c
			w++
		}
		inq, insq := false, false
		for done := false; !done; {
			var c byte
			end := i >= len(line)
			if !end {
				c = line[i]
			}
			switch {
			case inq:
				switch {
				case end:
					return nil, false
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					put(unhex(line[i+2])<<4 | unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						put('\n')
					case 'r':
						put('\r')
					case 't':
						put('\t')
					case 'b':
						put('\b')
					case 'a':
						put('\a')
					default:
						put(line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					put(c)
				}
			case insq:
				switch {
				case end:
					return nil, false
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					put('\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					put(c)
				}
			default:
				switch {
				case end || c == ' ' || c == '\n' || c == '\r' || c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					put(c)
				}
			}
			if !end {
				i++
			}
		}
		args = append(args, line[start:w:w])
	}
}

// isSpace is C's isspace in the "C" locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	default:
		return c - '0'
	}
}
