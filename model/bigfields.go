package model

// Big hash field values: a value whose member item would not fit one item
// is kept as a big string's is (bigvalue.go), in chunks of a generation of
// its own, and the field's member item holds a reference to them:
//
//	member item   v M{g: the chunk generation, bv: its bigHeader}; bg the
//	              chunk generation again, top-level, for conditions
//	registry      the chunk generation's entry: o the hash's key item pk,
//	              os the field's member sort key, bc the chunk count
//	key item      bf (N 1) once the hash has held a big value
//
// A write stages the chunks first (nothing refers to them yet), then puts
// the reference through the collection engine like any value, with a check
// that the sweeper has not condemned the chunks (genAliveCheck) in the
// commit. So the value appears whole or not at all, in MULTI and scripts
// too, where the chunks are written at once and the commit joins the
// unit's.
//
// The chunks live while the member item of their field in the generation
// the hash's key item names refers to them (Sweeper.visit). A value that
// was overwritten or deleted, or whose hash was, is swept after the grace,
// so a reader that found the reference on any instance still reads every
// chunk, and only those of the value it found. A hash rebuilt into a new
// generation under the same key keeps its references; COPY copies the
// chunks (O(size), as Redis's COPY is), and RENAME and MOVE make the
// registry entries name the new key in their transaction, which is why the
// key item remembers that it held big values (bf).
//
// Commands that need a value's length (HSTRLEN, HEXISTS, OBJECT ENCODING)
// read only the reference.
//
// List elements are kept the same way (see bigElems below); for them the
// chunks also die once their position leaves the list's range (a pop or
// LTRIM whose member deletes have not landed yet).
//
// A stream entry too big for its member item is such a value too, its
// encoded fields in the chunks (stream.go). XADD stages them before it
// knows the entry's id, and its commit names the member (publishAs).

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"

	"github.com/redamo/redamo/dynastore"
)

const (
	// attrOwnerSK ("os") is, on a chunk generation's registry entry, the
	// member sort key of the hash field owning it.
	attrOwnerSK = "os"
	// attrBigGen ("bg") is, on a member item holding a big value, its
	// chunk generation.
	attrBigGen = "bg"
	// attrBigFields ("bf", N 1) marks a hash key item that has held a big
	// field value.
	attrBigFields = "bf"
	// refGen and refHeader are the entries of a big value's reference.
	refGen    = "g"
	refHeader = "bv"
)

// bigField reports whether value v of field f must be kept in chunks: its
// member item, which may hold the field twice (sort key and m), would not
// fit one item.
func bigField(f []byte, n int) bool {
	return int64(n) > dynastore.MaxItemSize-int64(2*memberCost(f))-bigItemRoom
}

// bigRef is the stored value referring to a big value's chunks.
func bigRef(h *bigHeader) dynastore.Value {
	return dynastore.M{refGen: dynastore.B(bytes.Clone(h.gen)), refHeader: h.encode()}
}

// refOf decodes a big value's reference; ok is false for any other value.
func refOf(v dynastore.Value) (h *bigHeader, ok bool) {
	m, isMap := v.(dynastore.M)
	if !isMap {
		return nil, false
	}
	g, _ := m[refGen].(dynastore.B)
	b, _ := m[refHeader].(dynastore.B)
	h, err := decodeBigHeader(g, b)
	return h, err == nil
}

// stored is what a big value's chunks hold, from its header: their sizes
// are known, none is read.
func (h *bigHeader) stored() int64 {
	return h.size + h.chunks()*int64(dynastore.ItemSizeAt(chunkKey(h.gen, 0), dynastore.Item{{Name: attrChunk, Value: dynastore.B(nil)}}))
}

// stagedValues are the big values one command staged for its fields,
// published by its commit (publish) or discarded when it writes nothing.
type stagedValues struct {
	refs map[string]dynastore.Value
	hs   []*bigHeader
	st   dynastore.Store
}

