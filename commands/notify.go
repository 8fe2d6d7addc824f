package commands

import (
	"bytes"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/pubsub"
)

// Keyspace events (Redis's notify.c): a write command reports each change
// it made with Notify, once the change has taken effect, under Redis's
// event name and class. The server's events.Dispatcher publishes it as a
// keyspace notification (when notify-keyspace-events selects it) and hands
// it to the consumers of every write, on every instance.
//
// Two events come from the model rather than the handler, because only it
// knows: "new" (class n), as its write creates a key (model.KeyReporter's
// KeyCreated, before the command's own event, as Redis's dbAdd raises it),
// and the "del" of a collection a pop or a removal left empty (KeyEmptied:
// the key waits in Ctx.notes, and its "del" follows the command's own
// event for that key).
//
// redamo's own families raise no keyspace event: LOCK.*, LEADER.* and
// QUEUE.* keep no Redis key, and CL.THROTTLE's key is written without one,
// as redis-cell writes it.

// notifications is the dispatcher's Publisher: the pub/sub hub, told
// which connection raised an event, so that a client subscribed on it
// gets the notification before the reply of the command that raised it.
type notifications struct{ hub *pubsub.Hub }

func (n notifications) DeliverLocal(channel, payload []byte) { n.hub.DeliverLocal(channel, payload) }

func (n notifications) DeliverFrom(origin any, channel, payload []byte) {
	if cn, ok := origin.(*Conn); ok && cn.Sub != nil {
		n.hub.DeliverLocalFrom(cn.Sub, channel, payload)
		return
	}
	n.hub.DeliverLocal(channel, payload)
}

// eventBuf holds the events of a unit of work (EXEC, a script) until it
// commits: an attempt that loses a race and runs again reports its events
// again, and only the committed attempt's may reach anyone.
type eventBuf struct {
	evs []events.Event
	// at, set by EXEC, is how many values its commands' replies hold so
	// far; pos holds it for each event, so that EXEC puts each event among
	// the replies where Redis, which runs the commands as it replies,
	// sends it. sent counts the events reported so far.
	at   func() int
	pos  []int
	sent int
	// monitor and slow hold the MONITOR lines and the SLOWLOG entries of
	// the unit's commands (monitor.go, slowlog.go).
	monitor []string
	slow    []slowlogEntry
}

// reportBefore reports the held events raised before EXEC's replies'
// i-th value.
func (b *eventBuf) reportBefore(d *events.Dispatcher, i int) {
	for ; b.sent < len(b.evs) && b.pos[b.sent] <= i; b.sent++ {
		d.Emit(b.evs[b.sent])
	}
}

// Notify reports that the command changed key (class and event as Redis's
// notifyKeyspaceEvent calls name them), in the connection's database. It
// costs one atomic load while nobody listens.
func (c *Ctx) Notify(class events.Class, event string, key []byte) {
	// A held "new" and an emptied key's "del" go out whether or not the
	// command's own event does (notify-keyspace-events "En", "Eg").
	if len(c.notes.created) > 0 && c.notes.take(&c.notes.created, key) {
		c.Notify(events.New, "new", key)
	}
	d := c.Srv.KeyEvents()
	if d.Wanted(class) {
		c.emit(d, c.DB(), class, event, key)
	}
	if len(c.notes.emptied) > 0 && c.notes.take(&c.notes.emptied, key) && event != "del" && d.Wanted(events.Generic) {
		c.emit(d, c.DB(), events.Generic, "del", key)
	}
}

// notifyHoldingDel is Notify leaving the "del" of a collection the
// command emptied for notifyEmptied, for a command that replies between
// the two (SPOP).
func (c *Ctx) notifyHoldingDel(class events.Class, event string, key []byte) {
	emptied := c.notes.emptied
	c.notes.emptied = nil
	c.Notify(class, event, key)
	c.notes.emptied = emptied
}

// notifyEmptied reports the "del" of key if the command left it empty
// (and deleted it): after notifyHoldingDel, or for a STORE command whose
// result is empty.
func (c *Ctx) notifyEmptied(key []byte) {
	if len(c.notes.emptied) > 0 && c.notes.take(&c.notes.emptied, key) {
		c.Notify(events.Generic, "del", key)
	}
}

