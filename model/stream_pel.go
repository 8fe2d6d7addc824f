package model

// The pending entries lists of a stream's consumer groups
// (stream_groups.go). A few (pelInlineMax in all the stream's groups) stay
// in the key item with the groups, so a group command on a quiet stream is
// still one write of it. Past that they are kept in pages, items of
// about pelPageSize entries each, in a generation of the stream (its key
// item's xp attribute names it; the sweeper's registry knows it like a
// collection's), so a list may grow as long as Redis lets it while DEL,
// EXPIRE and an overwrite stay O(1), and a command that changes a few
// entries rewrites the page or two that hold them; once none is pending
// they go back to the key item and the generation to the sweeper.
//
// A page's sort key is its group's incarnation and an id, its low bound:
// an entry is in the page with the greatest low bound not above its id,
// which one reverse query from the id finds, and which holds every id from
// that bound up to the id (pelLocate). A group's first page has the
// bound 0-0; entries past every id ever pending, enough of them, make a
// page of their own bounded by the first; a page that grows past
// pelPageMax is split into pages of pelPageSize, each bounded by its first
// id; one that shrinks merges into the page below; an emptied page is
// deleted.
// An item of one entry (c, t, n attributes), as entries were once kept,
// reads as a page of that entry bounded by its id. The key item keeps each group's and
// consumer's pending counts (XPENDING's summary, XINFO) and the greatest
// id ever made pending (top), above which no entry needs a read to be
// known absent.
//
// Every change of pending entries joins, in one transaction, the write of
// the key item guarded by its ver as read, so the items change only with
// the counts and group state that describe them, whatever instance writes.
// A transaction holds at most pelTxBudget of them, so a command that
// changes more (XREADGROUP with a large COUNT, XACK of many ids, XCLAIM,
// XAUTOCLAIM, DELCONSUMER) commits in steps, each a consistent state. A
// new generation is invisible until the commit that publishes it, so the
// entries moving into it are written ahead of that commit, whatever their
// number (a RESTORE, a list that outgrows the key item).

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/redamo/redamo/dynastore"
)

// attrStreamPEL is the key item attribute naming the pending entries'
// generation.
const attrStreamPEL = "xp"

// pelInlineMax is how many pending entries a stream keeps in its key item
// before they move to items: enough for a group's usual batches, few
// enough that a write of the key item stays about a kilobyte.
const pelInlineMax = 64

// pelTxBudget is how many pending entries one commit may change: the rest
// of a transaction is the key item and a check.
const pelTxBudget = dynastore.MaxTxActions - 2

// The attributes of a pending entry item of one entry, as entries were
// once kept (read, never written).
const (
	pelConsumer  = "c"
	pelDelivered = "t"
	pelCount     = "n"
)

// pelEntries ("e", B) is a page's entries: per entry its id (ms, seq),
// delivery time and count as uvarints, then its consumer as a uvarint
// length and bytes.
const pelEntries = "e"

// pelPageSize is how many entries a page holds after a split, and
// pelPageMax how many it may hold before one: a page's write stays a
// few kilobytes with the usual consumer names.
const (
	pelPageSize = 32
	pelPageMax  = 2 * pelPageSize
)

// pelPageBytes bounds the consumer names a page holds, so that a page of
// long names stays far under an item (a name may be up to what the key
// item's groups hold).
const pelPageBytes = 64 << 10

// newGroupID is a group incarnation's prefix of its entries' sort keys, so
// a group destroyed and made again does not inherit what is left of the
// old one's entries.
func newGroupID() []byte {
	return binary.BigEndian.AppendUint64(nil, rand.Uint64())
}

func pelSK(gid []byte, id StreamID) []byte {
	return append(append(make([]byte, 0, len(gid)+16), gid...), id.member()...)
}

func (st *streamState) pelKey(g *streamGroup, lo StreamID) dynastore.Key {
	return dynastore.Key{PK: MembersPK(st.pelGen), SK: pelSK(g.gid, lo)}
}

// pageItem is the page bounded by lo holding ns.
func (st *streamState) pageItem(g *streamGroup, lo StreamID, ns []*streamNACK) dynastore.Item {
	k := st.pelKey(g, lo)
	var b []byte
	for _, n := range ns {
		for _, v := range []uint64{n.id.Ms, n.id.Seq, uint64(n.delivered), uint64(n.count), uint64(len(n.consumer))} {
			b = binary.AppendUvarint(b, v)
		}
		b = append(b, n.consumer...)
	}
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: pelEntries, Value: dynastore.B(b)},
	}
}

