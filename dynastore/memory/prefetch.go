package memory

import (
	"sync/atomic"

	"github.com/redamo/redamo/dynastore"
)

// maxPrefetch bounds the keys one Prefetch looks at.
const maxPrefetch = 64

// prefetched takes the last byte each Prefetch read: a load whose result
// nothing uses may be dropped by the compiler. One atomic store per call.
var prefetched atomic.Uint32

// Prefetch implements dynastore.Prefetcher: it reads, for each key, the
// index slot and the entry, and for the items of reads their attributes
// and what requests read of their values (see below), each stage for
// every key before the next stage, so that the cache misses of different
// keys overlap instead of following one another. It finds the entries
// under the read locks of the shards it touches, taken with TryRLock: a
// shard being written, or waited for by a writer, is skipped rather than
// waited for. Writers of those shards wait for the misses taken under the
// locks: reading the items a pipeline of SETs replaces, rather than only
// finding them, made SET slower. The items of reads are read under the
// locks too: one never handed out may change in place (see Update).
func (s *Store) Prefetch(reads, replaced []dynastore.Key) {
	reads = reads[:min(len(reads), maxPrefetch)]
	replaced = replaced[:min(len(replaced), maxPrefetch-len(reads))]
	n := len(reads) + len(replaced)
	type at struct {
		n uint // the shard, +1 (0: the key is skipped)
		h uint64
		e *entry
	}
	var ats [maxPrefetch]at
	var want, held shards
	var buf [idBufSize]byte
	for i := range n {
		k := keyAt(reads, replaced, i)
		if len(k.PK)+len(k.SK) > idBufSize/2 {
			continue // its id may not fit buf; not worth an allocation
		}
		sh := s.shardOf(k.PK)
		ats[i] = at{n: sh + 1, h: idHash(appendID(buf[:0], k.PK, k.SK))}
		want |= 1 << sh
	}
	for sh := range want.all {
		if s.shards[sh].mu.TryRLock() {
			held |= 1 << sh
		}
	}
	for i := range n {
		a := &ats[i]
		if a.n == 0 || held&(1<<(a.n-1)) == 0 {
			continue
		}
		a.e = s.shard(a.n - 1).byID.byHash(a.h)
	}
	var items [maxPrefetch]dynastore.Item
	var last byte
	for i := range n {
		if e := ats[i].e; e != nil {
			if i < len(reads) {
				items[i] = e.item
			}
			// The entry's head (its id and item) and the end of its id,
			// which a lookup compares: an entry starts anywhere in a cache
			// line, and its id often ends in the next one.
			if len(e.id) > 0 {
				last += e.id[len(e.id)-1]
			}
		}
	}
	for _, it := range items[:len(reads)] {
		for _, a := range it {
			if a.Name == dynastore.AttrPK || a.Name == dynastore.AttrSK {
				// The key's bytes are also the entry's id, already
				// compared; its sizes come from the key (ItemSizeAt);
				// point requests seldom read it from the item, so the
				// prefetch spends no time on it.
				continue
			}
			switch v := a.Value.(type) {
			case dynastore.B:
				if len(v) > 0 {
					last = v[0]
				}
			case dynastore.N:
				if len(v) > 0 {
					last = v[0]
				}
			case dynastore.S:
				// Only the length, which an item's size needs: the
				// strings of redamo's items are short tokens (a type,
				// a version) mostly compared by no point request.
				last += byte(len(v))
			}
		}
	}
	for sh := range held.all {
		s.shards[sh].mu.RUnlock()
	}
	prefetched.Store(uint32(last))
}

// keyAt is the i-th key of reads followed by replaced.
func keyAt(reads, replaced []dynastore.Key, i int) dynastore.Key {
	if i < len(reads) {
		return reads[i]
	}
	return replaced[i-len(reads)]
}