// notifyIn is Notify of a change to key in database db (MOVE's and COPY's
// target), which holds nothing the model told of the key.
func (c *Ctx) notifyIn(db int, class events.Class, event string, key []byte) {
	if d := c.Srv.KeyEvents(); d.Wanted(class) {
		c.emit(d, db, class, event, key)
	}
}

// emit reports one event, or holds it for the unit of work c runs in.
func (c *Ctx) emit(d *events.Dispatcher, db int, class events.Class, event string, key []byte) {
	e := events.Event{DB: db, Class: class, Name: event, Key: append([]byte(nil), key...)}
	if c.Conn != nil {
		e.Origin = c.Conn
	}
	if b := c.events; b != nil {
		b.evs = append(b.evs, e)
		if b.at != nil {
			b.pos = append(b.pos, b.at())
		}
		return
	}
	d.Emit(e)
}

// keyNotes are the keys the model reported created or emptied during a
// command, whose events wait for the command's own event for that key:
// the "del" of an emptied collection follows it; a "new" precedes it when
// holdNew (SMOVE, whose destination Redis creates after it reported the
// source's change), else goes out at once, as Redis's dbAdd raises it.
type keyNotes struct {
	emptied, created [][]byte
	holdNew          bool
}

func (n *keyNotes) clear() {
	n.emptied, n.created, n.holdNew = n.emptied[:0], n.created[:0], false
}

// take removes key from *keys, reporting whether it was there.
func (n *keyNotes) take(keys *[][]byte, key []byte) bool {
	for i, k := range *keys {
		if bytes.Equal(k, key) {
			*keys = append((*keys)[:i], (*keys)[i+1:]...)
			return true
		}
	}
	return false
}

// NotifyKeyMiss reports a read that found no key (Redis's lookupKeyRead
// misses: class m, "keymiss"). It is no change of the key: a "new" the
// command holds for it waits for the write's own event (SET ... GET).
func (c *Ctx) NotifyKeyMiss(key []byte) { c.notifyIn(c.DB(), events.KeyMiss, "keymiss", key) }

// KeyCreated implements model.KeyReporter: the "new" event.
func (c *Ctx) KeyCreated(key []byte) {
	if c.notes.holdNew {
		if c.wantsEvent(events.New) {
			c.notes.created = append(c.notes.created, append([]byte(nil), key...))
		}
		return
	}
	c.Notify(events.New, "new", key)
}

// WantsCreated implements model.KeyReporter.
func (c *Ctx) WantsCreated() bool { return c.wantsEvent(events.New) }

// KeyEmptied implements model.KeyReporter: the key's "del" follows the
// command's own event for it.
func (c *Ctx) KeyEmptied(key []byte) {
	if c.wantsEvent(events.Generic) {
		c.notes.emptied = append(c.notes.emptied, append([]byte(nil), key...))
	}
}

// wantsEvent reports whether an event of class goes anywhere: a handler
// asks before it asks the model for what only that event needs.
func (c *Ctx) wantsEvent(class events.Class) bool {
	return c.Srv.KeyEvents().Wanted(class)
}

// HoldEvents makes the events of the unit of work c runs (EXEC, a script)
// wait for its outcome: reset forgets an attempt's events when it runs
// again, done reports them if the unit committed and stops holding. Inside
// an enclosing unit both do nothing: the enclosing unit's outcome decides.
func (c *Ctx) HoldEvents() (reset func(), done func(committed bool)) {
	if c.events != nil {
		return func() {}, func(bool) {}
	}
	buf := &eventBuf{}
	c.events = buf
	reset = func() {
		buf.evs, buf.pos, buf.sent = buf.evs[:0], buf.pos[:0], 0
		buf.monitor, buf.slow = buf.monitor[:0], buf.slow[:0]
	}
	done = func(committed bool) {
		c.events = nil
		if !committed {
			return
		}
		for _, line := range buf.monitor {
			c.Srv.monitors.send(line)
		}
		for _, e := range buf.slow {
			c.Srv.slowlog.push(e)
		}
		d := c.Srv.KeyEvents()
		for _, e := range buf.evs[buf.sent:] {
			d.Emit(e)
		}
	}
	return reset, done
}
