package dynastore

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Request describes one request a backend made (after its retries).
type Request struct {
	Label    string // from WithLabel, "" if none
	Op       string // OpGetItem, ...
	Attempts int    // 1 + retries
	RCU, WCU float64
	Duration time.Duration
	Err      error
}

// Observer receives every backend request. Implementations are safe for
// concurrent use and must not block.
type Observer interface {
	Observe(ctx context.Context, r Request)
}

// Observers fans one request out to several observers.
type Observers []Observer

// Observe implements Observer.
func (os Observers) Observe(ctx context.Context, r Request) {
	for _, o := range os {
		o.Observe(ctx, r)
	}
}

// IgnoresDuration implements DurationIgnorer: true when every observer
// ignores durations.
func (os Observers) IgnoresDuration() bool {
	for _, o := range os {
		if Timed(o) {
			return false
		}
	}
	return true
}

// DurationIgnorer is implemented by an observer that never reads
// Request.Duration.
type DurationIgnorer interface {
	IgnoresDuration() bool
}

// Timed reports whether o (nil: none) may read Request.Duration. A backend
// whose requests take about as long as two clock readings (the memory
// store) leaves Duration 0 when it is false.
func Timed(o Observer) bool {
	if o == nil {
		return false
	}
	d, ok := o.(DurationIgnorer)
	return !ok || !d.IgnoresDuration()
}

// StatKey names one counter row.
type StatKey struct {
	Label, Op string
}

// StatRow is the totals for one label and operation.
type StatRow struct {
	Requests, Retries, Errors int64
	RCU, WCU                  float64
}

// Stats counts requests by label and operation; tests and INFO read it.
// Observe is on every request's path, so rows are found without a lock and
// counted with atomics.
type Stats struct {
	rows sync.Map // StatKey -> *statRow
}

// statRow is a StatRow updated with atomics; RCU and WCU hold float64 bits.
type statRow struct {
	requests, retries, errors atomic.Int64
	rcu, wcu                  atomic.Uint64
}

func addFloat(u *atomic.Uint64, d float64) {
	if d == 0 {
		return
	}
	for {
		old := u.Load()
		if u.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (r *statRow) load() StatRow {
	return StatRow{
		Requests: r.requests.Load(),
		Retries:  r.retries.Load(),
		Errors:   r.errors.Load(),
		RCU:      math.Float64frombits(r.rcu.Load()),
		WCU:      math.Float64frombits(r.wcu.Load()),
	}
}

// NewStats returns empty counters.
func NewStats() *Stats {
	return &Stats{}
}

// Observe implements Observer. A request whose context carries a Tally of
// s (WithTally) waits in it until its Flush.
func (s *Stats) Observe(ctx context.Context, r Request) {
	if t, ok := ctx.Value(tallyKey{}).(*Tally); ok && t.stats == s {
		t.add(&r)
		return
	}
	var row StatRow
	row.count(&r)
	s.add(StatKey{r.Label, r.Op}, row)
}

// IgnoresDuration implements DurationIgnorer: Stats counts requests, it
// does not time them.
func (s *Stats) IgnoresDuration() bool { return true }

// count adds request r to the row.
func (row *StatRow) count(r *Request) {
	row.Requests++
	if r.Attempts > 1 {
		row.Retries += int64(r.Attempts - 1)
	}
	if r.Err != nil {
		row.Errors++
	}
	row.RCU += r.RCU
	row.WCU += r.WCU
}

// add adds d to the row of k.
func (s *Stats) add(k StatKey, d StatRow) {
	v, ok := s.rows.Load(k)
	if !ok {
		v, _ = s.rows.LoadOrStore(k, &statRow{})
	}
	row := v.(*statRow)
	row.requests.Add(d.Requests)
	if d.Retries != 0 {
		row.retries.Add(d.Retries)
	}
	if d.Errors != 0 {
		row.errors.Add(d.Errors)
	}
	addFloat(&row.rcu, d.RCU)
	addFloat(&row.wcu, d.WCU)
}

// Tally holds one client connection's requests until Flush adds them to
// its Stats. Counting every request of a pipeline in the shared rows would
// make the cores take turns at the same cache lines (the atomics of one
// row per command and operation). A request reaches a Tally through its context
// (WithTally). A Tally is safe for concurrent use, since a command may run
// requests in parallel; its lock is in practice only ever taken by the
// connection's goroutine.
type Tally struct {
	stats *Stats
	mu    sync.Mutex
	rows  []tallyRow
}

type tallyRow struct {
	key StatKey
	row StatRow
}

// NewTally returns an empty Tally for s.
func (s *Stats) NewTally() *Tally { return &Tally{stats: s} }

type tallyKey struct{}

// WithTally makes the requests made with ctx wait in t (when t's Stats
// observes them).
func WithTally(ctx context.Context, t *Tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

func (t *Tally) add(r *Request) {
	t.mu.Lock()
	for i := range t.rows {
		if row := &t.rows[i]; row.key.Label == r.Label && row.key.Op == r.Op {
			row.row.count(r)
			t.mu.Unlock()
			return
		}
	}
	t.rows = append(t.rows, tallyRow{key: StatKey{r.Label, r.Op}})
	t.rows[len(t.rows)-1].row.count(r)
	t.mu.Unlock()
}

// Flush adds the requests held so far to the Stats.
func (t *Tally) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, row := range t.rows {
		t.stats.add(row.key, row.row)
	}
	t.rows = t.rows[:0]
}

// Snapshot returns a copy of all rows.
func (s *Stats) Snapshot() map[StatKey]StatRow {
	out := map[StatKey]StatRow{}
	s.rows.Range(func(k, v any) bool {
		out[k.(StatKey)] = v.(*statRow).load()
		return true
	})
	return out
}

// Keys returns the row keys in a stable order.
func (s *Stats) Keys() []StatKey {
	snap := s.Snapshot()
	keys := make([]StatKey, 0, len(snap))
	for k := range snap {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Label != keys[j].Label {
			return keys[i].Label < keys[j].Label
		}
		return keys[i].Op < keys[j].Op
	})
	return keys
}

// Requests returns the number of requests for a label, across operations when
// ops is empty, else summed over the given operations.
func (s *Stats) Requests(label string, ops ...string) int64 {
	var n int64
	s.rows.Range(func(key, v any) bool {
		k := key.(StatKey)
		if k.Label != label {
			return true
		}
		if len(ops) == 0 {
			n += v.(*statRow).requests.Load()
			return true
		}
		for _, op := range ops {
			if k.Op == op {
				n += v.(*statRow).requests.Load()
			}
		}
		return true
	})
	return n
}

// Reset clears all counters.
func (s *Stats) Reset() {
	s.rows.Clear()
}