// stageFieldValues stages the big ones of values vals of fields of key's
// hash; nil when none is big.
func stageFieldValues(c Scope, key []byte, fields, vals [][]byte) (*stagedValues, error) {
	var sv *stagedValues
	for i, f := range fields {
		if !bigField(f, len(vals[i])) {
			continue
		}
		if sv == nil {
			sv = &stagedValues{refs: map[string]dynastore.Value{}, st: baseStore(c)}
		}
		h, err := stageField(c, sv.st, c.NowMS(), KeyPK(c.DB(), key), f, vals[i])
		if err != nil {
			sv.discard(c)
			return nil, err
		}
		sv.refs[string(f)] = bigRef(h)
		sv.hs = append(sv.hs, h)
	}
	return sv, nil
}

// stageField stages value v of field f of the hash at key item pk ownerPK.
// Its reference carries the whole value's checksum and no chunk map, so
// the checksum is set here whatever else the staging keeps.
func stageField(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, f, v []byte) (*bigHeader, error) {
	return stageRef(ctx, st, nowMS, ownerPK, MemberSK(f), v)
}

// stageRef is stageField for the member whose sort key is ownerSK (nil:
// not known yet, stageUnnamed).
func stageRef(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, ownerSK, v []byte) (*bigHeader, error) {
	h, err := stageChunks(ctx, st, nowMS, ownerPK, ownerSK, v)
	if err != nil {
		return nil, err
	}
	h.sum = crc32.Checksum(v, castagnoli)
	return h, nil
}

// value is what field f with value v is stored as.
func (sv *stagedValues) value(f, v []byte) dynastore.Value {
	if sv == nil {
		return HashValue(v)
	}
	if r, ok := sv.refs[string(f)]; ok {
		return r
	}
	return HashValue(v)
}

// publish makes cl's commit publish the staged values it puts.
func (sv *stagedValues) publish(cl *Collection) {
	if sv == nil {
		return
	}
	for _, h := range sv.hs {
		cl.checks = append(cl.checks, genAliveCheck(h.gen))
	}
	cl.SetKeyAttr(attrBigFields, NInt(1))
}

// refOr is what member m is stored as: its staged big value's reference,
// or v.
func (sv *stagedValues) refOr(m []byte, v dynastore.Value) dynastore.Value {
	if sv == nil {
		return v
	}
	if r, ok := sv.refs[string(m)]; ok {
		return r
	}
	return v
}

// stageUnnamed stages v, the big value of a member of the collection at
// key whose member is not known yet: a stream entry's id, which XADD finds
// on each try. Its registry entry names no member until publishAs.
func stageUnnamed(c Scope, key, v []byte) (*bigHeader, error) {
	return stageRef(c, baseStore(c), c.NowMS(), KeyPK(c.DB(), key), nil, v)
}

// publishAs makes cl's commit publish the big value h, staged by
// stageUnnamed, as member m's: its registry entry names m from then on, so
// the sweeper checks m's member item (fieldOwnerChecks). The same write
// clears a death the sweeper may have recorded while no member was named,
// so that its condemning transaction, conditioned on that record, fails.
func publishAs(cl *Collection, h *bigHeader, m []byte) {
	cl.checks = append(cl.checks, dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: genRegKey(h.gen),
		Update: &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: attrOwnerSK, Val: dynastore.B(MemberSK(m))}},
			Remove: []string{attrDeadAt},
		},
		Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
	})
	cl.SetKeyAttr(attrBigFields, NInt(1))
}

// discard deletes the staged chunks, best effort (the sweeper deletes
// what it leaves).
func (sv *stagedValues) discard(c Scope) {
	for _, h := range sv.hs {
		discardBig(c, h)
	}
}

// settle discards the staged values after a command that certainly
// published none of them: it wrote nothing (wrote false) or was refused.
func (sv *stagedValues) settle(c Scope, wrote bool, err error) {
	if sv != nil && (err == nil && !wrote) || errors.Is(err, ErrWrongType) {
		sv.discard(c)
	}
}

