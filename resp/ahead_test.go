package resp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
)

func TestScanAhead(t *testing.T) {
	up := func(name, arg string) commands.Upcoming {
		u := commands.Upcoming{Name: []byte(name)}
		if arg != "\x00none" {
			u.Arg = []byte(arg)
		}
		return u
	}
	cases := []struct {
		name string
		in   string
		max  int
		want []commands.Upcoming
	}{
		{"pipeline", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$2\r\nbb\r\n$1\r\nv\r\n", 8,
			[]commands.Upcoming{up("GET", "a"), up("SET", "bb")}},
		{"no argument", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$0\r\n\r\n", 8,
			[]commands.Upcoming{up("PING", "\x00none"), up("INCR", "")}},
		{"binary argument", "*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", 8,
			[]commands.Upcoming{up("GET", "a\r\nb")}},
		{"stops at an incomplete request", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$5\r\nab", 8,
			[]commands.Upcoming{up("GET", "a")}},
		{"stops at an incomplete count", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2", 8,
			[]commands.Upcoming{up("GET", "a")}},
		{"stops at an inline request", "*2\r\n$3\r\nGET\r\n$1\r\na\r\nGET b\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n", 8,
			[]commands.Upcoming{up("GET", "a")}},
		{"stops at a malformed length", "*2\r\n$3\r\nGET\r\n$x\r\na\r\n", 8, nil},
		{"stops at a negative length", "*2\r\n$3\r\nGET\r\n$-1\r\n", 8, nil},
		{"stops at a bare LF", "*2\n$3\r\nGET\r\n$1\r\na\r\n", 8, nil},
		{"stops at a huge length", "*2\r\n$3\r\nGET\r\n$9999999999\r\na\r\n", 8, nil},
		{"skips an empty multibulk", "*0\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n", 8,
			[]commands.Upcoming{up("GET", "a")}},
		{"at most cap(out)", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n", 2,
			[]commands.Upcoming{up("GET", "a"), up("GET", "b")}},
		{"empty", "", 8, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := scanAhead([]byte(c.in), make([]commands.Upcoming, 0, c.max))
			require.Equal(t, len(c.want), len(got), "%q", got)
			for i := range c.want {
				require.Equal(t, string(c.want[i].Name), string(got[i].Name))
				require.Equal(t, c.want[i].Arg == nil, got[i].Arg == nil, "request %d's argument", i)
				require.Equal(t, string(c.want[i].Arg), string(got[i].Arg))
			}
		})
	}
}
