package commands

// Blocking pops of lists and sorted sets (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
// BLMPOP; BZPOPMIN, BZPOPMAX, BZMPOP in zsets.go).
//
// A blocked client runs in its connection's goroutine (resp/ serves each
// connection in its own), trying its pop whenever it is told something may
// have arrived, until the pop succeeds, the timeout passes or its context
// ends (the client disconnected, the server shuts down). Nothing is popped
// by anyone but the client itself, so a client that leaves consumes nothing.
//
// Who tells it: the server's wait.Registry (listRuntime.waits), keyed by
// the keys' partition keys. Clients blocked on the same key wait in one
// line, in arrival order, and only the first of a line is woken for that
// key (it passes the turn on when it leaves). Two things wake it:
//
//   - a push through this instance (LPUSH, RPUSH, LMOVE, ... call notify
//     after their commit): at once, without a read;
//   - the registry's poller, which runs while anyone is blocked: every key
//     with waiters is read (all due keys in one BatchGet, listRuntime.Probe)
//     at the pace of the wait package's polling policy, up to
//     Config.BlockingPoll (default 100 ms) between two reads of a key. A
//     push through another instance is therefore seen within that pause.
//
// A blocked XREAD (streams.go) waits in the same lines but consumes
// nothing, so it is not served in turn: every such waiter of a key is woken
// by a write through this instance, and by the poller when its ready
// function says the key item may hold entries for it.
//
// The poller's reads are counted under the label "blocking-poll".

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/wait"
)

// BlockingPollLabel is the request label of the blocked-pop poller.
const BlockingPollLabel = "blocking-poll"

// DefaultBlockingPoll is the default longest pause between two polls of a
// key clients are blocked on.
const DefaultBlockingPoll = 100 * time.Millisecond

// dbKey names one key of one database among this process's key locks and
// blocked readers.
type dbKey struct {
	db  int
	key string
}

// listRuntime is the server's state for blocking commands and list
// writers: the registry of clients blocked on keys, and the key locks.
type listRuntime struct {
	srv   *Server
	waits wait.Registry[keyProbe]

	mu    sync.Mutex
	locks map[dbKey]*keyLock
}

// keyLock serializes this process's writers of one list key. Correctness
// never depends on it (every commit is conditioned on what it read); it
// keeps a process's own clients from invalidating each other's optimistic
// writes, so a hot list sees at most one contender per instance instead of
// one per client.
type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lockKeys locks the given keys of db (in a fixed order, so commands over
// several keys cannot deadlock) and returns the unlock function.
func (r *listRuntime) lockKeys(db int, keys ...[]byte) func() {
	names := make([]string, 0, len(keys))
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			names = append(names, string(k))
		}
	}
	sort.Strings(names)
	held := make([]*keyLock, len(names))
	for i, n := range names {
		ck := dbKey{db, n}
		r.mu.Lock()
		if r.locks == nil {
			r.locks = map[dbKey]*keyLock{}
		}
		kl := r.locks[ck]
		if kl == nil {
			kl = &keyLock{}
			r.locks[ck] = kl
		}
		kl.refs++
		r.mu.Unlock()
		kl.mu.Lock()
		held[i] = kl
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].mu.Unlock()
			r.mu.Lock()
			held[i].refs--
			if held[i].refs == 0 {
				delete(r.locks, dbKey{db, names[i]})
			}
			r.mu.Unlock()
		}
	}
}

// lockKeys is listRuntime.lockKeys for the command's database, except
// inside EXEC, which holds the locks of its keys for its whole run (a
// command it runs locking one again would wait for itself).
func (c *Ctx) lockKeys(keys ...[]byte) func() {
	if c.InTx {
		return func() {}
	}
	return c.Srv.listRT().lockKeys(c.DB(), keys...)
}

