package model

// The list layout and the list operations. A list's key item (keyitem.go)
// has one of two layouts:
//
//   - inline (at most InlineMaxList elements of at most
//     InlineMaxBytes bytes, fewer under a small
//     list-max-listpack-size: commands/encoding.go): v is
//     an L of B holding the elements in order. LPUSH/RPUSH are one
//     UpdateItem (list_append, creating the key if absent); every other
//     write rewrites the item with one conditional Put guarded by ver.
//   - large: the key item holds g (generation), n (length), lh and lt (the
//     positions of the first element and one past the last); element i lives
//     in the member item at position lh+i (pk 'm'+g, sk 0x00 + the
//     position as 8 order-preserving bytes, value in v). LPUSH writes below
//     lh and moves it down, RPUSH writes at lt and moves it up, pops move
//     them inwards and delete the popped members, all in one transaction
//     with the key item's update. LINDEX is one GetItem of a member,
//     LRANGE one Query over a position range, LLEN the key item alone.
//     An element a member item cannot hold is kept in chunks, as a big
//     hash field value is, and its member item refers to them
//     (bigfields.go); such an element never fits inline.
//
// This is the list layout of the collection engine (collection.go):
// the inline codec above, and a MemberSpan (lh, lt) for the large
// layout, whose positions outside [lh, lt) may hold leftovers no read sees. A
// ListView works in positions and stages its changes into its collection,
// which plans and commits them like any other type's. Every write of a
// large list is guarded by the key item's ver, so writers of one list
// serialize; a conflict re-runs the command (RetryConflicts).
//
// Costs (DynamoDB requests), when this instance wrote or read the list last
// (its item cache, Items, then holds the key item; a stale entry
// costs a failed guard and a fresh read):
//
//	LPUSH/RPUSH small list                 1 UpdateItem (guarded by ver alone
//	                                       when cached: FastUpdate)
//	LPOP/RPOP/LMOVE small list             1 Put (GetItem + Put uncached)
//	LPUSH/RPUSH large list (<= 96 elems)   1 TransactWriteItems (uncached: the
//	                                       inline UpdateItem fails first)
//	LPOP/RPOP large list (<= 96 elems)     1 TransactWriteItems when the
//	                                       elements are known (this instance
//	                                       pushed them or read them ahead),
//	                                       else Query + TransactWriteItems
//	                                       (GetItem first uncached)
//	LLEN                                   1 GetItem
//	LINDEX large                           2 GetItem; LRANGE: GetItem + Query pages
//	LSET large                             TransactWriteItems (GetItem first
//	                                       uncached)
//	LINSERT/LREM large                     O(n): a new generation with the result
//	LTRIM large                            one write (GetItem first uncached),
//	                                       then the trimmed members are deleted
//	                                       99 per transaction (planSpan)
//	push of more than a transaction holds  the members are written in batches
//	                                       (each checked against ver) below lh

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/redamo/redamo/dynastore"
)

// Key item attributes of a large list.
const (
	AttrListHead = "lh"
	AttrListTail = "lt"
)

// ListView is one list key as read by one attempt, plus the changes the
// attempt stages, in positions: the list layout of the collection engine
// (a MemberSpan), which it stages its changes into (stage) to commit
// them. Reads through it see the staged changes.
type ListView struct {
	*Collection
	c Scope

	// Inline layout: the elements, changes applied.
	elems [][]byte

	// Large layout: the range as read (h, t) and after the staged changes
	// (nh, nt).
	h, t   int64
	nh, nt int64
	// staged are staged member writes by position.
	staged map[int64][]byte
	// rewrite, when set, replaces the whole list with what it yields
	// (LINSERT, LREM on a large list).
	rewrite func(yield func([]byte) error) error
	// rewriteLen is the length of the rewritten list.
	rewriteLen int64
	// values holds committed elements' values by position (large layout),
	// valid for the key item as read: those the item cache kept with it
	// (the cache's own map while valuesShared: copied before a change) and
	// those this attempt read. elemSize is the average size of the
	// elements last read from the table (0: unknown).
	values       map[int64][]byte
	valuesShared bool
	elemSize     int

	changed bool
	// big stages the big elements the view puts (bigfields.go): the
	// command's, shared by its attempts, or the view's own.
	big *bigElems
	// cached: the key item came from the item cache (openListForWrite),
	// which only seeds guarded writes (see settle).
	cached bool
}

// settle is how an attempt ends that writes nothing, with outcome (nil or
// the error it read off the list: LSET out of range). That outcome rests
// on the key item alone, with no guarded write to catch a stale one: from
// the item cache, the attempt is run again from a fresh read instead
// (RetryConflicts' first retry does not wait).
func (l *ListView) settle(outcome error) error {
	if l.cached {
		return ErrConflict
	}
	return outcome
}

// Bounds of ListKnown: the positions within listKnownReach of either end,
// each value of at most listKnownValue bytes, listKnownBytes in all.
const (
	listKnownReach = popPrefetch
	listKnownValue = 512
	listKnownBytes = 8 << 10
)

