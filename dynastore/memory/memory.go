// Package memory is redamo's embedded storage backend: every item in
// process memory, indexed by key and in key order, with DynamoDB's semantics and limits (the
// conditions, updates, transactions, page sizes and errors of
// dynastore.Store, as the conformance suite dynastore/storetest checks), so
// redamo behaves the same on it as on a DynamoDB table. It is also the test
// double for the layers above: FailNext and SetLatency inject faults.
//
// Data lives only as long as the process: this backend is for a single
// instance (development, tests, caches), not for several redamo processes.
package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Options configure a Store.
type Options struct {
	// Observer receives one dynastore.Request per request (nil: none).
	Observer dynastore.Observer
	// PartitionLimit, when set, caps each partition's throughput as
	// DynamoDB does (see PartitionLimit); nil: unlimited.
	PartitionLimit *PartitionLimit
}

// Store is the in-memory dynastore.Store. It is safe for concurrent use, and
// every request is atomic and linearizable, like a DynamoDB item write: each
// holds the locks of the shards it touches while it reads or writes them
// (see index.go).
type Store struct {
	obs dynastore.Observer
	// timed is set when obs may read a request's Duration (dynastore.Timed).
	timed bool

	seed   maphash.Seed // picks an item's shard
	shards [nShards]shard

	// ttlMu serializes TTL sweeps; ttlPos is where the next one starts.
	ttlMu  sync.Mutex
	ttlPos ttlPos

	// limit, when set, throttles partitions past their throughput.
	limit *limiter

	hookMu  sync.Mutex
	failing []failure
	latency time.Duration
	// hooked is set while failing or latency is: requests skip hookMu
	// when it is clear, as they almost always are.
	hooked atomic.Bool
}

var (
	_ dynastore.Store          = (*Store)(nil)
	_ dynastore.SnapshotReader = (*Store)(nil)
	_ dynastore.Clocked        = (*Store)(nil)
)

type failure struct {
	op  string
	err error
}

// New returns an empty store.
func New(o Options) *Store {
	s := &Store{obs: o.Observer, timed: dynastore.Timed(o.Observer), seed: maphash.MakeSeed()}
	if o.PartitionLimit != nil {
		s.limit = newLimiter(*o.PartitionLimit)
	}
	for i := range s.shards {
		s.shards[i].shardState = newShard()
	}
	return s
}

// Len returns the number of items (for tests).
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.byID.len()
		sh.mu.RUnlock()
	}
	return n
}

// FailNext makes the next request of operation op (dynastore.OpPutItem, ...;
// "" for whichever comes first) fail with err before it reads or writes
// anything. Calls queue up, one failure per request.
func (s *Store) FailNext(op string, err error) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.failing = append(s.failing, failure{op, err})
	s.hooked.Store(true)
}

// SetLatency delays every request by d before it runs (0: none). A context
// done during the wait ends the request with the context's error.
func (s *Store) SetLatency(d time.Duration) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.latency = d
	s.hooked.Store(len(s.failing) > 0 || d > 0)
}

// request runs one request: hooks first, then fn, then the observer.
// fn returns the consumed capacity and the request's error.
func (s *Store) request(ctx context.Context, op string, parts partitions, fn func() (rcu, wcu float64, err error)) error {
	var start time.Duration
	if s.timed {
		start = monotonic()
	}
	var rcu, wcu float64
	err := s.hooks(ctx, op)
	if err == nil && s.limit != nil {
		err = s.limit.admit(ctx, op, parts)
	}
	if err == nil {
		rcu, wcu, err = fn()
		if s.limit != nil {
			s.limit.charge(parts, rcu, wcu)
		}
	}
	if s.obs != nil {
		r := dynastore.Request{
			Label:    dynastore.Label(ctx),
			Op:       op,
			Attempts: 1,
			RCU:      rcu,
			WCU:      wcu,
			Err:      err,
		}
		if s.timed {
			r.Duration = monotonic() - start
		}
		s.obs.Observe(ctx, r)
	}
	return err
}

// ClockOffset implements dynastore.Clocked: the embedded store's clock is
// this process's, exactly.
func (s *Store) ClockOffset() (offset, uncertainty time.Duration, ok bool) { return 0, 0, true }

// ClockSamples implements dynastore.Clocked: there is nothing to measure.
func (s *Store) ClockSamples() int { return 0 }

// clockBase anchors monotonic.
var clockBase = time.Now()

