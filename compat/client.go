// Package compat is redamo's differential compatibility suite: it sends the
// same command scripts (the case files under testdata/) to a real redis-server
// and to redamo, over RESP2 and RESP3, and compares every reply byte for byte
// unless a case declares why a reply is legitimately nondeterministic.
//
// It also holds a seeded random-workload differential test, smoke tests with
// real client libraries (go-redis, ioredis, redis-py), and the generator of
// docs/compat.md.
//
// The package talks to servers only through its own raw RESP client (this
// file), so what it compares is exactly the bytes each server sent, not what a
// client library made of them.
package compat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// maxBulk bounds one bulk string or aggregate we accept, so a broken server
// cannot make the suite allocate without limit.
const maxBulk = 512 << 20

// Conn is a raw RESP connection: it sends commands as arrays of bulk strings
// and returns each reply as the exact bytes the server sent.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

// Dial connects to addr; timeout bounds the dial and every later reply.
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("compat: dial %s: %w", addr, err)
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), timeout: timeout}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// EncodeCommand renders args as a RESP array of bulk strings (binary-safe).
func EncodeCommand(args [][]byte) []byte {
	var b bytes.Buffer
	b.WriteByte('*')
	b.WriteString(strconv.Itoa(len(args)))
	b.WriteString("\r\n")
	for _, a := range args {
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(len(a)))
		b.WriteString("\r\n")
		b.Write(a)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// Send writes one command without waiting for its reply.
func (c *Conn) Send(args [][]byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("compat: %w", err)
	}
	if _, err := c.nc.Write(EncodeCommand(args)); err != nil {
		return fmt.Errorf("compat: write: %w", err)
	}
	return nil
}

// ReadRaw reads exactly one complete reply (an attribute and the reply it
// annotates count as one) and returns its bytes.
func (c *Conn) ReadRaw() ([]byte, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	var buf []byte
	buf, err := readReply(c.r, buf)
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// Do sends one command and returns its raw reply.
func (c *Conn) Do(args ...[]byte) ([]byte, error) {
	if err := c.Send(args); err != nil {
		return nil, err
	}
	return c.ReadRaw()
}

// DoStrings is Do with string arguments.
func (c *Conn) DoStrings(args ...string) ([]byte, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return c.Do(bs...)
}

// ErrProtocol reports bytes that are not a valid RESP reply.
var ErrProtocol = errors.New("compat: protocol error")

// readLine reads one CRLF-terminated line and appends it (CRLF included) to buf.
func readLine(r *bufio.Reader, buf []byte) ([]byte, []byte, error) {
	line, err := r.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		// A very long simple string or error: keep reading.
		buf = append(buf, line...)
		line, err = r.ReadSlice('\n')
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(buf)+len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return buf, nil, fmt.Errorf("compat: read: %w", err)
	}
	start := len(buf)
	buf = append(buf, line...)
	full := buf[start:]
	if len(full) < 3 || full[len(full)-2] != '\r' {
		return buf, nil, fmt.Errorf("%w: line %q not CRLF-terminated", ErrProtocol, full)
	}
	return buf, full[1 : len(full)-2], nil
}

// readReply appends one complete reply to buf.
func readReply(r *bufio.Reader, buf []byte) ([]byte, error) {
	start := len(buf)
	buf, payload, err := readLine(r, buf)
	if err != nil {
		return buf, err
	}
	kind := buf[start]
	switch kind {
	case '+', '-', ':', ',', '#', '(':
		return buf, nil
	case '_':
		if len(payload) != 0 {
			return buf, fmt.Errorf("%w: null with payload %q", ErrProtocol, payload)
		}
		return buf, nil
	case '$', '!', '=':
		n, err := strconv.ParseInt(string(payload), 10, 64)
		if err != nil || n < -1 || n > maxBulk || (n == -1 && kind != '$') {
			return buf, fmt.Errorf("%w: bad length %q", ErrProtocol, payload)
		}
		if n == -1 {
			return buf, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return buf, fmt.Errorf("compat: read: %w", err)
		}
		if body[n] != '\r' || body[n+1] != '\n' {
			return buf, fmt.Errorf("%w: bulk not CRLF-terminated", ErrProtocol)
		}
		return append(buf, body...), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.ParseInt(string(payload), 10, 64)
		if err != nil || n < -1 || n > maxBulk || (n == -1 && kind != '*') {
			return buf, fmt.Errorf("%w: bad count %q", ErrProtocol, payload)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for i := int64(0); i < n; i++ {
			at := len(buf)
			if buf, err = readReply(r, buf); err != nil {
				return buf, err
			}
			if kind != '>' && isMessagePush(buf[at:]) {
				// A pub/sub message the server sent in the middle of a
				// reply (Redis 7.0 notifies a subscribed RESP3 client of
				// a key it reads or pops as it writes the reply): not one
				// of the reply's elements.
				i--
			}
		}
		if kind == '|' {
			// An attribute annotates the reply that follows it.
			return readReply(r, buf)
		}
		return buf, nil
	default:
		return buf, fmt.Errorf("%w: unknown type byte %q", ErrProtocol, kind)
	}
}
