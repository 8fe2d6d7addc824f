package model

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Coalescing (group commit) lets the commands on one hot key that reach
// this process together share requests. A command whose key has no request
// of its kind in flight sends its own at once, so a lone client waits for
// nothing and makes the requests it always made. A command that arrives
// while one is in flight waits for it and joins the batch that goes next;
// when the in-flight request returns, that batch's first command sends one
// request for the whole batch and answers every member.
//
// Each batch is linearizable as one operation: all its members were
// invoked before its request was sent (a batch is closed when it is handed
// its turn) and are answered after it returned. A member that arrives
// while its key's request is in flight never shares that request, only
// the next one.
//
// Coalescing is per process and per kind of request (a Coalescer each):
// instances coalesce independently, and different kinds on one key (reads
// and increments, say) do not wait for each other, as they would not
// without coalescing.

// Coalescer batches operations of one kind per key. Op is what one command
// asks, Res what it is answered. The zero value is ready to use.
//
// Its keys' lanes live in a fixed table of stripes, a key's lane in the
// stripe its hash picks, so that the lone command (the usual case) takes a
// lock and allocates nothing: no map entry is made and dropped per
// command. While a stripe's request is in flight for one key, a command
// on another key that hashes to the same stripe runs on its own, as it
// would without coalescing.
type Coalescer[Op, Res any] struct {
	once    sync.Once
	seed    maphash.Seed
	stripes *[coalesceStripes]lane[Op, Res]
	// Max caps a batch's members (0: no cap), for requests with a limit
	// such as a transaction's 100 actions; a full batch is followed by
	// another.
	Max int
}

// coalesceStripes is the number of lanes of a Coalescer: keys hot at the
// same time rarely share one.
const coalesceStripes = 1024

// lane is one stripe's state: the key whose request is in flight, if any,
// and the batches of that key waiting for their turn, oldest first.
type lane[Op, Res any] struct {
	mu      sync.Mutex
	busy    bool
	key     []byte // while busy
	waiting []*batch[Op, Res]
}

// batch is the commands that share one request.
type batch[Op, Res any] struct {
	ops []Op
	// turn is closed when the batch may send: the request before it
	// returned. Its ops no longer change from then on.
	turn chan struct{}
	// done is closed once res and errs hold every member's answer.
	done chan struct{}
	res  []Res
	errs []error
}

// Run is how a batch is carried out: one answer and one error per op, in
// order. ops[0] belongs to the caller that runs it. A batch of one is a
// command on its own and runs as it would without coalescing.
type Run[Op, Res any] func(ops []Op) ([]Res, []error)

// Do answers op on key through run, sharing the request with the other
// operations of key that arrive while one is in flight. s is op's
// command's scope; its process counts the batches. A member waits for its
// batch's answer even if its client leaves meanwhile: the batch's outcome
// is decided by a request that may already be on its way, and it is
// bounded as every request is.
func (c *Coalescer[Op, Res]) Do(s Scope, key string, op Op, run Run[Op, Res]) (Res, error) {
	return c.DoAlone(s, key, op, nil, run)
}

