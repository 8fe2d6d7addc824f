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
	return int64(n) > dynastore.MaxItemSize-int64(2*len(f))-bigItemRoom
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
	nh, err := stageField(ctx, st, nowMS, ownerPK, m, b)
	if err != nil {
		return nil, nil, err
	}
	check := genAliveCheck(nh.gen)
	return bigRef(nh), &check, nil
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
	err := eachMember(ctx, st, g, func(_ []byte, v dynastore.Value) error {
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
		return nil
	})
	return acts, err
}

// fieldOwnerChecks tells whether the chunk generation gen owned by the
// field whose member sort key is ownerSK in the hash at key item key
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
	mk := dynastore.Key{PK: MembersPK(hg), SK: ownerSK}
	m, err := st.Get(ctx, mk)
	if err != nil {
		return false, nil, nil, err
	}
	if bg, _ := m.Get(attrBigGen).(dynastore.B); bytes.Equal(bg, gen) {
		return true, nil, nil, nil
	}
	return false, dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(bytes.Clone(hg))}, []dynastore.TxAction{{
		Op: dynastore.TxCheck, Key: mk, Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.NotExists{Attr: attrBigGen},
			dynastore.Compare{Attr: attrBigGen, Op: dynastore.OpNE, Val: dynastore.B(bytes.Clone(gen))},
		},
	}}, nil
}
