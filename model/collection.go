package model

// The collection engine: how lists, hashes, sets, sorted sets and streams
// are laid out in the table, read, and changed atomically. The command
// families (commands/lists.go, hashes.go, sets.go, zsets.go, streams.go)
// speak to a *Collection and never build member items themselves.
//
// Layouts. A collection's key item (keyitem.go: pk 'k'+db+key, sk 0x00, t,
// x, ttl, ver) is the single source of truth for which members exist:
//
//   - inline (small): the members live in the key item itself, so every
//     single-member command is one UpdateItem. A set keeps its members in v
//     (a binary set). A hash keeps its field names in v (a binary set, so
//     size(v) is the field count a condition can bound and HLEN is free) and
//     each value in a top-level attribute "f"+base64url(field): the typed
//     Update only addresses top-level attributes, and a per-field attribute
//     lets HSET/HDEL/HINCRBY change one field without rewriting the others.
//     A value is an N when it is a canonical int64 (HINCRBY is then one ADD),
//     a B otherwise. Inline is used while the collection has at most
//     InlineMaxSet / InlineMaxHash entries of at most InlineMaxBytes each
//     (redis.conf's listpack thresholds, halved for hashes), or fewer when
//     the encoding parameters say so (Process.inline): the item then stays
//     under ~16 KB, so a write costs a few WCU.
//   - large: the key item holds g (a random 16-byte generation id) and n (the
//     entry count: SCARD/HLEN are one read at any size); each member is an
//     item under pk 'm'+g, sk = MemberSK(member), with the value in v for a
//     hash. Members are NOT under the user key, so RENAME moves only the key
//     item and DEL/EXPIRE/overwrite touch only the key item: the old
//     generation simply stops being referenced. A type with a second order
//     of its members (a sorted set's scores: MemberOrder) also keeps an order
//     item per member in the partition, which the engine writes with it.
//
// A collection with no entries does not exist: the write that removes the
// last entry deletes the key item in the same request or transaction.
//
// Generations are registered (pk 'G'+shard, sk gen, o = owner key pk) before
// any member is written, so the sweeper (sweeper.go) can find generations no
// key item points to any more and delete their members. A generation is
// built invisibly (members first) and published by one transaction that
// flips the key item and checks that the sweeper has not condemned the
// registry entry; a crash at any point leaves only unreferenced garbage.
//
// Changes. Every write is "read, compute, commit conditioned on what was
// read" (the key item's ver), re-run on conflict (Retry), except
// the single-request fast paths of the hot commands, which fall back to it
// when their condition fails (the failed condition returns the item, so the
// fallback does not read it again). A commit is:
//
//   - inline result: one Put of the whole key item (or one Delete when empty);
//   - large, at most MaxTxMembers changed members: one TransactWriteItems with
//     the member puts/deletes and the key item's n/ver update;
//   - a conversion inline -> large: a new generation holding the complete
//     result is staged and published by one transaction;
//   - a bigger change to a large collection (SADD of 5,000, SPOP of
//     thousands): its writes wait in pending items, one transaction publishes
//     them, and they are rolled forward in place (planPending, rollForward),
//     at a cost in proportion to the change (a list's writes around its
//     range of positions need no pending items: planSpan). Inside a
//     transaction (EXEC, a script) such a change is a new generation too.
//
// Either way no client ever observes part of the command.
//
// Caches. Each instance remembers the collection key items it last read or
// wrote (itemCache) and the generations of the large sets and hashes it
// saw (gensOf), and starts the hot commands from them: a fast path whose
// condition holds on the cached item goes out guarded by the item's ver
// alone (FastUpdate), a single-member write of a known large collection is
// its blind transaction at once and a write of several members reads only
// them before its transaction (MemberFast), a list push or pop skips the
// read. Every such write is conditioned on what the cache claims, so
// another instance's writes (DEL, RENAME, conversions, ...) only make it
// fail and fall back: a stale entry costs requests, never a wrong reply.
//
// Reading a large collection pages through its partition; when that takes
// more than one page the key item is read again and the read is re-run if
// its ver moved, so a reply is always one consistent state.
//
// Multi-key commands (SMOVE, *STORE, and LMOVE for lists) open several
// collections, compute, and commit all of them in one transaction whose
// actions each carry the "ver as read" guard (Commit).
//
// Using the engine (a family file such as commands/sets.go):
//
//	err := model.RetryConflicts(c, func(try int) error {
//		cl, err := model.OpenChecked(c, key, model.TypeSet) // one GetItem; ErrWrongType
//		if err != nil { return err }
//		vals, present, err := cl.Lookup(members)        // BatchGet if large
//		cl.Put(m, v); cl.Del(m); cl.SetKeyAttr(name, v)  // staged
//		return cl.Commit() // ErrConflict on conflict: RetryConflicts re-runs
//	})
//
// Entries are (member, value) pairs keyed by member bytes; Each visits
// them in member order (sorted inline, partition order when large). A type
// is a layout over that: its inline codec (InlineCodecs), and for the
// large layout optionally a second order of its members (MemberOrders: a
// sorted set's scores) or a range of positions (MemberSpans: a list). A
// commit of a command that read only some members is conditioned
// on exactly those members (concurrent writers of other members do not
// conflict); one that read everything (Each) or set key attributes is
// guarded by the key item's ver.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Collection attributes of the key item, member items and registry items.
const (
	AttrGen     = "g"  // B: the generation id of a large collection
	AttrCount   = "n"  // N: the entry count of a large collection
	attrMember  = "m"  // B: a member item's member when its sk is a digest
	attrOwner   = "o"  // B: a registry item's owner key pk
	attrDying   = "d"  // N: set on a registry item the sweeper has condemned
	attrDeadAt  = "dd" // N: when the sweeper first saw a generation dead
	attrCreated = "c"  // N: when a generation was registered
	// AttrPending (B, on a key item) names the change whose writes wait in
	// pending items to be rolled forward, attrPhase (N) how far that got,
	// and attrChanges (N) counts such changes; attrPendingOp ("p" put, "d"
	// delete) is a pending item's write, and attrRolling (N) the count of
	// the change that last rolled a member or order item forward (see
	// rollForward).
	AttrPending   = "pd"
	attrPhase     = "pp"
	attrChanges   = "cc"
	attrPendingOp = "po"
	attrRolling   = "rt"
	// AttrBigEncoding (N 1) marks a collection Redis would hold in its big
	// encoding (skiplist, hashtable): Redis converts when a write crosses a
	// limit and never back, so OBJECT ENCODING depends on history, which
	// the key item keeps from then on.
	AttrBigEncoding = "e"
	// attrFieldPrefix + base64url(field) holds an inline hash field's value.
	attrFieldPrefix = "f"
)

// pk namespaces of the collection layer (model/keyitem.go lists the others).
const (
	NsMembers  = 'm' // 'm', generation id: the members of a large collection
	nsGens     = 'G' // 'G', shard: the generation registry
	nsCollScan = 's' // 's', cursor id: SSCAN/HSCAN/ZSCAN positions
)

// Inline caps: elements of at most 64 bytes (Redis's listpack value
// limit), 128 entries (redis.conf's listpack entry limits), 64 for hashes,
// whose fields cost twice (name in v and attribute). They bound the key
// item's size whatever the encoding parameters, which may only lower them
// (Server.inline); OBJECT ENCODING does not depend on them (EncodingOf).
const (
	InlineMaxBytes = 64
	InlineMaxSet   = 128
	InlineMaxHash  = 64
	InlineMaxList  = 128
)

// genShards spreads the registry over a few partitions.
const genShards = 16

// genIDLen is the length of a generation id.
const genIDLen = 16

// MaxTxMembers is how many member writes one commit transaction carries, with
// room for the key item and two more actions (the other side of an SMOVE).
const MaxTxMembers = dynastore.MaxTxActions - 4

// maxTxBytes keeps a transaction safely under DynamoDB's 4 MB.
const maxTxBytes = 3 << 20

// MemberPageItems caps the items of one page when reading a whole large
// collection: a full 1 MB page can take DynamoDB longer than one request's
// time budget, while 1,024 keeps "HGETALL of 1,000 entries" one page.
const MemberPageItems = 1024

// MaxPlainSK is the longest member stored verbatim in a sort key; longer ones
// are stored under their digest (DynamoDB caps sort keys at 1024 bytes).
const MaxPlainSK = 1000

// RetryConflicts runs attempt until it succeeds or fails with anything but a
// conflict (ErrConflict), as long as the retry policy allows (Retry).
func RetryConflicts(c Scope, attempt func(try int) error) error {
	var retry Retry
	for try := 0; ; try++ {
		err := attempt(try)
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if err := c.LostRace(&retry); err != nil {
			return err
		}
	}
}

// ---- per-process caches -------------------------------------------------------

// dbKey names one key of one database in this process's caches.
type dbKey struct {
	db  int
	key string
}

// Bounds of each per-process key cache: entries, and bytes (by the
// entries' weight).
const (
	keyCacheMax   = 4096
	keyCacheBytes = 8 << 20
)

// cacheEntry is what a keyCache holds.
type cacheEntry interface {
	// weight is the entry's share of keyCacheBytes.
	weight() int
}

// keyCache is a bounded map from keys to what this process last saw of
// them, safe for concurrent use; the zero value is ready. It only ever
// saves requests: every write made from an entry is conditioned on what the
// entry claims, so a stale entry costs a failed condition and a fallback,
// never a wrong result (principle 1: nothing correctness depends on lives
// only in a process). When full, arbitrary entries (Go's map order) make
// room.
type keyCache[V cacheEntry] struct {
	mu     sync.Mutex
	m      map[dbKey]V
	weight int
}

func (kc *keyCache[V]) Get(db int, key []byte) (V, bool) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	v, ok := kc.m[dbKey{db, string(key)}]
	return v, ok
}

// update replaces key's entry with next(the entry, whether there was one).
func (kc *keyCache[V]) update(db int, key []byte, next func(old V, ok bool) V) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	if kc.m == nil {
		kc.m = map[dbKey]V{}
	}
	k := dbKey{db, string(key)}
	old, ok := kc.m[k]
	if ok {
		kc.weight -= old.weight()
	}
	v := next(old, ok)
	kc.m[k] = v
	kc.weight += v.weight()
	for len(kc.m) > 1 && (len(kc.m) > keyCacheMax || kc.weight > keyCacheBytes) {
		for victim, e := range kc.m {
			if victim != k {
				delete(kc.m, victim)
				kc.weight -= e.weight()
				break
			}
		}
	}
}

func (kc *keyCache[V]) Put(db int, key []byte, v V) {
	kc.update(db, key, func(V, bool) V { return v })
}

func (kc *keyCache[V]) Drop(db int, key []byte) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	k := dbKey{db, string(key)}
	if old, ok := kc.m[k]; ok {
		kc.weight -= old.weight()
		delete(kc.m, k)
	}
}

// ListKnown is what the item cache keeps with a large list's key item
// (commands/lists.go): values of elements near its ends, by position, and
// the average element size of the last read. They stay valid as
// long as the key item does: an element inside [lh, lt) changes only with
// a write that also sets a fresh ver (MemberSpan), and every write made
// from the entry is guarded by its ver.
type ListKnown struct {
	Values   map[int64][]byte
	ElemSize int
}

// cachedItem is an item cache entry: a collection key item exactly as this
// process last read or wrote it (nil: the key did not exist), until when
// (Unix ms) FastUpdate sends no guarded writes for the key, and for a
// large list, element values valid for that item (ListKnown).
type cachedItem struct {
	Item   dynastore.Item
	calmAt int64
	List   *ListKnown
	// w is the entry's weight, computed once.
	w int
}

func (e cachedItem) weight() int { return e.w }

// contendedPause is how long FastUpdate sends no guarded writes for a key
// after one failed: another instance is writing it, and each failure costs
// a request.
const contendedPause = time.Second

// itemCache holds the key items of lists, sets and hashes (or their
// absence) this process saw last: a list pop or LPUSH, and the fast paths
// of small sets and hashes, start from it instead of reading. Every entry
// is an item as it was at some moment, never a guess: writes made from one
// are conditioned on its ver (KeyState.guard), which holds only while the
// item is exactly that one (every write sets a fresh ver).
type itemCache struct {
	kc keyCache[cachedItem]
}

// get returns what the cache knows of key: ok, and the entry (its item
// nil: absent).
func (ic *itemCache) Get(db int, key []byte) (cachedItem, bool) {
	return ic.kc.Get(db, key)
}

// guardable is get, except while FastUpdate's guarded writes of key pause.
func (ic *itemCache) Guardable(db int, key []byte, nowMS int64) (dynastore.Item, bool) {
	e, ok := ic.kc.Get(db, key)
	if !ok || nowMS < e.calmAt {
		return nil, false
	}
	return e.Item, true
}

// put remembers it (nil: key is absent) as key's item, if it is a
// collection's (anything else forgets key).
func (ic *itemCache) Put(db int, key []byte, it dynastore.Item) {
	ic.remember(db, key, it, 0, nil)
}

