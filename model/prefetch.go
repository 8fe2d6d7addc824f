package model

import "github.com/redamo/redamo/dynastore"

// maxHintBytes bounds the key bytes KeyHints keeps between pipelines: one
// pipeline of huge keys does not pin its memory.
const maxHintBytes = 16 * 1024

// KeyHints collects the key items a connection's upcoming requests will
// read or replace, for a store that can bring items closer ahead of them
// (dynastore.Prefetcher). Its memory is reused from one pipeline to the
// next; the zero value is ready.
type KeyHints struct {
	pks             []byte
	reads, replaced []dynastore.Key
}

// TakesHints reports whether t's store does anything with KeyHints.
func TakesHints(t Target) bool {
	_, ok := t.st.(dynastore.Prefetcher)
	return ok
}

// Reset forgets the hints, keeping their memory.
func (h *KeyHints) Reset() {
	h.pks, h.reads, h.replaced = h.pks[:0], h.reads[:0], h.replaced[:0]
}

// Add hints that a request will read the key item of key in db, or
// replace it without reading it (read false), for which only what finds
// the item helps.
func (h *KeyHints) Add(db int, key []byte, read bool) {
	// The keys share one buffer: an append that moves it leaves the keys
	// before it where they were.
	start := len(h.pks)
	h.pks = AppendKeyPK(h.pks, db, key)
	k := dynastore.Key{PK: h.pks[start:len(h.pks):len(h.pks)], SK: KeyItemSK}
	if read {
		h.reads = append(h.reads, k)
	} else {
		h.replaced = append(h.replaced, k)
	}
}

// Send gives st the hints when there are two or more (a single request
// reads its item right away: nothing to overlap). It makes no request,
// never blocks, and changes nothing any request sees.
func (h *KeyHints) Send(t Target) {
	if p, ok := t.st.(dynastore.Prefetcher); ok && len(h.reads)+len(h.replaced) >= 2 {
		p.Prefetch(h.reads, h.replaced)
	}
	if cap(h.pks) > maxHintBytes {
		*h = KeyHints{}
	}
}
