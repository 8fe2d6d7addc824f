package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
)

const (
	// readSize is how much one read asks for at least (Redis reads 16 KB).
	readSize = 16 * 1024
	// outMax is how many reply bytes a connection buffers before it writes
	// them, more requests pending or not: a long pipeline is answered in
	// pieces rather than held whole in memory.
	outMax = 64 * 1024
	// rejectTimeout bounds the write of the error that turns a client away
	// (protected mode, maxclients): a TLS client that never completes its
	// handshake cannot hold the connection, or a Shutdown, for longer.
	rejectTimeout = 2 * time.Second
)

// bufPool lends connections their read and output buffers while they have
// bytes in flight, so an idle connection holds none.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, readSize); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) < readSize || cap(b) > outMax {
		// Oversized buffers go back to the GC, and so do small ones (a
		// writer that lent its buffer back while its command waited
		// grows another from nothing): the pool lends readSize or more.
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}

// conn is one client connection. Its own goroutine (serve) reads requests,
// runs them and writes the replies; other goroutines only read cn (CLIENT
// LIST) or kill it.
type conn struct {
	s  *Server
	nc net.Conn
	cn *commands.Conn
	w  *Writer
	p  parser

	buf []byte // the client's bytes; buf[pos:] not yet run (borrowed from bufPool)
	pos int
	// raw reads a plain socket directly, so that the read buffer is
	// borrowed only while bytes are coming in: an idle connection waits for
	// its next request holding no buffer. It is nil for TLS (and wrapped)
	// connections, which wait in Read with their buffer. readSock is the
	// function raw.Read calls (made once), rn and rerr what it read.
	raw      syscall.RawConn
	readSock func(fd uintptr) bool
	rn       int
	rerr     error

	// cx is the running command's context, reused from one to the next.
	cx commands.Ctx
	// clock is when the last command of the requests being run finished
	// (commands.Ctx.End), the clock reading of the next one; zero when the
	// connection may have waited since (for the client, or to write).
	clock time.Time
	// labelName and labelCtx are the last command's name and its labelled
	// context: a pipeline usually repeats one command, and the context (an
	// allocation per request otherwise) depends on nothing else.
	labelName string
	labelCtx  context.Context
	// tallyCtx is the server's context with the connection's request tally
	// (commands.Conn.Requests), the parent of labelCtx.
	tallyCtx context.Context

	// killed drops the rest of a pipeline after CLIENT KILL.
	killed atomic.Bool

	// While a blocking command runs, cancel ends its wait; parkFn (c.park,
	// made once) is its commands.Ctx.OnPark. watching is closed when the
	// reader that runs while it waits has stopped (watch.go). gone is set
	// when the client left (or sent too much) while a command waited:
	// nothing more of the connection runs, and nothing is written.
	cancel   context.CancelFunc
	parkFn   func()
	watching chan struct{}
	gone     bool

	// push carries pub/sub messages from other goroutines (push.go).
	push pushState
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, w: NewWriter(2)}
	c.push.busy = true
	c.parkFn = c.park
	sock := socketOf(nc)
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		c.raw, c.readSock = sock, c.readOnce
	}
	fd := -1
	if sock != nil {
		_ = sock.Control(func(f uintptr) { fd = int(f) })
	}
	now := s.srv.Now()
	c.cn = &commands.Conn{
		Addr:      nc.RemoteAddr().String(),
		LocalAddr: nc.LocalAddr().String(),
		FD:        fd,
		Created:   now,
		Proto:     2,
		Authed:    s.srv.RequirePass() == "",
		Sub:       c,
	}
	c.cn.Touch("NULL", now)
	c.tallyCtx = s.ctx
	if s.srv.Stats != nil {
		c.cn.Requests = s.srv.Stats.NewTally()
		c.tallyCtx = dynastore.WithTally(s.ctx, c.cn.Requests)
	}
	c.p.maxBulk = s.srv.ProtoMaxBulkLen
	c.p.authRequired = func() bool { return s.srv.AuthRequired(c.cn) }
	return c
}

// serve runs the connection until it ends: it runs every complete request
// the client sent, in order, writes their replies in one write, and reads
// again. As in Redis, each request runs before the next one is parsed, so
// the one before a malformed request gets its reply before the protocol
// error does, and an AUTH lifts the unauthenticated limits for the very
// next request.
func (c *conn) serve() {
	defer c.finish()
	for {
		more := c.process()
		if c.gone {
			return
		}
		if err := c.flushIdle(); err != nil || !more {
			return
		}
		err := c.fill()
		c.setBusy(true)
		if err != nil {
			return
		}
	}
}

// process runs the complete requests buffered. It returns false when the
// connection is to close once the replies so far are written: after QUIT, a
// protocol error, a kill, or when the server shuts down (the requests not
// yet started then do not run); or at once, when the client left while a
// command waited (gone).
func (c *conn) process() bool {
	// First a hint to the store of the keys the buffered requests read
	// or replace.
	var ahead [maxAhead]commands.Upcoming
	c.s.srv.Prefetch(c.cn, scanAhead(c.buf[c.pos:], ahead[:0]))
	for {
		if c.killed.Load() || c.s.draining.Load() {
			return false
		}
		args, n, err := c.p.next(c.buf[c.pos:])
		if err != nil {
			c.s.srv.Net.ProtocolErrors.Add(1)
			c.w.begin()
			c.w.Error("ERR " + err.Error())
			return false
		}
		if n == 0 {
			return true
		}
		c.pos += n
		if len(args) == 0 {
			continue
		}
		c.s.execute(c, args)
		c.takePushes()
		if c.gone || c.cn.CloseAfterReply {
			return false
		}
		if len(c.w.Bytes()) >= outMax {
			if err := c.flush(); err != nil {
				return false
			}
		}
	}
}

