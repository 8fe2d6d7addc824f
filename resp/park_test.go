package resp_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/internal/testserver"
)

// parker holds the test commands of a client whose command waits.
type parker struct {
	started chan struct{}
	ended   chan error // nil: released
	release chan struct{}
	marks   atomic.Int64
}

func newParker() *parker {
	return &parker{started: make(chan struct{}, 16), ended: make(chan error, 16), release: make(chan struct{})}
}

func (p *parker) commands() []*commands.Command {
	return []*commands.Command{
		// test.park parks and waits until released (+DONE) or cancelled.
		{Name: "test.park", Arity: 1, Flags: []string{commands.FlagBlocking}, Run: func(c *commands.Ctx) {
			c.Park()
			p.started <- struct{}{}
			select {
			case <-p.release:
				p.ended <- nil
				c.W.Simple("DONE")
			case <-c.Done():
				p.ended <- c.Err()
				c.W.Error("ERR canceled")
			}
		}},
		// test.now is a blocking command served at once: it never parks.
		{Name: "test.now", Arity: 1, Flags: []string{commands.FlagBlocking}, Run: func(c *commands.Ctx) { c.W.Simple("NOW") }},
		// test.mark counts its runs.
		{Name: "test.mark", Arity: 1, Run: func(c *commands.Ctx) {
			p.marks.Add(1)
			c.W.Simple("MARKED")
		}},
	}
}

// cancelled waits for the parked command to end and checks that its
// context was cancelled.
func (p *parker) cancelled(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the parked command was not cancelled")
	}
}

// clientID asks the server for rc's id.
func (rc *rawConn) clientID() int64 {
	rc.t.Helper()
	rc.send(cmd("CLIENT", "ID"))
	line, err := rc.r.ReadString('\n')
	require.NoError(rc.t, err)
	require.True(rc.t, strings.HasPrefix(line, ":"), line)
	id, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
	require.NoError(rc.t, err)
	return id
}

// waitGone waits until the server has forgotten connection id.
func (ts *testServer) waitGone(t *testing.T, id int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(ts.srv.Clients.List(), func(cn *commands.Conn) bool { return cn.ID == id })
	}, 10*time.Second, time.Millisecond, "connection %d is still served", id)
}

// expectNothing checks that the server closed rc without another byte.
func (rc *rawConn) expectNothing() {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	rest, err := io.ReadAll(rc.r)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil // closed with bytes of the client's unread
	}
	require.NoError(rc.t, err)
	require.Empty(rc.t, string(rest))
}

// A command that waits has the replies before it sent first, as Redis
// sends them when it blocks a client; one served at once (or not blocking
// at all) changes nothing: a read's replies still go out in one write.
func TestParkSendsRepliesBefore(t *testing.T) {
	p := newParker()
	ts := start(t, commands.Config{}, p.commands()...)
	rc := ts.dial(t)
	rc.send(cmd("PING") + cmd("test.now") + cmd("ECHO", "x") + cmd("test.park") + cmd("PING"))
	rc.expect("+PONG\r\n+NOW\r\n$1\r\nx\r\n")
	<-p.started
	p.release <- struct{}{}
	rc.expect("+DONE\r\n+PONG\r\n")
	require.NoError(t, <-p.ended)
}

