package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Client side caching (Redis's tracking.c): CLIENT TRACKING, CACHING,
// GETREDIR and TRACKINGINFO, and the invalidation messages.
//
// The table of which client read which key, and of which client watches
// which prefix (BCAST), is per instance, as a client's connection is; the
// changes it invalidates on are those of every instance: the table is an
// events.Consumer, registered with the dispatcher while a client of this
// instance tracks, and the dispatcher's peers bring it the writes made
// through the other instances.
//
// Redis remembers a read's keys after the command ran; redamo before it
// runs. In Redis nothing can change a key between the two; here a write
// through any instance may, and its event could then reach the table
// before the read's keys: the client would cache a value nobody
// invalidates. Remembered first, a write the read saw may at worst
// invalidate once more than needed.

const (
	msgTrackingRedirectTwice = "ERR A client can only redirect to a single other client"
	msgTrackingNoRedirect    = "ERR The client ID you want redirect to does not exist"
	msgTrackingPrefixBcast   = "ERR PREFIX option requires BCAST mode to be enabled"
	msgTrackingBcastSwitch   = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	msgTrackingOptBcast      = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	msgTrackingOptBoth       = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	msgTrackingOptSwitch     = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	msgTrackingPrefixOld     = "ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap."
	msgTrackingPrefixNew     = "ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap."
	msgCachingNotTracking    = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	msgCachingYes            = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	msgCachingNo             = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	// msgTrackingNoPush: a connection that cannot be pushed to (the
	// shell's, one per command) would track for nobody.
	msgTrackingNoPush = "ERR CLIENT TRACKING isn't allowed for a connection that cannot receive pushes"
)

// trackingChannel is where a RESP2 client redirected to gets the
// invalidations, as pub/sub messages.
const trackingChannel = "__redis__:invalidate"

// defaultTrackingMaxKeys is Redis's tracking-table-max-keys.
const defaultTrackingMaxKeys = 1000000

// trackingState is a connection's tracking mode. A new one replaces it on
// every CLIENT TRACKING ON: other connections read it (CLIENT LIST, the
// table's deliveries) without a lock.
type trackingState struct {
	redirect                     int64
	bcast, optin, optout, noloop bool
	// prefixes are the BCAST prefixes, sorted ("" for every key).
	prefixes []string
	// broken is set once an invalidation found the redirect client gone
	// (flag R).
	broken atomic.Bool

	// Owner-only: caching is CLIENT CACHING's for the next command (Redis's
	// CLIENT_TRACKING_CACHING); outer is the command a script's commands
	// run under, whose keys a script's read remembers, as in Redis.
	caching bool
	outer   *Command
	outArgs [][]byte
}

// tracker is the server's tracking table.
type tracker struct {
	// clients counts the tracking connections (INFO tracking_clients)
	// and pendingConns the connections with keys in pending: Server.Run
	// reads both around every command, and does nothing more while they
	// are 0.
	clients      atomic.Int64
	pendingConns atomic.Int64
	// prefixed counts the BCAST prefixes (INFO tracking_total_prefixes).
	prefixed atomic.Int64
	// maxKeys is CONFIG SET tracking-table-max-keys's (nil until set).
	maxKeys atomic.Pointer[int64]
	// srv is the Server the table is part of, set as a client first
	// tracks.
	srv atomic.Pointer[Server]

	mu    sync.Mutex
	conns map[int64]*Conn
	// keys holds, for each key read in the default mode, the ids of the
	// connections that read it since it last changed; items counts them
	// all.
	keys  map[string]map[int64]struct{}
	items int
	// prefixes holds each BCAST prefix's connections.
	prefixes map[string]map[int64]*Conn
	// pending holds the keys a running command changed, by the connection
	// running it, until the command ends: a BCAST client gets them in one
	// message, as Redis sends what changed between two event loop turns.
	pending map[*Conn][]string

	regMu  sync.Mutex
	remove func()
}

// trackingMode returns the connection's tracking state, nil when it does not
// track.
func (cn *Conn) trackingMode() *trackingState {
	if cn == nil {
		return nil
	}
	return cn.tracking.Load()
}

// Pusher is implemented by a connection's resp side that takes pushes
// other than pub/sub messages: write appends them, under the connection's
// protocol (Writer.Proto), after its replies; it must not block, nor take
// the pub/sub hub's lock.
type Pusher interface {
	PushReply(write func(w Writer))
}

// clientByID finds a connection of this instance by id.
func (s *Server) clientByID(id int64) *Conn {
	if s.Clients == nil {
		return nil
	}
	if l, ok := s.Clients.(interface{ Lookup(id int64) *Conn }); ok {
		return l.Lookup(id)
	}
	for _, cn := range s.Clients.List() {
		if cn.ID == id {
			return cn
		}
	}
	return nil
}

// ---- CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO ------------------------

func cmdClientTracking(c *Ctx) {
	var (
		redir    int64
		next     trackingState
		prefixes []string
	)
	args := c.Args
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch opt := args[j]; {
		case argIs(opt, "redirect") && more:
			j++
			if redir != 0 {
				c.W.Error(msgTrackingRedirectTwice)
				return
			}
			n, ok := model.String2ll(args[j])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			if c.Srv.clientByID(n) == nil {
				c.W.Error(msgTrackingNoRedirect)
				return
			}
			redir = n
		case argIs(opt, "bcast"):
			next.bcast = true
		case argIs(opt, "optin"):
			next.optin = true
		case argIs(opt, "optout"):
			next.optout = true
		case argIs(opt, "noloop"):
			next.noloop = true
		case argIs(opt, "prefix") && more:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	switch {
	case argIs(args[2], "on"):
	case argIs(args[2], "off"):
		c.Srv.untrack(c.Conn)
		c.W.Simple("OK")
		return
	default:
		c.W.Error(MsgSyntax)
		return
	}
	old := c.Conn.trackingMode()
	switch {
	case !next.bcast && len(prefixes) > 0:
		c.W.Error(msgTrackingPrefixBcast)
		return
	case old != nil && old.bcast != next.bcast:
		c.W.Error(msgTrackingBcastSwitch)
		return
	case next.bcast && (next.optin || next.optout):
		c.W.Error(msgTrackingOptBcast)
		return
	case next.optin && next.optout:
		c.W.Error(msgTrackingOptBoth)
		return
	case old != nil && (next.optin && old.optout || next.optout && old.optin):
		c.W.Error(msgTrackingOptSwitch)
		return
	}
	if next.bcast {
		var have []string
		if old != nil {
			have = old.prefixes
		}
		if msg := prefixCollision(have, prefixes); msg != "" {
			c.W.Error(msg)
			return
		}
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		next.prefixes = mergePrefixes(have, prefixes)
	}
	if c.Conn.Sub == nil {
		c.W.Error(msgTrackingNoPush)
		return
	}
	next.redirect = redir
	if old != nil {
		next.caching = old.caching
	}
	c.Srv.track(c, &next)
	c.W.Simple("OK")
}

// prefixCollision is Redis's checkPrefixCollisionsOrReply: the error for
// the first new prefix that overlaps one the client has or another new
// one (one is a prefix of the other), "" when none does. (Redis 7.0
// replies both the error and OK when the overlap is between two new
// prefixes past the first: one reply here.)
func prefixCollision(have, prefixes []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range prefixes {
		for _, h := range have {
			if overlap(h, p) {
				return fmt.Sprintf(msgTrackingPrefixOld, cString([]byte(p)), cString([]byte(h)))
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return fmt.Sprintf(msgTrackingPrefixNew, cString([]byte(p)), cString([]byte(q)))
			}
		}
	}
	return ""
}

// mergePrefixes returns the union of have and more, sorted.
func mergePrefixes(have, more []string) []string {
	out := append(slices.Clone(have), more...)
	sort.Strings(out)
	return slices.Compact(out)
}

func cmdClientCaching(c *Ctx) {
	st := c.Conn.trackingMode()
	if st == nil {
		c.W.Error(msgCachingNotTracking)
		return
	}
	switch {
	case argIs(c.Args[2], "yes"):
		if !st.optin {
			c.W.Error(msgCachingYes)
			return
		}
	case argIs(c.Args[2], "no"):
		if !st.optout {
			c.W.Error(msgCachingNo)
			return
		}
	default:
		c.W.Error(MsgSyntax)
		return
	}
	st.caching = true
	c.W.Simple("OK")
}

func cmdClientGetredir(c *Ctx) {
	if st := c.Conn.trackingMode(); st != nil {
		c.W.Int(st.redirect)
		return
	}
	c.W.Int(-1)
}

func cmdClientTrackinginfo(c *Ctx) {
	st := c.Conn.trackingMode()
	flags := []string{"off"}
	redirect := int64(-1)
	var prefixes []string
	if st != nil {
		flags[0], redirect, prefixes = "on", st.redirect, st.prefixes
		if st.bcast {
			flags = append(flags, "bcast")
		}
		if st.optin {
			flags = append(flags, "optin")
			if st.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if st.optout {
			flags = append(flags, "optout")
			if st.caching {
				flags = append(flags, "caching-no")
			}
		}
		if st.noloop {
			flags = append(flags, "noloop")
		}
		if st.broken.Load() {
			flags = append(flags, "broken_redirect")
		}
	}
	c.W.Map(3)
	c.W.BulkString("flags")
	c.W.Set(len(flags))
	for _, f := range flags {
		c.W.BulkString(f)
	}
	c.W.BulkString("redirect")
	c.W.Int(redirect)
	c.W.BulkString("prefixes")
	c.W.Array(len(prefixes))
	for _, p := range prefixes {
		c.W.BulkString(p)
	}
}

// trackingFlags are CLIENT LIST's flags of a tracking connection, and its
// redir field.
func trackingFlags(cn *Conn) (flags string, redir int64) {
	st := cn.trackingMode()
	if st == nil {
		return "", -1
	}
	flags = "t"
	if st.broken.Load() {
		flags += "R"
	}
	if st.bcast {
		flags += "B"
	}
	return flags, st.redirect
}

// ---- the table ------------------------------------------------------------------

// track makes st the connection's tracking mode (CLIENT TRACKING ON).
func (s *Server) track(c *Ctx, st *trackingState) {
	t := &s.tracker
	cn := c.Conn
	t.srv.Store(s)
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[int64]*Conn{}
		t.keys = map[string]map[int64]struct{}{}
		t.prefixes = map[string]map[int64]*Conn{}
		t.pending = map[*Conn][]string{}
	}
	if cn.tracking.Swap(st) == nil {
		t.conns[cn.ID] = cn
		t.clients.Add(1)
	}
	for _, p := range st.prefixes {
		subs := t.prefixes[p]
		if subs == nil {
			subs = map[int64]*Conn{}
			t.prefixes[p] = subs
			t.prefixed.Add(1)
		}
		subs[cn.ID] = cn
	}
	t.mu.Unlock()
	t.register(c, s.KeyEvents())
}

// register plugs the table into the key events while a client tracks; it
// returns once the other instances acknowledged, so that none of their
// writes acknowledged after CLIENT TRACKING's reply goes unreported.
func (t *tracker) register(ctx context.Context, d *events.Dispatcher) {
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.remove != nil {
		return
	}
	// A peer that did not acknowledge misses writes until it hears of the
	// interest: best effort, as delivery between instances is.
	t.remove, _ = d.AddConsumer(ctx, t)
}

// untrack turns the connection's tracking off (CLIENT TRACKING OFF, RESET,
// a connection that ends). Like Redis, its keys stay in the table until
// they change, while other clients track. Once none does, the table
// forgets every key and leaves the key events, so that the other instances
// stop sending this one their writes (Redis keeps such keys until they
// change or a flush: INFO's tracking_total_keys then reads 0 here).
func (s *Server) untrack(cn *Conn) {
	t := &s.tracker
	if cn == nil || cn.tracking.Load() == nil {
		return
	}
	t.mu.Lock()
	st := cn.tracking.Swap(nil)
	if st != nil {
		delete(t.conns, cn.ID)
		t.clients.Add(-1)
		for _, p := range st.prefixes {
			subs := t.prefixes[p]
			delete(subs, cn.ID)
			if len(subs) == 0 {
				delete(t.prefixes, p)
				t.prefixed.Add(-1)
			}
		}
	}
	idle := t.clients.Load() == 0
	if idle {
		clear(t.keys)
		t.items = 0
	}
	t.mu.Unlock()
	if !idle {
		return
	}
	t.regMu.Lock()
	defer t.regMu.Unlock()
	if t.remove != nil && t.clients.Load() == 0 {
		t.remove()
		t.remove = nil
	}
}

// trackBefore runs before every command (Server.Run): a read-only
// command's keys are remembered for its tracking connection, as Redis's
// trackingRememberKeys does after it. Reads in a script remember the keys
// the script declared.
func (s *Server) trackBefore(c *Ctx, cmd *Command) {
	if s.tracker.clients.Load() == 0 {
		return
	}
	st := c.Conn.trackingMode()
	if st == nil {
		return
	}
	if !c.InScript {
		st.outer, st.outArgs = cmd, c.Args
	}
	if st.bcast || !cmd.HasFlag(FlagReadonly) || cmd.HasFlag("pubsub") {
		return
	}
	if (st.optin && !st.caching) || (st.optout && st.caching) {
		return
	}
	args := c.Args
	if c.InScript {
		cmd, args = st.outer, st.outArgs
	} else {
		switch cmd.Name {
		case "eval_ro", "evalsha_ro", "fcall_ro":
			return
		}
	}
	if cmd == nil {
		return
	}
	keys, _ := cmd.keysOf(args)
	if len(keys) == 0 {
		return
	}
	s.tracker.remember(s, c.Conn.ID, args, keys)
}

// trackAfter runs after every command: at the end of a client's command
// (not one EXEC or a script runs), CLIENT CACHING's choice lapses unless
// the command was a CLIENT one or a MULTI began, and the BCAST clients
// get what the command changed (also when the first of them began to
// track while it ran).
func (s *Server) trackAfter(c *Ctx, cmd *Command) {
	if c.InTx || c.InScript {
		return
	}
	if st := c.Conn.trackingMode(); st != nil && st.caching &&
		!c.Conn.tx.multi && !strings.HasPrefix(cmd.Name, "client|") {
		st.caching = false
	}
	if s.tracker.pendingConns.Load() > 0 {
		s.tracker.flushPending(s, c.Conn)
	}
}

func (t *tracker) remember(s *Server, id int64, args [][]byte, keys []keyRef) {
	t.mu.Lock()
	for _, k := range keys {
		ids := t.keys[string(args[k.pos])]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(args[k.pos])] = ids
		}
		if _, ok := ids[id]; !ok {
			ids[id] = struct{}{}
			t.items++
		}
	}
	evicted := t.overLimit()
	t.mu.Unlock()
	for _, key := range evicted {
		t.invalidate(s, key, nil, false)
	}
}