// monotonic is the monotonic clock's reading: time.Since of a reading
// that carries one reads only that clock, where time.Now reads the wall
// clock too (timing an embedded request was a measurable part of a
// pipelined GET's cost).
func monotonic() time.Duration { return time.Since(clockBase) }

func (s *Store) hooks(ctx context.Context, op string) error {
	if !s.hooked.Load() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memory: %s: %w", op, err)
		}
		return nil
	}
	s.hookMu.Lock()
	d := s.latency
	var injected error
	for i, f := range s.failing {
		if f.op == "" || f.op == op {
			injected = f.err
			s.failing = append(s.failing[:i:i], s.failing[i+1:]...)
			break
		}
	}
	s.hooked.Store(len(s.failing) > 0 || d > 0)
	s.hookMu.Unlock()
	if d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return fmt.Errorf("memory: %s: %w", op, ctx.Err())
		}
	}
	if injected != nil {
		return injected
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}

// errCondFailed is a decision's "the condition does not hold"; the request
// turns it into a *dynastore.ConditionFailedError once the lock is released.
var errCondFailed = errors.New("memory: condition failed")

// condFailed is the error of a single write whose condition failed on cur.
func condFailed(cur dynastore.Item, o dynastore.WriteOptions) error {
	e := &dynastore.ConditionFailedError{}
	if o.OldOnFailure {
		e.Old = cur
	}
	return e
}