// putList is put of a large list's key item with element values valid for
// it.
func (ic *itemCache) PutList(db int, key []byte, it dynastore.Item, list *ListKnown) {
	ic.remember(db, key, it, 0, list)
}

// contend is put, also pausing guarded writes of key for contendedPause.
func (ic *itemCache) Contend(db int, key []byte, it dynastore.Item, nowMS int64) {
	ic.remember(db, key, it, nowMS+contendedPause.Milliseconds(), nil)
}

func (ic *itemCache) remember(db int, key []byte, it dynastore.Item, calmAt int64, list *ListKnown) {
	if it != nil {
		switch t, _ := it.Get(AttrType).(dynastore.S); t {
		case TypeList, TypeSet, TypeHash, TypeZSet, TypeStream:
		default:
			ic.Drop(db, key)
			return
		}
	}
	w := 64 + dynastore.ItemSize(it)
	if list != nil {
		for _, v := range list.Values {
			w += 16 + len(v)
		}
	}
	ic.kc.update(db, key, func(old cachedItem, _ bool) cachedItem {
		return cachedItem{Item: it, calmAt: max(calmAt, old.calmAt), List: list, w: w}
	})
}

func (ic *itemCache) Drop(db int, key []byte) { ic.kc.Drop(db, key) }

// Items is the process's item cache.
func Items(c Scope) *itemCache { return &c.Process().items }

// largeGen is what the generation cache knows of a large collection: its
// type and generation. A generation belongs to one collection of one type
// for its whole life (ids are random and never reused; RENAME moves the key
// item with its generation, every other change of layout or type writes a
// new one or none), so a key item still holding gen is still that
// collection, whatever happened to the key in between.
type largeGen struct {
	typ string
	gen []byte
}

func (g largeGen) weight() int { return 64 + len(g.gen) }

// gensOf is the process's generation cache of large sets and hashes: a
// member write to one goes straight to its blind transaction (blindMembers;
// several members are read first), whose conditions (the key item holds
// the generation and is live) are all its correctness rests on. Unlike the
// item cache it needs no exact item, so blind writes, which do not learn
// the new count, keep it valid.
func gensOf(c Scope) *keyCache[largeGen] { return &c.Process().gens }

// NoteGen records in the generation cache that key, as a collection of
// type typ, is large with generation gen, or not large at all (gen nil:
// inline, absent, or of another type).
func NoteGen(c Scope, key []byte, typ string, gen []byte) {
	if !KeyFits(key) || (typ != TypeSet && typ != TypeHash && typ != TypeZSet) {
		return
	}
	if gen != nil {
		gensOf(c).Put(c.DB(), key, largeGen{typ: typ, gen: gen})
		return
	}
	gensOf(c).Drop(c.DB(), key)
}

// cachedLarge is the large collection the generation cache remembers for
// key, with type typ (nil if none): a view with the generation only, for a
// blind write.
func cachedLarge(c Scope, key []byte, typ string) *Collection {
	if !KeyFits(key) {
		return nil
	}
	lg, ok := gensOf(c).Get(c.DB(), key)
	if !ok || lg.typ != typ {
		return nil
	}
	return &Collection{c: c, Type: typ, Key: key, Gen: lg.gen}
}

// ---- member encoding ---------------------------------------------------------

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
// order is one Query (a sorted set's members by score; zsets.go). The
// engine writes and deletes order items with the member items, in the same
// transaction or staged generation.
type MemberOrder struct {
	// sk is the order item's sort key for member m with value v: prefix
	// bytes, then m itself when m is at most MaxPlainSK bytes long.
	SK     func(m []byte, v dynastore.Value) []byte
	Prefix int
}

// MemberOrders holds the types that keep a MemberOrder, registered by
// their family's init.
var MemberOrders = map[string]MemberOrder{}

// MemberSpan is the layout of a type whose members are positions
// (PosMember) in a range its key item holds in two N attributes: the first
// position and one past the last (a list: lists.go). Only the members in
// the range are entries. Member items outside it are leftovers of earlier
// states (popped members whose clean-up did not run, members written by a
// change that lost a race): no read reaches them, the write that reaches
// their position again overwrites them, and they go with their generation.
// So every write of such a type sets the range (SetKeyAttr) and is guarded
// by the key item's ver, its member writes need no condition of their own,
// and a change too big for one transaction writes around the range
// (planSpan) instead of through pending items.
type MemberSpan struct{ Lo, Hi string }

// MemberSpans holds the types laid out as a MemberSpan, registered by their
// family's init.
var MemberSpans = map[string]MemberSpan{}

// span returns the range of a spanned type's collection as read, or, when
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
// be spelt out in the sort key is kept in the item (attrMember).
func orderItem(typ string, gen, m []byte, v dynastore.Value) dynastore.Item {
	o, ok := MemberOrders[typ]
	if !ok {
		return nil
	}
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(MembersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(o.SK(m, v))},
	}
	if len(m) > MaxPlainSK {
		it.Set(attrMember, dynastore.B(bytes.Clone(m)))
	}
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

// memberItem builds a member item; v is nil for sets.
func memberItem(gen, m []byte, v dynastore.Value) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(MembersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(MemberSK(m))},
	}
	if len(m) > MaxPlainSK {
		it.Set(attrMember, dynastore.B(bytes.Clone(m)))
	}
	if v != nil {
		it.Set(AttrValue, v)
	}
	return it
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

// ValueBytes is the Redis string of a stored hash value.
func ValueBytes(v dynastore.Value) []byte {
	switch v := v.(type) {
	case dynastore.B:
		return v
	case dynastore.N:
		return []byte(v)
	}
	return nil
}

// ValueSize is the byte length of a stored hash value (0 for none).
func ValueSize(v dynastore.Value) int {
	return len(ValueBytes(v))
}

// ---- the generation registry ---------------------------------------------------

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
	g, ok := it.Get(AttrGen).(dynastore.B)
	if !ok || len(g) == 0 {
		return nil
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: genRegKey(g),
		Update: &dynastore.Update{Set: []dynastore.SetAction{
			{Attr: attrOwner, Val: dynastore.B(bytes.Clone(newPK))},
		}},
		Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
	}}
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
	g, ok := src.Get(AttrGen).(dynastore.B)
	if !ok {
		return out, nil, nil
	}
	if src.Has(AttrPending) {
		if err := rollForward(ctx, st, src.Key(), src); err != nil {
			return nil, nil, err
		}
		out.Delete(AttrPending)
	}
	typ, _ := src.Get(AttrType).(dynastore.S)
	gen, _, err := stageGen(ctx, st, string(typ), dstPK, nowMS, func(yield func(m []byte, v dynastore.Value) error) error {
		return eachMember(ctx, st, g, yield)
	})
	if err != nil {
		return nil, nil, err
	}
	out.Set(AttrGen, dynastore.B(gen))
	return out, []dynastore.TxAction{genAliveCheck(gen)}, nil
}

