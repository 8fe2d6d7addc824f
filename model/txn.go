package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redamo/redamo/dynastore"
)

// ErrWatched is a commit refused because an item watched before the unit
// of work began (WATCH) is no longer as it was: MULTI/EXEC replies with
// the null reply and runs nothing.
var ErrWatched = errors.New("model: a watched key changed")

// Txn is an optimistic transaction over a Store, and a dynastore.Store
// itself, so that the same command handlers that run against the store run
// against it unchanged. Reads go to the store once per item and record
// what they saw; writes are buffered and seen by later reads of the same
// Txn; conditions are evaluated on the Txn's own view. Commit makes every
// buffered write visible at once, conditioned on every item read being
// still as it was read: one conditional request when the Txn comes down to
// a single write, one TransactWriteItems otherwise. Nothing reaches the
// store before Commit, so a Txn that is dropped leaves no trace.
//
// A Txn is safe for concurrent use (a command may stage pages of a large
// collection from several goroutines).
type Txn struct {
	st dynastore.Store
	// covered reports the items whose reads need no check of their own at
	// commit: another item that is always read with them changes with
	// them (a collection's members and its key item's version).
	covered func(dynastore.Key) bool

	mu    sync.Mutex
	slots map[slotID]*slot
	order []*slot
	// failed is the first store error a read met: the run cannot be
	// trusted, and Commit refuses.
	failed error
	// loads counts the reads that went to the store; snapshot is set when
	// the first of them read its items as of one instant (LoadSnapshot).
	loads    int
	snapshot bool
	// hinted is the items to read along with the next read (Hint).
	hinted []dynastore.Key
	// hot is the item LoadAround read alone, after the others; hotAt the
	// count of loads then (a later load ends what it allows: see Commit).
	hot   *slot
	hotAt int
	// changed holds the items a read-only commit found changed.
	changed []dynastore.Key
}

type slotID struct{ pk, sk string }

// slot is what the Txn knows of one item.
type slot struct {
	key dynastore.Key
	// read: seen is the item as the store returned it (nil: absent).
	read bool
	seen dynastore.Item
	// written: cur is the item the Txn leaves (nil: deleted). When not
	// written, the item is seen.
	written bool
	cur     dynastore.Item
	// guard, when set, is what must hold on the item at commit instead of
	// "unchanged since read"; watched marks a guard from Watch (or a
	// watched requirement).
	guard   dynastore.Cond
	watched bool
	// reqs must hold on the item at commit as well (Require): watched
	// ones always, the others (checked on the Txn's view when required)
	// only while the Txn does not write the item.
	reqs, viewReqs []dynastore.Cond
}

// view is the item as the Txn sees it now.
func (s *slot) view() dynastore.Item {
	if s.written {
		return s.cur
	}
	return s.seen
}

// known reports whether the Txn can answer a read of the item without the store.
func (s *slot) known() bool { return s.read || s.written }

// NewTxn starts a transaction over st. covered (nil: none) names the items
// that need no check at commit when only read (see Txn).
func NewTxn(st dynastore.Store, covered func(dynastore.Key) bool) *Txn {
	return &Txn{st: st, covered: covered, slots: map[slotID]*slot{}}
}

var _ dynastore.Store = (*Txn)(nil)

// Base is the store under the Txn, for writes nobody sees until a write of
// the Txn publishes them (a collection's new generation): they may go
// straight to the store and leave the commit small.
func (t *Txn) Base() dynastore.Store { return t.st }

func (t *Txn) slot(k dynastore.Key) *slot {
	id := slotID{string(k.PK), string(k.SK)}
	s := t.slots[id]
	if s == nil {
		s = &slot{key: dynastore.Key{PK: bytes.Clone(k.PK), SK: bytes.Clone(k.SK)}}
		t.slots[id] = s
		t.order = append(t.order, s)
	}
	return s
}

// Watch records it as the item at k (read before the Txn began) and cond
// as what must hold on it at commit; a commit that fails because cond no
// longer holds fails with ErrWatched. The Txn's reads of k see it.
func (t *Txn) Watch(k dynastore.Key, it dynastore.Item, cond dynastore.Cond) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(k)
	s.read, s.seen, s.guard, s.watched = true, it, cond, true
}

