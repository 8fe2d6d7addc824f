package coord

// The arithmetic of CL.THROTTLE: redis-cell's generic cell rate algorithm
// (src/cell/mod.rs, RateLimiter::rate_limit), as pure functions of the
// arguments, the stored theoretical arrival time (TAT) and the clock.
//
// redis-cell is Rust, built in release mode: its i64 arithmetic wraps on
// overflow, its float-to-integer casts saturate, and it computes times and
// durations with the time crate, whose values reach beyond int64
// nanoseconds (a TAT is a u64 of nanoseconds, a Duration i64 seconds plus
// nanoseconds). Everything here follows it operation by operation, so that
// even absurd arguments (negative counts, periods of centuries) get the
// replies redis-cell gives.

import (
	"cmp"
	"math"
	"math/big"
)

// span is a signed count of nanoseconds, wider than int64: sec*1e9 + nsec,
// with 0 <= nsec < 1e9. It stands for the time crate's Duration and for an
// OffsetDateTime (as the span since the Unix epoch).
type span struct{ sec, nsec int64 }

const nsPerSec = 1_000_000_000

func spanOf(ns int64) span {
	s, n := ns/nsPerSec, ns%nsPerSec
	if n < 0 {
		s, n = s-1, n+nsPerSec
	}
	return span{s, n}
}

func spanOfU64(ns uint64) span {
	return span{int64(ns / nsPerSec), int64(ns % nsPerSec)}
}

func (a span) add(b span) span {
	s, n := a.sec+b.sec, a.nsec+b.nsec
	if n >= nsPerSec {
		s, n = s+1, n-nsPerSec
	}
	return span{s, n}
}

func (a span) sub(b span) span {
	s, n := a.sec-b.sec, a.nsec-b.nsec
	if n < 0 {
		s, n = s-1, n+nsPerSec
	}
	return span{s, n}
}

func (a span) neg() span { return span{}.sub(a) }

func (a span) cmp(b span) int {
	switch {
	case a.sec != b.sec:
		return cmp.Compare(a.sec, b.sec)
	default:
		return cmp.Compare(a.nsec, b.nsec)
	}
}

// rust splits a span as the time crate does: whole seconds and nanoseconds,
// both truncated toward zero (so they share their sign).
func (a span) rust() (sec, nsec int64) {
	if a.sec < 0 && a.nsec > 0 {
		return a.sec + 1, a.nsec - nsPerSec
	}
	return a.sec, a.nsec
}

// wholeMicros and wholeMillis are Duration::whole_microseconds and
// whole_milliseconds (within int64 for every span CL.THROTTLE meets).
func (a span) wholeMicros() int64 {
	s, n := a.rust()
	return s*1_000_000 + n/1_000
}

func (a span) wholeMillis() int64 {
	s, n := a.rust()
	return s*1_000 + n/1_000_000
}

// u64 is redis-cell's nanoseconds(): the span as a u64, wrapping.
func (a span) u64() uint64 {
	return uint64(a.sec)*nsPerSec + uint64(a.nsec)
}

// int64NS returns the span in nanoseconds when int64 holds it.
func (a span) int64NS() (int64, bool) {
	if a.sec > math.MaxInt64/nsPerSec-1 || a.sec < math.MinInt64/nsPerSec+1 {
		return 0, false
	}
	return a.sec*nsPerSec + a.nsec, true
}

// cellSeconds is how CL.THROTTLE reports a duration: its seconds as an
// f64, truncated, plus one when a millisecond part is left, "because
// otherwise a fast-paced caller could try again too early" (a remainder
// under a millisecond is dropped).
func cellSeconds(d span) int64 {
	s, n := d.rust()
	secs := saturateInt64(float64(s) + float64(n)/nsPerSec)
	if n/1_000_000 > 0 {
		secs++
	}
	return secs
}

// saturateInt64 is Rust's `f as i64`: truncation toward zero, saturating at
// the bounds, NaN as 0.
func saturateInt64(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 0x1p63:
		return math.MaxInt64
	case f <= -0x1p63:
		return math.MinInt64
	}
	return int64(f)
}

// GCRAQuota is redis-cell's RateLimiter for one call's arguments.
type GCRAQuota struct {
	// limit is max_burst + 1.
	limit int64
	// interval is the emission interval, the time between two actions at
	// the nominal rate, in ns; 0 is a zero rate, which redis-cell refuses.
	interval int64
	// tolerance is the delay variation tolerance: how far ahead of now the
	// TAT may be after an allowed action (the bucket's size), in ns.
	tolerance int64
	// increment is how far the TAT moves for this call's quantity, in ns.
	increment int64
}

