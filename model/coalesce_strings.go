package model

// Coalescing of the string, counter and key-read commands (see
// Coalescer): a batch of INCRs is one ADD of their sum, a batch of reads
// of a key one read, a batch of blind SETs one write of the last value.

import (
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/redamo/redamo/dynastore"
)

// hotStrings are the Coalescers of the string, counter and read commands.
type hotStrings struct {
	incr Coalescer[incrOp, int64]
	read Coalescer[member, dynastore.Item]
	// readMany is per list of keys: MGETs of the same keys share their
	// reads; those of other lists, even overlapping ones, do not wait for
	// them (a lone MGET makes the requests it always made).
	readMany Coalescer[member, []dynastore.Item]
	set      Coalescer[setOp, struct{}]
	edit     Coalescer[editOp, []byte]
	// hincr and hget are per hash field.
	hincr Coalescer[incrOp, int64]
	hget  Coalescer[member, hashGot]
}

// member is one command of a batch: its scope, and its clock reading as
// it joined.
type member struct {
	s     Scope
	nowMS int64
}

func (m member) scope() member { return m }

// memberOf is s as a member of a batch.
func memberOf(s Scope) member { return member{s, s.NowMS()} }

// hotKey is the lane key of key in s's database, in s's scratch memory when
// it has some: Coalescer keeps no key it is given, and the string is used
// only while the command is in Do.
func hotKey(s Scope, key []byte) string {
	sc := scratchOf(s)
	if sc == nil {
		return string(KeyPK(s.DB(), key))
	}
	sc.hot = AppendKeyPK(sc.hot[:0], s.DB(), key)
	return unsafe.String(unsafe.SliceData(sc.hot), len(sc.hot))
}

// batchScope is what a batch's request runs in: its first member's scope,
// detached (that client leaving must not cancel the request for the
// others), at the latest clock reading of its members (each was invoked
// before the request is sent, so none may see the key as of before its
// own invocation), telling the member whose command created the key.
type batchScope struct {
	Scope
	nowMS int64
	wants bool
	// creator is the member a write that creates the key creates it for:
	// the first whose command takes effect.
	creator Scope
}

// newBatchScope is the scope of the batch of ms.
func newBatchScope[Op interface{ scope() member }](ops []Op) *batchScope {
	lead := ops[0].scope()
	b := &batchScope{Scope: Detached(lead.s)}
	for _, op := range ops {
		m := op.scope()
		b.nowMS = max(b.nowMS, m.nowMS)
		b.wants = b.wants || wantsCreated(m.s)
	}
	return b
}

func (b *batchScope) NowMS() int64 { return max(b.Scope.NowMS(), b.nowMS) }

func (b *batchScope) WantsCreated() bool { return b.wants }

func (b *batchScope) KeyCreated(key []byte) {
	if b.creator != nil {
		reportCreated(b.creator, key)
	}
}

func (b *batchScope) KeyEmptied(key []byte) {
	if r, ok := b.creator.(KeyReporter); ok {
		r.KeyEmptied(key)
	}
}

// scratchless: a batch's request is built in memory of its own, not in
// its first member's connection's.
func (b *batchScope) Scratch() *Scratch { return nil }

var (
	_ KeyReporter = (*batchScope)(nil)
	_ scratcher   = (*batchScope)(nil)
)

// answers are a batch's answers, one per member.
func answers[Res any](n int) ([]Res, []error) { return make([]Res, n), make([]error, n) }

// failAll answers every member of a batch with err.
func failAll(errs []error, err error) {
	for i := range errs {
		errs[i] = err
	}
}

// ---- INCRBY ------------------------------------------------------------------------

type incrOp struct {
	member
	d int64
}

