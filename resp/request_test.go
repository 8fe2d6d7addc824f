package resp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type parseCase struct {
	name string
	in   string
	out  string // canonical RESP emitted
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
	{"negative bulk", "*1\r\n$-5\r\n", "*1\r\n", "invalid bulk length"},
	{"minus zero bulk", "*1\r\n$-0\r\n", "*1\r\n", "invalid bulk length"},
	{"bulk over limit", "*1\r\n$1025\r\n", "*1\r\n", "invalid bulk length"},
	{"bulk at limit waits", "*1\r\n$1024\r\n", "*1\r\n$1024\r\n", ""},
	{"bulk not a number", "*1\r\n$ 4\r\n", "*1\r\n", "invalid bulk length"},
	{"missing dollar", "*1\r\nfoo\r\n", "*1\r\n", "expected '$', got 'f'"},
	{"error after good request", "*1\r\n$4\r\nPING\r\n*1\r\n$-1\r\n", "*1\r\n$4\r\nPING\r\n*1\r\n", "invalid bulk length"},
	{"inline too big", "x" + strings.Repeat("a", inlineMax), "", "too big inline request"},
	{"inline at limit waits", strings.Repeat("a", inlineMax), "", ""},
	{"NUL hides newline", "\x00" + strings.Repeat("a\n", inlineMax/2+1), "", "too big inline request"},
	{"mbulk count too big", "*" + strings.Repeat("1", inlineMax), "", "too big mbulk count string"},
	{"mbulk NUL hides CR", "*\x00\r\n" + strings.Repeat("a", inlineMax), "", "too big mbulk count string"},
	{"bulk count too big", "*1\r\n$" + strings.Repeat("1", inlineMax), "*1\r\n", "too big bulk count string"},
	{"incomplete waits", "*2\r\n$3\r\nGET\r\n$1\r\n", "*2\r\n$3\r\nGET\r\n$1\r\n", ""},
}

// feedAll runs the parser over in, delivered in chunks of size n (0: all at
// once), as clientConn does.
func feedAll(t *testing.T, in string, n int, p *parser) (string, string) {
	t.Helper()
	var out []byte
	for len(in) > 0 {
		k := len(in)
		if n > 0 && n < k {
			k = n
		}
		p.in = append(p.in, in[:k]...)
		in = in[k:]
		var err error
		out, _, err = p.feed(out)
		if err != nil {
			return string(out), err.(*protocolError).msg
		}
	}
	return string(out), ""
}

func TestParser(t *testing.T) {
	for _, tc := range parseCases {
		for _, chunk := range []int{0, 1, 3} {
			p := &parser{maxBulk: func() int64 { return 1024 }}
			out, err := feedAll(t, tc.in, chunk, p)
			require.Equal(t, tc.err, err, "%s (chunk %d)", tc.name, chunk)
			if tc.err == "" || chunk == 0 {
				// Fed byte by byte, the bytes of a request before the error
				// may already have gone out: only the whole-input case
				// pins them.
				require.Equal(t, tc.out, out, "%s (chunk %d)", tc.name, chunk)
			}
		}
	}
}

func TestParserUnauthenticatedLimits(t *testing.T) {
	authed := false
	p := &parser{authRequired: func() bool { return !authed }}
	p.in = []byte("*11\r\n")
	_, _, err := p.feed(nil)
	require.EqualError(t, err, "Protocol error: unauthenticated multibulk length")

	p = &parser{authRequired: func() bool { return !authed }}
	p.in = []byte("*1\r\n$16385\r\n")
	_, _, err = p.feed(nil)
	require.EqualError(t, err, "Protocol error: unauthenticated bulk length")

	// A large request right behind AUTH waits until AUTH has run.
	p = &parser{authRequired: func() bool { return !authed }}
	p.in = []byte("*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n*11\r\n")
	out, deferred, err := p.feed(nil)
	require.NoError(t, err)
	require.True(t, deferred)
	require.Equal(t, "*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n", string(out))
	authed = true
	out, deferred, err = p.feed(nil)
	require.NoError(t, err)
	require.False(t, deferred)
	require.Equal(t, "*11\r\n", string(out))
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
		outA, errA := feedAll(t, string(in), 0, whole)
		split := &parser{maxBulk: func() int64 { return 1 << 20 }}
		outB, errB := feedAll(t, string(in), int(chunk%8)+1, split)
		// Below the line limit, chunking changes neither the verdict nor
		// the output of a valid stream (above it, Redis's own verdict
		// depends on how the bytes arrive).
		if len(in) > inlineMax {
			return
		}
		require.Equal(t, errA, errB)
		if errA == "" {
			require.Equal(t, outA, outB)
		}
		// The parser's own buffer stays bounded by one line.
		require.LessOrEqual(t, len(split.in), inlineMax+8)
	})
}
