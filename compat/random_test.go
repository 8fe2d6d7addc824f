package compat

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Knobs of the random workload.
const (
	envRandomDuration = "REDAMO_COMPAT_RANDOM_DURATION" // a Go duration, e.g. 30s
	envSeed           = "REDAMO_COMPAT_SEED"            // replay a run
	roundLength       = 150                             // commands between two FLUSHALLs
)

func randomDuration(t *testing.T) time.Duration {
	if s := os.Getenv(envRandomDuration); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, envRandomDuration)
		return d
	}
	if requireAll() {
		return 20 * time.Second
	}
	if testing.Short() {
		return 2 * time.Second
	}
	return 5 * time.Second
}

// randomMismatch is the first difference a sequence showed.
type randomMismatch struct {
	step   int
	target *Target
	detail string
}

// played is one step as it ran: the sleep the workload inserted before it.
type played struct {
	step  *Step
	sleep time.Duration
}

// playSequence runs steps in lockstep on ref and targets, from a flushed
// dataset, over protocol proto. With draw > 0 it draws that many new steps
// from w instead. It stops at the first mismatch.
func playSequence(ref *Target, targets []*Target, proto int, w *Workload, steps []*Step, draw int, compared map[string]int) ([]played, *randomMismatch, error) {
	w.Reset()
	rs := &session{t: ref}
	defer rs.close()
	if err := rs.setup(proto); err != nil {
		return nil, nil, fmt.Errorf("reference: %w", err)
	}
	var ss []*session
	for _, tg := range targets {
		s := &session{t: tg}
		defer s.close()
		if err := s.setup(proto); err != nil {
			return nil, &randomMismatch{step: -1, target: tg, detail: "setup: " + err.Error()}, nil
		}
		ss = append(ss, s)
	}
	n := len(steps)
	if draw > 0 {
		n = draw
	}
	var out []played
	for i := 0; i < n; i++ {
		var st *Step
		if draw > 0 {
			st = w.Next()
		} else {
			st = steps[i]
		}
		// Render once so every server gets the same bytes; wait first if a
		// touched key is near a possible expiry.
		args := st.Render(time.Now(), "")
		start := time.Now()
		w.Before(args)
		slept := time.Since(start).Round(time.Millisecond)
		if slept > 0 {
			args = st.Render(time.Now(), "")
		}
		sent := time.Now()
		want := rs.run(st, args)
		w.After(args, sent)
		out = append(out, played{step: st, sleep: slept})
		for _, s := range ss {
			got := s.run(st, args)
			if compared != nil {
				compared[strings.ToLower(string(args[0]))]++
			}
			if err := compareReplies(want, got, st.Norms); err != nil {
				c := &Case{File: "random", Name: "workload"}
				return out, &randomMismatch{step: i, target: s.t,
					detail: mismatch(c, Variant{Name: fmt.Sprintf("resp%d", proto)}, s.t, st, formatArgs(args), want, got, err)}, nil
			}
		}
	}
	return out, nil, nil
}

// shrink removes steps while the sequence still mismatches on target,
// halving the chunk size down to single steps, within a replay budget.
func shrink(ref, target *Target, proto int, w *Workload, steps []*Step, budget time.Duration) ([]*Step, *randomMismatch, []played) {
	deadline := time.Now().Add(budget)
	fails := func(cand []*Step) (*randomMismatch, []played) {
		pl, mm, err := playSequence(ref, []*Target{target}, proto, w, cand, 0, nil)
		if err != nil {
			return nil, nil
		}
		return mm, pl
	}
	best, pl := fails(steps)
	if best == nil {
		return steps, nil, nil
	}
	steps = steps[:best.step+1]
	for chunk := len(steps) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(steps) && time.Now().Before(deadline); {
			end := min(i+chunk, len(steps))
			cand := append(append([]*Step(nil), steps[:i]...), steps[end:]...)
			if len(cand) == 0 {
				i = end
				continue
			}
			if mm, p := fails(cand); mm != nil {
				steps, best, pl = cand[:mm.step+1], mm, p
				continue
			}
			i = end
		}
	}
	return steps, best, pl
}

// reproducer prints a shrunk sequence as a case to paste into a case file.
func reproducer(seed int64, round int, proto int, pl []played) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# random workload, seed %d, round %d, RESP%d (replay: %s=%d)\n", seed, round, proto, envSeed, seed)
	fmt.Fprintf(&b, "case random-%d-%d\n", seed, round)
	if proto == 3 {
		b.WriteString("# run over RESP3: the suite runs every case in both protocols\n")
	}
	for _, p := range pl {
		if p.sleep > 0 {
			fmt.Fprintf(&b, "sleep %d\n", max(1, p.sleep.Milliseconds()))
		}
		b.WriteString(FormatStep(p.step) + "\n")
	}
	return b.String()
}

