package coord

// Queue counters: per process (INFO, metrics) and in the table (QUEUE.STATS).

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Queue counters, as QUEUE.STATS names them.
var queueCounters = []string{"pushed", "acked", "nacked", "deadlettered", "deduplicated"}

// QueueStats counts this process's operations on one queue.
type QueueStats struct {
	Pushed, Delivered, Redelivered, Acked, Nacked, DeadLettered, Deduplicated atomic.Int64
}

// maxStatQueues bounds the queues counted apart; the others are counted
// together under the empty name.
const maxStatQueues = 1000

// statsOf returns queue name's counters.
func (q *Queues) statsOf(name []byte) *QueueStats {
	if st, ok := q.stats.Load(string(name)); ok {
		return st.(*QueueStats)
	}
	if q.statQueues.Load() >= maxStatQueues {
		name = nil
	}
	st, loaded := q.stats.LoadOrStore(string(name), &QueueStats{})
	if !loaded {
		q.statQueues.Add(1)
	}
	return st.(*QueueStats)
}

// EachQueue calls f with the counters of every queue this process served.
func (q *Queues) EachQueue(f func(name string, st *QueueStats)) {
	q.stats.Range(func(k, v any) bool {
		f(k.(string), v.(*QueueStats))
		return true
	})
}

// Each calls f with every counter of st, by operation name.
func (st *QueueStats) Each(f func(op string, n int64)) {
	for _, c := range []struct {
		op string
		n  *atomic.Int64
	}{
		{"pushed", &st.Pushed}, {"delivered", &st.Delivered}, {"redelivered", &st.Redelivered},
		{"acked", &st.Acked}, {"nacked", &st.Nacked}, {"deadlettered", &st.DeadLettered}, {"deduplicated", &st.Deduplicated},
	} {
		f(c.op, c.n.Load())
	}
}

// QueueState is what QUEUE.STATS reports.
type QueueState struct {
	Ready, Delayed, InFlight, Dead int64
	// OldestReadyMS is how long the oldest ready message has been ready.
	OldestReadyMS int64
	Counters      map[string]int64
}

// State counts queue name's messages by state (reading all of them) and
// sums its counters.
func (q *Queues) State(ctx context.Context, st dynastore.Store, name []byte, now time.Time) (QueueState, error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return QueueState{}, err
	}
	nowMS := now.UnixMilli()
	s := QueueState{Counters: map[string]int64{}}
	for _, c := range queueCounters {
		s.Counters[c] = 0
	}
	oldest := int64(-1)
	for shard := range cfg.maxShards {
		err := eachItem(ctx, st, dynastore.Query{PK: shardPK(name, shard)}, func(it dynastore.Item) error {
			if isCounters(it) {
				return addCounters(s.Counters, it)
			}
			m, err := decodeMessage(shard, it)
			if err != nil {
				return err
			}
			switch {
			case m.sk[0] == stateDead:
				s.Dead++
			case m.VisibleMS <= nowMS:
				s.Ready++
				if oldest < 0 || m.VisibleMS < oldest {
					oldest = m.VisibleMS
				}
			case it.Has(attrNonce):
				s.InFlight++
			default:
				s.Delayed++
			}
			return nil
		})
		if err != nil {
			return s, err
		}
	}
	if oldest >= 0 {
		s.OldestReadyMS = nowMS - oldest
	}
	return s, nil
}

// isCounters reports whether a shard item is a counters item.
func isCounters(it dynastore.Item) bool {
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	return len(sk) > 0 && sk[0] == 0
}

// addCounters adds a counters item's counts to sums.
func addCounters(sums map[string]int64, it dynastore.Item) error {
	for _, c := range queueCounters {
		if v := it.Get(c); v != nil {
			n, err := model.NumberInt(v)
			if err != nil {
				return fmt.Errorf("coord: queue counter %s: %w", c, err)
			}
			sums[c] += n
		}
	}
	return nil
}
