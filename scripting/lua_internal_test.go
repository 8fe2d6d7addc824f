package scripting

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLuaQuoted: %q as Lua 5.1 writes it, found among the other specs.
func TestLuaQuoted(t *testing.T) {
	require.Equal(t, "\"a\\\nb\\\"c\\\\d\\r\\000\"", luaQuoted("a\nb\"c\\d\r\x00"))
	var seen []string
	got, bad := formatSpecs("%5.2f %q %%q %-3s %q", func(arg int, conv byte) byte {
		if conv == 0 {
			return 0
		}
		seen = append(seen, fmt.Sprintf("%d%c", arg, conv))
		if conv == 'q' {
			return 's'
		}
		return conv
	})
	require.Empty(t, bad)
	require.Equal(t, "%5.2f %s %%q %-3s %s", got)
	require.Equal(t, []string{"1f", "2q", "3s", "4q"}, seen)
}
