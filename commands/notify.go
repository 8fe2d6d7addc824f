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
// the key waits in Ctx.emptied, and its "del" follows the command's own
// event for that key).
//
// redamo's own families (LOCK.*, LEADER.*, QUEUE.*, CL.THROTTLE) raise no
// keyspace event: their objects are not Redis keys.

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
}

// Notify reports that the command changed key (class and event as Redis's
// notifyKeyspaceEvent calls name them), in the connection's database. It
// costs one atomic load while nobody listens.
func (c *Ctx) Notify(class events.Class, event string, key []byte) {
	d := c.Srv.KeyEvents()
	if !d.Wanted(class) {
		return
	}
	c.emit(d, class, event, key)
	if len(c.emptied) > 0 {
		c.notifyEmptied(d, event, key)
	}
}

// emit reports one event, or holds it for the unit of work c runs in.
func (c *Ctx) emit(d *events.Dispatcher, class events.Class, event string, key []byte) {
	e := events.Event{DB: c.DB(), Class: class, Name: event, Key: append([]byte(nil), key...)}
	if c.Conn != nil {
		e.Origin = c.Conn
	}
	if c.events != nil {
		c.events.evs = append(c.events.evs, e)
		return
	}
	d.Emit(e)
}

// notifyEmptied follows the command's event for key with the "del" of a
// collection its write left empty (none after a "del" itself).
func (c *Ctx) notifyEmptied(d *events.Dispatcher, event string, key []byte) {
	for i, k := range c.emptied {
		if !bytes.Equal(k, key) {
			continue
		}
		c.emptied = append(c.emptied[:i], c.emptied[i+1:]...)
		if event != "del" && d.Wanted(events.Generic) {
			c.emit(d, events.Generic, "del", key)
		}
		return
	}
}

// NotifyKeyMiss reports a read that found no key (Redis's lookupKeyRead
// misses: class m, "keymiss").
func (c *Ctx) NotifyKeyMiss(key []byte) { c.Notify(events.KeyMiss, "keymiss", key) }

// KeyCreated implements model.KeyReporter: the "new" event.
func (c *Ctx) KeyCreated(key []byte) { c.Notify(events.New, "new", key) }

// WantsCreated implements model.KeyReporter.
func (c *Ctx) WantsCreated() bool { return c.wantsEvent(events.New) }

// KeyEmptied implements model.KeyReporter: the key's "del" follows the
// command's own event for it.
func (c *Ctx) KeyEmptied(key []byte) {
	if c.Srv.KeyEvents().Wanted(events.Generic) {
		c.emptied = append(c.emptied, append([]byte(nil), key...))
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
	reset = func() { buf.evs = buf.evs[:0] }
	done = func(committed bool) {
		c.events = nil
		if !committed {
			return
		}
		d := c.Srv.KeyEvents()
		for _, e := range buf.evs {
			d.Emit(e)
		}
	}
	return reset, done
}
