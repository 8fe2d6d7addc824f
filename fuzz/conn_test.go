package fuzz

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// conn is a raw connection that tracks what the protocol depends on: the
// RESP version (HELLO, RESET) and whether a MULTI is open.
type conn struct {
	nc      net.Conn
	rr      *replyReader
	timeout time.Duration
	inMulti bool
	// protoAtExec: a HELLO or RESET was queued, so EXEC's reply and all
	// after it may come in either protocol.
	protoAtExec bool
	// pending are the commands sent whose replies are still unread.
	pending []command
	// closed: the server closed the connection (QUIT, CLIENT KILL).
	closed bool
}

// dial connects and, for proto 3, sends HELLO 3; timeout bounds every reply.
func dial(addr string, proto int, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, rr: newReplyReader(nc), timeout: timeout}
	if proto == 3 {
		v, err := c.do(cmdOf("HELLO", "3"))
		if err != nil {
			nc.Close()
			return nil, err
		}
		if v.isError() {
			nc.Close()
			return nil, fmt.Errorf("HELLO 3: %s", v.text())
		}
	}
	return c, nil
}

func (c *conn) close() { _ = c.nc.Close() }

// send writes commands in one write.
func (c *conn) send(cmds []command) error {
	var b []byte
	for _, cmd := range cmds {
		b = append(b, encode(cmd)...)
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	if _, err := c.nc.Write(b); err != nil {
		return err
	}
	c.pending = append(c.pending, cmds...)
	return nil
}

// errHang is a reply that did not come within the timeout.
var errHang = errors.New("no reply within the timeout")

// next reads the reply of the oldest pending command and follows the
// connection's state through it.
func (c *conn) next() (command, *value, error) {
	cmd := c.pending[0]
	c.pending = c.pending[1:]
	name := cmd.name()
	if name == "exec" && c.protoAtExec {
		c.rr.proto = 0
	}
	// HELLO switches the protocol before it replies; should it fail, its
	// error reads the same in both.
	was := c.rr.proto
	if name == "hello" && !c.inMulti && len(cmd) > 1 {
		switch string(cmd[1]) {
		case "2":
			c.rr.proto = 2
		case "3":
			c.rr.proto = 3
		}
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return cmd, nil, err
	}
	v, err := c.rr.read()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return cmd, nil, errHang
	}
	if err != nil {
		return cmd, nil, err
	}
	queued := v.kind == '+' && string(v.str) == "QUEUED"
	switch {
	case queued && (name == "hello" || name == "reset"):
		c.protoAtExec = true
	case name == "hello" && v.isError():
		c.rr.proto = was
	case name == "reset" && string(v.str) == "RESET":
		c.rr.proto, c.inMulti, c.protoAtExec = 2, false, false
	case name == "multi" && !v.isError():
		c.inMulti = true
	case name == "exec" || name == "discard":
		c.inMulti = false
	}
	if name == "quit" && v.kind == '+' && string(v.str) == "OK" {
		// Nothing after QUIT runs; the server closes the connection.
		c.pending = nil
		c.closed = true
	}
	return cmd, v, nil
}

// do sends one command and reads its reply.
func (c *conn) do(cmd command) (*value, error) {
	vs, err := c.pipeline([]command{cmd})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// pipeline sends commands in one write and reads their replies.
func (c *conn) pipeline(cmds []command) ([]*value, error) {
	if err := c.send(cmds); err != nil {
		return nil, err
	}
	out := make([]*value, 0, len(cmds))
	for len(c.pending) > 0 {
		cmd, v, err := c.next()
		if err != nil {
			return out, fmt.Errorf("%s: %w", cmd.fullName(), err)
		}
		out = append(out, v)
	}
	if len(out) < len(cmds) {
		return out, fmt.Errorf("connection closed by %s", cmds[len(out)-1].fullName())
	}
	return out, nil
}

// expectEOF checks that the server closed the connection with nothing
// more to say.
func (c *conn) expectEOF() error {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return err
	}
	b, err := c.rr.r.ReadByte()
	switch {
	case err == nil:
		rest, _ := c.rr.r.Peek(min(c.rr.r.Buffered(), 80))
		return fmt.Errorf("%w: bytes after the connection should have closed: %q", errMalformed, append([]byte{b}, rest...))
	case errors.Is(err, io.EOF) || isReset(err):
		return nil
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("connection not closed: %w", errHang)
		}
		return err
	}
}

// isReset reports a connection the server reset rather than closed (it
// closed with our bytes unread).
func isReset(err error) bool {
	return errors.Is(err, os.ErrClosed) || strings.Contains(err.Error(), "connection reset")
}