// stageGen registers a new generation owned by ownerPK and writes the
// entries entries yields into it. Nothing references it yet: the caller
// publishes it with a transaction that includes genAliveCheck(gen).
func stageGen(ctx context.Context, st dynastore.Store, typ string, ownerPK []byte, nowMS int64, entries func(yield func(m []byte, v dynastore.Value) error) error) ([]byte, int64, error) {
	if txn, ok := st.(*Txn); ok {
		// Inside a transaction (EXEC) the generation is staged in the
		// store itself: nobody sees it until the transaction's commit
		// publishes it, and one that is never published is garbage the
		// sweeper collects. Buffered, a big SADD would make the commit
		// exceed DynamoDB's transaction limits.
		st = txn.Base()
	}
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
		items := []dynastore.Item{memberItem(gen, m, v)}
		if o := orderItem(typ, gen, m, v); o != nil {
			items = append(items, o)
		}
		sz := len(items) * (len(m) + ValueSize(v) + 64)
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
			if saw != nil {
				saw(it)
			}
			if err := fn(decodeMember(it), it.Get(AttrValue)); err != nil {
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

// ---- the collection view -------------------------------------------------------

// collection is one collection key as read by one attempt, plus the changes
// the attempt stages. Reads see the staged changes.
type Collection struct {
	c    Scope
	Type string
	Key  []byte
	KS   KeyState
	// wrongType: the key is live and holds another type.
	WrongType bool

	// gen is non-nil for the large layout; n is then the entry count.
	Gen []byte
	n   int64
	// inline holds an inline collection's entries (nil values for sets),
	// keyed by string(member).
	Inline map[string]dynastore.Value
	// known caches large-layout lookups: present members with their values.
	Known map[string]MemberState

	puts map[string]dynastore.Value
	dels map[string]bool
	// replace: the commit overwrites the key (whatever it held) with exactly
	// the staged puts and no expiry (SINTERSTORE and friends).
	Replace bool
	// pagesRead is set when a read took more than one query page.
	PagesRead bool
	// first is the first page of a large collection's members when it was
	// read beside the key item (see pageAhead); each uses it once.
	first *dynastore.QueryPage
	// exact: the command's result depends on the whole collection (it read
	// it with each), so its commit must guard the key item's ver rather
	// than only the members it changes.
	exact bool
	// keyAttrs are extra key item attributes the commit writes (a list's
	// head and tail, say); see SetKeyAttr.
	keyAttrs map[string]dynastore.Value
	// planned is set by a plan with actions; genAfter is then the
	// generation the key item holds once they are applied (nil: none),
	// and after the key item itself when the plan writes it whole
	// (afterKnown; nil when it deletes it).
	planned    bool
	genAfter   []byte
	after      dynastore.Item
	afterKnown bool
	// pending is what the key item marks once a plan whose writes wait in
	// pending items (planPending) commits: the commit's caller rolls it
	// forward. pendingTx is that change's id from the moment its pending
	// items start to be written.
	pending   dynastore.Item
	pendingTx []byte
	// rolled: opening the collection rolled a change forward, so a page
	// read ahead of it may predate that (pageAhead.take).
	rolled bool
	// changes is the key item's attrChanges as read; sawRolling: a read
	// met an item a later change rolled forward, so what was read holds
	// only if the key item is still as read (ValidateRead).
	changes    int64
	SawRolling bool
	// rebuilt, when set, is the whole content the commit writes in place
	// of what the key holds (rebuiltLen entries; the expiry stays): a new
	// generation, or an inline item when it fits (see rebuild).
	rebuilt    func(yield func(m []byte, v dynastore.Value) error) error
	rebuiltLen int64
	// outside is the positions a spanned commit takes out of the range
	// (MemberSpan), deleted after it succeeds (dropOutside).
	outside []int64
	// ListKnown is what the item cache keeps with the key item after the
	// commit (a large list's element values: ListKnown).
	ListKnown *ListKnown
}

// saw notes what a read of member or order items met.
func (cl *Collection) saw(it dynastore.Item) {
	if v := it.Get(attrRolling); v != nil {
		if n, err := NumberInt(v); err != nil || n > cl.changes {
			cl.SawRolling = true
		}
	}
}

// SetKeyAttr stages an extra attribute of the key item. The commit writes
// it whatever the layout; an inline commit rewrites the whole key item, so
// a family with extra attributes stages all of them on every write. Such a
// commit is always guarded by the key item's ver.
func (cl *Collection) SetKeyAttr(name string, v dynastore.Value) {
	if cl.keyAttrs == nil {
		cl.keyAttrs = map[string]dynastore.Value{}
	}
	cl.keyAttrs[name] = v
	cl.exact = true
}

// KeyAttr returns an attribute of the key item as read (nil if none).
func (cl *Collection) KeyAttr(name string) dynastore.Value {
	if !cl.KS.Live || cl.Replace {
		return nil
	}
	return cl.KS.Raw.Get(name)
}

type MemberState struct {
	present bool
	v       dynastore.Value
}

// Open reads key (one GetItem) as a collection of type typ.
func Open(c Scope, key []byte, typ string) (*Collection, error) {
	it, err := c.Data().Get(c, ItemKey(c.DB(), key))
	if err != nil {
		return nil, err
	}
	return FromItem(c, key, typ, it)
}

// OpenMany reads several keys with one BatchGet.
func OpenMany(c Scope, keys [][]byte, typ string) ([]*Collection, error) {
	ks := make([]dynastore.Key, len(keys))
	for i, k := range keys {
		ks[i] = ItemKey(c.DB(), k)
	}
	items, err := c.Data().BatchGet(c, ks)
	if err != nil {
		return nil, err
	}
	out := make([]*Collection, len(keys))
	for i, it := range items {
		if out[i], err = FromItem(c, keys[i], typ, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FromItem decodes a key item read (or returned by a failed
// condition) as a collection of type typ, and remembers it in the item
// cache, and in the generation cache whether it is large.
func FromItem(c Scope, key []byte, typ string, it dynastore.Item) (_ *Collection, err error) {
	cl := &Collection{c: c, Type: typ, Key: key}
	if !KeyFits(key) {
		it = nil
	}
	ks, err := DecodeKey(it, c.NowMS())
	if err != nil {
		return nil, err
	}
	if ks.Live && ks.Type == typ && it.Has(AttrPending) {
		return rolledForward(c, key, typ, it)
	}
	cl.KS = ks
	defer func() {
		if err == nil && KeyFits(key) {
			NoteGen(c, key, typ, cl.Gen)
			Items(c).Put(c.DB(), key, it)
		}
	}()
	if !ks.Live {
		return cl, nil
	}
	if ks.Type != typ {
		cl.WrongType = true
		return cl, nil
	}
	if g, ok := it.Get(AttrGen).(dynastore.B); ok {
		cl.Gen = g
		if cl.n, err = NumberInt(it.Get(AttrCount)); err != nil {
			return nil, fmt.Errorf("model: collection count: %w", err)
		}
		if c := it.Get(attrChanges); c != nil {
			if cl.changes, err = NumberInt(c); err != nil {
				return nil, fmt.Errorf("model: collection changes: %w", err)
			}
		}
		return cl, nil
	}
	codec, ok := InlineCodecs[typ]
	if !ok {
		return nil, fmt.Errorf("model: no inline codec for type %q: %w", typ, dynastore.ErrInvalid)
	}
	if cl.Inline, err = codec.Decode(it); err != nil {
		return nil, err
	}
	return cl, nil
}

// rolledForward is FromItem of a key item that marks a change
// published but not rolled forward yet: it finishes the change first (its
// writes change no content). Inside a transaction the item is then decoded
// as it is without the mark (same ver: the commit checks that it still
// is); otherwise it is read again, since a read is not checked at the end.
func rolledForward(c Scope, key []byte, typ string, it dynastore.Item) (*Collection, error) {
	k := ItemKey(c.DB(), key)
	for range maxRollForwards {
		if err := rollForward(c, c.Data(), k, it); err != nil {
			return nil, err
		}
		if _, inTx := c.Data().(*Txn); inTx {
			it = it.Clone(0)
			it.Delete(AttrPending)
		} else {
			var err error
			if it, err = c.Data().Get(c, k); err != nil {
				return nil, err
			}
		}
		if !it.Has(AttrPending) {
			cl, err := FromItem(c, key, typ, it)
			if cl != nil {
				cl.rolled = true
			}
			return cl, err
		}
	}
	return nil, ErrConflict
}

// maxRollForwards bounds the changes one open rolls forward before it
// starts over (each one was published after the previous one finished).
const maxRollForwards = 8

// InlineCodec reads and writes one type's inline entries in its key item.
// Sets and hashes are registered here; the other families add theirs (a
// list's v as an L of B, entries keyed by PosMember) from their init.
type InlineCodec struct {
	Decode func(it dynastore.Item) (map[string]dynastore.Value, error)
	Encode func(it *dynastore.Item, entries map[string]dynastore.Value)
	// keepEmpty: the key outlives its last entry (a stream: Redis keeps
	// an emptied stream with its last id). Removing the last entry then
	// leaves an inline key item with no entries instead of deleting it.
	KeepEmpty bool
}

var InlineCodecs = map[string]InlineCodec{
	TypeSet: {
		Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
			names, _ := it.Get(AttrValue).(dynastore.BS)
			out := make(map[string]dynastore.Value, len(names))
			for _, m := range names {
				out[string(m)] = nil
			}
			return out, nil
		},
		Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
			names := make(dynastore.BS, 0, len(entries))
			for m := range entries {
				names = append(names, []byte(m))
			}
			it.Set(AttrValue, names)
		},
	},
	TypeHash: {
		Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
			names, _ := it.Get(AttrValue).(dynastore.BS)
			out := make(map[string]dynastore.Value, len(names))
			for _, m := range names {
				out[string(m)] = nil
			}
			// One pass over the attributes: a search of the item per
			// field would be quadratic in the fields.
			found := 0
			for _, a := range it {
				enc, ok := strings.CutPrefix(a.Name, attrFieldPrefix)
				if !ok {
					continue
				}
				f, err := base64.RawURLEncoding.DecodeString(enc)
				if err != nil {
					return nil, fmt.Errorf("model: hash field attribute %q: %w", a.Name, dynastore.ErrInvalid)
				}
				if v, listed := out[string(f)]; listed && v == nil {
					out[string(f)] = a.Value
					found++
				}
			}
			if found != len(names) {
				return nil, fmt.Errorf("model: hash field without a value: %w", dynastore.ErrInvalid)
			}
			return out, nil
		},
		Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
			names := make(dynastore.BS, 0, len(entries))
			for m, v := range entries {
				names = append(names, []byte(m))
				it.Set(FieldAttr([]byte(m)), v)
			}
			it.Set(AttrValue, names)
		},
	},
}

// check returns ErrWrongType when the key holds another type.
func (cl *Collection) Check() error {
	if cl.WrongType {
		return ErrWrongType
	}
	return nil
}

// exists reports whether the key exists as read (any type).
func (cl *Collection) Exists() bool { return cl.KS.Live }

// large reports whether the collection uses the large layout.
func (cl *Collection) Large() bool { return cl.Gen != nil }

// Len is the entry count as read.
func (cl *Collection) Len() int64 {
	if cl.Large() {
		return cl.n
	}
	return int64(len(cl.Inline))
}

// lookup returns the current values of members (staged changes included)
// and whether each is present. A large collection fetches the members it has
// not seen yet with one BatchGet.
func (cl *Collection) Lookup(members [][]byte) ([]dynastore.Value, []bool, error) {
	if err := cl.Fetch(members); err != nil {
		return nil, nil, err
	}
	vals := make([]dynastore.Value, len(members))
	ok := make([]bool, len(members))
	for i, m := range members {
		vals[i], ok[i] = cl.Current(m)
	}
	return vals, ok, nil
}

// committed returns a member's value as read (fetch first for large).
func (cl *Collection) Committed(m []byte) (dynastore.Value, bool) {
	if cl.Replace || cl.WrongType {
		return nil, false
	}
	if cl.Large() {
		st := cl.Known[string(m)]
		return st.v, st.present
	}
	v, ok := cl.Inline[string(m)]
	return v, ok
}

func (cl *Collection) Current(m []byte) (dynastore.Value, bool) {
	if v, ok := cl.puts[string(m)]; ok {
		return v, true
	}
	if cl.dels[string(m)] {
		return nil, false
	}
	return cl.Committed(m)
}

// fetch loads the large-layout members not looked up yet.
func (cl *Collection) Fetch(members [][]byte) error {
	if !cl.Large() || cl.Replace {
		return nil
	}
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	var keys []dynastore.Key
	var want [][]byte
	seen := map[string]bool{}
	for _, m := range members {
		if _, ok := cl.Known[string(m)]; ok || seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		keys = append(keys, MemberKey(cl.Gen, m))
		want = append(want, m)
	}
	if len(keys) == 0 {
		return nil
	}
	items, err := cl.c.Data().BatchGet(cl.c, keys)
	if err != nil {
		return err
	}
	for i, it := range items {
		cl.saw(it)
		st := MemberState{}
		if it != nil && bytes.Equal(decodeMember(it), want[i]) {
			st = MemberState{present: true, v: it.Get(AttrValue)}
		}
		cl.Known[string(want[i])] = st
	}
	return nil
}

// put stages member m with value v (nil for sets).
func (cl *Collection) Put(m []byte, v dynastore.Value) {
	if cl.puts == nil {
		cl.puts = map[string]dynastore.Value{}
	}
	delete(cl.dels, string(m))
	cl.puts[string(m)] = v
}

// del stages the removal of member m.
func (cl *Collection) Del(m []byte) {
	if cl.dels == nil {
		cl.dels = map[string]bool{}
	}
	delete(cl.puts, string(m))
	cl.dels[string(m)] = true
}

// each calls fn for every committed entry (staged changes are not seen).
// Reading a large collection over several pages marks the view so the
// caller validates it (ValidateRead) before trusting the result.
func (cl *Collection) Each(fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.WrongType || !cl.KS.Live {
		return nil
	}
	if !cl.Large() {
		// Member order, as the large layout's partition order: lists rely
		// on it (their members are position keys).
		ms := make([]string, 0, len(cl.Inline))
		for m := range cl.Inline {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		for _, m := range ms {
			if err := fn([]byte(m), cl.Inline[m]); err != nil {
				return err
			}
		}
		return nil
	}
	first := cl.first
	cl.first = nil
	return eachMemberPaged(cl.c, cl.c.Data(), cl.Gen, first, fn, func() { cl.PagesRead = true }, cl.saw)
}

// EachOrdered calls fn for the committed entries whose order sort key
// (MemberOrder) lies in [lo, hi) (nil: unbounded), in that order or, when
// reverse, the opposite one, until fn returns ErrEnough; staged changes are
// not seen. A large collection reads order items a page at a time, the
// first page of at most hint items (0: a full page), so a command that
// needs the first few reads only them. As each, it makes the commit depend
// on the whole collection.
func (cl *Collection) EachOrdered(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.WrongType || !cl.KS.Live {
		return nil
	}
	if lo == nil {
		lo = []byte{SKOrder}
	}
	if hi == nil {
		hi = []byte{SKOrder + 1}
	}
	err := cl.eachOrderedIn(lo, hi, reverse, hint, fn)
	if errors.Is(err, ErrEnough) {
		return nil
	}
	return err
}

func (cl *Collection) eachOrderedIn(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	if !cl.Large() {
		type entry struct {
			sk, m []byte
			v     dynastore.Value
		}
		order := MemberOrders[cl.Type]
		var es []entry
		for m, v := range cl.Inline {
			sk := order.SK([]byte(m), v)
			if bytes.Compare(sk, lo) >= 0 && bytes.Compare(sk, hi) < 0 {
				es = append(es, entry{sk, []byte(m), v})
			}
		}
		sort.Slice(es, func(i, j int) bool { return (bytes.Compare(es[i].sk, es[j].sk) < 0) != reverse })
		for _, e := range es {
			if err := fn(e.m, e.v); err != nil {
				return err
			}
		}
		return nil
	}
	// What is read is known: a commit that removes it (ZPOPMIN) need not
	// fetch its members again.
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	// BETWEEN is inclusive: an item whose key is hi itself is skipped.
	q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBetween, A: lo, B: hi, Reverse: reverse, Limit: MemberPageItems}
	if hint > 0 && hint < MemberPageItems {
		q.Limit = hint
	}
	for {
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if sk, _ := it.Get(dynastore.AttrSK).(dynastore.B); bytes.Equal(sk, hi) {
				continue
			}
			cl.saw(it)
			m, v := decodeOrderItem(cl.Type, it)
			cl.Known[string(m)] = MemberState{present: true, v: v}
			if err := fn(m, v); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		cl.PagesRead = true
		q.After, q.Limit = page.Next, MemberPageItems
	}
}

// ---- ordered range reads -----------------------------------------------------

// EachRange calls fn for the committed entries whose members lie between
// from and to (both inclusive; nil: unbounded), in member order, or in
// reverse member order when rev, until fn returns false. Only members of
// at most MaxPlainSK bytes are in member order in a large collection (the
// longer ones sit under digests), so callers range over short members
// (a stream's 16-byte ids). A large collection is read a page at a time
// starting at the bound, pages of pageHint items (what the caller expects
// to need; 0: MemberPageItems), so a read that stops early costs only the
// pages it needed. Like each, reading several pages marks the view for
// ValidateRead; unlike each, it does not make the commit exact.
func (cl *Collection) EachRange(from, to []byte, rev bool, pageHint int, fn func(m []byte, v dynastore.Value) (bool, error)) error {
	if cl.WrongType || !cl.KS.Live || cl.Replace {
		return nil
	}
	in := func(m []byte) bool {
		return (from == nil || bytes.Compare(m, from) >= 0) && (to == nil || bytes.Compare(m, to) <= 0)
	}
	if !cl.Large() {
		ms := make([]string, 0, len(cl.Inline))
		for m := range cl.Inline {
			if in([]byte(m)) {
				ms = append(ms, m)
			}
		}
		sort.Strings(ms)
		for i := range ms {
			m := ms[i]
			if rev {
				m = ms[len(ms)-1-i]
			}
			if more, err := fn([]byte(m), cl.Inline[m]); err != nil || !more {
				return err
			}
		}
		return nil
	}
	q := dynastore.Query{PK: MembersPK(cl.Gen), Reverse: rev, Limit: MemberPageItems}
	if pageHint > 0 && pageHint < MemberPageItems {
		q.Limit = pageHint
	}
	lo, hi := []byte{skMember}, []byte{skDigest} // every plain member
	if from != nil {
		lo = MemberSK(from)
	}
	if to != nil {
		hi = MemberSK(to)
	}
	q.Op, q.A, q.B = dynastore.SKBetween, lo, hi
	for pages := 0; ; pages++ {
		if pages > 0 {
			cl.PagesRead = true
		}
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m := decodeMember(it)
			if !in(m) {
				continue
			}
			if more, err := fn(m, it.Get(AttrValue)); err != nil || !more {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		q.After = page.Next
	}
}

// ValidateRead re-reads the key items of views whose reads were not one
// consistent snapshot (several pages, or several keys) and returns
// ErrConflict if any changed since it was opened.
func ValidateRead(c Scope, cls ...*Collection) error {
	need := len(cls) > 1
	for _, cl := range cls {
		need = need || cl.PagesRead || cl.SawRolling
	}
	if !need {
		return nil
	}
	keys := make([]dynastore.Key, len(cls))
	for i, cl := range cls {
		keys[i] = ItemKey(c.DB(), cl.Key)
	}
	items, err := c.Data().BatchGet(c, keys)
	if err != nil {
		return err
	}
	for i, cl := range cls {
		if !SameVer(cl.KS.Raw, items[i]) || items[i].Has(AttrPending) {
			return ErrConflict
		}
	}
	return nil
}

// SameVer reports whether two reads of one key item saw the same version.
func SameVer(a, b dynastore.Item) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	// Whatever the token's type: items written before versions became
	// strings hold Numbers.
	va, vb := a.Get(AttrVer), b.Get(AttrVer)
	return (va == nil && vb == nil) || dynastore.ValuesEqual(va, vb)
}

// RandomMembers returns up to count distinct members (values included)
// chosen at random: all of an inline collection's members shuffled, or, for
// a large one, a run starting at a random position in the partition.
func (cl *Collection) RandomMembers(count int) ([][]byte, []dynastore.Value, error) {
	var ms [][]byte
	var vs []dynastore.Value
	if !cl.Large() {
		for m, v := range cl.Inline {
			ms = append(ms, []byte(m))
			vs = append(vs, v)
		}
		rand.Shuffle(len(ms), func(i, j int) {
			ms[i], ms[j] = ms[j], ms[i]
			vs[i], vs[j] = vs[j], vs[i]
		})
		if len(ms) > count {
			ms, vs = ms[:count], vs[:count]
		}
		return ms, vs, nil
	}
	start := make([]byte, 9)
	start[0] = byte(rand.IntN(2)) // plain or digest members
	for i := 1; i < len(start); i++ {
		start[i] = byte(rand.IntN(256))
	}
	q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBetween, A: start, B: memberSKLast}
	wrapped := false
	for len(ms) < count {
		q.Limit = count - len(ms)
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m := decodeMember(it)
			if wrapped && bytes.Compare(MemberSK(m), start) >= 0 {
				return ms, vs, nil
			}
			ms = append(ms, m)
			vs = append(vs, it.Get(AttrValue))
		}
		if page.Next != nil {
			cl.PagesRead = true
			q.After = page.Next
			continue
		}
		if wrapped {
			break
		}
		wrapped = true
		cl.PagesRead = true
		q = dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKLT, A: memberSKEnd}
	}
	if wrapped {
		// The run may have come back to where it started.
		seen := map[string]bool{}
		k := 0
		for i, m := range ms {
			if !seen[string(m)] {
				seen[string(m)] = true
				ms[k], vs[k] = m, vs[i]
				k++
			}
		}
		ms, vs = ms[:k], vs[:k]
	}
	if len(ms) > count {
		ms, vs = ms[:count], vs[:count]
	}
	// What was read is known: a following commit need not fetch it again.
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	for i, m := range ms {
		cl.Known[string(m)] = MemberState{present: true, v: vs[i]}
	}
	return ms, vs, nil
}

