package commands

// The transactions family: MULTI, EXEC, DISCARD, WATCH and UNWATCH.
//
// MULTI only changes the connection: later commands are queued (Run
// replies +QUEUED) until EXEC or DISCARD. EXEC runs the queued commands'
// own handlers against a model.Txn over the store, collecting their
// replies, and commits the Txn: all of their writes become visible at once
// to every client of every instance, or none does. The commit is
// conditioned on every item the commands read being unchanged, so the
// run is serializable whatever it read; when another client got there
// first the commands run again (model.Retry bounds how long), as
// Redis's single thread would have run them after that client.
//
// WATCH reads the key items of its keys and keeps them on the connection.
// EXEC starts its Txn from them, and its commit is also conditioned on
// each watched key item being still as WATCH saw it (and, if it was live
// then, still live): a change by any client of any instance, an expiry or
// a deletion in between makes EXEC reply with the null array and write
// nothing. A key with no item at WATCH gets one (model.WatchMarkItem), so
// that one set and deleted again before EXEC is noticed too.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// Transaction replies, as Redis 7 sends them.
const (
	MsgMultiNested    = "ERR MULTI calls can not be nested"
	MsgExecNoMulti    = "ERR EXEC without MULTI"
	MsgDiscardNoMulti = "ERR DISCARD without MULTI"
	MsgWatchInMulti   = "ERR WATCH inside MULTI is not allowed"
	MsgExecAbort      = "EXECABORT Transaction discarded because of previous errors."
	MsgNoMulti        = "ERR Command not allowed inside a transaction"
)

func registerTransactions(t *Table) {
	t.Register([]Row{
		{Name: "multi", Run: cmdMulti, RunsInMulti: true},
		// A queued SUBSCRIBE of several channels answers several times
		// inside EXEC's array, which Redis then sends with more elements
		// than its length says: EXEC may write several replies too.
		{Name: "exec", Run: cmdExec, RunsInMulti: true, SeveralReplies: true},
		{Name: "discard", Run: cmdDiscard, RunsInMulti: true},
		{Name: "watch", Run: cmdWatch, RunsInMulti: true},
		{Name: "unwatch", Run: cmdUnwatch},
	})
}

// txState is a connection's MULTI and WATCH state (owner-only).
type txState struct {
	multi bool
	// dirty: a command was refused while queueing; EXEC aborts.
	dirty   bool
	queue   []queuedCmd
	watched []model.Watched
	// guards are the leases LOCK.GUARD and LEADER.GUARD fence EXEC with.
	guards []coord.Fence
}

type queuedCmd struct {
	cmd  *Command
	args [][]byte
}

// InMulti reports whether the connection is between MULTI and EXEC/DISCARD.
func (cn *Conn) InMulti() bool { return cn.tx.multi }

// Rejected is the reply to a request cmd (nil: unknown) refused with msg
// before it ran (unknown command, wrong arity, NOAUTH). Inside MULTI the
// refusal makes EXEC abort; a refused EXEC aborts at once, in MULTI or
// not, as in Redis (which words its own refusals without the ERR code
// there).
func (cn *Conn) Rejected(cmd *Command, msg string) string {
	if cn.tx.multi {
		cn.tx.dirty = true
	}
	if cmd != nil && cmd.Name == "exec" {
		cn.discardTx()
		return "EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR ")
	}
	return msg
}

// discardTx ends MULTI and forgets the watched keys.
func (cn *Conn) discardTx() {
	cn.tx = txState{}
	cn.multiLen.Store(0)
}

// queue queues cmd for EXEC when the connection is in MULTI and cmd is not
// one that runs at once; it reports whether it did (and replied).
func (c *Ctx) queue(cmd *Command) bool {
	tx := &c.Conn.tx
	if !tx.multi || cmd.runsInMulti {
		return false
	}
	if cmd.HasFlag(FlagNoMulti) {
		tx.dirty = true
		c.W.Error(MsgNoMulti)
		return true
	}
	if !tx.dirty {
		// The arguments are slices of the connection's read buffer.
		args := make([][]byte, len(c.Args))
		n := 0
		for _, a := range c.Args {
			n += len(a)
		}
		buf := make([]byte, 0, n)
		for i, a := range c.Args {
			buf = append(buf, a...)
			args[i] = buf[len(buf)-len(a):]
		}
		tx.queue = append(tx.queue, queuedCmd{cmd: cmd, args: args})
		c.Conn.multiLen.Store(int64(len(tx.queue)) + 1)
	}
	c.W.Simple("QUEUED")
	return true
}

func cmdMulti(c *Ctx) {
	if c.Conn.tx.multi {
		c.W.Error(MsgMultiNested)
		return
	}
	c.Conn.tx.multi = true
	c.Conn.multiLen.Store(1)
	c.W.Simple("OK")
}

func cmdDiscard(c *Ctx) {
	if !c.Conn.tx.multi {
		c.W.Error(MsgDiscardNoMulti)
		return
	}
	c.Conn.discardTx()
	c.W.Simple("OK")
}

func cmdUnwatch(c *Ctx) {
	c.Conn.tx.watched, c.Conn.tx.guards = nil, nil
	c.W.Simple("OK")
}

