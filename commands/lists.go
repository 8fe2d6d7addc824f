package commands

// List commands. A list's key item (model/keyitem.go) has one of two layouts:
//
//   - inline (at most inlineMaxList elements of at most inlineMaxBytes
//     bytes, fewer under a small list-max-listpack-size: encoding.go): v is
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
// Positions outside [lh, lt) may hold leftovers (members staged by a big
// push that lost a race, or popped members whose best-effort clean-up did
// not run): they are never read, are overwritten by the next push that
// reaches them, and disappear with their generation (sweeper.go).
//
// Every write of a large list is guarded by the key item's ver, so writers
// of one list serialize; a conflict re-runs the command (collRetry).
//
// Costs (DynamoDB requests), when this instance wrote or read the list last
// (its item cache, itemsOf, then holds the key item; a stale entry costs a
// failed guard and a fresh read):
//
//	LPUSH/RPUSH small list                 1 UpdateItem (guarded by ver alone
//	                                       when cached: fastUpdate)
//	LPOP/RPOP/LMOVE small list             1 Put (GetItem + Put uncached)
//	LPUSH/RPUSH large list (<= 97 elems)   1 TransactWriteItems (uncached: the
//	                                       inline UpdateItem fails first)
//	LPOP/RPOP large list (<= 97 elems)     1 TransactWriteItems when the
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
//	                                       99 per transaction
//	push of more than a transaction holds  the members are staged in batches
//	                                       (each checked against ver) below lh
//	                                       or from lt, then one write publishes

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"

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

// listTxMembers is how many member writes fit one transaction next to the
// key item's update and the checks of a two-key LMOVE.
const listTxMembers = dynastore.MaxTxActions - 3

func init() {
	// Redis 7.0 reports every list as a quicklist.
	objectEncoders[model.TypeList] = func(*Ctx, []byte) (string, error) { return "quicklist", nil }
}

func registerLists(t *Table) {
	t.Register([]Row{
		{"lpush", func(c *Ctx) { listPush(c, true, false) }},
		{"rpush", func(c *Ctx) { listPush(c, false, false) }},
		{"lpushx", func(c *Ctx) { listPush(c, true, true) }},
		{"rpushx", func(c *Ctx) { listPush(c, false, true) }},
		{"lpop", func(c *Ctx) { cmdPop(c, true) }},
		{"rpop", func(c *Ctx) { cmdPop(c, false) }},
		{"llen", cmdLlen},
		{"lrange", cmdLrange},
		{"lindex", cmdLindex},
		{"lset", cmdLset},
		{"linsert", cmdLinsert},
		{"lrem", cmdLrem},
		{"ltrim", cmdLtrim},
		{"lpos", cmdLpos},
		{"lmove", cmdLmove},
		{"rpoplpush", cmdRpoplpush},
		{"lmpop", cmdLmpop},
		{"blpop", func(c *Ctx) { cmdBpop(c, true) }},
		{"brpop", func(c *Ctx) { cmdBpop(c, false) }},
		{"blmove", cmdBlmove},
		{"brpoplpush", cmdBrpoplpush},
		{"blmpop", cmdBlmpop},
	})
}

// ---- positions ------------------------------------------------------------------

