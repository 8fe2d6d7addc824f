package memory

import (
	"context"

	"github.com/redamo/redamo/dynastore"
)

var _ dynastore.Counter = (*Store)(nil)

// CountItems implements dynastore.Counter: an exact count, taken under
// every shard's lock as a Scan page is (one instant of the table), and not
// a request: nothing is observed or billed, as monitoring reads it often.
func (s *Store) CountItems(_ context.Context, filter dynastore.Cond, each func(dynastore.Item)) (int64, bool, error) {
	if err := dynastore.ValidateCond(filter); err != nil {
		return 0, false, err
	}
	var excl [nShards]bool
	for n := range s.shards { // in ascending order, as every request
		excl[n] = s.shards[n].lockOrdered()
	}
	defer func() {
		for n := range s.shards {
			s.shards[n].unlockOrdered(excl[n])
		}
	}()
	var n int64
	var m merged
	m.start(s, nil)
	for e := m.next(); e != nil; e = m.next() {
		if !dynastore.EvalValidCond(e.item, filter) {
			continue
		}
		n++
		if each != nil {
			each(e.lend())
		}
	}
	return n, true, nil
}
