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
	"strings"

	"github.com/redamo/redamo/dynastore"
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
		{Name: "exec", Run: cmdExec, RunsInMulti: true},
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
	watched []watchedKey
	// guards are the leases LOCK.GUARD and LEADER.GUARD fence EXEC with.
	guards []leaseGuard
}

type queuedCmd struct {
	cmd  *Command
	args [][]byte
}

// watchedKey is a key as WATCH read it.
type watchedKey struct {
	db   int
	key  []byte
	item dynastore.Item
	// live: the key existed unexpired at WATCH, so its expiry since
	// counts as a change.
	live bool
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
	var fresh []watchedKey
	var ks []dynastore.Key
	for _, k := range c.Args[1:] {
		if watching(tx.watched, db, k) || watching(fresh, db, k) {
			continue
		}
		fresh = append(fresh, watchedKey{db: db, key: append([]byte(nil), k...)})
		if model.KeyFits(k) {
			ks = append(ks, model.ItemKey(db, k))
		}
	}
	items, err := dynastore.GetMany(c, c.Store, ks)
	if err != nil {
		c.Fail(err)
		return
	}
	for i := range fresh {
		w := &fresh[i]
		if !model.KeyFits(w.key) {
			continue // a key that cannot exist never changes
		}
		w.item, items = items[0], items[1:]
		if w.item == nil {
			// No item to tell a key created and deleted again meanwhile
			// from one left alone: leave one (model.WatchMarkItem).
			mark := model.WatchMarkItem(db, w.key, c.NowMS())
			_, err := c.Store.Put(c, mark, dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true})
			cur, failed := model.CondFailed(err)
			switch {
			case failed:
				w.item = cur // written meanwhile: watch what is there now
			case err != nil:
				c.Fail(err)
				return
			default:
				w.item = mark
			}
		}
		st, err := model.DecodeKey(w.item, c.NowMS())
		if err != nil {
			c.Fail(err)
			return
		}
		w.live = st.Live
	}
	tx.watched = append(tx.watched, fresh...)
	c.W.Simple("OK")
}

func watching(ws []watchedKey, db int, key []byte) bool {
	for _, w := range ws {
		if w.db == db && sameKey(w.key, key) {
			return true
		}
	}
	return false
}

// still is what must hold on a watched key item at commit: the item as
// WATCH read it and, if it was live then, still live at nowMS. A key that
// had expired at WATCH may be deleted meanwhile (by DynamoDB's TTL): no
// logical change, as in Redis. A WATCH mark (model.WatchMarkItem) must be
// there still.
func (w watchedKey) still(nowMS int64) dynastore.Cond {
	ks := model.KeyState{Raw: w.item}
	switch {
	case w.live:
		return dynastore.And{ks.Guard(), model.CondUnexpired(nowMS)}
	case w.item != nil && !w.item.Has(model.AttrWatchMark):
		return dynastore.Or{ks.Guard(), dynastore.NotExists{Attr: dynastore.AttrPK}}
	}
	return ks.Guard()
}

