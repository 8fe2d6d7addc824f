package commands

// List commands. A list's key item (model/keyitem.go) has one of two layouts:
//
//   - inline (at most model.InlineMaxList elements of at most
//     model.InlineMaxBytes bytes, fewer under a small
//     list-max-listpack-size: encoding.go): v is
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
//
// This is the list layout of the collection engine (model/collection.go):
// the inline codec above, and a model.MemberSpan (lh, lt) for the large
// layout, whose positions outside [lh, lt) may hold leftovers no read sees. A
// listView works in positions and stages its changes into its collection,
// which plans and commits them like any other type's. Every write of a
// large list is guarded by the key item's ver, so writers of one list
// serialize; a conflict re-runs the command (model.RetryConflicts).
//
// Costs (DynamoDB requests), when this instance wrote or read the list last
// (its item cache, model.Items, then holds the key item; a stale entry
// costs a failed guard and a fresh read):
//
//	LPUSH/RPUSH small list                 1 UpdateItem (guarded by ver alone
//	                                       when cached: model.FastUpdate)
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
//	                                       or from lt, then one write publishes
//	                                       them (planSpan)

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Key item attributes of a large list.
const (
	attrListHead = "lh"
	attrListTail = "lt"
)

// Error replies of the list family (checked against redis-server 7.0.15).
const (
	msgRankZero      = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	msgCountNegative = "ERR COUNT can't be negative"
	msgMaxlenNeg     = "ERR MAXLEN can't be negative"
	msgCountGTZero   = "ERR count should be greater than 0"
)

func init() {
	// Redis 7.0 reports every list as a quicklist.
	objectEncoders[model.TypeList] = func(*Ctx, []byte) (string, error) { return "quicklist", nil }
	model.InlineCodecs[model.TypeList] = model.InlineCodec{Decode: decodeListInline, Encode: encodeListInline}
	model.MemberSpans[model.TypeList] = model.MemberSpan{Lo: attrListHead, Hi: attrListTail}
}

func registerLists(t *Table) {
	t.Register([]Row{
		{Name: "lpush", Run: func(c *Ctx) { listPush(c, true, false) }},
		{Name: "rpush", Run: func(c *Ctx) { listPush(c, false, false) }},
		{Name: "lpushx", Run: func(c *Ctx) { listPush(c, true, true) }},
		{Name: "rpushx", Run: func(c *Ctx) { listPush(c, false, true) }},
		{Name: "lpop", Run: func(c *Ctx) { cmdPop(c, true) }},
		{Name: "rpop", Run: func(c *Ctx) { cmdPop(c, false) }},
		{Name: "llen", Run: cmdLlen},
		{Name: "lrange", Run: cmdLrange},
		{Name: "lindex", Run: cmdLindex},
		{Name: "lset", Run: cmdLset},
		{Name: "linsert", Run: cmdLinsert},
		{Name: "lrem", Run: cmdLrem},
		{Name: "ltrim", Run: cmdLtrim},
		{Name: "lpos", Run: cmdLpos},
		{Name: "lmove", Run: cmdLmove},
		{Name: "rpoplpush", Run: cmdRpoplpush},
		{Name: "lmpop", Run: cmdLmpop},
		{Name: "blpop", Run: func(c *Ctx) { cmdBpop(c, true) }},
		{Name: "brpop", Run: func(c *Ctx) { cmdBpop(c, false) }},
		{Name: "blmove", Run: cmdBlmove},
		{Name: "brpoplpush", Run: cmdBrpoplpush},
		{Name: "blmpop", Run: cmdBlmpop},
	})
}

// ---- the list view ------------------------------------------------------------------

// listView is one list key as read by one attempt, plus the changes the
// attempt stages, in positions: the list layout of the collection engine
// (a model.MemberSpan), which it stages its changes into (stage) to commit
// them. Reads through it see the staged changes.
type listView struct {
	*model.Collection
	c *Ctx

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
	// cached: the key item came from the item cache (openListForWrite),
	// which only seeds guarded writes (see settle).
	cached bool
}