// loadValues replaces the big values among vs by their bytes, read from
// their chunks (a value repeated in vs is read once).
func loadValues(c Scope, vs []dynastore.Value) error {
	var read map[string]dynastore.Value
	for i, v := range vs {
		h, ok := refOf(v)
		if !ok {
			continue
		}
		if b, ok := read[string(h.gen)]; ok {
			vs[i] = b
			continue
		}
		b, err := readBig(c, baseStore(c), h, 0, h.size)
		if err != nil {
			return err
		}
		if read == nil {
			read = map[string]dynastore.Value{}
		}
		vs[i] = dynastore.B(b)
		read[string(h.gen)] = vs[i]
	}
	return nil
}

// LoadValues is loadValues for a command that looked hash fields up
// itself (SORT's GET and BY).
func LoadValues(c Scope, vs []dynastore.Value) error { return loadValues(c, vs) }

// copyFieldValue is value v of field m as COPY writes it under the key
// item pk ownerPK: a big value's chunks copied for the new owner, with the
// check its commit must carry.
func copyFieldValue(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, m []byte, v dynastore.Value) (dynastore.Value, *dynastore.TxAction, error) {
	h, ok := refOf(v)
	if !ok {
		return v, nil, nil
	}
	b, err := readBig(ctx, st, h, 0, h.size)
	if err != nil {
		return nil, nil, err
	}
	return stageFieldRef(ctx, st, nowMS, ownerPK, m, b)
}

// stageFieldRef stages bytes b for member m of the key item pk ownerPK and
// returns their reference, with the check the commit publishing it must
// carry.
func stageFieldRef(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, m, b []byte) (dynastore.Value, *dynastore.TxAction, error) {
	h, err := stageField(ctx, st, nowMS, ownerPK, m, b)
	if err != nil {
		return nil, nil, err
	}
	check := genAliveCheck(h.gen)
	return bigRef(h), &check, nil
}

// bigFieldRenameActions are the actions RENAME and MOVE add when they move
// the hash key item it to the key item pk newPK: each big value's registry
// entry names the new owner in the same transaction, or the sweeper would
// take the values for dead. Only a hash that has held big values is read.
func bigFieldRenameActions(ctx context.Context, st dynastore.Store, it dynastore.Item, newPK []byte) ([]dynastore.TxAction, error) {
	g, ok := it.Get(AttrGen).(dynastore.B)
	if !ok || len(g) == 0 || !it.Has(attrBigFields) {
		return nil, nil
	}
	var acts []dynastore.TxAction
	err := eachMemberItem(ctx, st, g, nil, func(it dynastore.Item) error {
		// A big value's chunks, and a big member's (bigmembers.go).
		for _, v := range []dynastore.Value{it.Get(AttrValue), it.Get(attrMember)} {
			if h, ok := refOf(v); ok {
				acts = append(acts, dynastore.TxAction{
					Op:  dynastore.TxUpdate,
					Key: genRegKey(h.gen),
					Update: &dynastore.Update{Set: []dynastore.SetAction{
						{Attr: attrOwner, Val: dynastore.B(bytes.Clone(newPK))},
					}},
					Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
				})
			}
		}
		return nil
	}, nil)
	return acts, err
}