// coveredByKeyItem reports the items a Txn need not check when it only
// read them: a large collection's members, reached only through their
// key item, whose version every change of a member changes too.
func coveredByKeyItem(k dynastore.Key) bool {
	return len(k.PK) > 0 && k.PK[0] == model.NsMembers
}

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
		cc := c.sub(q, c.W, c.Store)
		c.Srv.Run(cc, q.cmd)
		return
	}
	db, proto := c.Conn.DB, c.Conn.Proto
	// This instance's EXECs (and list writers) on the same keys take
	// turns: correctness never depends on it, but clients of one instance
	// then do not invalidate each other's commits, so a hot key sees one
	// contender per instance rather than one per client.
	keys := queuedKeys(db, tx.queue)
	names := make([][]byte, 0, len(keys)+len(tx.watched))
	for _, k := range keys {
		_, key, _ := model.RedisKeyOf(k.PK)
		names = append(names, key)
	}
	for _, w := range tx.watched {
		if w.db == db {
			names = append(names, w.key)
		}
	}
	defer c.Srv.listRT().lockKeys(db, names...)()
	// Commands that only read are served from one snapshot of their keys
	// where the store reads snapshots: one request, nothing to check after.
	readOnly := len(tx.watched) == 0
	for _, q := range tx.queue {
		readOnly = readOnly && q.cmd.HasFlag(FlagReadonly)
	}
	// hot is the one item a read-only attempt found changed: the next
	// one reads it after the others (LoadAround).
	var hot *dynastore.Key
	err := model.RetryConflicts(c, func(int) error {
		txn := model.NewTxn(c.Store, coveredByKeyItem)
		for _, w := range tx.watched {
			if model.KeyFits(w.key) {
				txn.Watch(model.ItemKey(w.db, w.key), w.item, w.still(c.NowMS()))
			}
		}
		for _, g := range tx.guards {
			if err := g.require(txn, c.leaseClock()); err != nil {
				return err
			}
		}
		if readOnly {
			var err error
			if hot != nil {
				err = txn.LoadAround(c, keys, *hot)
			} else {
				err = txn.LoadSnapshot(c, keys)
			}
			if err != nil {
				return fmt.Errorf("commands: EXEC: %w", err)
			}
		} else {
			txn.Hint(keys)
		}
		replies := &replyRecorder{proto: c.Conn.Proto}
		for _, q := range tx.queue {
			c.Srv.Run(c.sub(q, replies, txn), q.cmd)
		}
		err := txn.Err()
		if err == nil {
			err = txn.Commit(c)
		}
		switch {
		case err == nil:
			c.W.Array(len(tx.queue))
			replies.replay(c.W)
			c.notifyWrites(txn.Wrote())
			return nil
		case errors.Is(err, model.ErrWatched):
			c.W.NilArray()
			return nil
		}
		// The connection's own state as at EXEC (SELECT, HELLO).
		c.Conn.DB, c.Conn.Proto = db, proto
		if changed := txn.Changed(); readOnly && len(changed) == 1 {
			hot = &changed[0]
		}
		if model.Retryable(err) {
			return model.ErrConflict
		}
		return fmt.Errorf("commands: EXEC: %w", err)
	})
	if err != nil {
		c.Fail(err)
	}
}

// queuedKeys returns the key items of the keys the queued commands name,
// up to the first that changes the database (SELECT) or has no key
// positions of its own to go by (an unknown count of keys), and at most
// dynastore.MaxBatchGet of them: EXEC hints them to its Txn, which reads
// them in one request when a command first reads one.
func queuedKeys(db int, queue []queuedCmd) []dynastore.Key {
	var out []dynastore.Key
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
			if len(out) == dynastore.MaxBatchGet {
				return out
			}
			seen[string(k)] = true
			out = append(out, model.ItemKey(db, k))
		}
	}
	return out
}

// sub is the context of queued command q run by EXEC: its replies go to
// w, its reads and writes to st, at EXEC's clock reading, without blocking.
func (c *Ctx) sub(q queuedCmd, w Writer, st dynastore.Store) *Ctx {
	cc := &Ctx{Context: c.Context, Args: q.args, W: w, Store: st, Conn: c.Conn, Srv: c.Srv, InTx: true}
	cc.now, cc.local = c.Now(), c.local
	return cc
}

// notifyWrites tells clients blocked on lists of this instance about the
// key items a committed EXEC wrote (its commands' own notices came before
// the commit, when there was nothing to see yet).
func (c *Ctx) notifyWrites(keys []dynastore.Key) {
	for _, k := range keys {
		if db, key, ok := model.RedisKeyOf(k.PK); ok && len(k.SK) == 1 && k.SK[0] == 0 {
			c.Srv.listRT().notify(db, key)
		}
	}
}
