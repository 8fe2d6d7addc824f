package resp

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/pubsub"
)

// Pub/sub messages reach a connection from other goroutines (a publisher's,
// the bus's) at any time. The connection's own goroutine owns its replies;
// a message that arrives while it runs requests (busy) waits in pending and
// goes out after the reply being written, as Redis appends it to the
// client's output buffer. A message that arrives while the connection is
// idle (reading, or parked in a blocking command) is written at once by a
// short-lived writer goroutine, so a subscriber gets its messages without
// sending anything. wmu keeps one writer on the socket at a time, and the
// connection's goroutine turns idle only with wmu held, after taking what
// was pending: a reply never follows a message published after it was
// made, nor precedes one published before.

type pushState struct {
	wmu sync.Mutex // held while writing to the socket

	mu      sync.Mutex
	busy    bool // the connection's goroutine is running requests
	writing bool // a writer goroutine is running
	closed  bool
	pending []byte
	// softSince is when pending passed the soft limit (zero: below it).
	softSince time.Time
}

// Push implements pubsub.Subscriber.
func (c *conn) Push(ctx context.Context, kind pubsub.Kind, pattern, channel, payload []byte) {
	if pubsub.Publisher(ctx) == pubsub.Subscriber(c) {
		// The connection publishes to itself, on its own goroutine: the
		// message goes before PUBLISH's reply, as in Redis.
		if c.w.buf == nil {
			c.w.buf = getBuf()
		}
		c.w.buf = appendPush(c.w.buf, c.cn.Proto, kind, pattern, channel, payload)
		return
	}
	_, proto := c.cn.Published()
	ps := &c.push
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return
	}
	ps.pending = appendPush(ps.pending, proto, kind, pattern, channel, payload)
	if c.overLimit(len(ps.pending), c.s.srv.PubSubOutputLimit()) {
		ps.closed = true
		ps.pending = nil
		c.s.srv.Net.OutputLimitDisconnections.Add(1)
		c.s.logf("resp: client %d (%s) closed for overcoming of output buffer limits (pubsub)", c.cn.ID, c.cn.Addr)
		c.kill()
		return
	}
	if !ps.busy && !ps.writing {
		ps.writing = true
		go c.writePushes()
	}
}

// overLimit applies client-output-buffer-limit pubsub (lim) to n pending
// bytes: closed at once past the hard limit, or past the soft one for
// longer than its time; a limit of 0 bytes is none.
func (c *conn) overLimit(n int, lim commands.OutputLimit) bool {
	ps := &c.push
	switch {
	case lim.Hard > 0 && uint64(n) > lim.Hard:
		return true
	case lim.Soft == 0 || uint64(n) <= lim.Soft:
		ps.softSince = time.Time{}
		return false
	case ps.softSince.IsZero():
		ps.softSince = time.Now()
		return false
	}
	return time.Since(ps.softSince) > lim.SoftFor
}

// writePushes writes what is pending while the connection is idle.
func (c *conn) writePushes() {
	ps := &c.push
	for {
		ps.wmu.Lock()
		ps.mu.Lock()
		if ps.busy || ps.closed || len(ps.pending) == 0 {
			ps.writing = false
			ps.mu.Unlock()
			ps.wmu.Unlock()
			return
		}
		out := ps.pending
		ps.pending = nil
		ps.softSince = time.Time{}
		ps.mu.Unlock()
		n, err := c.nc.Write(out)
		if n > 0 {
			c.s.srv.Net.AddOut(n)
		}
		ps.wmu.Unlock()
		if err != nil {
			ps.mu.Lock()
			ps.writing, ps.closed = false, true
			ps.mu.Unlock()
			c.kill()
			return
		}
	}
}

// takePushes moves the pending messages after the buffered replies (on
// the connection's goroutine).
func (c *conn) takePushes() {
	ps := &c.push
	ps.mu.Lock()
	if len(ps.pending) > 0 {
		if c.w.buf == nil {
			c.w.buf = getBuf()
		}
		c.w.buf = append(c.w.buf, ps.pending...)
		ps.pending = ps.pending[:0]
		ps.softSince = time.Time{}
	}
	ps.mu.Unlock()
}

// takeParkedPushes puts the messages still pending from the wait of a
// blocking command (the connection idle) before that command's reply,
// which starts at at: they came while it waited, before it was served (a
// blocked pop's own events follow the push that fed it, as in Redis),
// and only a writer not yet scheduled kept them from going out already.
func (c *conn) takeParkedPushes(at int) {
	ps := &c.push
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.busy || len(ps.pending) == 0 {
		return
	}
	c.w.buf = slices.Insert(c.w.buf, at, ps.pending...)
	ps.pending = ps.pending[:0]
	ps.softSince = time.Time{}
}

// setBusy marks the connection as running requests (busy) or idle; idle,
// a writer takes over whatever arrives.
func (c *conn) setBusy(busy bool) {
	ps := &c.push
	ps.mu.Lock()
	ps.busy = busy
	if !busy && len(ps.pending) > 0 && !ps.writing && !ps.closed {
		ps.writing = true
		go c.writePushes()
	}
	ps.mu.Unlock()
}

// closePushes stops deliveries to a connection that ends.
func (c *conn) closePushes() {
	c.push.mu.Lock()
	c.push.closed, c.push.pending = true, nil
	c.push.mu.Unlock()
}

var pushKinds = [...]string{pubsub.Channel: "message", pubsub.Pattern: "pmessage", pubsub.Shard: "smessage"}

// appendPush encodes one message after b as Redis sends it: a push
// (RESP3) or an array (RESP2) of kind, [pattern,] channel, payload.
func appendPush(b []byte, proto int, kind pubsub.Kind, pattern, channel, payload []byte) []byte {
	w := Writer{proto: proto, buf: b}
	if kind == pubsub.Pattern {
		w.Push(4)
		w.BulkString(pushKinds[kind])
		w.Bulk(pattern)
	} else {
		w.Push(3)
		w.BulkString(pushKinds[kind])
	}
	w.Bulk(channel)
	w.Bulk(payload)
	return w.buf
}