// overLimit takes keys out of the table past tracking-table-max-keys
// (Redis's trackingLimitUsedSlots, which picks them at random): their
// clients are told as if they changed.
func (t *tracker) overLimit() (evicted []string) {
	max := t.maxKeysValue()
	if max == 0 {
		return nil
	}
	for key := range t.keys {
		if int64(len(t.keys)-len(evicted)) <= max {
			break
		}
		evicted = append(evicted, key)
	}
	return evicted
}

func (t *tracker) maxKeysValue() int64 {
	if p := t.maxKeys.Load(); p != nil {
		return *p
	}
	return defaultTrackingMaxKeys
}

// KeyEvent implements events.Consumer: a key changed through some
// instance. A flush (the only event of no class: notifyFlush) invalidates
// every key.
func (t *tracker) KeyEvent(e events.Event) {
	s := t.srv.Load()
	if s == nil {
		return
	}
	if e.Class == 0 {
		t.flushAll(s)
		return
	}
	t.invalidate(s, string(e.Key), e.Origin, true)
}

// invalidate tells the clients that read key that it changed, once:
// the key leaves the table. origin is the connection that changed it
// (NOLOOP), nil for another instance's change or an eviction; bcast adds
// the key to what the BCAST clients get.
func (t *tracker) invalidate(s *Server, key string, origin any, bcast bool) {
	type target struct {
		cn *Conn
		st *trackingState
	}
	var targets []target
	var broadcast map[string]map[int64]*Conn
	t.mu.Lock()
	if ids := t.keys[key]; ids != nil {
		delete(t.keys, key)
		t.items -= len(ids)
		for id := range ids {
			cn := t.conns[id]
			st := cn.trackingMode()
			if st == nil || st.bcast || (st.noloop && origin == any(cn)) {
				continue
			}
			targets = append(targets, target{cn, st})
		}
	}
	if bcast && len(t.prefixes) > 0 {
		if o, ok := origin.(*Conn); ok && o != nil {
			if len(t.pending[o]) == 0 {
				t.pendingConns.Add(1)
			}
			t.pending[o] = append(t.pending[o], key)
		} else {
			broadcast = t.matching([]string{key})
		}
	}
	t.mu.Unlock()
	keys := [][]byte{[]byte(key)}
	for _, tg := range targets {
		s.sendInvalidation(tg.cn, tg.st, keys)
	}
	t.broadcast(s, broadcast, []string{key}, nil)
}

