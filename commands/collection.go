package commands

// The collection layer: how hashes, sets, sorted sets, streams (and lists,
// built on the same machinery) are laid out in the table, read, and changed
// atomically. Command files (hashes.go, sets.go, zsets.go, streams.go,
// lists.go) speak to a *collection and never build member items themselves.
//
// Layouts. A collection's key item (model/keyitem.go: pk 'k'+db+key, sk 0x00, t,
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
//     inlineMaxSet / inlineMaxHash entries of at most inlineMaxBytes each
//     (redis.conf's listpack thresholds, halved for hashes), or fewer when
//     the encoding parameters say so (encoding.go): the item then stays
//     under ~16 KB, so a write costs a few WCU.
//   - large: the key item holds g (a random 16-byte generation id) and n (the
//     entry count: SCARD/HLEN are one read at any size); each member is an
//     item under pk 'm'+g, sk = memberSK(member), with the value in v for a
//     hash. Members are NOT under the user key, so RENAME moves only the key
//     item and DEL/EXPIRE/overwrite touch only the key item: the old
//     generation simply stops being referenced. A type with a second order
//     of its members (a sorted set's scores: memberOrder) also keeps an order
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
// read" (the key item's ver), re-run on conflict (model.Retry), except
// the single-request fast paths of the hot commands, which fall back to it
// when their condition fails (the failed condition returns the item, so the
// fallback does not read it again). A commit is:
//
//   - inline result: one Put of the whole key item (or one Delete when empty);
//   - large, at most maxTxMembers changed members: one TransactWriteItems with
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
// alone (fastUpdate), a single-member write of a known large collection is
// its blind transaction at once and a write of several members reads only
// them before its transaction (memberFast), a list push or pop skips the
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
// actions each carry the "ver as read" guard (commitCollections).
//
// Using the layer (a family file such as lists.go):
//
//	err := collRetry(c, func(try int) error {
//		cl, err := openChecked(c, key, TypeX) // one GetItem; WRONGTYPE
//		if err != nil { return err }
//		vals, present, err := cl.lookup(members)        // BatchGet if large
//		cl.put(m, v); cl.del(m); cl.setKeyAttr(name, v)  // staged
//		return cl.commit() // errCollRetry on conflict: collRetry re-runs
//	})
//
// Entries are (member, value) pairs keyed by member bytes; each() visits
// them in member order (sorted inline, partition order when large). A type
// is a layout over that: its inline codec (inlineCodecs), and for the
// large layout optionally a second order of its members (memberOrders: a
// sorted set's scores) or a range of positions (memberSpans: a list). A
// commit of a command that read only some members is conditioned
// on exactly those members (concurrent writers of other members do not
// conflict); one that read everything (each) or set key attributes is
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
	"github.com/redamo/redamo/model"
)

// Collection attributes of the key item, member items and registry items.
const (
	attrGen     = "g"  // B: the generation id of a large collection
	attrCount   = "n"  // N: the entry count of a large collection
	attrMember  = "m"  // B: a member item's member when its sk is a digest
	attrOwner   = "o"  // B: a registry item's owner key pk
	attrDying   = "d"  // N: set on a registry item the sweeper has condemned
	attrDeadAt  = "dd" // N: when the sweeper first saw a generation dead
	attrCreated = "c"  // N: when a generation was registered
	// attrPending (B, on a key item) names the change whose writes wait in
	// pending items to be rolled forward, attrPhase (N) how far that got,
	// and attrChanges (N) counts such changes; attrPendingOp ("p" put, "d"
	// delete) is a pending item's write, and attrRolling (N) the count of
	// the change that last rolled a member or order item forward (see
	// rollForward).
	attrPending   = "pd"
	attrPhase     = "pp"
	attrChanges   = "cc"
	attrPendingOp = "po"
	attrRolling   = "rt"
	// attrBigEncoding (N 1) marks a collection Redis would hold in its big
	// encoding (skiplist, hashtable): Redis converts when a write crosses a
	// limit and never back, so OBJECT ENCODING depends on history, which
	// the key item keeps from then on.
	attrBigEncoding = "e"
	// attrFieldPrefix + base64url(field) holds an inline hash field's value.
	attrFieldPrefix = "f"
)

// pk namespaces of the collection layer (model/keyitem.go lists the others).
const (
	nsMembers  = 'm' // 'm', generation id: the members of a large collection
	nsGens     = 'G' // 'G', shard: the generation registry
	nsCollScan = 's' // 's', cursor id: SSCAN/HSCAN/ZSCAN positions
)

// Inline caps: elements of at most 64 bytes (Redis's listpack value
// limit), 128 entries (redis.conf's listpack entry limits), 64 for hashes,
// whose fields cost twice (name in v and attribute). They bound the key
// item's size whatever the encoding parameters, which may only lower them
// (Server.inline); OBJECT ENCODING does not depend on them (encodingOf).
const (
	inlineMaxBytes = 64
	inlineMaxSet   = 128
	inlineMaxHash  = 64
	inlineMaxList  = 128
)

// genShards spreads the registry over a few partitions.
const genShards = 16

// genIDLen is the length of a generation id.
const genIDLen = 16

// maxTxMembers is how many member writes one commit transaction carries, with
// room for the key item and two more actions (the other side of an SMOVE).
const maxTxMembers = dynastore.MaxTxActions - 4

// maxTxBytes keeps a transaction safely under DynamoDB's 4 MB.
const maxTxBytes = 3 << 20

// memberPageItems caps the items of one page when reading a whole large
// collection: a full 1 MB page can take DynamoDB longer than one request's
// time budget, while 1,024 keeps "HGETALL of 1,000 entries" one page.
const memberPageItems = 1024

// maxPlainSK is the longest member stored verbatim in a sort key; longer ones
// are stored under their digest (DynamoDB caps sort keys at 1024 bytes).
const maxPlainSK = 1000

var (
	// errCollWrongType is returned when a key holds another type.
	errCollWrongType error = redisError(MsgWrongType)
	// errCollRetry restarts a read-compute-commit attempt.
	errCollRetry = errors.New("commands: collection changed concurrently")
)

