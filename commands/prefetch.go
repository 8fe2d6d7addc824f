package commands

import (
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Upcoming is a request a connection has received and not run yet, as far
// as Prefetch looks at it: its name and its first argument (nil if none).
type Upcoming struct {
	Name, Arg []byte
}

// prefetchScratch is the memory Prefetch reuses from one call to the next.
type prefetchScratch struct {
	pks             []byte
	reads, replaced []dynastore.Key
}

// maxPrefetchScratch bounds the key bytes a connection keeps for Prefetch
// between calls: one pipeline of huge keys does not pin its memory.
const maxPrefetchScratch = 16 * 1024

// Prefetch tells the store, when it is a dynastore.Prefetcher, which key
// items the upcoming requests of cn will read or replace, so that the
// embedded store can bring them into the CPU's caches together rather
// than one request at a time (on a large store, GET spends much of its
// time waiting for memory). Only the commands a hint is set for count (see
// hintOf). It is a hint: a request that then fails, is queued by MULTI or
// follows a SELECT costs a wasted lookup, nothing more.
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
	sc.pks, sc.reads, sc.replaced = sc.pks[:0], sc.reads[:0], sc.replaced[:0]
	for _, r := range reqs {
		cmd := lookup(s.Table, r.Name)
		if cmd == nil || cmd.hint == hintNone || r.Arg == nil || !model.KeyFits(r.Arg) {
			continue
		}
		// The keys share one buffer: an append that moves it leaves the
		// keys before it where they were.
		start := len(sc.pks)
		sc.pks = model.AppendKeyPK(sc.pks, cn.DB, r.Arg)
		k := dynastore.Key{PK: sc.pks[start:len(sc.pks):len(sc.pks)], SK: model.KeyItemSK}
		if cmd.hint == hintRead {
			sc.reads = append(sc.reads, k)
		} else {
			sc.replaced = append(sc.replaced, k)
		}
	}
	if len(sc.reads)+len(sc.replaced) >= 2 {
		p.Prefetch(sc.reads, sc.replaced)
	}
	if cap(sc.pks) > maxPrefetchScratch {
		*sc = prefetchScratch{}
	}
}

// prefetchHint is what Prefetch tells the store of a command's key.
type prefetchHint uint8

const (
	hintNone    prefetchHint = iota
	hintRead                 // the command reads the key's item
	hintReplace              // it replaces the item without reading it
)

// Beside the read-only commands, two kinds of writes gain from a hint,
// which their rows say (Row.ReadsFirst, Row.Replaces).
// hintOf is the hint Prefetch gives for c's key, which must come first.
func hintOf(c *Command) prefetchHint {
	switch {
	case c.FirstKey != 1:
		return hintNone
	case c.HasFlag(FlagReadonly) || c.readsFirst:
		return hintRead
	case c.replaces:
		return hintReplace
	}
	return hintNone
}