func NewGCRAQuota(maxBurst, count, period, quantity int64) GCRAQuota {
	ei := emissionInterval(count, period)
	return GCRAQuota{
		limit:     maxBurst + 1,
		interval:  ei,
		tolerance: ei * (maxBurst + 1),
		increment: ei * quantity,
	}
}

// emissionInterval is Rate::per_period(count, period seconds): the period
// in nanoseconds divided by count in f64, cast to i64.
func emissionInterval(count, period int64) int64 {
	if count == 0 || period == 0 {
		return 0
	}
	var ns float64
	if period >= math.MinInt64/nsPerSec && period <= math.MaxInt64/nsPerSec {
		ns = float64(period * nsPerSec)
	} else {
		// An i128 in Rust: round the exact product once, as `as f64` does.
		exact := new(big.Int).Mul(big.NewInt(period), big.NewInt(nsPerSec))
		ns, _ = new(big.Float).SetInt(exact).Float64()
	}
	return saturateInt64(ns / float64(count))
}

// gcraResult is the outcome of one call.
type gcraResult struct {
	// limited: the action is refused and nothing is written.
	limited bool
	// limit and remaining are the reply's second and third integers.
	limit, remaining int64
	// retryAfter is -1s unless a limited action may succeed later;
	// resetAfter is how long until the bucket is empty again (the TTL
	// redis-cell gives the key).
	retryAfter, resetAfter span
	// tat is the TAT to store when the action is allowed.
	tat span
}

// at decides a call at now, given the stored TAT (hasTAT false when the
// key is absent).
func (q GCRAQuota) at(now, stored span, hasTAT bool) gcraResult {
	r := gcraResult{limit: q.limit, retryAfter: spanOf(-nsPerSec)}
	tat := now
	if hasTAT {
		tat = stored
	}
	inc, dvt, ei := spanOf(q.increment), spanOf(q.tolerance), spanOf(q.interval)
	newTAT := tat.add(inc)
	if now.cmp(tat) > 0 {
		newTAT = now.add(inc)
	}
	// Limited when the next permitted time is in the future.
	diff := now.sub(newTAT.sub(dvt))
	var ttl span
	if diff.cmp(span{}) < 0 {
		if q.increment <= q.tolerance {
			r.retryAfter = diff.neg()
		}
		r.limited = true
		ttl = tat.sub(now)
	} else {
		r.tat = newTAT
		ttl = newTAT.sub(now)
	}
	if next := dvt.sub(ttl); next.cmp(ei.neg()) > 0 {
		r.remaining = saturateInt64(float64(next.wholeMicros()) / float64(q.interval/1_000))
	}
	r.resetAfter = ttl
	return r
}

// tatExpiry is what an allowed call does to the key's expiry. redis-cell
// writes the TAT and then sets the key's TTL to the whole milliseconds of
// TAT - now: -1 is Redis's "no expiry" (the key persists), and anything
// more negative makes RedisModule_SetExpire fail after the value was
// written, which redis-cell reports as an error. Otherwise the key expires
// when the TAT passes: redamo's deadline is the TAT itself (an expiry finer
// than the millisecond), where Redis's is the TTL added to its
// millisecond clock.
type tatExpiry uint8

const (
	expireAtTAT tatExpiry = iota
	expireNever
	expireNeverAndFail
)

func (r gcraResult) expiry() tatExpiry {
	switch ms := r.resetAfter.wholeMillis(); {
	case ms < -1:
		return expireNeverAndFail
	case ms == -1:
		return expireNever
	}
	return expireAtTAT
}

// Messages of Rust's ParseIntError, which redis-cell reports (prefixed
// "Cell error: ") for a stored value that is not a u64.
const (
	rustIntEmpty   = "cannot parse integer from empty string"
	rustIntInvalid = "invalid digit found in string"
	rustIntTooBig  = "number too large to fit in target type"
)

// parseRustU64 is Rust's u64::from_str: an optional '+', then decimal
// digits, checked from left to right. msg is the error's text.
func parseRustU64(s []byte) (n uint64, msg string) {
	if len(s) == 0 {
		return 0, rustIntEmpty
	}
	if s[0] == '+' {
		if len(s) == 1 {
			return 0, rustIntInvalid
		}
		s = s[1:]
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, rustIntInvalid
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, rustIntTooBig
		}
		n = n*10 + d
	}
	return n, ""
}

// ZeroRate reports a rate of zero, which redis-cell refuses.
func (q GCRAQuota) ZeroRate() bool { return q.interval == 0 }