// posMember is the member bytes of position p: big-endian with the sign bit
// flipped, so byte order is numeric order.
func posMember(p int64) []byte {
	u := uint64(p) ^ (1 << 63)
	return []byte{byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
}

// memberPos decodes posMember.
func memberPos(m []byte) (int64, bool) {
	if len(m) != 8 {
		return 0, false
	}
	var u uint64
	for _, b := range m {
		u = u<<8 | uint64(b)
	}
	return int64(u ^ (1 << 63)), true
}

// ---- the list view ------------------------------------------------------------------

// listView is one list key as read by one attempt, plus the changes the
// attempt stages. Reads through it see the staged changes.
type listView struct {
	c   *Ctx
	key []byte
	ks  model.KeyState
	// wrongType: the key is live and holds another type.
	wrongType bool

	// Inline layout (gen == nil): the elements, changes applied.
	elems [][]byte

	// Large layout: as read (gen, h, t) and after the staged changes (nh, nt).
	gen    []byte
	h, t   int64
	nh, nt int64
	// puts are staged member writes by position.
	puts map[int64][]byte
	// rewrite, when set, replaces the whole list with what it yields
	// (LINSERT, LREM on a large list).
	rewrite func(yield func([]byte) error) error
	// rewriteLen is the length of the rewritten list.
	rewriteLen int64
	// known holds committed elements' values by position (large layout),
	// valid for the key item as read: those the item cache kept with it
	// (the cache's own map while knownShared: copied before a change) and
	// those this attempt read. elemSize is the average size of the
	// elements last read from the table (0: unknown).
	known       map[int64][]byte
	knownShared bool
	elemSize    int

	changed bool
}

// listKnown is what the item cache keeps with a large list's key item:
// values of elements near its ends, by position, and the average element
// size of the last read (listView.known, elemSize). They stay valid as
// long as the key item does: an element inside [lh, lt) changes only with
// a write that also sets a fresh ver (see listView.plan), and every write
// made from the entry is guarded by its ver.
type listKnown struct {
	values   map[int64][]byte
	elemSize int
}

// Bounds of listKnown: the positions within listKnownReach of either end,
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

// listKeyItem reads key's item (and remembers it in the item cache).
func listKeyItem(c *Ctx, key []byte) (dynastore.Item, error) {
	if !model.KeyFits(key) {
		return nil, nil
	}
	it, err := c.Store.Get(c, model.ItemKey(c.DB(), key))
	if err != nil {
		return nil, err
	}
	itemsOf(c).put(c.DB(), key, it)
	return it, nil
}

// openList reads key as a list.
func openList(c *Ctx, key []byte) (*listView, error) {
	it, err := listKeyItem(c, key)
	if err != nil {
		return nil, err
	}
	return listFromItem(c, key, it)
}

// openListForWrite opens key for a command that writes: on its first
// attempt from the item cache (its commit is conditioned on ver, so a stale
// entry only costs a retry), unless what the cache says would end the
// command without a write (absent, expired, empty), which is only trusted
// from a fresh read.
func openListForWrite(c *Ctx, key []byte, try int) (*listView, error) {
	if try == 0 && model.KeyFits(key) {
		if e, ok := itemsOf(c).get(c.DB(), key); ok {
			l, err := listFromItem(c, key, e.it)
			if err != nil {
				return nil, err
			}
			if l.ks.Live && !l.wrongType && l.length() > 0 {
				if e.list != nil && l.large() {
					l.known, l.knownShared, l.elemSize = e.list.values, true, e.list.elemSize
				}
				return l, nil
			}
		}
	}
	return openList(c, key)
}

// listFromItem decodes a key item as a list.
func listFromItem(c *Ctx, key []byte, it dynastore.Item) (*listView, error) {
	l := &listView{c: c, key: key}
	if !model.KeyFits(key) {
		it = nil
	}
	ks, err := model.DecodeKey(it, c.NowMS())
	if err != nil {
		return nil, err
	}
	l.ks = ks
	if !ks.Live {
		return l, nil
	}
	if ks.Type != model.TypeList {
		l.wrongType = true
		return l, nil
	}
	if g, ok := it.Get(attrGen).(dynastore.B); ok {
		l.gen = g
		if l.h, err = model.NumberInt(it.Get(attrListHead)); err != nil {
			return nil, fmt.Errorf("commands: list head: %w", err)
		}
		if l.t, err = model.NumberInt(it.Get(attrListTail)); err != nil {
			return nil, fmt.Errorf("commands: list tail: %w", err)
		}
		l.nh, l.nt = l.h, l.t
		return l, nil
	}
	vs, ok := it.Get(model.AttrValue).(dynastore.L)
	if !ok {
		return nil, fmt.Errorf("commands: list without elements: %w", dynastore.ErrInvalid)
	}
	l.elems = make([][]byte, len(vs))
	for i, v := range vs {
		b, ok := v.(dynastore.B)
		if !ok {
			return nil, fmt.Errorf("commands: list element of kind %d: %w", v.Kind(), dynastore.ErrInvalid)
		}
		l.elems[i] = b
	}
	return l, nil
}

func (l *listView) check() error {
	if l.wrongType {
		return errCollWrongType
	}
	return nil
}

func (l *listView) large() bool { return l.gen != nil }

// length is the number of elements, staged changes included.
func (l *listView) length() int64 {
	if l.rewrite != nil {
		return l.rewriteLen
	}
	if l.large() {
		return l.nt - l.nh
	}
	return int64(len(l.elems))
}

func (l *listView) pushLeft(vals [][]byte) {
	l.changed = true
	if !l.large() {
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
	if !l.large() {
		l.elems = append(l.elems, vals...)
		return
	}
	for _, v := range vals {
		l.stagePut(l.nt, v)
		l.nt++
	}
}

func (l *listView) stagePut(p int64, v []byte) {
	if l.puts == nil {
		l.puts = map[int64][]byte{}
	}
	l.puts[p] = v
}

// pop removes and returns up to n elements from one end.
func (l *listView) pop(left bool, n int64) ([][]byte, error) {
	n = min(n, l.length())
	if n <= 0 {
		return nil, nil
	}
	l.changed = true
	if !l.large() {
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
		delete(l.puts, p)
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
		v, ok := l.puts[p]
		if !ok {
			v, ok = l.known[p]
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
	if l.known == nil || l.knownShared {
		own := make(map[int64][]byte, len(l.known)+len(all))
		for p, v := range l.known {
			own[p] = v
		}
		l.known, l.knownShared = own, false
	}
	size := 0
	for i, v := range all {
		p := rf + int64(i)
		if _, staged := l.puts[p]; !staged {
			l.known[p] = v
		}
		size += len(v)
	}
	l.elemSize = max(size/len(all), 1)
	return all[from-rf : to-rf], nil
}

// knownAfter is what of known and the staged puts stays valid, within
// listKnown's bounds, once a guarded in-place commit of the view moves the
// list to [nh, nt).
func (l *listView) knownAfter() *listKnown {
	out := &listKnown{values: map[int64][]byte{}, elemSize: l.elemSize}
	size := 0
	keep := func(p int64, v []byte) {
		near := p < l.nh+listKnownReach || p >= l.nt-listKnownReach
		if p < l.nh || p >= l.nt || !near || len(v) > listKnownValue || size+len(v) > listKnownBytes {
			return
		}
		if old, ok := out.values[p]; ok {
			size -= len(old)
		}
		out.values[p] = v
		size += len(v)
	}
	for p, v := range l.known {
		if _, staged := l.puts[p]; !staged {
			keep(p, v)
		}
	}
	for p, v := range l.puts {
		keep(p, bytes.Clone(v)) // staged values may alias the request
	}
	return out
}

// index returns the element at list index i (0-based, already normalized).
func (l *listView) index(i int64) ([]byte, error) {
	if !l.large() {
		return l.elems[i], nil
	}
	p := l.nh + i
	if v, ok := l.puts[p]; ok {
		return v, nil
	}
	it, err := l.c.Store.Get(l.c, memberKey(l.gen, posMember(p)))
	if err != nil {
		return nil, err
	}
	v, ok := it.Get(model.AttrValue).(dynastore.B)
	if !ok {
		return nil, fmt.Errorf("commands: list member %d of [%d,%d) missing: %w", p, l.h, l.t, errCollRetry)
	}
	return v, nil
}

// set replaces the element at list index i (normalized).
func (l *listView) set(i int64, v []byte) {
	l.changed = true
	if !l.large() {
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
			v, ok := l.puts[p]
			if !ok {
				return fmt.Errorf("commands: list position %d not read: %w", p, errCollRetry)
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
		q := dynastore.Query{PK: membersPK(l.gen), Op: dynastore.SKBetween, A: memberSK(posMember(cf)), B: memberSK(posMember(ct - 1))}
		for {
			page, err := l.c.Store.Query(l.c, q)
			if err != nil {
				return err
			}
			for _, it := range page.Items {
				mp, ok := memberPos(decodeMember(it))
				if !ok || mp != p {
					// A hole: the list changed since its key item was read.
					return errCollRetry
				}
				v, _ := it.Get(model.AttrValue).(dynastore.B)
				if sv, ok := l.puts[p]; ok {
					v = sv
				}
				if err := fn(p, v); err != nil {
					return err
				}
				p++
			}
			if page.Next == nil {
				break
			}
			q.After = page.Next
		}
		if p != ct {
			return errCollRetry
		}
	}
	return emitStaged(to)
}

// all calls fn for every element in order, staged changes included.
func (l *listView) all(fn func(i int64, v []byte) error) error {
	if !l.large() {
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
	if !l.large() {
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

// fitsInlineList reports whether elems can be stored inline within lim.
func fitsInlineList(lim inlineLimits, elems [][]byte) bool {
	if len(elems) > lim.entries {
		return false
	}
	for _, e := range elems {
		if len(e) > lim.bytes {
			return false
		}
	}
	return true
}

// baseItem is the key item's common part: type, fresh ver, expiry kept.
func (l *listView) baseItem() dynastore.Item {
	k := model.ItemKey(l.c.DB(), l.key)
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: model.AttrType, Value: dynastore.S(model.TypeList)},
		{Name: model.AttrVer, Value: model.NewVer()},
	}
	if l.ks.Live && l.ks.HasExpiry {
		it.Set(model.AttrExpiry, model.NInt(l.ks.Expiry))
		it.Set(dynastore.AttrTTL, model.TTLSeconds(l.ks.Expiry))
	}
	return it
}

func inlineListItem(it dynastore.Item, elems [][]byte) dynastore.Item {
	vs := make(dynastore.L, len(elems))
	for i, e := range elems {
		vs[i] = dynastore.B(bytes.Clone(e))
	}
	it.Set(model.AttrValue, vs)
	return it
}

// listCommit is what a plan writes: actions for one request or transaction,
// the key item as it will be after them (nil when deleted; for the cache),
// and clean-up to run after a successful commit.
type listCommit struct {
	actions []dynastore.TxAction
	after   dynastore.Item
	// known is what the cache may keep with after (an in-place commit of
	// a large list).
	known   *listKnown
	cleanup func() error
}

// plan stages what must be staged (a new generation, members of a big push)
// and returns the commit of this view's changes.
func (l *listView) plan() (*listCommit, error) {
	if !l.changed {
		return &listCommit{}, nil
	}
	if !model.KeyFits(l.key) {
		return nil, model.ErrKeyTooLong
	}
	key := model.ItemKey(l.c.DB(), l.key)
	guard := l.ks.Guard()
	if l.length() == 0 {
		if l.ks.Raw == nil || !l.ks.Live {
			return &listCommit{}, nil
		}
		return &listCommit{actions: []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}}, nil
	}
	lim := l.c.Srv.inline(model.TypeList)
	if !l.large() && l.rewrite == nil {
		if fitsInlineList(lim, l.elems) {
			it := inlineListItem(l.baseItem(), l.elems)
			return &listCommit{actions: []dynastore.TxAction{{Op: dynastore.TxPut, Item: it, Cond: guard}}, after: it}, nil
		}
		elems := l.elems
		return l.publish(guard, func(yield func([]byte) error) error {
			for _, e := range elems {
				if err := yield(e); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if l.rewrite != nil {
		if l.rewriteLen <= int64(lim.entries) {
			var elems [][]byte
			if err := l.rewrite(func(e []byte) error { elems = append(elems, bytes.Clone(e)); return nil }); err != nil {
				return nil, err
			}
			if fitsInlineList(lim, elems) {
				it := inlineListItem(l.baseItem(), elems)
				return &listCommit{actions: []dynastore.TxAction{{Op: dynastore.TxPut, Item: it, Cond: guard}}, after: it}, nil
			}
		}
		return l.publish(guard, l.rewrite)
	}

	// Large layout, changed in place.
	var members []dynastore.TxAction
	size := 0
	for p, v := range l.puts {
		if p < l.nh || p >= l.nt {
			continue
		}
		members = append(members, dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(l.gen, posMember(p), dynastore.B(bytes.Clone(v)))})
		size += len(v) + 64
	}
	var gone []int64 // committed positions no longer in the list
	for p := l.h; p < min(l.t, l.nh); p++ {
		gone = append(gone, p)
	}
	for p := max(l.h, l.nt); p < l.t; p++ {
		gone = append(gone, p)
	}
	after := l.ks.Raw.Clone(4)
	ver := model.NewVer()
	after.Set(attrListHead, model.NInt(l.nh))
	after.Set(attrListTail, model.NInt(l.nt))
	after.Set(attrCount, model.NInt(l.nt-l.nh))
	after.Set(model.AttrVer, ver)
	keyUpdate := dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: []dynastore.SetAction{
			{Attr: attrListHead, Val: model.NInt(l.nh)},
			{Attr: attrListTail, Val: model.NInt(l.nt)},
			{Attr: attrCount, Val: model.NInt(l.nt - l.nh)},
			{Attr: model.AttrVer, Val: ver},
		}},
		Cond: guard,
	}
	lc := &listCommit{after: after, known: l.knownAfter()}
	if len(members)+len(gone) <= listTxMembers && size <= maxTxBytes {
		for _, p := range gone {
			members = append(members, dynastore.TxAction{Op: dynastore.TxDelete, Key: memberKey(l.gen, posMember(p))})
		}
		lc.actions = append(members, keyUpdate)
		return lc, nil
	}
	// Too big for one transaction. New members go first, in batches that
	// each check the key item is still as read: they land outside [lh, lt)
	// of that state, so they are invisible until the key update publishes
	// them, and never overwrite an element another writer pushed meanwhile.
	var batch []dynastore.TxAction
	bsize := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		acts := append(batch, dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: guard})
		batch, bsize = nil, 0
		if err := commitActions(l.c, acts); err != nil {
			return err
		}
		return nil
	}
	for _, m := range members {
		if p, _ := memberPos(decodeMember(m.Item)); p >= l.h && p < l.t {
			// An overwrite inside the visible range (LSET): it must be
			// published with the key update. Plans that mix such writes
			// with big pushes do not exist (LMOVE moves one element).
			return nil, fmt.Errorf("commands: list plan too large: %w", dynastore.ErrTxTooLarge)
		}
		batch = append(batch, m)
		bsize += len(m.Item.Get(model.AttrValue).(dynastore.B)) + 64
		if len(batch) == listTxMembers || bsize >= maxTxBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	lc.actions = []dynastore.TxAction{keyUpdate}
	if len(gone) > 0 {
		gen, nh, nt := l.gen, l.nh, l.nt
		lc.cleanup = func() error { return listCleanup(l.c, key, gen, gone, nh, nt) }
	}
	return lc, nil
}

// publish stages a new generation holding what elems yields, at positions
// 0..n-1, and returns the commit that points the key item at it.
func (l *listView) publish(guard dynastore.Cond, elems func(yield func([]byte) error) error) (*listCommit, error) {
	key := model.ItemKey(l.c.DB(), l.key)
	gen, n, err := stageGen(l.c, l.c.Store, model.TypeList, key.PK, l.c.NowMS(), func(yield func(m []byte, v dynastore.Value) error) error {
		var p int64
		return elems(func(e []byte) error {
			err := yield(posMember(p), dynastore.B(bytes.Clone(e)))
			p++
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	it := l.baseItem()
	it.Set(attrGen, dynastore.B(gen))
	it.Set(attrCount, model.NInt(n))
	it.Set(attrListHead, model.NInt(0))
	it.Set(attrListTail, model.NInt(n))
	return &listCommit{
		actions: []dynastore.TxAction{{Op: dynastore.TxPut, Item: it, Cond: guard}, genAliveCheck(gen)},
		after:   it,
	}, nil
}

// listCleanup deletes members that a commit took out of [lh, lt), 99 per
// transaction, each batch checked to be still outside the list (a later
// push may have reused a position: then the member is live again and the
// clean-up stops). It is best effort: leftovers are harmless.
func listCleanup(c *Ctx, key dynastore.Key, gen []byte, gone []int64, nh, nt int64) error {
	var left, right []int64
	for _, p := range gone {
		if p < nh {
			left = append(left, p)
		} else {
			right = append(right, p)
		}
	}
	run := func(ps []int64, isLeft bool) error {
		for len(ps) > 0 {
			n := min(len(ps), listTxMembers)
			batch := ps[:n]
			ps = ps[n:]
			lo, hi := batch[0], batch[0]
			acts := make([]dynastore.TxAction, 0, n+1)
			for _, p := range batch {
				lo, hi = min(lo, p), max(hi, p)
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: memberKey(gen, posMember(p))})
			}
			outside := dynastore.Cond(dynastore.Compare{Attr: attrListHead, Op: dynastore.OpGT, Val: model.NInt(hi)})
			if !isLeft {
				outside = dynastore.Compare{Attr: attrListTail, Op: dynastore.OpLE, Val: model.NInt(lo)}
			}
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: dynastore.And{
				dynastore.Compare{Attr: attrGen, Op: dynastore.OpEQ, Val: dynastore.B(gen)}, outside,
			}})
			if err := commitActions(c, acts); err != nil {
				if errors.Is(err, errCollRetry) {
					return nil
				}
				return err
			}
		}
		return nil
	}
	if err := run(left, true); err != nil {
		return err
	}
	return run(right, false)
}

// commitLists commits the changes of several views in one request or
// transaction (reads are views only read: their key items are checked).
// It returns errCollRetry on a conflict.
func commitLists(c *Ctx, writes []*listView, reads []*listView) error {
	var actions []dynastore.TxAction
	var commits []*listCommit
	seen := map[string]bool{}
	for _, l := range writes {
		lc, err := l.plan()
		if err != nil {
			return err
		}
		seen[string(l.key)] = true
		commits = append(commits, lc)
		actions = append(actions, lc.actions...)
	}
	if len(actions) == 0 {
		return nil
	}
	for _, l := range reads {
		if seen[string(l.key)] || !model.KeyFits(l.key) {
			continue
		}
		seen[string(l.key)] = true
		actions = append(actions, dynastore.TxAction{Op: dynastore.TxCheck, Key: model.ItemKey(c.DB(), l.key), Cond: l.ks.Guard()})
	}
	cache := itemsOf(c)
	if err := commitActions(c, actions); err != nil {
		if errors.Is(err, errCollRetry) {
			for _, l := range writes {
				cache.drop(c.DB(), l.key)
			}
		}
		return err
	}
	for i, l := range writes {
		if len(commits[i].actions) == 0 {
			continue
		}
		cache.putList(c.DB(), l.key, commits[i].after, commits[i].known)
		if commits[i].cleanup != nil {
			// The command's outcome is decided; a failed clean-up only
			// leaves invisible leftovers.
			_ = commits[i].cleanup()
		}
	}
	return nil
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
	if fitsInlineList(lim, vals) && model.KeyFits(key) && !cachedLargeList(c, key) {
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
		_, nw, applied, cur, err := fastUpdate(c, key, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: model.AttrType, Val: dynastore.S(model.TypeList)},
			{Attr: model.AttrValue, Val: val},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}}, inlineFastCond(c.NowMS(), model.TypeList, lim.entries, len(vals), mustExist))
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
	err := collRetry(c, func(try int) error {
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
		if err := l.check(); err != nil {
			return err
		}
		n = 0
		if mustExist && !l.ks.Live {
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
	e, ok := itemsOf(c).get(c.DB(), key)
	if !ok || e.it.Get(attrGen) == nil {
		return false
	}
	ks, err := model.DecodeKey(e.it, c.NowMS())
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
	err := collRetry(c, func(try int) error {
		popped, exists = nil, false
		l, err := openListForWrite(c, c.Args[1], try)
		if err != nil {
			return err
		}
		if err := l.check(); err != nil {
			return err
		}
		exists = l.ks.Live
		if !exists || count == 0 {
			return nil
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
	return l, l.check()
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
	err := collRetry(c, func(int) error {
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
		if !l.large() {
			out = l.elems[from : to+1]
			return nil
		}
		out, err = l.readPositions(l.nh+from, l.nh+to+1)
		if err != nil {
			return err
		}
		if to-from >= 1000 {
			// Several pages are not one snapshot: the key item must not
			// have moved meanwhile.
			return listValidate(c, l)
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	writeBulks(c, out)
}

// listValidate returns errCollRetry if l's key item changed since read.
func listValidate(c *Ctx, ls ...*listView) error {
	for _, l := range ls {
		it, err := listKeyItem(c, l.key)
		if err != nil {
			return err
		}
		if !sameVer(l.ks.Raw, it) {
			return errCollRetry
		}
	}
	return nil
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
	err := collRetry(c, func(int) error {
		v = nil
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		if !l.ks.Live {
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
	err := collRetry(c, func(int) error {
		found, exists = nil, false
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		exists = l.ks.Live
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
		if l.large() && l.length() > 1000 {
			return listValidate(c, l)
		}
		return nil
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
	err := collRetry(c, func(try int) error {
		l, err := openListForWrite(c, c.Args[1], try)
		if err != nil {
			return err
		}
		if err := l.check(); err != nil {
			return err
		}
		if !l.ks.Live {
			return redisError(MsgNoSuchKey)
		}
		if !idxOK {
			return redisError(MsgNotInt)
		}
		i := idx
		if i < 0 {
			i += l.length()
		}
		if i < 0 || i >= l.length() {
			return redisError(MsgOutOfRange)
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
	err := collRetry(c, func(try int) error {
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		reply = 0
		if !l.ks.Live {
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
		if !l.large() {
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
	err := collRetry(c, func(try int) error {
		l, err := readList(c, c.Args[1])
		if err != nil {
			return err
		}
		removed = 0
		if !l.ks.Live {
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
		if !l.large() {
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
	err := collRetry(c, func(try int) error {
		l, err := openListForWrite(c, c.Args[1], try)
		if err != nil {
			return err
		}
		if err := l.check(); err != nil {
			return err
		}
		if !l.ks.Live {
			return nil
		}
		n := l.length()
		from, to, ok := rangeIndexes(start, stop, n)
		if !ok {
			from, to = n, n-1 // everything goes
		}
		if from == 0 && to == n-1 {
			return nil
		}
		l.changed = true
		if !l.large() {
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
	err := collRetry(c, func(try int) error {
		moved = nil
		s, err := openListForWrite(c, src, try)
		if err != nil {
			return err
		}
		if s.wrongType && quiet {
			return nil
		}
		if err := s.check(); err != nil {
			return err
		}
		if !s.ks.Live || s.length() == 0 {
			return nil
		}
		d := s
		if !same {
			if d, err = openListForWrite(c, dst, try); err != nil {
				return err
			}
			if err := d.check(); err != nil {
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
	err := collRetry(c, func(try int) error {
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
			if l.wrongType {
				if quiet {
					continue
				}
				if i == 0 {
					return errCollWrongType
				}
				// The keys before must still be empty when replying.
				if err := listValidate(c, ls[:i+1]...); err != nil {
					return err
				}
				return errCollWrongType
			}
			if !l.ks.Live || l.length() == 0 {
				continue
			}
			vals, err := l.pop(left, count)
			if err != nil {
				return err
			}
			if err := commitLists(c, []*listView{l}, ls[:i]); err != nil {
				return err
			}
			key, popped = l.key, vals
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
