package commands

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Native fuzz targets (go test -fuzz) for the argument parsers: each runs
// its seeds in every go test run; scripts/fuzz.sh runs them for longer.

// FuzzArgParsers feeds the option parsers arbitrary argument lists (the
// input split at spaces), each with at least the arguments its command's
// arity guarantees: none may panic, whatever the arguments.
func FuzzArgParsers(f *testing.F) {
	for _, s := range []string{
		"k v EX 10 NX GET", "k v PX 0 KEEPTTL", "k BY nosort GET # LIMIT 0 -1 ALPHA DESC STORE d",
		"s MAXLEN ~ 10 LIMIT 5 * f v", "s NOMKSTREAM MINID = 0-1 1-* f v", "COUNT 2 BLOCK 0 STREAMS a b $ 0",
		"e RANK -1 COUNT 0 MAXLEN 9223372036854775807", "0 MATCH * COUNT 0 TYPE string", "NX XX GT LT",
		"g NX CH 13.36 38.11 a", "2 a b LEFT COUNT 0", "q COUNT 5 VT 100 BLOCK 9223372036854775807",
		"l o PX 1 WAIT 0 FENCE 0", "k 0 1 1 -1", "numkeys", "1 \x00 2",
		"k GET i64 #-1 OVERFLOW SAT INCRBY u63 #9223372036854775807 1 SET i8 # 3", "k OVERFLOW", "k GET u8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args [][]byte
		for _, a := range bytes.Split([]byte(s), []byte(" ")) {
			args = append(args, a)
		}
		with := func(name string, n int) [][]byte {
			// The command name and at least n arguments, as the table's
			// arity check guarantees.
			out := append([][]byte{[]byte(name)}, args...)
			for len(out) < n+1 {
				out = append(out, []byte("x"))
			}
			return out
		}
		parseStringOpts(args, true)
		parseStringOpts(args, false)
		parseSort(with("sort", 1), false)
		parseSort(with("sort_ro", 1), true)
		parseScan(with("scan", 1)[1:])
		parseAddOrTrim(with("xadd", 4), true, 100)
		parseAddOrTrim(with("xtrim", 3), false, 0)
		parseXreadArgs(with("xread", 3), false, false)
		parseXreadArgs(with("xreadgroup", 3), false, true)
		parseXreadArgs(with("xread", 3), true, false)
		parseLpos(args)
		parseExpireOpts(args)
		parseGeoAdd(with("geoadd", 4))
		parseGeoDist(with("geodist", 3))
		parseMpop(with("lmpop", 3)[1:], "left", "right")
		parseQueueOpts(args, "COUNT", "VT", "BLOCK", "PRIORITY", "DELAY", "DEDUP")
		parseLeaseOpts("lock.acquire", args, "PX", "EX", "WAIT", "FENCE", "VALUE")
		parseThrottle(with("cl.throttle", 0))
		parseBitfield(with("bitfield", 1), 1<<29)
		parseBitfield(with("bitfield", 1), math.MaxInt64)
	})
}

// FuzzGlobMatch: a pattern that escapes every byte of s matches s, a
// pattern of stars matches every non-empty string, and every string a pattern matches
// starts with the prefix KEYS and SCAN narrow their reads to.
func FuzzGlobMatch(f *testing.F) {
	for _, s := range [][2]string{{"*", "abc"}, {"a[b-", "ab"}, {"\\", "\\"}, {"[^a]*", "b"}, {"a*b*c", "aXbYc"}, {"[", ""}, {"k\x00*", "k\x00v"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 200 || len(s) > 200 {
			return
		}
		var esc []byte
		for i := 0; i < len(s); i++ {
			esc = append(esc, '\\', s[i])
		}
		require.True(t, globMatch(esc, []byte(s)), "%q must match %q", esc, s)
		// As in Redis, stars match any string but the empty one (the
		// loop over the string never starts).
		require.Equal(t, s != "", globMatch([]byte("**"), []byte(s)), "** and %q", s)
		if globMatch([]byte(p), []byte(s)) {
			require.True(t, bytes.HasPrefix([]byte(s), globPrefix([]byte(p))), "%q matches %q but lacks its prefix %q", p, s, globPrefix([]byte(p)))
		}
	})
}

// FuzzScoreRange: a range that parses has no NaN bound (Redis refuses
// one), and a plain number is a bound that includes itself.
func FuzzScoreRange(f *testing.F) {
	for _, s := range [][2]string{{"-inf", "+inf"}, {"(1", "(2"}, {"nan", "1"}, {"(", "1e400"}, {"0x10", " 1"}, {"1e-400", "-0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, lo, hi string) {
		r, ok := parseScoreRange([]byte(lo), []byte(hi))
		if ok {
			require.False(t, math.IsNaN(r.min) || math.IsNaN(r.max), "%q %q", lo, hi)
		}
		if r, ok := parseScoreRange([]byte(lo), []byte(lo)); ok && !r.minex {
			require.False(t, r.empty(), "[%q, %q] holds its bound", lo, lo)
		}
		parseLexRange([]byte(lo), []byte(hi))
	})
}

// FuzzBlockTimeout: a timeout that parses is never negative.
func FuzzBlockTimeout(f *testing.F) {
	for _, s := range []string{"0", "0.001", "1e-10", "inf", "-0", "9223372036854775.807", "9223372036854776", "nan", "0x10", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ms, msg := parseBlockTimeout([]byte(s)); msg == "" {
			require.GreaterOrEqual(t, ms, int64(0), s)
		}
	})
}
