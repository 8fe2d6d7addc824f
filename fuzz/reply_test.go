package fuzz

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// value is one reply, parsed.
type value struct {
	// kind is the RESP type byte: + - : $ * _ , # ! = ( % ~.
	kind byte
	// str is a scalar's payload.
	str []byte
	// null marks RESP2's $-1 and *-1.
	null bool
	// elems are an aggregate's elements; a map's are key, value, ...
	elems []*value
}

func (v *value) isError() bool { return v.kind == '-' || v.kind == '!' }

// class is an error's first word (ERR, WRONGTYPE, ...), "" for a reply
// that is not an error.
func (v *value) class() string {
	if !v.isError() {
		return ""
	}
	w, _, _ := strings.Cut(string(v.str), " ")
	return w
}

// text is the reply for people: one line, binary escaped, long parts cut.
func (v *value) text() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v *value) format(b *strings.Builder) {
	switch {
	case v.null:
		fmt.Fprintf(b, "%c-1", v.kind)
	case v.kind == '*' || v.kind == '~' || v.kind == '%':
		fmt.Fprintf(b, "%c[", v.kind)
		for i, e := range v.elems {
			if b.Len() > 400 {
				fmt.Fprintf(b, " ...(%d elements)", len(v.elems))
				break
			}
			if i > 0 {
				b.WriteString(" ")
			}
			e.format(b)
		}
		b.WriteString("]")
	default:
		b.WriteByte(v.kind)
		b.WriteString(strconv.Quote(cut(string(v.str), 120)))
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
}

// errMalformed marks bytes that are not a well-formed reply: a finding,
// unlike an I/O error.
var errMalformed = errors.New("malformed reply")

// Limits on what one reply may hold, so that a broken server cannot make
// the fuzzer allocate without bound. No reply the fuzzer provokes comes
// near them.
const (
	maxReplyBulk  = 64 << 20
	maxReplyElems = 1 << 22
	maxReplyDepth = 200
)

// replyReader reads replies strictly: each type's payload must follow
// RESP's grammar, RESP3's types are allowed only on a connection that
// speaks RESP3, and RESP2's null bulk and null array only on one that
// speaks RESP2. A connection whose protocol the fuzzer cannot tell (a
// HELLO queued in MULTI) is read with either (proto 0).
type replyReader struct {
	r     *bufio.Reader
	proto int
}

func newReplyReader(r io.Reader) *replyReader {
	return &replyReader{r: bufio.NewReaderSize(r, 64<<10), proto: 2}
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// read reads one complete reply.
// read returns the next reply, passing over the push messages before it:
// a RESP3 client that turned CLIENT TRACKING on is sent invalidations
// between replies.
func (rr *replyReader) read() (*value, error) {
	for {
		v, err := rr.value(0)
		if err != nil || v.kind != '>' {
			return v, err
		}
	}
}

func (rr *replyReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := rr.r.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > maxReplyBulk {
				return nil, malformed("line longer than %d bytes", maxReplyBulk)
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return nil, malformed("connection closed inside a reply line %q", cut(string(line), 80))
			}
			return nil, err
		}
		break
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, malformed("line %q does not end in CRLF or has no type", cut(string(line), 80))
	}
	if bytes.IndexByte(line[:len(line)-2], '\r') >= 0 {
		return nil, malformed("CR inside line %q", cut(string(line), 80))
	}
	return line[:len(line)-2], nil
}

func (rr *replyReader) resp3Only(kind byte) error {
	if rr.proto == 2 {
		return malformed("RESP3 type %q on a RESP2 connection", kind)
	}
	return nil
}

// strictInt parses a RESP integer exactly as a server writes one: digits
// with an optional minus, no plus sign or zero padding, within int64.
func strictInt(b []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && strconv.FormatInt(n, 10) == string(b)
}