// popPrefetch is how many more elements than it pops a pop of a large list
// reads when it must read (readEnd): the next pops of this process then
// need no read. It shrinks for large elements (popReadBytes).
const popPrefetch = 16

// popReadBytes is the most a pop's read should cover with its prefetch:
// the 4 KB one strongly consistent read unit pays for.
const popReadBytes = 4 << 10

// openList reads key as a list (one GetItem).
func openList(c Scope, key []byte) (*ListView, error) {
	if !KeyFits(key) {
		return ListFromItem(c, key, nil)
	}
	cl, err := Open(c, key, TypeList)
	if err != nil {
		return nil, err
	}
	return listOf(c, cl)
}

// openListForWrite opens key for a command that writes: on its first
// attempt from the item cache (its commit is conditioned on ver, so a stale
// entry only costs a retry), unless what the cache says would end the
// command without a write (absent, expired, empty), which is only trusted
// from a fresh read. A command that finds nothing to write in a list from
// the cache ends through settle, which reads it again.
func openListForWrite(c Scope, key []byte, try int) (*ListView, error) {
	if try == 0 && KeyFits(key) {
		if e, ok := Items(c).Get(c.DB(), key); ok {
			l, err := ListFromItem(c, key, e.Item)
			if err != nil {
				return nil, err
			}
			if l.KS.Live && !l.WrongType && l.length() > 0 {
				if e.List != nil && l.Large() {
					l.values, l.valuesShared, l.elemSize = e.List.Values, true, e.List.ElemSize
				}
				l.cached = true
				return l, nil
			}
		}
	}
	return openList(c, key)
}

// ListFromItem decodes a key item as a list (SORT reads its source so).
func ListFromItem(c Scope, key []byte, it dynastore.Item) (*ListView, error) {
	cl, err := FromItem(c, key, TypeList, it)
	if err != nil {
		return nil, err
	}
	return listOf(c, cl)
}