// ---- commit ----------------------------------------------------------------------

func (cl *Collection) Changed() bool {
	return cl.Replace || cl.rebuilt != nil || len(cl.puts) > 0 || len(cl.dels) > 0 || len(cl.keyAttrs) > 0
}

// rebuild stages the replacement of the collection's whole content by the
// n entries entries yields (in any order; for a spanned type, positions
// from 0 on), keeping the key's expiry: the commit writes a new generation,
// or an inline item when the result fits one. Other staged changes are
// dropped.
func (cl *Collection) Rebuild(n int64, entries func(yield func(m []byte, v dynastore.Value) error) error) {
	cl.puts, cl.dels = nil, nil
	cl.rebuilt, cl.rebuiltLen = entries, n
}

// inlineLimit is the most entries an inline collection of the type can
// hold, whatever the encoding parameters were when it was written.
func inlineLimit(typ string) int {
	switch typ {
	case TypeHash, TypeZSet:
		return InlineMaxHash
	case TypeList:
		return InlineMaxList
	}
	return InlineMaxSet
}

// fitsInline reports whether entries can be stored inline within lim.
func fitsInline(lim InlineLimits, entries map[string]dynastore.Value) bool {
	if len(entries) > lim.Entries {
		return false
	}
	for m, v := range entries {
		if len(m) > lim.Bytes || ValueSize(v) > lim.Bytes {
			return false
		}
	}
	return true
}

// baseKeyItem is the key item's common part for a write: type, fresh ver,
// and the expiry kept unless the commit replaces the key.
func (cl *Collection) baseKeyItem() dynastore.Item {
	k := ItemKey(cl.c.DB(), cl.Key)
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: AttrType, Value: dynastore.S(cl.Type)},
		{Name: AttrVer, Value: NewVer()},
	}
	if !cl.Replace && cl.KS.Live && cl.KS.HasExpiry {
		it.Set(AttrExpiry, NInt(cl.KS.Expiry))
		it.Set(dynastore.AttrTTL, TTLSeconds(cl.KS.Expiry))
	}
	if big := cl.KeyAttr(AttrBigEncoding); big != nil && !cl.WrongType {
		it.Set(AttrBigEncoding, big)
	}
	for name, v := range cl.keyAttrs {
		it.Set(name, v)
	}
	return it
}

// keyAttrSets are the SET actions of the staged key attributes.
func (cl *Collection) keyAttrSets() []dynastore.SetAction {
	var out []dynastore.SetAction
	for name, v := range cl.keyAttrs {
		out = append(out, dynastore.SetAction{Attr: name, Val: v})
	}
	return out
}

// inlineItem is the key item of an inline collection holding entries.
func (cl *Collection) inlineItem(entries map[string]dynastore.Value) dynastore.Item {
	it := cl.baseKeyItem()
	InlineCodecs[cl.Type].Encode(&it, entries)
	return it
}

// plan stages what must be staged (a new generation) and returns the
// actions that commit this view's changes, each guarded by the key item's
// ver as read. No actions means nothing to write.
func (cl *Collection) Plan() ([]dynastore.TxAction, error) {
	actions, gen, err := cl.planActions()
	cl.planned, cl.genAfter, cl.after, cl.afterKnown = len(actions) > 0, gen, nil, false
	k := ItemKey(cl.c.DB(), cl.Key)
	for _, a := range actions {
		switch {
		case a.Op == dynastore.TxPut && bytes.Equal(a.Item.Key().PK, k.PK):
			cl.after, cl.afterKnown = a.Item, true
		case a.Op == dynastore.TxDelete && bytes.Equal(a.Key.PK, k.PK):
			cl.afterKnown = true
		case a.Op == dynastore.TxUpdate && bytes.Equal(a.Key.PK, k.PK) && len(a.Update.Add) == 0 && cl.KS.Raw != nil:
			// Only SETs, guarded by the ver as read: the item after is
			// that one updated (the commutative form ADDs to n, whose
			// value then depends on concurrent writers).
			if after, err := dynastore.ApplyValidUpdate(k, cl.KS.Raw, *a.Update); err == nil {
				cl.after, cl.afterKnown = after, true
			}
		}
	}
	return actions, err
}

// planActions is plan, also returning the generation the key item holds
// after the actions (nil when they leave it inline or delete it).
func (cl *Collection) planActions() ([]dynastore.TxAction, []byte, error) {
	if !cl.Changed() {
		return nil, nil, nil
	}
	if !KeyFits(cl.Key) {
		return nil, nil, ErrKeyTooLong
	}
	key := ItemKey(cl.c.DB(), cl.Key)
	guard := cl.KS.Guard()
	if !cl.Large() || cl.Replace || cl.rebuilt != nil {
		return cl.planWhole(key, guard)
	}

	// Large layout.
	var changed [][]byte
	for m := range cl.puts {
		changed = append(changed, []byte(m))
	}
	for m := range cl.dels {
		changed = append(changed, []byte(m))
	}
	lo, hi, spanned, err := cl.Span(false)
	if err != nil {
		return nil, nil, err
	}
	if spanned {
		// A position is an entry exactly when it is in the range: nothing
		// to read.
		if cl.Known == nil {
			cl.Known = map[string]MemberState{}
		}
		for _, m := range changed {
			if _, ok := cl.Known[string(m)]; !ok {
				p, _ := MemberPos(m)
				cl.Known[string(m)] = MemberState{present: p >= lo && p < hi}
			}
		}
	} else if err := cl.Fetch(changed); err != nil {
		return nil, nil, err
	}
	n := cl.n
	var members []dynastore.TxAction
	size := 0
	for m, v := range cl.puts {
		// Each member action is conditioned on the member being as read,
		// which is all a command that did not read the whole collection
		// depends on (see below). A spanned type's writes are all guarded
		// by the key item's ver instead (they set its range).
		var cond dynastore.Cond = dynastore.NotExists{Attr: dynastore.AttrPK}
		if st := cl.Known[m]; st.present {
			cond = dynastore.Exists{Attr: dynastore.AttrPK}
			if st.v != nil {
				cond = dynastore.Compare{Attr: AttrValue, Op: dynastore.OpEQ, Val: st.v}
			}
		} else {
			n++
		}
		if spanned {
			cond = nil
		}
		members = append(members, dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, []byte(m), v), Cond: cond})
		size += len(m) + ValueSize(v) + 64
		members = append(members, cl.reorder([]byte(m), cl.Known[m], v)...)
	}
	for m := range cl.dels {
		if st := cl.Known[m]; st.present {
			n--
			var cond dynastore.Cond = dynastore.Exists{Attr: dynastore.AttrPK}
			if spanned {
				cond = nil
			}
			members = append(members, dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, []byte(m)), Cond: cond})
			members = append(members, cl.reorder([]byte(m), st, nil)...)
		}
	}
	if n == 0 {
		if InlineCodecs[cl.Type].KeepEmpty {
			// Back to an inline key item with no entries; the generation
			// is left to the sweeper.
			return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(nil), Cond: guard}}, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if len(members) == 0 && len(cl.keyAttrs) == 0 {
		return nil, nil, nil
	}
	if len(members) <= MaxTxMembers && size <= maxTxBytes {
		keyUpdate := cl.keyUpdate(key, guard, n)
		if !cl.exact {
			// Commutative form: concurrent writers of different members
			// of one large collection do not invalidate each other (the
			// writer that would empty it fails genLiveCond and takes the
			// guarded path above on its re-run).
			delta := n - cl.n
			keyUpdate.Update = &dynastore.Update{
				Set: []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
				Add: []dynastore.AttrValue{{Attr: AttrCount, Val: NInt(delta)}},
			}
			keyUpdate.Cond = genLiveCond(cl.Gen, cl.c.NowMS(), delta)
		}
		return append(members, keyUpdate), cl.Gen, nil
	}
	_, inTx := cl.c.Data().(*Txn)
	if spanned && !inTx {
		if acts, ok, err := cl.planSpan(key, guard, members, n, lo, hi); ok || err != nil {
			return acts, cl.Gen, err
		}
	}
	if !inTx {
		// Too big for one transaction: the writes wait in pending items
		// (invisible), one transaction publishes them with the key item,
		// and they are rolled forward (rollForward) before anyone reads.
		return cl.planPending(key, guard, members, n)
	}
	// Inside MULTI or a script, whose commit is not this plan's to roll
	// forward: publish a new generation with the result.
	gen, n, err := stageGen(cl.c, cl.c.Data(), cl.Type, key.PK, cl.c.NowMS(), func(yield func([]byte, dynastore.Value) error) error {
		err := eachMember(cl.c, cl.c.Data(), cl.Gen, func(m []byte, v dynastore.Value) error {
			if _, ok := cl.puts[string(m)]; ok || cl.dels[string(m)] {
				return nil
			}
			if p, _ := MemberPos(m); spanned && (p < lo || p >= hi) {
				return nil // a leftover (MemberSpan)
			}
			return yield(m, v)
		})
		if err != nil {
			return err
		}
		for m, v := range cl.puts {
			if err := yield([]byte(m), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrGen, Val: dynastore.B(gen)},
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}, genAliveCheck(gen)}, gen, nil
}