// fieldOwnerChecks tells whether the chunk generation gen owned by the
// field (or list element) whose member sort key is ownerSK in the hash (or
// list) at key item key
// (nil: absent) is alive, and when it is not, what the sweeper's
// condemning transaction checks to know it still is not: a condition on
// the key item, and a check of the member item.
func fieldOwnerChecks(ctx context.Context, st dynastore.Store, key dynastore.Item, ownerSK, gen []byte, nowMS int64) (alive bool, keyCond dynastore.Cond, member []dynastore.TxAction, err error) {
	if key != nil && key.Has(AttrPending) {
		// A change waits to be rolled forward: its member writes may
		// refer to gen. The next pass looks again.
		return true, nil, nil, nil
	}
	hg, _ := key.Get(AttrGen).(dynastore.B)
	if x, err := ExpiryMS(key.Get(AttrExpiry)); key == nil || len(hg) == 0 || (err == nil && x <= nowMS) {
		return false, dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.NotExists{Attr: AttrGen},
			dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpLE, Val: NInt(nowMS)},
		}, nil, nil
	}
	if out, cond := outsideSpan(key, ownerSK); out {
		return false, dynastore.And{dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(bytes.Clone(hg))}, cond}, nil, nil
	}
	mk := dynastore.Key{PK: MembersPK(hg), SK: ownerSK}
	m, err := st.Get(ctx, mk)
	if err != nil {
		return false, nil, nil, err
	}
	// The field's value, or the member itself (bigmembers.go).
	bg, _ := m.Get(attrBigGen).(dynastore.B)
	if bm, _ := m.Get(attrBigMember).(dynastore.B); bytes.Equal(bg, gen) || bytes.Equal(bm, gen) {
		return true, nil, nil, nil
	}
	return false, dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(bytes.Clone(hg))}, []dynastore.TxAction{{
		Op: dynastore.TxCheck, Key: mk, Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{
				dynastore.Compare{Attr: attrBigGen, Op: dynastore.OpNE, Val: dynastore.B(bytes.Clone(gen))},
				dynastore.Compare{Attr: attrBigMember, Op: dynastore.OpNE, Val: dynastore.B(bytes.Clone(gen))},
			},
		},
	}}, nil
}

// Big list elements (list.go) are referred to the same way, from the
// member item of their position. A position is only known in the attempt
// that commits it, so a command stages each big element once, with no
// member on the registry entry (dead to the sweeper until published), and
// the commit that puts the reference names the member (publishRefAt).
// An element a command takes out of its list (a pop, LMOVE, a list
// rewritten by LINSERT or LREM) and puts back in one keeps its chunks:
// that commit names the new member instead.

// bigElems are the big values one command writes as list elements,
// staged once for all its attempts, and those the current attempt took
// out of their elements, which it may put elsewhere without copying.
type bigElems struct {
	st   dynastore.Store
	pool []*bigElem
	// at is the entry the current attempt put at each member of a key.
	at map[[2]string]*bigElem
}

// bigElem is one big value of a bigElems.
type bigElem struct {
	v []byte
	h *bigHeader
	// staged: staged by the command (else taken from an element); used:
	// put by the current attempt.
	staged, used bool
}

// newBigElems is a command's bigElems.
func newBigElems(c Scope) *bigElems { return &bigElems{st: baseStore(c)} }

// attempt starts an attempt of the command: nothing is taken or put yet.
func (b *bigElems) attempt() {
	if b == nil {
		return
	}
	kept := b.pool[:0]
	for _, e := range b.pool {
		if e.staged {
			e.used = false
			kept = append(kept, e)
		}
	}
	clear(b.pool[len(kept):])
	b.pool, b.at = kept, nil
}

// took records that v, read from the stored value ref, leaves its element
// in the current attempt's commit: it may be put elsewhere by reference.
func (b *bigElems) took(ref dynastore.Value, v []byte) {
	h, ok := refOf(ref)
	if b == nil || !ok {
		return
	}
	for _, e := range b.pool {
		if bytes.Equal(e.h.gen, h.gen) {
			return
		}
	}
	b.pool = append(b.pool, &bigElem{v: v, h: h})
}

