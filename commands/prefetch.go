package commands

import (
	"slices"

	"github.com/redamo/redamo/dynastore"
)

// Upcoming is a request a connection has received and not run yet, as far
// as Prefetch looks at it: its name and its first argument (nil if none).
type Upcoming struct {
	Name, Arg []byte
}

// prefetchScratch is the memory Prefetch reuses from one call to the next.
type prefetchScratch struct {
	pks  []byte
	keys []dynastore.Key
}

// maxPrefetchScratch bounds the key bytes a connection keeps for Prefetch
// between calls: one pipeline of huge keys does not pin its memory.
const maxPrefetchScratch = 16 * 1024

// Prefetch tells the store, when it is a dynastore.Prefetcher, which key
// items the upcoming requests of cn will read, so that the embedded store
// can bring them into the CPU's caches together rather than one request at
// a time (GET over 100,000 keys spends a third of its CPU waiting for
// memory; with this, under redis-benchmark -P 16, GET takes about 10% less
// CPU). Only the commands prefetched selects count. It is a hint: a
// request that then fails, is queued by MULTI or follows a SELECT costs a
// wasted lookup, nothing more.
func (s *Server) Prefetch(cn *Conn, reqs []Upcoming) {
	// A single request reads its item right away: nothing to overlap.
	if len(reqs) < 2 || s.AuthRequired(cn) {
		return
	}
	p, ok := s.Store.(dynastore.Prefetcher)
	if !ok {
		return
	}
	sc := &cn.prefetch
	sc.pks, sc.keys = sc.pks[:0], sc.keys[:0]
	for _, r := range reqs {
		cmd := lookup(s.Table, r.Name)
		if cmd == nil || !cmd.prefetch || r.Arg == nil || !keyFits(r.Arg) {
			continue
		}
		// The keys share one buffer: an append that moves it leaves the
		// keys before it where they were.
		start := len(sc.pks)
		sc.pks = appendKeyPK(sc.pks, cn.DB, r.Arg)
		sc.keys = append(sc.keys, dynastore.Key{PK: sc.pks[start:len(sc.pks):len(sc.pks)], SK: keyItemSK})
	}
	if len(sc.keys) >= 2 {
		p.Prefetch(sc.keys)
	}
	if cap(sc.pks) > maxPrefetchScratch {
		sc.pks, sc.keys = nil, nil
	}
}

// prefetchedWrites are the writes whose key Prefetch hints too: the
// counters, whose store request is decided on the item as stored (INCR's
// update is conditioned on the value it adds to), so that the embedded
// store reads the item it then writes. Pipelined INCR over 100,000 keys,
// in process: 7% less time with the hint. A write that replaces its item
// without looking at it (SET) has no use for it in cache, and the read
// locks the embedded store's prefetch holds would make writers wait: SET
// took 8% more CPU with it.
var prefetchedWrites = []string{"incr", "decr", "incrby", "decrby", "incrbyfloat"}

// prefetched reports whether Prefetch hints the key of c: a read-only
// command or one of prefetchedWrites, with its key first.
func prefetched(c *Command) bool {
	return c.FirstKey == 1 && (c.HasFlag(FlagReadonly) || slices.Contains(prefetchedWrites, c.Name))
}
