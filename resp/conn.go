package resp

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/redamo/redamo/commands"
)

// readSize is how much one read asks for (Redis reads 16 KB too).
const readSize = 16 * 1024

// bufPool lends connections their read and output buffers while they have
// bytes in flight, so an idle connection holds none (1,000 idle clients
// cost their goroutines and redcon's buffers, not ours).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, readSize); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) == 0 || cap(b) > 4*readSize {
		return // oversized buffers go back to the GC
	}
	b = b[:0]
	bufPool.Put(&b)
}

// clientConn is a client's connection as redcon sees it. Its Read runs the
// client's bytes through parser, so redcon only ever reads canonical RESP,
// and reports a malformed request the way Redis does: the requests before it
// run and get their replies, then the error reply goes out and the
// connection closes. Its Write counts output bytes.
type clientConn struct {
	net.Conn
	p parser

	buf    []byte // backing array of p.in, borrowed from bufPool while in use
	out    []byte // canonical bytes not yet handed to redcon (also borrowed)
	outPos int
	// fail is a protocol error found after the bytes in out; it is reported
	// once redcon has run the requests before it.
	fail error

	stats  *commands.NetStats
	killed atomic.Bool
}

func newClientConn(c net.Conn, stats *commands.NetStats) *clientConn {
	return &clientConn{Conn: c, stats: stats}
}

// errClosedAfterProtocolError ends a connection whose request was malformed.
var errClosedAfterProtocolError = errors.New("resp: connection closed after a protocol error")

// Read implements net.Conn for redcon's reader.
//
// redcon calls Read only when it holds no complete request, that is after it
// has run every request it was given and flushed their replies. So when the
// canonical bytes are all handed over, the requests they hold have run: the
// error reply for a malformed request written here comes after their
// replies, and a pending AUTH has taken effect before the parser checks the
// unauthenticated limits again.
func (c *clientConn) Read(b []byte) (int, error) {
	for {
		if c.outPos < len(c.out) {
			n := copy(b, c.out[c.outPos:])
			c.outPos += n
			if c.outPos == len(c.out) {
				putBuf(c.out)
				c.out, c.outPos = nil, 0
			}
			return n, nil
		}
		if c.fail != nil {
			if c.stats != nil {
				c.stats.ProtocolErrors.Add(1)
			}
			// The reply is best effort: the connection closes either way.
			_, _ = c.Write([]byte("-ERR " + c.fail.Error() + "\r\n"))
			return 0, errClosedAfterProtocolError
		}
		if len(c.p.in) > 0 {
			if c.out == nil {
				c.out = getBuf()
			}
			out, _, err := c.p.feed(c.out[:0])
			c.out = out
			if len(c.p.in) == 0 {
				putBuf(c.buf)
				c.buf, c.p.in = nil, nil
			}
			if err != nil {
				c.fail = err
				continue
			}
			if len(c.out) > 0 {
				continue
			}
		}
		if c.p.st == stData && len(c.p.in) == 0 {
			// The middle of a large bulk: read it straight into redcon's buffer.
			n := len(b)
			if int64(n) > c.p.bulkLeft {
				n = int(c.p.bulkLeft)
			}
			n, err := c.Conn.Read(b[:n])
			c.countIn(n)
			c.p.bulkLeft -= int64(n)
			if c.p.bulkLeft == 0 {
				c.p.st, c.p.termLeft = stTerm, 2
			}
			return n, err
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
}

// fill reads more client bytes after those in p.in.
func (c *clientConn) fill() error {
	if c.buf == nil {
		c.buf = getBuf()
	}
	// p.in only ever holds an unfinished header or inline line (at most
	// inlineMax bytes plus one read), so the buffer stays small.
	n := copy(c.buf[:cap(c.buf)], c.p.in)
	if cap(c.buf)-n < readSize/2 {
		nb := make([]byte, n, max(2*cap(c.buf), n+readSize))
		copy(nb, c.buf[:n])
		putBuf(c.buf)
		c.buf = nb
	}
	buf := c.buf[:cap(c.buf)]
	m, err := c.Conn.Read(buf[n:])
	c.countIn(m)
	c.p.in = buf[:n+m]
	if m > 0 {
		return nil
	}
	if n == 0 {
		putBuf(c.buf)
		c.buf, c.p.in = nil, nil
	}
	return err
}

func (c *clientConn) countIn(n int) {
	if c.stats != nil && n > 0 {
		c.stats.AddIn(n)
	}
}

// Write implements net.Conn, counting output bytes.
func (c *clientConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.stats != nil && n > 0 {
		c.stats.AddOut(n)
	}
	return n, err
}

// kill closes the connection from another goroutine (CLIENT KILL): its
// pending requests are dropped and its reader fails.
func (c *clientConn) kill() {
	c.killed.Store(true)
	_ = c.Conn.Close()
}