// collRetry runs attempt until it succeeds or fails with anything but a
// conflict (errCollRetry), as long as the retry policy allows (model.Retry).
func collRetry(c *Ctx, attempt func(try int) error) error {
	var retry model.Retry
	for try := 0; ; try++ {
		err := attempt(try)
		if !errors.Is(err, errCollRetry) {
			return err
		}
		if err := c.lostRace(&retry); err != nil {
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

func (kc *keyCache[V]) get(db int, key []byte) (V, bool) {
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

func (kc *keyCache[V]) put(db int, key []byte, v V) {
	kc.update(db, key, func(V, bool) V { return v })
}

func (kc *keyCache[V]) drop(db int, key []byte) {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	k := dbKey{db, string(key)}
	if old, ok := kc.m[k]; ok {
		kc.weight -= old.weight()
		delete(kc.m, k)
	}
}

// cachedItem is an item cache entry: a collection key item exactly as this
// process last read or wrote it (nil: the key did not exist), until when
// (Unix ms) fastUpdate sends no guarded writes for the key, and for a
// large list, element values valid for that item (listKnown).
type cachedItem struct {
	it     dynastore.Item
	calmAt int64
	list   *listKnown
	// w is the entry's weight, computed once.
	w int
}

func (e cachedItem) weight() int { return e.w }

// contendedPause is how long fastUpdate sends no guarded writes for a key
// after one failed: another instance is writing it, and each failure costs
// a request.
const contendedPause = time.Second

// itemCache holds the key items of lists, sets and hashes (or their
// absence) this process saw last: a list pop or LPUSH, and the fast paths
// of small sets and hashes, start from it instead of reading. Every entry
// is an item as it was at some moment, never a guess: writes made from one
// are conditioned on its ver (model.KeyState.guard), which holds only while the
// item is exactly that one (every write sets a fresh ver).
type itemCache struct {
	kc keyCache[cachedItem]
}

// get returns what the cache knows of key: ok, and the entry (its item
// nil: absent).
func (ic *itemCache) get(db int, key []byte) (cachedItem, bool) {
	return ic.kc.get(db, key)
}

// guardable is get, except while fastUpdate's guarded writes of key pause.
func (ic *itemCache) guardable(db int, key []byte, nowMS int64) (dynastore.Item, bool) {
	e, ok := ic.kc.get(db, key)
	if !ok || nowMS < e.calmAt {
		return nil, false
	}
	return e.it, true
}

// put remembers it (nil: key is absent) as key's item, if it is a
// collection's (anything else forgets key).
func (ic *itemCache) put(db int, key []byte, it dynastore.Item) {
	ic.remember(db, key, it, 0, nil)
}

// putList is put of a large list's key item with element values valid for
// it.
func (ic *itemCache) putList(db int, key []byte, it dynastore.Item, list *listKnown) {
	ic.remember(db, key, it, 0, list)
}

// contend is put, also pausing guarded writes of key for contendedPause.
func (ic *itemCache) contend(db int, key []byte, it dynastore.Item, nowMS int64) {
	ic.remember(db, key, it, nowMS+contendedPause.Milliseconds(), nil)
}

func (ic *itemCache) remember(db int, key []byte, it dynastore.Item, calmAt int64, list *listKnown) {
	if it != nil {
		switch t, _ := it.Get(model.AttrType).(dynastore.S); t {
		case model.TypeList, model.TypeSet, model.TypeHash, model.TypeZSet, model.TypeStream:
		default:
			ic.drop(db, key)
			return
		}
	}
	w := 64 + dynastore.ItemSize(it)
	if list != nil {
		for _, v := range list.values {
			w += 16 + len(v)
		}
	}
	ic.kc.update(db, key, func(old cachedItem, _ bool) cachedItem {
		return cachedItem{it: it, calmAt: max(calmAt, old.calmAt), list: list, w: w}
	})
}

func (ic *itemCache) drop(db int, key []byte) { ic.kc.drop(db, key) }

// itemsOf is the process's item cache.
func itemsOf(c *Ctx) *itemCache { return &c.Srv.listRT().items }

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
func gensOf(c *Ctx) *keyCache[largeGen] { return &c.Srv.listRT().gens }

// noteGen records in the generation cache that key, as a collection of
// type typ, is large with generation gen, or not large at all (gen nil:
// inline, absent, or of another type).
func noteGen(c *Ctx, key []byte, typ string, gen []byte) {
	if !model.KeyFits(key) || (typ != model.TypeSet && typ != model.TypeHash && typ != model.TypeZSet) {
		return
	}
	if gen != nil {
		gensOf(c).put(c.DB(), key, largeGen{typ: typ, gen: gen})
		return
	}
	gensOf(c).drop(c.DB(), key)
}

// cachedLarge is the large collection the generation cache remembers for
// key, with type typ (nil if none): a view with the generation only, for a
// blind write.
func cachedLarge(c *Ctx, key []byte, typ string) *collection {
	if !model.KeyFits(key) {
		return nil
	}
	lg, ok := gensOf(c).get(c.DB(), key)
	if !ok || lg.typ != typ {
		return nil
	}
	return &collection{c: c, typ: typ, key: key, gen: lg.gen}
}

// ---- member encoding ---------------------------------------------------------

// The first byte of a sort key in a generation's partition says what the
// item is: a member item (its member verbatim, or its digest), an order
// item of a type that keeps a second order of its members (memberOrder), or
// a pending write of a change too big for one transaction (rollForward).
// Reads of members and of the order never reach pending items.
const (
	skMember  byte = 0
	skDigest  byte = 1
	skOrder   byte = 2
	skPending byte = 3
)

// memberSK is the sort key of a member item: 0x00+member, or 0x01+sha256 for
// members too long for a sort key.
func memberSK(m []byte) []byte {
	if len(m) <= maxPlainSK {
		sk := make([]byte, 0, 1+len(m))
		return append(append(sk, skMember), m...)
	}
	h := sha256.Sum256(m)
	return append([]byte{skDigest}, h[:]...)
}

// memberSKEnd bounds every member item's sort key from above (order items
// sort after it), and memberSKLast is the greatest a member item can have.
var (
	memberSKEnd  = []byte{skOrder}
	memberSKLast = append([]byte{skDigest}, bytes.Repeat([]byte{0xff}, sha256.Size+1)...)
)

// memberOrder is a type's second order of the members of its large layout:
// beside each member item, an order item in the same partition whose sort
// key (skOrder first) sorts members in the type's order, so a range of that
// order is one Query (a sorted set's members by score; zsets.go). The
// engine writes and deletes order items with the member items, in the same
// transaction or staged generation.
type memberOrder struct {
	// sk is the order item's sort key for member m with value v: prefix
	// bytes, then m itself when m is at most maxPlainSK bytes long.
	sk     func(m []byte, v dynastore.Value) []byte
	prefix int
}

// memberOrders holds the types that keep a memberOrder, registered by
// their family's init.
var memberOrders = map[string]memberOrder{}

// memberSpan is the layout of a type whose members are positions
// (posMember) in a range its key item holds in two N attributes: the first
// position and one past the last (a list: lists.go). Only the members in
// the range are entries. Member items outside it are leftovers of earlier
// states (popped members whose clean-up did not run, members written by a
// change that lost a race): no read reaches them, the write that reaches
// their position again overwrites them, and they go with their generation.
// So every write of such a type sets the range (setKeyAttr) and is guarded
// by the key item's ver, its member writes need no condition of their own,
// and a change too big for one transaction writes around the range
// (planSpan) instead of through pending items.
type memberSpan struct{ lo, hi string }

// memberSpans holds the types laid out as a memberSpan, registered by their
// family's init.
var memberSpans = map[string]memberSpan{}

// span returns the range of a spanned type's collection as read, or, when
// after, as its staged key attributes leave it; spanned is false for the
// other types.
func (cl *collection) span(after bool) (lo, hi int64, spanned bool, err error) {
	sp, ok := memberSpans[cl.typ]
	if !ok {
		return 0, 0, false, nil
	}
	get := func(name string) dynastore.Value {
		if v, ok := cl.keyAttrs[name]; ok && after {
			return v
		}
		return cl.ks.Raw.Get(name)
	}
	if lo, err = model.NumberInt(get(sp.lo)); err != nil {
		return 0, 0, true, fmt.Errorf("commands: %s range start: %w", cl.typ, err)
	}
	if hi, err = model.NumberInt(get(sp.hi)); err != nil {
		return 0, 0, true, fmt.Errorf("commands: %s range end: %w", cl.typ, err)
	}
	return lo, hi, true, nil
}

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

// orderItem is the order item of member m with value v of a generation of
// type typ (nil when the type keeps no second order). A member too long to
// be spelt out in the sort key is kept in the item (attrMember).
func orderItem(typ string, gen, m []byte, v dynastore.Value) dynastore.Item {
	o, ok := memberOrders[typ]
	if !ok {
		return nil
	}
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(membersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(o.sk(m, v))},
	}
	if len(m) > maxPlainSK {
		it.Set(attrMember, dynastore.B(bytes.Clone(m)))
	}
	if v != nil {
		it.Set(model.AttrValue, v)
	}
	return it
}

// decodeOrderItem returns the member and value an order item of type typ
// stands for.
func decodeOrderItem(typ string, it dynastore.Item) ([]byte, dynastore.Value) {
	v := it.Get(model.AttrValue)
	if m, ok := it.Get(attrMember).(dynastore.B); ok {
		return m, v
	}
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	if p := memberOrders[typ].prefix; len(sk) >= p {
		return sk[p:], v
	}
	return nil, v
}

// membersPK is the partition of a generation's members.
func membersPK(gen []byte) []byte {
	return append([]byte{nsMembers}, gen...)
}

// memberKey is the key of one member item.
func memberKey(gen, m []byte) dynastore.Key {
	return dynastore.Key{PK: membersPK(gen), SK: memberSK(m)}
}

// memberItem builds a member item; v is nil for sets.
func memberItem(gen, m []byte, v dynastore.Value) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(membersPK(gen))},
		{Name: dynastore.AttrSK, Value: dynastore.B(memberSK(m))},
	}
	if len(m) > maxPlainSK {
		it.Set(attrMember, dynastore.B(bytes.Clone(m)))
	}
	if v != nil {
		it.Set(model.AttrValue, v)
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

// fieldAttr is the attribute of an inline hash field.
func fieldAttr(f []byte) string {
	return attrFieldPrefix + base64.RawURLEncoding.EncodeToString(f)
}

// hashValue encodes a hash value: N for a canonical int64, B otherwise.
func hashValue(v []byte) dynastore.Value {
	if _, ok := model.String2ll(v); ok {
		return dynastore.N(v)
	}
	return dynastore.B(bytes.Clone(v))
}

// valueBytes is the Redis string of a stored hash value.
func valueBytes(v dynastore.Value) []byte {
	switch v := v.(type) {
	case dynastore.B:
		return v
	case dynastore.N:
		return []byte(v)
	}
	return nil
}

// valueSize is the byte length of a stored hash value (0 for none).
func valueSize(v dynastore.Value) int {
	return len(valueBytes(v))
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
	g, ok := it.Get(attrGen).(dynastore.B)
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
	out.Set(dynastore.AttrSK, dynastore.B(model.KeyItemSK))
	out.Set(model.AttrVer, model.NewVer())
	g, ok := src.Get(attrGen).(dynastore.B)
	if !ok {
		return out, nil, nil
	}
	if src.Has(attrPending) {
		if err := rollForward(ctx, st, src.Key(), src); err != nil {
			return nil, nil, err
		}
		out.Delete(attrPending)
	}
	typ, _ := src.Get(model.AttrType).(dynastore.S)
	gen, _, err := stageGen(ctx, st, string(typ), dstPK, nowMS, func(yield func(m []byte, v dynastore.Value) error) error {
		return eachMember(ctx, st, g, yield)
	})
	if err != nil {
		return nil, nil, err
	}
	out.Set(attrGen, dynastore.B(gen))
	return out, []dynastore.TxAction{genAliveCheck(gen)}, nil
}

// stageGen registers a new generation owned by ownerPK and writes the
// entries entries yields into it. Nothing references it yet: the caller
// publishes it with a transaction that includes genAliveCheck(gen).
func stageGen(ctx context.Context, st dynastore.Store, typ string, ownerPK []byte, nowMS int64, entries func(yield func(m []byte, v dynastore.Value) error) error) ([]byte, int64, error) {
	if txn, ok := st.(*model.Txn); ok {
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
		{Name: attrCreated, Value: model.NInt(nowMS)},
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
		sz := len(items) * (len(m) + valueSize(v) + 64)
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
			if err := fn(decodeMember(it), it.Get(model.AttrValue)); err != nil {
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
	return dynastore.Query{PK: membersPK(gen), Op: dynastore.SKLT, A: memberSKEnd, After: after, Limit: memberPageItems}
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
func startPageAhead(c *Ctx, key []byte, typ string) *pageAhead {
	lg := cachedLarge(c, key, typ)
	if lg == nil || c.Store != c.Srv.Store {
		return nil
	}
	p := &pageAhead{gen: lg.gen, done: make(chan struct{})}
	// The command's context, not c: a Ctx is reused once its command
	// returns, and every path waits for the page before it returns.
	ctx, st := c.Context, c.Store
	go func() {
		defer close(p.done)
		p.page, p.err = st.Query(ctx, membersPageQuery(p.gen, nil))
	}()
	return p
}

// take waits for the page and returns it when cl, as read, is the
// collection it was read from (nil otherwise, and when p is nil).
func (p *pageAhead) take(cl *collection) *dynastore.QueryPage {
	if p == nil {
		return nil
	}
	<-p.done
	if p.err != nil || cl == nil || cl.rolled || !cl.large() || !bytes.Equal(cl.gen, p.gen) {
		return nil
	}
	return &p.page
}

// ---- the collection view -------------------------------------------------------

// collection is one collection key as read by one attempt, plus the changes
// the attempt stages. Reads see the staged changes.
type collection struct {
	c   *Ctx
	typ string
	key []byte
	ks  model.KeyState
	// wrongType: the key is live and holds another type.
	wrongType bool

	// gen is non-nil for the large layout; n is then the entry count.
	gen []byte
	n   int64
	// inline holds an inline collection's entries (nil values for sets),
	// keyed by string(member).
	inline map[string]dynastore.Value
	// known caches large-layout lookups: present members with their values.
	known map[string]memberState

	puts map[string]dynastore.Value
	dels map[string]bool
	// replace: the commit overwrites the key (whatever it held) with exactly
	// the staged puts and no expiry (SINTERSTORE and friends).
	replace bool
	// pagesRead is set when a read took more than one query page.
	pagesRead bool
	// first is the first page of a large collection's members when it was
	// read beside the key item (see pageAhead); each uses it once.
	first *dynastore.QueryPage
	// exact: the command's result depends on the whole collection (it read
	// it with each), so its commit must guard the key item's ver rather
	// than only the members it changes.
	exact bool
	// keyAttrs are extra key item attributes the commit writes (a list's
	// head and tail, say); see setKeyAttr.
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
	// only if the key item is still as read (validateRead).
	changes    int64
	sawRolling bool
	// rebuilt, when set, is the whole content the commit writes in place
	// of what the key holds (rebuiltLen entries; the expiry stays): a new
	// generation, or an inline item when it fits (see rebuild).
	rebuilt    func(yield func(m []byte, v dynastore.Value) error) error
	rebuiltLen int64
	// outside is the positions a spanned commit takes out of the range
	// (memberSpan), deleted after it succeeds (dropOutside).
	outside []int64
	// listKnown is what the item cache keeps with the key item after the
	// commit (a large list's element values: listKnown).
	listKnown *listKnown
}

// saw notes what a read of member or order items met.
func (cl *collection) saw(it dynastore.Item) {
	if v := it.Get(attrRolling); v != nil {
		if n, err := model.NumberInt(v); err != nil || n > cl.changes {
			cl.sawRolling = true
		}
	}
}

// setKeyAttr stages an extra attribute of the key item. The commit writes
// it whatever the layout; an inline commit rewrites the whole key item, so
// a family with extra attributes stages all of them on every write. Such a
// commit is always guarded by the key item's ver.
func (cl *collection) setKeyAttr(name string, v dynastore.Value) {
	if cl.keyAttrs == nil {
		cl.keyAttrs = map[string]dynastore.Value{}
	}
	cl.keyAttrs[name] = v
	cl.exact = true
}

// keyAttr returns an attribute of the key item as read (nil if none).
func (cl *collection) keyAttr(name string) dynastore.Value {
	if !cl.ks.Live || cl.replace {
		return nil
	}
	return cl.ks.Raw.Get(name)
}

type memberState struct {
	present bool
	v       dynastore.Value
}

// openCollection reads key (one GetItem) as a collection of type typ.
func openCollection(c *Ctx, key []byte, typ string) (*collection, error) {
	it, err := c.Store.Get(c, model.ItemKey(c.DB(), key))
	if err != nil {
		return nil, err
	}
	return collectionFromItem(c, key, typ, it)
}

// openCollections reads several keys with one BatchGet.
func openCollections(c *Ctx, keys [][]byte, typ string) ([]*collection, error) {
	ks := make([]dynastore.Key, len(keys))
	for i, k := range keys {
		ks[i] = model.ItemKey(c.DB(), k)
	}
	items, err := c.Store.BatchGet(c, ks)
	if err != nil {
		return nil, err
	}
	out := make([]*collection, len(keys))
	for i, it := range items {
		if out[i], err = collectionFromItem(c, keys[i], typ, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// collectionFromItem decodes a key item read (or returned by a failed
// condition) as a collection of type typ, and remembers it in the item
// cache, and in the generation cache whether it is large.
func collectionFromItem(c *Ctx, key []byte, typ string, it dynastore.Item) (_ *collection, err error) {
	cl := &collection{c: c, typ: typ, key: key}
	if !model.KeyFits(key) {
		it = nil
	}
	ks, err := model.DecodeKey(it, c.NowMS())
	if err != nil {
		return nil, err
	}
	if ks.Live && ks.Type == typ && it.Has(attrPending) {
		return rolledForward(c, key, typ, it)
	}
	cl.ks = ks
	defer func() {
		if err == nil && model.KeyFits(key) {
			noteGen(c, key, typ, cl.gen)
			itemsOf(c).put(c.DB(), key, it)
		}
	}()
	if !ks.Live {
		return cl, nil
	}
	if ks.Type != typ {
		cl.wrongType = true
		return cl, nil
	}
	if g, ok := it.Get(attrGen).(dynastore.B); ok {
		cl.gen = g
		if cl.n, err = model.NumberInt(it.Get(attrCount)); err != nil {
			return nil, fmt.Errorf("commands: collection count: %w", err)
		}
		if c := it.Get(attrChanges); c != nil {
			if cl.changes, err = model.NumberInt(c); err != nil {
				return nil, fmt.Errorf("commands: collection changes: %w", err)
			}
		}
		return cl, nil
	}
	codec, ok := inlineCodecs[typ]
	if !ok {
		return nil, fmt.Errorf("commands: no inline codec for type %q: %w", typ, dynastore.ErrInvalid)
	}
	if cl.inline, err = codec.decode(it); err != nil {
		return nil, err
	}
	return cl, nil
}

// rolledForward is collectionFromItem of a key item that marks a change
// published but not rolled forward yet: it finishes the change first (its
// writes change no content). Inside a transaction the item is then decoded
// as it is without the mark (same ver: the commit checks that it still
// is); otherwise it is read again, since a read is not checked at the end.
func rolledForward(c *Ctx, key []byte, typ string, it dynastore.Item) (*collection, error) {
	k := model.ItemKey(c.DB(), key)
	for range maxRollForwards {
		if err := rollForward(c, c.Store, k, it); err != nil {
			return nil, err
		}
		if _, inTx := c.Store.(*model.Txn); inTx {
			it = it.Clone(0)
			it.Delete(attrPending)
		} else {
			var err error
			if it, err = c.Store.Get(c, k); err != nil {
				return nil, err
			}
		}
		if !it.Has(attrPending) {
			cl, err := collectionFromItem(c, key, typ, it)
			if cl != nil {
				cl.rolled = true
			}
			return cl, err
		}
	}
	return nil, errCollRetry
}

// maxRollForwards bounds the changes one open rolls forward before it
// starts over (each one was published after the previous one finished).
const maxRollForwards = 8

// inlineCodec reads and writes one type's inline entries in its key item.
// Sets and hashes are registered here; the other families add theirs (a
// list's v as an L of B, entries keyed by posMember) from their init.
type inlineCodec struct {
	decode func(it dynastore.Item) (map[string]dynastore.Value, error)
	encode func(it *dynastore.Item, entries map[string]dynastore.Value)
	// keepEmpty: the key outlives its last entry (a stream: Redis keeps
	// an emptied stream with its last id). Removing the last entry then
	// leaves an inline key item with no entries instead of deleting it.
	keepEmpty bool
}

var inlineCodecs = map[string]inlineCodec{
	model.TypeSet: {
		decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
			names, _ := it.Get(model.AttrValue).(dynastore.BS)
			out := make(map[string]dynastore.Value, len(names))
			for _, m := range names {
				out[string(m)] = nil
			}
			return out, nil
		},
		encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
			names := make(dynastore.BS, 0, len(entries))
			for m := range entries {
				names = append(names, []byte(m))
			}
			it.Set(model.AttrValue, names)
		},
	},
	model.TypeHash: {
		decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
			names, _ := it.Get(model.AttrValue).(dynastore.BS)
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
					return nil, fmt.Errorf("commands: hash field attribute %q: %w", a.Name, dynastore.ErrInvalid)
				}
				if v, listed := out[string(f)]; listed && v == nil {
					out[string(f)] = a.Value
					found++
				}
			}
			if found != len(names) {
				return nil, fmt.Errorf("commands: hash field without a value: %w", dynastore.ErrInvalid)
			}
			return out, nil
		},
		encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
			names := make(dynastore.BS, 0, len(entries))
			for m, v := range entries {
				names = append(names, []byte(m))
				it.Set(fieldAttr([]byte(m)), v)
			}
			it.Set(model.AttrValue, names)
		},
	},
}

// check returns errCollWrongType when the key holds another type.
func (cl *collection) check() error {
	if cl.wrongType {
		return errCollWrongType
	}
	return nil
}

// exists reports whether the key exists as read (any type).
func (cl *collection) exists() bool { return cl.ks.Live }

// large reports whether the collection uses the large layout.
func (cl *collection) large() bool { return cl.gen != nil }

// committedLen is the entry count as read.
func (cl *collection) committedLen() int64 {
	if cl.large() {
		return cl.n
	}
	return int64(len(cl.inline))
}

// lookup returns the current values of members (staged changes included)
// and whether each is present. A large collection fetches the members it has
// not seen yet with one BatchGet.
func (cl *collection) lookup(members [][]byte) ([]dynastore.Value, []bool, error) {
	if err := cl.fetch(members); err != nil {
		return nil, nil, err
	}
	vals := make([]dynastore.Value, len(members))
	ok := make([]bool, len(members))
	for i, m := range members {
		vals[i], ok[i] = cl.current(m)
	}
	return vals, ok, nil
}

// committed returns a member's value as read (fetch first for large).
func (cl *collection) committed(m []byte) (dynastore.Value, bool) {
	if cl.replace || cl.wrongType {
		return nil, false
	}
	if cl.large() {
		st := cl.known[string(m)]
		return st.v, st.present
	}
	v, ok := cl.inline[string(m)]
	return v, ok
}

func (cl *collection) current(m []byte) (dynastore.Value, bool) {
	if v, ok := cl.puts[string(m)]; ok {
		return v, true
	}
	if cl.dels[string(m)] {
		return nil, false
	}
	return cl.committed(m)
}

// fetch loads the large-layout members not looked up yet.
func (cl *collection) fetch(members [][]byte) error {
	if !cl.large() || cl.replace {
		return nil
	}
	if cl.known == nil {
		cl.known = map[string]memberState{}
	}
	var keys []dynastore.Key
	var want [][]byte
	seen := map[string]bool{}
	for _, m := range members {
		if _, ok := cl.known[string(m)]; ok || seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		keys = append(keys, memberKey(cl.gen, m))
		want = append(want, m)
	}
	if len(keys) == 0 {
		return nil
	}
	items, err := cl.c.Store.BatchGet(cl.c, keys)
	if err != nil {
		return err
	}
	for i, it := range items {
		cl.saw(it)
		st := memberState{}
		if it != nil && bytes.Equal(decodeMember(it), want[i]) {
			st = memberState{present: true, v: it.Get(model.AttrValue)}
		}
		cl.known[string(want[i])] = st
	}
	return nil
}

// put stages member m with value v (nil for sets).
func (cl *collection) put(m []byte, v dynastore.Value) {
	if cl.puts == nil {
		cl.puts = map[string]dynastore.Value{}
	}
	delete(cl.dels, string(m))
	cl.puts[string(m)] = v
}

// del stages the removal of member m.
func (cl *collection) del(m []byte) {
	if cl.dels == nil {
		cl.dels = map[string]bool{}
	}
	delete(cl.puts, string(m))
	cl.dels[string(m)] = true
}

// each calls fn for every committed entry (staged changes are not seen).
// Reading a large collection over several pages marks the view so the
// caller validates it (validateRead) before trusting the result.
func (cl *collection) each(fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.wrongType || !cl.ks.Live {
		return nil
	}
	if !cl.large() {
		// Member order, as the large layout's partition order: lists rely
		// on it (their members are position keys).
		ms := make([]string, 0, len(cl.inline))
		for m := range cl.inline {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		for _, m := range ms {
			if err := fn([]byte(m), cl.inline[m]); err != nil {
				return err
			}
		}
		return nil
	}
	first := cl.first
	cl.first = nil
	return eachMemberPaged(cl.c, cl.c.Store, cl.gen, first, fn, func() { cl.pagesRead = true }, cl.saw)
}

// eachOrdered calls fn for the committed entries whose order sort key
// (memberOrder) lies in [lo, hi) (nil: unbounded), in that order or, when
// reverse, the opposite one, until fn returns errEnough; staged changes are
// not seen. A large collection reads order items a page at a time, the
// first page of at most hint items (0: a full page), so a command that
// needs the first few reads only them. As each, it makes the commit depend
// on the whole collection.
func (cl *collection) eachOrdered(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.wrongType || !cl.ks.Live {
		return nil
	}
	if lo == nil {
		lo = []byte{skOrder}
	}
	if hi == nil {
		hi = []byte{skOrder + 1}
	}
	err := cl.eachOrderedIn(lo, hi, reverse, hint, fn)
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

func (cl *collection) eachOrderedIn(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	if !cl.large() {
		type entry struct {
			sk, m []byte
			v     dynastore.Value
		}
		order := memberOrders[cl.typ]
		var es []entry
		for m, v := range cl.inline {
			sk := order.sk([]byte(m), v)
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
	if cl.known == nil {
		cl.known = map[string]memberState{}
	}
	// BETWEEN is inclusive: an item whose key is hi itself is skipped.
	q := dynastore.Query{PK: membersPK(cl.gen), Op: dynastore.SKBetween, A: lo, B: hi, Reverse: reverse, Limit: memberPageItems}
	if hint > 0 && hint < memberPageItems {
		q.Limit = hint
	}
	for {
		page, err := cl.c.Store.Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if sk, _ := it.Get(dynastore.AttrSK).(dynastore.B); bytes.Equal(sk, hi) {
				continue
			}
			cl.saw(it)
			m, v := decodeOrderItem(cl.typ, it)
			cl.known[string(m)] = memberState{present: true, v: v}
			if err := fn(m, v); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		cl.pagesRead = true
		q.After, q.Limit = page.Next, memberPageItems
	}
}

// ---- ordered range reads -----------------------------------------------------

// eachRange calls fn for the committed entries whose members lie between
// from and to (both inclusive; nil: unbounded), in member order, or in
// reverse member order when rev, until fn returns false. Only members of
// at most maxPlainSK bytes are in member order in a large collection (the
// longer ones sit under digests), so callers range over short members
// (a stream's 16-byte ids). A large collection is read a page at a time
// starting at the bound, pages of pageHint items (what the caller expects
// to need; 0: memberPageItems), so a read that stops early costs only the
// pages it needed. Like each, reading several pages marks the view for
// validateRead; unlike each, it does not make the commit exact.
func (cl *collection) eachRange(from, to []byte, rev bool, pageHint int, fn func(m []byte, v dynastore.Value) (bool, error)) error {
	if cl.wrongType || !cl.ks.Live || cl.replace {
		return nil
	}
	in := func(m []byte) bool {
		return (from == nil || bytes.Compare(m, from) >= 0) && (to == nil || bytes.Compare(m, to) <= 0)
	}
	if !cl.large() {
		ms := make([]string, 0, len(cl.inline))
		for m := range cl.inline {
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
			if more, err := fn([]byte(m), cl.inline[m]); err != nil || !more {
				return err
			}
		}
		return nil
	}
	q := dynastore.Query{PK: membersPK(cl.gen), Reverse: rev, Limit: memberPageItems}
	if pageHint > 0 && pageHint < memberPageItems {
		q.Limit = pageHint
	}
	lo, hi := []byte{skMember}, []byte{skDigest} // every plain member
	if from != nil {
		lo = memberSK(from)
	}
	if to != nil {
		hi = memberSK(to)
	}
	q.Op, q.A, q.B = dynastore.SKBetween, lo, hi
	for pages := 0; ; pages++ {
		if pages > 0 {
			cl.pagesRead = true
		}
		page, err := cl.c.Store.Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m := decodeMember(it)
			if !in(m) {
				continue
			}
			if more, err := fn(m, it.Get(model.AttrValue)); err != nil || !more {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		q.After = page.Next
	}
}

// validateRead re-reads the key items of views whose reads were not one
// consistent snapshot (several pages, or several keys) and returns
// errCollRetry if any changed since it was opened.
func validateRead(c *Ctx, cls ...*collection) error {
	need := len(cls) > 1
	for _, cl := range cls {
		need = need || cl.pagesRead || cl.sawRolling
	}
	if !need {
		return nil
	}
	keys := make([]dynastore.Key, len(cls))
	for i, cl := range cls {
		keys[i] = model.ItemKey(c.DB(), cl.key)
	}
	items, err := c.Store.BatchGet(c, keys)
	if err != nil {
		return err
	}
	for i, cl := range cls {
		if !sameVer(cl.ks.Raw, items[i]) || items[i].Has(attrPending) {
			return errCollRetry
		}
	}
	return nil
}

// sameVer reports whether two reads of one key item saw the same version.
func sameVer(a, b dynastore.Item) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	// Whatever the token's type: items written before versions became
	// strings hold Numbers.
	va, vb := a.Get(model.AttrVer), b.Get(model.AttrVer)
	return (va == nil && vb == nil) || dynastore.ValuesEqual(va, vb)
}

// randomMembers returns up to count distinct members (values included)
// chosen at random: all of an inline collection's members shuffled, or, for
// a large one, a run starting at a random position in the partition.
func (cl *collection) randomMembers(count int) ([][]byte, []dynastore.Value, error) {
	var ms [][]byte
	var vs []dynastore.Value
	if !cl.large() {
		for m, v := range cl.inline {
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
	q := dynastore.Query{PK: membersPK(cl.gen), Op: dynastore.SKBetween, A: start, B: memberSKLast}
	wrapped := false
	for len(ms) < count {
		q.Limit = count - len(ms)
		page, err := cl.c.Store.Query(cl.c, q)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m := decodeMember(it)
			if wrapped && bytes.Compare(memberSK(m), start) >= 0 {
				return ms, vs, nil
			}
			ms = append(ms, m)
			vs = append(vs, it.Get(model.AttrValue))
		}
		if page.Next != nil {
			cl.pagesRead = true
			q.After = page.Next
			continue
		}
		if wrapped {
			break
		}
		wrapped = true
		cl.pagesRead = true
		q = dynastore.Query{PK: membersPK(cl.gen), Op: dynastore.SKLT, A: memberSKEnd}
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
	if cl.known == nil {
		cl.known = map[string]memberState{}
	}
	for i, m := range ms {
		cl.known[string(m)] = memberState{present: true, v: vs[i]}
	}
	return ms, vs, nil
}

// ---- commit ----------------------------------------------------------------------

func (cl *collection) changed() bool {
	return cl.replace || cl.rebuilt != nil || len(cl.puts) > 0 || len(cl.dels) > 0 || len(cl.keyAttrs) > 0
}

// rebuild stages the replacement of the collection's whole content by the
// n entries entries yields (in any order; for a spanned type, positions
// from 0 on), keeping the key's expiry: the commit writes a new generation,
// or an inline item when the result fits one. Other staged changes are
// dropped.
func (cl *collection) rebuild(n int64, entries func(yield func(m []byte, v dynastore.Value) error) error) {
	cl.puts, cl.dels = nil, nil
	cl.rebuilt, cl.rebuiltLen = entries, n
}

// inlineLimit is the most entries an inline collection of the type can
// hold, whatever the encoding parameters were when it was written.
func inlineLimit(typ string) int {
	switch typ {
	case model.TypeHash, model.TypeZSet:
		return inlineMaxHash
	case model.TypeList:
		return inlineMaxList
	}
	return inlineMaxSet
}

// fitsInline reports whether entries can be stored inline within lim.
func fitsInline(lim inlineLimits, entries map[string]dynastore.Value) bool {
	if len(entries) > lim.entries {
		return false
	}
	for m, v := range entries {
		if len(m) > lim.bytes || valueSize(v) > lim.bytes {
			return false
		}
	}
	return true
}

// baseKeyItem is the key item's common part for a write: type, fresh ver,
// and the expiry kept unless the commit replaces the key.
func (cl *collection) baseKeyItem() dynastore.Item {
	k := model.ItemKey(cl.c.DB(), cl.key)
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: model.AttrType, Value: dynastore.S(cl.typ)},
		{Name: model.AttrVer, Value: model.NewVer()},
	}
	if !cl.replace && cl.ks.Live && cl.ks.HasExpiry {
		it.Set(model.AttrExpiry, model.NInt(cl.ks.Expiry))
		it.Set(dynastore.AttrTTL, model.TTLSeconds(cl.ks.Expiry))
	}
	if big := cl.keyAttr(attrBigEncoding); big != nil && !cl.wrongType {
		it.Set(attrBigEncoding, big)
	}
	for name, v := range cl.keyAttrs {
		it.Set(name, v)
	}
	return it
}

// keyAttrSets are the SET actions of the staged key attributes.
func (cl *collection) keyAttrSets() []dynastore.SetAction {
	var out []dynastore.SetAction
	for name, v := range cl.keyAttrs {
		out = append(out, dynastore.SetAction{Attr: name, Val: v})
	}
	return out
}

// inlineItem is the key item of an inline collection holding entries.
func (cl *collection) inlineItem(entries map[string]dynastore.Value) dynastore.Item {
	it := cl.baseKeyItem()
	inlineCodecs[cl.typ].encode(&it, entries)
	return it
}

// plan stages what must be staged (a new generation) and returns the
// actions that commit this view's changes, each guarded by the key item's
// ver as read. No actions means nothing to write.
func (cl *collection) plan() ([]dynastore.TxAction, error) {
	actions, gen, err := cl.planActions()
	cl.planned, cl.genAfter, cl.after, cl.afterKnown = len(actions) > 0, gen, nil, false
	k := model.ItemKey(cl.c.DB(), cl.key)
	for _, a := range actions {
		switch {
		case a.Op == dynastore.TxPut && bytes.Equal(a.Item.Key().PK, k.PK):
			cl.after, cl.afterKnown = a.Item, true
		case a.Op == dynastore.TxDelete && bytes.Equal(a.Key.PK, k.PK):
			cl.afterKnown = true
		case a.Op == dynastore.TxUpdate && bytes.Equal(a.Key.PK, k.PK) && len(a.Update.Add) == 0 && cl.ks.Raw != nil:
			// Only SETs, guarded by the ver as read: the item after is
			// that one updated (the commutative form ADDs to n, whose
			// value then depends on concurrent writers).
			if after, err := dynastore.ApplyValidUpdate(k, cl.ks.Raw, *a.Update); err == nil {
				cl.after, cl.afterKnown = after, true
			}
		}
	}
	return actions, err
}

// planActions is plan, also returning the generation the key item holds
// after the actions (nil when they leave it inline or delete it).
func (cl *collection) planActions() ([]dynastore.TxAction, []byte, error) {
	if !cl.changed() {
		return nil, nil, nil
	}
	if !model.KeyFits(cl.key) {
		return nil, nil, model.ErrKeyTooLong
	}
	key := model.ItemKey(cl.c.DB(), cl.key)
	guard := cl.ks.Guard()
	if !cl.large() || cl.replace || cl.rebuilt != nil {
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
	lo, hi, spanned, err := cl.span(false)
	if err != nil {
		return nil, nil, err
	}
	if spanned {
		// A position is an entry exactly when it is in the range: nothing
		// to read.
		if cl.known == nil {
			cl.known = map[string]memberState{}
		}
		for _, m := range changed {
			if _, ok := cl.known[string(m)]; !ok {
				p, _ := memberPos(m)
				cl.known[string(m)] = memberState{present: p >= lo && p < hi}
			}
		}
	} else if err := cl.fetch(changed); err != nil {
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
		if st := cl.known[m]; st.present {
			cond = dynastore.Exists{Attr: dynastore.AttrPK}
			if st.v != nil {
				cond = dynastore.Compare{Attr: model.AttrValue, Op: dynastore.OpEQ, Val: st.v}
			}
		} else {
			n++
		}
		if spanned {
			cond = nil
		}
		members = append(members, dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.gen, []byte(m), v), Cond: cond})
		size += len(m) + valueSize(v) + 64
		members = append(members, cl.reorder([]byte(m), cl.known[m], v)...)
	}
	for m := range cl.dels {
		if st := cl.known[m]; st.present {
			n--
			var cond dynastore.Cond = dynastore.Exists{Attr: dynastore.AttrPK}
			if spanned {
				cond = nil
			}
			members = append(members, dynastore.TxAction{Op: dynastore.TxDelete, Key: memberKey(cl.gen, []byte(m)), Cond: cond})
			members = append(members, cl.reorder([]byte(m), st, nil)...)
		}
	}
	if n == 0 {
		if inlineCodecs[cl.typ].keepEmpty {
			// Back to an inline key item with no entries; the generation
			// is left to the sweeper.
			return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(nil), Cond: guard}}, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if len(members) == 0 && len(cl.keyAttrs) == 0 {
		return nil, nil, nil
	}
	if len(members) <= maxTxMembers && size <= maxTxBytes {
		keyUpdate := cl.keyUpdate(key, guard, n)
		if !cl.exact {
			// Commutative form: concurrent writers of different members
			// of one large collection do not invalidate each other (the
			// writer that would empty it fails genLiveCond and takes the
			// guarded path above on its re-run).
			delta := n - cl.n
			keyUpdate.Update = &dynastore.Update{
				Set: []dynastore.SetAction{{Attr: model.AttrVer, Val: model.NewVer()}},
				Add: []dynastore.AttrValue{{Attr: attrCount, Val: model.NInt(delta)}},
			}
			keyUpdate.Cond = genLiveCond(cl.gen, cl.c.NowMS(), delta)
		}
		return append(members, keyUpdate), cl.gen, nil
	}
	_, inTx := cl.c.Store.(*model.Txn)
	if spanned && !inTx {
		if acts, ok, err := cl.planSpan(key, guard, members, n, lo, hi); ok || err != nil {
			return acts, cl.gen, err
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
	gen, n, err := stageGen(cl.c, cl.c.Store, cl.typ, key.PK, cl.c.NowMS(), func(yield func([]byte, dynastore.Value) error) error {
		err := eachMember(cl.c, cl.c.Store, cl.gen, func(m []byte, v dynastore.Value) error {
			if _, ok := cl.puts[string(m)]; ok || cl.dels[string(m)] {
				return nil
			}
			if p, _ := memberPos(m); spanned && (p < lo || p >= hi) {
				return nil // a leftover (memberSpan)
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
			{Attr: attrGen, Val: dynastore.B(gen)},
			{Attr: attrCount, Val: model.NInt(n)},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}, genAliveCheck(gen)}, gen, nil
}

// planWhole is the commit of a collection written whole: an inline one,
// one the commit replaces (replace), or one rebuilt (rebuild). The result
// goes inline when it fits, else into a new generation the commit
// publishes.
func (cl *collection) planWhole(key dynastore.Key, guard dynastore.Cond) ([]dynastore.TxAction, []byte, error) {
	lim := cl.c.Srv.inline(cl.typ)
	entries := cl.rebuilt
	n := cl.rebuiltLen
	var small map[string]dynastore.Value // the entries, when they may fit inline
	if entries == nil {
		small = map[string]dynastore.Value{}
		if !cl.replace && !cl.wrongType {
			for m, v := range cl.inline {
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
	} else if n <= int64(lim.entries) {
		small = make(map[string]dynastore.Value, n)
		err := entries(func(m []byte, v dynastore.Value) error {
			small[string(m)] = v
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if n == 0 && !inlineCodecs[cl.typ].keepEmpty {
		if cl.ks.Raw == nil || (!cl.ks.Live && !cl.replace) {
			return nil, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if small != nil && fitsInline(lim, small) {
		return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(small), Cond: guard}}, nil, nil
	}
	sp, spanned := memberSpans[cl.typ]
	var lo, hi int64 // a spanned type's range: the positions written
	gen, n, err := stageGen(cl.c, cl.c.Store, cl.typ, key.PK, cl.c.NowMS(), func(yield func([]byte, dynastore.Value) error) error {
		first := true
		return entries(func(m []byte, v dynastore.Value) error {
			if p, ok := memberPos(m); ok && spanned {
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
	it.Set(attrGen, dynastore.B(gen))
	it.Set(attrCount, model.NInt(n))
	if spanned {
		it.Set(sp.lo, model.NInt(lo))
		it.Set(sp.hi, model.NInt(hi))
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
func (cl *collection) planSpan(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n, lo, hi int64) (_ []dynastore.TxAction, ok bool, err error) {
	nlo, nhi, _, err := cl.span(true)
	if err != nil {
		return nil, false, err
	}
	var puts []dynastore.TxAction
	var outside []int64
	for _, a := range members {
		if a.Op == dynastore.TxPut {
			if p, _ := memberPos(decodeMember(a.Item)); p >= lo && p < hi {
				return nil, false, nil
			}
			puts = append(puts, a)
			continue
		}
		p, _ := memberPos(a.Key.SK[1:]) // a position's sort key is skMember and the position
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
	if err := parallel(len(batches), func(i int) error { return commitActions(cl.c, batches[i]) }); err != nil {
		return nil, true, err
	}
	slices.Sort(outside)
	cl.outside = outside
	return []dynastore.TxAction{cl.keyUpdate(key, guard, n)}, true, nil
}

// keyUpdate is the update of a large collection's key item under guard
// that sets its count to n, a fresh ver and the staged key attributes.
func (cl *collection) keyUpdate(key dynastore.Key, guard dynastore.Cond, n int64) dynastore.TxAction {
	return dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: attrCount, Val: model.NInt(n)},
			{Attr: model.AttrVer, Val: model.NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}
}

// dropOutside deletes the members a committed spanned change took out of
// the range (planSpan), a transaction at a time, each checking that the
// key item still holds the generation with every one of them outside its
// range (a later push may have reached a position again: then it is an
// entry, and the clean-up stops). It is best effort: leftovers are
// harmless (memberSpan).
func (cl *collection) dropOutside() {
	sp := memberSpans[cl.typ]
	nlo, _, _, err := cl.span(true)
	if err != nil {
		return
	}
	key := model.ItemKey(cl.c.DB(), cl.key)
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
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: memberKey(cl.gen, posMember(p))})
			}
			out := dynastore.Cond(dynastore.Compare{Attr: sp.lo, Op: dynastore.OpGT, Val: model.NInt(batch[len(batch)-1])})
			if !isBelow {
				out = dynastore.Compare{Attr: sp.hi, Op: dynastore.OpLE, Val: model.NInt(batch[0])}
			}
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: dynastore.And{
				dynastore.Compare{Attr: attrGen, Op: dynastore.OpEQ, Val: dynastore.B(cl.gen)}, out,
			}})
			if err := commitActions(cl.c, acts); err != nil {
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
// (commitCollections), and so does anyone who opens the collection first.
// The cost is in proportion to the change, not to the collection.
func (cl *collection) planPending(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n int64) ([]dynastore.TxAction, []byte, error) {
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
	if err := parallel(len(batches), func(i int) error { return cl.c.Store.Transact(cl.c, batches[i]) }); err != nil {
		return nil, nil, fmt.Errorf("writing pending members: %w", err)
	}
	cl.pending = dynastore.Item{
		{Name: attrGen, Value: dynastore.B(cl.gen)},
		{Name: attrPending, Value: dynastore.B(tx)},
		{Name: attrPhase, Value: model.NInt(1)},
		{Name: attrChanges, Value: model.NInt(cl.changes + 1)},
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: attrCount, Val: model.NInt(n)},
			{Attr: model.AttrVer, Val: model.NewVer()},
			{Attr: attrPending, Val: cl.pending.Get(attrPending)},
			{Attr: attrPhase, Val: cl.pending.Get(attrPhase)},
			{Attr: attrChanges, Val: cl.pending.Get(attrChanges)},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}}, cl.gen, nil
}

// dropUnpublished deletes, best effort, the pending items the plans of
// writes wrote for changes that will never be published (the commit was
// refused, or a plan failed), so a conflict on a big change leaves nothing
// behind. Items a crashed writer leaves stay until the generation is swept.
func dropUnpublished(c *Ctx, writes []*collection) {
	for _, cl := range writes {
		tx := cl.pendingTx
		if tx == nil {
			continue
		}
		cl.pending, cl.pendingTx = nil, nil
		st := c.Store
		if txn, ok := st.(*model.Txn); ok {
			st = txn.Base()
		}
		q := dynastore.Query{PK: membersPK(cl.gen), Op: dynastore.SKBeginsWith, A: pendingPrefix(tx), Limit: dynastore.MaxTxActions}
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
// read, so it checks its key item again (validateRead). Two phases keep
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
	if txn, ok := st.(*model.Txn); ok {
		st = txn.Base()
	}
	tx, _ := it.Get(attrPending).(dynastore.B)
	tx = bytes.Clone(tx)
	gen, _ := it.Get(attrGen).(dynastore.B)
	phase, _ := model.NumberInt(it.Get(attrPhase))
	count := it.Get(attrChanges)
	for ; phase <= 2; phase++ {
		at := dynastore.And{
			dynastore.Compare{Attr: attrPending, Op: dynastore.OpEQ, Val: dynastore.B(tx)},
			dynastore.Compare{Attr: attrPhase, Op: dynastore.OpEQ, Val: model.NInt(phase)},
		}
		deletes, done, err := rollPhase(ctx, st, key, gen, tx, count, phase, at)
		if err != nil || done {
			return err
		}
		u := dynastore.Update{Set: []dynastore.SetAction{{Attr: attrPhase, Val: model.NInt(phase + 1)}}}
		if phase == 2 || !deletes {
			u = dynastore.Update{Remove: []string{attrPending, attrPhase}}
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
	q := dynastore.Query{PK: membersPK(gen), Op: dynastore.SKBeginsWith, A: prefix, Limit: dynastore.MaxTxActions - 1}
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
			target := dynastore.Key{PK: membersPK(gen), SK: sk[len(prefix):]}
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

// checkFailed reports whether a transaction was cancelled by its last
// action's condition (rollPhase's check of the key item).
func checkFailed(err error) bool {
	var tc *dynastore.TxCanceledError
	return errors.As(err, &tc) && len(tc.Reasons) > 0 && tc.Reasons[len(tc.Reasons)-1].Code == dynastore.ReasonConditionalFailed
}

// reorder returns the actions that keep a large collection's order items
// (memberOrder) in step with member m going from was to v (nil: removed):
// none when the type keeps no order or the order item stays the same. They
// need no condition of their own: the member item's action carries it.
func (cl *collection) reorder(m []byte, was memberState, v dynastore.Value) []dynastore.TxAction {
	var old, nw dynastore.Item
	if was.present {
		old = orderItem(cl.typ, cl.gen, m, was.v)
	}
	if v != nil {
		nw = orderItem(cl.typ, cl.gen, m, v)
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
func (cl *collection) checkAction() dynastore.TxAction {
	k := model.ItemKey(cl.c.DB(), cl.key)
	if !model.KeyFits(cl.key) {
		// A key that cannot exist never changes.
		return dynastore.TxAction{}
	}
	return dynastore.TxAction{Op: dynastore.TxCheck, Key: k, Cond: cl.ks.Guard()}
}

// commit writes the staged changes of one collection.
func (cl *collection) commit() error {
	return commitCollections(cl.c, []*collection{cl}, nil)
}

// commitCollections commits the changes of writes in one request or
// transaction, with checks that the keys of reads are unchanged (reads that
// are also written need no check).
func commitCollections(c *Ctx, writes []*collection, reads []*collection) error {
	var actions []dynastore.TxAction
	written := map[string]bool{}
	for _, cl := range writes {
		a, err := cl.plan()
		if err != nil {
			dropUnpublished(c, writes)
			return err
		}
		written[string(cl.key)] = true
		actions = append(actions, a...)
	}
	if len(actions) == 0 {
		// Nothing to write: the reply still rests on every read agreeing.
		return validateRead(c, reads...)
	}
	for _, cl := range reads {
		if written[string(cl.key)] || !model.KeyFits(cl.key) {
			continue
		}
		written[string(cl.key)] = true
		actions = append(actions, cl.checkAction())
	}
	if err := commitActions(c, actions); err != nil {
		if errors.Is(err, errCollRetry) {
			// Refused, so certainly not published (after another error
			// it may have been: its pending items must then stay).
			dropUnpublished(c, writes)
		}
		return err
	}
	for _, cl := range writes {
		cl.noteCommitted()
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
		err := rollForward(c, c.Store, model.ItemKey(c.DB(), cl.key), cl.pending)
		if err != nil || !cl.afterKnown || cl.after == nil {
			itemsOf(c).drop(c.DB(), cl.key)
			continue
		}
		done := cl.after.Clone(0)
		done.Delete(attrPending)
		done.Delete(attrPhase)
		itemsOf(c).put(c.DB(), cl.key, done)
	}
	return nil
}

// noteCommitted records in the caches what a successful commit of cl's
// plan left the key as.
func (cl *collection) noteCommitted() {
	if !cl.planned {
		return
	}
	noteGen(cl.c, cl.key, cl.typ, cl.genAfter)
	if cl.afterKnown {
		itemsOf(cl.c).putList(cl.c.DB(), cl.key, cl.after, cl.listKnown)
	} else {
		itemsOf(cl.c).drop(cl.c.DB(), cl.key)
	}
}

// commitActions runs actions as one single-item write when there is only
// one, else as a transaction. A failed condition becomes errCollRetry.
func commitActions(c *Ctx, actions []dynastore.TxAction) error {
	if len(actions) > dynastore.MaxTxActions {
		return fmt.Errorf("commands: %d actions: %w", len(actions), dynastore.ErrTxTooLarge)
	}
	var err error
	if len(actions) == 1 {
		a := actions[0]
		o := dynastore.WriteOptions{Cond: a.Cond}
		switch a.Op {
		case dynastore.TxPut:
			_, err = c.Store.Put(c, a.Item, o)
		case dynastore.TxUpdate:
			_, err = c.Store.Update(c, a.Key, *a.Update, o)
		case dynastore.TxDelete:
			_, err = c.Store.Delete(c, a.Key, o)
		default:
			err = c.Store.Transact(c, actions)
		}
	} else {
		err = c.Store.Transact(c, actions)
	}
	if err == nil {
		return nil
	}
	var tc *dynastore.TxCanceledError
	switch {
	case errors.Is(err, dynastore.ErrConditionFailed), errors.Is(err, dynastore.ErrTxConflict):
		return errCollRetry
	case errors.As(err, &tc):
		for _, r := range tc.Reasons {
			if r.Code == dynastore.ReasonConditionalFailed {
				return errCollRetry
			}
		}
	}
	return err
}

// ---- small helpers ---------------------------------------------------------------

// dedupe returns args without repeats, first occurrence order.
func dedupe(args [][]byte) [][]byte {
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

// allSmall reports whether every element is at most limit bytes long.
func allSmall(args [][]byte, limit int) bool {
	for _, a := range args {
		if len(a) > limit {
			return false
		}
	}
	return true
}

// bsOf builds a binary set of copies of members.
func bsOf(members [][]byte) dynastore.BS {
	out := make(dynastore.BS, len(members))
	for i, m := range members {
		out[i] = bytes.Clone(m)
	}
	return out
}

// bsContains reports whether set holds m.
func bsContains(set dynastore.Value, m []byte) bool {
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
//   - "live" is model.CondUnexpired: the comparison of t (and of v's size) holds
//     only when the item exists.

// inlineFastCond is the condition under which a fast-path update may touch
// an inline collection of type typ that will hold at most limit entries
// after adding up to adding new ones: the key is absent (the update creates
// it), or live, of the type, inline, with room. The caller checks that
// adding fits limit on its own.
func inlineFastCond(nowMS int64, typ string, limit, adding int, mustExist bool) dynastore.Cond {
	room := dynastore.And{
		model.CondUnexpired(nowMS),
		model.CondType(typ),
		dynastore.SizeCompare{Attr: model.AttrValue, Op: dynastore.OpLE, Size: int64(limit - adding)},
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
		model.CondUnexpired(nowMS),
		model.CondType(typ),
		dynastore.SizeCompare{Attr: model.AttrValue, Op: dynastore.OpGT, Size: int64(removing)},
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
		dynastore.Compare{Attr: attrGen, Op: dynastore.OpEQ, Val: dynastore.B(gen)},
		model.CondUnexpired(nowMS),
		dynastore.NotExists{Attr: attrPending},
	}
	if delta < 0 {
		cond = append(cond, dynastore.Compare{Attr: attrCount, Op: dynastore.OpGT, Val: model.NInt(-delta)})
	}
	return cond
}

// fastUpdate tries a command's single-request form, the update u under
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
func fastUpdate(c *Ctx, key []byte, u dynastore.Update, cond dynastore.Cond) (old, nw dynastore.Item, applied bool, cur dynastore.Item, err error) {
	if !model.KeyFits(key) {
		return nil, nil, false, nil, nil
	}
	k, items, now := model.ItemKey(c.DB(), key), itemsOf(c), c.NowMS()
	if it, ok := items.guardable(c.DB(), key, now); ok {
		if holds, _ := dynastore.EvalCond(it, cond); holds {
			_, err := c.Store.Update(c, k, onKnownItem(it, u), dynastore.WriteOptions{Cond: model.KeyState{Raw: it}.Guard(), OldOnFailure: true})
			if err == nil {
				nw, err = fastApplied(c, key, it, u)
				return it, nw, err == nil, nil, err
			}
			cur, failed := isCondFailed(err)
			if !failed {
				return nil, nil, false, nil, err
			}
			items.contend(c.DB(), key, cur, now)
			if holds, _ := dynastore.EvalCond(cur, cond); !holds {
				return nil, nil, false, cur, nil
			}
		}
	}
	old, err = c.Store.Update(c, k, u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	if err == nil {
		nw, err = fastApplied(c, key, old, u)
		return old, nw, err == nil, nil, err
	}
	if cur, failed := isCondFailed(err); failed {
		items.put(c.DB(), key, cur)
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

// fastApplied returns the item a fastUpdate that applied u to old left,
// and remembers it in the item cache.
func fastApplied(c *Ctx, key []byte, old dynastore.Item, u dynastore.Update) (dynastore.Item, error) {
	nw, err := dynastore.ApplyValidUpdate(model.ItemKey(c.DB(), key), old, u)
	if err != nil {
		return nil, fmt.Errorf("commands: applying an accepted update: %w", err)
	}
	itemsOf(c).put(c.DB(), key, nw)
	return nw, nil
}

// openSeeded opens key from an item already read (use) or by reading it,
// failing with errCollWrongType when it holds another type.
func openSeeded(c *Ctx, key []byte, typ string, seed dynastore.Item, use bool) (*collection, error) {
	var cl *collection
	var err error
	if use {
		cl, err = collectionFromItem(c, key, typ, seed)
	} else {
		cl, err = openCollection(c, key, typ)
	}
	if err != nil {
		return nil, err
	}
	if err := cl.check(); err != nil {
		return nil, err
	}
	return cl, nil
}

// openChecked reads key (one GetItem) as a collection of type typ, failing
// with errCollWrongType when it holds another type.
func openChecked(c *Ctx, key []byte, typ string) (*collection, error) {
	return openSeeded(c, key, typ, nil, false)
}

// collRead runs read on key's collection as one consistent state: after
// read, validateRead makes collRetry start over if a large collection
// changed while read paged through it.
func collRead(c *Ctx, key []byte, typ string, read func(cl *collection) error) error {
	return collReading(c, key, typ, false, read)
}

// collReadAll is collRead for a read that goes through every entry (each):
// the first page of a large collection's members is read beside its key
// item when the generation cache knows it (see pageAhead).
func collReadAll(c *Ctx, key []byte, typ string, read func(cl *collection) error) error {
	return collReading(c, key, typ, true, read)
}

// collReading is collRead, reading ahead (collReadAll) when all is set.
func collReading(c *Ctx, key []byte, typ string, all bool, read func(cl *collection) error) error {
	return collRetry(c, func(try int) error {
		var p *pageAhead
		if all && try == 0 {
			p = startPageAhead(c, key, typ)
		}
		cl, err := openChecked(c, key, typ)
		if first := p.take(cl); err == nil {
			cl.first = first
		}
		if err != nil {
			return err
		}
		if err := read(cl); err != nil {
			return err
		}
		return validateRead(c, cl)
	})
}

// collLookup reads members of key's collection: one read inline, two (key
// item, then the members) when large.
func collLookup(c *Ctx, key []byte, typ string, members [][]byte) (vals []dynastore.Value, present []bool, err error) {
	err = collRead(c, key, typ, func(cl *collection) (err error) {
		vals, present, err = cl.lookup(members)
		return err
	})
	return vals, present, err
}

// collLenCmd replies with the number of entries of the key (SCARD, HLEN).
func collLenCmd(c *Ctx, typ string) {
	cl, err := openChecked(c, c.Args[1], typ)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(cl.committedLen())
}

// entriesOf reads a collection whole: copies of the members, and their values.
func entriesOf(cl *collection) (ms [][]byte, vs []dynastore.Value, err error) {
	err = cl.each(func(m []byte, v dynastore.Value) error {
		ms = append(ms, bytes.Clone(m))
		vs = append(vs, v)
		return nil
	})
	return ms, vs, err
}

// scanPage returns one page of an SSCAN/HSCAN-style iteration and the next
// cursor (0 at the end). An inline collection is returned whole with cursor
// 0, as Redis does for its small encodings. A large one pages through its
// partition; the position to resume after is stored in the table under a
// random cursor id (with a one-hour TTL), so any instance can continue it.
// An unknown or stale cursor ends the iteration.
func (cl *collection) scanPage(cursor uint64, count int) ([][]byte, []dynastore.Value, uint64, error) {
	if !cl.exists() {
		return nil, nil, 0, nil
	}
	if !cl.large() {
		if cursor != 0 && cl.typ == model.TypeSet && !cl.intsetLike() {
			// Redis 7.0 keeps such a set in a hash table, where a cursor
			// it never handed out (it returns 0 for small sets) lands past
			// the end: an empty last page.
			return nil, nil, 0, nil
		}
		var ms [][]byte
		var vs []dynastore.Value
		err := cl.each(func(m []byte, v dynastore.Value) error {
			ms = append(ms, m)
			vs = append(vs, v)
			return nil
		})
		return ms, vs, 0, err
	}
	var after []byte
	if cursor != 0 {
		it, err := cl.c.Store.Get(cl.c, scanCursorKey(cursor))
		if err != nil {
			return nil, nil, 0, err
		}
		g, _ := it.Get(attrGen).(dynastore.B)
		a, _ := it.Get("a").(dynastore.B)
		if it == nil || !bytes.Equal(g, cl.gen) || len(a) == 0 {
			return nil, nil, 0, nil
		}
		after = a
	}
	page, err := cl.c.Store.Query(cl.c, dynastore.Query{PK: membersPK(cl.gen), Op: dynastore.SKLT, A: memberSKEnd, After: after, Limit: count})
	if err != nil {
		return nil, nil, 0, err
	}
	ms := make([][]byte, len(page.Items))
	vs := make([]dynastore.Value, len(page.Items))
	for i, it := range page.Items {
		ms[i], vs[i] = decodeMember(it), it.Get(model.AttrValue)
	}
	if page.Next == nil {
		return ms, vs, 0, nil
	}
	next := rand.Uint64()>>1 + 1
	k := scanCursorKey(next)
	_, err = cl.c.Store.Put(cl.c, dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: attrGen, Value: dynastore.B(cl.gen)},
		{Name: "a", Value: dynastore.B(page.Next)},
		{Name: dynastore.AttrTTL, Value: model.NInt(cl.c.NowMS()/1000 + 3600)},
	}, dynastore.WriteOptions{})
	if err != nil {
		return nil, nil, 0, err
	}
	return ms, vs, next, nil
}

// intsetLike reports whether Redis would keep this inline set as an intset.
func (cl *collection) intsetLike() bool {
	for m := range cl.inline {
		if _, ok := model.String2ll([]byte(m)); !ok {
			return false
		}
	}
	return true
}

// errEnough ends an each early once the answer is known.
var errEnough = errors.New("commands: enough entries seen")

// encodingOf is Redis 7.0's OBJECT ENCODING for a hash, set or sorted set
// key: compact (listpack, intset) while it holds at most maxEntries entries
// that all pass fits, big (hashtable, skiplist) otherwise. Redis never
// converts back, so a key that was once past a limit stays big there even
// after removals bring
// it under; redamo keeps no such history and answers from the current
// content (a large layout is only read when its count is within the limit).
func encodingOf(c *Ctx, key []byte, typ string, maxEntries int64, compact, big string, fits func(m []byte, v dynastore.Value) bool) (string, error) {
	enc := compact
	err := collRead(c, key, typ, func(cl *collection) error {
		enc = compact
		if cl.committedLen() > maxEntries {
			enc = big
			return nil
		}
		err := cl.each(func(m []byte, v dynastore.Value) error {
			if !fits(m, v) {
				enc = big
				return errEnough
			}
			return nil
		})
		if errors.Is(err, errEnough) {
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
	return dynastore.Key{PK: pk, SK: model.KeyItemSK}
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
func blindMember(c *Ctx, cl *collection, memberAction dynastore.TxAction, delta int64) (blindResult, error) {
	return blindMembers(c, cl, []dynastore.TxAction{memberAction}, delta)
}

// blindMembers is blindMember for up to maxBlindMembers member actions,
// where blindMemberFailed means that member conditions alone failed.
func blindMembers(c *Ctx, cl *collection, memberActions []dynastore.TxAction, delta int64) (blindResult, error) {
	u := &dynastore.Update{Set: []dynastore.SetAction{{Attr: model.AttrVer, Val: model.NewVer()}}}
	if delta != 0 {
		u.Add = []dynastore.AttrValue{{Attr: attrCount, Val: model.NInt(delta)}}
	}
	keyAction := dynastore.TxAction{Op: dynastore.TxUpdate, Key: model.ItemKey(c.DB(), cl.key), Update: u, Cond: genLiveCond(cl.gen, c.NowMS(), delta), OldOnFailure: true}
	actions := append(memberActions[:len(memberActions):len(memberActions)], keyAction)
	err := c.Store.Transact(c, actions)
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
type blindWrite func(cl *collection) (n int64, done bool, res blindResult, err error)

// blindAdd adds one member (v nil for sets) to the large collection cl.
func blindAdd(c *Ctx, cl *collection, m []byte, v dynastore.Value) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxPut, Item: memberItem(cl.gen, m, v), Cond: dynastore.NotExists{Attr: dynastore.AttrPK},
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
		Op: dynastore.TxPut, Item: memberItem(cl.gen, m, v), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, 0)
	return 0, err == nil && res.out == blindApplied, res, err
}

// blindRemove removes one member from the large collection cl (never the
// last one: that write must delete the key item, so it fails genLiveCond
// and falls back).
func blindRemove(c *Ctx, cl *collection, m []byte) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxDelete, Key: memberKey(cl.gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, -1)
	if err != nil || res.out == blindUnknown {
		return 0, false, res, err
	}
	return boolInt(res.out == blindApplied), true, res, nil
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
func blindRead(c *Ctx, cl *collection, members [][]byte) (present []bool, n int64, seed blindResult, ok bool, err error) {
	keys := make([]dynastore.Key, 0, 1+len(members))
	keys = append(keys, model.ItemKey(c.DB(), cl.key))
	for _, m := range members {
		keys = append(keys, memberKey(cl.gen, m))
	}
	items, err := c.Store.BatchGet(c, keys)
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	cur, err := collectionFromItem(c, cl.key, cl.typ, items[0])
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	seed = blindResult{out: blindUnknown, cur: items[0], known: true}
	if cur.wrongType || !cur.large() || !bytes.Equal(cur.gen, cl.gen) {
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
func blindAddMany(c *Ctx, cl *collection, members, vals [][]byte) (int64, bool, blindResult, error) {
	present, _, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var added int64
	for i, m := range members {
		var v dynastore.Value
		if vals != nil {
			v = hashValue(vals[i])
		}
		switch {
		case !present[i]:
			added++
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.gen, m, v), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
		case v != nil:
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.gen, m, v), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		default:
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: memberKey(cl.gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
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
func blindRemoveMany(c *Ctx, cl *collection, members [][]byte) (int64, bool, blindResult, error) {
	present, n, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var removed int64
	for i, m := range members {
		if present[i] {
			removed++
			actions[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: memberKey(cl.gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		} else {
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: memberKey(cl.gen, m), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
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
func largeFromSeed(c *Ctx, key []byte, typ string, seed dynastore.Item) *collection {
	cl, err := collectionFromItem(c, key, typ, seed)
	if err != nil || cl.wrongType || !cl.large() {
		return nil
	}
	return cl
}

// memberStart is where a member write goes on when a single-request form
// did not settle it: from the key item that attempt returned (seeded; seed
// nil when there is none), or from a fresh read.
type memberStart struct {
	seed   dynastore.Item
	seeded bool
	// tried is the generation a blind write failed on: it is not tried
	// again.
	tried []byte
}

// blind runs write on the large collection cl (nil: nothing to try). When
// write does not settle the command, st takes the key item it found, if
// any; when write cannot tell, the generation cache forgets the key.
func (st *memberStart) blind(c *Ctx, cl *collection, write blindWrite) (n int64, done bool, err error) {
	if cl == nil || bytes.Equal(cl.gen, st.tried) {
		return 0, false, nil
	}
	n, done, res, err := write(cl)
	if err != nil || done {
		return n, done, err
	}
	st.tried = cl.gen
	st.seed, st.seeded = res.cur, res.known
	if res.out == blindUnknown && !res.known {
		gensOf(c).drop(c.DB(), cl.key)
	}
	return 0, false, nil
}

// ---- adding and removing members (SADD/HSET, SREM/HDEL) ---------------------

// seededRetry is a read-modify-write of members of key's collection,
// committed conditioned on what it read (the first try starts from seed
// when seeded): change stages the writes, given what lookup found.
func seededRetry(c *Ctx, key []byte, typ string, members [][]byte, seed dynastore.Item, seeded bool, change func(cl *collection, vals []dynastore.Value, present []bool) error) error {
	return collRetry(c, func(try int) error {
		cl, err := openSeeded(c, key, typ, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		vals, present, err := cl.lookup(members)
		if err != nil {
			return err
		}
		if err := change(cl, vals, present); err != nil {
			return err
		}
		return cl.commit()
	})
}

// memberFast runs the single-request forms of a member write on key, in
// turn: cached, a blind write (nil: none), on the large collection the
// generation cache remembers; then, unless that cache knows the key as
// large, the UpdateItem u (nil: the members cannot be inline) under cond,
// whose returned old attributes count turns into the command's count; then
// seeded, a blind write (nil: none), on the large collection a failed u or
// cached returned. A blind write of several members reads them first, so
// from a returned key item it would cost what the general path costs from
// it: it is a cached write only. done reports the command settled with
// count n; otherwise the general path starts from st.
func memberFast(c *Ctx, key []byte, typ string, cached, seeded blindWrite, u *dynastore.Update, cond dynastore.Cond, count func(old dynastore.Item) int64) (st memberStart, n int64, done bool, err error) {
	if cached != nil {
		if n, done, err = st.blind(c, cachedLarge(c, key, typ), cached); err != nil || done {
			return st, n, done, err
		}
	}
	// A collection the generation cache knows as large has no inline
	// entries: u would fail, costing a write unit, only to hand back the key
	// item, which the general path reads for a read unit. (A stale entry
	// costs the general path's read where u would have done.)
	if !st.seeded && u != nil && cachedLarge(c, key, typ) == nil {
		old, _, applied, cur, err := fastUpdate(c, key, *u, cond)
		if err != nil || applied {
			return st, count(old), applied, err
		}
		st.seed, st.seeded = cur, true
	}
	if st.seeded && seeded != nil {
		n, done, err = st.blind(c, largeFromSeed(c, key, typ, st.seed), seeded)
	}
	return st, n, done, err
}

// someNewMax is the most members an SADD fast path conditions on one of
// them being new: each is a term of the condition, and DynamoDB caps an
// expression at 4 KB. A larger SADD of members all present rewrites the
// set's version, as before.
const someNewMax = 16

// addMembers is SADD and HSET/HMSET: it puts members, with vals for a hash
// (nil for a set, whose present members are left alone), and returns how
// many were new. A small add to an inline collection is one UpdateItem,
// one member of a large one a blind write (memberFast), several members of
// a large one the generation cache knows a read of those members and a
// blind write; anything else reads, computes and commits. When ok is false
// it has replied with the error.
func addMembers(c *Ctx, key []byte, typ string, members, vals [][]byte) (added int64, ok bool) {
	var cached, seeded blindWrite
	switch {
	case len(members) == 1:
		var v dynastore.Value
		if vals != nil {
			v = hashValue(vals[0])
		}
		cached = func(cl *collection) (int64, bool, blindResult, error) { return blindAdd(c, cl, members[0], v) }
		seeded = cached
	case blindFits(members, vals):
		cached = func(cl *collection) (int64, bool, blindResult, error) { return blindAddMany(c, cl, members, vals) }
	}
	var u *dynastore.Update
	lim := c.Srv.inline(typ)
	if allSmall(members, lim.bytes) && allSmall(vals, lim.bytes) && len(members) <= lim.entries {
		u = &dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: model.AttrType, Val: dynastore.S(typ)},
				{Attr: model.AttrVer, Val: model.NewVer()},
			},
			Add: []dynastore.AttrValue{{Attr: model.AttrValue, Val: bsOf(members)}},
		}
		for i, v := range vals {
			u.Set = append(u.Set, dynastore.SetAction{Attr: fieldAttr(members[i]), Val: hashValue(v)})
		}
	}
	cond := inlineFastCond(c.NowMS(), typ, lim.entries, len(members), false)
	if vals == nil && u != nil && len(members) <= someNewMax {
		// An SADD of members that are all there already changes nothing,
		// as in Redis (a WATCH of the set stays unbroken): the update
		// only goes out when one of them is new; otherwise the failed
		// condition returns the set, which the count is taken from.
		someNew := make(dynastore.Or, len(members))
		for i, m := range members {
			someNew[i] = dynastore.Not{C: dynastore.Contains{Attr: model.AttrValue, Val: dynastore.B(m)}}
		}
		cond = dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{cond, someNew}}
	}
	st, n, done, err := memberFast(c, key, typ, cached, seeded, u, cond, func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if !bsContains(old.Get(model.AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil {
		c.Fail(err)
		return 0, false
	}
	if done {
		return n, true
	}
	err = seededRetry(c, key, typ, members, st.seed, st.seeded, func(cl *collection, _ []dynastore.Value, present []bool) error {
		added = 0
		for i, m := range members {
			if !present[i] {
				added++
			}
			switch {
			case vals != nil:
				cl.put(m, hashValue(vals[i]))
			case !present[i]:
				cl.put(m, nil)
			}
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return 0, false
	}
	return added, true
}

// removeMembersCmd is SREM and HDEL (key member [member ...]): it replies
// with how many of the members were there. Like addMembers, a small remove
// from an inline collection is one UpdateItem, one member of a large one a
// blind delete, and several members of a large one the generation cache
// knows a read of those members and a blind write.
func removeMembersCmd(c *Ctx, typ string) {
	key, members := c.Args[1], dedupe(c.Args[2:])
	var cached, seeded blindWrite
	_, ordered := memberOrders[typ] // a blind delete would leave the order item
	switch {
	case ordered:
	case len(members) == 1:
		cached = func(cl *collection) (int64, bool, blindResult, error) { return blindRemove(c, cl, members[0]) }
		seeded = cached
	case blindFits(members, nil):
		cached = func(cl *collection) (int64, bool, blindResult, error) { return blindRemoveMany(c, cl, members) }
	}
	// An inline collection has at most inlineLimit entries: more arguments,
	// or longer ones, cannot all be there (and would bloat the expression).
	var u *dynastore.Update
	if len(members) <= inlineLimit(typ) && allSmall(members, inlineMaxBytes) {
		u = &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: model.AttrVer, Val: model.NewVer()}},
			Delete: []dynastore.AttrValue{{Attr: model.AttrValue, Val: bsOf(members)}},
		}
		if typ != model.TypeSet { // each value is an attribute of its own
			for _, m := range members {
				u.Remove = append(u.Remove, fieldAttr(m))
			}
		}
	}
	st, n, done, err := memberFast(c, key, typ, cached, seeded, u, inlineShrinkCond(c.NowMS(), typ, len(members)), func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if bsContains(old.Get(model.AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if done {
		c.W.Int(n)
		return
	}
	var removed int64
	err = seededRetry(c, key, typ, members, st.seed, st.seeded, func(cl *collection, _ []dynastore.Value, present []bool) error {
		removed = 0
		for i, m := range members {
			if present[i] {
				cl.del(m)
				removed++
			}
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(removed)
}