// incrBatch is a batch of INCRBYs on key: one ADD of their sum, guarded as
// a lone one is but with room for every partial sum, so that each member
// is answered the value after its own increment in batch order. Anything
// else is decided from the item the failed update returns, each member
// answered as it would be alone in that order (an overflow answers the one
// that would overflow; the others apply).
func incrBatch(key []byte, ops []incrOp) ([]int64, []error) {
	res, errs := answers[int64](len(ops))
	bs := newBatchScope(ops)
	now := bs.NowMS()
	ds := make([]int64, len(ops))
	for i, op := range ops {
		ds[i] = op.d
	}
	var start *KeyState
	if sums, sum, room, fits := partialSums(AttrValue, ds); fits {
		var live dynastore.Cond = dynastore.IsType{Attr: AttrValue, Type: dynastore.KindN}
		if room != nil {
			live = room
		}
		old, err := bs.Data().Update(bs, ItemKey(bs.DB(), key), dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: AttrType, Val: litTypeString}, {Attr: AttrVer, Val: NewVer()}},
			Add:    []dynastore.AttrValue{{Attr: AttrValue, Val: NInt(sum)}},
			Remove: removeEnc,
		}, dynastore.WriteOptions{
			Cond:         dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{CondUnexpired(now), live}},
			Return:       dynastore.ReturnAllOld,
			OldOnFailure: true,
		})
		if err == nil {
			var base int64
			if v := old.Get(AttrValue); v != nil {
				if base, err = NumberInt(v); err != nil {
					failAll(errs, err)
					return res, errs
				}
			} else {
				reportCreated(ops[0].s, key)
			}
			for i := range ops {
				res[i] = base + sums[i]
			}
			return res, errs
		}
		ks, err := failedStart(err, now)
		if err != nil {
			failAll(errs, err)
			return res, errs
		}
		start = &ks
	}
	err := mutateKey(bs, key, start, func(ks KeyState) (*keyWrite, error) {
		var cur int64
		if ks.Live {
			b, err := stringOf(ks)
			if err != nil {
				return nil, err
			}
			var ok bool
			if cur, ok = String2ll(b); !ok {
				return nil, ErrNotInteger
			}
		}
		cur, first := addInOrder(cur, ds, res, errs, ErrOverflow)
		if first < 0 {
			return nil, nil
		}
		bs.creator = ops[first].s
		return &keyWrite{put: StringItem(bs.DB(), key, strconv.AppendInt(nil, cur, 10), OriginArg, ks.Expiry)}, nil
	})
	if err != nil {
		failAll(errs, err)
	}
	return res, errs
}

// partialSums are the sums of ds's first 1, 2, ... deltas, and room, the
// condition that adding each of them to the number in attr stays within
// int64 (nil: none needed). fits is false when a partial sum itself
// leaves int64.
func partialSums(attr string, ds []int64) (sums []int64, sum int64, room dynastore.Cond, fits bool) {
	sums = make([]int64, len(ds))
	var lo, hi int64
	for i, d := range ds {
		if AddOverflows(sum, d) {
			return nil, 0, nil, false
		}
		sum += d
		sums[i] = sum
		lo, hi = min(lo, sum), max(hi, sum)
	}
	var and dynastore.And
	for _, d := range []int64{hi, lo} {
		if c := IncrRoom(attr, d); c != nil {
			and = append(and, c)
		}
	}
	if len(and) > 0 {
		room = and
	}
	return sums, sum, room, true
}

// addInOrder adds ds to cur one by one, as each would be alone in that
// order: one that would overflow is answered overflow and leaves cur as
// it is. It returns the final value and the first delta applied (-1:
// none).
func addInOrder(cur int64, ds []int64, res []int64, errs []error, overflow error) (int64, int) {
	first := -1
	for i, d := range ds {
		if AddOverflows(cur, d) {
			errs[i] = overflow
			continue
		}
		errs[i] = nil
		cur += d
		res[i] = cur
		if first < 0 {
			first = i
		}
	}
	return cur, first
}

// ---- EditString (INCRBYFLOAT) ----------------------------------------------------------

type editOp struct {
	member
	origin StrOrigin
	edit   func(old []byte, live bool) ([]byte, error)
}

// editOps applies ops' edits to key's value one after the other, each to
// what the one before made of it (a failed edit leaves it as it was), and
// writes the last result in one write conditioned on the version read:
// each member is answered exactly what it would be alone in that order
// (INCRBYFLOAT's long double sums and their text included), for one read
// and one write. creator tells which of them a write that creates the
// key creates it for.
func editOps(s Scope, key []byte, ops []editOp, creator func(i int)) ([][]byte, []error) {
	res, errs := answers[[]byte](len(ops))
	err := mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		cur, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		live, first, last := ks.Live, -1, -1
		for i, op := range ops {
			if res[i], errs[i] = op.edit(cur, live); errs[i] != nil {
				continue
			}
			cur, live = res[i], true
			if first < 0 {
				first = i
			}
			last = i
		}
		if first < 0 {
			return nil, nil
		}
		creator(first)
		return stringWrite(s, key, cur, ops[last].origin, ks.Expiry)
	})
	if err != nil {
		failAll(errs, err)
	}
	return res, errs
}

