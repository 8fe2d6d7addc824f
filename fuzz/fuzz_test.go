package fuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/internal/testserver"
)

// Environment knobs; scripts/fuzz.sh sets them for make fuzz.
const (
	// envDuration makes a long run: cases with seeds from envSeed on,
	// until the duration is spent (a Go duration, e.g. 10m).
	envDuration = "REDAMO_FUZZ_DURATION"
	// envSeed is the first case's seed (default: the clock's, printed).
	envSeed = "REDAMO_FUZZ_SEED"
	// envCases runs that many cases per store instead (1 with envSeed
	// replays one case).
	envCases = "REDAMO_FUZZ_CASES"
	// envOut is where a long run writes its reproducers.
	envOut = "REDAMO_FUZZ_OUT"
	// envRace builds the server with the race detector.
	envRace = "REDAMO_FUZZ_RACE"
)

// The short run (go test, make test): fixed seeds, a few seconds.
var shortCases = map[string]int{"memory": 100, "dynamodb": 6}

// freshEvery is how many cases a server process serves before a fresh
// one on an empty store takes over.
const freshEvery = 30

// slowCase is how long a case may take before a long run says so.
const slowCase = 5 * time.Second

// Commands per case, beside the setup.
const (
	minCommands = 40
	maxCommands = 160
)

type settings struct {
	seed     uint64
	cases    int           // per store; 0: until the duration is spent
	duration time.Duration // long run
	out      string
}

func loadSettings(t *testing.T) settings {
	var s settings
	if v := os.Getenv(envDuration); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, envDuration)
		s.duration = d
		s.seed = uint64(time.Now().UnixNano() % 1e12)
	}
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, envSeed)
		s.seed = n
	}
	if v := os.Getenv(envCases); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, envCases)
		s.cases = n
	}
	s.out = os.Getenv(envOut)
	return s
}

// stores are the stores to fuzz: memory, and DynamoDB Local when
// REDAMO_TEST_DYNAMODB_ENDPOINT names one (required under make test).
func stores(t *testing.T) []string {
	out := []string{"memory"}
	if os.Getenv(testserver.EnvEndpoint) != "" {
		return append(out, "dynamodb")
	}
	if os.Getenv(testserver.EnvRequireDynamoDB) == "1" {
		t.Fatalf("%s=1 but %s is not set", testserver.EnvRequireDynamoDB, testserver.EnvEndpoint)
	}
	t.Logf("DynamoDB store skipped: %s is not set", testserver.EnvEndpoint)
	return out
}

// report collects a run's findings: each new kind of bug once, shrunk,
// with the seed that found it and a reproducer.
type report struct {
	t *testing.T
	// test is the top-level test, for the replay line.
	test  string
	known []knownFailure
	seen  map[string]bool
	out   string
	// failed are the reproducers of unknown findings; knownHits counts
	// findings the known list covers.
	failed    []string
	knownHits map[string]int
}

func newReport(t *testing.T, out string) *report {
	list, err := loadKnownFailures(filepath.Join("testdata", "known_failures.txt"))
	require.NoError(t, err)
	return &report{t: t, test: t.Name(), known: list, seen: map[string]bool{}, out: out, knownHits: map[string]int{}}
}

