package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedactedArgs: the arguments Redis 7.0.15 shows as "(redacted)" in
// MONITOR and SLOWLOG (checked against redis-server's MONITOR).
func TestRedactedArgs(t *testing.T) {
	table := NewTable()
	cases := []struct {
		cmd  string
		want string // the arguments, "*" where redacted
	}{
		{"AUTH p", "AUTH *"},
		{"AUTH u p", "AUTH * *"},
		{"AUTH a b c", "AUTH a b c"},
		{"HELLO 3 AUTH u p", "HELLO 3 AUTH * *"},
		{"HELLO 2 SETNAME n AUTH u p", "HELLO 2 SETNAME n AUTH * *"},
		{"HELLO 4 AUTH u p", "HELLO 4 AUTH u p"},
		{"HELLO x AUTH u p", "HELLO x AUTH u p"},
		{"HELLO 3 FOO AUTH u p", "HELLO 3 FOO AUTH u p"},
		{"HELLO 3 AUTH u", "HELLO 3 AUTH u"},
		{"HELLO", "HELLO"},
		{"CONFIG SET requirepass p maxclients 10 MASTERAUTH q", "CONFIG SET requirepass * maxclients 10 MASTERAUTH *"},
		{"SET requirepass p", "SET requirepass p"},
	}
	for _, c := range cases {
		args := [][]byte{}
		for _, a := range strings.Fields(c.cmd) {
			args = append(args, []byte(a))
		}
		cmd, msg := table.Resolve(args)
		require.Empty(t, msg, c.cmd)
		red := redactedArgs(cmd, args)
		var got []string
		for i, a := range args {
			if red(i) {
				got = append(got, "*")
			} else {
				got = append(got, string(a))
			}
		}
		require.Equal(t, c.want, strings.Join(got, " "), c.cmd)
	}
}

func TestAppendRepr(t *testing.T) {
	require.Equal(t, `"a b\"\\\n\r\t\a\b\x00\x7f\xff~"`, string(appendRepr(nil, []byte("a b\"\\\n\r\t\a\b\x00\x7f\xff~"))))
	require.Equal(t, `""`, string(appendRepr(nil, nil)))
}
