// Package wait is how a command waits for a change another command makes:
// the blocked pops and XREAD BLOCK of commands/, and LOCK.ACQUIRE WAIT,
// LEADER.ELECT WAIT, LEADER.WATCH and QUEUE.POP BLOCK of coord/.
//
// Nothing correctness depends on lives here: what a waiter waits for is in
// the table, and a waiter that is never woken finds it by polling. A
// Registry only shortens waits and shares their polls:
//
//   - Waiters wait on keys (strings the owner chooses: a partition key, a
//     queue's name). A write through this process calls Notify on what it
//     changed, which wakes at once the first of the key's waiters that take
//     turns and every waiter that watches. Writes through other processes
//     are seen by polling.
//   - Waiters that take turns (a pop, a lock, a queue: what a change frees
//     serves one) are served in arrival order: only the first is woken or
//     polls for a key, and it hands the turn on when it leaves. Watchers (an
//     XREAD, LEADER.WATCH: each has a condition of its own) are all woken.
//   - Polling follows one policy (Backoff): a key's pause between two polls
//     starts at Min after the key was armed or something arrived, grows by
//     half while nothing does, up to Max, jittered (Jitter) so that
//     processes do not poll in step. Who polls depends on the
//     registry: with a Prober, one goroutine per registry (alive while
//     anyone waits) probes every due key in one go and wakes the waiters it
//     may serve; without one, each waiter's own try is its poll (the first
//     in line only, for waiters that take turns).
//
// Nothing here knows about RESP, the store or the data model: the owner
// names the keys and says, through its Prober and its waiters' Ready, what
// a probe means.
package wait

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMin is the first pause between two polls of a key, after it was
// armed or something arrived; DefaultMax the longest. They apply where a
// Backoff sets none.
const (
	DefaultMin = 10 * time.Millisecond
	DefaultMax = 500 * time.Millisecond
)

// Backoff is the polling policy: pauses from Min growing by half up to
// Max, each jittered.
type Backoff struct{ Min, Max time.Duration }

// First is the pause after a key was armed or something arrived.
func (b Backoff) First() time.Duration {
	if b.Min <= 0 {
		return DefaultMin
	}
	return b.Min
}

// Next is the pause after one of d that found nothing.
func (b Backoff) Next(d time.Duration) time.Duration {
	m := b.Max
	if m <= 0 {
		m = DefaultMax
	}
	return max(min(d*3/2, m), b.First())
}

// jitterShare is how far Jitter may move a pause, as a share of it.
const jitterShare = 0.2

// Jitter is d moved at random by up to jitterShare of it either way.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - jitterShare + 2*jitterShare*rand.Float64()))
}

// Parker is implemented by a context whose owner wants to know when a
// call is about to wait (commands.Ctx: its connection then sends the
// replies it holds and watches the client while it waits). A call that
// succeeds at once, or does not wait, never parks.
type Parker interface{ Park() }

// Prober reads, for a registry's poller, what waiters on keys wait for:
// one value per key, all in one go.
type Prober[T any] interface {
	Probe(ctx context.Context, keys []string) ([]T, error)
	// Serves reports whether the first waiter that takes turns on a key
	// should try on v, the key's probe.
	Serves(v T) bool
}

// Waiter says what one call waits on.
type Waiter[T any] struct {
	Keys []string
	// Turns: the waiter takes turns with the others on its keys (it
	// consumes what it finds); otherwise it watches.
	Turns bool
	// Ready, for a watcher under a Prober, tells from a key's probe whether
	// to wake it; nil: every probe wakes it.
	Ready func(key string, v T) bool
}

// Registry is one process's waiters of one kind. The zero value is ready
// to use: no Prober, the default pauses.
type Registry[T any] struct {
	// Backoff is the pace at which the waiters' keys are polled.
	Backoff
	// Prober, if set, polls the keys waiters wait on; otherwise each
	// waiter polls by trying.
	Prober Prober[T]

	// waiting counts the calls waiting, readable without the lock: a
	// write with nobody waiting costs one atomic load.
	waiting atomic.Int64

	mu      sync.Mutex
	keys    map[string]*line[T]
	polling bool
	poke    chan struct{}
}

// line is the waiters on one key, in arrival order, and when the poller
// reads the key next.
type line[T any] struct {
	queue    []*waiter[T]
	interval time.Duration
	due      time.Time
}

type waiter[T any] struct {
	Waiter[T]
	// ch (capacity 1) is signalled when the waiter should try again.
	ch chan struct{}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Wait runs try until it reports done, wait passes (wait <= 0: try once)
// or ctx ends (then it returns ctx's error). first is true for the first
// try, which runs before the call waits. try returns the time at which
// trying again is worth it (zero: none known), which shortens a self
// polling waiter's pause. Wait reports whether try succeeded and whether
// the call had to wait at all.
func (r *Registry[T]) Wait(ctx context.Context, w Waiter[T], wait time.Duration, try func(first bool) (done bool, retryAt time.Time, err error)) (done, waited bool, err error) {
	done, retryAt, err := try(true)
	if err != nil || done || wait <= 0 {
		return done, false, err
	}
	deadline := time.Now().Add(wait)
	// Parked before it joins: sending the client's replies may wait for
	// the client, and must not hold up the line meanwhile.
	if p, ok := ctx.(Parker); ok {
		p.Park()
	}
	x := &waiter[T]{Waiter: w, ch: make(chan struct{}, 1)}
	r.join(x)
	defer r.leave(x)
	backoff := r.First()
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, true, nil
		}
		pause, polls := left, false
		if r.Prober == nil && (!w.Turns || r.first(x)) {
			polls = true
			pause = min(Jitter(backoff), left)
			if !retryAt.IsZero() {
				pause = max(min(pause, time.Until(retryAt)), time.Millisecond)
			}
			backoff = r.Next(backoff)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
			if !polls && r.Prober != nil {
				// The deadline: the poller did the polling.
				continue
			}
		case <-x.ch:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return false, true, ctx.Err()
		}
		if done, retryAt, err = try(false); err != nil || done {
			return done, true, err
		}
	}
}