// matching returns, for each prefix some of keys (sorted) have, its
// clients (under mu).
func (t *tracker) matching(keys []string) map[string]map[int64]*Conn {
	out := map[string]map[int64]*Conn{}
	for p, subs := range t.prefixes {
		for _, k := range keys {
			if strings.HasPrefix(k, p) {
				out[p] = maps.Clone(subs)
				break
			}
		}
	}
	return out
}

// flushPending sends the BCAST clients what cn's command changed.
func (t *tracker) flushPending(s *Server, cn *Conn) {
	t.mu.Lock()
	keys := t.pending[cn]
	if len(keys) > 0 {
		delete(t.pending, cn)
		t.pendingConns.Add(-1)
	}
	var subs map[string]map[int64]*Conn
	if len(keys) > 0 {
		sort.Strings(keys)
		keys = slices.Compact(keys)
		subs = t.matching(keys)
	}
	t.mu.Unlock()
	t.broadcast(s, subs, keys, cn)
}

// broadcast sends each prefix's clients the keys (sorted) under it, in
// the prefixes' order, as Redis's trackingBroadcastInvalidationMessages
// does; a NOLOOP client does not get the changes of origin, its own.
func (t *tracker) broadcast(s *Server, subs map[string]map[int64]*Conn, keys []string, origin *Conn) {
	if len(subs) == 0 {
		return
	}
	prefixes := make([]string, 0, len(subs))
	for p := range subs {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		var msg [][]byte
		for _, k := range keys {
			if strings.HasPrefix(k, p) {
				msg = append(msg, []byte(k))
			}
		}
		for _, cn := range subs[p] {
			st := cn.trackingMode()
			if st == nil || !st.bcast || (st.noloop && cn == origin) {
				continue
			}
			s.sendInvalidation(cn, st, msg)
		}
	}
}