// planWhole is the commit of a collection written whole: an inline one,
// one the commit replaces (replace), or one rebuilt (rebuild). The result
// goes inline when it fits, else into a new generation the commit
// publishes.
func (cl *Collection) planWhole(key dynastore.Key, guard dynastore.Cond) ([]dynastore.TxAction, []byte, error) {
	lim := cl.c.Process().inline(cl.Type)
	entries := cl.rebuilt
	n := cl.rebuiltLen
	var small map[string]dynastore.Value // the entries, when they may fit inline
	if entries == nil {
		small = map[string]dynastore.Value{}
		if !cl.Replace && !cl.WrongType {
			for m, v := range cl.Inline {
				small[m] = v
			}
		}
		for m := range cl.dels {
			delete(small, m)
		}
		for m, v := range cl.puts {
			small[m] = v
		}
		n = int64(len(small))
		entries = func(yield func([]byte, dynastore.Value) error) error {
			for m, v := range small {
				if err := yield([]byte(m), v); err != nil {
					return err
				}
			}
			return nil
		}
	} else if n <= int64(lim.Entries) {
		small = make(map[string]dynastore.Value, n)
		err := entries(func(m []byte, v dynastore.Value) error {
			small[string(m)] = v
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if n == 0 && !InlineCodecs[cl.Type].KeepEmpty {
		if cl.KS.Raw == nil || (!cl.KS.Live && !cl.Replace) {
			return nil, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if small != nil && fitsInline(lim, small) {
		return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(small), Cond: guard}}, nil, nil
	}
	sp, spanned := MemberSpans[cl.Type]
	var lo, hi int64 // a spanned type's range: the positions written
	gen, n, err := stageGen(cl.c, cl.c.Data(), cl.Type, key.PK, cl.c.NowMS(), func(yield func([]byte, dynastore.Value) error) error {
		first := true
		return entries(func(m []byte, v dynastore.Value) error {
			if p, ok := MemberPos(m); ok && spanned {
				if first {
					lo, hi, first = p, p+1, false
				}
				lo, hi = min(lo, p), max(hi, p+1)
			}
			return yield(m, v)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	it := cl.baseKeyItem()
	it.Set(AttrGen, dynastore.B(gen))
	it.Set(AttrCount, NInt(n))
	if spanned {
		it.Set(sp.Lo, NInt(lo))
		it.Set(sp.Hi, NInt(hi))
	}
	return []dynastore.TxAction{{Op: dynastore.TxPut, Item: it, Cond: guard}, genAliveCheck(gen)}, gen, nil
}

// planSpan is the large-layout commit of a spanned type's member writes
// (their member actions; n the count after them) that do not fit one
// transaction, when every put is to a position outside the range as read
// (lo, hi) and every delete to one outside the range after the change (a
// big push, pop or LTRIM): no read can see any of them before or after the
// key item's update, so the puts are written first, directly, a
// transaction at a time, each checking that the key item is still as read
// (they never overwrite what a concurrent writer published), and the
// deletes are left to dropOutside once the update is in. ok is false when
// the change is not of that kind (planPending then takes it).
func (cl *Collection) planSpan(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n, lo, hi int64) (_ []dynastore.TxAction, ok bool, err error) {
	nlo, nhi, _, err := cl.Span(true)
	if err != nil {
		return nil, false, err
	}
	var puts []dynastore.TxAction
	var outside []int64
	for _, a := range members {
		if a.Op == dynastore.TxPut {
			if p, _ := MemberPos(decodeMember(a.Item)); p >= lo && p < hi {
				return nil, false, nil
			}
			puts = append(puts, a)
			continue
		}
		p, _ := MemberPos(a.Key.SK[1:]) // a position's sort key is skMember and the position
		if p >= nlo && p < nhi {
			return nil, false, nil
		}
		outside = append(outside, p)
	}
	check := dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: guard}
	var batches [][]dynastore.TxAction
	var batch []dynastore.TxAction
	size := 0
	for _, a := range puts {
		sz := dynastore.ItemSize(a.Item)
		if len(batch) == dynastore.MaxTxActions-1 || size+sz > maxTxBytes {
			batches, batch, size = append(batches, append(batch, check)), nil, 0
		}
		batch = append(batch, a)
		size += sz
	}
	if len(batch) > 0 {
		batches = append(batches, append(batch, check))
	}
	if err := parallel(len(batches), func(i int) error { return CommitActions(cl.c, batches[i]) }); err != nil {
		return nil, true, err
	}
	slices.Sort(outside)
	cl.outside = outside
	return []dynastore.TxAction{cl.keyUpdate(key, guard, n)}, true, nil
}

// keyUpdate is the update of a large collection's key item under guard
// that sets its count to n, a fresh ver and the staged key attributes.
func (cl *Collection) keyUpdate(key dynastore.Key, guard dynastore.Cond, n int64) dynastore.TxAction {
	return dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}
}

// dropOutside deletes the members a committed spanned change took out of
// the range (planSpan), a transaction at a time, each checking that the
// key item still holds the generation with every one of them outside its
// range (a later push may have reached a position again: then it is an
// entry, and the clean-up stops). It is best effort: leftovers are
// harmless (MemberSpan).
func (cl *Collection) dropOutside() {
	sp := MemberSpans[cl.Type]
	nlo, _, _, err := cl.Span(true)
	if err != nil {
		return
	}
	key := ItemKey(cl.c.DB(), cl.Key)
	below, above := cl.outside, []int64(nil)
	if i, _ := slices.BinarySearch(cl.outside, nlo); i < len(cl.outside) {
		below, above = cl.outside[:i], cl.outside[i:]
	}
	run := func(ps []int64, isBelow bool) error {
		for len(ps) > 0 {
			batch := ps[:min(len(ps), dynastore.MaxTxActions-1)]
			ps = ps[len(batch):]
			acts := make([]dynastore.TxAction, 0, len(batch)+1)
			for _, p := range batch {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, PosMember(p))})
			}
			out := dynastore.Cond(dynastore.Compare{Attr: sp.Lo, Op: dynastore.OpGT, Val: NInt(batch[len(batch)-1])})
			if !isBelow {
				out = dynastore.Compare{Attr: sp.Hi, Op: dynastore.OpLE, Val: NInt(batch[0])}
			}
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: dynastore.And{
				dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(cl.Gen)}, out,
			}})
			if err := CommitActions(cl.c, acts); err != nil {
				return err
			}
		}
		return nil
	}
	if run(below, true) == nil {
		_ = run(above, false)
	}
}

// planPending is the large-layout commit of member writes (their member
// actions; n the count after them) that do not fit one transaction. Each
// write goes, unconditioned, into a pending item of a fresh change id (sort
// key skPending, id, the target's sort key), written concurrently a
// transaction of them at a time; no read reaches them. The returned commit
// is one update of the key item, guarded by its ver as read (which also
// stands for every member read: none changes without it), that sets the
// count and marks the change pending. The commit's caller rolls it forward
// (Commit), and so does anyone who opens the collection first.
// The cost is in proportion to the change, not to the collection.
func (cl *Collection) planPending(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n int64) ([]dynastore.TxAction, []byte, error) {
	tx := newGenID()[:8]
	cl.pendingTx = tx
	var batches [][]dynastore.TxAction
	var batch []dynastore.TxAction
	size := 0
	for _, a := range members {
		var it dynastore.Item
		target := a.Key
		if a.Op == dynastore.TxPut {
			target = a.Item.Key()
			it = a.Item.Clone(0)
			it.Set(attrPendingOp, dynastore.S("p"))
		} else {
			it = dynastore.Item{{Name: attrPendingOp, Value: dynastore.S("d")}}
		}
		it.Set(dynastore.AttrPK, dynastore.B(target.PK))
		it.Set(dynastore.AttrSK, dynastore.B(append(pendingPrefix(tx), target.SK...)))
		sz := dynastore.ItemSize(it)
		if len(batch) == dynastore.MaxTxActions || size+sz > maxTxBytes {
			batches, batch, size = append(batches, batch), nil, 0
		}
		batch = append(batch, dynastore.TxAction{Op: dynastore.TxPut, Item: it})
		size += sz
	}
	batches = append(batches, batch)
	if err := parallel(len(batches), func(i int) error { return cl.c.Data().Transact(cl.c, batches[i]) }); err != nil {
		return nil, nil, fmt.Errorf("writing pending members: %w", err)
	}
	cl.pending = dynastore.Item{
		{Name: AttrGen, Value: dynastore.B(cl.Gen)},
		{Name: AttrPending, Value: dynastore.B(tx)},
		{Name: attrPhase, Value: NInt(1)},
		{Name: attrChanges, Value: NInt(cl.changes + 1)},
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
			{Attr: AttrPending, Val: cl.pending.Get(AttrPending)},
			{Attr: attrPhase, Val: cl.pending.Get(attrPhase)},
			{Attr: attrChanges, Val: cl.pending.Get(attrChanges)},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}}, cl.Gen, nil
}

// dropUnpublished deletes, best effort, the pending items the plans of
// writes wrote for changes that will never be published (the commit was
// refused, or a plan failed), so a conflict on a big change leaves nothing
// behind. Items a crashed writer leaves stay until the generation is swept.
func dropUnpublished(c Scope, writes []*Collection) {
	for _, cl := range writes {
		tx := cl.pendingTx
		if tx == nil {
			continue
		}
		cl.pending, cl.pendingTx = nil, nil
		st := c.Data()
		if txn, ok := st.(*Txn); ok {
			st = txn.Base()
		}
		q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBeginsWith, A: pendingPrefix(tx), Limit: dynastore.MaxTxActions}
		for {
			page, err := st.Query(c, q)
			if err != nil || len(page.Items) == 0 {
				break
			}
			dels := make([]dynastore.TxAction, len(page.Items))
			for i, it := range page.Items {
				dels[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: it.Key()}
			}
			if st.Transact(c, dels) != nil || page.Next == nil {
				break
			}
			q.After = page.Next
		}
	}
}

// pendingPrefix is the sort key prefix of change tx's pending items.
func pendingPrefix(tx []byte) []byte {
	return append([]byte{skPending}, tx...)
}

// rollForwardWidth is how many transactions of pending writes go out at
// once.
const rollForwardWidth = 4

// parallel runs f(0..n-1), rollForwardWidth at a time, and returns the
// first error once every call has returned (the callers' contexts do not
// outlive them).
func parallel(n int, f func(i int) error) error {
	errs := make(chan error, n)
	sem := make(chan struct{}, rollForwardWidth)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rollForward applies the pending writes of the change the key item it
// (the key item at key) marks as pending, then clears the mark.
//
// A reader that read the key item before the change was published may read
// members while it is applied, over many transactions; the items tell it,
// with no extra request unless it meets one. Every member or order item a
// change writes, or is about to delete, carries the change's count
// (attrRolling, from the key item's attrChanges): an item whose count is
// above the one of the key item the reader holds is newer than what it
// read, so it checks its key item again (ValidateRead). Two phases keep
// deletes visible that way until every write is in place:
//
//  1. every put is applied, carrying the count (and its pending item goes),
//     and every delete's target is marked with it;
//  2. the marked targets are deleted, with their pending items (a change
//     without deletes has no phase 2);
//
// and then the key item's mark goes. The key item holds the phase
// (attrPhase): every transaction of a phase also checks that the key item
// still marks the change at that phase, so any number of processes may roll
// it forward at once (the writes of a phase are idempotent), and a late
// one's writes fail once the change has moved on. It reads and writes the
// store itself, inside a transaction (EXEC) too: its writes change no
// content anyone can see, only how it is kept.
func rollForward(ctx context.Context, st dynastore.Store, key dynastore.Key, it dynastore.Item) error {
	if txn, ok := st.(*Txn); ok {
		st = txn.Base()
	}
	tx, _ := it.Get(AttrPending).(dynastore.B)
	tx = bytes.Clone(tx)
	gen, _ := it.Get(AttrGen).(dynastore.B)
	phase, _ := NumberInt(it.Get(attrPhase))
	count := it.Get(attrChanges)
	for ; phase <= 2; phase++ {
		at := dynastore.And{
			dynastore.Compare{Attr: AttrPending, Op: dynastore.OpEQ, Val: dynastore.B(tx)},
			dynastore.Compare{Attr: attrPhase, Op: dynastore.OpEQ, Val: NInt(phase)},
		}
		deletes, done, err := rollPhase(ctx, st, key, gen, tx, count, phase, at)
		if err != nil || done {
			return err
		}
		u := dynastore.Update{Set: []dynastore.SetAction{{Attr: attrPhase, Val: NInt(phase + 1)}}}
		if phase == 2 || !deletes {
			u = dynastore.Update{Remove: []string{AttrPending, attrPhase}}
			phase = 2
		}
		if _, err := st.Update(ctx, key, u, dynastore.WriteOptions{Cond: at}); err != nil && !errors.Is(err, dynastore.ErrConditionFailed) {
			return fmt.Errorf("rolling a change forward: %w", err)
		}
	}
	return nil
}

// rollPhase runs one phase of rollForward over every pending item of change
// tx (count is its attrChanges); deletes reports that it met pending
// deletes (which phase 1 leaves for phase 2), done that the key item no
// longer marks the change at that phase (another process moved it on,
// possibly to its end), so this one stops.
func rollPhase(ctx context.Context, st dynastore.Store, key dynastore.Key, gen, tx []byte, count dynastore.Value, phase int64, at dynastore.Cond) (deletes, done bool, err error) {
	check := dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: at}
	prefix := pendingPrefix(tx)
	q := dynastore.Query{PK: MembersPK(gen), Op: dynastore.SKBeginsWith, A: prefix, Limit: dynastore.MaxTxActions - 1}
	for {
		page, err := st.Query(ctx, q)
		if err != nil {
			return false, false, err
		}
		var batches [][]dynastore.TxAction
		var batch []dynastore.TxAction
		size := 0
		for _, p := range page.Items {
			sk, _ := p.Get(dynastore.AttrSK).(dynastore.B)
			target := dynastore.Key{PK: MembersPK(gen), SK: sk[len(prefix):]}
			op, _ := p.Get(attrPendingOp).(dynastore.S)
			var acts []dynastore.TxAction
			switch {
			case op == "p":
				t := p.Clone(1)
				t.Set(dynastore.AttrSK, dynastore.B(target.SK))
				t.Delete(attrPendingOp)
				t.Set(attrRolling, count)
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: t}, dynastore.TxAction{Op: dynastore.TxDelete, Key: p.Key()})
			case phase == 1:
				deletes = true
				acts = append(acts, dynastore.TxAction{
					Op: dynastore.TxUpdate, Key: target, Cond: dynastore.Exists{Attr: dynastore.AttrPK},
					Update: &dynastore.Update{Set: []dynastore.SetAction{{Attr: attrRolling, Val: count}}},
				})
			default:
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: target}, dynastore.TxAction{Op: dynastore.TxDelete, Key: p.Key()})
			}
			sz := len(acts) * dynastore.ItemSize(p)
			if len(batch) > 0 && (size+sz > maxTxBytes || len(batch)+len(acts) > dynastore.MaxTxActions-1) {
				batches, batch, size = append(batches, append(batch, check)), nil, 0
			}
			batch = append(batch, acts...)
			size += sz
		}
		if len(batch) > 0 {
			batches = append(batches, append(batch, check))
		}
		err = parallel(len(batches), func(i int) error { return st.Transact(ctx, batches[i]) })
		if err != nil {
			if checkFailed(err) {
				return deletes, true, nil
			}
			return deletes, false, fmt.Errorf("rolling a change forward: %w", err)
		}
		if page.Next == nil {
			return deletes, false, nil
		}
		q.After = page.Next
	}
}

