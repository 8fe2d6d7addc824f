// Package memory is redamo's embedded storage backend: every item in one
// ordered tree in process memory, with DynamoDB's semantics and limits (the
// conditions, updates, transactions, page sizes and errors of
// dynastore.Store, as the conformance suite dynastore/storetest checks), so
// redamo behaves the same on it as on a DynamoDB table. It is also the test
// double for the layers above: FailNext and SetLatency inject faults.
//
// Data lives only as long as the process: this backend is for a single
// instance (development, tests, caches), not for several redamo processes.
package memory

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/btree"

	"github.com/redamo/redamo/dynastore"
)

// Options configure a Store.
type Options struct {
	// Observer receives one dynastore.Request per request (nil: none).
	Observer dynastore.Observer
}

// Store is the in-memory dynastore.Store. It is safe for concurrent use:
// reads share a lock, writes (and transactions) hold it exclusively, so every
// request is atomic and linearizable, like a single DynamoDB item write.
type Store struct {
	obs dynastore.Observer

	mu sync.RWMutex
	// pivot is getExcl's search key, used only under the write lock.
	pivot entry
	tree  *btree.BTree // of *entry, ordered by (pk, sk) as unsigned bytes
	// ttlPos is where the next ExpireTTL step starts (nil: the beginning).
	ttlPos *entry

	hookMu  sync.Mutex
	failing []failure
	latency time.Duration
	// hooked is set while failing or latency is: requests skip hookMu
	// when it is clear, as they almost always are.
	hooked atomic.Bool
}

var _ dynastore.Store = (*Store)(nil)

type failure struct {
	op  string
	err error
}

// entry is one stored item. The item is never mutated in place: a write
// replaces the entry's item (under the write lock), so readers can copy it
// under the read lock.
type entry struct {
	pk, sk []byte
	// end marks a pivot after every sort key of pk (never stored).
	end  bool
	item dynastore.Item
	size int
	// ver counts the writes that replaced item in this entry.
	ver uint64
}

func less(a, b interface{}) bool {
	x, y := a.(*entry), b.(*entry)
	if c := bytes.Compare(x.pk, y.pk); c != 0 {
		return c < 0
	}
	if x.end != y.end {
		return y.end
	}
	return bytes.Compare(x.sk, y.sk) < 0
}

// New returns an empty store.
func New(o Options) *Store {
	return &Store{
		obs: o.Observer,
		// The tree's own locks would be redundant with mu.
		tree: btree.NewNonConcurrent(less),
	}
}

// Len returns the number of items (for tests).
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tree.Len()
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
func (s *Store) request(ctx context.Context, op string, fn func() (rcu, wcu float64, err error)) error {
	start := time.Now()
	var rcu, wcu float64
	err := s.hooks(ctx, op)
	if err == nil {
		rcu, wcu, err = fn()
	}
	if s.obs != nil {
		s.obs.Observe(ctx, dynastore.Request{
			Label:    dynastore.Label(ctx),
			Op:       op,
			Attempts: 1,
			RCU:      rcu,
			WCU:      wcu,
			Duration: time.Since(start),
			Err:      err,
		})
	}
	return err
}

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

// write runs fn, one single-item write, holding mu exclusively; fn returns
// the write capacity consumed and the write's error.
func (s *Store) write(fn func() (wcu float64, err error)) (float64, float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wcu, err := fn()
	return 0, wcu, err
}

// get returns the stored entry for k (nil if none); the caller holds mu.
func (s *Store) get(k dynastore.Key) *entry {
	e, _ := s.tree.Get(&entry{pk: k.PK, sk: k.SK}).(*entry)
	return e
}

func itemOf(e *entry) dynastore.Item {
	if e == nil {
		return nil
	}
	return e.item
}

func sizeOf(e *entry) int {
	if e == nil {
		return 0
	}
	return e.size
}

// put stores a normalized item the caller owns; the caller holds mu.
func (s *Store) put(it dynastore.Item, size int) {
	k := it.Key()
	s.tree.Set(&entry{pk: k.PK, sk: k.SK, item: it, size: size})
}

// getExcl is get for a caller holding mu exclusively: it reuses one pivot
// rather than allocating one.
func (s *Store) getExcl(k dynastore.Key) *entry {
	s.pivot.pk, s.pivot.sk = k.PK, k.SK
	e, _ := s.tree.Get(&s.pivot).(*entry)
	s.pivot.pk, s.pivot.sk = nil, nil
	return e
}