// strictDouble checks a RESP3 double: inf, -inf, nan or a finite decimal
// number (with an exponent or not).
func strictDouble(s string) bool {
	switch s {
	case "inf", "-inf", "nan":
		return true
	}
	if s == "" || strings.Trim(s, "0123456789.-+eE") != "" {
		return false
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

func (rr *replyReader) value(depth int) (*value, error) {
	if depth > maxReplyDepth {
		return nil, malformed("replies nested deeper than %d", maxReplyDepth)
	}
	line, err := rr.line()
	if err != nil {
		return nil, err
	}
	v := &value{kind: line[0]}
	payload := line[1:]
	scalar := func(ok bool, what string) (*value, error) {
		if !ok {
			return nil, malformed("%s %q", what, cut(string(payload), 80))
		}
		v.str = append([]byte{}, payload...)
		return v, nil
	}
	switch v.kind {
	case '+', '-':
		return scalar(true, "")
	case ':':
		_, ok := strictInt(payload)
		return scalar(ok, "integer")
	case '_':
		if err := rr.resp3Only(v.kind); err != nil {
			return nil, err
		}
		return scalar(len(payload) == 0, "null with a payload")
	case ',':
		if err := rr.resp3Only(v.kind); err != nil {
			return nil, err
		}
		return scalar(strictDouble(string(payload)), "double")
	case '#':
		if err := rr.resp3Only(v.kind); err != nil {
			return nil, err
		}
		return scalar(string(payload) == "t" || string(payload) == "f", "boolean")
	case '(':
		if err := rr.resp3Only(v.kind); err != nil {
			return nil, err
		}
		// Redis writes a script's {big_number = s} as it is, digits or
		// not ("(flt"), and redamo must send the same bytes: a big
		// number is checked as a line only.
		return scalar(true, "")
	case '$', '!', '=':
		if v.kind != '$' {
			if err := rr.resp3Only(v.kind); err != nil {
				return nil, err
			}
		}
		n, ok := strictInt(payload)
		switch {
		case !ok || n < -1 || n > maxReplyBulk:
			return nil, malformed("length %q of a %q reply", payload, v.kind)
		case n == -1 && (v.kind != '$' || rr.proto == 3):
			return nil, malformed("null %q on a RESP%d connection", line, rr.proto)
		case n == -1:
			v.null = true
			return v, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(rr.r, body); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, malformed("connection closed inside a %d-byte bulk", n)
			}
			return nil, err
		}
		if body[n] != '\r' || body[n+1] != '\n' {
			return nil, malformed("bulk of %d bytes not followed by CRLF", n)
		}
		v.str = body[:n]
		if v.kind == '=' && (n < 4 || v.str[3] != ':') {
			return nil, malformed("verbatim string without its format: %q", cut(string(v.str), 20))
		}
		return v, nil
	case '*', '~', '%', '>':
		if v.kind == '>' && depth > 0 {
			return nil, malformed("a push inside a reply")
		}
		if v.kind != '*' {
			if err := rr.resp3Only(v.kind); err != nil {
				return nil, err
			}
		}
		n, ok := strictInt(payload)
		switch {
		case !ok || n < -1 || n > maxReplyElems:
			return nil, malformed("count %q of a %q reply", payload, v.kind)
		case v.kind == '>' && n < 1:
			return nil, malformed("push of %d elements", n)
		case n == -1 && (v.kind != '*' || rr.proto == 3):
			return nil, malformed("null %q on a RESP%d connection", line, rr.proto)
		case n == -1:
			v.null = true
			return v, nil
		}
		if v.kind == '%' {
			n *= 2
		}
		v.elems = make([]*value, 0, min(n, 1024))
		for range n {
			e, err := rr.value(depth + 1)
			if errors.Is(err, io.EOF) {
				return nil, malformed("connection closed inside a %d-element %q", n, v.kind)
			}
			if err != nil {
				return nil, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	case '|':
		// No command the fuzzer sends asks for attributes.
		return nil, malformed("unexpected %q (attribute) reply", v.kind)
	}
	return nil, malformed("unknown type byte %q in %q", v.kind, cut(string(line), 80))
}

func TestReplyReaderStrict(t *testing.T) {
	cases := []struct {
		in    string
		proto int
		ok    bool
	}{
		{"+OK\r\n", 2, true},
		{"-ERR x\r\n", 2, true},
		{":-12\r\n", 2, true},
		{":+12\r\n", 2, false},
		{":012\r\n", 2, false},
		{":9223372036854775808\r\n", 2, false},
		{"$3\r\nabc\r\n", 2, true},
		{"$3\r\nabcd\r\n", 2, false},
		{"$-1\r\n", 2, true},
		{"$-1\r\n", 3, false},
		{"*-1\r\n", 3, false},
		{"$-2\r\n", 2, false},
		{"*2\r\n:1\r\n$1\r\na\r\n", 2, true},
		{"*2\r\n:1\r\n", 2, false},
		{"+O\rK\r\n", 2, false},
		{"+OK\n", 2, false},
		{"_\r\n", 2, false},
		{"_\r\n", 3, true},
		{"_x\r\n", 3, false},
		{",1.5\r\n", 3, true},
		{",-inf\r\n", 3, true},
		{",1e+300\r\n", 3, true},
		{",1.5x\r\n", 3, false},
		{",\r\n", 3, false},
		{"#t\r\n", 3, true},
		{"#x\r\n", 3, false},
		{"%1\r\n+a\r\n:1\r\n", 3, true},
		{"%1\r\n+a\r\n:1\r\n", 2, false},
		{"~1\r\n+a\r\n", 3, true},
		{"=5\r\ntxt:a\r\n", 3, true},
		{"=3\r\nabc\r\n", 3, false},
		{"!3\r\nERR\r\n", 3, true},
		{">1\r\n+a\r\n:1\r\n", 3, true},
		{">1\r\n+a\r\n:1\r\n", 2, false},
		{"*1\r\n>1\r\n+a\r\n", 3, false},
		{">0\r\n:1\r\n", 3, false},
		{"|1\r\n+a\r\n+b\r\n+c\r\n", 3, false},
		{"?x\r\n", 2, false},
		{"*1\r\n+a\r\n", 0, true},
		{"~1\r\n+a\r\n", 0, true},
		{"$-1\r\n", 0, true},
	}
	for _, tc := range cases {
		rr := newReplyReader(strings.NewReader(tc.in))
		rr.proto = tc.proto
		v, err := rr.read()
		if tc.ok {
			require.NoError(t, err, "%q", tc.in)
			_, err := rr.r.ReadByte()
			require.ErrorIs(t, err, io.EOF, "%q read to its end", tc.in)
			require.NotNil(t, v)
			continue
		}
		require.ErrorIs(t, err, errMalformed, "%q on RESP%d", tc.in, tc.proto)
	}
}