// CondFailed reports whether err is a failed condition, and the item the
// store returned with it (nil when not asked for, or when there is none).
func CondFailed(err error) (dynastore.Item, bool) {
	var cf *dynastore.ConditionFailedError
	if errors.As(err, &cf) {
		return cf.Old, true
	}
	return nil, errors.Is(err, dynastore.ErrConditionFailed)
}

// checkFailed reports whether a transaction was cancelled by its last
// action's condition (rollPhase's check of the key item).
func checkFailed(err error) bool {
	var tc *dynastore.TxCanceledError
	return errors.As(err, &tc) && len(tc.Reasons) > 0 && tc.Reasons[len(tc.Reasons)-1].Code == dynastore.ReasonConditionalFailed
}

// reorder returns the actions that keep a large collection's order items
// (MemberOrder) in step with member m going from was to v (nil: removed):
// none when the type keeps no order or the order item stays the same. They
// need no condition of their own: the member item's action carries it.
func (cl *Collection) reorder(m []byte, was MemberState, v dynastore.Value) []dynastore.TxAction {
	var old, nw dynastore.Item
	if was.present {
		old = orderItem(cl.Type, cl.Gen, m, was.v)
	}
	if v != nil {
		nw = orderItem(cl.Type, cl.Gen, m, v)
	}
	if old != nil && nw != nil && bytes.Equal(old.Key().SK, nw.Key().SK) {
		return nil
	}
	var out []dynastore.TxAction
	if old != nil {
		out = append(out, dynastore.TxAction{Op: dynastore.TxDelete, Key: old.Key()})
	}
	if nw != nil {
		out = append(out, dynastore.TxAction{Op: dynastore.TxPut, Item: nw})
	}
	return out
}

// checkAction guards a key only read by a multi-key commit.
func (cl *Collection) checkAction() dynastore.TxAction {
	k := ItemKey(cl.c.DB(), cl.Key)
	if !KeyFits(cl.Key) {
		// A key that cannot exist never changes.
		return dynastore.TxAction{}
	}
	return dynastore.TxAction{Op: dynastore.TxCheck, Key: k, Cond: cl.KS.Guard()}
}

// commit writes the staged changes of one collection.
func (cl *Collection) Commit() error {
	return Commit(cl.c, []*Collection{cl}, nil)
}

// Commit commits the changes of writes in one request or
// transaction, with checks that the keys of reads are unchanged (reads that
// are also written need no check).
func Commit(c Scope, writes []*Collection, reads []*Collection) error {
	var actions []dynastore.TxAction
	written := map[string]bool{}
	for _, cl := range writes {
		a, err := cl.Plan()
		if err != nil {
			dropUnpublished(c, writes)
			return err
		}
		written[string(cl.Key)] = true
		actions = append(actions, a...)
	}
	if len(actions) == 0 {
		// Nothing to write: the reply still rests on every read agreeing.
		return ValidateRead(c, reads...)
	}
	for _, cl := range reads {
		if written[string(cl.Key)] || !KeyFits(cl.Key) {
			continue
		}
		written[string(cl.Key)] = true
		actions = append(actions, cl.checkAction())
	}
	if err := CommitActions(c, actions); err != nil {
		if errors.Is(err, ErrConflict) {
			// Refused, so certainly not published (after another error
			// it may have been: its pending items must then stay).
			dropUnpublished(c, writes)
		}
		return err
	}
	for _, cl := range writes {
		cl.NoteCommitted()
		if cl.outside != nil {
			// The command's outcome is decided; a failed clean-up only
			// leaves leftovers.
			cl.dropOutside()
		}
		if cl.pending == nil {
			continue
		}
		// Published: roll it forward now (readers would otherwise). A
		// failure leaves it to them, so the command still succeeded; the
		// item cache then forgets the key, which holds the mark until
		// they have. After a roll-forward it holds the item as published
		// without the mark (the same ver).
		err := rollForward(c, c.Data(), ItemKey(c.DB(), cl.Key), cl.pending)
		if err != nil || !cl.afterKnown || cl.after == nil {
			Items(c).Drop(c.DB(), cl.Key)
			continue
		}
		done := cl.after.Clone(0)
		done.Delete(AttrPending)
		done.Delete(attrPhase)
		Items(c).Put(c.DB(), cl.Key, done)
	}
	return nil
}

// NoteCommitted records in the caches what a successful commit of cl's
// plan left the key as.
func (cl *Collection) NoteCommitted() {
	if !cl.planned {
		return
	}
	NoteGen(cl.c, cl.Key, cl.Type, cl.genAfter)
	if cl.afterKnown {
		Items(cl.c).PutList(cl.c.DB(), cl.Key, cl.after, cl.ListKnown)
	} else {
		Items(cl.c).Drop(cl.c.DB(), cl.Key)
	}
}

// CommitActions runs actions as one single-item write when there is only
// one, else as a transaction. A failed condition becomes ErrConflict.
func CommitActions(c Scope, actions []dynastore.TxAction) error {
	if len(actions) > dynastore.MaxTxActions {
		return fmt.Errorf("model: %d actions: %w", len(actions), dynastore.ErrTxTooLarge)
	}
	var err error
	if len(actions) == 1 {
		a := actions[0]
		o := dynastore.WriteOptions{Cond: a.Cond}
		switch a.Op {
		case dynastore.TxPut:
			_, err = c.Data().Put(c, a.Item, o)
		case dynastore.TxUpdate:
			_, err = c.Data().Update(c, a.Key, *a.Update, o)
		case dynastore.TxDelete:
			_, err = c.Data().Delete(c, a.Key, o)
		default:
			err = c.Data().Transact(c, actions)
		}
	} else {
		err = c.Data().Transact(c, actions)
	}
	if err == nil {
		return nil
	}
	var tc *dynastore.TxCanceledError
	switch {
	case errors.Is(err, dynastore.ErrConditionFailed), errors.Is(err, dynastore.ErrTxConflict):
		return ErrConflict
	case errors.As(err, &tc):
		for _, r := range tc.Reasons {
			if r.Code == dynastore.ReasonConditionalFailed {
				return ErrConflict
			}
		}
	}
	return err
}

// ---- small helpers ---------------------------------------------------------------

// dedupe returns args without repeats, first occurrence order.
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

// The fast-path conditions below are kept to the operators their meaning
// needs (DynamoDB Local's latency grows with each one):
//   - "inline" is not attribute_not_exists(g): a size comparison of v
//     holds only when v exists, and only an inline layout has v (the key
//     item of a large collection holds g and n, never v: see plan);
//   - "live" is CondUnexpired: the comparison of t (and of v's size) holds
//     only when the item exists.

// InlineFastCond is the condition under which a fast-path update may touch
// an inline collection of type typ that will hold at most limit entries
// after adding up to adding new ones: the key is absent (the update creates
// it), or live, of the type, inline, with room. The caller checks that
// adding fits limit on its own.
func InlineFastCond(nowMS int64, typ string, limit, adding int, mustExist bool) dynastore.Cond {
	room := dynastore.And{
		CondUnexpired(nowMS),
		CondType(typ),
		dynastore.SizeCompare{Attr: AttrValue, Op: dynastore.OpLE, Size: int64(limit - adding)},
	}
	if mustExist {
		return room
	}
	return dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, room}
}

// inlineShrinkCond is the condition under which a fast-path update may remove
// up to removing entries from an inline collection without emptying it (the
// write that empties a collection must delete its key item instead).
func inlineShrinkCond(nowMS int64, typ string, removing int) dynastore.Cond {
	return dynastore.And{
		CondUnexpired(nowMS),
		CondType(typ),
		dynastore.SizeCompare{Attr: AttrValue, Op: dynastore.OpGT, Size: int64(removing)},
	}
}

// genLiveCond is the condition of a commutative change of a large
// collection's key item: it still holds generation gen (so it is still that
// collection: see largeGen; the comparison also implies the item exists)
// and has not expired, and, when the change removes entries (delta < 0),
// keeps at least one (the write that empties a collection must delete its
// key item instead).
func genLiveCond(gen []byte, nowMS int64, delta int64) dynastore.Cond {
	cond := dynastore.And{
		dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(gen)},
		CondUnexpired(nowMS),
		dynastore.NotExists{Attr: AttrPending},
	}
	if delta < 0 {
		cond = append(cond, dynastore.Compare{Attr: AttrCount, Op: dynastore.OpGT, Val: NInt(-delta)})
	}
	return cond
}