// TestRandomWorkload sends random command sequences to Redis and to redamo
// in lockstep for a bounded time (REDAMO_COMPAT_RANDOM_DURATION; 20s under
// make test), comparing every reply. A mismatch is shrunk to a minimal
// sequence and printed as a case, with the seed (REDAMO_COMPAT_SEED replays).
func TestRandomWorkload(t *testing.T) {
	ref, _ := redisServers(t)
	refT := redisTarget("redis", ref)
	targets := redamoTargets(t)
	require.NotEmpty(t, targets)

	seed := time.Now().UnixNano()
	if s := os.Getenv(envSeed); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, envSeed)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, envSeed, seed)

	// Draw only from commands every target supports.
	var names []string
	for name := range generators {
		ok := true
		for _, tg := range targets {
			ok = ok && tg.Supports(name)
		}
		if ok {
			names = append(names, name)
		}
	}
	// The margin must cover the time between one server getting a command
	// and the last one getting it (DynamoDB Local is much slower).
	margin := 30 * time.Millisecond
	for _, tg := range targets {
		if tg.Name == "dynamodb" {
			margin = 150 * time.Millisecond
		}
	}
	w := NewWorkload(seed, names, margin)
	require.NotEmpty(t, w.Commands(), "no command of the workload is supported by every target")
	var missing []string
	for name := range generators {
		if !contains(w.Commands(), name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	t.Logf("drawing from %d commands; not supported by every target yet: %s", len(w.Commands()), strings.Join(missing, " "))

	compared := map[string]int{}
	end := time.Now().Add(randomDuration(t))
	rounds := 0
	for ; time.Now().Before(end); rounds++ {
		proto := 2 + rounds%2
		pl, mm, err := playSequence(refT, targets, proto, w, nil, roundLength, compared)
		require.NoError(t, err)
		if mm == nil {
			continue
		}
		steps := make([]*Step, len(pl))
		for i, p := range pl {
			steps[i] = p.step
		}
		t.Logf("mismatch after %d commands in round %d; shrinking...", len(steps), rounds)
		small, smm, spl := shrink(refT, mm.target, proto, w, steps, 60*time.Second)
		if smm == nil {
			// The mismatch did not replay: report the original sequence.
			t.Errorf("random workload mismatch (did not replay: timing?)\n%s\nsequence:\n%s", mm.detail, reproducer(seed, rounds, proto, pl))
		} else {
			t.Errorf("random workload mismatch, shrunk from %d to %d commands\n%s\nreproducer:\n%s", len(steps), len(small), smm.detail, reproducer(seed, rounds, proto, spl))
		}
		break
	}
	total := 0
	var per []string
	for name, n := range compared {
		total += n
		per = append(per, fmt.Sprintf("%s=%d", name, n))
	}
	sort.Strings(per)
	t.Logf("%d commands compared in %d rounds (%d targets): %s", total, rounds, len(targets), strings.Join(per, " "))
	require.Positive(t, total)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestRandomShrinks proves the random workload finds and shrinks a
// difference: against a Redis whose GETDEL is renamed away, the first GETDEL
// mismatches and the reproducer is that one command.
func TestRandomShrinks(t *testing.T) {
	ref, _ := redisServers(t)
	broken, err := StartRedis(`rename-command GETDEL ""`)
	require.NoError(t, err)
	defer broken.Stop()
	refT, brokenT := redisTarget("redis", ref), redisTarget("broken", broken)
	w := NewWorkload(1, []string{"set", "get", "getdel", "incr", "del", "pexpire"}, 30*time.Millisecond)
	var mm *randomMismatch
	var pl []played
	for round := 0; mm == nil && round < 20; round++ {
		pl, mm, err = playSequence(refT, []*Target{brokenT}, 2, w, nil, 100, nil)
		require.NoError(t, err)
	}
	require.NotNil(t, mm, "a GETDEL must have been drawn and mismatched")
	steps := make([]*Step, len(pl))
	for i, p := range pl {
		steps[i] = p.step
	}
	small, smm, spl := shrink(refT, brokenT, 2, w, steps, 30*time.Second)
	require.NotNil(t, smm)
	require.Len(t, small, 1, reproducer(1, 0, 2, spl))
	require.Equal(t, "GETDEL", string(small[0].Args[0].Lit))
	require.Contains(t, smm.detail, "unknown command")
	require.Contains(t, reproducer(1, 0, 2, spl), "case random-1-0\nGETDEL ")

	// Every drawn step reads back from case-file syntax unchanged.
	for _, st := range steps {
		cases, err := ParseCases("r", []byte("case c\n"+FormatStep(st)+"\n"))
		require.NoError(t, err, FormatStep(st))
		require.Equal(t, st.Args, cases[0].Steps[0].Args, FormatStep(st))
		require.Equal(t, st.Norms, cases[0].Steps[0].Norms, FormatStep(st))
	}
}