// Peek reads the item at k as the Txn sees it (its own write, or what it
// read) without making the commit depend on it: an item the Txn does not
// know yet is read from the store and not recorded. A caller that needs
// something of it at commit says so with Require.
func (t *Txn) Peek(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	t.mu.Lock()
	if s := t.slots[slotID{string(k.PK), string(k.SK)}]; s != nil && s.known() {
		defer t.mu.Unlock()
		return s.view(), nil
	}
	t.mu.Unlock()
	return t.st.Get(ctx, k)
}

// Require adds cond to what must hold on the item at k at commit, without
// reading it: a fenced write's lease (LOCK.GUARD). A watched requirement
// was set before the unit of work began (EXEC's guards): it holds on the
// item as it is before the commit, and a commit it refuses fails with
// ErrWatched (EXEC replies null). Otherwise the caller checked cond on
// the Txn's view just before (a script's guard): a commit it refuses is a
// conflict (the unit re-runs and learns why), and an item the Txn writes
// needs nothing more (its write is conditioned on the item the Txn read,
// and the requirement on the item before the write would refuse the
// Txn's own change, a LOCK.ACQUIRE earlier in the same EXEC).
func (t *Txn) Require(k dynastore.Key, cond dynastore.Cond, watched bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(k)
	if watched {
		s.reqs = append(s.reqs, cond)
		s.watched = true
	} else {
		s.viewReqs = append(s.viewReqs, cond)
	}
}

// Err is the first store error a read of the Txn met, nil if none.
func (t *Txn) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Wrote returns the keys of the items the Txn writes, in the order it first
// touched them.
func (t *Txn) Wrote() []dynastore.Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []dynastore.Key
	for _, s := range t.order {
		if s.written {
			out = append(out, s.key)
		}
	}
	return out
}

func (t *Txn) fail(err error) error {
	t.mu.Lock()
	if t.failed == nil {
		t.failed = err
	}
	t.mu.Unlock()
	return err
}

// Hint names the items the unit of work is about to read (a script's KEYS,
// the keys of a transaction's commands). It reads nothing: the first read
// that goes to the store also reads every hinted item the Txn does not
// know yet, in the same request, so a unit of work reads its items at
// once rather than one request each, and close together in time (less
// room for another writer to invalidate the reads before the commit),
// while one that only writes blindly reads nothing at all.
func (t *Txn) Hint(keys []dynastore.Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if dynastore.ValidateKey(k) == nil {
			t.hinted = append(t.hinted, k)
		}
	}
}

