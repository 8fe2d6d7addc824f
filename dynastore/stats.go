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

// Observe implements Observer.
func (s *Stats) Observe(_ context.Context, r Request) {
	k := StatKey{r.Label, r.Op}
	v, ok := s.rows.Load(k)
	if !ok {
		v, _ = s.rows.LoadOrStore(k, &statRow{})
	}
	row := v.(*statRow)
	row.requests.Add(1)
	if r.Attempts > 1 {
		row.retries.Add(int64(r.Attempts - 1))
	}
	if r.Err != nil {
		row.errors.Add(1)
	}
	addFloat(&row.rcu, r.RCU)
	addFloat(&row.wcu, r.WCU)
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