// dataModel is the server's share of the data model (model.Process), with
// the inline limits of its encoding parameters.
func (s *Server) dataModel() *model.Process {
	s.procOnce.Do(func() {
		s.proc = model.NewProcess(s.inline)
		s.proc.SetStreamNodeLimits(s.streamNodeLimits)
	})
	return s.proc
}

func (s *Server) listRT() *listRuntime {
	s.listsOnce.Do(func() {
		r := &listRuntime{srv: s}
		r.waits.Max = DefaultBlockingPoll
		if d := s.Config.BlockingPoll; d > 0 {
			r.waits.Max = d
		}
		r.waits.Prober = r
		s.lists = r
	})
	return s.lists
}

// BlockedClients is the number of clients waiting in a blocking list
// command (INFO's blocked_clients).
func (s *Server) BlockedClients() int { return s.listRT().waits.Waiting() }

// keyProbe is what the poller read of a key blocked clients wait on: its
// key item and the clock reading that decides its expiry.
type keyProbe struct {
	it    model.Item
	nowMS int64
}

// Probe reads the key items of the partition keys pks (one BatchGet); it
// makes listRuntime the registry's wait.Prober.
func (r *listRuntime) Probe(ctx context.Context, pks []string) ([]keyProbe, error) {
	items, err := model.ReadKeyItems(ctx, r.srv.Store, BlockingPollLabel, pks)
	if err != nil {
		return nil, err
	}
	nowMS := r.srv.Now().UnixMilli()
	out := make([]keyProbe, len(items))
	for i, it := range items {
		out[i] = keyProbe{it, nowMS}
	}
	return out, nil
}

// Serves reports whether a probed key holds elements for a blocked pop.
func (r *listRuntime) Serves(p keyProbe) bool { return model.HasElements(p.it, p.nowMS) }

// waitKey is what clients blocked on key of db wait on.
func waitKey(db int, key []byte) string { return string(model.KeyPK(db, key)) }

// notify tells the first client blocked on key (if any) that it may have
// data, and re-arms the key's polling at its shortest interval. With
// nobody blocked, a push builds no key.
func (r *listRuntime) notify(db int, key []byte) {
	if r.waits.Waiting() > 0 {
		r.waits.Notify(waitKey(db, key))
	}
}

// block runs attempt until it reports done, the timeout (ms, 0 = forever)
// passes, or c ends. The first attempt runs before the client is queued and
// may fail with a reply error (WRONGTYPE); later ones are quiet (a key that
// turned into another type meanwhile is not served, as in Redis). It
// returns false on timeout or cancellation, and at once inside EXEC.
func block(c *Ctx, keys [][]byte, timeoutMS int64, attempt func(quiet bool) (bool, error)) (bool, error) {
	return blockWith(c, keys, timeoutMS, nil, attempt)
}

// readyFunc tells, for a blocked client that consumes nothing (XREAD),
// from the key item the poller read for k whether to wake it.
type readyFunc = func(k dbKey, it model.Item, nowMS int64) bool

// blockWith is block for a waiter that consumes nothing (ready non-nil),
// which is woken whenever ready holds rather than in turn.
func blockWith(c *Ctx, keys [][]byte, timeoutMS int64, ready readyFunc, attempt func(quiet bool) (bool, error)) (bool, error) {
	w := wait.Waiter[keyProbe]{Turns: ready == nil}
	for _, k := range keys {
		w.Keys = append(w.Keys, waitKey(c.DB(), k))
	}
	if ready != nil {
		w.Ready = func(pk string, p keyProbe) bool {
			db, key, _ := model.RedisKeyOf([]byte(pk))
			return ready(dbKey{db, string(key)}, p.it, p.nowMS)
		}
	}
	const forever = time.Duration(1<<63 - 1)
	limit := forever
	switch {
	case c.InTx:
		limit = 0
	case timeoutMS > 0 && timeoutMS < int64(forever/time.Millisecond):
		limit = time.Duration(timeoutMS) * time.Millisecond
	}
	done, _, err := c.Srv.listRT().waits.Wait(c, w, limit, func(first bool) (bool, time.Time, error) {
		done, err := attempt(!first)
		return done, time.Time{}, err
	})
	if err != nil && err == c.Err() {
		// The client went away or the server stops.
		return false, nil
	}
	return done, err
}

