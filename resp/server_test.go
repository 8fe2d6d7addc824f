package resp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/resp"
)

// testServer is a resp.Server on a free port around srv (no store: these
// tests only run connection and server commands, plus the test commands
// added to the table).
type testServer struct {
	addr string
	srv  *commands.Server
	rs   *resp.Server
	done chan error
}

func start(t *testing.T, cfg commands.Config, extra ...*commands.Command) *testServer {
	t.Helper()
	table := commands.NewTable()
	table.Register(extra...)
	srv := &commands.Server{Table: table, Config: cfg}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := &testServer{addr: ln.Addr().String(), srv: srv, done: make(chan error, 1)}
	ts.rs = resp.New(srv, resp.Options{Logf: func(f string, a ...any) { t.Logf("server: "+f, a...) }})
	go func() { ts.done <- ts.rs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ts.rs.Shutdown(ctx)
		<-ts.done
	})
	return ts
}

// rawConn is a client speaking raw bytes.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func (ts *testServer) dial(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	_, err := rc.c.Write([]byte(s))
	require.NoError(rc.t, err)
}

// read reads exactly n bytes.
func (rc *rawConn) read(n int) string {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, n)
	_, err := io.ReadFull(rc.r, buf)
	require.NoError(rc.t, err)
	return string(buf)
}

// expect reads len(want) bytes and compares.
func (rc *rawConn) expect(want string) {
	rc.t.Helper()
	require.Equal(rc.t, want, rc.read(len(want)))
}

// expectClosed checks that the server closed the connection.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	b, err := rc.r.ReadByte()
	require.ErrorIs(rc.t, err, io.EOF, "got byte %q", b)
}

// cmd encodes a request as RESP.
func cmd(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func TestPingPipeline(t *testing.T) {
	ts := start(t, commands.Config{})
	rc := ts.dial(t)
	rc.send(strings.Repeat(cmd("PING"), 100) + "PING hello\r\n")
	rc.expect(strings.Repeat("+PONG\r\n", 100) + "$5\r\nhello\r\n")
}

var _ = sync.Mutex{}
