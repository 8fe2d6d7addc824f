package coord

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func ms(n int64) span  { return spanOf(n * int64(time.Millisecond)) }
func sec(n int64) span { return spanOf(n * int64(time.Second)) }

// TestGCRARedisCellCases runs redis-cell's own table (src/cell/mod.rs,
// it_rate_limits): a limit of 5 at one per second, calls at the times and
// quantities given, each decided on the TAT the calls before left (its test
// store never expires a key).
func TestGCRARedisCellCases(t *testing.T) {
	q := NewGCRAQuota(4, 1, 1, 0)
	start := spanOf(1_700_000_000_123_456_789)
	cases := []struct {
		at                     span // since start
		quantity, remaining    int64
		resetAfter, retryAfter span
		limited                bool
	}{
		// A quantity above the limit never goes through.
		{span{}, 6, 5, span{}, sec(-1), true},
		{span{}, 1, 4, sec(1), sec(-1), false},
		{span{}, 1, 3, sec(2), sec(-1), false},
		{span{}, 1, 2, sec(3), sec(-1), false},
		{span{}, 1, 1, sec(4), sec(-1), false},
		{span{}, 1, 0, sec(5), sec(-1), false},
		{span{}, 1, 0, sec(5), sec(1), true},
		{ms(3000), 1, 2, ms(3000), sec(-1), false},
		{ms(3100), 1, 1, ms(3900), sec(-1), false},
		{ms(4000), 1, 1, ms(4000), sec(-1), false},
		{ms(8000), 1, 4, ms(1000), sec(-1), false},
		{ms(9500), 1, 4, ms(1000), sec(-1), false},
		// Quantity 0 peeks.
		{ms(9500), 0, 4, sec(1), sec(-1), false},
		{ms(9500), 2, 2, sec(3), sec(-1), false},
		{ms(9500), 5, 2, sec(3), sec(3), true},
	}
	var tat span
	var has bool
	for i, tc := range cases {
		qq := q
		qq.increment = q.interval * tc.quantity
		r := qq.at(start.add(tc.at), tat, has)
		require.Equal(t, tc.limited, r.limited, "case %d", i)
		require.Equal(t, int64(5), r.limit, "case %d", i)
		require.Equal(t, tc.remaining, r.remaining, "case %d", i)
		require.Equal(t, tc.resetAfter, r.resetAfter, "case %d", i)
		require.Equal(t, tc.retryAfter, r.retryAfter, "case %d", i)
		if !r.limited {
			tat, has = r.tat, true
		}
	}
}

