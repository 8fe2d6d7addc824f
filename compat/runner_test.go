package compat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunnerOutcomes proves the runner can fail: two real Redis servers
// differ in their port, and a target that lacks a command is reported as not
// run with the reason.
func TestRunnerOutcomes(t *testing.T) {
	ref, twin := redisServers(t)
	src := `
case same
SET k "\x00v"
GET k
QUIT
GET k

case differs
CONFIG GET port

case differs-normalized
CONFIG GET port | shape

case hashes
HSET h f v
HGET h f

case tx
MULTI
SET k v
EXEC

case sleepy
SET k v PX 10
sleep 30
GET k
`
	cases, err := ParseCases("t", []byte(src))
	require.NoError(t, err)
	limited := &Target{Name: "limited", Addr: twin.Addr, Timeout: replyTimeout,
		Commands: map[string]bool{"set": true, "get": true, "quit": true, "config": true, "config|get": true}}
	runner, err := NewRunner(redisTarget("redis", ref), redisTarget("twin", twin), limited)
	require.NoError(t, err)

	type want struct {
		variant string
		twin    Outcome
		limited Outcome
		reason  string // limited's not-run reason
	}
	expect := map[string][]want{
		"same":               {{"resp2", Identical, Identical, ""}, {"resp3", Identical, Identical, ""}, {"multi-resp2", Identical, NotRun, "MULTI unsupported"}},
		"differs":            {{"resp2", Mismatch, Mismatch, ""}, {"multi-resp3", Mismatch, NotRun, "MULTI unsupported"}},
		"differs-normalized": {{"resp3", Identical, Identical, ""}},
		"hashes":             {{"resp2", Identical, NotRun, "unsupported: hget hset"}},
		"tx":                 {{"resp2", Identical, NotRun, "unsupported: exec multi"}, {"multi-resp2", NotRun, NotRun, "uses transactions itself"}},
		"sleepy":             {{"resp2", Identical, Identical, ""}, {"multi-resp3", Identical, NotRun, "MULTI unsupported"}},
	}
	for _, c := range cases {
		for _, w := range expect[c.Name] {
			var v Variant
			for _, x := range Variants {
				if x.Name == w.variant {
					v = x
				}
			}
			results, err := runner.RunCase(c, v)
			require.NoError(t, err)
			require.Len(t, results, 2)
			require.Equal(t, w.twin, results[0].Outcome, "%s %s twin: %s", c.Name, v.Name, results[0].Detail)
			require.Equal(t, w.limited, results[1].Outcome, "%s %s limited: %s", c.Name, v.Name, results[1].Detail)
			if w.reason != "" {
				require.Equal(t, w.reason, results[1].Detail)
			}
			if w.twin == Mismatch {
				require.Contains(t, results[0].Detail, "CONFIG")
				require.Contains(t, results[0].Detail, ref.Addr[len("127.0.0.1:"):])
				require.Contains(t, results[0].Detail, twin.Addr[len("127.0.0.1:"):])
			}
		}
	}
}

// TestScanAll checks that a scan directive compares the whole iteration,
// whatever the page boundaries.
func TestScanAll(t *testing.T) {
	ref, _ := redisServers(t)
	s := &session{t: redisTarget("redis", ref)}
	defer s.close()
	require.NoError(t, s.setup(2))
	for _, k := range []string{"c", "a", "b", "d", "e"} {
		rep := s.do([][]byte{[]byte("SET"), []byte(k), []byte("1")})
		require.NoError(t, rep.err)
	}
	rep := s.scanAll([][]byte{[]byte("SCAN"), []byte("0"), []byte("COUNT"), []byte("1")})
	require.NoError(t, rep.err)
	require.Equal(t, "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n", string(rep.raw))
	rep = s.scanAll([][]byte{[]byte("SCAN"), []byte("x")})
	require.Equal(t, "-ERR invalid cursor\r\n", string(rep.raw))
}
