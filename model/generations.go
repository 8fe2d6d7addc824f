package model

// Generations of large collections (collection.go): their registry (which
// the sweeper walks), how one is staged before it is published, and how its
// members are read page by page.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/redamo/redamo/dynastore"
)

// genRegKey is the registry item of a generation.
func genRegKey(gen []byte) dynastore.Key {
	return dynastore.Key{PK: []byte{nsGens, gen[0] % genShards}, SK: gen}
}

// newGenID returns a fresh random generation id.
func newGenID() []byte {
	g := make([]byte, genIDLen)
	for i := 0; i < genIDLen; i += 8 {
		v := rand.Uint64()
		for j := 0; j < 8; j++ {
			g[i+j] = byte(v >> (8 * j))
		}
	}
	return g
}

// genAliveCheck is the commit-time check that the sweeper has not condemned
// a freshly staged generation (it condemns unpublished ones after its grace).
func genAliveCheck(gen []byte) dynastore.TxAction {
	return dynastore.TxAction{
		Op:   dynastore.TxCheck,
		Key:  genRegKey(gen),
		Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
	}
}

// CollectionRenameActions returns the transaction actions RENAME must add
// when it moves key item it to the key item pk newPK: a large collection's
// registry entry must name its new owner in the same transaction, or the
// sweeper would take the generation for dead.
func CollectionRenameActions(it dynastore.Item, newPK []byte) []dynastore.TxAction {
	var out []dynastore.TxAction
	g, _ := it.Get(AttrGen).(dynastore.B)
	for _, g := range [][]byte{g, pelGenOf(it)} {
		if len(g) == 0 {
			continue
		}
		out = append(out, dynastore.TxAction{
			Op:  dynastore.TxUpdate,
			Key: genRegKey(g),
			Update: &dynastore.Update{Set: []dynastore.SetAction{
				{Attr: attrOwner, Val: dynastore.B(bytes.Clone(newPK))},
			}},
			Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
		})
	}
	return out
}

