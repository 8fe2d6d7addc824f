package model

import "github.com/redamo/redamo/dynastore"

// Keys a write created or emptied, for the keyspace events that depend on
// them (Redis's "new", raised as dbAdd adds a key, and the "del" after a
// pop or a removal leaves a collection empty). The model tells the
// command's Scope as each write takes effect, where it knows it anyway: a
// fast-path update that found no item, a commit that found the key absent
// or deleted its key item. No request is added for it.

// KeyReporter is a Scope that wants to know which keys its writes created
// and which collections they left empty (and so deleted). It is told once
// the write took effect (in a unit of work, once it took effect in the
// unit's view: the unit's own outcome decides the rest).
type KeyReporter interface {
	// KeyCreated: key did not exist (or had expired) and now does.
	KeyCreated(key []byte)
	// KeyEmptied: key existed, and the write removed its last entry.
	KeyEmptied(key []byte)
	// WantsCreated reports whether KeyCreated goes anywhere: a write whose
	// request would not otherwise tell whether the key existed (a plain
	// SET, INCR, APPEND) then asks for the old item back, in the same
	// request.
	WantsCreated() bool
}

// wantsCreated reports whether c's reporter wants KeyCreated.
func wantsCreated(c Scope) bool {
	r, ok := c.(KeyReporter)
	return ok && r.WantsCreated()
}

// reportCreated tells c's reporter that key was created.
func reportCreated(c Scope, key []byte) {
	if r, ok := c.(KeyReporter); ok {
		r.KeyCreated(key)
	}
}

// reportCreatedIfAbsent reports key created by a write that took effect
// when old, the item it returned from before, was not a live key.
func reportCreatedIfAbsent(c Scope, key []byte, old dynastore.Item) {
	if ks, err := DecodeKey(old, c.NowMS()); err == nil && !ks.Live {
		reportCreated(c, key)
	}
}

// reportCommitted tells c's reporter what a successful commit of cl's plan
// did to its key: created it (absent before, not deleted) or emptied it
// (live before, its key item deleted).
func reportCommitted(c Scope, cl *Collection) {
	r, ok := c.(KeyReporter)
	if !ok || !cl.planned {
		return
	}
	deleted := cl.afterKnown && cl.after == nil
	switch {
	case !cl.KS.Live && !deleted:
		r.KeyCreated(cl.Key)
	case cl.KS.Live && deleted:
		r.KeyEmptied(cl.Key)
	}
}
