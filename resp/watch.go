package resp

import (
	"context"
	"errors"
	"os"
	"time"
)

// A command that waits (a blocked BLPOP, XREAD BLOCK, LOCK.ACQUIRE ...
// WAIT) parks: it calls commands.Ctx.Park just before it first waits. As
// Redis does with a client it blocks, the connection then sends the
// replies of the requests before it, and goes on reading the client while
// the command waits without running what it reads: those requests run
// once the command is over, and an end of stream, a reset or a kill is
// seen at once, wherever it comes in the stream. A client that goes away
// meanwhile has its command cancelled (it consumes nothing from then on)
// and nothing more of it runs or is answered, as Redis frees such a
// client with its pending requests.

// aLongTimeAgo is a read deadline in the past: it ends a read at once.
var aLongTimeAgo = time.Unix(1, 0)

// park is a blocking command's commands.Ctx.OnPark, on the connection's
// goroutine. Only its first call in a command does anything.
func (c *conn) park() {
	if c.watching != nil || c.gone || c.cancel == nil {
		return
	}
	c.push.wmu.Lock()
	err := c.sendBefore()
	c.push.wmu.Unlock()
	if err != nil {
		c.gone = true
		c.cancel()
		return
	}
	// Messages published while the command waits go out as they come
	// (RESP3 allows a blocking command to a subscribed client).
	c.setBusy(false)
	// A connection whose reads cannot be ended by a deadline could not
	// be read again once the command is over: it is not watched.
	if c.nc.SetReadDeadline(time.Time{}) != nil {
		return
	}
	c.watching = make(chan struct{})
	go c.watch(c.cancel, c.watching)
}

// sendBefore writes the replies completed before the running command's,
// keeping whatever of its own is buffered. A writer left with nothing
// buffered lends its buffer back for the wait.
func (c *conn) sendBefore() error {
	w := c.w
	err := c.send(w.buf[:w.start])
	if w.start == len(w.buf) {
		putBuf(w.take())
	} else {
		n := copy(w.buf, w.buf[w.start:])
		w.buf, w.start = w.buf[:n], 0
	}
	return err
}

// watch reads the client while the command waits, until unpark ends the
// read with a deadline or the client is gone: then it cancels the command.
// The bytes go after those buffered, never over the waiting command's
// arguments, which are slices of the buffer.
func (c *conn) watch(cancel context.CancelFunc, done chan<- struct{}) {
	defer close(done)
	limit := c.s.srv.ClientQueryBufferLimit()
	for {
		if len(c.buf) == cap(c.buf) {
			c.grow()
		}
		n, err := c.nc.Read(c.buf[len(c.buf):cap(c.buf)])
		c.received(n)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			// unpark, or a Shutdown, which ends the wait itself.
			return
		case err != nil:
		case int64(len(c.buf)-c.pos) > limit:
			c.s.logf("resp: closing client %d (%s): what it sent while a command waited passed client-query-buffer-limit (%d bytes)", c.cn.ID, c.cn.Addr, limit)
		default:
			continue
		}
		c.gone = true
		cancel()
		return
	}
}

// grow makes room for more bytes while a command waits: the bytes not yet
// run move to a buffer twice their size. The old one holds the waiting
// command's arguments, so it goes to the GC rather than back to the pool.
func (c *conn) grow() {
	kept := c.buf[c.pos:]
	nb := make([]byte, len(kept), max(2*len(kept), readSize))
	copy(nb, kept)
	c.buf, c.pos = nb, 0
}

// unpark ends a blocking command's context once it has returned, and
// stops the reader that ran while it waited, if it parked: the buffer,
// with what the reader added, is the connection's again.
func (c *conn) unpark() {
	c.cancel()
	c.cancel = nil
	c.takeParkedPushes(c.w.start)
	c.setBusy(true)
	if c.watching == nil {
		return
	}
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
	<-c.watching
	c.watching = nil
	_ = c.nc.SetReadDeadline(time.Time{})
}
