// Package faults wraps a dynastore.Store with injected failures and delays,
// so tests of the layers above (commands, the transaction buffer, the
// server) can prove that a failing backend yields a bounded, clear error and
// never a half-applied command.
//
// Rules are per operation (the dynastore.Op* names: a Store method maps to
// the DynamoDB API it stands for, BatchGet to OpBatchGetItem whatever its
// size). A failure is injected either before the call reaches the wrapped
// store (the request never happened) or after it (the request happened and
// its answer was lost, as with a timeout: the ambiguous case retries must
// survive). Randomness comes from a seeded source, so a failing run replays.
//
// Injected failures are not reported to the wrapped store's Observer: they
// never reached it.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Any matches every operation in a rule.
const Any = ""

// Store is a dynastore.Store that injects faults into calls to another one.
// It is safe for concurrent use.
type Store struct {
	inner dynastore.Store

	mu       sync.Mutex
	rng      *rand.Rand
	rules    []*rule
	calls    map[string]int
	injected map[string]int
}

var (
	_ dynastore.Store   = (*Store)(nil)
	_ dynastore.Clocked = (*Store)(nil)
	_ dynastore.Counter = (*Store)(nil)
)

type ruleKind uint8

const (
	failCount ruleKind = iota + 1
	failRate
	delay
)

type rule struct {
	op    string
	kind  ruleKind
	err   error
	after bool
	n     int           // failCount: failures left
	p     float64       // failRate: probability per call
	d     time.Duration // delay
}

// New wraps inner; seed drives FailRate.
func New(inner dynastore.Store, seed uint64) *Store {
	return &Store{
		inner:    inner,
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		calls:    map[string]int{},
		injected: map[string]int{},
	}
}

// FailNext makes the next n calls of op (Any: of any operation) fail with
// err before they reach the wrapped store.
func (s *Store) FailNext(op string, n int, err error) {
	if n <= 0 {
		return
	}
	s.add(&rule{op: op, kind: failCount, n: n, err: err})
}

// FailNextAfter makes the next n calls of op reach the wrapped store and
// then fail with err, their result discarded: a write that happened but
// whose answer was lost.
func (s *Store) FailNextAfter(op string, n int, err error) {
	if n <= 0 {
		return
	}
	s.add(&rule{op: op, kind: failCount, n: n, err: err, after: true})
}

// FailRate makes each call of op fail with err, before it reaches the
// wrapped store, with probability p (0..1).
func (s *Store) FailRate(op string, p float64, err error) {
	s.add(&rule{op: op, kind: failRate, p: p, err: err})
}

// FailRateAfter is FailRate with the failure injected after the call ran.
func (s *Store) FailRateAfter(op string, p float64, err error) {
	s.add(&rule{op: op, kind: failRate, p: p, err: err, after: true})
}

// Delay delays every call of op by d before it runs; delays of several
// matching rules add up. A context done during the wait ends the call with
// the context's error, without reaching the wrapped store.
func (s *Store) Delay(op string, d time.Duration) {
	s.add(&rule{op: op, kind: delay, d: d})
}

// Reset removes every rule (counts are kept).
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Calls returns how many calls of op (Any: of all operations) were made.
func (s *Store) Calls(op string) int {
	return s.count(s.calls, op)
}

// Injected returns how many calls of op (Any: of all operations) got an
// injected failure.
func (s *Store) Injected(op string) int {
	return s.count(s.injected, op)
}

func (s *Store) count(m map[string]int, op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op != Any {
		return m[op]
	}
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (s *Store) add(r *rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, r)
}

// decide picks what happens to one call of op: a delay, and the failure to
// inject (nil for none) and whether it comes after the call.
func (s *Store) decide(op string) (d time.Duration, err error, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	keep := s.rules[:0]
	for _, r := range s.rules {
		match := r.op == Any || r.op == op
		switch {
		case !match:
		case r.kind == delay:
			d += r.d
		case err != nil:
			// One failure per call; later rules wait for later calls.
		case r.kind == failCount:
			err, after = r.err, r.after
			r.n--
		case r.kind == failRate:
			if s.rng.Float64() < r.p {
				err, after = r.err, r.after
			}
		}
		if r.kind != failCount || r.n > 0 {
			keep = append(keep, r)
		}
	}
	clear(s.rules[len(keep):])
	s.rules = keep
	if err != nil {
		s.injected[op]++
		err = fmt.Errorf("faults: injected into %s: %w", op, err)
	}
	return d, err, after
}

// call runs fn under the rules for op. fn is the call to the wrapped store.
func (s *Store) call(ctx context.Context, op string, fn func() error) error {
	d, injected, after := s.decide(op)
	if d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return fmt.Errorf("faults: %s delayed past its context: %w", op, ctx.Err())
		}
	}
	if injected != nil && !after {
		return injected
	}
	err := fn()
	if injected != nil {
		return injected
	}
	return err
}

// Get implements dynastore.Store.
func (s *Store) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	var it dynastore.Item
	err := s.call(ctx, dynastore.OpGetItem, func() (err error) {
		it, err = s.inner.Get(ctx, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// BatchGet implements dynastore.Store.
func (s *Store) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	var items []dynastore.Item
	err := s.call(ctx, dynastore.OpBatchGetItem, func() (err error) {
		items, err = s.inner.BatchGet(ctx, keys)
		return err
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// Put implements dynastore.Store.
func (s *Store) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.call(ctx, dynastore.OpPutItem, func() (err error) {
		out, err = s.inner.Put(ctx, it, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Update implements dynastore.Store.
func (s *Store) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.call(ctx, dynastore.OpUpdateItem, func() (err error) {
		out, err = s.inner.Update(ctx, k, u, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete implements dynastore.Store.
func (s *Store) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.call(ctx, dynastore.OpDeleteItem, func() (err error) {
		out, err = s.inner.Delete(ctx, k, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Transact implements dynastore.Store.
func (s *Store) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	return s.call(ctx, dynastore.OpTransactWriteItems, func() error {
		return s.inner.Transact(ctx, actions)
	})
}

// Query implements dynastore.Store.
func (s *Store) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	var page dynastore.QueryPage
	err := s.call(ctx, dynastore.OpQuery, func() (err error) {
		page, err = s.inner.Query(ctx, q)
		return err
	})
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	return page, nil
}

// Scan implements dynastore.Store.
func (s *Store) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	var page dynastore.ScanPage
	err := s.call(ctx, dynastore.OpScan, func() (err error) {
		page, err = s.inner.Scan(ctx, sc)
		return err
	})
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	return page, nil
}

// ClockOffset implements dynastore.Clocked with the wrapped store's
// estimate; none (ok false) when it has none.
func (s *Store) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	if c, is := s.inner.(dynastore.Clocked); is {
		return c.ClockOffset()
	}
	return 0, 0, false
}

// ClockSamples implements dynastore.Clocked with the wrapped store's count.
func (s *Store) ClockSamples() int {
	if c, is := s.inner.(dynastore.Clocked); is {
		return c.ClockSamples()
	}
	return 0
}

// CountItems implements dynastore.Counter with the wrapped store's count,
// as monitoring would meet it; not a request, so no fault applies.
func (s *Store) CountItems(ctx context.Context, filter dynastore.Cond, each func(dynastore.Item)) (int64, bool, error) {
	if c, is := s.inner.(dynastore.Counter); is {
		return c.CountItems(ctx, filter, each)
	}
	return 0, false, fmt.Errorf("%w: the wrapped store cannot count its items", dynastore.ErrInvalid)
}