// decodePage is a page item's bound and entries.
func decodePage(it dynastore.Item, gidLen int) (StreamID, []*streamNACK, error) {
	bad := fmt.Errorf("model: pending entries page: %w", dynastore.ErrInvalid)
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	if len(sk) != gidLen+16 {
		return StreamID{}, nil, bad
	}
	lo := idOfMember(sk[gidLen:])
	if c, ok := it.Get(pelConsumer).(dynastore.B); ok {
		// One entry, as entries were once kept.
		n := &streamNACK{id: lo, consumer: string(c)}
		var err error
		if n.delivered, err = NumberInt(it.Get(pelDelivered)); err != nil {
			return lo, nil, err
		}
		if n.count, err = NumberInt(it.Get(pelCount)); err != nil {
			return lo, nil, err
		}
		return lo, []*streamNACK{n}, nil
	}
	b, ok := it.Get(pelEntries).(dynastore.B)
	if !ok {
		return lo, nil, bad
	}
	var ns []*streamNACK
	for len(b) > 0 {
		var v [5]uint64
		for i := range v {
			x, k := binary.Uvarint(b)
			if k <= 0 {
				return lo, nil, bad
			}
			v[i], b = x, b[k:]
		}
		if uint64(len(b)) < v[4] {
			return lo, nil, bad
		}
		ns = append(ns, &streamNACK{id: StreamID{v[0], v[1]}, delivered: int64(v[2]), count: int64(v[3]), consumer: string(b[:v[4]])})
		b = b[v[4]:]
	}
	return lo, ns, nil
}

// notePage records a page read: its entries become known unless this
// operation knows them already (then its own state wins).
func (g *streamGroup) notePage(lo StreamID, ns []*streamNACK) {
	if _, ok := g.pages[lo]; ok {
		return
	}
	if g.pages == nil {
		g.pages, g.pageOf, g.below = map[StreamID][]StreamID{}, map[StreamID]StreamID{}, map[StreamID]StreamID{}
	}
	if ns == nil {
		g.pages[lo] = nil // no such page
		return
	}
	ids := make([]StreamID, len(ns))
	for i, n := range ns {
		ids[i] = n.id
		g.pageOf[n.id] = lo
		if _, ok := g.known[n.id]; !ok {
			g.known[n.id] = n
		}
	}
	g.pages[lo] = ids
}

// notePages records pages read, in the order of the query that read them
// (rev: descending), and which page is just below which; their bounds.
func (g *streamGroup) notePages(items []dynastore.Item, rev bool) ([]StreamID, [][]*streamNACK, error) {
	los := make([]StreamID, len(items))
	nss := make([][]*streamNACK, len(items))
	for i, it := range items {
		lo, ns, err := decodePage(it, len(g.gid))
		if err != nil {
			return nil, nil, err
		}
		g.notePage(lo, ns)
		los[i], nss[i] = lo, ns
		if i > 0 && rev {
			g.below[los[i-1]] = lo
		} else if i > 0 {
			g.below[lo] = los[i-1]
		}
	}
	return los, nss, nil
}

// pelLocate finds the pages of ids not located yet, reading each: one
// reverse query per page, from the greatest id left, whose answer holds
// every id down to its bound (and the page below it, which a page that
// shrinks may merge into). Ids below every page go to a new first page
// (bound 0-0).
func (st *streamState) pelLocate(c Scope, g *streamGroup, ids []StreamID) error {
	var left []StreamID
	for _, id := range ids {
		if _, ok := g.pageOf[id]; !ok {
			left = append(left, id)
		}
	}
	slices.SortFunc(left, func(a, b StreamID) int { return b.Cmp(a) })
	for len(left) > 0 {
		p, err := c.Data().Query(c, dynastore.Query{PK: MembersPK(st.pelGen), Op: dynastore.SKBetween, A: pelSK(g.gid, StreamID{}), B: pelSK(g.gid, left[0]), Reverse: true, Limit: 2})
		if err != nil {
			return err
		}
		var lo StreamID
		if len(p.Items) == 0 {
			g.notePage(lo, nil)
		} else {
			los, _, err := g.notePages(p.Items, true)
			if err != nil {
				return err
			}
			lo = los[0]
		}
		for len(left) > 0 && left[0].Cmp(lo) >= 0 {
			g.pageOf[left[0]] = lo
			left = left[1:]
		}
	}
	return nil
}

// stored reports whether the group's entries are read from the store:
// not when there is no generation yet or this operation made it (every
// entry is then known).
func (st *streamState) stored() bool { return st.pelGen != nil && !st.newGen }

func (g *streamGroup) consumerNamed(name string) *streamConsumer {
	if i, ok := g.consumerAt(name); ok {
		return g.consumers[i]
	}
	return nil
}

