package model

// The pending entries lists of a stream's consumer groups
// (stream_groups.go). A few (pelInlineMax in all the stream's groups) stay
// in the key item with the groups, so a group command on a quiet stream is
// still one write of it. Past that they are items of their own, one per
// pending entry, in a generation of the stream (its key item's xp
// attribute names it; the sweeper's registry knows it like a collection's),
// so a list may grow as long as Redis lets it while DEL, EXPIRE and an
// overwrite stay O(1); once none is pending they go back to the key item
// and the generation to the sweeper. The key item keeps each group's and
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

// The attributes of a pending entry item.
const (
	pelConsumer  = "c"
	pelDelivered = "t"
	pelCount     = "n"
)

// newGroupID is a group incarnation's prefix of its entries' sort keys, so
// a group destroyed and made again does not inherit what is left of the
// old one's entries.
func newGroupID() []byte {
	return binary.BigEndian.AppendUint64(nil, rand.Uint64())
}

func pelSK(gid []byte, id StreamID) []byte {
	return append(append(make([]byte, 0, len(gid)+16), gid...), id.member()...)
}

func (st *streamState) pelKey(g *streamGroup, id StreamID) dynastore.Key {
	return dynastore.Key{PK: MembersPK(st.pelGen), SK: pelSK(g.gid, id)}
}

func (st *streamState) pelItem(g *streamGroup, n *streamNACK) dynastore.Item {
	k := st.pelKey(g, n.id)
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: pelConsumer, Value: dynastore.B(n.consumer)},
		{Name: pelDelivered, Value: NInt(n.delivered)},
		{Name: pelCount, Value: NInt(n.count)},
	}
}

func decodeNACK(it dynastore.Item, gidLen int) (*streamNACK, error) {
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	c, ok := it.Get(pelConsumer).(dynastore.B)
	if len(sk) != gidLen+16 || !ok {
		return nil, fmt.Errorf("model: pending entry: %w", dynastore.ErrInvalid)
	}
	n := &streamNACK{id: idOfMember(sk[gidLen:]), consumer: string(c)}
	var err error
	if n.delivered, err = NumberInt(it.Get(pelDelivered)); err != nil {
		return nil, err
	}
	if n.count, err = NumberInt(it.Get(pelCount)); err != nil {
		return nil, err
	}
	return n, nil
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

// pelFetch reads the pending entries of ids that are not known yet.
func (st *streamState) pelFetch(c Scope, g *streamGroup, ids []StreamID) error {
	var keys []dynastore.Key
	var want []StreamID
	for _, id := range ids {
		if _, ok := g.known[id]; ok {
			continue
		}
		if !st.stored() || id.Cmp(g.top) > 0 {
			g.known[id] = nil
			continue
		}
		g.known[id] = nil // also dedupes ids; set below when found
		keys, want = append(keys, st.pelKey(g, id)), append(want, id)
	}
	items, err := dynastore.GetMany(c, c.Data(), keys)
	if err != nil {
		return err
	}
	for i, it := range items {
		if it == nil {
			continue
		}
		n, err := decodeNACK(it, len(g.gid))
		if err != nil {
			return err
		}
		g.known[want[i]] = n
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
	q := dynastore.Query{PK: MembersPK(st.pelGen), Op: dynastore.SKBetween, A: pelSK(g.gid, from), B: pelSK(g.gid, to), Reverse: rev, Limit: page}
	for {
		p, err := c.Data().Query(c, q)
		if err != nil {
			return err
		}
		for _, it := range p.Items {
			n, err := decodeNACK(it, len(g.gid))
			if err != nil {
				return err
			}
			if k, ok := g.known[n.id]; ok {
				if k == nil {
					continue
				}
				n = k
			} else {
				g.known[n.id] = n
			}
			if !fn(n) {
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
			g.known, g.dirty = map[StreamID]*streamNACK{}, nil
		}
		return nil
	}
	var puts []dynastore.Item
	var dels []dynastore.Key
	for _, g := range st.groups {
		for id := range g.dirty {
			if n := g.known[id]; n != nil {
				puts = append(puts, st.pelItem(g, n))
			} else if !st.newGen {
				dels = append(dels, st.pelKey(g, id))
			}
		}
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