// Waiting is the number of calls waiting.
func (r *Registry[T]) Waiting() int { return int(r.waiting.Load()) }

// WaitingOn is the number of calls waiting on key.
func (r *Registry[T]) WaitingOn(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.keys[key]; l != nil {
		return len(l.queue)
	}
	return 0
}

// Notify tells the waiters on key that it changed through this process:
// the first that takes turns and every watcher try at once, and the key's
// polling restarts at its shortest pause.
func (r *Registry[T]) Notify(key string) {
	if r.waiting.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.keys[key]
	if l == nil {
		return
	}
	l.wake(true, nil)
	l.interval = r.First()
	l.due = time.Now().Add(l.interval)
}

// wake signals the first waiter that takes turns if turn, and every
// watcher for which ready (nil: every one) holds; it reports whether it
// signalled anyone.
func (l *line[T]) wake(turn bool, ready func(w *waiter[T]) bool) bool {
	woke, turnSeen := false, false
	for _, w := range l.queue {
		switch {
		case w.Turns && !turnSeen:
			turnSeen = true
			if turn {
				signal(w.ch)
				woke = true
			}
		case !w.Turns && (ready == nil || ready(w)):
			signal(w.ch)
			woke = true
		}
	}
	return woke
}

// join queues x on each of its keys (once each) and, under a Prober, makes
// sure the poller runs.
func (r *Registry[T]) join(x *waiter[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]*line[T]{}
		r.poke = make(chan struct{}, 1)
	}
	r.waiting.Add(1)
	now := time.Now()
	seen := make(map[string]bool, len(x.Keys))
	for _, k := range x.Keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		l := r.keys[k]
		if l == nil {
			l = &line[T]{interval: r.First(), due: now.Add(r.First())}
			r.keys[k] = l
		}
		l.queue = append(l.queue, x)
	}
	if r.Prober == nil {
		return
	}
	if !r.polling {
		r.polling = true
		go r.poll()
	} else {
		signal(r.poke)
	}
}

// leave removes x from its lines. A waiter that leaves while first of the
// waiters taking turns on a key hands the turn to the next one, which
// tries at once (x may have been woken for something it did not take).
func (r *Registry[T]) leave(x *waiter[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting.Add(-1)
	for _, k := range x.Keys {
		l := r.keys[k]
		if l == nil {
			continue
		}
		first := true
		for i, y := range l.queue {
			if y != x {
				first = first && !y.Turns
				continue
			}
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			if first && x.Turns {
				for _, z := range l.queue[i:] {
					if z.Turns {
						signal(z.ch)
						break
					}
				}
			}
			break
		}
		if len(l.queue) == 0 {
			delete(r.keys, k)
		}
	}
}

// first reports whether x is the first waiter taking turns on one of its
// keys.
func (r *Registry[T]) first(x *waiter[T]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range x.Keys {
		if l := r.keys[k]; l != nil {
			for _, y := range l.queue {
				if y.Turns {
					if y == x {
						return true
					}
					break
				}
			}
		}
	}
	return false
}

// poll is the poller goroutine: it probes the keys that are due, wakes the
// waiters each probe may serve, and sleeps until the next key is due (or a
// new waiter arrives). It ends when nobody waits.
func (r *Registry[T]) poll() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if len(r.keys) == 0 {
			r.polling = false
			r.mu.Unlock()
			return
		}
		now := time.Now()
		var due []string
		next := now.Add(time.Hour)
		for k, l := range r.keys {
			if !l.due.After(now) {
				due = append(due, k)
			} else if l.due.Before(next) {
				next = l.due
			}
		}
		r.mu.Unlock()

		if len(due) > 0 {
			r.check(due)
			continue
		}
		timer.Reset(next.Sub(now))
		select {
		case <-timer.C:
		case <-r.poke:
			if !timer.Stop() {
				<-timer.C
			}
		}
	}
}

// check probes keys, wakes whom the probes may serve, and schedules each
// key's next probe: soon if it woke anyone, later if not.
func (r *Registry[T]) check(keys []string) {
	vals, err := r.Prober.Probe(context.Background(), keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for i, k := range keys {
		l := r.keys[k]
		if l == nil {
			continue
		}
		woke := err == nil && l.wake(r.Prober.Serves(vals[i]), func(w *waiter[T]) bool {
			return w.Ready == nil || w.Ready(k, vals[i])
		})
		if woke {
			l.interval = r.First()
		} else {
			l.interval = r.Next(l.interval)
		}
		l.due = now.Add(Jitter(l.interval))
	}
}
