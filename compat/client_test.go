package compat

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadReply(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string // the one reply read; the rest of in stays unread
		pretty string
		err    bool
	}{
		{"simple", "+OK\r\n+next\r\n", "+OK\r\n", `+"OK"`, false},
		{"error", "-ERR bad\r\n", "-ERR bad\r\n", `-"ERR bad"`, false},
		{"integer", ":-12\r\n", ":-12\r\n", `:"-12"`, false},
		{"bulk binary", "$4\r\n\x00\r\n\xff\r\n", "$4\r\n\x00\r\n\xff\r\n", `$"\x00\r\n\xff"`, false},
		{"empty bulk", "$0\r\n\r\n", "$0\r\n\r\n", `$""`, false},
		{"null bulk", "$-1\r\n", "$-1\r\n", `$-1(null)`, false},
		{"null array", "*-1\r\n", "*-1\r\n", `*-1(null)`, false},
		{"resp3 null", "_\r\n", "_\r\n", `_(null)`, false},
		{"nested array", "*2\r\n*1\r\n:1\r\n$1\r\na\r\n", "*2\r\n*1\r\n:1\r\n$1\r\na\r\n", `*2[*1[:"1"], $"a"]`, false},
		{"double", ",3.14\r\n", ",3.14\r\n", `,"3.14"`, false},
		{"boolean", "#t\r\n", "#t\r\n", `#"t"`, false},
		{"bignum", "(123456789012345678901234567890\r\n", "(123456789012345678901234567890\r\n", `("123456789012345678901234567890"`, false},
		{"blob error", "!9\r\nERR x\r\nyz\r\n", "!9\r\nERR x\r\nyz\r\n", `!"ERR x\r\nyz"`, false},
		{"verbatim", "=7\r\ntxt:abc\r\n", "=7\r\ntxt:abc\r\n", `="txt:abc"`, false},
		{"map", "%1\r\n+a\r\n:1\r\n", "%1\r\n+a\r\n:1\r\n", `%2[+"a", :"1"]`, false},
		{"set", "~2\r\n+a\r\n+b\r\n", "~2\r\n+a\r\n+b\r\n", `~2[+"a", +"b"]`, false},
		{"push", ">2\r\n+message\r\n+x\r\n", ">2\r\n+message\r\n+x\r\n", `>2[+"message", +"x"]`, false},
		{"attribute then reply", "|1\r\n+ttl\r\n:3\r\n:7\r\n", "|1\r\n+ttl\r\n:3\r\n:7\r\n", `|attrs{+"ttl" :"3"} :"7"`, false},
		{"unknown type", "?x\r\n", "", "", true},
		{"no CRLF", "+OK\n", "", "", true},
		{"short bulk", "$5\r\nab\r\n", "", "", true},
		{"bulk without CRLF", "$2\r\nabcd", "", "", true},
		{"bad length", "$x\r\n", "", "", true},
		{"truncated array", "*2\r\n:1\r\n", "", "", true},
		{"null map is invalid", "%-1\r\n", "", "", true},
		{"null with payload", "_x\r\n", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.in))
			got, err := readReply(r, nil)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			p, err := Parse(got)
			require.NoError(t, err)
			require.Equal(t, tc.pretty, p.String())
			require.Equal(t, tc.want, string(p.Encode()), "Encode must round-trip")
		})
	}
}

func TestEncodeCommand(t *testing.T) {
	got := EncodeCommand([][]byte{[]byte("SET"), []byte("k\x00"), {}})
	require.Equal(t, "*3\r\n$3\r\nSET\r\n$2\r\nk\x00\r\n$0\r\n\r\n", string(got))
}

func TestParseRejectsTrailingBytes(t *testing.T) {
	_, err := Parse([]byte("+OK\r\n+OK\r\n"))
	require.ErrorIs(t, err, ErrProtocol)
}

func TestEscape(t *testing.T) {
	require.Equal(t, `"a\"\\\x00\xff\r\n"`, Escape([]byte("a\"\\\x00\xff\r\n"), 0))
	require.Equal(t, `"ab"...(5 bytes)`, Escape([]byte("abcde"), 2))
}

// TestConnAgainstRedis checks the client end to end on a real server: binary
// arguments survive, replies are read one at a time from a pipeline.
func TestConnAgainstRedis(t *testing.T) {
	ref, _ := redisServers(t)
	c, err := Dial(ref.Addr, replyTimeout)
	require.NoError(t, err)
	defer c.Close()
	val := bytes.Repeat([]byte("\x00\xff\r\n"), 1000)
	require.NoError(t, c.Send([][]byte{[]byte("SET"), []byte("compat:conn\x00"), val}))
	require.NoError(t, c.Send([][]byte{[]byte("GET"), []byte("compat:conn\x00")}))
	require.NoError(t, c.Send([][]byte{[]byte("DEL"), []byte("compat:conn\x00")}))
	for _, want := range []string{"+OK\r\n", "$4000\r\n" + string(val) + "\r\n", ":1\r\n"} {
		got, err := c.ReadRaw()
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
}