// replace stores a normalized item the caller owns over cur, the entry
// getExcl found for its key (nil: none), without a second tree descent when
// there is one. The caller holds mu exclusively.
func (s *Store) replace(cur *entry, it dynastore.Item, size int) {
	if cur == nil {
		s.put(it, size)
		return
	}
	cur.item, cur.size = it, size
	cur.ver++
}

func (s *Store) del(k dynastore.Key) {
	s.tree.Delete(&entry{pk: k.PK, sk: k.SK})
}

// condFailed is the error of a single write whose condition failed.
func condFailed(cur dynastore.Item, o dynastore.WriteOptions) error {
	e := &dynastore.ConditionFailedError{}
	if o.OldOnFailure {
		e.Old = dynastore.CloneItem(cur)
	}
	return e
}

// Get implements dynastore.Store.
func (s *Store) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpGetItem, func() (float64, float64, error) {
		if err := dynastore.ValidateKey(k); err != nil {
			return 0, 0, err
		}
		s.mu.RLock()
		e := s.get(k)
		out = dynastore.CloneItem(itemOf(e))
		size := sizeOf(e) // writes replace e's fields under the write lock
		s.mu.RUnlock()
		return dynastore.ReadUnits(size), 0, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BatchGet implements dynastore.Store: one BatchGetItem request per
// dynastore.MaxBatchGet keys. A key may appear more than once.
func (s *Store) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	for _, k := range keys {
		if err := dynastore.ValidateKey(k); err != nil {
			return nil, err
		}
	}
	out := make([]dynastore.Item, len(keys))
	for lo := 0; lo < len(keys); lo += dynastore.MaxBatchGet {
		hi := min(lo+dynastore.MaxBatchGet, len(keys))
		err := s.request(ctx, dynastore.OpBatchGetItem, func() (float64, float64, error) {
			var rcu float64
			s.mu.RLock()
			defer s.mu.RUnlock()
			for i := lo; i < hi; i++ {
				e := s.get(keys[i])
				out[i] = dynastore.CloneItem(itemOf(e))
				rcu += dynastore.ReadUnits(sizeOf(e))
			}
			return rcu, 0, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Put implements dynastore.Store.
func (s *Store) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpPutItem, func() (float64, float64, error) {
		if err := dynastore.ValidateReturn(o.Return, false); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateCond(o.Cond); err != nil {
			return 0, 0, err
		}
		nit, size, err := dynastore.NormalizeItemSize(it)
		if err != nil {
			return 0, 0, err
		}
		return s.write(func() (float64, error) {
			cur := s.getExcl(nit.Key())
			old := itemOf(cur)
			wcu := dynastore.WriteUnits(max(size, sizeOf(cur)))
			ok := dynastore.EvalValidCond(old, o.Cond)
			if !ok {
				return dynastore.WriteUnits(sizeOf(cur)), condFailed(old, o)
			}
			s.replace(cur, nit, size)
			out = dynastore.Projection(o.Return, old, nit, nil)
			return wcu, nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Update implements dynastore.Store.
func (s *Store) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpUpdateItem, func() (float64, float64, error) {
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
		return s.write(func() (float64, error) {
			cur := s.getExcl(k)
			old, oldSize := itemOf(cur), sizeOf(cur)
			// As DynamoDB: the condition first, then the update's own errors.
			ok := dynastore.EvalValidCond(old, o.Cond)
			if !ok {
				return dynastore.WriteUnits(oldSize), condFailed(old, o)
			}
			nit, err := dynastore.ApplyValidUpdate(k, old, u)
			if err != nil {
				return 0, err
			}
			size := dynastore.ItemSize(nit)
			if size > dynastore.MaxItemSize {
				return 0, dynastore.UpdatedItemTooLarge()
			}
			s.replace(cur, nit, size)
			out = dynastore.Projection(o.Return, old, nit, &u)
			return dynastore.WriteUnits(max(size, oldSize)), nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete implements dynastore.Store.
func (s *Store) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	var out dynastore.Item
	err := s.request(ctx, dynastore.OpDeleteItem, func() (float64, float64, error) {
		if err := dynastore.ValidateReturn(o.Return, false); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateKey(k); err != nil {
			return 0, 0, err
		}
		if err := dynastore.ValidateCond(o.Cond); err != nil {
			return 0, 0, err
		}
		return s.write(func() (float64, error) {
			cur := s.get(k)
			wcu := dynastore.WriteUnits(sizeOf(cur))
			ok := dynastore.EvalValidCond(itemOf(cur), o.Cond)
			if !ok {
				return wcu, condFailed(itemOf(cur), o)
			}
			if cur != nil {
				s.del(k)
			}
			out = dynastore.Projection(o.Return, itemOf(cur), nil, nil)
			return wcu, nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type keyID struct{ pk, sk string }

// txAction is one validated action of a transaction.
type txAction struct {
	a    dynastore.TxAction
	key  dynastore.Key
	item dynastore.Item // normalized TxPut item
}

// Transact implements dynastore.Store (TransactWriteItems).
func (s *Store) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	return s.request(ctx, dynastore.OpTransactWriteItems, func() (float64, float64, error) {
		acts, err := validateTx(actions)
		if err != nil {
			return 0, 0, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()

		reasons := make([]dynastore.TxReason, len(acts))
		newItems := make([]dynastore.Item, len(acts))
		canceled := false
		var rcu, wcu float64
		for i, t := range acts {
			cur := s.get(t.key)
			reasons[i].Code = dynastore.ReasonNone
			if t.a.Op == dynastore.TxCheck {
				rcu += dynastore.TxCapacityFactor * dynastore.ReadUnits(sizeOf(cur))
			}
			ok := dynastore.EvalValidCond(itemOf(cur), t.a.Cond)
			if !ok {
				canceled = true
				reasons[i].Code = dynastore.ReasonConditionalFailed
				if t.a.OldOnFailure {
					reasons[i].Old = dynastore.CloneItem(itemOf(cur))
				}
				continue
			}
			size := 0
			switch t.a.Op {
			case dynastore.TxPut:
				newItems[i] = t.item
				size = dynastore.ItemSize(t.item)
			case dynastore.TxUpdate:
				// An update DynamoDB cannot apply fails the whole request
				// with a ValidationException, whatever the other actions.
				nit, err := dynastore.ApplyValidUpdate(t.key, itemOf(cur), *t.a.Update)
				if err != nil {
					return 0, 0, err
				}
				size = dynastore.ItemSize(nit)
				if size > dynastore.MaxItemSize {
					return 0, 0, dynastore.UpdatedItemTooLarge()
				}
				newItems[i] = nit
			}
			if t.a.Op != dynastore.TxCheck {
				wcu += dynastore.TxCapacityFactor * dynastore.WriteUnits(max(size, sizeOf(cur)))
			}
		}
		if canceled {
			return rcu, wcu, &dynastore.TxCanceledError{Reasons: reasons}
		}
		for i, t := range acts {
			switch t.a.Op {
			case dynastore.TxPut, dynastore.TxUpdate:
				s.put(newItems[i], dynastore.ItemSize(newItems[i]))
			case dynastore.TxDelete:
				s.del(t.key)
			}
		}
		return rcu, wcu, nil
	})
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
	seen := make(map[keyID]bool, len(actions))
	payload := 0
	for i, a := range actions {
		t := txAction{a: a, key: a.Key}
		switch a.Op {
		case dynastore.TxPut:
			it, err := dynastore.NormalizeItem(a.Item)
			if err != nil {
				return nil, err
			}
			t.item, t.key = it, it.Key()
			payload += dynastore.ItemSize(it)
		case dynastore.TxUpdate:
			// TransactWriteItems requires an UpdateExpression, unlike UpdateItem.
			if a.Update == nil || len(dynastore.UpdatedAttrs(a.Update)) == 0 {
				return nil, fmt.Errorf("%w: a transactional update needs at least one action", dynastore.ErrInvalid)
			}
			if err := dynastore.ValidateUpdate(*a.Update); err != nil {
				return nil, err
			}
			payload += len(a.Key.PK) + len(a.Key.SK) + updateSize(a.Update)
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
		id := keyID{string(t.key.PK), string(t.key.SK)}
		if seen[id] {
			return nil, fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
		}
		seen[id] = true
		acts[i] = t
	}
	if payload > dynastore.MaxTxSize {
		return nil, fmt.Errorf("%w: Transaction payload size cannot exceed 4MB. Payload Size: %d", dynastore.ErrTxTooLarge, payload)
	}
	return acts, nil
}

// updateSize approximates an update's share of the request payload: the
// attribute names and literal values it carries.
func updateSize(u *dynastore.Update) int {
	n := 0
	for _, s := range u.Set {
		n += len(s.Attr) + operandSize(s.Val)
	}
	for _, a := range u.Remove {
		n += len(a)
	}
	for _, a := range append(append([]dynastore.AttrValue{}, u.Add...), u.Delete...) {
		n += dynastore.ItemSize(dynastore.Item{a.Attr: a.Val})
	}
	return n
}

func operandSize(o dynastore.Operand) int {
	switch x := o.(type) {
	case dynastore.Lit:
		return dynastore.ItemSize(dynastore.Item{"": x.V})
	case dynastore.IfNotExists:
		return len(x.Attr) + dynastore.ItemSize(dynastore.Item{"": x.Default})
	case dynastore.Plus:
		return operandSize(x.A) + operandSize(x.B)
	case dynastore.Minus:
		return operandSize(x.A) + operandSize(x.B)
	case dynastore.ListAppend:
		return operandSize(x.A) + operandSize(x.B)
	case dynastore.Ref:
		return len(x.Attr)
	}
	return 0
}

// ---- queries and scans -------------------------------------------------------

// bound is one end of a sort-key range.
type bound struct {
	set, incl bool
	sk        []byte
}

// skRange turns a Query's key condition into bounds on the sort key.
func skRange(q dynastore.Query) (lo, hi bound, err error) {
	needA := q.Op != dynastore.SKAll
	if needA {
		if err := checkSK(q.A); err != nil {
			return lo, hi, err
		}
	}
	switch q.Op {
	case dynastore.SKAll:
	case dynastore.SKEq:
		lo, hi = bound{true, true, q.A}, bound{true, true, q.A}
	case dynastore.SKLT:
		hi = bound{true, false, q.A}
	case dynastore.SKLE:
		hi = bound{true, true, q.A}
	case dynastore.SKGT:
		lo = bound{true, false, q.A}
	case dynastore.SKGE:
		lo = bound{true, true, q.A}
	case dynastore.SKBetween:
		if err := checkSK(q.B); err != nil {
			return lo, hi, err
		}
		if bytes.Compare(q.A, q.B) > 0 {
			return lo, hi, fmt.Errorf("%w: Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound", dynastore.ErrInvalid)
		}
		lo, hi = bound{true, true, q.A}, bound{true, true, q.B}
	case dynastore.SKBeginsWith:
		lo = bound{true, true, q.A}
		if end := prefixEnd(q.A); end != nil {
			hi = bound{true, false, end}
		}
	default:
		return lo, hi, fmt.Errorf("%w: unknown sort key operator %d", dynastore.ErrInvalid, q.Op)
	}
	return lo, hi, nil
}

func checkSK(sk []byte) error {
	switch {
	case len(sk) == 0:
		return fmt.Errorf("%w: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: sk", dynastore.ErrKeyTooLarge)
	case len(sk) > dynastore.MaxSKSize:
		return fmt.Errorf("%w: Aggregated size of all range keys has exceeded the size limit of 1024 bytes", dynastore.ErrKeyTooLarge)
	}
	return nil
}

// prefixEnd is the smallest key after every key starting with p, nil if
// there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (b bound) below(sk []byte) bool { // sk is before the lower bound
	if !b.set {
		return false
	}
	c := bytes.Compare(sk, b.sk)
	return c < 0 || (c == 0 && !b.incl)
}

func (b bound) above(sk []byte) bool { // sk is past the upper bound
	if !b.set {
		return false
	}
	c := bytes.Compare(sk, b.sk)
	return c > 0 || (c == 0 && !b.incl)
}

// Query implements dynastore.Store.
func (s *Store) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	var page dynastore.QueryPage
	err := s.request(ctx, dynastore.OpQuery, func() (float64, float64, error) {
		if len(q.PK) == 0 {
			return 0, 0, fmt.Errorf("%w: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: pk", dynastore.ErrKeyTooLarge)
		}
		if q.Limit < 0 {
			return 0, 0, fmt.Errorf("%w: negative Limit", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateCond(q.Filter); err != nil {
			return 0, 0, err
		}
		lo, hi, err := skRange(q)
		if err != nil {
			return 0, 0, err
		}
		if q.After != nil {
			if lo.below(q.After) || hi.above(q.After) {
				return 0, 0, fmt.Errorf("%w: The provided starting key does not match the range key predicate", dynastore.ErrInvalid)
			}
			// Resume strictly after q.After in the direction of travel.
			if q.Reverse {
				hi = bound{true, false, q.After}
			} else {
				lo = bound{true, false, q.After}
			}
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		var pg pager
		pg.limit, pg.filter = q.Limit, q.Filter
		visit := func(v interface{}) bool {
			e := v.(*entry)
			if !bytes.Equal(e.pk, q.PK) {
				return false
			}
			if q.Reverse {
				if hi.above(e.sk) {
					return true
				}
				if lo.below(e.sk) {
					return false
				}
			} else {
				if lo.below(e.sk) {
					return true
				}
				if hi.above(e.sk) {
					return false
				}
			}
			return pg.add(e)
		}
		if q.Reverse {
			pivot := &entry{pk: q.PK, end: true}
			if hi.set {
				pivot = &entry{pk: q.PK, sk: hi.sk}
			}
			s.tree.Descend(pivot, visit)
		} else {
			s.tree.Ascend(&entry{pk: q.PK, sk: lo.sk}, visit)
		}
		page.Items = pg.items
		if pg.last != nil {
			page.Next = bytes.Clone(pg.last.sk)
		}
		return dynastore.ReadUnits(pg.size), 0, nil
	})
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	return page, nil
}

// pager collects one Query or Scan page as DynamoDB does: it reads items
// until Limit items or 1 MB have been read (the item crossing 1 MB is still
// read), then filters. last is set when the page stopped early, even if no
// item follows: that is when DynamoDB returns a LastEvaluatedKey.
type pager struct {
	limit  int
	filter dynastore.Cond
	read   int
	size   int
	items  []dynastore.Item
	last   *entry
}

// add reads one item and reports whether to read on.
func (p *pager) add(e *entry) bool {
	p.read++
	p.size += e.size
	if dynastore.EvalValidCond(e.item, p.filter) {
		p.items = append(p.items, dynastore.CloneItem(e.item))
	}
	if (p.limit > 0 && p.read >= p.limit) || p.size >= dynastore.MaxPageSize {
		p.last = e
		return false
	}
	return true
}

// segmentOf assigns a partition to one of n scan segments; all items of a
// partition share a segment, as in DynamoDB.
func segmentOf(pk []byte, n int) int {
	h := fnv.New32a()
	h.Write(pk)
	return int(h.Sum32() % uint32(n))
}

// Scan implements dynastore.Store. Items come in (pk, sk) order, each
// segment holding whole partitions.
func (s *Store) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	var page dynastore.ScanPage
	err := s.request(ctx, dynastore.OpScan, func() (float64, float64, error) {
		segs := sc.Segments
		switch {
		case sc.Limit < 0:
			return 0, 0, fmt.Errorf("%w: negative Limit", dynastore.ErrInvalid)
		case segs < 0 || segs > 1_000_000:
			return 0, 0, fmt.Errorf("%w: TotalSegments must be between 1 and 1000000", dynastore.ErrInvalid)
		case segs == 0 && sc.Segment != 0:
			return 0, 0, fmt.Errorf("%w: Segment without Segments", dynastore.ErrInvalid)
		case segs > 0 && (sc.Segment < 0 || sc.Segment >= segs):
			return 0, 0, fmt.Errorf("%w: Segment must be less than TotalSegments", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateCond(sc.Filter); err != nil {
			return 0, 0, err
		}
		if sc.After != nil {
			if err := dynastore.ValidateKey(*sc.After); err != nil {
				return 0, 0, err
			}
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		var pg pager
		pg.limit, pg.filter = sc.Limit, sc.Filter
		// Ascend takes an untyped nil for "from the start".
		var pivot interface{}
		if sc.After != nil {
			pivot = &entry{pk: sc.After.PK, sk: sc.After.SK}
		}
		s.tree.Ascend(pivot, func(v interface{}) bool {
			e := v.(*entry)
			if pivot != nil && !less(pivot, e) {
				return true // the After key itself
			}
			if segs > 1 && segmentOf(e.pk, segs) != sc.Segment {
				return true
			}
			return pg.add(e)
		})
		page.Items = pg.items
		if pg.last != nil {
			page.Next = &dynastore.Key{PK: bytes.Clone(pg.last.pk), SK: bytes.Clone(pg.last.sk)}
		}
		return dynastore.ReadUnits(pg.size), 0, nil
	})
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	return page, nil
}
