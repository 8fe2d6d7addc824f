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

// TestRunnerRedamoOnly runs redamo-only cases end to end on redamo (every
// backend available), in every variant: Redis targets do not run them,
// redamo's replies are matched against the expect directives, and a wrong
// expectation is reported as a mismatch.
func TestRunnerRedamoOnly(t *testing.T) {
	ref, twin := redisServers(t)
	src := `
case forms
redamo-only proves expect on commands Redis has too
SET k v | expect +OK
GET k | expect "v"
GET missing | expect nil
LPOP missing 2 | expect nilarray
INCR k | expect -ERR value is not an integer or out of range
HSET h a 1 b 2 | expect :2
HGETALL h | expect {"b": "2", "a": "1"}
SADD s x y z | expect :3
SMEMBERS s | expect ~["z", "x", "y"]
SMEMBERS s | sort | expect2 ["x", "y", "z"] | expect3 ~["x", "y", "z"]
RPUSH l c a b | expect :3
LRANGE l 0 -1 | expect ["c", "a", "b"]
PEXPIRE k 30000 | expect :1
PTTL k | expect :30000~1000
PEXPIREAT h $nowms+60000 | expect :1
PEXPIRETIME h | expect :$nowms+60000~1000
TIME | expect [?, ?]
sleep 10
EXISTS k h s | expect :3

case wrong-value
redamo-only proves a wrong expectation fails
SET k v | expect +OK
GET k | expect "w"

case map-as-array
redamo-only proves a map is a map over RESP3
HSET h a 1 | expect :1
HGETALL h | expect ["a", "1"]

case queue-refused
redamo-only proves a command refused while queued fails the MULTI variant
GET | expect -ERR wrong number of arguments for 'get' command

case queue-refused-nomulti
redamo-only proves nomulti
nomulti GET is refused while queued
GET | expect -ERR wrong number of arguments for 'get' command

case unsupported
redamo-only proves a command redamo lacks is not run
NOSUCH.COMMAND l | expect :1
`
	cases, err := ParseCases("t", []byte(src))
	require.NoError(t, err)
	targets := append([]*Target{redisTarget("twin", twin)}, redamoTargets(t)...)
	runner, err := NewRunner(redisTarget("redis", ref), targets...)
	require.NoError(t, err)

	const (
		as  = AsExpected
		bad = Mismatch
	)
	// Outcome on redamo per variant: resp2, resp3, multi-resp2, multi-resp3.
	expect := map[string][4]Outcome{
		"forms":                 {as, as, as, as},
		"wrong-value":           {bad, bad, bad, bad},
		"map-as-array":          {as, bad, as, bad},
		"queue-refused":         {as, as, bad, bad},
		"queue-refused-nomulti": {as, as, NotRun, NotRun},
		"unsupported":           {NotRun, NotRun, NotRun, NotRun},
	}
	// What a mismatch report must say, per case.
	detail := map[string][]string{
		"wrong-value":   {"t.txt:", "expected:", `"w"`, `want "w", got "v"`},
		"map-as-array":  {`want ["a", "1"], got {"a": "1"}`},
		"queue-refused": {"want +QUEUED", "needs nomulti"},
	}
	for _, c := range cases {
		for vi, v := range Variants {
			results, err := runner.RunCase(c, v)
			require.NoError(t, err)
			require.Len(t, results, len(targets))
			require.Equal(t, NotRun, results[0].Outcome, "%s %s: a Redis target runs no redamo-only case", c.Name, v.Name)
			require.Equal(t, NotForRedis, results[0].Detail)
			for _, r := range results[1:] {
				want := expect[c.Name][vi]
				require.Equal(t, want, r.Outcome, "%s %s %s: %s", c.Name, v.Name, r.Target, r.Detail)
				if want == Mismatch {
					for _, s := range detail[c.Name] {
						require.Contains(t, r.Detail, s, "%s %s %s", c.Name, v.Name, r.Target)
					}
				}
				if c.Name == "unsupported" {
					require.Equal(t, "unsupported: nosuch.command", r.Detail)
				}
			}
		}
	}
}