// add reports a case's findings; shrink, when set, makes a smaller program
// that still shows the finding.
func (r *report) add(store string, seed uint64, p *program, fs []finding, shrink func(*program, finding) *program) {
	for _, f := range fs {
		if f.kind == "transient" {
			// The store, not redamo: logged, not failed on.
			r.t.Logf("store unavailable while checking the keyspace (seed %d): %s", seed, cut(f.detail, 300))
			continue
		}
		if k := known(r.known, f); k != nil {
			r.knownHits[k.source+" ("+k.reason+")"]++
			r.t.Logf("known (%s): %s", k.source, cut(f.String(), 300))
			continue
		}
		sig := store + " " + f.signature()
		if r.seen[sig] {
			continue
		}
		r.seen[sig] = true
		small := p
		if shrink != nil {
			small = shrink(p, f)
		}
		name := fmt.Sprintf("%s-%s-seed-%d", f.kind, strings.ReplaceAll(f.cmd, "|", "-"), seed)
		if f.kind == "errclass" {
			// The regression replays it against Redis.
			small = &program{proto: small.proto, writes: small.writes, redis: true}
		}
		repro := formatProgram(name, small,
			fmt.Sprintf("%s\n(store %s; replay: %s=%d %s=1 go test ./fuzz -run '%s')", cut(f.String(), 1500), store, envSeed, seed, envCases, r.test))
		if r.out != "" {
			path := filepath.Join(r.out, name+".txt")
			if err := os.WriteFile(path, []byte(repro), 0o644); err == nil {
				repro += fmt.Sprintf("# written to %s (every reply: %s=%s go test ./fuzz -run TestTrace -v)\n", path, envTrace, path)
			}
		}
		r.failed = append(r.failed, repro)
		r.t.Errorf("finding on %s, seed %d (%d commands, shrunk to %d):\n%s", store, seed, p.commands(), small.commands(), repro)
	}
}

func (r *report) summary() {
	var ks []string
	for k, n := range r.knownHits {
		ks = append(ks, fmt.Sprintf("%dx %s", n, k))
	}
	sort.Strings(ks)
	if len(ks) > 0 {
		r.t.Logf("known failures hit: %s", strings.Join(ks, "; "))
	}
}

// shrinker returns a function that removes writes and commands from a
// failing program while it still shows a finding of the same kind in the
// same command, within budget.
func shrinker(s *server, budget time.Duration) func(*program, finding) *program {
	return func(p *program, f finding) *program {
		deadline := time.Now().Add(budget)
		fails := func(q *program) bool {
			if time.Now().After(deadline) {
				return false
			}
			fs, _ := runProgram(s, q)
			return hasFinding(fs, f)
		}
		if !fails(p) {
			return p
		}
		p = shrinkProgram(p, 0, deadline, fails)
		if p.proto == 3 {
			if q := (&program{proto: 2, writes: p.writes, redis: p.redis}); fails(q) {
				p = q
			}
		}
		return p
	}
}

// hasFinding reports whether fs holds a finding of f's kind in f's command.
func hasFinding(fs []finding, f finding) bool {
	for _, g := range fs {
		if g.kind == f.kind && g.cmd == f.cmd {
			return true
		}
	}
	return false
}

// shrinkProgram removes whole writes from p (from index from on), halving
// the chunks it tries, then single commands within each write, while
// fails holds, until deadline.
func shrinkProgram(p *program, from int, deadline time.Time, fails func(*program) bool) *program {
	with := func(writes []write) *program { return &program{proto: p.proto, writes: writes, redis: p.redis} }
	for chunk := len(p.writes) / 2; chunk >= 1; chunk /= 2 {
		for i := from; i+chunk <= len(p.writes) && time.Now().Before(deadline); {
			q := with(append(append([]write{}, p.writes[:i]...), p.writes[i+chunk:]...))
			if len(q.writes) > 0 && fails(q) {
				p = q
				continue
			}
			i += chunk
		}
	}
	for wi := 0; wi < len(p.writes) && time.Now().Before(deadline); wi++ {
		for ci := 0; ci < len(p.writes[wi].cmds) && len(p.writes[wi].cmds) > 1; {
			q := with(append([]write{}, p.writes...))
			w := q.writes[wi]
			w.cmds = append(append([]command{}, w.cmds[:ci]...), w.cmds[ci+1:]...)
			q.writes[wi] = w
			if fails(q) {
				p = q
				continue
			}
			ci++
		}
	}
	return p
}