// FastUpdate tries a command's single-request form, the update u under
// cond, on the key item of key. applied: it happened, and old and nw are
// the item before and after it (nil when absent). Otherwise cond failed and
// cur is the item as it is (nil if none), for the command's general path
// to start from without reading again. The item cache learns the outcome.
//
// When the item cache knows the key's item and cond holds on it, u goes
// out under the item's guard alone (its ver, or its absence) and returns
// nothing. The guard holds only on exactly that item, on which cond holds
// (dynastore.EvalCond is DynamoDB's semantics, liveness included, at the
// same nowMS), so that request is equivalent, and lighter: one comparison
// instead of cond's six or more, and no item back, as old and nw follow
// from the cache (dynastore.ApplyValidUpdate, what the store itself
// computes). A failed guard (another writer) pauses guarded writes of the
// key (itemCache.contend) and u goes out under cond, unless the item the
// failure returned already fails it.
func FastUpdate(c Scope, key []byte, u dynastore.Update, cond dynastore.Cond) (old, nw dynastore.Item, applied bool, cur dynastore.Item, err error) {
	if !KeyFits(key) {
		return nil, nil, false, nil, nil
	}
	k, items, now := ItemKey(c.DB(), key), Items(c), c.NowMS()
	if it, ok := items.Guardable(c.DB(), key, now); ok {
		if holds, _ := dynastore.EvalCond(it, cond); holds {
			_, err := c.Data().Update(c, k, onKnownItem(it, u), dynastore.WriteOptions{Cond: KeyState{Raw: it}.Guard(), OldOnFailure: true})
			if err == nil {
				nw, err = fastApplied(c, key, it, u)
				return it, nw, err == nil, nil, err
			}
			cur, failed := CondFailed(err)
			if !failed {
				return nil, nil, false, nil, err
			}
			items.Contend(c.DB(), key, cur, now)
			if holds, _ := dynastore.EvalCond(cur, cond); !holds {
				return nil, nil, false, cur, nil
			}
		}
	}
	old, err = c.Data().Update(c, k, u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	if err == nil {
		nw, err = fastApplied(c, key, old, u)
		return old, nw, err == nil, nil, err
	}
	if cur, failed := CondFailed(err); failed {
		items.Put(c.DB(), key, cur)
		return nil, nil, false, cur, nil
	}
	return nil, nil, false, nil, err
}

// onKnownItem returns u as it may go out under the guard of it, the exact
// item it applies to: without the SET actions that give an attribute the
// literal value it holds (SADD and HSET on a known item set t to the type
// it has), and with if_not_exists of an attribute it has reduced to that
// attribute (LPUSH on a known list). Each action and function costs
// DynamoDB time; the outcome is the same.
func onKnownItem(it dynastore.Item, u dynastore.Update) dynastore.Update {
	var set []dynastore.SetAction
	for i, a := range u.Set {
		keep, changed := true, false
		if lit, ok := a.Val.(dynastore.Value); ok {
			cur := it.Get(a.Attr)
			keep = cur == nil || !dynastore.ValuesEqual(cur, lit)
		} else {
			a.Val, changed = knownOperand(it, a.Val)
		}
		if set == nil && (!keep || changed) {
			set = append(make([]dynastore.SetAction, 0, len(u.Set)), u.Set[:i]...)
		}
		if set != nil && keep {
			set = append(set, a)
		}
	}
	if set == nil || (len(set) == 0 && len(u.Remove)+len(u.Add)+len(u.Delete) == 0) {
		return u // unchanged, or nothing left: an update must keep an action
	}
	u.Set = set
	return u
}

// knownOperand is op with if_not_exists of an attribute it has reduced to
// that attribute; changed says whether it reduced any.
func knownOperand(it dynastore.Item, op dynastore.Operand) (_ dynastore.Operand, changed bool) {
	pair := func(a, b dynastore.Operand) (dynastore.Operand, dynastore.Operand, bool) {
		a, ca := knownOperand(it, a)
		b, cb := knownOperand(it, b)
		return a, b, ca || cb
	}
	switch o := op.(type) {
	case dynastore.IfNotExists:
		if it.Has(o.Attr) {
			return dynastore.Ref{Attr: o.Attr}, true
		}
	case dynastore.ListAppend:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.ListAppend{A: a, B: b}, true
		}
	case dynastore.Plus:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.Plus{A: a, B: b}, true
		}
	case dynastore.Minus:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.Minus{A: a, B: b}, true
		}
	}
	return op, false
}

// fastApplied returns the item a FastUpdate that applied u to old left,
// and remembers it in the item cache.
func fastApplied(c Scope, key []byte, old dynastore.Item, u dynastore.Update) (dynastore.Item, error) {
	nw, err := dynastore.ApplyValidUpdate(ItemKey(c.DB(), key), old, u)
	if err != nil {
		return nil, fmt.Errorf("model: applying an accepted update: %w", err)
	}
	Items(c).Put(c.DB(), key, nw)
	return nw, nil
}

// OpenSeeded opens key from an item already read (use) or by reading it,
// failing with ErrWrongType when it holds another type.
func OpenSeeded(c Scope, key []byte, typ string, seed dynastore.Item, use bool) (*Collection, error) {
	var cl *Collection
	var err error
	if use {
		cl, err = FromItem(c, key, typ, seed)
	} else {
		cl, err = Open(c, key, typ)
	}
	if err != nil {
		return nil, err
	}
	if err := cl.Check(); err != nil {
		return nil, err
	}
	return cl, nil
}

// OpenChecked reads key (one GetItem) as a collection of type typ, failing
// with ErrWrongType when it holds another type.
func OpenChecked(c Scope, key []byte, typ string) (*Collection, error) {
	return OpenSeeded(c, key, typ, nil, false)
}

// Read runs read on key's collection as one consistent state: after
// read, ValidateRead makes RetryConflicts start over if a large collection
// changed while read paged through it.
func Read(c Scope, key []byte, typ string, read func(cl *Collection) error) error {
	return collReading(c, key, typ, false, read)
}

// ReadAll is Read for a read that goes through every entry (each):
// the first page of a large collection's members is read beside its key
// item when the generation cache knows it (see pageAhead).
func ReadAll(c Scope, key []byte, typ string, read func(cl *Collection) error) error {
	return collReading(c, key, typ, true, read)
}

// collReading is Read, reading ahead (ReadAll) when all is set.
func collReading(c Scope, key []byte, typ string, all bool, read func(cl *Collection) error) error {
	return RetryConflicts(c, func(try int) error {
		var p *pageAhead
		if all && try == 0 {
			p = startPageAhead(c, key, typ)
		}
		cl, err := OpenChecked(c, key, typ)
		if first := p.take(cl); err == nil {
			cl.first = first
		}
		if err != nil {
			return err
		}
		if err := read(cl); err != nil {
			return err
		}
		return ValidateRead(c, cl)
	})
}

// Lookup reads members of key's collection: one read inline, two (key
// item, then the members) when large.
func Lookup(c Scope, key []byte, typ string, members [][]byte) (vals []dynastore.Value, present []bool, err error) {
	err = Read(c, key, typ, func(cl *Collection) (err error) {
		vals, present, err = cl.Lookup(members)
		return err
	})
	return vals, present, err
}

// EntriesOf reads a collection whole: copies of the members, and their values.
func EntriesOf(cl *Collection) (ms [][]byte, vs []dynastore.Value, err error) {
	err = cl.Each(func(m []byte, v dynastore.Value) error {
		ms = append(ms, bytes.Clone(m))
		vs = append(vs, v)
		return nil
	})
	return ms, vs, err
}

// ScanPage returns one page of an SSCAN/HSCAN-style iteration and the next
// cursor (0 at the end). An inline collection is returned whole with cursor
// 0, as Redis does for its small encodings. A large one pages through its
// partition; the position to resume after is stored in the table under a
// random cursor id (with a one-hour TTL), so any instance can continue it.
// An unknown or stale cursor ends the iteration.
func (cl *Collection) ScanPage(cursor uint64, count int) ([][]byte, []dynastore.Value, uint64, error) {
	if !cl.Exists() {
		return nil, nil, 0, nil
	}
	if !cl.Large() {
		if cursor != 0 && cl.Type == TypeSet && !cl.intsetLike() {
			// Redis 7.0 keeps such a set in a hash table, where a cursor
			// it never handed out (it returns 0 for small sets) lands past
			// the end: an empty last page.
			return nil, nil, 0, nil
		}
		var ms [][]byte
		var vs []dynastore.Value
		err := cl.Each(func(m []byte, v dynastore.Value) error {
			ms = append(ms, m)
			vs = append(vs, v)
			return nil
		})
		return ms, vs, 0, err
	}
	var after []byte
	if cursor != 0 {
		it, err := cl.c.Data().Get(cl.c, scanCursorKey(cursor))
		if err != nil {
			return nil, nil, 0, err
		}
		g, _ := it.Get(AttrGen).(dynastore.B)
		a, _ := it.Get("a").(dynastore.B)
		if it == nil || !bytes.Equal(g, cl.Gen) || len(a) == 0 {
			return nil, nil, 0, nil
		}
		after = a
	}
	page, err := cl.c.Data().Query(cl.c, dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKLT, A: memberSKEnd, After: after, Limit: count})
	if err != nil {
		return nil, nil, 0, err
	}
	ms := make([][]byte, len(page.Items))
	vs := make([]dynastore.Value, len(page.Items))
	for i, it := range page.Items {
		ms[i], vs[i] = decodeMember(it), it.Get(AttrValue)
	}
	if page.Next == nil {
		return ms, vs, 0, nil
	}
	next := rand.Uint64()>>1 + 1
	k := scanCursorKey(next)
	_, err = cl.c.Data().Put(cl.c, dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: AttrGen, Value: dynastore.B(cl.Gen)},
		{Name: "a", Value: dynastore.B(page.Next)},
		{Name: dynastore.AttrTTL, Value: NInt(cl.c.NowMS()/1000 + 3600)},
	}, dynastore.WriteOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	return ms, vs, next, nil
}

// intsetLike reports whether Redis would keep this inline set as an intset.
func (cl *Collection) intsetLike() bool {
	for m := range cl.Inline {
		if _, ok := String2ll([]byte(m)); !ok {
			return false
		}
	}
	return true
}

// ErrEnough ends an each early once the answer is known.
var ErrEnough = errors.New("model: enough entries seen")

// EncodingOf is Redis 7.0's OBJECT ENCODING for a hash, set or sorted set
// key: compact (listpack, intset) while it holds at most maxEntries entries
// that all pass fits, big (hashtable, skiplist) otherwise. Redis never
// converts back, so a key that was once past a limit stays big there even
// after removals bring
// it under; redamo keeps no such history and answers from the current
// content (a large layout is only read when its count is within the limit).
func EncodingOf(c Scope, key []byte, typ string, maxEntries int64, compact, big string, fits func(m []byte, v dynastore.Value) bool) (string, error) {
	enc := compact
	err := Read(c, key, typ, func(cl *Collection) error {
		enc = compact
		if cl.Len() > maxEntries {
			enc = big
			return nil
		}
		err := cl.Each(func(m []byte, v dynastore.Value) error {
			if !fits(m, v) {
				enc = big
				return ErrEnough
			}
			return nil
		})
		if errors.Is(err, ErrEnough) {
			return nil
		}
		return err
	})
	return enc, err
}

// scanCursorKey is where a collection scan cursor's position is kept.
func scanCursorKey(id uint64) dynastore.Key {
	pk := []byte{nsCollScan, 0, 0, 0, 0, 0, 0, 0, 0}
	for i := 0; i < 8; i++ {
		pk[1+i] = byte(id >> (56 - 8*i))
	}
	return dynastore.Key{PK: pk, SK: KeyItemSK}
}

// blindOutcome is how a blind member write ended.
type blindOutcome uint8

const (
	// blindApplied: the write happened.
	blindApplied blindOutcome = iota
	// blindMemberFailed: only the member's condition failed: it was not as
	// assumed, while the key item held the generation, live.
	blindMemberFailed
	// blindUnknown: the key item changed (or the store cannot tell): the
	// caller falls back to its general path.
	blindUnknown
)

// blindResult is how a blind member write ended and, when the key item's
// condition failed, the key item as the transaction found it (cur, nil when
// there is none; known false when the store did not say).
type blindResult struct {
	out   blindOutcome
	cur   dynastore.Item
	known bool
}

// blindMember changes one member of the large collection cl in a single
// transaction, without reading the member first: memberAction carries the
// assumption as its condition (NotExists for an add, Exists for a removal),
// and the key item's update adds delta to n under genLiveCond. The
// cancellation reasons tell a wrong assumption (the member's condition
// alone failed) from a changed key item, which the failure returns.
func blindMember(c Scope, cl *Collection, memberAction dynastore.TxAction, delta int64) (blindResult, error) {
	return blindMembers(c, cl, []dynastore.TxAction{memberAction}, delta)
}

// blindMembers is blindMember for up to maxBlindMembers member actions,
// where blindMemberFailed means that member conditions alone failed.
func blindMembers(c Scope, cl *Collection, memberActions []dynastore.TxAction, delta int64) (blindResult, error) {
	u := &dynastore.Update{Set: []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}}}
	if delta != 0 {
		u.Add = []dynastore.AttrValue{{Attr: AttrCount, Val: NInt(delta)}}
	}
	keyAction := dynastore.TxAction{Op: dynastore.TxUpdate, Key: ItemKey(c.DB(), cl.Key), Update: u, Cond: genLiveCond(cl.Gen, c.NowMS(), delta), OldOnFailure: true}
	actions := append(memberActions[:len(memberActions):len(memberActions)], keyAction)
	err := c.Data().Transact(c, actions)
	if err == nil {
		return blindResult{out: blindApplied}, nil
	}
	var tc *dynastore.TxCanceledError
	if errors.As(err, &tc) && len(tc.Reasons) == len(actions) {
		switch keyItem := tc.Reasons[len(memberActions)]; keyItem.Code {
		case dynastore.ReasonConditionalFailed:
			return blindResult{out: blindUnknown, cur: keyItem.Old, known: true}, nil
		case dynastore.ReasonNone:
			failed := false
			for _, r := range tc.Reasons[:len(memberActions)] {
				switch r.Code {
				case dynastore.ReasonNone:
				case dynastore.ReasonConditionalFailed:
					failed = true
				default:
					return blindResult{out: blindUnknown}, nil
				}
			}
			if failed {
				return blindResult{out: blindMemberFailed}, nil
			}
		}
		return blindResult{out: blindUnknown}, nil
	}
	if errors.Is(err, dynastore.ErrTxConflict) || errors.Is(err, dynastore.ErrTxCanceled) {
		return blindResult{out: blindUnknown}, nil
	}
	return blindResult{out: blindUnknown}, err
}

