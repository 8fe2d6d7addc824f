package resp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type parseCase struct {
	name string
	in   string
	out  string // the requests read, as canonical RESP
	err  string // protocol error, "" for none
}

var parseCases = []parseCase{
	{"multibulk", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", ""},
	{"pipeline", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", ""},
	{"empty bulk", "*1\r\n$0\r\n\r\n", "*1\r\n$0\r\n\r\n", ""},
	{"binary bulk", "*1\r\n$4\r\n\r\n\x00\xff\r\n", "*1\r\n$4\r\n\r\n\x00\xff\r\n", ""},
	{"zero count ignored", "*0\r\nPING\r\n", "*1\r\n$4\r\nPING\r\n", ""},
	{"negative count ignored", "*-5\r\nPING\r\n", "*1\r\n$4\r\nPING\r\n", ""},
	{"bulk terminator not checked", "*1\r\n$4\r\nPINGxx", "*1\r\n$4\r\nPING\r\n", ""},
	{"header LF not checked", "*1\rX$4\rYPING\r\n", "*1\r\n$4\r\nPING\r\n", ""},
	{"inline", "SET k v\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", ""},
	{"inline LF only", "PING\nPING\n", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", ""},
	{"inline blanks", " \t echo\ta  \r\n", "*2\r\n$4\r\necho\r\n$1\r\na\r\n", ""},
	{"inline empty lines", "\r\n  \r\n\nPING\r\n", "*1\r\n$4\r\nPING\r\n", ""},
	{"inline double quotes", `echo "a b\n\x41\x4a\"" x` + "\r\n", "*3\r\n$4\r\necho\r\n$7\r\na b\nAJ\"\r\n$1\r\nx\r\n", ""},
	{"inline single quotes", `echo 'a\'b' ''` + "\r\n", "*3\r\n$4\r\necho\r\n$3\r\na'b\r\n$0\r\n\r\n", ""},
	{"inline quote mid token", "set a\"b\" c\r\n", "*3\r\n$3\r\nset\r\n$2\r\nab\r\n$1\r\nc\r\n", ""},
	{"inline bad hex kept", `echo "\x4g"` + "\r\n", "*2\r\n$4\r\necho\r\n$3\r\nx4g\r\n", ""},
	{"unbalanced", "set \"a\r\n", "", "unbalanced quotes in request"},
	{"closing quote then text", "set \"a\"b c\r\n", "", "unbalanced quotes in request"},
	{"triple quotes", "set \"\"\"a\"\"\" b\r\n", "", "unbalanced quotes in request"},
	{"bad count", "*abc\r\n", "", "invalid multibulk length"},
	{"plus count", "*+1\r\n", "", "invalid multibulk length"},
	{"leading zero count", "*01\r\n", "", "invalid multibulk length"},
	{"empty count", "*\r\n", "", "invalid multibulk length"},
	{"count over INT_MAX", "*2147483648\r\n", "", "invalid multibulk length"},
	{"count LF without CR", "*1\n$4\r\nPING\r\n", "", "invalid multibulk length"},
	{"negative bulk", "*1\r\n$-5\r\n", "", "invalid bulk length"},
	{"minus zero bulk", "*1\r\n$-0\r\n", "", "invalid bulk length"},
	{"bulk over limit", "*1\r\n$1025\r\n", "", "invalid bulk length"},
	{"bulk at limit waits", "*1\r\n$1024\r\n", "", ""},
	{"bulk not a number", "*1\r\n$ 4\r\n", "", "invalid bulk length"},
	{"missing dollar", "*1\r\nfoo\r\n", "", "expected '$', got 'f'"},
	{"error after good request", "*1\r\n$4\r\nPING\r\n*1\r\n$-1\r\n", "*1\r\n$4\r\nPING\r\n", "invalid bulk length"},
	{"inline too big", "x" + strings.Repeat("a", inlineMax), "", "too big inline request"},
	{"inline at limit waits", strings.Repeat("a", inlineMax), "", ""},
	{"NUL hides newline", "\x00" + strings.Repeat("a\n", inlineMax/2+1), "", "too big inline request"},
	{"mbulk count too big", "*" + strings.Repeat("1", inlineMax), "", "too big mbulk count string"},
	{"mbulk NUL hides CR", "*\x00\r\n" + strings.Repeat("a", inlineMax), "", "too big mbulk count string"},
	{"bulk count too big", "*1\r\n$" + strings.Repeat("1", inlineMax), "", "too big bulk count string"},
	{"incomplete waits", "*2\r\n$3\r\nGET\r\n$1\r\n", "", ""},
}

// parseAll runs the parser over in, delivered in chunks of size n (0: all
// at once) appended to one growing buffer, as a connection does. It returns
// the requests read, re-encoded as canonical RESP, and the protocol error.
func parseAll(in string, n int, p *parser) (string, string) {
	var buf, out []byte
	pos := 0
	for len(in) > 0 {
		k := len(in)
		if n > 0 && n < k {
			k = n
		}
		buf = append(buf, in[:k]...)
		in = in[k:]
		for {
			args, m, err := p.next(buf[pos:])
			if err != nil {
				return string(out), err.(*protocolError).msg
			}
			if m == 0 {
				break
			}
			pos += m
			out = appendRequest(out, args)
		}
	}
	return string(out), ""
}

// appendRequest encodes a request's arguments as RESP (no arguments: nothing).
func appendRequest(out []byte, args [][]byte) []byte {
	if len(args) == 0 {
		return out
	}
	out = fmt.Appendf(out, "*%d\r\n", len(args))
	for _, a := range args {
		out = fmt.Appendf(out, "$%d\r\n%s\r\n", len(a), a)
	}
	return out
}

func TestParser(t *testing.T) {
	for _, tc := range parseCases {
		for _, chunk := range []int{0, 1, 3} {
			p := &parser{maxBulk: func() int64 { return 1024 }}
			out, err := parseAll(tc.in, chunk, p)
			require.Equal(t, tc.err, err, "%s (chunk %d)", tc.name, chunk)
			require.Equal(t, tc.out, out, "%s (chunk %d)", tc.name, chunk)
		}
	}
}

// The unauthenticated limits are checked against the state as of each
// request: the connection runs a request before it parses the next one, so
// an AUTH earlier in a pipeline lifts them.
func TestParserUnauthenticatedLimits(t *testing.T) {
	authed := false
	p := &parser{authRequired: func() bool { return !authed }}
	_, _, err := p.next([]byte("*11\r\n"))
	require.EqualError(t, err, "Protocol error: unauthenticated multibulk length")

	p = &parser{authRequired: func() bool { return !authed }}
	_, _, err = p.next([]byte("*1\r\n$16385\r\n"))
	require.EqualError(t, err, "Protocol error: unauthenticated bulk length")

	p = &parser{authRequired: func() bool { return !authed }}
	in := []byte("*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n*11\r\n")
	args, n, err := p.next(in)
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("AUTH"), []byte("p")}, args)
	authed = true
	args, m, err := p.next(in[n:])
	require.NoError(t, err)
	require.Zero(t, m, "the *11 request waits for its arguments")
	require.Empty(t, args)
}

// A request arriving in pieces is kept whole in the input; need tells how
// much of a bulk is still missing, and nothing more is asked up front.
func TestParserNeed(t *testing.T) {
	p := &parser{maxBulk: func() int64 { return 1 << 30 }}
	in := []byte("*2\r\n$4\r\nECHO\r\n$536870912\r\nabc")
	_, n, err := p.next(in)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, int64(536870912+2-3), p.need(in))

	p = &parser{}
	in = []byte("*2\r\n$4\r\nECHO\r\n$5")
	_, n, err = p.next(in)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, p.need(in), "unknown until the header has arrived")
}

func TestParseLength(t *testing.T) {
	cases := []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-1", -1, true}, {"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true}, {"9223372036854775808", 0, false},
		{"", 0, false}, {"-", 0, false}, {"00", 0, false}, {"-0", 0, false}, {"+1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false}, {"123456789012345678901", 0, false},
	}
	for _, tc := range cases {
		n, ok := parseLength([]byte(tc.in))
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.n, n, tc.in)
	}
}

func FuzzParser(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		whole := &parser{maxBulk: func() int64 { return 1 << 20 }}
		outA, errA := parseAll(string(in), 0, whole)
		split := &parser{maxBulk: func() int64 { return 1 << 20 }}
		outB, errB := parseAll(string(in), int(chunk%8)+1, split)
		// Re-encoded, the requests read parse to themselves.
		again := &parser{maxBulk: func() int64 { return 1 << 20 }}
		outC, errC := parseAll(outA, 0, again)
		require.Empty(t, errC)
		require.Equal(t, outA, outC)
		// Below the line limit, chunking changes neither the verdict nor
		// the requests read (above it, Redis's own verdict depends on how
		// the bytes arrive).
		if len(in) > inlineMax {
			return
		}
		require.Equal(t, errA, errB)
		require.Equal(t, outA, outB)
	})
}
