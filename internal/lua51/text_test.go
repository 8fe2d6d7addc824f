package lua51

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestText: gopher-lua's runtime errors reworded as Lua 5.1's from their
// text alone, as far as it says enough.
func TestText(t *testing.T) {
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
		{"user_script:2: for statement init must be a number", "user_script:2: 'for' initial value must be a number"},
		{"user_script:2: for statement limit must be a number", "user_script:2: 'for' limit must be a number"},
		{"user_script:2: for statement step must be a number", "user_script:2: 'for' step must be a number"},
	} {
		require.Equal(t, tc.want, Text(tc.in), tc.in)
	}
}
