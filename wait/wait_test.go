package wait

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// never is a Backoff under which a self-polling waiter does not poll
// within a test: whatever ends its wait is a wakeup.
var never = Backoff{Min: time.Hour, Max: time.Hour}

// recv is the next result; a waiter not woken within long waits for an
// hour, and fails the test.
func recv(t *testing.T, out <-chan result) result {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(long):
		t.Fatal("no waiter was woken")
		return result{}
	}
}

// long is far past anything a wakeup takes, and far short of an hour.
const long = 30 * time.Second

// stock is what waiters take from: a count of items under one key.
type stock struct{ n atomic.Int64 }

func (s *stock) take() bool {
	for {
		n := s.n.Load()
		if n == 0 {
			return false
		}
		if s.n.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

type result struct {
	name         string
	done, waited bool
	err          error
}

// waitFor waits on r in a goroutine until w's key holds an item, and
// reports on out.
func waitFor[T any](ctx context.Context, r *Registry[T], name string, w Waiter[T], s *stock, tries *atomic.Int64, out chan<- result) {
	go func() {
		done, waited, err := r.Wait(ctx, w, time.Hour, func(bool) (bool, time.Time, error) {
			tries.Add(1)
			return s.take(), time.Time{}, nil
		})
		out <- result{name, done, waited, err}
	}()
}

// TestNotifyServesInTurn: a change notified through the registry wakes at
// once the first waiter taking turns on its key (and only it), without
// any poll; the next change serves the next one.
func TestNotifyServesInTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func() *Registry[bool]
	}{
		{"self-polling", func() *Registry[bool] { return &Registry[bool]{Backoff: never} }},
		{"prober", func() *Registry[bool] { return &Registry[bool]{Backoff: never, Prober: nothing{}} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			var s stock
			var tries [2]atomic.Int64
			out := make(chan result, 2)
			for i, name := range []string{"a", "b"} {
				waitFor(context.Background(), r, name, Waiter[bool]{Keys: []string{"k"}, Turns: true}, &s, &tries[i], out)
				require.Eventually(t, func() bool { return r.WaitingOn("k") == i+1 }, 5*time.Second, time.Millisecond)
			}
			require.EqualValues(t, 1, tries[1].Load(), "b waits its turn")

			s.n.Add(1)
			r.Notify("k")
			got := recv(t, out)
			require.Equal(t, result{"a", true, true, nil}, got, "the first in line is served")
			require.Equal(t, 1, r.WaitingOn("k"))

			s.n.Add(1)
			r.Notify("k")
			got = recv(t, out)
			require.Equal(t, result{"b", true, true, nil}, got)
			require.Zero(t, r.Waiting())
		})
	}
}

// TestNotifyWakesEveryWatcher: watchers are not served in turn: one
// notification wakes each of them.
func TestNotifyWakesEveryWatcher(t *testing.T) {
	r := &Registry[bool]{Backoff: never}
	var changed atomic.Bool
	out := make(chan result, 3)
	for _, name := range []string{"a", "b", "c"} {
		go func() {
			done, waited, err := r.Wait(context.Background(), Waiter[bool]{Keys: []string{"w"}}, time.Hour, func(bool) (bool, time.Time, error) {
				return changed.Load(), time.Time{}, nil
			})
			out <- result{name, done, waited, err}
		}()
	}
	require.Eventually(t, func() bool { return r.WaitingOn("w") == 3 }, 5*time.Second, time.Millisecond)
	changed.Store(true)
	r.Notify("w")
	seen := map[string]bool{}
	for range 3 {
		got := recv(t, out)
		require.True(t, got.done)
		seen[got.name] = true
	}
	require.Len(t, seen, 3)
}

// TestLeaverHandsTheTurnOn: a first waiter that leaves (its client went
// away) makes the next one try at once, without a poll.
func TestLeaverHandsTheTurnOn(t *testing.T) {
	r := &Registry[bool]{Backoff: never, Prober: nothing{}}
	var s stock
	var tries [2]atomic.Int64
	out := make(chan result, 2)
	gone, leave := context.WithCancel(context.Background())
	defer leave()
	waitFor(gone, r, "a", Waiter[bool]{Keys: []string{"k"}, Turns: true}, &s, &tries[0], out)
	require.Eventually(t, func() bool { return r.WaitingOn("k") == 1 }, 5*time.Second, time.Millisecond)
	waitFor(context.Background(), r, "b", Waiter[bool]{Keys: []string{"k"}, Turns: true}, &s, &tries[1], out)
	require.Eventually(t, func() bool { return r.WaitingOn("k") == 2 }, 5*time.Second, time.Millisecond)

	s.n.Add(1) // arrived, but nobody told: only the turn passing wakes b
	leave()
	got := recv(t, out)
	require.Equal(t, "a", got.name)
	require.ErrorIs(t, got.err, context.Canceled)
	got = recv(t, out)
	require.Equal(t, result{"b", true, true, nil}, got)
	require.EqualValues(t, 2, tries[1].Load(), "b tried once when it came, once when its turn came")
}