// blockAttempt runs one pop attempt of a blocked client. The attempt is
// not cancelled halfway when the client goes (so it either pops and replies
// or does not pop), but it does not start once c has ended.
func blockAttempt(c *Ctx) (*Ctx, bool) {
	if c.Err() != nil {
		return nil, false
	}
	cc := *c
	cc.Context = context.WithoutCancel(c.Context)
	return &cc, true
}

// blockingPop waits until pop takes something from one of keys (it
// returns the key, nil when there was nothing), or the timeout passes (ok
// false: it has replied the null array). On a store error it has replied.
func blockingPop[T any](c *Ctx, keys [][]byte, ms int64, pop func(ac *Ctx, quiet bool) ([]byte, T, error)) (key []byte, got T, ok bool) {
	ok, err := block(c, keys, ms, func(quiet bool) (bool, error) {
		ac, live := blockAttempt(c)
		if !live {
			return false, nil
		}
		k, g, err := pop(ac, quiet)
		if err != nil || k == nil {
			return false, err
		}
		key, got = k, g
		c.notes = ac.notes // reported after the reply
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return nil, got, false
	}
	if !ok {
		c.W.NilArray()
	}
	return key, got, ok
}

// blockPop waits until it pops up to count elements from the first
// non-empty list of keys (blockingPop).
func blockPop(c *Ctx, keys [][]byte, ms int64, left bool, count int64) ([]byte, [][]byte, bool) {
	return blockingPop(c, keys, ms, func(ac *Ctx, quiet bool) ([]byte, [][]byte, error) {
		return listMultiPop(ac, keys, left, count, quiet)
	})
}

func cmdBpop(c *Ctx, left bool) {
	keys := c.Args[1 : len(c.Args)-1]
	ms, msg := parseBlockTimeout(c.Args[len(c.Args)-1])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if key, vals, ok := blockPop(c, keys, ms, left, 1); ok {
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Bulk(vals[0])
		c.Notify(events.List, popEvent(left), key)
	}
}

func cmdBlmpop(c *Ctx) {
	ms, msg := parseBlockTimeout(c.Args[1])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	keys, left, count, msg := parseMpop(c.Args[2:], "left", "right")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if key, vals, ok := blockPop(c, keys, ms, left, count); ok {
		writeMpop(c, key, vals)
		c.Notify(events.List, popEvent(left), key)
	}
}

func cmdBlmove(c *Ctx) {
	from, ok1 := parseWhere(c.Args[3])
	to, ok2 := parseWhere(c.Args[4])
	if !ok1 || !ok2 {
		c.W.Error(MsgSyntax)
		return
	}
	blmove(c, c.Args[5], from, to)
}

func cmdBrpoplpush(c *Ctx) { blmove(c, c.Args[3], false, true) }

func blmove(c *Ctx, timeout []byte, from, to bool) {
	ms, msg := parseBlockTimeout(timeout)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	src, dst := c.Args[1], c.Args[2]
	var moved []byte
	ok, err := block(c, [][]byte{src}, ms, func(quiet bool) (bool, error) {
		ac, live := blockAttempt(c)
		if !live {
			return false, nil
		}
		v, err := listMove(ac, src, dst, from, to, quiet)
		if err != nil || v == nil {
			return false, err
		}
		moved = v
		c.notes = ac.notes
		return true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case !ok && c.InTx:
		// Inside EXEC, where it does not block, Redis answers with a
		// null bulk string, as LMOVE would.
		c.W.Nil()
		return
	case !ok:
		// Redis answers a timed-out BLMOVE with a null array, as every
		// blocked list command.
		c.W.NilArray()
		return
	}
	replyMoved(c, moved, from, to)
}
