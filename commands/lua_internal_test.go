package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLua51Wording: gopher-lua's runtime errors reworded as Lua 5.1's, as
// far as their text says enough (the replies of real redis-server in
// compat/testdata/scripting.txt are the reference).
func TestLua51Wording(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"user_script:1: cannot perform add operation between number and nil", "user_script:1: attempt to perform arithmetic on a nil value"},
		{"user_script:3: cannot perform mul operation between table and number", "user_script:3: attempt to perform arithmetic on a table value"},
		{"cannot perform concat operation between string and nil", "attempt to concatenate a nil value"},
		{"cannot perform concat operation between boolean and string", "attempt to concatenate a boolean value"},
		{"attempt to compare table with table", "attempt to compare two table values"},
		{"attempt to compare number with string", "attempt to compare number with string"},
		{"bad argument #1 to rep (string expected, got nil)", "bad argument #1 to 'rep' (string expected, got nil)"},
		{"attempt to call a non-function object", "attempt to call a non-function object"},
		{"user_script:1: attempt to index a non-table object(nil) with key 'x'", "user_script:1: attempt to index a nil value"},
	} {
		require.Equal(t, tc.want, lua51Wording(tc.in), tc.in)
	}
}

// TestLua51SyntaxError: gopher-lua's syntax errors worded as Lua 5.1's.
func TestLua51SyntaxError(t *testing.T) {
	for _, tc := range []struct{ in, src, want string }{
		{"user_script line:1(column:8) near '+':   syntax error ", "return +", "user_script:1: unexpected symbol near '+'"},
		{"user_script line:3(column:11) near '=':   syntax error ", "\n\nlocal x = = 1", "user_script:3: unexpected symbol near '='"},
		{"user_script at EOF:   syntax error ", "return (", "user_script:1: unexpected symbol near '<eof>'"},
		{"user_function at EOF:   syntax error ", "a\nb(\n", "user_function:3: unexpected symbol near '<eof>'"},
		{"user_script at EOF:   unterminated string ", `return "hello`, "user_script:1: unfinished string near '<eof>'"},
		{"something else", "x", "something else"},
	} {
		require.Equal(t, tc.want, lua51SyntaxError(tc.in, tc.src), tc.in)
	}
	require.Equal(t, `[string "return +"]`, luaChunkID("return +"))
	require.Equal(t, `[string "x = 1..."]`, luaChunkID("x = 1\nreturn x"))
	long := strings.Repeat("y", 70)
	require.Equal(t, `[string "`+long[:63]+`..."]`, luaChunkID(long))
}

// TestLuaQuoted: %q as Lua 5.1 writes it, found among the other specs.
func TestLuaQuoted(t *testing.T) {
	require.Equal(t, "\"a\\\nb\\\"c\\\\d\\r\\000\"", luaQuoted("a\nb\"c\\d\r\x00"))
	var seen []string
	got := formatSpecs("%5.2f %q %%q %-3s %q", func(arg int, conv byte) byte {
		seen = append(seen, fmt.Sprintf("%d%c", arg, conv))
		if conv == 'q' {
			return 's'
		}
		return conv
	})
	require.Equal(t, "%5.2f %s %%q %-3s %s", got)
	require.Equal(t, []string{"1f", "2q", "3s", "4q"}, seen)
}