// Get implements dynastore.Store.
func (s *Store) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpGetItem, partitions{pk: k.PK}, func() (float64, float64, error) {
		if err := dynastore.ValidateKey(k); err != nil {
			return 0, 0, err
		}
		var buf [idBufSize]byte
		sh, id := s.shard(s.shardOf(k.PK)), appendID(buf[:0], k.PK, k.SK)
		h := idHash(id)
		sh.mu.RLock()
		e := sh.get(id, h)
		it, size := e.lend(), sizeOf(e)
		sh.mu.RUnlock()
		out = it
		return dynastore.ReadUnits(size), 0, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BatchGet implements dynastore.Store: one BatchGetItem request per
// dynastore.MaxBatchGet keys, each read as of one instant. A key may appear
// more than once.
func (s *Store) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	for _, k := range keys {
		if err := dynastore.ValidateKey(k); err != nil {
			return nil, err
		}
	}
	out := make([]dynastore.Item, len(keys))
	var r snapshotRead
	for lo := 0; lo < len(keys); lo += dynastore.MaxBatchGet {
		hi := min(lo+dynastore.MaxBatchGet, len(keys))
		err := s.request(ctx, dynastore.OpBatchGetItem, partitions{keys: keys[lo:hi]}, func() (float64, float64, error) {
			return r.read(s, keys[lo:hi], out[lo:hi]), 0, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetSnapshot implements dynastore.SnapshotReader (TransactGetItems): the
// items as of one instant, for twice the read units.
func (s *Store) GetSnapshot(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	out := make([]dynastore.Item, len(keys))
	err := s.request(ctx, dynastore.OpTransactGetItems, partitions{keys: keys}, func() (float64, float64, error) {
		switch {
		case len(keys) == 0:
			return 0, 0, fmt.Errorf("%w: a transaction needs at least one item", dynastore.ErrInvalid)
		case len(keys) > dynastore.MaxTxActions:
			return 0, 0, fmt.Errorf("%w: %d items, at most %d", dynastore.ErrTxTooLarge, len(keys), dynastore.MaxTxActions)
		}
		seen := make(map[string]bool, len(keys))
		for _, k := range keys {
			if err := dynastore.ValidateKey(k); err != nil {
				return 0, 0, err
			}
			id := string(appendID(nil, k.PK, k.SK))
			if seen[id] {
				return 0, 0, fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
			}
			seen[id] = true
		}
		var r snapshotRead
		return dynastore.TxCapacityFactor * r.read(s, keys, out), 0, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// snapshotRead reads items under the read locks of all their shards at
// once, so they are as of one instant; its memory is reused from one read
// to the next.
type snapshotRead struct {
	buf    []byte
	places []place
}

type place struct {
	sh *shardState
	id []byte
	h  uint64
}

// read fills out with the items at keys and returns the read units.
func (r *snapshotRead) read(s *Store, keys []dynastore.Key, out []dynastore.Item) float64 {
	var set shards
	r.buf, r.places = r.buf[:0], r.places[:0]
	for _, k := range keys {
		// The ids share one buffer: an append that moves it leaves the ids
		// before it where they were.
		start := len(r.buf)
		r.buf = appendID(r.buf, k.PK, k.SK)
		n := s.shardOf(k.PK)
		r.places = append(r.places, place{s.shard(n), r.buf[start:], idHash(r.buf[start:])})
		set |= 1 << n
	}
	var rcu float64
	for n := range set.all {
		s.shards[n].mu.RLock()
	}
	for i, p := range r.places {
		e := p.sh.get(p.id, p.h)
		out[i] = e.lend()
		rcu += dynastore.ReadUnits(sizeOf(e))
	}
	for n := range set.all {
		s.shards[n].mu.RUnlock()
	}
	return rcu
}

// Put implements dynastore.Store.
func (s *Store) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpPutItem, partitions{item: it}, func() (float64, float64, error) {
		if err := dynastore.ValidateReturn(o.Return, false); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateCond(o.Cond); err != nil {
			return 0, 0, err
		}
		normalize := dynastore.NormalizeItemSize
		if o.Handover {
			normalize = dynastore.AdoptItem
		}
		nit, size, err := normalize(it)
		if err != nil {
			return 0, 0, err
		}
		res, err := s.write(nit.Key(), false, onCond(o, nit, size))
		if err != nil {
			return 0, dynastore.WriteUnits(res.oldSize), condFailed(res.old, o)
		}
		out = dynastore.Projection(o.Return, res.old, nit, nil)
		return 0, dynastore.WriteUnits(max(size, res.oldSize)), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Update implements dynastore.Store. An item nobody was handed (see
// entry.lent) changes in place: the next item is built in the shard's
// scratch memory, then copied over the current one when it fits there.
// Building it aside keeps DynamoDB's rule that every operand reads the item
// as it was, and leaves the item untouched when the update fails.
func (s *Store) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpUpdateItem, partitions{pk: k.PK}, func() (float64, float64, error) {
		if err := dynastore.ValidateReturn(o.Return, true); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateKey(k); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateCond(o.Cond); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateUpdate(u); err != nil {
			return 0, 0, err
		}
		lendNext := o.Return == dynastore.ReturnAllNew && o.ReturnInto == nil
		res, err := s.write(k, lendNext, func(sh *shardState, cur *entry) (dynastore.Item, int, error) {
			old := itemOf(cur)
			// As DynamoDB: the condition first, then the update's own errors.
			if !dynastore.EvalValidCond(old, o.Cond) {
				return nil, 0, failCond(cur, o)
			}
			inPlace := cur != nil && !cur.lent.Load() && (o.Return != dynastore.ReturnAllOld || o.ReturnInto != nil)
			var dst dynastore.Item
			if inPlace {
				dst = sh.scratch[:0]
				// The scratch keeps no values alive.
				defer clear(sh.scratch[:scratchAttrs])
			}
			nit, err := dynastore.ApplyValidUpdateInto(k, old, u, dst)
			if err != nil {
				return nil, 0, err
			}
			size := dynastore.ItemSizeAt(k, nit)
			if size > dynastore.MaxItemSize {
				return nil, 0, dynastore.UpdatedItemTooLarge()
			}
			// The returned item is taken under the lock, from the old
			// item before it changes, and from the new one before another
			// update may change it.
			if o.Return == dynastore.ReturnAllOld || o.Return == dynastore.ReturnUpdatedOld {
				out = returned(o, old, &u)
			}
			if inPlace {
				nit = sh.keep(old, nit)
			}
			if o.Return == dynastore.ReturnAllNew || o.Return == dynastore.ReturnUpdatedNew {
				out = returned(o, nit, &u)
			}
			return nit, size, nil
		})
		switch {
		case err == errCondFailed:
			return 0, dynastore.WriteUnits(res.oldSize), condFailed(res.old, o)
		case err != nil:
			return 0, 0, err
		}
		return 0, dynastore.WriteUnits(max(res.nextSize, res.oldSize)), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// returned is what an update with options o returns of it, the item
// before or after the update as o.Return says: all of it (in o.ReturnInto's
// memory when given), or the attributes u names.
func returned(o dynastore.WriteOptions, it dynastore.Item, u *dynastore.Update) dynastore.Item {
	whole := o.Return == dynastore.ReturnAllOld || o.Return == dynastore.ReturnAllNew
	if whole && o.ReturnInto != nil && it != nil {
		return append(o.ReturnInto[:0], it...)
	}
	return dynastore.Projection(o.Return, it, it, u)
}

// Delete implements dynastore.Store.
func (s *Store) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpDeleteItem, partitions{pk: k.PK}, func() (float64, float64, error) {
		if err := dynastore.ValidateReturn(o.Return, false); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateKey(k); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateCond(o.Cond); err != nil {
			return 0, 0, err
		}
		res, err := s.write(k, false, onCond(o, nil, 0))
		wcu := dynastore.WriteUnits(res.oldSize)
		if err != nil {
			return 0, wcu, condFailed(res.old, o)
		}
		out = dynastore.Projection(o.Return, res.old, nil, nil)
		return 0, wcu, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BatchWrite implements dynastore.BatchWriter: one BatchWriteItem request
// per dynastore.MaxBatchWrite writes, each applied on its own and billed
// as the single write it is. The embedded store processes every write of
// a request it admits; a throttled request (the partition limit) is
// refused whole, as DynamoDB refuses one none of whose writes it could
// process.
func (s *Store) BatchWrite(ctx context.Context, puts []dynastore.Item, deletes []dynastore.Key) error {
	chunks, err := dynastore.BatchWrites(puts, deletes)
	if err != nil {
		return err
	}
	for _, ops := range chunks {
		keys := make([]dynastore.Key, len(ops))
		items := make([]dynastore.Item, len(ops))
		sizes := make([]int, len(ops))
		for i, op := range ops {
			keys[i] = op.Key
			if op.Item != nil {
				// Sizes are checked before any write, as DynamoDB
				// validates the whole request first.
				nit, size, err := dynastore.NormalizeItemSize(op.Item)
				if err != nil {
					return err
				}
				items[i], keys[i], sizes[i] = nit, nit.Key(), size
			}
		}
		err := s.request(ctx, dynastore.OpBatchWriteItem, partitions{keys: keys}, func() (float64, float64, error) {
			var wcu float64
			for i, k := range keys {
				res, err := s.write(k, false, onCond(dynastore.WriteOptions{}, items[i], sizes[i]))
				if err != nil {
					return 0, wcu, err
				}
				wcu += dynastore.WriteUnits(max(sizes[i], res.oldSize))
			}
			return 0, wcu, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// txAction is one validated action of a transaction and, once its shard
// is locked, what it found there.
type txAction struct {
	a   dynastore.TxAction
	key dynastore.Key
	id  []byte
	h   uint64 // idHash(id)
	sh  *shardState
	// item is what the action leaves at key (nil for a delete), of size bytes:
	// the normalized item of a TxPut, the result of a TxUpdate.
	item dynastore.Item
	size int
	cur  *entry         // the entry at key (nil: none)
	old  dynastore.Item // its item
	// failed is set when the action's condition does not hold.
	failed bool
}

// errCanceled is transact's "a condition failed"; Transact turns it into a
// *dynastore.TxCanceledError once the locks are released.
var errCanceled = errors.New("memory: transaction canceled")

// Transact implements dynastore.Store (TransactWriteItems). It holds the
// write locks of every shard it touches while it checks and writes.
func (s *Store) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	return s.request(ctx, dynastore.OpTransactWriteItems, partitions{acts: actions}, func() (float64, float64, error) {
		acts, err := validateTx(actions)
		if err != nil {
			return 0, 0, err
		}
		var set shards
		for i := range acts {
			n := s.shardOf(acts[i].key.PK)
			acts[i].sh = s.shard(n)
			set |= 1 << n
		}
		for n := range set.all {
			s.shards[n].mu.Lock()
		}
		rcu, wcu, err := transact(acts)
		for n := range set.all {
			s.shards[n].mu.Unlock()
		}
		if err != errCanceled {
			return rcu, wcu, err
		}
		reasons := make([]dynastore.TxReason, len(acts))
		for i, t := range acts {
			reasons[i].Code = dynastore.ReasonNone
			if t.failed {
				reasons[i].Code = dynastore.ReasonConditionalFailed
				if t.a.OldOnFailure {
					reasons[i].Old = t.old
				}
			}
		}
		return rcu, wcu, &dynastore.TxCanceledError{Reasons: reasons}
	})
}

// transact checks every action against the current items and, if all
// conditions hold, applies them all. The caller holds the write locks of
// every action's shard.
func transact(acts []txAction) (rcu, wcu float64, err error) {
	canceled := false
	for i := range acts {
		t := &acts[i]
		t.cur = t.sh.get(t.id, t.h)
		t.old = itemOf(t.cur)
		oldSize := sizeOf(t.cur)
		if t.a.Op == dynastore.TxCheck {
			rcu += dynastore.TxCapacityFactor * dynastore.ReadUnits(oldSize)
		}
		if !dynastore.EvalValidCond(t.old, t.a.Cond) {
			t.failed, canceled = true, true
			if t.a.OldOnFailure {
				t.cur.lend() // for its TxReason
			}
			continue
		}
		switch t.a.Op {
		case dynastore.TxCheck:
			continue
		case dynastore.TxUpdate:
			// An update DynamoDB cannot apply fails the whole request
			// with a ValidationException, whatever the other actions.
			nit, err := dynastore.ApplyValidUpdate(t.key, t.old, *t.a.Update)
			if err != nil {
				return 0, 0, err
			}
			t.item, t.size = nit, dynastore.ItemSizeAt(t.key, nit)
			if t.size > dynastore.MaxItemSize {
				return 0, 0, dynastore.UpdatedItemTooLarge()
			}
		}
		wcu += dynastore.TxCapacityFactor * dynastore.WriteUnits(max(t.size, oldSize))
	}
	if canceled {
		return rcu, wcu, errCanceled
	}
	for _, t := range acts {
		if t.a.Op != dynastore.TxCheck {
			t.sh.set(t.cur, t.id, t.h, t.item, t.size)
		}
	}
	return rcu, wcu, nil
}

// validateTx checks everything DynamoDB checks before it looks at any item.
func validateTx(actions []dynastore.TxAction) ([]txAction, error) {
	switch {
	case len(actions) == 0:
		return nil, fmt.Errorf("%w: a transaction needs at least one action", dynastore.ErrInvalid)
	case len(actions) > dynastore.MaxTxActions:
		return nil, fmt.Errorf("%w: %d actions, at most %d", dynastore.ErrTxTooLarge, len(actions), dynastore.MaxTxActions)
	}
	acts := make([]txAction, len(actions))
	seen := make(map[string]bool, len(actions))
	var ids []byte
	payload := 0
	for i, a := range actions {
		t := txAction{a: a, key: a.Key}
		switch a.Op {
		case dynastore.TxPut:
			it, size, err := dynastore.NormalizeItemSize(a.Item)
			if err != nil {
				return nil, err
			}
			t.item, t.size, t.key = it, size, it.Key()
			payload += size
		case dynastore.TxUpdate:
			// TransactWriteItems requires an UpdateExpression, unlike UpdateItem.
			if a.Update == nil || len(dynastore.UpdatedAttrs(a.Update)) == 0 {
				return nil, fmt.Errorf("%w: a transactional update needs at least one action", dynastore.ErrInvalid)
			}
			if err := dynastore.ValidateUpdate(*a.Update); err != nil {
				return nil, err
			}
			payload += len(a.Key.PK) + len(a.Key.SK) + dynastore.UpdatePayloadSize(a.Update)
		case dynastore.TxDelete:
			payload += len(a.Key.PK) + len(a.Key.SK)
		case dynastore.TxCheck:
			if a.Cond == nil {
				return nil, fmt.Errorf("%w: a condition check needs a condition", dynastore.ErrInvalid)
			}
			payload += len(a.Key.PK) + len(a.Key.SK)
		default:
			return nil, fmt.Errorf("%w: unknown transaction action %d", dynastore.ErrInvalid, a.Op)
		}
		if err := dynastore.ValidateKey(t.key); err != nil {
			return nil, err
		}
		if err := dynastore.ValidateCond(a.Cond); err != nil {
			return nil, err
		}
		// The ids share one buffer, as in BatchGet.
		start := len(ids)
		ids = appendID(ids, t.key.PK, t.key.SK)
		t.id = ids[start:]
		t.h = idHash(t.id)
		if seen[string(t.id)] {
			return nil, fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
		}
		seen[string(t.id)] = true
		acts[i] = t
	}
	if payload > dynastore.MaxTxSize {
		return nil, fmt.Errorf("%w: Transaction payload size cannot exceed 4MB. Payload Size: %d", dynastore.ErrTxTooLarge, payload)
	}
	return acts, nil
}