// DoAlone is Do with alone, which answers an op that has no one to share
// its request with (run of a batch of one, when nil): it spares the lone
// command, the usual one, the slices of a batch.
func (c *Coalescer[Op, Res]) DoAlone(s Scope, key string, op Op, alone func(Op) (Res, error), run Run[Op, Res]) (Res, error) {
	if alone == nil {
		alone = func(op Op) (Res, error) {
			res, errs := run([]Op{op})
			return res[0], errs[0]
		}
	}
	l := c.lane(key)
	l.mu.Lock()
	if !l.busy {
		l.busy = true
		l.key = append(l.key[:0], key...)
		l.mu.Unlock()
		res, err := alone(op)
		c.next(l)
		return res, err
	}
	if string(l.key) != key {
		l.mu.Unlock()
		return alone(op)
	}
	var b *batch[Op, Res]
	if n := len(l.waiting); n > 0 && (c.Max == 0 || len(l.waiting[n-1].ops) < c.Max) {
		b = l.waiting[n-1]
	} else {
		b = &batch[Op, Res]{turn: make(chan struct{}), done: make(chan struct{})}
		l.waiting = append(l.waiting, b)
	}
	i := len(b.ops)
	b.ops = append(b.ops, op)
	l.mu.Unlock()
	waiting := &s.Process().coalesced.waiting
	waiting.Add(1)
	defer waiting.Add(-1)
	if i == 0 {
		// The batch's first member sends its request; it waits for its
		// turn however long that takes, as it would wait for its own
		// request without coalescing.
		<-b.turn
		if len(b.ops) == 1 {
			b.res, b.errs = make([]Res, 1), make([]error, 1)
			b.res[0], b.errs[0] = alone(b.ops[0])
		} else {
			b.res, b.errs = run(b.ops)
			s.Process().coalesced.note(len(b.ops))
		}
		close(b.done)
		c.next(l)
		return b.res[0], b.errs[0]
	}
	<-b.done
	return b.res[i], b.errs[i]
}

// lane is key's stripe.
func (c *Coalescer[Op, Res]) lane(key string) *lane[Op, Res] {
	c.once.Do(func() {
		c.seed = maphash.MakeSeed()
		c.stripes = new([coalesceStripes]lane[Op, Res])
	})
	return &c.stripes[maphash.String(c.seed, key)%coalesceStripes]
}

// next hands l to its oldest waiting batch, or frees it.
func (c *Coalescer[Op, Res]) next(l *lane[Op, Res]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiting) == 0 {
		l.busy = false
		return
	}
	b := l.waiting[0]
	l.waiting[0] = nil
	l.waiting = l.waiting[1:]
	close(b.turn)
}

// coalesceCounts count a process's batches of more than one command and
// the commands they held, and the commands waiting behind a request in
// flight now.
type coalesceCounts struct{ batches, commands, waiting atomic.Int64 }

func (c *coalesceCounts) note(members int) {
	c.batches.Add(1)
	c.commands.Add(int64(members))
}

// Coalesced returns how many batches of more than one command p ran and
// how many commands they answered (INFO).
func (p *Process) Coalesced() (batches, commands int64) {
	return p.coalesced.batches.Load(), p.coalesced.commands.Load()
}

// CoalesceWaiting is how many commands wait behind a request of their
// key in flight now (INFO).
func (p *Process) CoalesceWaiting() int64 { return p.coalesced.waiting.Load() }

// waitingOps is how many operations wait behind key's request in flight
// (tests).
func (c *Coalescer[Op, Res]) waitingOps(key string) int {
	l := c.lane(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	if l.busy && string(l.key) == key {
		for _, b := range l.waiting {
			n += len(b.ops)
		}
	}
	return n
}

// idle reports whether no request of c is in flight (tests).
func (c *Coalescer[Op, Res]) idle() bool {
	if c.stripes == nil {
		return true
	}
	for i := range c.stripes {
		l := &c.stripes[i]
		l.mu.Lock()
		busy := l.busy || len(l.waiting) > 0
		l.mu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// Detached is s for a request that answers several commands: the command
// that sends it must not cancel it for the others when its own client
// leaves. Its values (the request label among them) stay s's.
func Detached(s Scope) Scope {
	return detachedScope{Scope: s, ctx: context.WithoutCancel(s)}
}

type detachedScope struct {
	Scope
	ctx context.Context
}

func (d detachedScope) Deadline() (time.Time, bool) { return d.ctx.Deadline() }
func (d detachedScope) Done() <-chan struct{}       { return d.ctx.Done() }
func (d detachedScope) Err() error                  { return d.ctx.Err() }
func (d detachedScope) Value(k any) any             { return d.ctx.Value(k) }

// Coalescable reports whether s's commands may share requests with other
// commands: only on the store itself, never inside a unit of work (EXEC, a
// script), whose requests are its own.
func Coalescable(s Scope) bool {
	_, inUnit := s.Data().(*Txn)
	return !inUnit
}
