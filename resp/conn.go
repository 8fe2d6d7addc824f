package resp

import (
	"errors"
	"net"
	"strconv"
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
// client's bytes through parser, one request at a time, so redcon only ever
// reads canonical RESP, and reports a malformed request the way Redis does:
// the requests before it run and get their replies, then the error reply
// goes out and the connection closes. Its Write counts output bytes.
type clientConn struct {
	net.Conn
	p parser

	buf    []byte // client bytes; buf[pos:] not yet parsed (borrowed from bufPool)
	pos    int
	out    []byte // canonical bytes not yet handed to redcon (also borrowed)
	outPos int

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
// has run every request it was given and flushed their replies. Read hands
// over one request at a time, so the error reply for a malformed request
// comes after the replies of the requests before it, and a pending AUTH has
// taken effect before the parser checks the unauthenticated limits again.
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
		if c.pos < len(c.buf) {
			args, n, err := c.p.next(c.buf[c.pos:])
			if err != nil {
				if c.stats != nil {
					c.stats.ProtocolErrors.Add(1)
				}
				// The reply is best effort: the connection closes either way.
				_, _ = c.Write([]byte("-ERR " + err.Error() + "\r\n"))
				return 0, errClosedAfterProtocolError
			}
			c.pos += n
			if len(args) > 0 {
				c.out = getBuf()
				c.out = appendHeader(c.out, '*', int64(len(args)))
				for _, a := range args {
					c.out = appendHeader(c.out, '$', int64(len(a)))
					c.out = append(c.out, a...)
					c.out = append(c.out, '\r', '\n')
				}
			}
			if n > 0 {
				continue
			}
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
}

func appendHeader(out []byte, prefix byte, n int64) []byte {
	out = append(out, prefix)
	out = strconv.AppendInt(out, n, 10)
	return append(out, '\r', '\n')
}

// fill reads more client bytes after the unparsed ones, growing the buffer
// only as far as bytes arrive.
func (c *clientConn) fill() error {
	if c.buf == nil {
		c.buf = getBuf()
	}
	n := copy(c.buf[:cap(c.buf)], c.buf[c.pos:])
	c.buf, c.pos = c.buf[:n], 0
	if cap(c.buf)-n < readSize/2 {
		nb := make([]byte, n, max(2*cap(c.buf), n+readSize))
		copy(nb, c.buf)
		putBuf(c.buf)
		c.buf = nb
	}
	m, err := c.Conn.Read(c.buf[n:cap(c.buf)])
	c.countIn(m)
	c.buf = c.buf[:n+m]
	if m > 0 {
		return nil
	}
	if n == 0 {
		putBuf(c.buf)
		c.buf = nil
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