// CopyCollectionItem returns the key item COPY should write for the
// collection key item src under pk dstPK. A large collection's members are
// copied into a new generation first (O(size) writes, as COPY is O(size) in
// Redis too); the returned actions must join the transaction that writes the
// returned item.
func CopyCollectionItem(ctx context.Context, st dynastore.Store, src dynastore.Item, dstPK []byte, nowMS int64) (dynastore.Item, []dynastore.TxAction, error) {
	out := src.Clone(0)
	out.Set(dynastore.AttrPK, dynastore.B(bytes.Clone(dstPK)))
	out.Set(dynastore.AttrSK, dynastore.B(KeyItemSK))
	out.Set(AttrVer, NewVer())
	renewStreamWatch(&out)
	var checks []dynastore.TxAction
	if pg := pelGenOf(src); pg != nil {
		gen, err := copyPELGen(ctx, st, pg, dstPK, nowMS)
		if err != nil {
			return nil, nil, err
		}
		out.Set(attrStreamPEL, dynastore.B(gen))
		checks = append(checks, genAliveCheck(gen))
	}
	g, ok := src.Get(AttrGen).(dynastore.B)
	if !ok {
		return out, checks, nil
	}
	if src.Has(AttrPending) {
		if err := rollForward(ctx, st, src.Key(), src); err != nil {
			return nil, nil, err
		}
		out.Delete(AttrPending)
	}
	typ, _ := src.Get(AttrType).(dynastore.S)
	copyRef := func(m []byte) (dynastore.Value, error) {
		ref, check, err := copyMemberRef(ctx, baseOf(st), nowMS, dstPK, m)
		if check != nil {
			checks = append(checks, *check)
		}
		return ref, err
	}
	gen, _, err := stageGen(ctx, st, string(typ), dstPK, nowMS, copyRef, func(yield func(m []byte, v dynastore.Value) error) error {
		return eachMember(ctx, st, g, func(m []byte, v dynastore.Value) error {
			v, check, err := copyFieldValue(ctx, baseOf(st), nowMS, dstPK, m, v)
			if err != nil {
				return err
			}
			if check != nil {
				checks = append(checks, *check)
			}
			return yield(m, v)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	out.Set(AttrGen, dynastore.B(gen))
	return out, append(checks, genAliveCheck(gen)), nil
}

// stageGen registers a new generation owned by ownerPK and writes the
// entries entries yields into it, big members with the reference refs
// gives them (nil: none is big). Nothing references it yet: the caller
// publishes it with a transaction that includes genAliveCheck(gen).
func stageGen(ctx context.Context, st dynastore.Store, typ string, ownerPK []byte, nowMS int64, refs func(m []byte) (dynastore.Value, error), entries func(yield func(m []byte, v dynastore.Value) error) error) ([]byte, int64, error) {
	// Inside a transaction (EXEC) the generation is staged in the
	// store itself: nobody sees it until the transaction's commit
	// publishes it, and one that is never published is garbage the
	// sweeper collects. Buffered, a big SADD would make the commit
	// exceed DynamoDB's transaction limits.
	st = baseOf(st)
	gen := newGenID()
	reg := genRegKey(gen)
	_, err := st.Put(ctx, dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(reg.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(reg.SK)},
		{Name: attrOwner, Value: dynastore.B(bytes.Clone(ownerPK))},
		{Name: attrCreated, Value: NInt(nowMS)},
	}, dynastore.WriteOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("registering generation: %w", err)
	}
	var (
		n     int64
		batch []dynastore.TxAction
		size  int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := st.Transact(ctx, batch); err != nil {
			return fmt.Errorf("staging members: %w", err)
		}
		batch, size = batch[:0], 0
		return nil
	}
	err = entries(func(m []byte, v dynastore.Value) error {
		var ref dynastore.Value
		if refs != nil {
			var err error
			if ref, err = refs(m); err != nil {
				return err
			}
		}
		items := []dynastore.Item{memberItem(gen, m, v, ref)}
		if o := orderItem(typ, gen, m, v, ref); o != nil {
			items = append(items, o)
		}
		sz := len(items) * (memberCost(m) + storedSize(v) + 64)
		if len(batch)+len(items) > dynastore.MaxTxActions || size+sz > maxTxBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		for _, it := range items {
			batch = append(batch, dynastore.TxAction{Op: dynastore.TxPut, Item: it})
		}
		size += sz
		n++
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return nil, 0, err
	}
	return gen, n, nil
}

// eachMember pages through a generation's members.
func eachMember(ctx context.Context, st dynastore.Store, gen []byte, fn func(m []byte, v dynastore.Value) error) error {
	return eachMemberPaged(ctx, st, gen, nil, fn, nil, nil)
}

// eachMemberPaged is eachMember starting from first, the first page when
// it was already read (nil: read it), that also calls nextPage (when not
// nil) before it reads any page after the first.
func eachMemberPaged(ctx context.Context, st dynastore.Store, gen []byte, first *dynastore.QueryPage, fn func(m []byte, v dynastore.Value) error, nextPage func(), saw func(dynastore.Item)) error {
	return eachMemberItem(ctx, st, gen, first, func(it dynastore.Item) error {
		if saw != nil {
			saw(it)
		}
		m, err := loadMember(ctx, st, it, decodeMember(it))
		if err != nil {
			return err
		}
		return fn(m, it.Get(AttrValue))
	}, nextPage)
}

// eachMemberItem pages through a generation's member items, as
// eachMemberPaged, without decoding them.
func eachMemberItem(ctx context.Context, st dynastore.Store, gen []byte, first *dynastore.QueryPage, fn func(it dynastore.Item) error, nextPage func()) error {
	var after []byte
	for {
		var page dynastore.QueryPage
		var err error
		if first != nil {
			page, first = *first, nil
		} else {
			page, err = st.Query(ctx, membersPageQuery(gen, after))
		}
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		if nextPage != nil {
			nextPage()
		}
		after = page.Next
	}
}

// membersPageQuery is the query of the page of gen's members that follows
// the sort key after (nil: the first page).
func membersPageQuery(gen, after []byte) dynastore.Query {
	return dynastore.Query{PK: MembersPK(gen), Op: dynastore.SKLT, A: memberSKEnd, After: after, Limit: MemberPageItems}
}

// pageAhead is the first page of a large collection's members, read at the
// same time as its key item: the generation cache names the partition, and
// the page is used only if the key item read holds that generation. A
// generation belongs to one collection for its whole life (largeGen), so
// the page is then that collection's members at a moment within the
// command, as the page read after the key item would be; the command waits
// one round trip instead of two.
type pageAhead struct {
	gen  []byte
	done chan struct{}
	page dynastore.QueryPage
	err  error
}

// startPageAhead starts reading the first page of key's members when the
// generation cache knows key as a large collection of type typ, and the
// command reads the store itself (a transaction's buffer is not for
// concurrent use). It returns nil otherwise.
func startPageAhead(c Scope, key []byte, typ string) *pageAhead {
	lg := cachedLarge(c, key, typ)
	if _, inTx := c.Data().(*Txn); lg == nil || inTx {
		return nil
	}
	p := &pageAhead{gen: lg.Gen, done: make(chan struct{})}
	// Every path waits for the page (take) before the command returns:
	// the scope is not used after that.
	st := c.Data()
	go func() {
		defer close(p.done)
		p.page, p.err = st.Query(c, membersPageQuery(p.gen, nil))
	}()
	return p
}

// take waits for the page and returns it when cl, as read, is the
// collection it was read from (nil otherwise, and when p is nil).
func (p *pageAhead) take(cl *Collection) *dynastore.QueryPage {
	if p == nil {
		return nil
	}
	<-p.done
	if p.err != nil || cl == nil || cl.rolled || !cl.Large() || !bytes.Equal(cl.Gen, p.gen) {
		return nil
	}
	return &p.page
}

// baseOf is the store under a unit of work's buffer, or st itself.
func baseOf(st dynastore.Store) dynastore.Store {
	if txn, ok := st.(*Txn); ok {
		return txn.Base()
	}
	return st
}
