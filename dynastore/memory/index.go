package memory

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tidwall/btree"

	"github.com/redamo/redamo/dynastore"
)

// The index. With one lock over one tree, every writer queued behind
// whichever writer held it, and the holder spent its time descending a
// tree of every item through interface{} comparisons, so that a SET spent
// most of its time waiting. So:
//
//   - Items are spread over nShards shards by a hash of their partition key;
//     each shard has its own lock. Writers on different partitions do not
//     wait for each other, and a whole partition stays under one lock, so a
//     Query still sees a partition as of one instant.
//   - Each shard finds an item by a hash table (O(1) for Get, Put, Update,
//     Delete, BatchGet and transactions) and orders its items in a typed
//     B-tree for Query, Scan and the TTL sweep.
//   - Both use one string per item, its id, which sorts in DynamoDB's item
//     order, so ordering two items is one string comparison. The tree
//     keeps each id's first bytes next to the entry pointer (ref), so that
//     most comparisons of an insert read no entry.
//   - A reader hands out the stored item itself (read-only for callers, as
//     dynastore.Store says), and from then on the item is never changed,
//     only replaced. An item nobody was handed (the entry is not lent) is
//     read only under its shard's lock, and an update may change it in
//     place (see Update): a pipelined INCR on the same keys then allocates
//     no item, where copying one was a measurable part of its cost.
//
// A request that spans shards (BatchGet, Transact, Scan) locks every shard
// it touches in ascending order, so requests never deadlock and each stays
// atomic, as with the single lock.

// nShards is a power of two of at most 64, so that a set of shards is a
// uint64 bit mask. 64 makes two writers of random keys meet on one shard
// once in 64 (redis-benchmark runs 50 clients), while a Scan still takes
// only 64 read locks.
const nShards = 64

// shards is a set of shard numbers, one bit each.
type shards uint64

// shardState is one shard: its lock guards both indexes and every field of
// the entries in them.
type shardState struct {
	mu   sync.RWMutex
	byID idIndex
	// tree orders the shard's entries by id, but for those inserted since
	// the last flush, which wait in pending. Inserting keys one at a time
	// at random places of the tree was the most expensive part of a write
	// creating a key (every level a cache miss); a flush sorts a batch and
	// inserts it in order, each insert next to the one before. Readers of
	// the order flush first (lockOrdered).
	tree    *btree.BTreeG[ref]
	pending []*entry
	// scratch is where an update in place builds the next item before
	// copying it over the current one (see Update).
	scratch dynastore.Item
}

// maxPending bounds pending: the insert that fills it flushes it, under the
// write lock it holds anyway, so that a reader rarely has to and no flush
// keeps the shard locked for long.
const maxPending = 256

// shard pads shardState to two cache lines so that locking one shard does
// not slow down the CPU working on its neighbour.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

// entry is one stored item. A write changes item, size and ver together
// under the shard's write lock; it changes the item itself only while the
// entry is not lent. Entries are only handled by pointer: id may point
// into the entry itself.
type entry struct {
	// id, item and the start of idBuf come first, where a lookup reads
	// them: usually one cache line.
	id   string
	item dynastore.Item
	// idBuf holds an id of up to len(idBuf) bytes in the entry's own
	// allocation: finding an entry compares its id and then reads the
	// entry, one cache miss instead of two. On a large store, point
	// requests spend much of their time waiting for memory. 48 bytes make
	// an entry 112 bytes, a Go size class, and fit redamo's key items of
	// keys up to about 40 bytes.
	idBuf [48]byte
	size  int
	// ver counts the writes to this entry, so that a reader that let go
	// of the lock (the TTL sweep) can tell whether its item is still the
	// one it saw.
	ver uint64
	// removed is set when the entry leaves the indexes. An entry not
	// removed is the one both indexes hold for its id.
	removed bool
	// inTree is set once the entry is in the shard's tree rather than
	// pending.
	inTree bool
	// lent is set once item has been handed out of the shard's lock (see
	// lend); a write that stores another item clears it. Readers holding
	// only the read lock set it, hence the atomic.
	lent atomic.Bool
}

// lend returns e's item (nil for no entry) for use outside the shard's
// lock, which the caller holds (read or write): from then on a write
// replaces the item rather than changing it.
func (e *entry) lend() dynastore.Item {
	if e == nil {
		return nil
	}
	// Only the first reader writes: an entry read again and again is not
	// written again and again by readers on different CPUs.
	if !e.lent.Load() {
		e.lent.Store(true)
	}
	return e.item
}

