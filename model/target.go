package model

import (
	"context"

	"github.com/redamo/redamo/dynastore"
)

// Target is where a command's requests go: the table, or the Txn of the
// unit of work the command runs in (EXEC, a script). Above the model it is
// opaque: commands and scripting hold it and hand it on (to a queued
// command, to a redis.call) but cannot send a request through it without
// naming the store, which they do not import. A command's context embeds
// it, which gives the context Scope's Data.
type Target struct{ st dynastore.Store }

// On is the Target of st (the process's store, at its wiring).
func On(st dynastore.Store) Target { return Target{st} }

// Data is the store or Txn behind t: what Scope.Data returns.
func (t Target) Data() dynastore.Store { return t.st }

// Target is the Target of the commands that run in t.
func (t *Txn) Target() Target { return Target{t} }

// Clock is t's store as a Clocked (nil when it does not measure the local
// clock's offset).
func (t Target) Clock() Clocked {
	c, _ := t.st.(dynastore.Clocked)
	return c
}

// Labeled is ctx with its store requests counted under label (a command's
// name, or a background job's).
func Labeled(ctx context.Context, label string) context.Context {
	return dynastore.WithLabel(ctx, label)
}

// Stats counts a process's store requests per label and operation (INFO
// commandstats and the redamo section read it).
type Stats = dynastore.Stats

// Tally holds one connection's store requests until it flushes them into
// Stats.
type Tally = dynastore.Tally
