package model

import (
	"context"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// localScope is a Scope over a store outside any command.
type localScope struct {
	context.Context
	st dynastore.Store
	p  *Process
}

// StoreScope returns a Scope over st in database 0 at the local clock,
// with caches of its own: what work outside a command (tests, the
// process's own chores) runs model and coord calls in.
func StoreScope(ctx context.Context, st dynastore.Store) Scope {
	return localScope{Context: ctx, st: st, p: NewProcess(nil)}
}

func (s localScope) Data() dynastore.Store   { return s.st }
func (s localScope) DB() int                 { return 0 }
func (s localScope) NowMS() int64            { return time.Now().UnixMilli() }
func (s localScope) LostRace(r *Retry) error { return r.Lost(s) }
func (s localScope) Process() *Process       { return s.p }