// LoadSnapshot reads the items at keys the Txn does not know yet, at once,
// for a unit of work that will only read: when the store reads snapshots
// (dynastore.SnapshotReader) and these are the Txn's first reads, it reads
// the items as of one instant, and a commit with no other read since needs
// no second reading to check them.
func (t *Txn) LoadSnapshot(ctx context.Context, keys []dynastore.Key) error {
	sr, ok := t.st.(dynastore.SnapshotReader)
	t.mu.Lock()
	missing := t.missing(keys)
	first := t.loads == 0
	t.mu.Unlock()
	if !ok || !first || len(missing) < 2 || len(missing) > dynastore.MaxTxActions {
		return t.load(ctx, keys...)
	}
	for _, k := range missing {
		if err := dynastore.ValidateKey(k); err != nil {
			return err
		}
	}
	items, err := sr.GetSnapshot(ctx, missing)
	if errors.Is(err, dynastore.ErrInvalid) || errors.Is(err, dynastore.ErrTxTooLarge) || errors.Is(err, dynastore.ErrTxConflict) {
		// Items that do not fit one snapshot (4 MB in all), or whose
		// snapshot kept being canceled (DynamoDB cancels a
		// TransactGetItems for any write in flight on its items, so
		// one key written often is never read that way): read them
		// plainly; the commit then checks them, which only a write
		// committed in between fails.
		return t.load(ctx, keys...)
	}
	if err != nil {
		return t.fail(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loads++
	t.snapshot = t.loads == 1
	t.record(missing, items)
	return nil
}

// LoadAround is LoadSnapshot for a unit of work that will only read and
// whose item hot changed under its last attempt (Changed): it reads the
// other items first, then hot alone. If the run reads nothing more and
// the commit's check finds the others unchanged, each of them held its
// value from before hot was read until after: the items were as read at
// the instant hot was read, which the commit therefore does not check.
// An item written on and on (a counter) thus does not fail every attempt
// of a read that includes it, where DynamoDB cancels any TransactGetItems
// of it and a second reading always finds it changed.
func (t *Txn) LoadAround(ctx context.Context, keys []dynastore.Key, hot dynastore.Key) error {
	rest := make([]dynastore.Key, 0, len(keys))
	for _, k := range keys {
		if !bytes.Equal(k.PK, hot.PK) || !bytes.Equal(k.SK, hot.SK) {
			rest = append(rest, k)
		}
	}
	if len(rest) == len(keys) || len(rest) == 0 {
		return t.LoadSnapshot(ctx, keys)
	}
	if err := t.LoadSnapshot(ctx, rest); err != nil {
		return err
	}
	if err := t.load(ctx, hot); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hot, t.hotAt = t.slot(hot), t.loads
	return nil
}

// Changed returns the items a read-only commit failed on because they
// changed since read (not watched ones): what LoadAround may read last on
// the next attempt.
func (t *Txn) Changed() []dynastore.Key {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// missing returns the distinct keys whose items the Txn does not know.
func (t *Txn) missing(keys []dynastore.Key) []dynastore.Key {
	var out []dynastore.Key
	seen := map[slotID]bool{}
	for _, k := range keys {
		id := slotID{string(k.PK), string(k.SK)}
		if !seen[id] && !t.slot(k).known() {
			seen[id] = true
			out = append(out, k)
		}
	}
	return out
}

// record keeps items as read at keys; the first reading of an item stays
// (another goroutine of the same command may have got there first).
func (t *Txn) record(keys []dynastore.Key, items []dynastore.Item) {
	for i, k := range keys {
		if s := t.slot(k); !s.known() {
			s.read, s.seen = true, items[i]
		}
	}
}

// load makes sure the Txn knows the items at keys, reading those it does
// not know from the store, with the hinted items, in one request.
func (t *Txn) load(ctx context.Context, keys ...dynastore.Key) error {
	for _, k := range keys {
		if err := dynastore.ValidateKey(k); err != nil {
			return err
		}
	}
	t.mu.Lock()
	missing := t.missing(keys)
	if len(missing) > 0 && len(t.hinted) > 0 {
		missing = t.missing(append(missing, t.hinted...))
		t.hinted = nil
	}
	t.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	items, err := dynastore.GetMany(ctx, t.st, missing)
	if err != nil {
		return t.fail(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loads++
	t.record(missing, items)
	return nil
}

// Get implements dynastore.Store.
func (t *Txn) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	if err := t.load(ctx, k); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.slot(k).view(), nil
}

// BatchGet implements dynastore.Store.
func (t *Txn) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	if err := t.load(ctx, keys...); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]dynastore.Item, len(keys))
	for i, k := range keys {
		out[i] = t.slot(k).view()
	}
	return out, nil
}

// Put implements dynastore.Store. A Put without condition or return value
// is blind: it reads nothing, so it adds no check to the commit.
func (t *Txn) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	nit, _, err := dynastore.NormalizeItemSize(it)
	if err != nil {
		return nil, err
	}
	return t.replace(ctx, nit.Key(), nit, o)
}

// Delete implements dynastore.Store. Like Put, a Delete without condition
// or return value is blind.
func (t *Txn) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	return t.replace(ctx, k, nil, o)
}

// replace makes next (nil: none) the item at k, under o's condition.
func (t *Txn) replace(ctx context.Context, k dynastore.Key, next dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := dynastore.ValidateReturn(o.Return, false); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateKey(k); err != nil {
		return nil, err
	}
	blind := o.Cond == nil && o.Return == dynastore.ReturnNone
	if !blind {
		if err := t.load(ctx, k); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(k)
	old := s.view()
	if !blind {
		if err := holds(old, o); err != nil {
			return nil, err
		}
	}
	s.written, s.cur = true, next
	return dynastore.Projection(o.Return, old, next, nil), nil
}

// Update implements dynastore.Store.
func (t *Txn) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := dynastore.ValidateReturn(o.Return, true); err != nil {
		return nil, err
	}
	if err := t.load(ctx, k); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(k)
	old := s.view()
	if err := holds(old, o); err != nil {
		return nil, err
	}
	nit, err := dynastore.ApplyUpdate(k, old, u)
	if err != nil {
		return nil, err
	}
	if dynastore.ItemSizeAt(k, nit) > dynastore.MaxItemSize {
		return nil, dynastore.UpdatedItemTooLarge()
	}
	s.written, s.cur = true, nit
	return dynastore.Projection(o.Return, old, nit, &u), nil
}