// pelFetch reads the pending entries of ids that are not known yet: the
// pages that hold them.
func (st *streamState) pelFetch(c Scope, g *streamGroup, ids []StreamID) error {
	var want []StreamID
	for _, id := range ids {
		if _, ok := g.known[id]; ok {
			continue
		}
		if !st.stored() || id.Cmp(g.top) > 0 {
			g.known[id] = nil
			g.fresh = append(g.fresh, id)
			continue
		}
		want = append(want, id)
	}
	if len(want) == 0 {
		return nil
	}
	if err := st.pelLocate(c, g, want); err != nil {
		return err
	}
	for _, id := range want {
		if _, ok := g.known[id]; !ok {
			g.known[id] = nil // not in its page
		}
	}
	return nil
}

func (g *streamGroup) touch(id StreamID) {
	if g.dirty == nil {
		g.dirty = map[StreamID]bool{}
	}
	g.dirty[id] = true
}

// pelSet makes n (known or new) pending for consumer, keeping the counts.
func (g *streamGroup) pelSet(n *streamNACK, consumer string) {
	if old := g.known[n.id]; old != nil {
		if cs := g.consumerNamed(old.consumer); cs != nil {
			cs.pending--
		}
	} else {
		g.pending++
	}
	n.consumer = consumer
	if cs := g.consumerNamed(consumer); cs != nil {
		cs.pending++
	}
	g.known[n.id] = n
	if n.id.Cmp(g.top) > 0 {
		g.top = n.id
	}
	g.touch(n.id)
}

// pelRemove removes the known pending entry id: whether there was one.
func (g *streamGroup) pelRemove(id StreamID) bool {
	n := g.known[id]
	if n == nil {
		return false
	}
	if cs := g.consumerNamed(n.consumer); cs != nil {
		cs.pending--
	}
	g.pending--
	g.known[id] = nil
	g.touch(id)
	return true
}

// pelScan calls fn with the group's pending entries from from to to
// (backwards when rev) until it returns false; page is a page size hint
// (0: none). An entry this operation changed is seen as changed; one it
// added is not seen (every operation scans before it adds).
func (st *streamState) pelScan(c Scope, g *streamGroup, from, to StreamID, rev bool, page int, fn func(n *streamNACK) bool) error {
	if !st.stored() {
		var ns []*streamNACK
		for _, n := range g.known {
			if n != nil && n.id.Cmp(from) >= 0 && n.id.Cmp(to) <= 0 {
				ns = append(ns, n)
			}
		}
		slices.SortFunc(ns, func(a, b *streamNACK) int { return a.id.Cmp(b.id) })
		if rev {
			slices.Reverse(ns)
		}
		for _, n := range ns {
			if !fn(n) {
				return nil
			}
		}
		return nil
	}
	if from.Cmp(to) > 0 {
		return nil
	}
	// The pages bounded up to to, down from to (rev) or up from the one
	// holding from.
	q := dynastore.Query{PK: MembersPK(st.pelGen), Op: dynastore.SKBetween, A: pelSK(g.gid, StreamID{}), B: pelSK(g.gid, to), Reverse: true}
	if page > 0 {
		q.Limit = page/pelPageSize + 2
	}
	if !rev && from != (StreamID{}) {
		p, err := c.Data().Query(c, dynastore.Query{PK: q.PK, Op: dynastore.SKBetween, A: q.A, B: pelSK(g.gid, from), Reverse: true, Limit: 1})
		if err != nil {
			return err
		}
		if len(p.Items) > 0 {
			q.A = p.Items[0].Key().SK
		}
	}
	q.Reverse = rev
	for {
		p, err := c.Data().Query(c, q)
		if err != nil {
			return err
		}
		los, nss, err := g.notePages(p.Items, rev)
		if err != nil {
			return err
		}
		for i, lo := range los {
			ns := nss[i]
			if rev {
				slices.Reverse(ns)
			}
			for _, n := range ns {
				if n.id.Cmp(from) < 0 || n.id.Cmp(to) > 0 {
					continue
				}
				if k := g.known[n.id]; k == nil {
					continue
				} else if !fn(k) {
					return nil
				}
			}
			if rev && lo.Cmp(from) <= 0 {
				return nil
			}
		}
		if p.Next == nil {
			return nil
		}
		q.After = p.Next
	}
}

// pelChanges is how many pending entries this operation changed.
func (st *streamState) pelChanges() int {
	n := 0
	for _, g := range st.groups {
		n += len(g.dirty)
	}
	return n
}

