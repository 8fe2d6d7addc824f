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
// Who tells it: the process's waitRegistry. Clients blocked on the same key
// wait in one queue, in arrival order, and only the first of a queue is woken
// for that key (it passes the turn on when it leaves). Two things wake it:
//
//   - a push through this instance (LPUSH, RPUSH, LMOVE, ... call notify
//     after their commit): at once, without a read;
//   - the registry's poller, one goroutine per process that exists while
//     anyone is blocked: every key with waiters is read (all due keys in one
//     BatchGet) every poll interval, which starts at blockPollMin and grows
//     by half while nothing arrives, up to Config.BlockingPoll (default
//     100 ms), with ±20% jitter so instances do not poll in step. A push
//     through another instance is therefore seen within the poll interval.
//
// A blocked XREAD (streams.go) waits in the same queues but consumes
// nothing, so it is not served in turn: every such waiter of a key is woken
// by a write through this instance, and by the poller when its ready
// function says the key item may hold entries for it.
//
// The poller's reads are counted under the label "blocking-poll".

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// BlockingPollLabel is the request label of the blocked-pop poller.
const BlockingPollLabel = "blocking-poll"

// DefaultBlockingPoll is the default longest pause between two polls of a
// key clients are blocked on.
const DefaultBlockingPoll = 100 * time.Millisecond

// blockPollMin is the first poll interval after a key was (re)armed.
const blockPollMin = 10 * time.Millisecond

// listRuntime is the list family's per-process state, and the home of the
// collection caches the set and hash families share with it (model.Items,
// gensOf).
// dbKey names one key of one database among this process's waiters and
// key locks.
type dbKey struct {
	db  int
	key string
}

