package commands

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseThrottle: redis-cell's argument checks and their order.
func TestParseThrottle(t *testing.T) {
	args := func(s ...string) [][]byte {
		out := [][]byte{[]byte("CL.THROTTLE")}
		for _, a := range s {
			out = append(out, []byte(a))
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{nil, MsgCellUsage},
		{[]string{"k"}, MsgCellUsage},
		{[]string{"k", "1", "2"}, MsgCellUsage},
		{[]string{"k", "1", "2", "3", "4", "5"}, MsgCellUsage},
		{[]string{"k", "x", "1", "1"}, fmt.Sprintf(MsgCellNotInt, "x")},
		{[]string{"k", "1", "0", "x"}, fmt.Sprintf(MsgCellNotInt, "x")},
		{[]string{"k", "1", "1", "1", "1.0"}, fmt.Sprintf(MsgCellNotInt, "1.0")},
		{[]string{"k", "", "1", "1"}, fmt.Sprintf(MsgCellNotInt, "")},
		{[]string{"k", "9223372036854775808", "1", "1"}, fmt.Sprintf(MsgCellNotInt, "9223372036854775808")},
		{[]string{"k", "1", "0", "1"}, MsgCellZeroRate},
		{[]string{"k", "1", "1", "0"}, MsgCellZeroRate},
		{[]string{"k", "1", "2000000000", "1"}, MsgCellZeroRate},
		{[]string{"k", "+1", "-1", "-0060", "-9223372036854775808"}, ""},
		{[]string{"k", "1", "1", "1"}, ""},
	} {
		key, _, msg := parseThrottle(args(tc.args...))
		require.Equal(t, tc.msg, msg, "%q", tc.args)
		if msg == "" {
			require.Equal(t, []byte("k"), key)
		}
	}
}