// ---- reads of a key item -------------------------------------------------------------

// readBatch is a batch of reads of key's item: one read, its item shared
// by every member (items from a store are read-only), each decoding it at
// its own clock reading.
func readBatch(key []byte, ops []member) ([]dynastore.Item, []error) {
	res, errs := answers[dynastore.Item](len(ops))
	bs := Detached(ops[0].s)
	it, err := bs.Data().Get(bs, ItemKey(bs.DB(), key))
	for i := range ops {
		res[i], errs[i] = it, err
	}
	return res, errs
}

// ---- blind SET -------------------------------------------------------------------------

type setOp struct {
	member
	val      []byte
	expireAt int64
}

// maxCoalescedSet is the largest value a SET coalesces: a batch's members
// must fail alone only for reasons that are the batch's (its request's),
// and no value this small can fail on its own.
const maxCoalescedSet = 64 << 10

// blindSet reports whether a SET with o writes without looking at the key
// (no condition, no old value read back) and may share its write.
func blindSet(o SetOptions, val []byte) bool {
	return !o.NX && !o.XX && !o.Get && !o.KeepTTL && len(val) <= maxCoalescedSet
}

// setBatch is a batch of blind SETs on key: only the last one's write is
// seen by anyone (each overwrites the whole key), so it is the one write;
// every member is answered once it is done. The key is created, if it
// was, by the first.
func setBatch(key []byte, ops []setOp) ([]struct{}, []error) {
	res, errs := answers[struct{}](len(ops))
	bs := newBatchScope(ops)
	bs.creator = ops[0].s
	last := ops[len(ops)-1]
	_, err := setString(bs, key, last.val, SetOptions{ExpireAt: last.expireAt})
	failAll(errs, err)
	return res, errs
}

// readAlone reads key's item on its own.
func readAlone(key []byte) func(member) (dynastore.Item, error) {
	return func(m member) (dynastore.Item, error) {
		return m.s.Data().Get(m.s, scratchItemKey(m.s, key))
	}
}

// ---- hash fields -------------------------------------------------------------------------

// hotField is the lane key of field f of key in s's database (see
// hotKey): the key's length first, so that no key and field pair reads as
// another.
func hotField(s Scope, key, f []byte) string {
	var buf []byte
	if sc := scratchOf(s); sc != nil {
		buf = sc.hot[:0]
	}
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = append(AppendKeyPK(buf, s.DB(), key), f...)
	if sc := scratchOf(s); sc != nil {
		sc.hot = buf
		return unsafe.String(unsafe.SliceData(buf), len(buf))
	}
	return string(buf)
}

// hashGot is what HashGet answers.
type hashGot struct {
	vals    []dynastore.Value
	present []bool
}

// hashGetBatch is a batch of HGETs of one field: one read, its answer
// shared by every member (read-only to them).
func hashGetBatch(key []byte, fields [][]byte, ops []member) ([]hashGot, []error) {
	res, errs := answers[hashGot](len(ops))
	vals, present, err := hashGet(newBatchScope(ops), key, fields)
	for i := range ops {
		res[i], errs[i] = hashGot{vals, present}, err
	}
	return res, errs
}

// hotKeys is the lane key of a list of keys in s's database (see hotKey),
// each key's length first.
func hotKeys(s Scope, keys [][]byte) string {
	var buf []byte
	sc := scratchOf(s)
	if sc != nil {
		buf = sc.hot[:0]
	}
	buf = append(buf, byte(s.DB()))
	for _, k := range keys {
		buf = append(binary.AppendUvarint(buf, uint64(len(k))), k...)
	}
	if sc != nil {
		sc.hot = buf
		return unsafe.String(unsafe.SliceData(buf), len(buf))
	}
	return string(buf)
}
