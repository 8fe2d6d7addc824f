package model

// How the collection engine (collection.go) keeps members in the table:
// member and order items, sort keys, positions, and the layouts' hooks.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

// The first byte of a sort key in a generation's partition says what the
// item is: a member item (its member verbatim, or its digest), an order
// item of a type that keeps a second order of its members (MemberOrder), or
// a pending write of a change too big for one transaction (rollForward).
// Reads of members and of the order never reach pending items.
const (
	skMember  byte = 0
	skDigest  byte = 1
	SKOrder   byte = 2
	skPending byte = 3
)

// MemberSK is the sort key of a member item: 0x00+member, or 0x01+sha256 for
// members too long for a sort key.
func MemberSK(m []byte) []byte {
	if len(m) <= MaxPlainSK {
		sk := make([]byte, 0, 1+len(m))
		return append(append(sk, skMember), m...)
	}
	h := sha256.Sum256(m)
	return append([]byte{skDigest}, h[:]...)
}

// memberSKEnd bounds every member item's sort key from above (order items
// sort after it), and memberSKLast is the greatest a member item can have.
var (
	memberSKEnd  = []byte{SKOrder}
	memberSKLast = append([]byte{skDigest}, bytes.Repeat([]byte{0xff}, sha256.Size+1)...)
)

// MemberOrder is a type's second order of the members of its large layout:
// beside each member item, an order item in the same partition whose sort
// key (SKOrder first) sorts members in the type's order, so a range of that
// order is one Query (a sorted set's members by score; zset.go). The
// engine writes and deletes order items with the member items, in the same
// transaction or staged generation.
type MemberOrder struct {
	// sk is the order item's sort key for member m with value v: prefix
	// bytes, then m itself when m is at most MaxPlainSK bytes long.
	SK     func(m []byte, v dynastore.Value) []byte
	Prefix int
}

// tieLen is how long an order sort key's common part is: the prefix and
// the first bytes of a member too long to be spelt out, before its digest.
// Members sharing it with a long one are not in order by their sort keys
// (the digest decides between them): they are neighbours, and a read puts
// them in member order itself (eachOrderedIn).
func (o MemberOrder) tieLen() int { return o.Prefix + MaxPlainSK - sha256.Size }

// tieKey is the common part sk shares with its neighbours whose order its
// sort key does not say, nil when it has none.
func (o MemberOrder) tieKey(sk []byte) []byte {
	if len(sk) < o.tieLen() {
		return nil
	}
	return sk[:o.tieLen()]
}

// widen moves the bounds [lo, hi) of a range of order sort keys out to the
// edges of the neighbours they fall among (tieKey), so that the range
// holds every member between them whatever their digests; the caller
// compares members with its bounds itself. Bounds longer than any sort
// key become valid ones.
func (o MemberOrder) widen(lo, hi []byte) ([]byte, []byte) {
	if t := o.tieKey(lo); t != nil {
		lo = t
	}
	if t := o.tieKey(hi); t != nil {
		hi = append(bytes.Clone(t), bytes.Repeat([]byte{0xff}, sha256.Size+1)...)
	}
	return lo, hi
}

// MemberOrders holds the types that keep a MemberOrder.
var MemberOrders = map[string]MemberOrder{
	TypeZSet: {SK: zorderSK, Prefix: zorderPrefixSize},
}

// MemberSpan is the layout of a type whose members are positions
// (PosMember) in a range its key item holds in two N attributes: the first
// position and one past the last (a list: list.go). Only the members in
// the range are entries. Member items outside it are leftovers of earlier
// states (popped members whose clean-up did not run, members written by a
// change that lost a race): no read reaches them, the write that reaches
// their position again overwrites them, and they go with their generation.
// So every write of such a type sets the range (SetKeyAttr) and is guarded
// by the key item's ver, its member writes need no condition of their own,
// and a change too big for one transaction writes around the range
// (planSpan) instead of through pending items.
type MemberSpan struct{ Lo, Hi string }

// MemberSpans holds the types laid out as a MemberSpan.
var MemberSpans = map[string]MemberSpan{
	TypeList: {Lo: AttrListHead, Hi: AttrListTail},
}

// Span returns the range of a spanned type's collection as read, or, when
// after, as its staged key attributes leave it; spanned is false for the
// other types.
func (cl *Collection) Span(after bool) (lo, hi int64, spanned bool, err error) {
	sp, ok := MemberSpans[cl.Type]
	if !ok {
		return 0, 0, false, nil
	}
	get := func(name string) dynastore.Value {
		if v, ok := cl.keyAttrs[name]; ok && after {
			return v
		}
		return cl.KS.Raw.Get(name)
	}
	if lo, err = NumberInt(get(sp.Lo)); err != nil {
		return 0, 0, true, fmt.Errorf("model: %s range start: %w", cl.Type, err)
	}
	if hi, err = NumberInt(get(sp.Hi)); err != nil {
		return 0, 0, true, fmt.Errorf("model: %s range end: %w", cl.Type, err)
	}
	return lo, hi, true, nil
}

