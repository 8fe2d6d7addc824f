package main

// redamo watch: the key events of the keys that match a pattern, one JSON
// line each, until interrupted.
//
// Through --server it is a keyspace-notification subscriber (PSUBSCRIBE
// __keyspace@<db>__:<pattern>) on a running redamo, whose bus brings it
// the events of writes made through every instance on the table.
// Keyspace notifications are off until notify-keyspace-events enables
// them, as in Redis. watch never changes that setting by itself: without
// it watch refuses, naming the CONFIG SET that enables it, and --enable
// adds K and A to the setting (and says so on stderr). The setting holds
// for everyone subscribed to notifications, so changing it is the user's
// decision.
//
// In-process, the CLI joins the table's bus as an instance of its own and
// consumes every key event (events.Dispatcher.AddConsumer, as client
// tracking does): the instances send key events to an instance that
// declared an interest whatever notify-keyspace-events says, so this mode
// needs no setting. The instances learn of a new member at their next
// heartbeat, so events of the first seconds may be missed.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redamo/redamo/bus"
	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/glob"
)

var watchVerb = verb{name: "watch", group: "watch", args: "PATTERN", minArgs: 1, maxArgs: 1,
	flags: []string{"values", "db", "enable"},
	runs: "with --server, PSUBSCRIBE __keyspace@DB__:PATTERN (CONFIG GET notify-keyspace-events first); " +
		"in-process, joins the table's bus as an instance that wants every key event; " +
		"with --values, TYPE KEY and a read of the value after each event",
	summary: "Print one line per key event (key, event, db) for the keys that match PATTERN (a glob, as KEYS takes), " +
		"from writes made through any instance, until interrupted (Ctrl-C or SIGTERM: exit 0). " +
		"With --server it refuses (exit 2) while the table's notify-keyspace-events lacks K or every event class; " +
		"--enable adds K and A to it. In-process it joins the instances' bus (it listens on a port they dial, " +
		"REDAMO_BUS_SECRET or REDAMO_REQUIREPASS as theirs) and needs no setting; the instances see it within a heartbeat (10s).",
	meanwhile: []string{"set user:1 Ada", "inc user:2 --by 5 --create", "exec GETDEL user:1"},
	example:   "watch user:* --values --enable",
	output: `{"key":"user:1","event":"set","db":0,"value":"Ada"}
{"key":"user:2","event":"incrby","db":0,"value":"5"}
{"key":"user:1","event":"del","db":0,"value":null}`,
	note:  `notify-keyspace-events was "" on redamo at ADDR: set to "AK" (--enable)`,
	value: "key", build: buildWatch}

func init() {
	verbFlags["values"] = flagDef{name: "values", isBool: true,
		usage: "add the key's value, read just after the event (null when the event removed the key; a later write may already show)"}
	verbFlags["db"] = flagDef{name: "db", arg: "N", usage: "the database to watch (default: the one --server names, else 0)"}
	verbFlags["enable"] = flagDef{name: "enable", isBool: true,
		usage: "when notify-keyspace-events lacks K or an event class, add K and A to it (CONFIG SET, said on stderr)"}
}

// removals are the events after which the key is gone: --values prints
// null for them without reading.
var removals = map[string]bool{"del": true, "expired": true, "evicted": true, "rename_from": true, "move_from": true}

func buildWatch(x *invocation) (func() result, error) {
	pattern := x.pos[0]
	c := x.cli
	_, dbGiven := x.flag("db")
	db, err := x.intFlag("db", 0, false)
	if err != nil {
		return nil, err
	}
	if db < 0 {
		return nil, usageErr("--db %d: must not be negative", db)
	}
	values, enable := x.boolFlag("values"), x.boolFlag("enable")
	x.forever, x.untilSignal = true, true
	if values && c.g.server == "" && db != 0 {
		// An in-process command runs in database 0.
		return nil, usageErr("watch --values --db %d: in-process, values are read from database 0 only; use --server redis://HOST:PORT/%d", db, db)
	}
	if enable && c.g.server == "" {
		return nil, usageErr("--enable is for watch --server: in-process, watch needs no notify-keyspace-events")
	}
	return func() result {
		if l, ok := c.be.(*local); ok {
			return x.watchLocal(l, pattern, values, int(db))
		}
		r, ok := c.be.(*remote)
		if !ok {
			return failed(fmt.Errorf("watch: unknown backend %T", c.be))
		}
		if !dbGiven {
			db = int64(r.opts.DB)
		}
		if int(db) != r.opts.DB {
			// The reads of --values go to the watched database.
			r = r.withDB(int(db))
			defer r.Close()
			c.be = r
		}
		if err := x.keyspaceOn(enable); err != nil {
			return failed(err)
		}
		channel := fmt.Sprintf("__keyspace@%d__:", db)
		return x.watch(r, channel, pattern, values, int(db))
	}, nil
}

