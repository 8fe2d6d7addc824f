package coord

// Queue counters: per process (INFO, metrics) and in the table (QUEUE.STATS).
//
// The table's counters are not written with the operations they count: a
// counter in a message's transaction would double the units of every push
// and acknowledgement (a transaction bills each of its items twice), and
// make them transactions at all. Each process tallies its operations per
// queue and adds them to the table's counters with one UpdateItem per queue
// at most every CounterFlushInterval (RunCounterFlusher), when it shuts
// down, and before its own QUEUE.STATS. Inside MULTI or a script, where the
// operation may not commit, its counter stays in its transaction.

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Queue counters, as QUEUE.STATS names them.
var queueCounters = [nQueueCounters]string{"pushed", "acked", "nacked", "deadlettered", "deduplicated"}

// CounterFlushInterval is how often RunCounterFlusher adds a process's
// tallies to the table: QUEUE.STATS through one instance counts another's
// operations once this long has passed since them.
const CounterFlushInterval = time.Second

// tally is one queue's counts not yet in the table, by queueCounters index.
type tally [nQueueCounters]int64

const nQueueCounters = 5

// counterIndex is counter's index in queueCounters.
func counterIndex(counter string) int {
	for i, c := range queueCounters {
		if c == counter {
			return i
		}
	}
	panic("coord: unknown queue counter " + counter)
}

// inTxn reports whether st is a transaction buffer (MULTI, a script),
// whose writes commit later or not at all.
func inTxn(st dynastore.Store) bool {
	_, ok := st.(*model.Txn)
	return ok
}

// count counts n more of counter for queue name, whose shard partition pk
// the operation wrote: in a transaction buffer, as an action appended to
// acts (it commits with the write it counts); otherwise acts is returned
// as it is and done, called once the write succeeded, tallies it.
func (q *Queues) count(st dynastore.Store, acts []dynastore.TxAction, name, pk []byte, counter string, n int64) ([]dynastore.TxAction, func()) {
	if inTxn(st) {
		return append(acts, counterUpdate(pk, counter, n)), func() {}
	}
	return acts, func() {
		var t tally
		t[counterIndex(counter)] = n
		q.addTally(string(name), t)
	}
}

// addTally adds t to queue name's tally.
func (q *Queues) addTally(name string, t tally) {
	q.tallyMu.Lock()
	defer q.tallyMu.Unlock()
	if q.tallies == nil {
		q.tallies = map[string]*tally{}
	}
	cur := q.tallies[name]
	if cur == nil {
		cur = &tally{}
		q.tallies[name] = cur
	}
	for i, n := range t {
		cur[i] += n
	}
}

// takeTallies removes and returns the tallies of queue name (nil: of
// every queue): a flush empties the map, so it holds only the queues used
// since the last one.
func (q *Queues) takeTallies(name []byte) map[string]*tally {
	q.tallyMu.Lock()
	defer q.tallyMu.Unlock()
	if name == nil {
		out := q.tallies
		q.tallies = nil
		return out
	}
	t := q.tallies[string(name)]
	if t == nil {
		return nil
	}
	delete(q.tallies, string(name))
	return map[string]*tally{string(name): t}
}

// FlushCounters adds this process's tallies (of queue name; nil: of every
// queue) to the table's counters, one UpdateItem per queue. A tally whose
// write failed is kept for the next flush.
func (q *Queues) FlushCounters(ctx context.Context, st dynastore.Store, name []byte) error {
	if t, ok := st.(*model.Txn); ok {
		st = t.Base()
	}
	var errs []error
	for qname, t := range q.takeTallies(name) {
		var u dynastore.Update
		for i, n := range t {
			if n != 0 {
				u.Add = append(u.Add, dynastore.AttrValue{Attr: queueCounters[i], Val: model.NInt(n)})
			}
		}
		k := dynastore.Key{PK: shardPK([]byte(qname), 0), SK: []byte{0, byte(mrand.IntN(counterSlots))}}
		if _, err := st.Update(ctx, k, u, dynastore.WriteOptions{}); err != nil {
			q.addTally(qname, *t)
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("coord: flushing queue counters: %w", errs[0])
	}
	return nil
}

// RunCounterFlusher flushes this process's tallies every
// CounterFlushInterval until ctx ends. Its requests are counted under the
// label "queue.counters".
func (q *Queues) RunCounterFlusher(ctx context.Context, st dynastore.Store) {
	ctx = dynastore.WithLabel(ctx, "queue.counters")
	tick := time.NewTicker(CounterFlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// A failed flush is kept and tried again at the next tick.
			_ = q.FlushCounters(ctx, st, nil)
		}
	}
}

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
func (q *Queues) State(c model.Scope, name []byte, now time.Time) (QueueState, error) {
	st := c.Data()
	cfg, err := q.Config(c, name)
	if err != nil {
		return QueueState{}, err
	}
	// This process's own operations count at once.
	if err := q.FlushCounters(c, st, name); err != nil {
		return QueueState{}, err
	}
	nowMS := now.UnixMilli()
	s := QueueState{Counters: map[string]int64{}}
	for _, c := range queueCounters {
		s.Counters[c] = 0
	}
	oldest := int64(-1)
	for shard := range cfg.maxShards {
		err := eachItem(c, dynastore.Query{PK: shardPK(name, shard)}, func(it dynastore.Item) error {
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
