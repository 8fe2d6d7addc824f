//go:build linux

package resp_test

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
)

// TestPubSubOutputLimitSet: CONFIG SET client-output-buffer-limit's pubsub
// class applies to subscribers. With a 1 MB hard limit, a subscriber that
// reads nothing while 24 MB of messages are published is closed and
// counted; under the default (32 MB hard, 8 MB soft for 60 s) it would
// not be, as the messages fit under the hard limit. The subscriber's
// receive buffer is kept small, so that the kernel's buffers cannot hold
// what must pile up in the server.
func TestPubSubOutputLimitSet(t *testing.T) {
	ts := serve(t, &commands.Server{Table: commands.NewTable()})
	pub := ts.dial(t)
	pub.send(cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"))
	pub.expect("+OK\r\n")
	pub.send(cmd("CONFIG", "GET", "client-output-buffer-limit"))
	want := "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0"
	pub.expect("*2\r\n$26\r\nclient-output-buffer-limit\r\n$" + strconv.Itoa(len(want)) + "\r\n" + want + "\r\n")

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", ts.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	sub := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	sub.send(cmd("SUBSCRIBE", "c"))
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")

	payload := strings.Repeat("x", 1<<20)
	for range 24 {
		pub.send(cmd("PUBLISH", "c", payload))
		require.Contains(t, []string{":1\r\n", ":0\r\n"}, pub.read(4))
	}
	require.NoError(t, sub.c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.Copy(io.Discard, sub.r)
	require.NoError(t, err, "the server closed the subscriber")
	require.Equal(t, int64(1), ts.srv.Net.OutputLimitDisconnections.Load())
}
