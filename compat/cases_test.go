package compat

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tally counts outcomes per target and variant.
type Tally map[string]map[string]map[Outcome]int

func (tl Tally) add(r Result) {
	if tl[r.Target] == nil {
		tl[r.Target] = map[string]map[Outcome]int{}
	}
	if tl[r.Target][r.Variant] == nil {
		tl[r.Target][r.Variant] = map[Outcome]int{}
	}
	tl[r.Target][r.Variant][r.Outcome]++
}

// suiteRun is the outcome of running every case.
type suiteRun struct {
	cases   []*Case
	results []Result
	runner  *Runner
	// stale are known_mismatches.txt entries whose cases now match.
	stale []string
}

// runSuite runs every case in every variant on the given targets, one
// subtest per case; a mismatch fails its subtest unless known_mismatches.txt
// lists it.
func runSuite(t *testing.T, targets []*Target) *suiteRun {
	t.Helper()
	ref, _ := redisServers(t)
	cases, err := LoadCases("testdata")
	require.NoError(t, err)
	runner, err := NewRunner(redisTarget("redis", ref), targets...)
	require.NoError(t, err)
	known := loadKnownMismatches(t)
	for id := range known {
		found := false
		for _, c := range cases {
			found = found || c.ID() == id
		}
		require.True(t, found, "known_mismatches.txt names %q, which is no case", id)
	}
	run := &suiteRun{cases: cases, runner: runner}
	mismatched := map[string]map[string]bool{} // case id -> targets that mismatched
	for _, c := range cases {
		c := c
		t.Run(c.ID(), func(t *testing.T) {
			for _, v := range Variants {
				results, err := runner.RunCase(c, v)
				require.NoError(t, err)
				for _, r := range results {
					run.results = append(run.results, r)
					if r.Outcome != Mismatch {
						continue
					}
					if mismatched[c.ID()] == nil {
						mismatched[c.ID()] = map[string]bool{}
					}
					mismatched[c.ID()][r.Target] = true
					switch km := known[c.ID()]; {
					case r.Target == "redis2":
						t.Errorf("case is nondeterministic on Redis itself: add a normalization\n%s", r.Detail)
					case km.covers(r.Target):
						t.Logf("known mismatch (known_mismatches.txt:%d: %s)\n%s", km.line, km.reason, r.Detail)
					default:
						t.Errorf("mismatch\n%s", r.Detail)
					}
				}
			}
		})
	}
	// An allowlist entry for a case that now matches must go: the list may
	// only shrink. This is loud but not a failure, so that fixing redamo
	// never breaks the build; TestReport lists stale entries too.
	for id, km := range known {
		ran := false
		for _, r := range run.results {
			if r.Case.ID() == id && km.covers(r.Target) && r.Outcome != NotRun {
				ran = true
			}
		}
		if ran && !anyTarget(mismatched[id], km) {
			t.Logf("STALE: known_mismatches.txt:%d: %s now matches Redis on every target it names: remove the line", km.line, id)
			run.stale = append(run.stale, id)
		}
	}
	return run
}

func anyTarget(m map[string]bool, km *knownMismatch) bool {
	for tg := range m {
		if km.covers(tg) {
			return true
		}
	}
	return false
}

// summary renders per-target, per-variant counts, with every not-run reason.
func (s *suiteRun) summary() string {
	tally := Tally{}
	reasons := map[string]map[string]int{}
	for _, r := range s.results {
		tally.add(r)
		if r.Outcome == NotRun {
			key := r.Target + " " + r.Variant
			if reasons[key] == nil {
				reasons[key] = map[string]int{}
			}
			reasons[key][r.Detail]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases\n", len(s.cases))
	var targets []string
	for tg := range tally {
		targets = append(targets, tg)
	}
	sort.Strings(targets)
	for _, tg := range targets {
		for _, v := range Variants {
			m := tally[tg][v.Name]
			fmt.Fprintf(&b, "  %-9s %-12s identical %4d  as expected %4d  mismatch %4d  not run %4d\n", tg, v.Name, m[Identical], m[AsExpected], m[Mismatch], m[NotRun])
			var rs []string
			for why, n := range reasons[tg+" "+v.Name] {
				rs = append(rs, fmt.Sprintf("      not run (%d): %s", n, why))
			}
			sort.Strings(rs)
			for _, r := range rs {
				b.WriteString(r + "\n")
			}
		}
	}
	return b.String()
}

// TestCases runs every case file against a real Redis and the targets:
// a second redis-server (proving each case deterministic), and redamo on
// each backend available.
func TestCases(t *testing.T) {
	_, twin := redisServers(t)
	targets := []*Target{redisTarget("redis2", twin)}
	targets = append(targets, redamoTargets(t)...)
	run := runSuite(t, targets)
	t.Log("\n" + run.summary())
}