// stagePEL decides where the pending entries go and joins their writes to
// cl's commit: inline in the key item while they are few (the encoded
// groups carry them); past pelInlineMax into a new generation, every one
// written ahead of the commit that publishes it; in a published
// generation, in the commit's transaction; and back inline, the generation
// left to the sweeper, once none is pending.
func (st *streamState) stagePEL(c Scope, cl *Collection) error {
	cl.Extra = nil
	var total int64
	for _, g := range st.groups {
		total += g.pending
	}
	if st.pelGen == nil {
		if total <= pelInlineMax {
			return nil
		}
		if err := st.makePELGen(c, cl); err != nil {
			return err
		}
		for _, g := range st.groups {
			for id, n := range g.known {
				if n != nil {
					g.touch(id)
				}
			}
		}
	}
	if st.stored() && total == 0 && st.pelChanges() > 0 {
		st.pelGen, st.genDropped = nil, true
		for _, g := range st.groups {
			g.known, g.dirty, g.pages, g.pageOf = map[StreamID]*streamNACK{}, nil, nil, nil
		}
		return nil
	}
	var puts []dynastore.Item
	var dels []dynastore.Key
	for _, g := range st.groups {
		p, d, err := st.pageWrites(c, g)
		if err != nil {
			return err
		}
		puts, dels = append(puts, p...), append(dels, d...)
	}
	if st.newGen {
		store := c.Data()
		if txn, ok := store.(*Txn); ok {
			store = txn.Base()
		}
		if err := dynastore.BatchWrite(c, store, puts, nil); err != nil {
			return fmt.Errorf("model: writing pending entries: %w", err)
		}
		cl.Extra = []dynastore.TxAction{genAliveCheck(st.pelGen)}
		return nil
	}
	if len(puts)+len(dels) > pelTxBudget {
		return fmt.Errorf("model: %d pending entries in one commit: %w", len(puts)+len(dels), dynastore.ErrTxTooLarge)
	}
	for _, it := range puts {
		cl.Extra = append(cl.Extra, dynastore.TxAction{Op: dynastore.TxPut, Item: it})
	}
	for _, k := range dels {
		cl.Extra = append(cl.Extra, dynastore.TxAction{Op: dynastore.TxDelete, Key: k})
	}
	return nil
}