// listOf is the list view of a list collection.
func listOf(c Scope, cl *Collection) (*ListView, error) {
	l := &ListView{Collection: cl, c: c}
	if !cl.KS.Live || cl.WrongType {
		return l, nil
	}
	if cl.Large() {
		h, t, _, err := cl.Span(false)
		l.h, l.t, l.nh, l.nt = h, t, h, t
		return l, err
	}
	ms := make([]string, 0, len(cl.Inline))
	for m := range cl.Inline {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	l.elems = make([][]byte, len(ms))
	for i, m := range ms {
		l.elems[i] = cl.Inline[m].(dynastore.B) // decodeListInline made them so
	}
	return l, nil
}

// decodeListInline and encodeListInline are the list's inline codec: v
// is an L of B, the elements in order, read as positions from 0 on.
func decodeListInline(it dynastore.Item) (map[string]dynastore.Value, error) {
	vs, ok := it.Get(AttrValue).(dynastore.L)
	if !ok {
		return nil, fmt.Errorf("model: list without elements: %w", dynastore.ErrInvalid)
	}
	out := make(map[string]dynastore.Value, len(vs))
	for i, v := range vs {
		b, ok := v.(dynastore.B)
		if !ok {
			return nil, fmt.Errorf("model: list element of kind %d: %w", v.Kind(), dynastore.ErrInvalid)
		}
		out[string(PosMember(int64(i)))] = b
	}
	return out, nil
}

func encodeListInline(it *dynastore.Item, entries map[string]dynastore.Value) {
	ms := make([]string, 0, len(entries))
	for m := range entries {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	vs := make(dynastore.L, len(ms))
	for i, m := range ms {
		vs[i] = entries[m]
	}
	it.Set(AttrValue, vs)
}

// Len is the number of elements.
func (l *ListView) Len() int64 { return l.length() }

// All calls fn for every element in order.
func (l *ListView) All(fn func(i int64, v []byte) error) error { return l.all(fn) }

// Range returns the elements at indexes [from, to] (within the list).
func (l *ListView) Range(from, to int64) ([][]byte, error) {
	if l.Large() {
		return l.readPositions(l.nh+from, l.nh+to+1)
	}
	return slices.Clone(l.elems[from : to+1]), nil
}

// length is the number of elements, staged changes included.
func (l *ListView) length() int64 {
	if l.rewrite != nil {
		return l.rewriteLen
	}
	if l.Large() {
		return l.nt - l.nh
	}
	return int64(len(l.elems))
}

func (l *ListView) pushLeft(vals [][]byte) {
	l.changed = true
	if !l.Large() {
		ne := make([][]byte, 0, len(vals)+len(l.elems))
		for i := len(vals) - 1; i >= 0; i-- {
			ne = append(ne, vals[i])
		}
		l.elems = append(ne, l.elems...)
		return
	}
	for _, v := range vals {
		l.nh--
		l.stagePut(l.nh, v)
	}
}

func (l *ListView) pushRight(vals [][]byte) {
	l.changed = true
	if !l.Large() {
		l.elems = append(l.elems, vals...)
		return
	}
	for _, v := range vals {
		l.stagePut(l.nt, v)
		l.nt++
	}
}

func (l *ListView) stagePut(p int64, v []byte) {
	if l.staged == nil {
		l.staged = map[int64][]byte{}
	}
	l.staged[p] = v
}

// pop removes and returns up to n elements from one end.
func (l *ListView) pop(left bool, n int64) ([][]byte, error) {
	n = min(n, l.length())
	if n <= 0 {
		return nil, nil
	}
	l.changed = true
	if !l.Large() {
		out := make([][]byte, n)
		if left {
			copy(out, l.elems[:n])
			l.elems = l.elems[n:]
		} else {
			for i := range out {
				out[i] = l.elems[len(l.elems)-1-i]
			}
			l.elems = l.elems[:int64(len(l.elems))-n]
		}
		return out, nil
	}
	var from, to int64
	if left {
		from, to = l.nh, l.nh+n
	} else {
		from, to = l.nt-n, l.nt
	}
	vals, err := l.readEnd(from, to, left)
	if err != nil {
		return nil, err
	}
	for p := from; p < to; p++ {
		delete(l.staged, p)
	}
	if left {
		l.nh = to
		return vals, nil
	}
	l.nt = from
	for i, j := 0, len(vals)-1; i < j; i, j = i+1, j-1 {
		vals[i], vals[j] = vals[j], vals[i]
	}
	return vals, nil
}

// readEnd returns the elements at positions [from, to) at one end of a
// large list, for a pop: from staged and known values when they cover the
// range, else with one read that also covers up to popPrefetch more
// elements inward, which it keeps in known for the next pops.
func (l *ListView) readEnd(from, to int64, left bool) ([][]byte, error) {
	out := make([][]byte, 0, to-from)
	for p := from; p < to; p++ {
		v, ok := l.staged[p]
		if !ok {
			v, ok = l.values[p]
		}
		if !ok {
			out = nil
			break
		}
		out = append(out, v)
	}
	if out != nil {
		return out, nil
	}
	more := int64(popPrefetch)
	if l.elemSize > 0 {
		more = min(more, max(int64(popReadBytes/l.elemSize)-(to-from), 0))
	}
	rf, rt := from, to
	if left {
		rt = min(l.nt, to+more)
	} else {
		rf = max(l.nh, from-more)
	}
	all, err := l.readValues(rf, rt)
	if err != nil {
		return nil, err
	}
	if l.values == nil || l.valuesShared {
		own := make(map[int64][]byte, len(l.values)+len(all))
		for p, v := range l.values {
			own[p] = v
		}
		l.values, l.valuesShared = own, false
	}
	size := 0
	for i, v := range all {
		p := rf + int64(i)
		if _, staged := l.staged[p]; !staged {
			if b, ok := v.(dynastore.B); ok {
				l.values[p] = b // a big element is read only when popped
			}
		}
		size += ValueSize(v)
	}
	l.elemSize = max(size/len(all), 1)
	out = make([][]byte, 0, to-from)
	for _, v := range all[from-rf : to-rf] {
		b, err := elemBytes(l.c, v)
		if err != nil {
			return nil, err
		}
		l.big.took(v, b)
		out = append(out, b)
	}
	return out, nil
}

// knownAfter is what of known and the staged puts stays valid, within
// ListKnown's bounds, once a guarded in-place commit of the view moves the
// list to [nh, nt).
func (l *ListView) knownAfter() *ListKnown {
	out := &ListKnown{Values: map[int64][]byte{}, ElemSize: l.elemSize}
	size := 0
	keep := func(p int64, v []byte) {
		near := p < l.nh+listKnownReach || p >= l.nt-listKnownReach
		if p < l.nh || p >= l.nt || !near || len(v) > listKnownValue || size+len(v) > listKnownBytes {
			return
		}
		if old, ok := out.Values[p]; ok {
			size -= len(old)
		}
		out.Values[p] = v
		size += len(v)
	}
	for p, v := range l.values {
		if _, staged := l.staged[p]; !staged {
			keep(p, v)
		}
	}
	for p, v := range l.staged {
		keep(p, bytes.Clone(v)) // staged values may alias the request
	}
	return out
}

// index returns the element at list index i (0-based, already normalized).
func (l *ListView) index(i int64) ([]byte, error) {
	if !l.Large() {
		return l.elems[i], nil
	}
	p := l.nh + i
	if v, ok := l.staged[p]; ok {
		return v, nil
	}
	it, err := l.c.Data().Get(l.c, MemberKey(l.Gen, PosMember(p)))
	if err != nil {
		return nil, err
	}
	v := it.Get(AttrValue)
	if v == nil {
		return nil, fmt.Errorf("model: list member %d of [%d,%d) missing: %w", p, l.h, l.t, ErrConflict)
	}
	return elemBytes(l.c, v)
}

// set replaces the element at list index i (normalized).
func (l *ListView) set(i int64, v []byte) {
	l.changed = true
	if !l.Large() {
		l.elems[i] = v
		return
	}
	l.stagePut(l.nh+i, v)
}

// readPositions returns the elements at positions [from, to) of a large
// list: staged ones from memory, committed ones with Query pages.
func (l *ListView) readPositions(from, to int64) ([][]byte, error) {
	out := make([][]byte, 0, to-from)
	err := l.scanPositions(from, to, func(_ int64, v []byte) error {
		out = append(out, v)
		return nil
	})
	return out, err
}

// readValues is readPositions of the stored values: a big element's
// reference, not its bytes.
func (l *ListView) readValues(from, to int64) ([]dynastore.Value, error) {
	out := make([]dynastore.Value, 0, to-from)
	err := l.scanValues(from, to, func(_ int64, v dynastore.Value) error {
		out = append(out, v)
		return nil
	})
	return out, err
}

// scanPositions calls fn for the elements at positions [from, to) in order
// (staged puts included), reading committed ones page by page.
func (l *ListView) scanPositions(from, to int64, fn func(p int64, v []byte) error) error {
	return l.scanValues(from, to, func(p int64, v dynastore.Value) error {
		b, err := elemBytes(l.c, v)
		if err != nil {
			return err
		}
		return fn(p, b)
	})
}

// scanValues is scanPositions of the stored values.
func (l *ListView) scanValues(from, to int64, fn func(p int64, v dynastore.Value) error) error {
	p := from
	emitStaged := func(upto int64) error {
		for ; p < upto; p++ {
			v, ok := l.staged[p]
			if !ok {
				return fmt.Errorf("model: list position %d not read: %w", p, ErrConflict)
			}
			if err := fn(p, dynastore.B(v)); err != nil {
				return err
			}
		}
		return nil
	}
	// Committed positions of the range.
	cf, ct := max(from, l.h), min(to, l.t)
	if cf < ct {
		if err := emitStaged(cf); err != nil {
			return err
		}
		err := l.EachRange(PosMember(cf), PosMember(ct-1), false, int(min(ct-cf, MemberPageItems)), func(m []byte, v dynastore.Value) (bool, error) {
			if mp, ok := MemberPos(m); !ok || mp != p {
				// A hole: the list changed since its key item was read.
				return false, ErrConflict
			}
			if sv, ok := l.staged[p]; ok {
				v = dynastore.B(sv)
			}
			if err := fn(p, v); err != nil {
				return false, err
			}
			p++
			return p < ct, nil // no page past the range's end
		})
		if err != nil {
			return err
		}
		if p != ct {
			return ErrConflict
		}
	}
	return emitStaged(to)
}

// all calls fn for every element in order, staged changes included.
func (l *ListView) all(fn func(i int64, v []byte) error) error {
	return l.allValues(func(i int64, v dynastore.Value) error {
		b, err := elemBytes(l.c, v)
		if err != nil {
			return err
		}
		return fn(i, b)
	})
}

// allValues is all of the stored values (a big element's reference).
func (l *ListView) allValues(fn func(i int64, v dynastore.Value) error) error {
	if !l.Large() {
		for i, v := range l.elems {
			if err := fn(int64(i), dynastore.B(v)); err != nil {
				return err
			}
		}
		return nil
	}
	return l.scanValues(l.nh, l.nt, func(p int64, v dynastore.Value) error { return fn(p-l.nh, v) })
}

// takeAll is all for a rewrite, which takes every element out of its
// place: a big one may be put back by reference (bigElems.took).
func (l *ListView) takeAll(fn func(i int64, v []byte) error) error {
	return l.allValues(func(i int64, v dynastore.Value) error {
		b, err := elemBytes(l.c, v)
		if err != nil {
			return err
		}
		l.big.took(v, b)
		return fn(i, b)
	})
}

// allValuesReverse calls fn for every stored value from the tail, staged
// changes included; a large list is read in pages from its end.
func (l *ListView) allValuesReverse(fn func(i int64, v dynastore.Value) error) error {
	if !l.Large() {
		for i := len(l.elems) - 1; i >= 0; i-- {
			if err := fn(int64(i), dynastore.B(l.elems[i])); err != nil {
				return err
			}
		}
		return nil
	}
	const chunk = 256
	for to := l.nt; to > l.nh; to -= chunk {
		from := max(l.nh, to-chunk)
		l.PagesRead = l.PagesRead || to != l.nt // not one snapshot any more
		vals, err := l.readValues(from, to)
		if err != nil {
			return err
		}
		for i := len(vals) - 1; i >= 0; i-- {
			if err := fn(from-l.nh+int64(i), vals[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// setRewrite replaces the whole list by what gen yields (n elements).
func (l *ListView) setRewrite(n int64, gen func(yield func([]byte) error) error) {
	l.changed = true
	l.rewrite, l.rewriteLen = gen, n
}

// stage stages the view's changes in its collection, for the engine to
// commit: an inline list, or a rewritten one, is rebuilt whole (one Put
// while it fits inline, else a new generation with positions from 0 on);
// a large one changes in place, its moved range staged as key attributes.
func (l *ListView) stage() error {
	if !l.changed {
		return nil
	}
	if l.big == nil {
		l.big = newBigElems(l.c)
	}
	elems := func(yield func([]byte) error) error {
		for _, e := range l.elems {
			if err := yield(e); err != nil {
				return err
			}
		}
		return nil
	}
	n := int64(len(l.elems))
	switch {
	case l.rewrite != nil:
		elems, n = l.rewrite, l.rewriteLen
	case l.Large():
		for p, v := range l.staged {
			if p >= l.nh && p < l.nt {
				sv, err := l.big.value(l.Collection, PosMember(p), v)
				if err != nil {
					return err
				}
				l.Put(PosMember(p), sv)
			}
		}
		for p := l.h; p < min(l.t, l.nh); p++ {
			l.Del(PosMember(p))
		}
		for p := max(l.h, l.nt); p < l.t; p++ {
			l.Del(PosMember(p))
		}
		l.SetKeyAttr(AttrListHead, NInt(l.nh))
		l.SetKeyAttr(AttrListTail, NInt(l.nt))
		l.ListKnown = l.knownAfter()
		return nil
	}
	l.Rebuild(n, func(yield func([]byte, dynastore.Value) error) error {
		var p int64
		return elems(func(e []byte) error {
			v, err := l.big.value(l.Collection, PosMember(p), e)
			if err != nil {
				return err
			}
			err = yield(PosMember(p), v)
			p++
			return err
		})
	})
	return nil
}

// retryLists is RetryConflicts for a command that may put big elements:
// its views share big (set as their big), so that the elements are staged
// once for all attempts.
func retryLists(c Scope, fn func(try int, big *bigElems) error) error {
	big := newBigElems(c)
	err := RetryConflicts(c, func(try int) error {
		big.attempt()
		return fn(try, big)
	})
	big.settle(c, err)
	return err
}

// isBigElem reports whether a list element of n bytes is kept in chunks
// (bigfields.go).
func isBigElem(v []byte) bool { return bigField(PosMember(0), len(v)) }

// commitLists commits the changes of several views in one request or
// transaction (reads are views only read: their key items are checked).
// It returns ErrConflict on a conflict.
func commitLists(c Scope, writes []*ListView, reads []*ListView) error {
	ws := make([]*Collection, len(writes))
	for i, l := range writes {
		if err := l.stage(); err != nil {
			return err
		}
		ws[i] = l.Collection
	}
	rs := make([]*Collection, len(reads))
	for i, l := range reads {
		rs[i] = l.Collection
	}
	return Commit(c, ws, rs)
}

// Errors of the list operations a handler replies with as Redis does.
var (
	// ErrNoSuchKey: LSET of a key that does not exist.
	ErrNoSuchKey = errors.New("model: no such key")
	// ErrIndexNotInt: an index argument that is not an integer, which
	// LSET and LINDEX report only once they found the key.
	ErrIndexNotInt = errors.New("model: index is not an integer")
	// ErrIndexOutOfRange: LSET past either end.
	ErrIndexOutOfRange = errors.New("model: index out of range")
)

// errStop ends an iteration early.
var errStop = errors.New("model: stop")

// ---- push and pop -------------------------------------------------------------------

// ListPush pushes vals onto key (at the head when left) and returns the new
// length (0 when mustExist and the key does not exist). Concurrent pushes
// and pops of one key coalesce (doList).
func ListPush(c Scope, key []byte, vals [][]byte, left, mustExist bool) (int64, error) {
	r, err := doList(c, key, listOp{vals: vals, left: left, mustExist: mustExist})
	return r.n, err
}

// listPush is ListPush on its own.
func listPush(c Scope, key []byte, vals [][]byte, left, mustExist bool) (int64, error) {
	var seed dynastore.Item
	seeded := false
	lim := c.Process().inline(TypeList)
	if len(vals) <= lim.Entries && AllSmall(vals, lim.Bytes) && KeyFits(key) && !cachedLargeList(c, key) {
		// One UpdateItem: list_append onto an inline list with room, or a
		// new list when the key is absent.
		add := make(dynastore.L, len(vals))
		for i, v := range vals {
			if left {
				add[len(vals)-1-i] = dynastore.B(bytes.Clone(v))
			} else {
				add[i] = dynastore.B(bytes.Clone(v))
			}
		}
		list := dynastore.Operand(dynastore.IfNotExists{Attr: AttrValue, Default: dynastore.L{}})
		val := dynastore.ListAppend{A: list, B: add}
		if left {
			val = dynastore.ListAppend{A: add, B: list}
		}
		_, nw, applied, cur, err := FastUpdate(c, key, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: AttrType, Val: dynastore.S(TypeList)},
			{Attr: AttrValue, Val: val},
			{Attr: AttrVer, Val: NewVer()},
		}}, InlineFastCond(c.NowMS(), TypeList, lim.Entries, len(vals), mustExist))
		if err != nil {
			return 0, err
		}
		if applied {
			l, _ := nw.Get(AttrValue).(dynastore.L)
			return int64(len(l)), nil
		}
		seed, seeded = cur, true
	}
	var n int64
	err := retryLists(c, func(try int, big *bigElems) error {
		var l *ListView
		var err error
		if seeded && try == 0 {
			l, err = ListFromItem(c, key, seed)
		} else {
			l, err = openListForWrite(c, key, try)
		}
		if err != nil {
			return err
		}
		l.big = big
		if err := l.Check(); err != nil {
			return err
		}
		n = 0
		if mustExist && !l.KS.Live {
			return nil
		}
		if left {
			l.pushLeft(vals)
		} else {
			l.pushRight(vals)
		}
		n = l.length()
		return commitLists(c, []*ListView{l}, nil)
	})
	return n, err
}

// cachedLargeList reports whether the item cache holds key as a live large
// list. A push then goes straight to its transaction, made from the cached
// item and guarded by its ver (a stale entry only fails that guard, and the
// push re-runs from a fresh read), rather than first sending the inline
// UpdateItem, which fails on a large list.
func cachedLargeList(c Scope, key []byte) bool {
	e, ok := Items(c).Get(c.DB(), key)
	if !ok || e.Item.Get(AttrGen) == nil {
		return false
	}
	ks, err := DecodeKey(e.Item, c.NowMS())
	return err == nil && ks.Live && ks.Type == TypeList
}

// ListPop pops up to count elements from one end of key (LPOP, RPOP);
// exists is false when the key does not exist.
func ListPop(c Scope, key []byte, left bool, count int64) ([][]byte, bool, error) {
	r, err := doList(c, key, listOp{pop: true, left: left, count: count})
	return r.popped, r.exists, err
}

// listPop is ListPop on its own.
func listPop(c Scope, key []byte, left bool, count int64) (popped [][]byte, exists bool, err error) {
	err = RetryConflicts(c, func(try int) error {
		popped, exists = nil, false
		l, err := openListForWrite(c, key, try)
		if err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return err
		}
		exists = l.KS.Live
		if !exists || count == 0 {
			return l.settle(nil)
		}
		if popped, err = l.pop(left, count); err != nil {
			return err
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return popped, exists, err
}

// ---- reads ----------------------------------------------------------------------------

// readList opens key for a read-only command (one GetItem, never the cache).
func readList(c Scope, key []byte) (*ListView, error) {
	l, err := openList(c, key)
	if err != nil {
		return nil, err
	}
	return l, l.Check()
}

// ListLen is LLEN.
func ListLen(c Scope, key []byte) (int64, error) {
	l, err := readList(c, key)
	if err != nil {
		return 0, err
	}
	return l.length(), nil
}

// ListRange is LRANGE: the elements from index start to stop.
func ListRange(c Scope, key []byte, start, stop int64) ([][]byte, error) {
	var out [][]byte
	err := RetryConflicts(c, func(int) error {
		out = nil
		l, err := readList(c, key)
		if err != nil {
			return err
		}
		n := l.length()
		from, to, ok := rangeIndexes(start, stop, n)
		if !ok {
			return nil
		}
		if !l.Large() {
			out = l.elems[from : to+1]
			return nil
		}
		out, err = l.readPositions(l.nh+from, l.nh+to+1)
		if err != nil {
			return err
		}
		// Several pages are not one snapshot: the key item must not have
		// moved meanwhile.
		return listValidate(c, l)
	})
	return out, err
}

// listValidate is ValidateRead of list views.
func listValidate(c Scope, ls ...*ListView) error {
	cls := make([]*Collection, len(ls))
	for i, l := range ls {
		cls[i] = l.Collection
	}
	return ValidateRead(c, cls...)
}

// rangeIndexes normalizes LRANGE-style start/stop for a list of n elements.
func rangeIndexes(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= n {
		return 0, 0, false
	}
	if stop >= n {
		stop = n - 1
	}
	return start, stop, true
}

// ListIndex is LINDEX: the element at index idx (nil when there is none).
// Redis looks the key up before it parses the index: idxOK false is
// ErrIndexNotInt once the key exists.
func ListIndex(c Scope, key []byte, idx int64, idxOK bool) ([]byte, error) {
	var v []byte
	err := RetryConflicts(c, func(int) error {
		v = nil
		l, err := readList(c, key)
		if err != nil {
			return err
		}
		if !l.KS.Live {
			return nil
		}
		if !idxOK {
			return ErrIndexNotInt
		}
		i := idx
		if i < 0 {
			i += l.length()
		}
		if i < 0 || i >= l.length() {
			return nil
		}
		v, err = l.index(i)
		return err
	})
	return v, err
}

// ListPosQuery is LPOS's element and options.
type ListPosQuery struct {
	Elem                []byte
	Rank, Count, MaxLen int64
	HasCount            bool
}

// ListPos is LPOS: the indexes of the matches it asks for; exists is false
// when the key does not exist.
func ListPos(c Scope, key []byte, o ListPosQuery) (found []int64, exists bool, err error) {
	err = RetryConflicts(c, func(int) error {
		found, exists = nil, false
		l, err := readList(c, key)
		if err != nil {
			return err
		}
		exists = l.KS.Live
		if !exists {
			return nil
		}
		want := o.Count
		if !o.HasCount {
			want = 1
		}
		skip := o.Rank
		if skip < 0 {
			skip = -skip
		}
		var seen, matches int64
		visit := func(i int64, v dynastore.Value) error {
			if o.MaxLen > 0 && seen >= o.MaxLen {
				return errStop
			}
			seen++
			same, err := sameElem(c, v, o.Elem)
			if err != nil {
				return err
			}
			if same {
				matches++
				if matches >= skip {
					found = append(found, i)
					if want > 0 && int64(len(found)) >= want {
						return errStop
					}
				}
			}
			return nil
		}
		if o.Rank > 0 {
			err = l.allValues(visit)
		} else {
			err = l.allValuesReverse(visit)
		}
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		return listValidate(c, l)
	})
	return found, exists, err
}

// ---- middle operations ----------------------------------------------------------------------

// ListSet is LSET: ErrNoSuchKey, ErrIndexNotInt (idxOK false) or
// ErrIndexOutOfRange when there is nothing to set, checked in that order.
func ListSet(c Scope, key []byte, idx int64, idxOK bool, v []byte) error {
	return retryLists(c, func(try int, big *bigElems) error {
		l, err := openListForWrite(c, key, try)
		if err != nil {
			return err
		}
		l.big = big
		if err := l.Check(); err != nil {
			return err
		}
		if !l.KS.Live {
			return ErrNoSuchKey
		}
		if !idxOK {
			return l.settle(ErrIndexNotInt)
		}
		i := idx
		if i < 0 {
			i += l.length()
		}
		if i < 0 || i >= l.length() {
			return l.settle(ErrIndexOutOfRange)
		}
		l.set(i, v)
		return commitLists(c, []*ListView{l}, nil)
	})
}

// ListInsert is LINSERT: it inserts elem before (or after) the first
// pivot and returns the new length, -1 when there is no pivot, 0 when the
// key does not exist.
func ListInsert(c Scope, key []byte, after bool, pivot, elem []byte) (int64, error) {
	var reply int64
	err := retryLists(c, func(_ int, big *bigElems) error {
		l, err := readList(c, key)
		if err != nil {
			return err
		}
		l.big = big
		reply = 0
		if !l.KS.Live {
			return nil
		}
		// Find the pivot first: a miss writes nothing.
		at := int64(-1)
		err = l.allValues(func(i int64, v dynastore.Value) error {
			same, err := sameElem(c, v, pivot)
			if same {
				at = i
				return errStop
			}
			return err
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if at < 0 {
			reply = -1
			return nil
		}
		if after {
			at++
		}
		n := l.length() + 1
		reply = n
		if !l.Large() {
			ne := make([][]byte, 0, n)
			ne = append(append(append(ne, l.elems[:at]...), elem), l.elems[at:]...)
			l.elems = ne
			l.changed = true
		} else {
			src := *l
			l.setRewrite(n, func(yield func([]byte) error) error {
				return src.takeAll(func(i int64, v []byte) error {
					if i == at {
						if err := yield(elem); err != nil {
							return err
						}
					}
					return yield(v)
				})
			})
			if at == n-1 {
				// Appended after the last element.
				inner := l.rewrite
				l.rewrite = func(yield func([]byte) error) error {
					if err := inner(yield); err != nil {
						return err
					}
					return yield(elem)
				}
			}
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return reply, err
}

// ListRem is LREM: it removes the first count matches of elem (the last
// -count when negative, all when 0) and returns how many went.
func ListRem(c Scope, key []byte, count int64, elem []byte) (int64, error) {
	var removed int64
	err := retryLists(c, func(_ int, big *bigElems) error {
		l, err := readList(c, key)
		if err != nil {
			return err
		}
		l.big = big
		removed = 0
		if !l.KS.Live {
			return nil
		}
		// Which list indexes go: count > 0 the first count matches, < 0
		// the last -count, 0 all of them.
		drop := map[int64]bool{}
		limit := count
		if limit < 0 {
			limit = -limit
		}
		visit := func(i int64, v dynastore.Value) error {
			same, err := sameElem(c, v, elem)
			if same {
				drop[i] = true
				if limit > 0 && int64(len(drop)) >= limit {
					return errStop
				}
			}
			return err
		}
		if count >= 0 {
			err = l.allValues(visit)
		} else {
			err = l.allValuesReverse(visit)
		}
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		removed = int64(len(drop))
		if removed == 0 {
			return nil
		}
		if !l.Large() {
			ne := make([][]byte, 0, len(l.elems))
			for i, v := range l.elems {
				if !drop[int64(i)] {
					ne = append(ne, v)
				}
			}
			l.elems = ne
			l.changed = true
		} else {
			src := *l
			l.setRewrite(l.length()-removed, func(yield func([]byte) error) error {
				return src.takeAll(func(i int64, v []byte) error {
					if drop[i] {
						return nil
					}
					return yield(v)
				})
			})
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return removed, err
}

// ListTrim is LTRIM: it keeps the elements from index start to stop. It
// reports whether the list existed.
func ListTrim(c Scope, key []byte, start, stop int64) (existed bool, err error) {
	err = RetryConflicts(c, func(try int) error {
		l, err := openListForWrite(c, key, try)
		if err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return err
		}
		existed = l.KS.Live
		if !l.KS.Live {
			return nil
		}
		n := l.length()
		from, to, ok := rangeIndexes(start, stop, n)
		if !ok {
			from, to = n, n-1 // everything goes
		}
		if from == 0 && to == n-1 {
			return l.settle(nil)
		}
		l.changed = true
		if !l.Large() {
			l.elems = l.elems[from : to+1]
		} else {
			l.nh, l.nt = l.nh+from, l.nh+to+1
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return existed, err
}

// ---- moves and multi-key pops ------------------------------------------------------------------------

// ListMove pops one element from src and pushes it onto dst atomically (one
// transaction over both key items, each guarded by its ver; one write when
// src and dst are the same small list). It returns nil when src is empty.
// quiet treats a src of another type as empty (a blocked client re-trying).
func ListMove(c Scope, src, dst []byte, fromLeft, toLeft, quiet bool) ([]byte, error) {
	var moved []byte
	same := bytes.Equal(src, dst)
	err := retryLists(c, func(try int, big *bigElems) error {
		moved = nil
		s, err := openListForWrite(c, src, try)
		if err != nil {
			return err
		}
		s.big = big
		if s.WrongType && quiet {
			return nil
		}
		if err := s.Check(); err != nil {
			return err
		}
		if !s.KS.Live || s.length() == 0 {
			return nil
		}
		d := s
		if !same {
			if d, err = openListForWrite(c, dst, try); err != nil {
				return err
			}
			d.big = big
			if err := d.Check(); err != nil {
				return err
			}
		}
		vals, err := s.pop(fromLeft, 1)
		if err != nil {
			return err
		}
		moved = vals[0]
		if toLeft {
			d.pushLeft(vals)
		} else {
			d.pushRight(vals)
		}
		if same {
			return commitLists(c, []*ListView{s}, nil)
		}
		return commitLists(c, []*ListView{s, d}, nil)
	})
	return moved, err
}

// ListMultiPop pops up to count elements from the first non-empty list of
// keys, atomically with the observation that the keys before it are empty
// (their key items are checked in the same transaction). It returns the key
// popped from (nil if all were empty). quiet treats keys of another type as
// empty instead of failing.
func ListMultiPop(c Scope, keys [][]byte, left bool, count int64, quiet bool) ([]byte, [][]byte, error) {
	var key []byte
	var popped [][]byte
	err := RetryConflicts(c, func(try int) error {
		key, popped = nil, nil
		var ls []*ListView
		if len(keys) == 1 {
			l, err := openListForWrite(c, keys[0], try)
			if err != nil {
				return err
			}
			ls = []*ListView{l}
		} else {
			var ks []dynastore.Key
			for _, k := range keys {
				if KeyFits(k) {
					ks = append(ks, ItemKey(c.DB(), k))
				}
			}
			items, err := c.Data().BatchGet(c, ks)
			if err != nil {
				return err
			}
			for _, k := range keys {
				var it dynastore.Item
				if KeyFits(k) {
					it, items = items[0], items[1:]
				}
				l, err := ListFromItem(c, k, it)
				if err != nil {
					return err
				}
				ls = append(ls, l)
			}
		}
		for i, l := range ls {
			if l.WrongType {
				if quiet {
					continue
				}
				if i == 0 {
					return ErrWrongType
				}
				// The keys before must still be empty when replying.
				if err := listValidate(c, ls[:i+1]...); err != nil {
					return err
				}
				return ErrWrongType
			}
			if !l.KS.Live || l.length() == 0 {
				continue
			}
			vals, err := l.pop(left, count)
			if err != nil {
				return err
			}
			if err := commitLists(c, []*ListView{l}, ls[:i]); err != nil {
				return err
			}
			key, popped = l.Key, vals
			return nil
		}
		if len(ls) > 1 {
			return listValidate(c, ls...)
		}
		return nil
	})
	return key, popped, err
}
