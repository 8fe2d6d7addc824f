package resp

import (
	"bytes"
	"math"
	"strconv"

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

type stage uint8

const (
	stRequest stage = iota // at a request boundary
	stHeader               // expecting a bulk header ($n)
	stData                 // copying a bulk's bytes
	stTerm                 // skipping the two bytes after a bulk's data
)

// parser reads a client's request stream exactly as Redis 7.0's
// processInputBuffer does (inline and multibulk requests, its limits and its
// quirks: it finds lines by '\r' and skips the byte after it unchecked, skips
// the two bytes after a bulk's data unchecked, ignores *0 and negative
// counts, stops a line search at a NUL byte) and re-emits each request as
// canonical RESP (*n then $len bulks, CRLF everywhere).
//
// That canonical stream is what redcon's parser reads: redcon alone has no
// bulk or inline size limits (it would buffer whatever a client announces),
// rejects *0, and parses inline requests differently from Redis. Bulk data is
// streamed through as it arrives, so the parser's own memory stays bounded by
// one header or inline line.
type parser struct {
	in []byte // client bytes not yet consumed

	st        stage
	argsLeft  int   // bulks still expected in the current multibulk request
	bulkLeft  int64 // data bytes of the current bulk still to copy
	termLeft  int   // terminator bytes still to skip
	completed int   // requests emitted by the current feed call

	// maxBulk is proto-max-bulk-len; authRequired tells whether the
	// connection is still unauthenticated (both read at each header, as the
	// server may change them between requests).
	maxBulk      func() int64
	authRequired func() bool
}

// indexLine returns the index of the first c in b, or -1 if there is none or
// a NUL comes first (Redis searches its query buffer with strchr).
func indexLine(b []byte, c byte) int {
	i := bytes.IndexByte(b, c)
	if i < 0 || bytes.IndexByte(b[:i], 0) >= 0 {
		return -1
	}
	return i
}

// feed parses as much of p.in as it can, appending canonical RESP to out. A
// non-nil error is a protocol error at the current position; the bytes
// appended before it belong to requests that precede the malformed one.
// deferred is true when parsing stopped at a check that depends on the
// effect of the requests just emitted (AUTH before a large request): feed
// must be called again once they have run.
func (p *parser) feed(out []byte) (_ []byte, deferred bool, err error) {
	p.completed = 0
	for {
		switch p.st {
		case stRequest:
			if len(p.in) == 0 {
				return out, false, nil
			}
			var more bool
			if p.in[0] == '*' {
				out, more, deferred, err = p.multibulkHeader(out)
			} else {
				out, more, err = p.inline(out)
			}
			if err != nil || deferred || !more {
				return out, deferred, err
			}
		case stHeader:
			var more bool
			out, more, deferred, err = p.bulkHeader(out)
			if err != nil || deferred || !more {
				return out, deferred, err
			}
		case stData:
			if len(p.in) == 0 {
				return out, false, nil
			}
			k := int64(len(p.in))
			if k > p.bulkLeft {
				k = p.bulkLeft
			}
			out = append(out, p.in[:k]...)
			p.in = p.in[k:]
			p.bulkLeft -= k
			if p.bulkLeft > 0 {
				return out, false, nil
			}
			p.st, p.termLeft = stTerm, 2
		case stTerm:
			k := min(p.termLeft, len(p.in))
			p.in = p.in[k:]
			p.termLeft -= k
			if p.termLeft > 0 {
				return out, false, nil
			}
			out = append(out, '\r', '\n')
			p.argsLeft--
			if p.argsLeft == 0 {
				p.st = stRequest
				p.completed++
			} else {
				p.st = stHeader
			}
		}
	}
}

// inline parses one inline request (a line of space-separated arguments);
// more is false when input is missing.
func (p *parser) inline(out []byte) (_ []byte, more bool, err error) {
	nl := indexLine(p.in, '\n')
	if nl < 0 {
		if len(p.in) > inlineMax {
			return out, false, errTooBigInline
		}
		return out, false, nil
	}
	line := p.in[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, ok := splitArgs(line)
	if !ok {
		return out, false, errUnbalancedQuotes
	}
	p.in = p.in[nl+1:]
	if len(args) == 0 {
		return out, true, nil
	}
	out = appendHeader(out, '*', int64(len(args)))
	for _, a := range args {
		out = appendHeader(out, '$', int64(len(a)))
		out = append(out, a...)
		out = append(out, '\r', '\n')
	}
	p.completed++
	return out, true, nil
}

// multibulkHeader parses "*<count>"; more is false when input is missing.
func (p *parser) multibulkHeader(out []byte) (_ []byte, more, deferred bool, err error) {
	cr := indexLine(p.in, '\r')
	if cr < 0 {
		if len(p.in) > inlineMax {
			return out, false, false, errTooBigMbulkCount
		}
		return out, false, false, nil
	}
	if cr > len(p.in)-2 {
		// The byte after '\r' has not arrived yet.
		return out, false, false, nil
	}
	n, ok := parseLength(p.in[1:cr])
	if !ok || n > maxMultibulk {
		return out, false, false, errInvalidMultibulk
	}
	if n > unauthMultibulk && p.authRequired != nil && p.authRequired() {
		if p.completed > 0 {
			return out, false, true, nil
		}
		return out, false, false, errUnauthMultibulk
	}
	p.in = p.in[cr+2:]
	if n <= 0 {
		// Redis ignores empty and negative counts.
		return out, true, false, nil
	}
	out = appendHeader(out, '*', n)
	p.st, p.argsLeft = stHeader, int(n)
	return out, true, false, nil
}

// bulkHeader parses "$<length>"; more is false when input is missing.
func (p *parser) bulkHeader(out []byte) (_ []byte, more, deferred bool, err error) {
	cr := indexLine(p.in, '\r')
	if cr < 0 {
		if len(p.in) > inlineMax {
			return out, false, false, errTooBigBulkCount
		}
		return out, false, false, nil
	}
	if cr > len(p.in)-2 {
		return out, false, false, nil
	}
	if p.in[0] != '$' {
		return out, false, false, &protocolError{"expected '$', got '" + string(p.in[:1]) + "'"}
	}
	n, ok := parseLength(p.in[1:cr])
	if !ok || n < 0 || n > p.maxBulkLen() {
		return out, false, false, errInvalidBulk
	}
	if n > unauthBulk && p.authRequired != nil && p.authRequired() {
		if p.completed > 0 {
			return out, false, true, nil
		}
		return out, false, false, errUnauthBulk
	}
	p.in = p.in[cr+2:]
	out = appendHeader(out, '$', n)
	if n == 0 {
		p.st, p.termLeft = stTerm, 2
	} else {
		p.st, p.bulkLeft = stData, n
	}
	return out, true, false, nil
}

func (p *parser) maxBulkLen() int64 {
	if p.maxBulk == nil {
		return commands.DefaultProtoMaxBulkLen
	}
	return p.maxBulk()
}

func appendHeader(out []byte, prefix byte, n int64) []byte {
	out = append(out, prefix)
	out = strconv.AppendInt(out, n, 10)
	return append(out, '\r', '\n')
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

// splitArgs splits an inline request as Redis's sdssplitargs does: blanks
// separate arguments; "double quotes" allow \n \r \t \b \a \xHH and \<c>
// escapes; 'single quotes' allow \'; a closing quote must be followed by a
// blank or the end of the line. ok is false for unbalanced quotes.
func splitArgs(line []byte) (args [][]byte, ok bool) {
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		cur := []byte{}
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
					cur = append(cur, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case end:
					return nil, false
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
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
					cur = append(cur, c)
				}
			}
			if !end {
				i++
			}
		}
		args = append(args, cur)
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