// When the client of a waiting command goes away, however it does, the
// command is cancelled and nothing the client sent after it runs: Redis
// reads a blocked client's socket, sees the end and frees the client with
// its pending requests.
func TestParkedClientLeaves(t *testing.T) {
	for _, tc := range []struct {
		name string
		// behind is sent with test.park, in the same write.
		behind string
		// leave runs once test.park waits.
		leave func(t *testing.T, ts *testServer, rc *rawConn, id int64)
	}{
		{"close", "", func(t *testing.T, _ *testServer, rc *rawConn, _ int64) {
			require.NoError(t, rc.c.Close())
		}},
		{"close with a request read behind", cmd("test.mark"), func(t *testing.T, _ *testServer, rc *rawConn, _ int64) {
			require.NoError(t, rc.c.Close())
		}},
		{"close with a request unread behind", "", func(t *testing.T, _ *testServer, rc *rawConn, _ int64) {
			rc.send(cmd("test.mark"))
			require.NoError(t, rc.c.Close())
		}},
		{"half close", cmd("test.mark"), func(t *testing.T, _ *testServer, rc *rawConn, _ int64) {
			require.NoError(t, rc.c.(*net.TCPConn).CloseWrite())
			// Not even the cancelled command is answered.
			rc.expectNothing()
		}},
		{"client kill", cmd("test.mark"), func(t *testing.T, ts *testServer, rc *rawConn, id int64) {
			killer := ts.dial(t)
			killer.send(cmd("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)))
			killer.expect(":1\r\n")
			rc.expectNothing()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParker()
			ts := start(t, commands.Config{}, p.commands()...)
			rc := ts.dial(t)
			id := rc.clientID()
			rc.send(cmd("test.park") + tc.behind)
			<-p.started
			tc.leave(t, ts, rc, id)
			p.cancelled(t)
			ts.waitGone(t, id)
			require.Zero(t, p.marks.Load(), "a request of the departed client ran")
		})
	}
}

// What a client sends while its command waits is read meanwhile (so the
// read buffer grows past its usual size) and runs afterwards, in order;
// the connection then reads and parks as before.
func TestParkedClientKeepsSending(t *testing.T) {
	p := newParker()
	ts := start(t, commands.Config{}, p.commands()...)
	rc := ts.dial(t)
	rc.send(cmd("test.park"))
	<-p.started
	const n = 10000
	before := ts.srv.Net.In()
	pings := strings.Repeat(cmd("PING"), n)
	rc.send(pings)
	require.Eventually(t, func() bool { return ts.srv.Net.In() >= before+int64(len(pings)) }, 10*time.Second, time.Millisecond)
	p.release <- struct{}{}
	rc.expect("+DONE\r\n" + strings.Repeat("+PONG\r\n", n))
	require.NoError(t, <-p.ended)

	rc.send(cmd("test.park"))
	<-p.started
	p.release <- struct{}{}
	rc.expect("+DONE\r\n")
	rc.send(cmd("test.mark"))
	rc.expect("+MARKED\r\n")
}

// A client that sends more than client-query-buffer-limit while its
// command waits is closed, as Redis closes a client whose query buffer
// passes the limit; what it sent does not run.
func TestParkedClientQueryBufferLimit(t *testing.T) {
	p := newParker()
	ts := start(t, commands.Config{}, p.commands()...)
	rc := ts.dial(t)
	rc.send(cmd("CONFIG", "SET", "client-query-buffer-limit", "1mb"))
	rc.expect("+OK\r\n")
	rc.send(cmd("CONFIG", "GET", "client-query-buffer-limit"))
	rc.expect("*2\r\n$25\r\nclient-query-buffer-limit\r\n$7\r\n1048576\r\n")
	rc.send(cmd("test.park"))
	<-p.started
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		// It fails once the server closes the connection.
		_, _ = rc.c.Write([]byte(strings.Repeat(cmd("test.mark"), 1100*1024/len(cmd("test.mark")))))
	}()
	p.cancelled(t)
	rc.expectNothing()
	<-sent
	require.Zero(t, p.marks.Load())
}

// Over TLS too, what the client sends while its command waits is read
// meanwhile and runs afterwards, and a close is seen at once.
func TestParkedClientOverTLS(t *testing.T) {
	certFile, keyFile, pool := testserver.SelfSigned(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := newParker()
	table := commands.NewTable()
	table.Add(p.commands()...)
	ts := serveOn(t, &commands.Server{Table: table}, tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}))
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
	id := rc.clientID()

	rc.send(cmd("PING") + cmd("test.park"))
	rc.expect("+PONG\r\n")
	<-p.started
	const n = 1000
	before := ts.srv.Net.In()
	marks := strings.Repeat(cmd("test.mark"), n)
	rc.send(marks)
	require.Eventually(t, func() bool { return ts.srv.Net.In() >= before+int64(len(marks)) }, 10*time.Second, time.Millisecond)
	require.Zero(t, p.marks.Load(), "requests ran while the command waited")
	p.release <- struct{}{}
	rc.expect("+DONE\r\n" + strings.Repeat("+MARKED\r\n", n))
	require.NoError(t, <-p.ended)

	rc.send(cmd("test.park") + cmd("test.mark"))
	<-p.started
	require.NoError(t, c.Close())
	p.cancelled(t)
	ts.waitGone(t, id)
	require.EqualValues(t, n, p.marks.Load())
}