// newEntry returns an entry for a new item at id.
func newEntry(id []byte, item dynastore.Item, size int) *entry {
	e := &entry{item: item, size: size}
	if len(id) <= len(e.idBuf) {
		n := copy(e.idBuf[:], id)
		// idBuf is never written again, as a string's bytes must not be.
		e.id = unsafe.String(&e.idBuf[0], n)
	} else {
		e.id = string(id)
	}
	return e
}

// ref is an entry as the ordered index holds it: with the first bytes of
// its id inline, big-endian and zero-padded, so that ordering two refs
// reads the entries only when those bytes are equal. An insert into a tree
// of *entry read an entry for each of its dozen comparisons, each a cache
// miss on a large store. Padding keeps the order: when two padded prefixes
// differ, the first difference is either between two id bytes or where a
// shorter id, a prefix of the other, ended.
type ref struct {
	pfx [3]uint64
	e   *entry
}

// refTo returns e's ref.
func refTo(e *entry) ref {
	var b [24]byte
	copy(b[:], e.id)
	return ref{
		pfx: [3]uint64{binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])},
		e:   e,
	}
}

// pivot returns a ref that orders as an entry at id would, to search from.
func pivot(id string) ref { return refTo(&entry{id: id}) }

func refLess(a, b ref) bool { return refCmp(a, b) < 0 }

func refCmp(a, b ref) int {
	for i := range a.pfx {
		if a.pfx[i] != b.pfx[i] {
			return cmp.Compare(a.pfx[i], b.pfx[i])
		}
	}
	return strings.Compare(a.e.id, b.e.id)
}

func newShard() shardState {
	return shardState{
		// The tree's own locks would be redundant with mu.
		tree:    btree.NewBTreeGOptions(refLess, btree.Options{NoLocks: true}),
		scratch: make(dynastore.Item, 0, scratchAttrs),
	}
}

// scratchAttrs is the room of a shard's scratch: more than redamo's items
// have attributes. An update that outgrows it builds its item in memory of
// its own.
const scratchAttrs = 16

// keep returns the item an update in place of old leaves, given nit, the
// item it built in the scratch: nit copied over old when it fits in old's
// memory, else in memory of its own. The caller holds sh.mu exclusively
// and clears the scratch afterwards.
func (sh *shardState) keep(old, nit dynastore.Item) dynastore.Item {
	if unsafe.SliceData(nit) != unsafe.SliceData(sh.scratch) {
		return nit // it outgrew the scratch
	}
	if len(nit) > cap(old) {
		return nit.Clone(0)
	}
	kept := old[:len(nit)]
	copy(kept, nit)
	if len(old) > len(nit) {
		clear(old[len(nit):]) // the removed attributes' values may go
	}
	return kept
}

// appendPartition appends the id prefix shared by every item of partition
// pk: pk with each 0x00 escaped as 0x00 0xff, then 0x00 0x00. The escape
// keeps the order of unsigned bytes and makes the end of pk unambiguous, so
// ids compare as (pk, sk) do and a partition's ids are contiguous.
func appendPartition(dst, pk []byte) []byte {
	for {
		i := bytes.IndexByte(pk, 0)
		if i < 0 {
			break
		}
		dst = append(append(dst, pk[:i+1]...), 0xff)
		pk = pk[i+1:]
	}
	return append(append(dst, pk...), 0, 0)
}

// partitionEnd turns a partition prefix into an id after every id of the
// partition and before every id of the next one.
func partitionEnd(prefix []byte) []byte {
	prefix[len(prefix)-1] = 1
	return prefix
}

// appendID appends the id of the item at (pk, sk).
func appendID(dst, pk, sk []byte) []byte {
	return append(appendPartition(dst, pk), sk...)
}

// idBufSize covers the ids of redamo's key items without an allocation
// (pk: a namespace byte, a db byte and the Redis key).
const idBufSize = 128

// shardOf returns the number of the shard that holds partition pk.
func (s *Store) shardOf(pk []byte) uint {
	return uint(maphash.Bytes(s.seed, pk) % nShards)
}

// shard returns shard n. A key's shard and its id are kept in separate
// variables rather than one struct: escape analysis would otherwise move
// the id's stack buffer to the heap along with the shard pointer.
func (s *Store) shard(n uint) *shardState {
	return &s.shards[n].shardState
}

// all yields the numbers of the shards in set in ascending order: the order
// in which requests that span shards lock them.
func (set shards) all(yield func(int) bool) {
	for m := set; m != 0; m &= m - 1 {
		if !yield(bits.TrailingZeros64(uint64(m))) {
			return
		}
	}
}

// get returns the entry at id, whose idHash is h (nil if none); the caller
// holds sh.mu.
func (sh *shardState) get(id []byte, h uint64) *entry {
	return sh.byID.find(id, h)
}

