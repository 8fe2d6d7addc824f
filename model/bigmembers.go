package model

// Big members: a set member, sorted-set member or hash field name too big
// for its member item is kept as a big hash field value is (bigfields.go),
// in chunks of a generation of its own registered to the collection's key
// item and the member's sort key, and its items hold a reference to them:
//
//	member item   sk 0x01+sha256(member) as for any long member (MemberSK);
//	              m the reference {g, bv} in place of the member's bytes;
//	              bm the chunk generation, top-level, for conditions
//	order item    (a sorted set's) m the same reference
//	key item      bf (N 1) once the collection has held a big member
//
// A member's identity is its digest sort key, so a lookup (SISMEMBER,
// ZSCORE, HGET, SREM) reads only the member item and never the chunks: it
// takes the member for present when the reference's size and checksum are
// the member's. A read that returns members (SMEMBERS, ZRANGE, HKEYS,
// SPOP, SSCAN) reads their chunks (memberOf).
//
// The engine stages the chunks when it plans a commit that puts a member
// it has not read from the same key (memberRef), and the commit checks
// that the sweeper has not condemned any chunk generation it refers to,
// so a member appears whole or not at all. A member the collection
// already holds keeps its chunks when its item is rewritten (a new score,
// a new field value, a rebuild into a new generation); one that moves to
// another key (SMOVE, *STORE, COPY) is staged again for it. The sweeper
// keeps the chunks while the member item in the key's generation refers
// to them (fieldOwnerChecks); RENAME and MOVE renew the registry owners as
// for big field values (bigFieldRenameActions).

import (
	"bytes"
	"context"
	"hash/crc32"

	"github.com/redamo/redamo/dynastore"
)

// attrBigMember ("bm") is, on a member item of a big member, its chunk
// generation.
const attrBigMember = "bm"

// maxItemMember is the longest member kept in its items: with the rest of
// the item (a sorted set's order item has a sort key of up to 1 KB, a
// hash's value is a reference when it would not fit) it stays under
// DynamoDB's item limit.
const maxItemMember = dynastore.MaxItemSize - 8*bigItemRoom

// bigMember reports whether member m is kept in chunks.
func bigMember(m []byte) bool { return len(m) > maxItemMember }

// memberCost is about what member m adds to an item holding it.
func memberCost(m []byte) int {
	if bigMember(m) {
		return 128
	}
	return len(m)
}

// isMember reports whether the member item it (nil: none) is member m's:
// a big member's reference must have m's size and checksum (its digest
// sort key matched already).
func isMember(it dynastore.Item, m []byte) bool {
	if it == nil {
		return false
	}
	if h, ok := refOf(it.Get(attrMember)); ok {
		return h.size == int64(len(m)) && h.sum == crc32.Checksum(m, castagnoli)
	}
	return bytes.Equal(decodeMember(it), m)
}

// loadMember returns the member of a member or order item, decoded the
// item's way as decoded: read from its chunks when it is big.
func loadMember(ctx context.Context, st dynastore.Store, it dynastore.Item, decoded []byte) ([]byte, error) {
	h, ok := refOf(it.Get(attrMember))
	if !ok {
		return decoded, nil
	}
	return readBig(ctx, baseOf(st), h, 0, h.size)
}

// noteRef remembers the reference of a big member the collection holds,
// read from its member or order item it, sk its member sort key, so
// rewriting the member keeps its chunks.
func (cl *Collection) noteRef(sk []byte, it dynastore.Item) {
	r := it.Get(attrMember)
	if _, ok := refOf(r); !ok {
		return
	}
	if cl.memberRefs == nil {
		cl.memberRefs = map[string]dynastore.Value{}
	}
	cl.memberRefs[string(sk)] = r
}

// memberRef is the reference the items of member m (nil when not big) hold
// in a commit of cl: the one the collection holds it with, or chunks
// staged now. Each reference's check that it is alive joins the commit.
func (cl *Collection) memberRef(m []byte) (dynastore.Value, error) {
	if !bigMember(m) {
		return nil, nil
	}
	sk := string(MemberSK(m))
	if cl.memberRefs == nil {
		cl.memberRefs = map[string]dynastore.Value{}
	}
	r, ok := cl.memberRefs[sk]
	if !ok {
		h, err := stageField(cl.c, baseStore(cl.c), cl.c.NowMS(), KeyPK(cl.c.DB(), cl.Key), m, m)
		if err != nil {
			return nil, err
		}
		r = bigRef(h)
		cl.memberRefs[sk] = r
		cl.staged = append(cl.staged, h)
	}
	if cl.checked == nil {
		cl.checked = map[string]bool{}
	}
	if !cl.checked[sk] {
		cl.checked[sk] = true
		h, _ := refOf(r)
		cl.checks = append(cl.checks, genAliveCheck(h.gen))
	}
	return r, nil
}

// markBigMembers notes on the key item that the collection holds big
// members, before a commit that puts one is planned.
func (cl *Collection) markBigMembers() {
	for m := range cl.puts {
		if len(m) > maxItemMember {
			cl.SetKeyAttr(attrBigFields, NInt(1))
			return
		}
	}
}

// discardStaged deletes the chunks the collection staged for a commit
// that certainly did not publish them, best effort (the sweeper deletes
// what it leaves).
func (cl *Collection) discardStaged() {
	for _, h := range cl.staged {
		discardBig(cl.c, h)
	}
	cl.staged = nil
}

// copyMemberRef is the reference of member m (nil when not big) as COPY
// writes it under the key item pk ownerPK: its chunks staged again for the
// new owner, with the check its commit must carry.
func copyMemberRef(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, m []byte) (dynastore.Value, *dynastore.TxAction, error) {
	if !bigMember(m) {
		return nil, nil, nil
	}
	return stageFieldRef(ctx, st, nowMS, ownerPK, m, m)
}
