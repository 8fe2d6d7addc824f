package model

import (
	"context"
	"errors"

	"github.com/redamo/redamo/dynastore"
)

// Scope is what one command's calls into the data model run in: its
// context, where it reads and writes, its database and clock reading, and
// what the process keeps between commands. A command handler's context
// implements it.
type Scope interface {
	context.Context
	// Data is where the command reads and writes: the store, or a Txn
	// over it (EXEC, a script).
	Data() dynastore.Store
	// DB is the command's database.
	DB() int
	// NowMS is the command's clock reading (Unix ms), fixed for an attempt
	// so that all its expiry checks agree.
	NowMS() int64
	// LostRace is Retry.Lost for an attempt that lost a race; once it
	// allows another attempt, NowMS reads the clock again, so the next
	// attempt decides expiry as of when it runs.
	LostRace(r *Retry) error
	// Process is this process's share of the data model (its caches).
	Process() *Process
}

// ErrWrongType is an operation on a key that holds another type.
var ErrWrongType = errors.New("model: the key holds another type")

// InlineLimits bound a type's inline layout: the entries, and the bytes of
// each member and value.
type InlineLimits struct{ Entries, Bytes int }

// Process is what one process keeps of the data model between commands:
// the caches of collection key items (itemCache) and of large collections'
// generations (largeGen). Nothing correctness depends on lives in it.
type Process struct {
	items ItemCache
	gens  keyCache[largeGen]
	// limits are the inline limits of a type under the encoding
	// parameters (CONFIG SET hash-max-listpack-entries and friends); nil:
	// the caps (InlineCap).
	limits func(typ string) InlineLimits
	// hotStrings and hotColls coalesce the commands on hot keys (see
	// Coalescer); coalesced counts their batches.
	hotStrings hotStrings
	hotColls   hotColls
	coalesced  coalesceCounts
	// streamNodeLimits are stream-node-max-bytes and -entries (nil: the
	// defaults).
	streamNodeLimits func() (maxBytes, maxEntries int64)
}

// SetStreamNodeLimits makes limits give stream-node-max-bytes and
// stream-node-max-entries (CONFIG SET changes them).
func (p *Process) SetStreamNodeLimits(limits func() (maxBytes, maxEntries int64)) {
	p.streamNodeLimits = limits
}

// streamNodes is stream-node-max-bytes and stream-node-max-entries.
func (p *Process) streamNodes() (maxBytes, maxEntries int64) {
	if p.streamNodeLimits != nil {
		return p.streamNodeLimits()
	}
	return StreamNodeMaxBytes, StreamNodeMaxEntries
}

// NewProcess returns a Process whose inline limits are limits (nil: the
// caps).
func NewProcess(limits func(typ string) InlineLimits) *Process {
	p := &Process{limits: limits}
	// A batch of collection commands is one transaction at most.
	p.hotColls.lists.Max, p.hotColls.members.Max, p.hotColls.zsets.Max = collBatchMax, collBatchMax, zsetBatchMax
	return p
}

// inline is the inline limits of typ.
func (p *Process) inline(typ string) InlineLimits {
	if p.limits != nil {
		return p.limits(typ)
	}
	return InlineLimits{inlineLimit(typ), InlineMaxBytes}
}