// TestGCRAReplies: the five integers of CL.THROTTLE for calls on an
// absent key (or on the TAT given), worked out by hand from redis-cell's
// code, odd arguments included: redis-cell validates none but a zero rate.
func TestGCRAReplies(t *testing.T) {
	now := spanOf(1_700_000_000_000_000_000)
	cases := []struct {
		name                         string
		maxBurst, count, period, qty int64
		tat                          *span
		want                         [5]int64
		expiry                       tatExpiry
	}{
		// README's example: 30 per minute is one per 2 s; 16 fit.
		{"readme", 15, 30, 60, 1, nil, [5]int64{0, 16, 15, -1, 2}, expireAtTAT},
		// redis-cell's end-to-end test: one per 2 s, no burst.
		{"e2e first", 0, 1, 2, 1, nil, [5]int64{0, 1, 0, -1, 2}, expireAtTAT},
		{"e2e second", 0, 1, 2, 1, ptr(now.add(sec(2)).sub(ms(3))), [5]int64{1, 1, 0, 2, 2}, 0},
		{"e2e after retry", 0, 1, 2, 1, ptr(now), [5]int64{0, 1, 0, -1, 2}, expireAtTAT},
		// A TAT long past counts as none.
		{"stale tat", 15, 30, 60, 1, ptr(spanOf(5)), [5]int64{0, 16, 15, -1, 2}, expireAtTAT},
		// Quantity 0 peeks: on an empty bucket the TAT is now, the key expires at once.
		{"peek empty", 5, 10, 60, 0, nil, [5]int64{0, 6, 6, -1, 0}, expireAtTAT},
		{"peek", 5, 10, 60, 0, ptr(now.add(ms(6500))), [5]int64{0, 6, 4, -1, 7}, expireAtTAT},
		// A quantity of more than the limit never goes through, and retry is -1.
		{"too much", 5, 10, 60, 7, nil, [5]int64{1, 6, 6, -1, 0}, 0},
		{"full", 5, 10, 60, 1, ptr(now.add(sec(36))), [5]int64{1, 6, 0, 6, 36}, 0},
		// Negative burst: a limit of 0 or less, nothing goes through.
		{"burst -1", -1, 10, 60, 1, nil, [5]int64{1, 0, 0, -1, 0}, 0},
		{"burst -2", -2, 10, 60, 1, nil, [5]int64{1, -1, 0, -1, 0}, 0},
		// A negative count makes a negative interval: limited, nothing more.
		{"negative count", 5, -10, 60, 1, nil, [5]int64{1, 6, 0, -1, 0}, 0},
		// A negative quantity moves the TAT back: allowed, with a negative
		// TTL, which Redis refuses (the key persists, the call fails).
		{"negative quantity", 5, 10, 60, -1, nil, [5]int64{0, 6, 7, -1, -6}, expireNeverAndFail},
		// 10 million per second: the interval (100 ns) has no whole
		// microsecond, and remaining divides by zero.
		{"sub-microsecond interval", 10, 10_000_000, 1, 1, nil, [5]int64{0, 11, math.MaxInt64, -1, 0}, expireAtTAT},
		// A period of 292 years: the TAT leaves int64 and later u64.
		{"huge period", 0, 1, math.MaxInt64, 1, nil, [5]int64{0, 1, 0, -1, 9223372037}, expireAtTAT},
		{"huge period again", 0, 1, math.MaxInt64, 1, ptr(now.add(spanOf(math.MaxInt64))), [5]int64{1, 1, 0, 9223372037, 9223372037}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := NewGCRAQuota(tc.maxBurst, tc.count, tc.period, tc.qty)
			var r gcraResult
			if tc.tat != nil {
				r = q.at(now, *tc.tat, true)
			} else {
				r = q.at(now, span{}, false)
			}
			limited := int64(0)
			if r.limited {
				limited = 1
			}
			got := [5]int64{limited, r.limit, r.remaining, cellSeconds(r.retryAfter), cellSeconds(r.resetAfter)}
			require.Equal(t, tc.want, got)
			if !r.limited {
				require.Equal(t, tc.expiry, r.expiry())
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestGCRAStoredTAT: the TAT an allowed call stores is redis-cell's u64 of
// nanoseconds, wrapping past 2^64 and below the epoch.
func TestGCRAStoredTAT(t *testing.T) {
	now := spanOf(1_700_000_000_000_000_001)
	r := NewGCRAQuota(15, 30, 60, 1).at(now, span{}, false)
	require.Equal(t, uint64(1_700_000_002_000_000_001), r.tat.u64())
	huge := NewGCRAQuota(0, 1, math.MaxInt64, 1).at(now, span{}, false)
	require.Equal(t, uint64(1_700_000_000_000_000_001+math.MaxInt64), huge.tat.u64())
	// From a TAT near the top of u64, the next wraps.
	top := spanOfU64(math.MaxUint64 - 1)
	wrapped := NewGCRAQuota(0, 1, 1, 1).at(top, top, true)
	require.False(t, wrapped.limited)
	require.Equal(t, uint64(1e9-2), wrapped.tat.u64())
	// Before the epoch too.
	back := NewGCRAQuota(5, 10, 60, -1_000_000_000).at(now, span{}, false)
	require.False(t, back.limited)
	require.Equal(t, uint64(1<<64-(6_000_000_000_000_000_000-1_700_000_000_000_000_001)), back.tat.u64())
}

func TestEmissionInterval(t *testing.T) {
	for _, tc := range []struct {
		count, period, want int64
	}{
		{30, 60, 2_000_000_000},
		{1, 1, 1_000_000_000},
		{3, 1, 333_333_333},
		{-3, 1, -333_333_333},
		{2_000_000_000, 1, 0}, // half a nanosecond: a zero rate
		{0, 60, 0},
		{10, 0, 0},
		// Past int64 nanoseconds the period is an i128 in redis-cell.
		{3, 10_000_000_000, func() int64 { ns := 1e19; return int64(ns / 3) }()},
		{1, 10_000_000_000, math.MaxInt64},
		{-1, 10_000_000_000, math.MinInt64},
		{1, math.MinInt64, math.MinInt64},
		{math.MaxInt64, math.MaxInt64, 1_000_000_000},
	} {
		require.Equal(t, tc.want, emissionInterval(tc.count, tc.period), "%d per %d s", tc.count, tc.period)
	}
}

// TestCellSeconds: whole seconds, one more for a millisecond left over,
// nothing for less.
func TestCellSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    span
		want int64
	}{
		{span{}, 0},
		{spanOf(1), 0},
		{spanOf(999_999), 0},
		{ms(1), 1},
		{sec(1), 1},
		{spanOf(1_000_999_999), 1},
		{ms(1001), 2},
		{spanOf(1_999_999_999), 2},
		{sec(-1), -1},
		{ms(-1500), -1},
		{spanOf(-1), 0},
		{spanOf(math.MaxInt64), 9_223_372_037},
	} {
		require.Equal(t, tc.want, cellSeconds(tc.d), "%+v", tc.d)
	}
}

func TestSpan(t *testing.T) {
	for _, ns := range []int64{0, 1, -1, 999_999_999, -999_999_999, 1e9, -1e9, 1_500_000_000, -1_500_000_000, math.MaxInt64, math.MinInt64} {
		s := spanOf(ns)
		got, ok := s.int64NS()
		if ns > math.MaxInt64-2e9 || ns < math.MinInt64+2e9 {
			require.False(t, ok, "%d", ns)
		} else {
			require.True(t, ok)
			require.Equal(t, ns, got)
		}
		require.Equal(t, ns/1000, s.wholeMicros(), "%d", ns)
		require.Equal(t, ns/1_000_000, s.wholeMillis(), "%d", ns)
		require.Equal(t, 0, s.add(s.neg()).cmp(span{}), "%d", ns)
		require.Equal(t, s, s.add(sec(3)).sub(sec(3)), "%d", ns)
	}
	require.Equal(t, -1, spanOf(-1).cmp(span{}))
	require.Equal(t, 1, spanOf(1).cmp(span{}))
	require.Equal(t, uint64(math.MaxUint64), spanOf(-1).u64())
}

func TestParseRustU64(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		msg  string
	}{
		{"0", 0, ""},
		{"1700000000000000000", 1_700_000_000_000_000_000, ""},
		{"+7", 7, ""},
		{"007", 7, ""},
		{"18446744073709551615", math.MaxUint64, ""},
		{"18446744073709551616", 0, rustIntTooBig},
		{"99999999999999999999x", 0, rustIntTooBig},
		{"", 0, rustIntEmpty},
		{"+", 0, rustIntInvalid},
		{"-", 0, rustIntInvalid},
		{"-5", 0, rustIntInvalid},
		{"++5", 0, rustIntInvalid},
		{" 5", 0, rustIntInvalid},
		{"5x", 0, rustIntInvalid},
		{"1.5", 0, rustIntInvalid},
	} {
		n, msg := parseRustU64([]byte(tc.in))
		require.Equal(t, tc.msg, msg, "%q", tc.in)
		require.Equal(t, tc.want, n, "%q", tc.in)
	}
}

// TestExpiryN: a deadline's expiry attribute and its whole ms rounded up.
func TestExpiryN(t *testing.T) {
	for _, tc := range []struct {
		t    span
		want string
		ceil int64
	}{
		{span{}, "0", 0},
		{spanOf(1), "0.000001", 1},
		{ms(1), "1", 1},
		{spanOf(1_700_000_002_123_456_789), "1700000002123.456789", 1700000002124},
		{spanOf(1_700_000_002_123_450_000), "1700000002123.45", 1700000002124},
		{spanOf(1_700_000_002_123_000_000), "1700000002123", 1700000002123},
		{spanOf(-1_500_000), "-1.5", -1},
	} {
		require.Equal(t, tc.want, string(expiryN(tc.t)), "%+v", tc.t)
		require.Equal(t, tc.ceil, ceilMS(tc.t), "%+v", tc.t)
	}
}