// nothing is a Prober that never finds anything.
type nothing struct{}

func (nothing) Probe(_ context.Context, keys []string) ([]bool, error) {
	return make([]bool, len(keys)), nil
}
func (nothing) Serves(bool) bool { return false }

// probe is a Prober over a map of keys to stocks, counting its probes.
type probe struct {
	mu     sync.Mutex
	stocks map[string]*stock
	probes atomic.Int64
}

func (p *probe) Probe(_ context.Context, keys []string) ([]bool, error) {
	p.probes.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = p.stocks[k].n.Load() > 0
	}
	return out, nil
}
func (*probe) Serves(v bool) bool { return v }

// TestProberFindsWhatNobodyNotified: under a Prober, a change nobody
// notified (a write through another process) is found by the poller,
// which probes every key with waiters in one go, however many wait, and
// stops when nobody waits.
func TestProberFindsWhatNobodyNotified(t *testing.T) {
	p := &probe{stocks: map[string]*stock{"x": {}, "y": {}}}
	r := &Registry[bool]{Backoff: Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}, Prober: p}
	var tries [4]atomic.Int64
	out := make(chan result, 4)
	for i, name := range []string{"x1", "x2", "y1", "y2"} {
		key := name[:1]
		waitFor(context.Background(), r, name, Waiter[bool]{Keys: []string{key}, Turns: true}, p.stocks[key], &tries[i], out)
	}
	require.Eventually(t, func() bool { return r.Waiting() == 4 }, 5*time.Second, time.Millisecond)
	for range 2 {
		p.stocks["y"].n.Add(1)
	}
	seen := map[string]bool{}
	for range 2 {
		got := recv(t, out)
		require.True(t, got.done)
		seen[got.name] = true
	}
	require.Equal(t, map[string]bool{"y1": true, "y2": true}, seen)
	require.Equal(t, 2, r.WaitingOn("x"))

	p.stocks["x"].n.Add(2)
	for range 2 {
		require.True(t, recv(t, out).done)
	}
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.polling
	}, 5*time.Second, time.Millisecond, "nobody waits: the poller ends")
}

// TestProberWakesReadyWatchers: under a Prober, a watcher is woken by the
// probes its Ready accepts, and the deadline ends a wait without a try.
func TestProberWakesReadyWatchers(t *testing.T) {
	p := &probe{stocks: map[string]*stock{"k": {}}}
	r := &Registry[bool]{Backoff: Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}, Prober: p}
	var ready atomic.Bool
	var tries atomic.Int64
	out := make(chan result, 1)
	go func() {
		done, waited, err := r.Wait(context.Background(), Waiter[bool]{Keys: []string{"k"}, Ready: func(key string, _ bool) bool {
			return key == "k" && ready.Load()
		}}, time.Minute, func(bool) (bool, time.Time, error) {
			tries.Add(1)
			return ready.Load(), time.Time{}, nil
		})
		out <- result{"w", done, waited, err}
	}()
	require.Eventually(t, func() bool { return p.probes.Load() > 3 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, tries.Load(), "probes Ready refuses wake nobody")
	ready.Store(true)
	require.Equal(t, result{"w", true, true, nil}, recv(t, out))

	// A deadline under a Prober: the wait ends without trying again.
	tries.Store(0)
	ready.Store(false)
	done, waited, err := r.Wait(context.Background(), Waiter[bool]{Keys: []string{"k"}, Turns: true}, 20*time.Millisecond, func(bool) (bool, time.Time, error) {
		tries.Add(1)
		return false, time.Time{}, nil
	})
	require.NoError(t, err)
	require.False(t, done)
	require.True(t, waited)
	require.EqualValues(t, 1, tries.Load())
}

// TestBackoff: the policy's pauses start at Min, grow by half, stop at Max.
func TestBackoff(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 40 * time.Millisecond}
	var got []time.Duration
	for d := b.First(); len(got) < 6; d = b.Next(d) {
		got = append(got, d)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{10 * ms, 15 * ms, 22500 * time.Microsecond, 33750 * time.Microsecond, 40 * ms, 40 * ms}, got)
	require.Equal(t, DefaultMin, Backoff{}.First())
	require.Equal(t, DefaultMax, Backoff{}.Next(time.Hour))
	for range 100 {
		j := Jitter(100 * time.Millisecond)
		require.GreaterOrEqual(t, j, 80*time.Millisecond)
		require.LessOrEqual(t, j, 120*time.Millisecond)
	}
}