// flushAll is FLUSHALL's and FLUSHDB's: every tracking client is told
// that every key changed (a null), and the table forgets every key.
func (t *tracker) flushAll(s *Server) {
	t.mu.Lock()
	t.keys = map[string]map[int64]struct{}{}
	t.items = 0
	conns := make([]*Conn, 0, len(t.conns))
	for _, cn := range t.conns {
		conns = append(conns, cn)
	}
	t.mu.Unlock()
	for _, cn := range conns {
		if st := cn.trackingMode(); st != nil {
			s.sendInvalidation(cn, st, nil)
		}
	}
}

// sendInvalidation is Redis's sendTrackingMessage: keys (nil: every key)
// go to the connection or the one it redirects to, as a RESP3 push, or on
// RESP2 as a message on __redis__:invalidate to a redirect client in
// subscribed mode; anything else cannot carry it. A redirect client that
// is gone makes the connection's redirect broken (told on RESP3).
func (s *Server) sendInvalidation(cn *Conn, st *trackingState, keys [][]byte) {
	target, redirected := cn, false
	if st.redirect != 0 {
		target = s.clientByID(st.redirect)
		if target == nil {
			st.broken.Store(true)
			push(cn, func(w Writer) {
				if w.Proto() < 3 {
					return
				}
				pushHeader(w, 2)
				w.BulkString("tracking-redir-broken")
				w.Int(st.redirect)
			})
			return
		}
		redirected = true
	}
	// Asked here, not while pushing: the hub pushes under its own lock.
	subscribed := false
	if redirected {
		sub, psub, ssub := s.subCounts(target)
		subscribed = sub+psub+ssub > 0
	}
	push(target, func(w Writer) {
		switch {
		case w.Proto() >= 3:
			pushHeader(w, 2)
			w.BulkString("invalidate")
		case subscribed:
			pushHeader(w, 3)
			w.BulkString("message")
			w.BulkString(trackingChannel)
		default:
			return
		}
		if keys == nil {
			w.Nil()
			return
		}
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
	})
}

func push(cn *Conn, write func(w Writer)) {
	if p, ok := cn.Sub.(Pusher); ok {
		p.PushReply(write)
	}
}

// notifyFlush reports a flush to the key events' consumers: Redis raises
// no keyspace event for it, so it has no class (no notification is
// published), but client tracking invalidates every key on it.
func notifyFlush(c *Ctx, name string) {
	c.Notify(0, name, nil)
}

// trackingInfo returns INFO's tracking figures.
func (s *Server) trackingInfo() (clients, keys, items, prefixes int64) {
	t := &s.tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clients.Load(), int64(len(t.keys)), int64(t.items), t.prefixed.Load()
}

// trackingMaxKeysParam is CONFIG's tracking-table-max-keys: applied to
// the following reads (0: no limit).
var trackingMaxKeysParam = configParam{
	name:  "tracking-table-max-keys",
	get:   func(s *Server) string { return strconv.FormatInt(s.tracker.maxKeysValue(), 10) },
	check: checkInt(0, 1<<63-1),
	set: func(s *Server, v string) {
		n, _ := model.String2ll([]byte(v))
		s.tracker.maxKeys.Store(&n)
	},
}