// holds checks a single write's condition on the Txn's view of the item.
func holds(old dynastore.Item, o dynastore.WriteOptions) error {
	ok, err := dynastore.EvalCond(old, o.Cond)
	if err != nil {
		return err
	}
	if !ok {
		e := &dynastore.ConditionFailedError{}
		if o.OldOnFailure {
			e.Old = old
		}
		return e
	}
	return nil
}

// Transact implements dynastore.Store: all actions or none, on the Txn's view.
func (t *Txn) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	if len(actions) == 0 {
		return fmt.Errorf("%w: a transaction needs at least one action", dynastore.ErrInvalid)
	}
	keys := make([]dynastore.Key, len(actions))
	// read is the items an action needs as they are: as with Put and
	// Delete, an unconditioned put or delete is blind.
	var read []dynastore.Key
	seen := map[slotID]bool{}
	for i, a := range actions {
		keys[i] = a.Key
		if a.Op == dynastore.TxPut {
			keys[i] = a.Item.Key()
		}
		id := slotID{string(keys[i].PK), string(keys[i].SK)}
		if seen[id] {
			return fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
		}
		seen[id] = true
		if err := dynastore.ValidateKey(keys[i]); err != nil {
			return err
		}
		if a.Cond != nil || (a.Op != dynastore.TxPut && a.Op != dynastore.TxDelete) {
			read = append(read, keys[i])
		}
	}
	if err := t.load(ctx, read...); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make([]dynastore.Item, len(actions))
	reasons := make([]dynastore.TxReason, len(actions))
	canceled := false
	for i, a := range actions {
		old := t.slot(keys[i]).view()
		reasons[i].Code = dynastore.ReasonNone
		ok, err := dynastore.EvalCond(old, a.Cond)
		if err != nil {
			return err
		}
		if !ok {
			canceled = true
			reasons[i].Code = dynastore.ReasonConditionalFailed
			if a.OldOnFailure {
				reasons[i].Old = old
			}
			continue
		}
		switch a.Op {
		case dynastore.TxPut:
			nit, _, err := dynastore.NormalizeItemSize(a.Item)
			if err != nil {
				return err
			}
			next[i] = nit
		case dynastore.TxUpdate:
			if a.Update == nil {
				return fmt.Errorf("%w: a transactional update needs at least one action", dynastore.ErrInvalid)
			}
			nit, err := dynastore.ApplyUpdate(keys[i], old, *a.Update)
			if err != nil {
				return err
			}
			if dynastore.ItemSizeAt(keys[i], nit) > dynastore.MaxItemSize {
				return dynastore.UpdatedItemTooLarge()
			}
			next[i] = nit
		case dynastore.TxDelete, dynastore.TxCheck:
		default:
			return fmt.Errorf("%w: unknown transaction action %d", dynastore.ErrInvalid, a.Op)
		}
	}
	if canceled {
		return &dynastore.TxCanceledError{Reasons: reasons}
	}
	for i, a := range actions {
		if a.Op == dynastore.TxCheck {
			continue
		}
		s := t.slot(keys[i])
		s.written, s.cur = true, next[i]
	}
	return nil
}