type listRuntime struct {
	srv *Server

	mu      sync.Mutex
	keys    map[dbKey]*keyWaiters
	running bool
	poke    chan struct{}
	blocked int
	locks   map[dbKey]*keyLock
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

// keyWaiters is the queue of clients blocked on one key.
type keyWaiters struct {
	queue    []*waiter
	interval time.Duration
	due      time.Time
}

// waiter is one blocked client.
type waiter struct {
	// ch is signalled (never blocking: capacity 1) when the client should
	// try its pop.
	ch   chan struct{}
	keys []dbKey
	// ready, for a waiter that consumes nothing (XREAD), tells from a
	// key item the poller read whether to wake it; nil for a pop, which
	// waits its turn.
	ready func(k dbKey, it dynastore.Item, nowMS int64) bool
}

// wake signals the first pop waiter of kw and every reader for which
// ready (nil: every one) holds; it reports whether it signalled anyone.
func (kw *keyWaiters) wake(popReady bool, ready func(w *waiter) bool) bool {
	woke, popSeen := false, false
	for _, w := range kw.queue {
		switch {
		case w.ready == nil && !popSeen:
			popSeen = true
			if popReady {
				signal(w.ch)
				woke = true
			}
		case w.ready != nil && (ready == nil || ready(w)):
			signal(w.ch)
			woke = true
		}
	}
	return woke
}

// dataModel is the server's share of the data model (model.Process), with
// the inline limits of its encoding parameters.
func (s *Server) dataModel() *model.Process {
	s.procOnce.Do(func() { s.proc = model.NewProcess(s.inline) })
	return s.proc
}

func (s *Server) listRT() *listRuntime {
	s.listsOnce.Do(func() {
		s.lists = &listRuntime{srv: s, keys: map[dbKey]*keyWaiters{}, poke: make(chan struct{}, 1)}
	})
	return s.lists
}

// BlockedClients is the number of clients waiting in a blocking list
// command (INFO's blocked_clients).
func (s *Server) BlockedClients() int {
	r := s.listRT()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blocked
}

func (r *listRuntime) maxPoll() time.Duration {
	if d := r.srv.Config.BlockingPoll; d > 0 {
		return d
	}
	return DefaultBlockingPoll
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// notify tells the first client blocked on key (if any) that it may have
// data, and re-arms the key's polling at its shortest interval.
func (r *listRuntime) notify(db int, key []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kw := r.keys[dbKey{db, string(key)}]
	if kw == nil || len(kw.queue) == 0 {
		return
	}
	kw.wake(true, nil)
	kw.interval = blockPollMin
	kw.due = time.Now().Add(blockPollMin)
}

// register queues w on each of its keys and makes sure the poller runs.
func (r *listRuntime) register(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked++
	now := time.Now()
	for _, k := range w.keys {
		kw := r.keys[k]
		if kw == nil {
			kw = &keyWaiters{interval: blockPollMin, due: now.Add(blockPollMin)}
			r.keys[k] = kw
		}
		kw.queue = append(kw.queue, w)
	}
	if !r.running {
		r.running = true
		go r.poll()
	} else {
		signal(r.poke)
	}
}

// unregister removes w from its queues. A waiter that leaves while it was
// first in a queue hands the turn to the next one, which re-checks at once
// (w may have been woken for data it will not take).
func (r *listRuntime) unregister(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked--
	for _, k := range w.keys {
		kw := r.keys[k]
		if kw == nil {
			continue
		}
		for i, x := range kw.queue {
			if x != w {
				continue
			}
			kw.queue = append(kw.queue[:i], kw.queue[i+1:]...)
			if i == 0 && len(kw.queue) > 0 {
				signal(kw.queue[0].ch)
			}
			break
		}
		if len(kw.queue) == 0 {
			delete(r.keys, k)
		}
	}
}

// poll is the poller goroutine: it reads the keys that are due, wakes the
// first waiter of each key holding a non-empty list, and sleeps until the
// next key is due (or a new waiter arrives). It ends when nobody waits.
func (r *listRuntime) poll() {
	ctx := dynastore.WithLabel(context.Background(), BlockingPollLabel)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if len(r.keys) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		now := time.Now()
		var due []dbKey
		next := now.Add(time.Hour)
		for k, kw := range r.keys {
			if !kw.due.After(now) {
				due = append(due, k)
			} else if kw.due.Before(next) {
				next = kw.due
			}
		}
		r.mu.Unlock()

		if len(due) > 0 {
			r.check(ctx, due)
			continue
		}
		timer.Reset(next.Sub(now))
		select {
		case <-timer.C:
		case <-r.poke:
			if !timer.Stop() {
				<-timer.C
			}
		}
	}
}

// check reads the key items of keys (one BatchGet) and wakes or backs off.
func (r *listRuntime) check(ctx context.Context, keys []dbKey) {
	ks := make([]dynastore.Key, len(keys))
	for i, k := range keys {
		ks[i] = model.ItemKey(k.db, []byte(k.key))
	}
	items, err := r.srv.Store.BatchGet(ctx, ks)
	nowMS := r.srv.Now().UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for i, k := range keys {
		kw := r.keys[k]
		if kw == nil {
			continue
		}
		woke := err == nil && kw.wake(hasElements(items[i], nowMS), func(w *waiter) bool {
			return w.ready(k, items[i], nowMS)
		})
		if woke {
			kw.interval = blockPollMin
		} else {
			kw.interval = min(kw.interval*3/2, r.maxPoll())
		}
		jitter := time.Duration(float64(kw.interval) * (0.8 + 0.4*rand.Float64()))
		kw.due = now.Add(jitter)
	}
}

// hasElements reports whether a key item is a live, non-empty list or
// sorted set, the types clients block on.
func hasElements(it dynastore.Item, nowMS int64) bool {
	ks, err := model.DecodeKey(it, nowMS)
	if err != nil || !ks.Live || (ks.Type != model.TypeList && ks.Type != model.TypeZSet) {
		return false
	}
	if it.Has(model.AttrGen) {
		n, err := model.NumberInt(it.Get(model.AttrCount))
		return err == nil && n > 0
	}
	switch v := it.Get(model.AttrValue).(type) {
	case dynastore.L:
		return len(v) > 0
	case dynastore.BS:
		return len(v) > 0
	}
	return false
}

// block runs attempt until it reports done, the timeout (ms, 0 = forever)
// passes, or c ends. The first attempt runs before the client is queued and
// may fail with a reply error (WRONGTYPE); later ones are quiet (a key that
// turned into another type meanwhile is not served, as in Redis). It
// returns false on timeout or cancellation, and at once inside EXEC.
func block(c *Ctx, keys [][]byte, timeoutMS int64, attempt func(quiet bool) (bool, error)) (bool, error) {
	return blockWith(c, keys, timeoutMS, nil, attempt)
}

// blockWith is block for a waiter that consumes nothing (ready non-nil:
// see waiter).
func blockWith(c *Ctx, keys [][]byte, timeoutMS int64, ready func(k dbKey, it dynastore.Item, nowMS int64) bool, attempt func(quiet bool) (bool, error)) (bool, error) {
	done, err := attempt(false)
	if err != nil || done || c.InTx {
		return done, err
	}
	// Parked before it queues: the write of the replies before it may
	// wait for the client, and must not hold up the queue meanwhile.
	c.Park()
	r := c.Srv.listRT()
	w := &waiter{ch: make(chan struct{}, 1), ready: ready}
	seen := map[dbKey]bool{}
	for _, k := range keys {
		ck := dbKey{c.DB(), string(k)}
		if !seen[ck] {
			seen[ck] = true
			w.keys = append(w.keys, ck)
		}
	}
	r.register(w)
	defer r.unregister(w)
	var expired <-chan time.Time
	if timeoutMS > 0 {
		t := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-w.ch:
			done, err := attempt(true)
			if err != nil || done {
				return done, err
			}
		case <-expired:
			return false, nil
		case <-c.Done():
			return false, nil
		}
	}
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
	c.W.Bulk(moved)
}