// value is what v is stored as at member m of cl: its bytes, or when it is
// big, a reference to chunks (staged now, or taken, or staged by an
// earlier attempt) that cl's commit publishes. Each chunk generation is put
// at one member only, so that its registry entry names its one owner.
func (b *bigElems) value(cl *Collection, m, v []byte) (dynastore.Value, error) {
	if !bigField(m, len(v)) {
		return dynastore.B(bytes.Clone(v)), nil
	}
	at := [2]string{string(cl.Key), string(m)}
	if e := b.at[at]; e != nil && bytes.Equal(e.v, v) {
		return bigRef(e.h), nil // the same put planned again
	}
	var e *bigElem
	for _, x := range b.pool {
		if !x.used && bytes.Equal(x.v, v) {
			e = x
			break
		}
	}
	ownerPK := KeyPK(cl.c.DB(), cl.Key)
	if e == nil {
		h, err := stageField(cl.c, b.st, cl.c.NowMS(), ownerPK, nil, v)
		if err != nil {
			return nil, err
		}
		e = &bigElem{v: v, h: h, staged: true}
		b.pool = append(b.pool, e)
	}
	e.used = true
	if b.at == nil {
		b.at = map[[2]string]*bigElem{}
	}
	b.at[at] = e
	cl.checks = append(cl.checks, publishRefAt(e.h.gen, ownerPK, MemberSK(m)))
	cl.SetKeyAttr(attrBigFields, NInt(1))
	return bigRef(e.h), nil
}

// settle ends the command: the values it staged and certainly did not
// publish are deleted (best effort): after a success those it did not
// put, after a refusal (a busy key) all. After any other failure the
// commit may have been applied: what it did not publish the sweeper
// deletes.
func (b *bigElems) settle(c Scope, err error) {
	refused := errors.Is(err, ErrBusyKey)
	if b == nil || (err != nil && !refused) {
		return
	}
	for _, e := range b.pool {
		if e.staged && (refused || !e.used) {
			discardBig(c, e.h)
		}
	}
}

// publishRefAt is the action that publishes a reference to chunk
// generation gen from member sort key ownerSK of the key item pk ownerPK:
// its registry entry names them, if the sweeper has not condemned it, and
// forgets when the sweeper saw it dead, so that a condemnation planned on
// an older owner fails.
func publishRefAt(gen, ownerPK, ownerSK []byte) dynastore.TxAction {
	return dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: genRegKey(gen),
		Update: &dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: attrOwner, Val: dynastore.B(bytes.Clone(ownerPK))},
				{Attr: attrOwnerSK, Val: dynastore.B(bytes.Clone(ownerSK))},
			},
			Remove: []string{attrDeadAt},
		},
		Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
	}
}

// elemBytes is a list element's bytes from its stored value v, a big
// one's read from its chunks.
func elemBytes(c Scope, v dynastore.Value) ([]byte, error) {
	if b, ok := v.(dynastore.B); ok {
		return b, nil
	}
	vs := []dynastore.Value{v}
	if err := loadValues(c, vs); err != nil {
		return nil, err
	}
	b, _ := vs[0].(dynastore.B)
	return b, nil
}

// sameElem reports whether the stored value v holds elem: a big value is
// only read when its length and checksum match.
func sameElem(c Scope, v dynastore.Value, elem []byte) (bool, error) {
	if h, ok := refOf(v); ok {
		if h.size != int64(len(elem)) || h.sum != crc32.Checksum(elem, castagnoli) {
			return false, nil
		}
	}
	b, err := elemBytes(c, v)
	return bytes.Equal(b, elem), err
}

// outsideSpan tells whether the member sort key ownerSK of the key item
// key of a list (a spanned type) is a position outside its range, and
// then the condition that keeps it so: an element popped or trimmed away,
// whose member item may linger.
func outsideSpan(key dynastore.Item, ownerSK []byte) (bool, dynastore.Cond) {
	t, _ := key.Get(AttrType).(dynastore.S)
	sp, spanned := MemberSpans[string(t)]
	if !spanned || len(ownerSK) == 0 || ownerSK[0] != skMember {
		return false, nil
	}
	p, ok := MemberPos(ownerSK[1:])
	lo, errLo := NumberInt(key.Get(sp.Lo))
	hi, errHi := NumberInt(key.Get(sp.Hi))
	if !ok || errLo != nil || errHi != nil || (p >= lo && p < hi) {
		return false, nil
	}
	return true, dynastore.Or{
		dynastore.Compare{Attr: sp.Lo, Op: dynastore.OpGT, Val: NInt(p)},
		dynastore.Compare{Attr: sp.Hi, Op: dynastore.OpLE, Val: NInt(p)},
	}
}