// Query implements dynastore.Store: the store's page with the Txn's writes
// to that partition laid over it, in sort-key order.
func (t *Txn) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	page, err := t.st.Query(ctx, q)
	if err != nil {
		return page, t.fail(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loads++
	var over []*slot
	for _, s := range t.order {
		if s.written && bytes.Equal(s.key.PK, q.PK) && inRange(s.key.SK, q) && (page.Next == nil || !beyond(s.key.SK, page.Next, q.Reverse)) {
			over = append(over, s)
		}
	}
	if len(over) == 0 {
		return page, nil
	}
	replaced := map[string]bool{}
	for _, s := range over {
		replaced[string(s.key.SK)] = true
	}
	items := make([]dynastore.Item, 0, len(page.Items)+len(over))
	for _, it := range page.Items {
		if !replaced[string(it.Key().SK)] {
			items = append(items, it)
		}
	}
	for _, s := range over {
		if s.cur != nil && dynastore.EvalValidCond(s.cur, q.Filter) {
			items = append(items, s.cur)
		}
	}
	slices.SortFunc(items, func(a, b dynastore.Item) int {
		c := bytes.Compare(a.Key().SK, b.Key().SK)
		if q.Reverse {
			return -c
		}
		return c
	})
	if q.Limit > 0 && len(items) > q.Limit {
		items = items[:q.Limit]
		page.Next = bytes.Clone(items[len(items)-1].Key().SK)
	}
	page.Items = items
	return page, nil
}

// inRange reports whether sort key sk is in q's range and after q.After.
func inRange(sk []byte, q dynastore.Query) bool {
	if q.After != nil && !beyond(sk, q.After, q.Reverse) {
		return false
	}
	switch q.Op {
	case dynastore.SKEq:
		return bytes.Equal(sk, q.A)
	case dynastore.SKLT:
		return bytes.Compare(sk, q.A) < 0
	case dynastore.SKLE:
		return bytes.Compare(sk, q.A) <= 0
	case dynastore.SKGT:
		return bytes.Compare(sk, q.A) > 0
	case dynastore.SKGE:
		return bytes.Compare(sk, q.A) >= 0
	case dynastore.SKBetween:
		return bytes.Compare(sk, q.A) >= 0 && bytes.Compare(sk, q.B) <= 0
	case dynastore.SKBeginsWith:
		return bytes.HasPrefix(sk, q.A)
	}
	return true
}

// beyond reports whether sk comes after mark in the query's direction.
func beyond(sk, mark []byte, reverse bool) bool {
	c := bytes.Compare(sk, mark)
	if reverse {
		return c < 0
	}
	return c > 0
}

// Scan implements dynastore.Store: the store's page with the Txn's writes
// laid over the items it holds; items the Txn creates come with the last
// page (of segment 0).
func (t *Txn) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	page, err := t.st.Scan(ctx, sc)
	if err != nil {
		return page, t.fail(err)
	}
	t.mu.Lock()
	t.loads++
	var created []*slot
	if page.Next == nil && sc.Segment == 0 {
		for _, s := range t.order {
			// The store's pages list only what passes the filter as
			// stored: a write over an item they left out (absent,
			// expired, another type) is listed here.
			if s.written && s.cur != nil && (!s.read || s.seen == nil || !dynastore.EvalValidCond(s.seen, sc.Filter)) {
				created = append(created, s)
			}
		}
	}
	items := make([]dynastore.Item, 0, len(page.Items))
	for _, it := range page.Items {
		k := it.Key()
		s := t.slots[slotID{string(k.PK), string(k.SK)}]
		switch {
		case s == nil || !s.written:
			items = append(items, it)
		case s.cur != nil && dynastore.EvalValidCond(s.cur, sc.Filter):
			items = append(items, s.cur)
		}
	}
	t.mu.Unlock()
	for _, s := range created {
		if !dynastore.EvalValidCond(s.cur, sc.Filter) {
			continue
		}
		if !s.read {
			// Written blindly: the scan has listed it already if the
			// store holds it.
			stored, err := t.st.Get(ctx, s.key)
			if err != nil {
				return page, t.fail(err)
			}
			if stored != nil && dynastore.EvalValidCond(stored, sc.Filter) {
				continue
			}
		}
		items = append(items, s.cur)
	}
	page.Items = items
	return page, nil
}

// unchanged is the condition that an item is still exactly as seen: its
// version when it has one, every attribute otherwise, absent when it was.
func unchanged(seen dynastore.Item) dynastore.Cond {
	if seen == nil {
		return dynastore.NotExists{Attr: dynastore.AttrPK}
	}
	if v := seen.Get(AttrVer); v != nil {
		return dynastore.Compare{Attr: AttrVer, Op: dynastore.OpEQ, Val: v}
	}
	all := dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}}
	for _, a := range seen {
		if a.Name != dynastore.AttrPK && a.Name != dynastore.AttrSK {
			all = append(all, dynastore.Compare{Attr: a.Name, Op: dynastore.OpEQ, Val: a.Value})
		}
	}
	return all
}