// pageWrites are the writes of the pages of g's changed entries: every
// entry into new pages when this operation made the generation; else each
// page that holds a changed entry rewritten, split when it grew past
// pelPageMax, merged into the page below when it shrank, deleted when
// emptied.
func (st *streamState) pageWrites(c Scope, g *streamGroup) (puts []dynastore.Item, dels []dynastore.Key, err error) {
	if len(g.dirty) == 0 {
		return nil, nil, nil
	}
	if st.newGen {
		return st.paged(g, StreamID{}, g.inlineEntries()), nil, nil
	}
	ids := make([]StreamID, 0, len(g.dirty))
	for id := range g.dirty {
		ids = append(ids, id)
	}
	// Enough entries past every page (a delivery's) make a page of their
	// own, bounded by the first: the last page need not be read.
	var fresh []StreamID
	for _, id := range g.fresh {
		if g.dirty[id] && g.known[id] != nil && !slices.Contains(fresh, id) {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) >= pelPageSize/4 {
		slices.SortFunc(fresh, StreamID.Cmp)
		g.notePage(fresh[0], nil)
		for _, id := range fresh {
			g.pageOf[id] = fresh[0]
		}
	}
	if err := st.pelLocate(c, g, ids); err != nil {
		return nil, nil, err
	}
	changed := map[StreamID][]StreamID{}
	for _, id := range ids {
		lo := g.pageOf[id]
		changed[lo] = append(changed[lo], id)
	}
	pages := map[StreamID][]*streamNACK{}
	var los []StreamID
	for lo, added := range changed {
		pages[lo] = g.pageEntries(lo, added)
		los = append(los, lo)
	}
	// A page that shrank below a quarter merges into the page just below
	// it when both fit one; downwards, so that merges chain.
	slices.SortFunc(los, func(a, b StreamID) int { return b.Cmp(a) })
	for _, lo := range los {
		ns := pages[lo]
		l, ok := g.below[lo]
		if len(ns) == 0 || len(ns) >= pelPageSize/4 || !ok {
			continue
		}
		lns, ok := pages[l]
		if !ok {
			lns = g.pageEntries(l, nil)
		}
		if len(lns) == 0 || len(lns)+len(ns) > pelPageSize {
			continue
		}
		pages[l], pages[lo] = append(slices.Clone(lns), ns...), nil
	}
	for lo, ns := range pages {
		if len(ns) == 0 {
			if g.pages[lo] != nil {
				dels = append(dels, st.pelKey(g, lo))
			}
			continue
		}
		puts = append(puts, st.paged(g, lo, ns)...)
	}
	return puts, dels, nil
}

// pageEntries are the entries of the page bounded by lo after this
// operation: those it held as read and the ids added to it that are
// pending, sorted.
func (g *streamGroup) pageEntries(lo StreamID, added []StreamID) []*streamNACK {
	var ns []*streamNACK
	seen := map[StreamID]bool{}
	for _, id := range append(slices.Clone(g.pages[lo]), added...) {
		if n := g.known[id]; n != nil && !seen[id] {
			seen[id] = true
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(a, b *streamNACK) int { return a.id.Cmp(b.id) })
	return ns
}

// paged are the pages of entries ns (sorted), the first bounded by lo:
// one, or, past pelPageMax entries or pelPageBytes of consumer names,
// pages of pelPageSize entries or half those bytes (long names).
func (st *streamState) paged(g *streamGroup, lo StreamID, ns []*streamNACK) []dynastore.Item {
	names := 0
	for _, n := range ns {
		names += len(n.consumer)
	}
	if len(ns) <= pelPageMax && names <= pelPageBytes {
		return []dynastore.Item{st.pageItem(g, lo, ns)}
	}
	var out []dynastore.Item
	for i := 0; i < len(ns); {
		j, size := i+1, len(ns[i].consumer)
		for j < len(ns) && j-i < pelPageSize && size+len(ns[j].consumer) <= pelPageBytes/2 {
			size += len(ns[j].consumer)
			j++
		}
		bound := ns[i].id
		if i == 0 {
			bound = lo
		}
		out = append(out, st.pageItem(g, bound, ns[i:j]))
		i = j
	}
	return out
}

// encodeGroups is st's groups attribute, with the entries while inline.
func (st *streamState) encodeGroups() dynastore.B {
	return encodeGroups(st.groups, st.pelGen == nil)
}

// makePELGen gives the stream a new generation for its pending entries,
// published by the commit that follows.
func (st *streamState) makePELGen(c Scope, cl *Collection) error {
	gen, _, err := stageGen(c, c.Data(), TypeStream, ItemKey(c.DB(), cl.Key).PK, c.NowMS(), nil, func(func([]byte, dynastore.Value) error) error { return nil })
	if err != nil {
		return err
	}
	st.pelGen, st.newGen = gen, true
	return nil
}

// dropGroupEntries deletes what is left of a destroyed group's entries.
// A failure only leaves items no group reads, gone with the generation.
func (st *streamState) dropGroupEntries(c Scope, g *streamGroup) {
	if !st.stored() || inTx(c) {
		return
	}
	q := dynastore.Query{PK: MembersPK(st.pelGen), Op: dynastore.SKBeginsWith, A: g.gid, Limit: 1000}
	store := c.Data()
	if txn, ok := store.(*Txn); ok {
		store = txn.Base()
	}
	for {
		p, err := store.Query(c, q)
		if err != nil || len(p.Items) == 0 {
			return
		}
		keys := make([]dynastore.Key, len(p.Items))
		for i, it := range p.Items {
			keys[i] = it.Key()
		}
		if dynastore.BatchWrite(c, store, nil, keys) != nil || p.Next == nil {
			return
		}
		q.After = p.Next
	}
}

// pelGenOf is the pending entries' generation a key item names (nil: none).
func pelGenOf(it dynastore.Item) []byte {
	g, _ := it.Get(attrStreamPEL).(dynastore.B)
	if len(g) == 0 {
		return nil
	}
	return g
}

// copyPELGen copies the pending entries of generation src into a new one
// owned by ownerPK (COPY), not yet published.
func copyPELGen(ctx context.Context, st dynastore.Store, src, ownerPK []byte, nowMS int64) ([]byte, error) {
	gen, _, err := stageGen(ctx, st, TypeStream, ownerPK, nowMS, nil, func(func([]byte, dynastore.Value) error) error { return nil })
	if err != nil {
		return nil, err
	}
	if txn, ok := st.(*Txn); ok {
		st = txn.Base()
	}
	q := dynastore.Query{PK: MembersPK(src)}
	for {
		p, err := st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		puts := make([]dynastore.Item, len(p.Items))
		for i, it := range p.Items {
			puts[i] = it.Clone(0)
			puts[i].Set(dynastore.AttrPK, dynastore.B(MembersPK(gen)))
		}
		if err := dynastore.BatchWrite(ctx, st, puts, nil); err != nil {
			return nil, err
		}
		if p.Next == nil {
			return gen, nil
		}
		q.After = p.Next
	}
}
