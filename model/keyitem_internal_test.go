package model

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
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

// TestExpiryMS: an expiry with a fraction of a ms (CL.THROTTLE's) is
// expired from the next whole ms on, in DecodeKey as in the conditions.
func TestExpiryMS(t *testing.T) {
	for _, tc := range []struct {
		x    dynastore.Value
		want int64
		ok   bool
	}{
		{dynastore.N("1700000000123"), 1700000000123, true},
		{dynastore.N("1700000000123.000001"), 1700000000124, true},
		{dynastore.N("1700000000123.5"), 1700000000124, true},
		{dynastore.N("1.7000000001235e12"), 1700000000124, true},
		{dynastore.N("-0.5"), 0, true},
		{dynastore.N("-1"), -1, true},
		{dynastore.N("x"), 0, false},
		{dynastore.N("9223372036854775807.5"), 0, false},
		{dynastore.S("1"), 0, false},
	} {
		got, err := ExpiryMS(tc.x)
		if !tc.ok {
			require.ErrorIs(t, err, dynastore.ErrInvalid, "%v", tc.x)
			continue
		}
		require.NoError(t, err, "%v", tc.x)
		require.Equal(t, tc.want, got, "%v", tc.x)
	}
	it := StringItem(0, []byte("k"), []byte("1"), OriginArg, 0)
	it.Set(AttrExpiry, dynastore.N("1000.25"))
	for now, live := range map[int64]bool{999: true, 1000: true, 1001: false} {
		ks, err := DecodeKey(it, now)
		require.NoError(t, err)
		require.Equal(t, live, ks.Live, "now %d", now)
		require.Equal(t, live, dynastore.EvalValidCond(it, CondLive(now)), "now %d", now)
		if live {
			require.Equal(t, int64(1001), ks.Expiry)
		}
	}
}

// FuzzString2ll: exactly the canonical decimal forms of int64 parse, to
// their value (Redis's string2ll).
func FuzzString2ll(f *testing.F) {
	for _, s := range []string{"0", "-0", "01", "+1", "-9223372036854775808", "9223372036854775808", "", "-", " 1", "18446744073709551616", "1\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := String2ll([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == s
		require.Equal(t, canonical, ok, "%q", s)
		if ok {
			require.Equal(t, want, n, "%q", s)
		}
	})
}