// check is what must hold on s's item at commit, nil when nothing does.
func (t *Txn) check(s *slot) dynastore.Cond {
	c := t.checkRead(s)
	all := dynastore.And(slices.Clone(s.reqs))
	if !s.written {
		all = append(all, s.viewReqs...)
	}
	if len(all) == 0 {
		return c
	}
	if c != nil {
		all = append(all, c)
	}
	return all
}

// checkRead is what must hold at commit on s's item for what the Txn read
// of it.
func (t *Txn) checkRead(s *slot) dynastore.Cond {
	switch {
	case s.guard != nil:
		return s.guard
	case !s.read:
		return nil
	case !s.written && t.covered != nil && t.covered(s.key):
		return nil
	}
	return unchanged(s.seen)
}

// Commit makes the Txn's writes visible at once, if every item it read is
// still as read. It returns ErrWatched when a watched item changed,
// ErrConflict when another item did (the unit of work may run again), or
// the store's error. A Txn that only read is one consistent state as it
// is when its reads were one snapshot (LoadSnapshot) or one item;
// otherwise it is validated by reading its items again (one BatchGet):
// they were all as read at one instant, the end of the run.
func (t *Txn) Commit(ctx context.Context) error {
	t.mu.Lock()
	if t.failed != nil {
		t.mu.Unlock()
		return t.failed
	}
	var acts []dynastore.TxAction
	var watched []bool
	writes, reads, anyWatched := 0, 0, false
	snapshot := t.snapshot && t.loads == 1
	// The item LoadAround read last needs no check while the run read
	// nothing after it; the others are then checked (loads is 2).
	hot := t.hot
	if hot != nil && (t.loads != t.hotAt || hot.written || hot.watched) {
		hot = nil
	}
	for _, s := range t.order {
		if s.read {
			reads++
		}
		cond := t.check(s)
		if s == hot {
			cond = nil
		}
		switch {
		case s.written && s.cur != nil:
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: s.cur, Cond: cond})
			writes++
		case s.written:
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: s.key, Cond: cond})
			writes++
		case cond != nil:
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: s.key, Cond: cond})
		default:
			continue
		}
		watched = append(watched, s.watched)
		anyWatched = anyWatched || s.watched
	}
	t.mu.Unlock()

	switch {
	case len(acts) == 0:
		return nil
	case writes == 0:
		if (len(acts) == 1 && reads == 1 && !watched[0]) || (snapshot && !anyWatched) {
			// One read, or one snapshot of every item read, is one
			// consistent state by itself.
			return nil
		}
		return t.validate(ctx, acts, watched)
	case len(acts) == 1:
		a := acts[0]
		var err error
		o := dynastore.WriteOptions{Cond: a.Cond}
		if a.Op == dynastore.TxPut {
			_, err = t.st.Put(ctx, a.Item, o)
		} else {
			_, err = t.st.Delete(ctx, a.Key, o)
		}
		if errors.Is(err, dynastore.ErrConditionFailed) {
			return lost(watched[0])
		}
		return err
	}
	err := t.st.Transact(ctx, acts)
	var tc *dynastore.TxCanceledError
	if errors.As(err, &tc) {
		failed, conflict := false, false
		for i, r := range tc.Reasons {
			switch r.Code {
			case dynastore.ReasonConditionalFailed:
				if i < len(watched) && watched[i] {
					return ErrWatched
				}
				failed = true
			case dynastore.ReasonConflict:
				conflict = true
			}
		}
		if failed || conflict {
			return ErrConflict
		}
	}
	return err
}

// validate checks a read-only Txn's conditions on a fresh reading.
func (t *Txn) validate(ctx context.Context, acts []dynastore.TxAction, watched []bool) error {
	keys := make([]dynastore.Key, len(acts))
	for i, a := range acts {
		keys[i] = a.Key
	}
	items, err := t.st.BatchGet(ctx, keys)
	if err != nil {
		return err
	}
	conflict := false
	for i, a := range acts {
		ok, err := dynastore.EvalCond(items[i], a.Cond)
		if err != nil {
			return err
		}
		if !ok {
			if watched[i] {
				return ErrWatched
			}
			conflict = true
			t.mu.Lock()
			t.changed = append(t.changed, a.Key)
			t.mu.Unlock()
		}
	}
	if conflict {
		return ErrConflict
	}
	return nil
}

func lost(watched bool) error {
	if watched {
		return ErrWatched
	}
	return ErrConflict
}