// PosMember is the member bytes of position p: big-endian with the sign bit
// flipped, so byte order is numeric order.
func PosMember(p int64) []byte {
	u := uint64(p) ^ (1 << 63)
	return []byte{byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
}

// MemberPos decodes PosMember.
func MemberPos(m []byte) (int64, bool) {
	if len(m) != 8 {
		return 0, false
	}
	var u uint64
	for _, b := range m {
		u = u<<8 | uint64(b)
	}
	return int64(u ^ (1 << 63)), true
}

// orderItem is the order item of member m with value v of a generation of
// type typ (nil when the type keeps no second order). A member too long to
// be spelt out in the sort key is kept in the item (attrMember), or its
// reference ref when it is big (bigmembers.go).
func orderItem(typ string, gen, m []byte, v, ref dynastore.Value) dynastore.Item {
	o, ok := MemberOrders[typ]
	if !ok {
		return nil
	}
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(MembersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(o.SK(m, v))},
	}
	setMember(&it, m, ref)
	if v != nil {
		it.Set(AttrValue, v)
	}
	return it
}

// decodeOrderItem returns the member and value an order item of type typ
// stands for.
func decodeOrderItem(typ string, it dynastore.Item) ([]byte, dynastore.Value) {
	v := it.Get(AttrValue)
	if m, ok := it.Get(attrMember).(dynastore.B); ok {
		return m, v
	}
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	if p := MemberOrders[typ].Prefix; len(sk) >= p {
		return sk[p:], v
	}
	return nil, v
}

// MembersPK is the partition of a generation's members.
func MembersPK(gen []byte) []byte {
	return append([]byte{NsMembers}, gen...)
}

// MemberKey is the key of one member item.
func MemberKey(gen, m []byte) dynastore.Key {
	return dynastore.Key{PK: MembersPK(gen), SK: MemberSK(m)}
}

// memberItem builds a member item; v is nil for sets, ref the reference
// of a big member (nil for any other).
func memberItem(gen, m []byte, v, ref dynastore.Value) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(MembersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(MemberSK(m))},
	}
	setMember(&it, m, ref)
	if h, ok := refOf(ref); ok {
		it.Set(attrBigMember, dynastore.B(bytes.Clone(h.gen)))
	}
	if v != nil {
		it.Set(AttrValue, v)
		if h, ok := refOf(v); ok {
			it.Set(attrBigGen, dynastore.B(bytes.Clone(h.gen)))
		}
	}
	return it
}

// setMember keeps member m in its item when its sort key does not spell
// it out: its bytes, or ref when it is big.
func setMember(it *dynastore.Item, m []byte, ref dynastore.Value) {
	switch {
	case ref != nil:
		it.Set(attrMember, ref)
	case len(m) > MaxPlainSK:
		it.Set(attrMember, dynastore.B(bytes.Clone(m)))
	}
}

// decodeMember returns a member item's member and value (nil for sets).
func decodeMember(it dynastore.Item) []byte {
	if m, ok := it.Get(attrMember).(dynastore.B); ok {
		return m
	}
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	if len(sk) == 0 {
		return nil
	}
	return sk[1:]
}

// FieldAttr is the attribute of an inline hash field.
func FieldAttr(f []byte) string {
	return attrFieldPrefix + base64.RawURLEncoding.EncodeToString(f)
}

// HashValue encodes a hash value: N for a canonical int64, B otherwise.
func HashValue(v []byte) dynastore.Value {
	if _, ok := String2ll(v); ok {
		return dynastore.N(v)
	}
	return dynastore.B(bytes.Clone(v))
}

// ValueBytes is the Redis string of a stored hash value: nil for a big
// value, whose bytes are in its chunks (loadValues).
func ValueBytes(v dynastore.Value) []byte {
	switch v := v.(type) {
	case dynastore.B:
		return v
	case dynastore.N:
		return []byte(v)
	}
	return nil
}

// ValueSize is the byte length of a stored hash value (0 for none), a big
// value's included.
func ValueSize(v dynastore.Value) int {
	if h, ok := refOf(v); ok {
		return int(h.size)
	}
	return len(ValueBytes(v))
}

// storedSize is about what a stored value adds to its item.
func storedSize(v dynastore.Value) int {
	if _, ok := refOf(v); ok {
		return 64
	}
	return ValueSize(v)
}

// ---- small helpers ---------------------------------------------------------------

// Dedupe returns args without repeats, first occurrence order.
func Dedupe(args [][]byte) [][]byte {
	seen := make(map[string]bool, len(args))
	out := make([][]byte, 0, len(args))
	for _, a := range args {
		if !seen[string(a)] {
			seen[string(a)] = true
			out = append(out, a)
		}
	}
	return out
}

// AllSmall reports whether every element is at most limit bytes long.
func AllSmall(args [][]byte, limit int) bool {
	for _, a := range args {
		if len(a) > limit {
			return false
		}
	}
	return true
}

// BSOf builds a binary set of copies of members.
func BSOf(members [][]byte) dynastore.BS {
	out := make(dynastore.BS, len(members))
	for i, m := range members {
		out[i] = bytes.Clone(m)
	}
	return out
}

// BSContains reports whether set holds m.
func BSContains(set dynastore.Value, m []byte) bool {
	bs, _ := set.(dynastore.BS)
	for _, x := range bs {
		if bytes.Equal(x, m) {
			return true
		}
	}
	return false
}
