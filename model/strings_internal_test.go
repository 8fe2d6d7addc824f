package model

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachedIncrConds: the INCR condition kept for the last clock reading
// and delta (see Latest) is always the one built for the clock
// reading and delta asked for, whatever was asked before.
func TestCachedIncrConds(t *testing.T) {
	for _, tc := range []struct{ now, d int64 }{
		{1000, 1}, {1000, 1}, {1000, -1}, {1000, 1}, {1001, 1}, {1001, 0}, {1001, math.MaxInt64}, {999, math.MinInt64 + 1},
	} {
		incr := incrCond(tc.now, tc.d)
		incrConds.Reset()
		require.Equal(t, incrCond(tc.now, tc.d), incr, "now %d, d %d", tc.now, tc.d)
	}
}
