package model

// The per-process caches of the collection engine (collection.go): what
// this process last saw of collection key items and large generations, so
// hot commands start without a read. Process holds them.

import (
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

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

// ListKnown is what the item cache keeps with a large list's key item
// (list.go): values of elements near its ends, by position, and
// the average element size of the last read. They stay valid as
// long as the key item does: an element inside [lh, lt) changes only with
// a write that also sets a fresh ver (MemberSpan), and every write made
// from the entry is guarded by its ver.
type ListKnown struct {
	Values   map[int64][]byte
	ElemSize int
}

// CachedItem is an item cache entry: a collection key item exactly as this
// process last read or wrote it (nil: the key did not exist), until when
// (Unix ms) FastUpdate sends no guarded writes for the key, and for a
// large list, element values valid for that item (ListKnown).
type CachedItem struct {
	Item   dynastore.Item
	calmAt int64
	List   *ListKnown
	// w is the entry's weight, computed once.
	w int
}

func (e CachedItem) weight() int { return e.w }

// contendedPause is how long FastUpdate sends no guarded writes for a key
// after one failed: another instance is writing it, and each failure costs
// a request.
const contendedPause = time.Second

// ItemCache holds the key items of lists, sets and hashes (or their
// absence) this process saw last: a list pop or LPUSH, and the fast paths
// of small sets and hashes, start from it instead of reading. Every entry
// is an item as it was at some moment, never a guess: writes made from one
// are conditioned on its ver (KeyState.guard), which holds only while the
// item is exactly that one (every write sets a fresh ver).
type ItemCache struct {
	kc keyCache[CachedItem]
}

// Get returns what the cache knows of key: ok, and the entry (its item
// nil: absent).
func (ic *ItemCache) Get(db int, key []byte) (CachedItem, bool) {
	return ic.kc.get(db, key)
}

// Guardable is get, except while FastUpdate's guarded writes of key pause.
func (ic *ItemCache) Guardable(db int, key []byte, nowMS int64) (dynastore.Item, bool) {
	e, ok := ic.kc.get(db, key)
	if !ok || nowMS < e.calmAt {
		return nil, false
	}
	return e.Item, true
}

// Put remembers it (nil: key is absent) as key's item, if it is a
// collection's (anything else forgets key).
func (ic *ItemCache) Put(db int, key []byte, it dynastore.Item) {
	ic.remember(db, key, it, 0, nil)
}

// putList is put of a large list's key item with element values valid for
// it.
func (ic *ItemCache) putList(db int, key []byte, it dynastore.Item, list *ListKnown) {
	ic.remember(db, key, it, 0, list)
}

// contend is put, also pausing guarded writes of key for contendedPause.
func (ic *ItemCache) contend(db int, key []byte, it dynastore.Item, nowMS int64) {
	ic.remember(db, key, it, nowMS+contendedPause.Milliseconds(), nil)
}

func (ic *ItemCache) remember(db int, key []byte, it dynastore.Item, calmAt int64, list *ListKnown) {
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
	ic.kc.update(db, key, func(old CachedItem, _ bool) CachedItem {
		return CachedItem{Item: it, calmAt: max(calmAt, old.calmAt), List: list, w: w}
	})
}

// Drop forgets key.
func (ic *ItemCache) Drop(db int, key []byte) { ic.kc.drop(db, key) }

// Items is the process's item cache.
func Items(c Scope) *ItemCache { return &c.Process().items }

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
		gensOf(c).put(c.DB(), key, largeGen{typ: typ, gen: gen})
		return
	}
	gensOf(c).drop(c.DB(), key)
}

// cachedLarge is the large collection the generation cache remembers for
// key, with type typ (nil if none): a view with the generation only, for a
// blind write.
func cachedLarge(c Scope, key []byte, typ string) *Collection {
	if !KeyFits(key) {
		return nil
	}
	lg, ok := gensOf(c).get(c.DB(), key)
	if !ok || lg.typ != typ {
		return nil
	}
	return &Collection{c: c, Type: typ, Key: key, Gen: lg.gen}
}