// cmdWatch reads the key items of its keys (one request for all of them).
func cmdWatch(c *Ctx) {
	tx := &c.Conn.tx
	if tx.multi {
		c.W.Error(MsgWatchInMulti)
		return
	}
	db := c.DB()
	var fresh [][]byte
	for _, k := range c.Args[1:] {
		if watching(tx.watched, db, k) || slices.ContainsFunc(fresh, func(f []byte) bool { return sameKey(f, k) }) {
			continue
		}
		fresh = append(fresh, append([]byte(nil), k...))
	}
	ws, err := model.Watch(c, db, fresh)
	if err != nil {
		c.Fail(err)
		return
	}
	tx.watched = append(tx.watched, ws...)
	c.W.Simple("OK")
}

func watching(ws []model.Watched, db int, key []byte) bool {
	for _, w := range ws {
		if w.DB == db && sameKey(w.Key, key) {
			return true
		}
	}
	return false
}

// coveredByKeyItem is what a script's Txn need not check (until scripts
// run as a model.Unit).
var coveredByKeyItem = model.CoveredByKeyItem

func cmdExec(c *Ctx) {
	tx := c.Conn.tx
	if !tx.multi {
		c.W.Error(MsgExecNoMulti)
		return
	}
	c.Conn.discardTx()
	if tx.dirty {
		c.W.Error(MsgExecAbort)
		return
	}
	// While it runs, CLIENT LIST shows the connection in MULTI, as Redis does.
	c.Conn.multiLen.Store(int64(len(tx.queue)) + 1)
	defer c.Conn.multiLen.Store(0)
	if len(tx.watched) == 0 && len(tx.guards) == 0 && len(tx.queue) == 1 {
		// One command is atomic by itself: it runs as it would outside
		// MULTI (a single write stays one request), without blocking.
		q := tx.queue[0]
		c.W.Array(1)
		cc := c.sub(q, c.W, c.Target)
		c.Srv.Run(cc, q.cmd)
		return
	}
	db, proto := c.Conn.DB, c.Conn.Proto
	// This instance's EXECs (and list writers) on the same keys take
	// turns: correctness never depends on it, but clients of one instance
	// then do not invalidate each other's commits, so a hot key sees one
	// contender per instance rather than one per client.
	keys := queuedKeys(tx.queue)
	names := slices.Clip(keys)
	for _, w := range tx.watched {
		if w.DB == db {
			names = append(names, w.Key)
		}
	}
	defer c.Srv.listRT().lockKeys(db, names...)()
	// Commands that only read are served from one snapshot of their keys
	// where the store reads snapshots: one request, nothing to check after.
	readOnly := len(tx.watched) == 0
	for _, q := range tx.queue {
		readOnly = readOnly && q.cmd.HasFlag(FlagReadonly)
	}
	u := model.Unit{DB: db, Keys: keys, ReadOnly: readOnly, Watched: tx.watched}
	u.Begin = func(t *model.Txn) error {
		clk := c.leaseClock()
		for _, g := range tx.guards {
			g.Require(t, clk)
		}
		return nil
	}
	var replies *replyRecorder
	resetEvents, eventsDone := c.HoldEvents()
	held := c.events
	held.at = func() int { return len(replies.top) }
	u.Work = func(t *model.Txn) error {
		resetEvents()
		replies = &replyRecorder{proto: c.Conn.Proto}
		for _, q := range tx.queue {
			c.Srv.Run(c.sub(q, replies, t.Target()), q.cmd)
		}
		return nil
	}
	// The connection's own state as at EXEC (SELECT, HELLO), for the next
	// attempt and after a failure.
	restore := func() { c.Conn.DB, c.Conn.Proto = db, proto }
	u.Lost = restore
	t, err := u.Run(c)
	if err != nil {
		eventsDone(false)
	}
	switch {
	case err == nil:
		// Each command's events among the replies, where Redis sends
		// them (it runs each command as it replies).
		c.W.Array(len(tx.queue))
		d := c.Srv.KeyEvents()
		replies.replayEach(c.W, func(i int) { held.reportBefore(d, i) })
		eventsDone(true)
		t.WrittenKeys(c.Srv.listRT().notify)
	case errors.Is(err, model.ErrWatched):
		c.W.NilArray()
	default:
		restore()
		c.Fail(fmt.Errorf("commands: EXEC: %w", err))
	}
}

// queuedKeys returns the keys the queued commands name, up to the first
// that changes the database (SELECT) or has no key positions of its own to
// go by (an unknown count of keys), and at most model.MaxUnitKeys of them:
// EXEC's unit reads their key items in one request when a command first
// reads one.
func queuedKeys(queue []queuedCmd) [][]byte {
	var out [][]byte
	seen := map[string]bool{}
	for _, q := range queue {
		if q.cmd.Name == "select" || q.cmd.Name == "swapdb" || q.cmd.HasFlag(FlagMovable) {
			break
		}
		refs, ok := q.cmd.keysOf(q.args)
		if !ok {
			break
		}
		for _, r := range refs {
			k := q.args[r.pos]
			if !model.KeyFits(k) || seen[string(k)] {
				continue
			}
			if len(out) == model.MaxUnitKeys {
				return out
			}
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// sub is the context of queued command q run by EXEC: its replies go to
// w, its reads and writes to st, at EXEC's clock reading, without blocking.
func (c *Ctx) sub(q queuedCmd, w Writer, t model.Target) *Ctx {
	cc := &Ctx{Context: c.Context, Args: q.args, W: w, Target: t, Conn: c.Conn, Srv: c.Srv, InTx: true, events: c.events}
	cc.now, cc.local = c.Now(), c.local
	return cc
}