// settle is how an attempt ends that writes nothing, with outcome (nil or
// the error it read off the list: LSET out of range). That outcome rests
// on the key item alone, with no guarded write to catch a stale one: from
// the item cache, the attempt is run again from a fresh read instead
// (RetryConflicts' first retry does not wait).
func (l *listView) settle(outcome error) error {
	if l.cached {
		return model.ErrConflict
	}
	return outcome
}

// Bounds of model.ListKnown: the positions within listKnownReach of either end,
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
func openList(c *Ctx, key []byte) (*listView, error) {
	if !model.KeyFits(key) {
		return listFromItem(c, key, nil)
	}
	cl, err := model.Open(c, key, model.TypeList)
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
func openListForWrite(c *Ctx, key []byte, try int) (*listView, error) {
	if try == 0 && model.KeyFits(key) {
		if e, ok := model.Items(c).Get(c.DB(), key); ok {
			l, err := listFromItem(c, key, e.Item)
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

// listFromItem decodes a key item as a list.
func listFromItem(c *Ctx, key []byte, it dynastore.Item) (*listView, error) {
	cl, err := model.FromItem(c, key, model.TypeList, it)
	if err != nil {
		return nil, err
	}
	return listOf(c, cl)
}

// listOf is the list view of a list collection.
func listOf(c *Ctx, cl *model.Collection) (*listView, error) {
	l := &listView{Collection: cl, c: c}
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
	vs, ok := it.Get(model.AttrValue).(dynastore.L)
	if !ok {
		return nil, fmt.Errorf("commands: list without elements: %w", dynastore.ErrInvalid)
	}
	out := make(map[string]dynastore.Value, len(vs))
	for i, v := range vs {
		b, ok := v.(dynastore.B)
		if !ok {
			return nil, fmt.Errorf("commands: list element of kind %d: %w", v.Kind(), dynastore.ErrInvalid)
		}
		out[string(model.PosMember(int64(i)))] = b
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
	it.Set(model.AttrValue, vs)
}

// length is the number of elements, staged changes included.
func (l *listView) length() int64 {
	if l.rewrite != nil {
		return l.rewriteLen
	}
	if l.Large() {
		return l.nt - l.nh
	}
	return int64(len(l.elems))
}

func (l *listView) pushLeft(vals [][]byte) {
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

func (l *listView) pushRight(vals [][]byte) {
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

func (l *listView) stagePut(p int64, v []byte) {
	if l.staged == nil {
		l.staged = map[int64][]byte{}
	}
	l.staged[p] = v
}

// pop removes and returns up to n elements from one end.
func (l *listView) pop(left bool, n int64) ([][]byte, error) {
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
func (l *listView) readEnd(from, to int64, left bool) ([][]byte, error) {
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
	all, err := l.readPositions(rf, rt)
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
			l.values[p] = v
		}
		size += len(v)
	}
	l.elemSize = max(size/len(all), 1)
	return all[from-rf : to-rf], nil
}

// knownAfter is what of known and the staged puts stays valid, within
// model.ListKnown's bounds, once a guarded in-place commit of the view moves the
// list to [nh, nt).
func (l *listView) knownAfter() *model.ListKnown {
	out := &model.ListKnown{Values: map[int64][]byte{}, ElemSize: l.elemSize}
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
func (l *listView) index(i int64) ([]byte, error) {
	if !l.Large() {
		return l.elems[i], nil
	}
	p := l.nh + i
	if v, ok := l.staged[p]; ok {
		return v, nil
	}
	it, err := l.c.Store.Get(l.c, model.MemberKey(l.Gen, model.PosMember(p)))
	if err != nil {
		return nil, err
	}
	v, ok := it.Get(model.AttrValue).(dynastore.B)
	if !ok {
		return nil, fmt.Errorf("commands: list member %d of [%d,%d) missing: %w", p, l.h, l.t, model.ErrConflict)
	}
	return v, nil
}

// set replaces the element at list index i (normalized).
func (l *listView) set(i int64, v []byte) {
	l.changed = true
	if !l.Large() {
		l.elems[i] = v
		return
	}
	l.stagePut(l.nh+i, v)
}

// readPositions returns the elements at positions [from, to) of a large
// list: staged ones from memory, committed ones with Query pages.
func (l *listView) readPositions(from, to int64) ([][]byte, error) {
	out := make([][]byte, 0, to-from)
	err := l.scanPositions(from, to, func(_ int64, v []byte) error {
		out = append(out, v)
		return nil
	})
	return out, err
}

// scanPositions calls fn for the elements at positions [from, to) in order
// (staged puts included), reading committed ones page by page.
func (l *listView) scanPositions(from, to int64, fn func(p int64, v []byte) error) error {
	p := from
	emitStaged := func(upto int64) error {
		for ; p < upto; p++ {
			v, ok := l.staged[p]
			if !ok {
				return fmt.Errorf("commands: list position %d not read: %w", p, model.ErrConflict)
			}
			if err := fn(p, v); err != nil {
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
		err := l.EachRange(model.PosMember(cf), model.PosMember(ct-1), false, int(min(ct-cf, model.MemberPageItems)), func(m []byte, v dynastore.Value) (bool, error) {
			if mp, ok := model.MemberPos(m); !ok || mp != p {
				// A hole: the list changed since its key item was read.
				return false, model.ErrConflict
			}
			b, _ := v.(dynastore.B)
			if sv, ok := l.staged[p]; ok {
				b = sv
			}
			if err := fn(p, b); err != nil {
				return false, err
			}
			p++
			return p < ct, nil // no page past the range's end
		})
		if err != nil {
			return err
		}
		if p != ct {
			return model.ErrConflict
		}
	}
	return emitStaged(to)
}

// all calls fn for every element in order, staged changes included.
func (l *listView) all(fn func(i int64, v []byte) error) error {
	if !l.Large() {
		for i, v := range l.elems {
			if err := fn(int64(i), v); err != nil {
				return err
			}
		}
		return nil
	}
	return l.scanPositions(l.nh, l.nt, func(p int64, v []byte) error { return fn(p-l.nh, v) })
}

// allReverse calls fn for every element from the tail, staged changes
// included; a large list is read in pages from its end.
func (l *listView) allReverse(fn func(i int64, v []byte) error) error {
	if !l.Large() {
		for i := len(l.elems) - 1; i >= 0; i-- {
			if err := fn(int64(i), l.elems[i]); err != nil {
				return err
			}
		}
		return nil
	}
	const chunk = 256
	for to := l.nt; to > l.nh; to -= chunk {
		from := max(l.nh, to-chunk)
		l.PagesRead = l.PagesRead || to != l.nt // not one snapshot any more
		vals, err := l.readPositions(from, to)
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
func (l *listView) setRewrite(n int64, gen func(yield func([]byte) error) error) {
	l.changed = true
	l.rewrite, l.rewriteLen = gen, n
}

// stage stages the view's changes in its collection, for the engine to
// commit: an inline list, or a rewritten one, is rebuilt whole (one Put
// while it fits inline, else a new generation with positions from 0 on);
// a large one changes in place, its moved range staged as key attributes.
func (l *listView) stage() {
	if !l.changed {
		return
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
				l.Put(model.PosMember(p), dynastore.B(bytes.Clone(v)))
			}
		}
		for p := l.h; p < min(l.t, l.nh); p++ {
			l.Del(model.PosMember(p))
		}
		for p := max(l.h, l.nt); p < l.t; p++ {
			l.Del(model.PosMember(p))
		}
		l.SetKeyAttr(attrListHead, model.NInt(l.nh))
		l.SetKeyAttr(attrListTail, model.NInt(l.nt))
		l.ListKnown = l.knownAfter()
		return
	}
	l.Rebuild(n, func(yield func([]byte, dynastore.Value) error) error {
		var p int64
		return elems(func(e []byte) error {
			err := yield(model.PosMember(p), dynastore.B(bytes.Clone(e)))
			p++
			return err
		})
	})
}

// commitLists commits the changes of several views in one request or
// transaction (reads are views only read: their key items are checked).
// It returns model.ErrConflict on a conflict.
func commitLists(c *Ctx, writes []*listView, reads []*listView) error {
	ws := make([]*model.Collection, len(writes))
	for i, l := range writes {
		l.stage()
		ws[i] = l.Collection
	}
	rs := make([]*model.Collection, len(reads))
	for i, l := range reads {
		rs[i] = l.Collection
	}
	return model.Commit(c, ws, rs)
}

// ---- push and pop -------------------------------------------------------------------

func listPush(c *Ctx, left, mustExist bool) {
	key, vals := c.Args[1], c.Args[2:]
	n, err := pushElements(c, key, vals, left, mustExist)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// pushElements pushes vals onto key and returns the new length (0 when
// mustExist and the key does not exist).
func pushElements(c *Ctx, key []byte, vals [][]byte, left, mustExist bool) (int64, error) {
	defer c.lockKeys(key)()
	var seed dynastore.Item
	seeded := false
	lim := c.Srv.inline(model.TypeList)
	if len(vals) <= lim.Entries && model.AllSmall(vals, lim.Bytes) && model.KeyFits(key) && !cachedLargeList(c, key) {
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
		list := dynastore.Operand(dynastore.IfNotExists{Attr: model.AttrValue, Default: dynastore.L{}})
		val := dynastore.ListAppend{A: list, B: add}
		if left {
			val = dynastore.ListAppend{A: add, B: list}
		}
		_, nw, applied, cur, err := model.FastUpdate(c, key, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: model.AttrType, Val: dynastore.S(model.TypeList)},
			{Attr: model.AttrValue, Val: val},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}}, model.InlineFastCond(c.NowMS(), model.TypeList, lim.Entries, len(vals), mustExist))
		if err != nil {
			return 0, err
		}
		if applied {
			l, _ := nw.Get(model.AttrValue).(dynastore.L)
			c.Srv.listRT().notify(c.DB(), key)
			return int64(len(l)), nil
		}
		seed, seeded = cur, true
	}
	var n int64
	err := model.RetryConflicts(c, func(try int) error {
		var l *listView
		var err error
		if seeded && try == 0 {
			l, err = listFromItem(c, key, seed)
		} else {
			l, err = openListForWrite(c, key, try)
		}
		if err != nil {
			return err
		}
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
		return commitLists(c, []*listView{l}, nil)
	})
	if err == nil && n > 0 {
		c.Srv.listRT().notify(c.DB(), key)
	}
	return n, err
}

// cachedLargeList reports whether the item cache holds key as a live large
// list. A push then goes straight to its transaction, made from the cached
// item and guarded by its ver (a stale entry only fails that guard, and the
// push re-runs from a fresh read), rather than first sending the inline
// UpdateItem, which fails on a large list.
func cachedLargeList(c *Ctx, key []byte) bool {
	e, ok := model.Items(c).Get(c.DB(), key)
	if !ok || e.Item.Get(model.AttrGen) == nil {
		return false
	}
	ks, err := model.DecodeKey(e.Item, c.NowMS())
	return err == nil && ks.Live && ks.Type == model.TypeList
}

// parsePopCount parses LPOP/RPOP's count.
func parsePopCount(arg []byte) (int64, bool) {
	n, ok := model.String2ll(arg)
	return n, ok && n >= 0
}

func cmdPop(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		c.W.Error(ErrWrongArgs(string(c.Args[0])))
		return
	}
	hasCount := len(c.Args) == 3
	count := int64(1)
	if hasCount {
		n, ok := parsePopCount(c.Args[2])
		if !ok {
			c.W.Error(MsgCountPositive)
			return
		}
		count = n
	}
	var popped [][]byte
	exists := false
	defer c.lockKeys(c.Args[1])()
	err := model.RetryConflicts(c, func(try int) error {
		popped, exists = nil, false
		l, err := openListForWrite(c, c.Args[1], try)
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
		return commitLists(c, []*listView{l}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case !exists && hasCount:
		c.W.NilArray()
	case !exists:
		c.W.Nil()
	case !hasCount:
		c.W.Bulk(popped[0])
	default:
		writeBulks(c, popped)
	}
}

func writeBulks(c *Ctx, vals [][]byte) {
	c.W.Array(len(vals))
	for _, v := range vals {
		c.W.Bulk(v)
	}
}

// ---- reads ----------------------------------------------------------------------------

// readList opens key for a read-only command (one GetItem, never the cache).
func readList(c *Ctx, key []byte) (*listView, error) {
	l, err := openList(c, key)
	if err != nil {
		return nil, err
	}
	return l, l.Check()
}

func cmdLlen(c *Ctx) {
	l, err := readList(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(l.length())
}

func cmdLrange(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	stop, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	var out [][]byte
	err := model.RetryConflicts(c, func(int) error {
		out = nil
		l, err := readList(c, c.Args[1])
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
	if err != nil {
		c.Fail(err)
		return
	}
	writeBulks(c, out)
}

// listValidate is model.ValidateRead of list views.
func listValidate(c *Ctx, ls ...*listView) error {
	cls := make([]*model.Collection, len(ls))
	for i, l := range ls {
		cls[i] = l.Collection
	}
	return model.ValidateRead(c, cls...)
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

func cmdLindex(c *Ctx) {
	// Redis looks the key up before it parses the index.
	idx, idxOK := model.String2ll(c.Args[2])
	var v []byte
	err := model.RetryConflicts(c, func(int) error {
		v = nil
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		if !l.KS.Live {
			return nil
		}
		if !idxOK {
			return redisError(MsgNotInt)
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
	if err != nil {
		c.Fail(err)
		return
	}
	if v == nil {
		c.W.Nil()
		return
	}
	c.W.Bulk(v)
}

// lposOpts are LPOS's options.
type lposOpts struct {
	rank, count, maxlen int64
	hasCount            bool
}

func parseLpos(args [][]byte) (lposOpts, string) {
	o := lposOpts{rank: 1}
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case argIs(args[j], "rank") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok {
				return o, MsgNotInt
			}
			// Like Redis, -9223372036854775808 is not refused: negated
			// it stays negative, so the first match from the tail counts.
			if n == 0 {
				return o, msgRankZero
			}
			o.rank = n
			j++
		case argIs(args[j], "count") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok || n < 0 {
				return o, msgCountNegative
			}
			o.count, o.hasCount = n, true
			j++
		case argIs(args[j], "maxlen") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok || n < 0 {
				return o, msgMaxlenNeg
			}
			o.maxlen = n
			j++
		default:
			return o, MsgSyntax
		}
	}
	return o, ""
}

// errStop ends an iteration early.
var errStop = errors.New("commands: stop")

func cmdLpos(c *Ctx) {
	o, msg := parseLpos(c.Args[3:])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	elem := c.Args[2]
	var found []int64
	exists := false
	err := model.RetryConflicts(c, func(int) error {
		found, exists = nil, false
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		exists = l.KS.Live
		if !exists {
			return nil
		}
		want := o.count
		if !o.hasCount {
			want = 1
		}
		skip := o.rank
		if skip < 0 {
			skip = -skip
		}
		var seen, matches int64
		visit := func(i int64, v []byte) error {
			if o.maxlen > 0 && seen >= o.maxlen {
				return errStop
			}
			seen++
			if bytes.Equal(v, elem) {
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
		if o.rank > 0 {
			err = l.all(visit)
		} else {
			err = l.allReverse(visit)
		}
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		return listValidate(c, l)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !o.hasCount {
		if len(found) == 0 {
			c.W.Nil()
			return
		}
		c.W.Int(found[0])
		return
	}
	c.W.Array(len(found))
	for _, i := range found {
		c.W.Int(i)
	}
}

// ---- middle operations ----------------------------------------------------------------------

func cmdLset(c *Ctx) {
	idx, idxOK := model.String2ll(c.Args[2])
	defer c.lockKeys(c.Args[1])()
	err := model.RetryConflicts(c, func(try int) error {
		l, err := openListForWrite(c, c.Args[1], try)
		if err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return err
		}
		if !l.KS.Live {
			return redisError(MsgNoSuchKey)
		}
		if !idxOK {
			return l.settle(redisError(MsgNotInt))
		}
		i := idx
		if i < 0 {
			i += l.length()
		}
		if i < 0 || i >= l.length() {
			return l.settle(redisError(MsgOutOfRange))
		}
		l.set(i, c.Args[3])
		return commitLists(c, []*listView{l}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

func cmdLinsert(c *Ctx) {
	var after bool
	switch {
	case argIs(c.Args[2], "before"):
	case argIs(c.Args[2], "after"):
		after = true
	default:
		c.W.Error(MsgSyntax)
		return
	}
	pivot, elem := c.Args[3], c.Args[4]
	defer c.lockKeys(c.Args[1])()
	var reply int64
	err := model.RetryConflicts(c, func(try int) error {
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		reply = 0
		if !l.KS.Live {
			return nil
		}
		// Find the pivot first: a miss writes nothing.
		at := int64(-1)
		err = l.all(func(i int64, v []byte) error {
			if bytes.Equal(v, pivot) {
				at = i
				return errStop
			}
			return nil
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
				return src.all(func(i int64, v []byte) error {
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
		return commitLists(c, []*listView{l}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if reply > 0 {
		c.Srv.listRT().notify(c.DB(), c.Args[1])
	}
	c.W.Int(reply)
}

func cmdLrem(c *Ctx) {
	count, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	elem := c.Args[3]
	var removed int64
	defer c.lockKeys(c.Args[1])()
	err := model.RetryConflicts(c, func(try int) error {
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
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
		visit := func(i int64, v []byte) error {
			if bytes.Equal(v, elem) {
				drop[i] = true
				if limit > 0 && int64(len(drop)) >= limit {
					return errStop
				}
			}
			return nil
		}
		if count >= 0 {
			err = l.all(visit)
		} else {
			err = l.allReverse(visit)
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
				return src.all(func(i int64, v []byte) error {
					if drop[i] {
						return nil
					}
					return yield(v)
				})
			})
		}
		return commitLists(c, []*listView{l}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(removed)
}

func cmdLtrim(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	stop, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	defer c.lockKeys(c.Args[1])()
	err := model.RetryConflicts(c, func(try int) error {
		l, err := openListForWrite(c, c.Args[1], try)
		if err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return err
		}
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
		return commitLists(c, []*listView{l}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

// ---- moves and multi-key pops ------------------------------------------------------------------------

// parseWhere parses LEFT or RIGHT.
func parseWhere(arg []byte) (left, ok bool) {
	switch {
	case argIs(arg, "left"):
		return true, true
	case argIs(arg, "right"):
		return false, true
	}
	return false, false
}

func cmdLmove(c *Ctx) {
	from, ok1 := parseWhere(c.Args[3])
	to, ok2 := parseWhere(c.Args[4])
	if !ok1 || !ok2 {
		c.W.Error(MsgSyntax)
		return
	}
	lmoveReply(c, from, to)
}

func cmdRpoplpush(c *Ctx) { lmoveReply(c, false, true) }

func lmoveReply(c *Ctx, from, to bool) {
	v, err := listMove(c, c.Args[1], c.Args[2], from, to, false)
	if err != nil {
		c.Fail(err)
		return
	}
	if v == nil {
		c.W.Nil()
		return
	}
	c.W.Bulk(v)
}

// listMove pops one element from src and pushes it onto dst atomically (one
// transaction over both key items, each guarded by its ver; one write when
// src and dst are the same small list). It returns nil when src is empty.
// quiet treats a src of another type as empty (a blocked client re-trying).
func listMove(c *Ctx, src, dst []byte, fromLeft, toLeft, quiet bool) ([]byte, error) {
	var moved []byte
	same := bytes.Equal(src, dst)
	defer c.lockKeys(src, dst)()
	err := model.RetryConflicts(c, func(try int) error {
		moved = nil
		s, err := openListForWrite(c, src, try)
		if err != nil {
			return err
		}
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
			return commitLists(c, []*listView{s}, nil)
		}
		return commitLists(c, []*listView{s, d}, nil)
	})
	if err == nil && moved != nil {
		c.Srv.listRT().notify(c.DB(), dst)
	}
	return moved, err
}

// listMultiPop pops up to count elements from the first non-empty list of
// keys, atomically with the observation that the keys before it are empty
// (their key items are checked in the same transaction). It returns the key
// popped from (nil if all were empty). quiet treats keys of another type as
// empty instead of failing.
func listMultiPop(c *Ctx, keys [][]byte, left bool, count int64, quiet bool) ([]byte, [][]byte, error) {
	var key []byte
	var popped [][]byte
	defer c.lockKeys(keys...)()
	err := model.RetryConflicts(c, func(try int) error {
		key, popped = nil, nil
		var ls []*listView
		if len(keys) == 1 {
			l, err := openListForWrite(c, keys[0], try)
			if err != nil {
				return err
			}
			ls = []*listView{l}
		} else {
			var ks []dynastore.Key
			for _, k := range keys {
				if model.KeyFits(k) {
					ks = append(ks, model.ItemKey(c.DB(), k))
				}
			}
			items, err := c.Store.BatchGet(c, ks)
			if err != nil {
				return err
			}
			for _, k := range keys {
				var it dynastore.Item
				if model.KeyFits(k) {
					it, items = items[0], items[1:]
				}
				l, err := listFromItem(c, k, it)
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
					return model.ErrWrongType
				}
				// The keys before must still be empty when replying.
				if err := listValidate(c, ls[:i+1]...); err != nil {
					return err
				}
				return model.ErrWrongType
			}
			if !l.KS.Live || l.length() == 0 {
				continue
			}
			vals, err := l.pop(left, count)
			if err != nil {
				return err
			}
			if err := commitLists(c, []*listView{l}, ls[:i]); err != nil {
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

// parseMpop parses LMPOP/BLMPOP (LEFT|RIGHT) and ZMPOP/BZMPOP (MIN|MAX)
// from numkeys (args[0]) on: first reports the first of the two words
// (LEFT, MIN). msg is the error reply ("" when none).
func parseMpop(args [][]byte, firstWord, secondWord string) (keys [][]byte, first bool, count int64, msg string) {
	numkeys, ok := model.String2ll(args[0])
	if !ok || numkeys < 1 {
		return nil, false, 0, MsgNumkeys
	}
	if numkeys >= int64(len(args))-1 {
		return nil, false, 0, MsgSyntax
	}
	keys = args[1 : 1+numkeys]
	rest := args[1+numkeys:]
	switch {
	case argIs(rest[0], firstWord):
		first = true
	case !argIs(rest[0], secondWord):
		return nil, false, 0, MsgSyntax
	}
	count = -1
	for j := 1; j < len(rest); j++ {
		if count == -1 && argIs(rest[j], "count") && j+1 < len(rest) {
			j++
			n, ok := model.String2ll(rest[j])
			if !ok || n < 1 {
				return nil, false, 0, msgCountGTZero
			}
			count = n
			continue
		}
		return nil, false, 0, MsgSyntax
	}
	if count == -1 {
		count = 1
	}
	return keys, first, count, ""
}

func cmdLmpop(c *Ctx) {
	keys, left, count, msg := parseMpop(c.Args[1:], "left", "right")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key, vals, err := listMultiPop(c, keys, left, count, false)
	if err != nil {
		c.Fail(err)
		return
	}
	writeMpop(c, key, vals)
}

func writeMpop(c *Ctx, key []byte, vals [][]byte) {
	if key == nil {
		c.W.NilArray()
		return
	}
	c.W.Array(2)
	c.W.Bulk(key)
	writeBulks(c, vals)
}

// ---- blocking timeouts ---------------------------------------------------------------------

// parseBlockTimeout parses a blocking command's timeout in seconds as Redis
// 7.0 does: a long double, times 1000, rounded up to whole ms and converted
// to a long long (a value past its range wraps to the most negative one and
// so is "negative"). 0 means forever.
func parseBlockTimeout(arg []byte) (ms int64, msg string) {
	x, ok := ldParse(arg)
	if !ok {
		return 0, MsgTimeoutNotFloat
	}
	if x.IsInf() {
		return 0, MsgNegativeTimeout
	}
	x = new(big.Float).Mul(x, big.NewFloat(1000))
	i, _ := x.Int(nil)
	if x.Sign() > 0 && !x.IsInt() {
		i.Add(i, big.NewInt(1))
	}
	if !i.IsInt64() {
		return 0, MsgNegativeTimeout
	}
	ms = i.Int64()
	if ms < 0 {
		return 0, MsgNegativeTimeout
	}
	return ms, ""
}