// flush writes the buffered replies, in one write, and lends the buffer
// back.
func (c *conn) flush() error {
	c.push.wmu.Lock()
	defer c.push.wmu.Unlock()
	return c.flushLocked()
}

func (c *conn) flushLocked() error {
	c.clock = time.Time{} // a write may wait, and a read follows
	c.takePushes()
	out := c.w.take()
	err := c.send(out)
	putBuf(out)
	return err
}

// flushIdle writes the buffered replies and leaves the connection idle:
// messages published from now on are written as they come (push.go).
func (c *conn) flushIdle() error {
	c.push.wmu.Lock()
	defer c.push.wmu.Unlock()
	c.takePushes()
	c.setBusy(false)
	return c.flushLocked()
}

// send writes replies, after counting the commands that made them.
func (c *conn) send(out []byte) error {
	c.cn.FlushStats()
	if len(out) == 0 {
		return nil
	}
	n, err := c.nc.Write(out)
	if n > 0 {
		c.s.srv.Net.AddOut(n)
	}
	return err
}

// fill reads more of the client's bytes after those buffered.
func (c *conn) fill() error {
	if c.pos == len(c.buf) {
		// Every request has been answered: a client that waits for its
		// replies has not sent more yet, and a read now would mostly fail
		// and park. The other connections run first, which gives it time.
		runtime.Gosched()
	}
	if c.raw == nil {
		c.room()
		n, err := c.nc.Read(c.buf[len(c.buf):cap(c.buf)])
		c.received(n)
		if n > 0 {
			return nil // an error comes back with the next read
		}
		c.release()
		return err
	}
	err := c.raw.Read(c.readSock)
	switch {
	case err != nil:
		return err
	case c.rerr != nil:
		c.release()
		return os.NewSyscallError("read", c.rerr)
	case c.rn == 0:
		c.release()
		return io.EOF
	}
	c.received(c.rn)
	return nil
}

// readOnce is one attempt of a socket read, for raw.Read: false when there
// is nothing to read yet.
func (c *conn) readOnce(fd uintptr) bool {
	c.room()
	for {
		c.rn, c.rerr = sysRead(fd, c.buf[len(c.buf):cap(c.buf)])
		if !errors.Is(c.rerr, syscall.EINTR) {
			break
		}
	}
	if errors.Is(c.rerr, syscall.EAGAIN) {
		// Wait for the socket to become readable with the buffer back in
		// the pool, unless it holds part of a request.
		c.release()
		return false
	}
	return true
}

func (c *conn) received(n int) {
	if n > 0 {
		c.buf = c.buf[:len(c.buf)+n]
		c.s.srv.Net.AddIn(n)
	}
}

// room makes space for a read after the buffered bytes. A request that has
// not fully arrived moves to the front of the buffer; one larger than the
// buffer grows it as its bytes arrive (never by what it merely announces),
// to twice its size or to what the bulk being read still needs, whichever
// is less.
func (c *conn) room() {
	if c.buf == nil {
		c.buf, c.pos = getBuf(), 0
	}
	if cap(c.buf)-len(c.buf) >= readSize/2 {
		return
	}
	kept := copy(c.buf[:cap(c.buf)], c.buf[c.pos:])
	c.buf, c.pos = c.buf[:kept], 0
	if cap(c.buf)-kept >= readSize/2 {
		return
	}
	grow := max(kept, readSize)
	if need := c.p.need(c.buf); need > 0 {
		grow = int(min(int64(grow), max(need, readSize)))
	}
	nb := make([]byte, kept, kept+grow)
	copy(nb, c.buf)
	putBuf(c.buf)
	c.buf = nb
}

// release lends the read buffer back when it holds nothing still to run.
func (c *conn) release() {
	if c.buf == nil || c.pos < len(c.buf) {
		return
	}
	putBuf(c.buf)
	c.buf, c.pos = nil, 0
	// The last request's arguments pointed into it.
	clear(c.p.args[:cap(c.p.args)])
}

// finish closes the connection and forgets it. A panic outside a command
// (which run recovers) ends this connection only.
func (c *conn) finish() {
	if r := recover(); r != nil {
		c.s.srv.Panics.Add(1)
		c.s.logf("resp: panic serving connection %d: %v\n%s", c.cn.ID, r, debug.Stack())
	}
	c.closePushes()
	c.s.srv.Leave(c.cn)
	_ = c.nc.Close()
	c.release()
	putBuf(c.w.take())
	c.s.clients.remove(c.cn.ID)
	if c.s.opts.OnConn != nil {
		c.s.opts.OnConn(-1)
	}
}

// kill closes the connection from another goroutine (CLIENT KILL, a
// Shutdown out of time): its pending requests are dropped and its reads and
// writes fail.
func (c *conn) kill() {
	c.killed.Store(true)
	_ = c.nc.Close()
}

// reject turns a client away with Redis's error for why, then closes.
func reject(nc net.Conn, msg string) {
	_ = nc.SetWriteDeadline(time.Now().Add(rejectTimeout))
	// Best effort: the connection closes either way.
	_, _ = fmt.Fprintf(nc, "-%s\r\n", msg)
	_ = nc.Close()
}