// set makes next (nil: nothing) the item at id, whose idHash is h, where
// cur is the entry found there (nil: none), and returns the entry that
// holds next. next is not lent: nobody outside the store may hold it (an
// item built by the store, or handed over). The caller holds sh.mu
// exclusively.
func (sh *shardState) set(cur *entry, id []byte, h uint64, next dynastore.Item, size int) *entry {
	switch {
	case next != nil && cur != nil:
		cur.item, cur.size = next, size
		cur.ver++
		if cur.lent.Load() { // an atomic store is a locked instruction
			cur.lent.Store(false)
		}
		return cur
	case next != nil:
		e := newEntry(id, next, size)
		sh.byID.insert(e, h)
		sh.pending = append(sh.pending, e)
		if len(sh.pending) >= maxPending {
			sh.flush()
		}
		return e
	case cur != nil:
		sh.remove(cur)
	}
	return nil
}

// remove deletes a stored entry; the caller holds sh.mu exclusively.
func (sh *shardState) remove(e *entry) {
	sh.byID.remove(e, idHashString(e.id))
	if e.inTree {
		sh.tree.Delete(refTo(e))
	} // else the flush skips it
	e.removed = true
}

// flush moves the pending entries into the tree, in id order; the caller
// holds sh.mu exclusively.
func (sh *shardState) flush() {
	refs := make([]ref, 0, len(sh.pending))
	for _, e := range sh.pending {
		if !e.removed {
			refs = append(refs, refTo(e))
		}
	}
	clear(sh.pending) // let removed entries go
	sh.pending = sh.pending[:0]
	slices.SortFunc(refs, refCmp)
	var hint btree.PathHint
	for _, r := range refs {
		sh.tree.SetHint(r, &hint)
		r.e.inTree = true
	}
}

// lockOrdered locks sh for a reader of its tree: read-locked when nothing
// is pending, else write-locked (excl) and flushed. Release it with
// unlockOrdered(excl).
func (sh *shardState) lockOrdered() (excl bool) {
	sh.mu.RLock()
	if len(sh.pending) == 0 {
		return false
	}
	sh.mu.RUnlock()
	sh.mu.Lock()
	sh.flush()
	return true
}

func (sh *shardState) unlockOrdered(excl bool) {
	if excl {
		sh.mu.Unlock()
	} else {
		sh.mu.RUnlock()
	}
}

func itemOf(e *entry) dynastore.Item {
	if e == nil {
		return nil
	}
	return e.item
}

func sizeOf(e *entry) int {
	if e == nil {
		return 0
	}
	return e.size
}

// outcome is a single-item write: the item it was decided on and the size
// of the item it left. An update in place changes old's memory (Update
// takes what it returns of the old item before).
type outcome struct {
	old               dynastore.Item
	oldSize, nextSize int
}

// decision decides a single-item write from the entry at its key (nil:
// none), under the write lock of sh, the entry's shard: the item to leave
// there (nil: none) and its size, or an error to write nothing. A decision
// that hands out cur's item (a failed condition's old item) lends it.
type decision func(sh *shardState, cur *entry) (next dynastore.Item, size int, err error)

// write performs one single-item write at k, deciding it under the write
// lock of the item's shard; with lendNext the item it leaves is lent, to be
// handed out. (Deciding first under the read lock, and under the write lock
// only checking that the item had not changed, was no faster for
// pipelined INCR; and an item not lent may now change in place, which only
// a writer holding the lock may read.)
func (s *Store) write(k dynastore.Key, lendNext bool, decide decision) (outcome, error) {
	var buf [idBufSize]byte
	sh, id := s.shard(s.shardOf(k.PK)), appendID(buf[:0], k.PK, k.SK)
	h := idHash(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := sh.get(id, h)
	o := outcome{old: itemOf(cur), oldSize: sizeOf(cur)}
	next, size, err := decide(sh, cur)
	if err != nil {
		return o, err
	}
	o.nextSize = size
	if e := sh.set(cur, id, h, next, size); lendNext {
		e.lend()
	}
	return o, nil
}

// onCond is the decision of a Put or Delete with options o: leave next
// (nil: nothing) of size bytes if o.Cond holds on the current item.
func onCond(o dynastore.WriteOptions, next dynastore.Item, size int) decision {
	return func(_ *shardState, cur *entry) (dynastore.Item, int, error) {
		if !dynastore.EvalValidCond(itemOf(cur), o.Cond) {
			return nil, 0, failCond(cur, o)
		}
		return next, size, nil
	}
}

// failCond is a decision's error for a condition that does not hold on
// cur, lending cur's item when o asks for it in the error.
func failCond(cur *entry, o dynastore.WriteOptions) error {
	if o.OldOnFailure {
		cur.lend()
	}
	return errCondFailed
}
