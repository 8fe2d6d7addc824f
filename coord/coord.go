package coord

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Service is one process's share of coordination: its counters and the
// wakeups of its waiting clients. Nothing correctness depends on lives
// here (that is all in the store): a wakeup only shortens a wait that
// polling would end anyway.
type Service struct {
	Locks, Leaders Stats
	Queues         Queues
	wake           wakeups
}

// Stats counts one family's outcomes in this process.
type Stats struct {
	// Granted counts grants with a new token (term); Renewed those that
	// found the holder already holding (ACQUIRE/ELECT again).
	Granted, Renewed atomic.Int64
	// Refused counts acquisitions and elections that ended without the
	// lease (after their wait); Waited those that had to wait at all.
	Refused, Waited atomic.Int64
	// Expired counts grants that took over a lease that had ended
	// without being released.
	Expired atomic.Int64
	// Released counts releases (resignations); Extended extensions
	// (heartbeats); Lapsed the extensions and releases that found the
	// lease already ended or released.
	Released, Extended, Lapsed atomic.Int64
	// NotOwner counts misuse: a release, extension or guard by someone
	// who does not hold the lease.
	NotOwner atomic.Int64
}

// Blocking waits poll with a backoff that starts at minPoll and doubles up
// to maxPoll, jittered; a wait also ends at the moment the lease it waits
// for runs out, and at once when this process sees it released.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 500 * time.Millisecond
)

// poll runs try until it reports done, the wait ends (wait <= 0: try
// once) or ctx ends (the client went away). try returns the time at
// which trying again is worth it (zero: none known). key names what a
// release wakes. It reports whether try succeeded and whether it had to
// wait at all.
func (s *Service) poll(ctx context.Context, key string, wait time.Duration, try func() (done bool, retryAt time.Time, err error)) (done, waited bool, err error) {
	deadline := time.Now().Add(wait)
	backoff := minPoll
	for {
		var ws *waiters
		if wait > 0 {
			// Watched before trying, so a release between the try and
			// the wait is not missed.
			ws = s.wake.watch(key)
		}
		done, retryAt, err := try()
		left := time.Until(deadline)
		if err != nil || done || left <= 0 {
			s.wake.unwatch(key, ws)
			return done, waited, err
		}
		waited = true
		pause := min(backoff/2+rand.N(backoff/2+1), left)
		if !retryAt.IsZero() {
			pause = max(min(pause, time.Until(retryAt)), time.Millisecond)
		}
		backoff = min(2*backoff, maxPoll)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ws.ch:
		case <-ctx.Done():
			t.Stop()
			s.wake.unwatch(key, ws)
			return false, waited, ctx.Err()
		}
		t.Stop()
		s.wake.unwatch(key, ws)
	}
}

// wakeups lets a waiter of this process learn at once that a lease it
// waits for was released (or changed hands) through this process.
type wakeups struct {
	mu sync.Mutex
	m  map[string]*waiters
}

type waiters struct {
	ch chan struct{}
	n  int
}

func (w *wakeups) watch(key string) *waiters {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*waiters{}
	}
	ws := w.m[key]
	if ws == nil {
		ws = &waiters{ch: make(chan struct{})}
		w.m[key] = ws
	}
	ws.n++
	return ws
}

// unwatch ends a watch (nil: none); ws may have been notified already,
// and key be watched again by others.
func (w *wakeups) unwatch(key string, ws *waiters) {
	if ws == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws.n--; ws.n == 0 && w.m[key] == ws {
		delete(w.m, key)
	}
}

func (w *wakeups) notify(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws := w.m[key]; ws != nil {
		close(ws.ch)
		delete(w.m, key)
	}
}

// Each calls f with every counter: family "lock" or "leader" and the
// outcome (granted, renewed, refused, waited, expired, released,
// extended, lapsed, notowner), then family "queue" and the operation
// (pushed, delivered, redelivered, acked, nacked, deadlettered,
// deduplicated; all queues of this process).
func (s *Service) Each(f func(family, outcome string, n int64)) {
	for _, fam := range []struct {
		name string
		st   *Stats
	}{{"lock", &s.Locks}, {"leader", &s.Leaders}} {
		st := fam.st
		for _, c := range []struct {
			outcome string
			n       *atomic.Int64
		}{
			{"granted", &st.Granted}, {"renewed", &st.Renewed}, {"refused", &st.Refused},
			{"waited", &st.Waited}, {"expired", &st.Expired}, {"released", &st.Released},
			{"extended", &st.Extended}, {"lapsed", &st.Lapsed}, {"notowner", &st.NotOwner},
		} {
			f(fam.name, c.outcome, c.n.Load())
		}
	}
	totals := map[string]int64{}
	s.Queues.EachQueue(func(_ string, st *QueueStats) {
		st.Each(func(op string, n int64) { totals[op] += n })
	})
	(&QueueStats{}).Each(func(op string, _ int64) { f("queue", op, totals[op]) })
}