// TestSurface runs generated cases on every store: a few with fixed
// seeds, or (REDAMO_FUZZ_DURATION) as many as the duration allows.
func TestSurface(t *testing.T) {
	cfg := loadSettings(t)
	rep := newReport(t, cfg.out)
	defer rep.summary()
	ss := stores(t)
	if cfg.duration > 0 {
		t.Logf("long run: %v from seed %d (replay a case: %s=SEED %s=1)", cfg.duration, cfg.seed, envSeed, envCases)
	}
	for _, store := range ss {
		t.Run(store, func(t *testing.T) {
			rep.t = t
			srv := startServer(t, store)
			shrink := shrinker(srv, 90*time.Second)
			if cfg.duration == 0 && cfg.cases == 0 {
				shrink = shrinker(srv, 20*time.Second)
			}
			n := cfg.cases
			if n == 0 && cfg.duration == 0 {
				n = shortCases[store]
			}
			var end time.Time
			if cfg.duration > 0 {
				// Of the duration: half on memory, a quarter on DynamoDB
				// (or three quarters on memory alone), a quarter to
				// TestErrorClasses.
				share := cfg.duration / 2
				if len(ss) == 1 {
					share = cfg.duration * 3 / 4
				} else if store != "memory" {
					share = cfg.duration / 4
				}
				end = time.Now().Add(share)
			}
			start, cases, commands := time.Now(), 0, 0
			for i := 0; n == 0 && time.Now().Before(end) || i < n; i++ {
				seed := cfg.seed + uint64(i)
				g := newGenerator(seed, modeSurface)
				p := g.program(minCommands + g.r.IntN(maxCommands-minCommands))
				if i > 0 && i%freshEvery == 0 {
					srv.fresh(t)
				}
				caseStart := time.Now()
				fs, sent := runProgram(srv, p)
				if d := time.Since(caseStart); d > slowCase {
					t.Logf("slow case: seed %d took %v (%d commands)", seed, d.Round(time.Millisecond), sent)
				}
				cases++
				commands += sent
				rep.add(store, seed, p, fs, shrink)
				if cfg.duration > 0 && cases%200 == 0 {
					t.Logf("%s: %d cases, %d commands, %v", store, cases, commands, time.Since(start).Round(time.Second))
				}
			}
			t.Logf("%s: %d cases, %d commands in %v", store, cases, commands, time.Since(start).Round(time.Millisecond))
			if os.Getenv("REDAMO_FUZZ_STATS") == "1" {
				var lines []string
				for k, v := range replyStats {
					lines = append(lines, fmt.Sprintf("%6d %s", v, k))
				}
				sort.Strings(lines)
				t.Logf("replies:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// TestRegressions replays every case the fuzzer ever failed on.
func TestRegressions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "regressions.txt"))
	require.NoError(t, err)
	cases, err := parseRegressions("regressions.txt", data)
	require.NoError(t, err)
	ref := ""
	for _, c := range cases {
		if c.redis && ref == "" {
			ref = compat.ReferenceRedis(t, "REDAMO_FUZZ_REDIS_ADDR")
		}
	}
	for _, store := range stores(t) {
		t.Run(store, func(t *testing.T) {
			srv := startServer(t, store)
			for _, c := range cases {
				if !c.runsOn(store) {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					var fs []finding
					if c.redis {
						d := &diffRun{redis: ref, redamo: srv.addr, extra: map[string]int{}}
						require.NoError(t, d.run(c.prog))
						fs = d.findings
					} else {
						fs, _ = runProgram(srv, c.prog)
					}
					for _, f := range fs {
						if c.known != "" {
							t.Logf("known failure (%s): %s", c.known, f)
							continue
						}
						t.Errorf("regressions.txt:%d: %s", c.line, f)
					}
					if c.known != "" && len(fs) == 0 {
						t.Logf("regressions.txt:%d: marked known (%s) but passes now: drop the known line", c.line, c.known)
					}
				})
			}
		})
	}
}