// keyspaceOn checks that the server publishes keyspace notifications of
// every class, and with enable makes it.
func (x *invocation) keyspaceOn(enable bool) error {
	r, err := x.do("CONFIG", "GET", "notify-keyspace-events")
	if err != nil {
		return err
	}
	v, _ := r.Field("notify-keyspace-events")
	flags, ok := events.ParseFlags(v.Str)
	if !ok {
		return fmt.Errorf("CONFIG GET notify-keyspace-events: unexpected %q", v.Str)
	}
	want := flags | events.Keyspace | events.All
	if flags == want {
		return nil
	}
	if !enable {
		if flags&events.Keyspace != 0 && flags&events.All != 0 {
			// Some classes: watch works, for those.
			if !x.cli.g.quiet {
				fmt.Fprintf(x.cli.errOut, "redamo: notify-keyspace-events is %q on %s: only those classes' events come (--enable adds K and A)\n",
					flags.String(), x.cli.be.Where())
			}
			return nil
		}
		return usageErr("keyspace notifications are off on %s (notify-keyspace-events is %q): enable them for the table with "+
			"`redamo exec CONFIG SET notify-keyspace-events KA` (or add K and A to its flags), or pass --enable to watch, which does that",
			x.cli.be.Where(), flags.String())
	}
	if _, err := x.do("CONFIG", "SET", "notify-keyspace-events", want.String()); err != nil {
		return err
	}
	if !x.cli.g.quiet {
		fmt.Fprintf(x.cli.errOut, "redamo: notify-keyspace-events was %q on %s: set to %q (--enable)\n",
			flags.String(), x.cli.be.Where(), want.String())
	}
	return nil
}

