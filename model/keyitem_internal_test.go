package model

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachedClockConds: the conditions kept for the last clock reading
// are always the ones built for the clock reading asked for, whatever was
// asked before.
func TestCachedClockConds(t *testing.T) {
	for _, now := range []int64{1000, 1000, 1001, 999, math.MaxInt64, 1000} {
		live, notLive, unexpired := CondLive(now), CondNotLive(now), CondUnexpired(now)
		clockCondsAt.Reset()
		require.Equal(t, CondLive(now), live, "now %d", now)
		require.Equal(t, CondNotLive(now), notLive, "now %d", now)
		require.Equal(t, CondUnexpired(now), unexpired, "now %d", now)
	}
}
