package dynastore

import (
	"context"
	"sort"
	"sync"
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
type Stats struct {
	mu   sync.Mutex
	rows map[StatKey]*StatRow
}

// NewStats returns empty counters.
func NewStats() *Stats {
	return &Stats{rows: map[StatKey]*StatRow{}}
}

// Observe implements Observer.
func (s *Stats) Observe(_ context.Context, r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := StatKey{r.Label, r.Op}
	row := s.rows[k]
	if row == nil {
		row = &StatRow{}
		s.rows[k] = row
	}
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

// Snapshot returns a copy of all rows.
func (s *Stats) Snapshot() map[StatKey]StatRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[StatKey]StatRow, len(s.rows))
	for k, v := range s.rows {
		out[k] = *v
	}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k, v := range s.rows {
		if k.Label != label {
			continue
		}
		if len(ops) == 0 {
			n += v.Requests
			continue
		}
		for _, op := range ops {
			if k.Op == op {
				n += v.Requests
			}
		}
	}
	return n
}

// Reset clears all counters.
func (s *Stats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = map[StatKey]*StatRow{}
}