// watch subscribes and prints the events until the context ends (exit 0)
// or the connection is lost (exit 3).
func (x *invocation) watch(r *remote, channel, pattern string, values bool, db int) result {
	ctx := x.ctx
	ps := r.rdb.PSubscribe(ctx, channel+pattern)
	defer ps.Close()
	type msg struct {
		m   *redis.Message // nil: the subscription's confirmation
		err error
	}
	// One goroutine reads the connection (go-redis watches deadlines, not
	// cancellation); closing ps ends it.
	msgs := make(chan msg)
	go func() {
		send := func(v msg) bool {
			select {
			case msgs <- v:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if _, err := ps.Receive(context.Background()); !send(msg{nil, err}) || err != nil {
			return
		}
		for {
			m, err := ps.ReceiveMessage(context.Background())
			if !send(msg{m, err}) || err != nil {
				return
			}
		}
	}()
	for {
		var in msg
		select {
		case <-ctx.Done():
			return result{}
		case in = <-msgs:
		}
		switch {
		case in.err != nil && ctx.Err() != nil:
			return result{}
		case in.err != nil:
			return failed(r.lost(in.err))
		case in.m == nil:
			if x.cli.g.verbose {
				fmt.Fprintf(x.cli.errOut, "redamo: watching %s%s (%s)\n", channel, pattern, r.Where())
			}
			continue
		}
		if err := x.printEvent(strings.TrimPrefix(in.m.Channel, channel), in.m.Payload, db, values); err != nil {
			if ctx.Err() != nil {
				return result{}
			}
			return failed(err)
		}
	}
}

// printEvent prints one event's line, with the key's value for --values.
func (x *invocation) printEvent(key, event string, db int, values bool) error {
	o := object{{"key", key}, {"event", event}, {"db", int64(db)}}
	if values {
		var v any
		if !removals[event] {
			var err error
			if v, err = x.readValue(key); err != nil {
				return err
			}
		}
		o = append(o, field{"value", v})
	}
	if !x.cli.g.quiet {
		x.cli.print(x.verb, o)
	}
	return nil
}

// readValue reads a key's value whatever its type: a string, a list's
// values, a set's members (sorted), a hash's fields (an object), a sorted
// set's members and scores, a stream's entries; null when it is gone.
func (x *invocation) readValue(key string) (any, error) {
	t, err := x.do("TYPE", key)
	if err != nil {
		return nil, err
	}
	var read []string
	switch t.Str {
	case "none":
		return nil, nil
	case "string":
		read = []string{"GET", key}
	case "list":
		read = []string{"LRANGE", key, "0", "-1"}
	case "set":
		read = []string{"SMEMBERS", key}
	case "hash":
		read = []string{"HGETALL", key}
	case "zset":
		read = []string{"ZRANGE", key, "0", "-1", "WITHSCORES"}
	case "stream":
		read = []string{"XRANGE", key, "-", "+"}
	default:
		return nil, fmt.Errorf("key %q has type %q, which watch cannot read", key, t.Str)
	}
	v, err := x.do(read...)
	var re *replyError
	if errors.As(err, &re) && strings.HasPrefix(re.msg, "WRONGTYPE") {
		// Replaced by a key of another type between TYPE and the read.
		return x.readValue(key)
	}
	if err != nil {
		return nil, err
	}
	if t.Str == "set" {
		members := replyStrings(v)
		sort.Strings(members)
		return members, nil
	}
	if v.Kind == commands.ReplyNil {
		return nil, nil
	}
	return replyValue(v), nil
}

// watchBuffer is how many events the in-process watch holds while it
// prints and reads values; past it events are dropped and counted.
const watchBuffer = 4096

// watchConsumer takes the key events of db whose key matches pattern.
type watchConsumer struct {
	db      int
	pattern []byte
	ch      chan events.Event
	dropped atomic.Int64
}

func (w *watchConsumer) KeyEvent(e events.Event) {
	// A flush is an event of no class and no key (client tracking's):
	// Redis publishes no notification for it, so --server never sees one,
	// and neither does this mode.
	if e.Class == 0 || e.DB != w.db || !glob.Match(w.pattern, e.Key) {
		return
	}
	select {
	case w.ch <- e:
	default:
		w.dropped.Add(1)
	}
}

// watchLocal joins the table's bus as an instance that wants every key
// event, and prints those of the matching keys until the context ends.
func (x *invocation) watchLocal(l *local, pattern string, values bool, db int) result {
	ctx := x.ctx
	c := x.cli
	secret := []byte(c.getenv("REDAMO_BUS_SECRET"))
	if len(secret) == 0 {
		secret = bus.SecretFromPassword(c.getenv("REDAMO_REQUIREPASS"))
	}
	d := l.srv.KeyEvents()
	b, err := bus.New(bus.Config{Listen: ":0", Secret: secret, Events: d}, l.store, l.srv.PubSub)
	if err != nil {
		return failed(&cliError{code: exitStore, msg: fmt.Sprintf("watch: joining the instances' bus: %v", err)})
	}
	defer b.Close()
	d.SetPeers(b)
	if err := b.Start(ctx); err != nil {
		return failed(&cliError{code: exitStore, msg: c.storeMessage(fmt.Sprintf("watch: announcing this watcher on the table: %v", err))})
	}
	w := &watchConsumer{db: db, pattern: []byte(pattern), ch: make(chan events.Event, watchBuffer)}
	remove, err := d.AddConsumer(ctx, w)
	defer remove()
	if err != nil && ctx.Err() == nil {
		return failed(&cliError{code: exitStore, msg: fmt.Sprintf("watch: declaring the interest to the instances: %v", err)})
	}
	if c.g.verbose {
		fmt.Fprintf(c.errOut, "redamo: watching %s in db %d as bus member %s at %s (%s)\n", pattern, db, b.ID(), b.Addr(), l.Where())
	}
	reported := int64(0)
	for {
		var e events.Event
		select {
		case <-ctx.Done():
			return result{}
		case e = <-w.ch:
		}
		if n := w.dropped.Load(); n > reported && !c.g.quiet {
			fmt.Fprintf(c.errOut, "redamo: watch fell behind: %d events dropped\n", n-reported)
			reported = n
		}
		if err := x.printEvent(string(e.Key), e.Name, db, values); err != nil {
			if ctx.Err() != nil {
				return result{}
			}
			return failed(err)
		}
	}
}