// blindWrite is a change of members of a large collection made without
// reading its key item first (blindAdd, blindRemove, and for several
// members blindAddMany, blindRemoveMany): n is the command's count (the
// members added or removed) and done whether the change settled the
// command; when it did not, res says why.
type blindWrite func(cl *Collection) (n int64, done bool, res blindResult, err error)

// blindAdd adds one member (v nil for sets) to the large collection cl.
func blindAdd(c Scope, cl *Collection, m []byte, v dynastore.Value) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v), Cond: dynastore.NotExists{Attr: dynastore.AttrPK},
	}, 1)
	switch {
	case err != nil || res.out == blindUnknown:
		return 0, false, res, err
	case res.out == blindApplied:
		return 1, true, res, nil
	case v == nil:
		return 0, true, res, nil // a set member that is already there
	}
	// A hash field that exists: overwrite it, n unchanged.
	res, err = blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, 0)
	return 0, err == nil && res.out == blindApplied, res, err
}

// blindRemove removes one member from the large collection cl (never the
// last one: that write must delete the key item, so it fails genLiveCond
// and falls back).
func blindRemove(c Scope, cl *Collection, m []byte) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, -1)
	if err != nil || res.out == blindUnknown {
		return 0, false, res, err
	}
	if res.out != blindApplied {
		return 0, true, res, nil // it was not there
	}
	return 1, true, res, nil
}

// maxBlindMembers is the most members one blind write changes: with the
// key item's action they fill one transaction.
const maxBlindMembers = dynastore.MaxTxActions - 1

// blindFits reports whether a blind write of members (vals nil for a set
// or a removal) fits one transaction, measured as plan measures a commit.
func blindFits(members, vals [][]byte) bool {
	if len(members) > maxBlindMembers {
		return false
	}
	size := 0
	for i, m := range members {
		size += len(m) + 64
		if vals != nil {
			size += len(vals[i])
		}
	}
	return size <= maxTxBytes
}

// blindRead reads, in one BatchGet, the key item of the large collection
// cl and its members: present says which are there, and seed hands the
// key item to the general path should the write need it. When the key item
// no longer holds cl's generation (deleted, replaced, renamed, expired), ok
// is false.
func blindRead(c Scope, cl *Collection, members [][]byte) (present []bool, n int64, seed blindResult, ok bool, err error) {
	keys := make([]dynastore.Key, 0, 1+len(members))
	keys = append(keys, ItemKey(c.DB(), cl.Key))
	for _, m := range members {
		keys = append(keys, MemberKey(cl.Gen, m))
	}
	items, err := c.Data().BatchGet(c, keys)
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	cur, err := FromItem(c, cl.Key, cl.Type, items[0])
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	seed = blindResult{out: blindUnknown, cur: items[0], known: true}
	if cur.WrongType || !cur.Large() || !bytes.Equal(cur.Gen, cl.Gen) {
		return nil, 0, seed, false, nil
	}
	present = make([]bool, len(members))
	for i, it := range items[1:] {
		present[i] = it != nil && bytes.Equal(decodeMember(it), members[i])
	}
	return present, cur.n, seed, true, nil
}

// blindAddMany adds several members (vals nil for a set) to the large
// collection cl: it reads its key item and them (blindRead), and one
// transaction writes the new ones on condition that they are still absent,
// and checks that each present one still is (a hash overwrites it on that
// condition), so the count it replies with holds when it commits. A set
// add of members all there writes nothing, as Redis (the read showed the
// key item holding the generation, and a generation's members are only
// added while it does). A member that changed in between (a race with
// another writer) does not settle the command: the general path does.
func blindAddMany(c Scope, cl *Collection, members, vals [][]byte) (int64, bool, blindResult, error) {
	present, _, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var added int64
	for i, m := range members {
		var v dynastore.Value
		if vals != nil {
			v = HashValue(vals[i])
		}
		switch {
		case !present[i]:
			added++
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
		case v != nil:
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		default:
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		}
	}
	if vals == nil && added == 0 {
		return 0, true, blindResult{}, nil
	}
	res, err := blindMembers(c, cl, actions, added)
	if err != nil || res.out != blindApplied {
		return 0, false, res, err
	}
	return added, true, res, nil
}

// blindRemoveMany removes several members from the large collection cl as
// blindAddMany adds them: the present ones are deleted on condition that
// they still are, the absent ones checked absent; none present writes
// nothing. Removing the last members is left to the general path (the
// write that empties the collection must delete its key item), from the
// key item read; genLiveCond's count condition makes the transaction fail
// should that happen in between.
func blindRemoveMany(c Scope, cl *Collection, members [][]byte) (int64, bool, blindResult, error) {
	present, n, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var removed int64
	for i, m := range members {
		if present[i] {
			removed++
			actions[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		} else {
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: MemberKey(cl.Gen, m), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
		}
	}
	switch {
	case removed == 0:
		return 0, true, blindResult{}, nil
	case removed >= n:
		return 0, false, seed, nil
	}
	res, err := blindMembers(c, cl, actions, -removed)
	if err != nil || res.out != blindApplied {
		return 0, false, res, err
	}
	return removed, true, res, nil
}

// largeFromSeed decodes the item a failed single-request attempt returned
// when it is a large collection of type typ (nil otherwise).
func largeFromSeed(c Scope, key []byte, typ string, seed dynastore.Item) *Collection {
	cl, err := FromItem(c, key, typ, seed)
	if err != nil || cl.WrongType || !cl.Large() {
		return nil
	}
	return cl
}

// MemberStart is where a member write goes on when a single-request form
// did not settle it: from the key item that attempt returned (seeded; seed
// nil when there is none), or from a fresh read.
type MemberStart struct {
	Seed   dynastore.Item
	Seeded bool
	// tried is the generation a blind write failed on: it is not tried
	// again.
	tried []byte
}

// blind runs write on the large collection cl (nil: nothing to try). When
// write does not settle the command, st takes the key item it found, if
// any; when write cannot tell, the generation cache forgets the key.
func (st *MemberStart) blind(c Scope, cl *Collection, write blindWrite) (n int64, done bool, err error) {
	if cl == nil || bytes.Equal(cl.Gen, st.tried) {
		return 0, false, nil
	}
	n, done, res, err := write(cl)
	if err != nil || done {
		return n, done, err
	}
	st.tried = cl.Gen
	st.Seed, st.Seeded = res.cur, res.known
	if res.out == blindUnknown && !res.known {
		gensOf(c).Drop(c.DB(), cl.Key)
	}
	return 0, false, nil
}

// ---- adding and removing members (SADD/HSET, SREM/HDEL) ---------------------

// SeededRetry is a read-modify-write of members of key's collection,
// committed conditioned on what it read (the first try starts from seed
// when seeded): change stages the writes, given what lookup found.
func SeededRetry(c Scope, key []byte, typ string, members [][]byte, seed dynastore.Item, seeded bool, change func(cl *Collection, vals []dynastore.Value, present []bool) error) error {
	return RetryConflicts(c, func(try int) error {
		cl, err := OpenSeeded(c, key, typ, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		vals, present, err := cl.Lookup(members)
		if err != nil {
			return err
		}
		if err := change(cl, vals, present); err != nil {
			return err
		}
		return cl.Commit()
	})
}

// MemberFast runs the single-request forms of a member write on key, in
// turn: cached, a blind write (nil: none), on the large collection the
// generation cache remembers; then, unless that cache knows the key as
// large, the UpdateItem u (nil: the members cannot be inline) under cond,
// whose returned old attributes count turns into the command's count; then
// seeded, a blind write (nil: none), on the large collection a failed u or
// cached returned. A blind write of several members reads them first, so
// from a returned key item it would cost what the general path costs from
// it: it is a cached write only. done reports the command settled with
// count n; otherwise the general path starts from st.
func MemberFast(c Scope, key []byte, typ string, cached, seeded blindWrite, u *dynastore.Update, cond dynastore.Cond, count func(old dynastore.Item) int64) (st MemberStart, n int64, done bool, err error) {
	if cached != nil {
		if n, done, err = st.blind(c, cachedLarge(c, key, typ), cached); err != nil || done {
			return st, n, done, err
		}
	}
	// A collection the generation cache knows as large has no inline
	// entries: u would fail, costing a write unit, only to hand back the key
	// item, which the general path reads for a read unit. (A stale entry
	// costs the general path's read where u would have done.)
	if !st.Seeded && u != nil && cachedLarge(c, key, typ) == nil {
		old, _, applied, cur, err := FastUpdate(c, key, *u, cond)
		if err != nil || applied {
			return st, count(old), applied, err
		}
		st.Seed, st.Seeded = cur, true
	}
	if st.Seeded && seeded != nil {
		n, done, err = st.blind(c, largeFromSeed(c, key, typ, st.Seed), seeded)
	}
	return st, n, done, err
}

// someNewMax is the most members an SADD fast path conditions on one of
// them being new: each is a term of the condition, and DynamoDB caps an
// expression at 4 KB. A larger SADD of members all present rewrites the
// set's version, as before.
const someNewMax = 16

// AddMembers is SADD and HSET/HMSET: it puts members, with vals for a hash
// (nil for a set, whose present members are left alone), and returns how
// many were new. A small add to an inline collection is one UpdateItem,
// one member of a large one a blind write (MemberFast), several members of
// a large one the generation cache knows a read of those members and a
// blind write; anything else reads, computes and commits.
func AddMembers(c Scope, key []byte, typ string, members, vals [][]byte) (added int64, err error) {
	var cached, seeded blindWrite
	switch {
	case len(members) == 1:
		var v dynastore.Value
		if vals != nil {
			v = HashValue(vals[0])
		}
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindAdd(c, cl, members[0], v) }
		seeded = cached
	case blindFits(members, vals):
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindAddMany(c, cl, members, vals) }
	}
	var u *dynastore.Update
	lim := c.Process().inline(typ)
	if AllSmall(members, lim.Bytes) && AllSmall(vals, lim.Bytes) && len(members) <= lim.Entries {
		u = &dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: AttrType, Val: dynastore.S(typ)},
				{Attr: AttrVer, Val: NewVer()},
			},
			Add: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf(members)}},
		}
		for i, v := range vals {
			u.Set = append(u.Set, dynastore.SetAction{Attr: FieldAttr(members[i]), Val: HashValue(v)})
		}
	}
	cond := InlineFastCond(c.NowMS(), typ, lim.Entries, len(members), false)
	if vals == nil && u != nil && len(members) <= someNewMax {
		// An SADD of members that are all there already changes nothing,
		// as in Redis (a WATCH of the set stays unbroken): the update
		// only goes out when one of them is new; otherwise the failed
		// condition returns the set, which the count is taken from.
		someNew := make(dynastore.Or, len(members))
		for i, m := range members {
			someNew[i] = dynastore.Not{C: dynastore.Contains{Attr: AttrValue, Val: dynastore.B(m)}}
		}
		cond = dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{cond, someNew}}
	}
	st, n, done, err := MemberFast(c, key, typ, cached, seeded, u, cond, func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if !BSContains(old.Get(AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil || done {
		return n, err
	}
	err = SeededRetry(c, key, typ, members, st.Seed, st.Seeded, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		added = 0
		for i, m := range members {
			if !present[i] {
				added++
			}
			switch {
			case vals != nil:
				cl.Put(m, HashValue(vals[i]))
			case !present[i]:
				cl.Put(m, nil)
			}
		}
		return nil
	})
	return added, err
}

// RemoveMembers is SREM, HDEL and ZREM: it removes members from key's
// collection of type typ and returns how many of them were there. Like AddMembers, a small remove
// from an inline collection is one UpdateItem, one member of a large one a
// blind delete, and several members of a large one the generation cache
// knows a read of those members and a blind write.
func RemoveMembers(c Scope, key []byte, typ string, members [][]byte) (int64, error) {
	var cached, seeded blindWrite
	_, ordered := MemberOrders[typ] // a blind delete would leave the order item
	switch {
	case ordered:
	case len(members) == 1:
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindRemove(c, cl, members[0]) }
		seeded = cached
	case blindFits(members, nil):
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindRemoveMany(c, cl, members) }
	}
	// An inline collection has at most inlineLimit entries: more arguments,
	// or longer ones, cannot all be there (and would bloat the expression).
	var u *dynastore.Update
	if len(members) <= inlineLimit(typ) && AllSmall(members, InlineMaxBytes) {
		u = &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
			Delete: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf(members)}},
		}
		if typ != TypeSet { // each value is an attribute of its own
			for _, m := range members {
				u.Remove = append(u.Remove, FieldAttr(m))
			}
		}
	}
	st, n, done, err := MemberFast(c, key, typ, cached, seeded, u, inlineShrinkCond(c.NowMS(), typ, len(members)), func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if BSContains(old.Get(AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil || done {
		return n, err
	}
	var removed int64
	err = SeededRetry(c, key, typ, members, st.Seed, st.Seeded, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		removed = 0
		for i, m := range members {
			if present[i] {
				cl.Del(m)
				removed++
			}
		}
		return nil
	})
	return removed, err
}
