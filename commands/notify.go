package commands

import (
	"github.com/redamo/redamo/events"
)

// Keyspace events (Redis's notify.c): a write command reports each change
// it made with Notify, once the change has taken effect, under Redis's
// event name and class. The server's events.Dispatcher publishes it as a
// keyspace notification (when notify-keyspace-events selects it) and hands
// it to the consumers of every write, on every instance.

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
