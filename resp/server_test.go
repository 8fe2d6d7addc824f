package resp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/resp"
	"github.com/redamo/redamo/scripting"
)

// testServer is a resp.Server on a free port around srv (no store: these
// tests only run connection and server commands, plus the test commands
// added to the table).
type testServer struct {
	addr string
	srv  *commands.Server
	rs   *resp.Server
	// done is closed when Serve returned, with its error in serveErr.
	done     chan struct{}
	serveErr error
}

func start(t *testing.T, cfg commands.Config, extra ...*commands.Command) *testServer {
	t.Helper()
	table := commands.NewTable()
	table.Add(extra...)
	return serve(t, &commands.Server{Table: table, Config: cfg})
}

// serve serves srv on a free port until the test ends.
func serve(t *testing.T, srv *commands.Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveOn(t, srv, ln)
}

// serveOn serves srv on ln until the test ends.
func serveOn(t *testing.T, srv *commands.Server, ln net.Listener) *testServer {
	t.Helper()
	ts := &testServer{addr: ln.Addr().String(), srv: srv, done: make(chan struct{})}
	ts.rs = resp.New(srv, resp.Options{Logf: func(f string, a ...any) { t.Logf("server: "+f, a...) }})
	go func() {
		ts.serveErr = ts.rs.Serve(ln)
		close(ts.done)
	}()
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

func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	ts := start(t, commands.Config{})
	good := ts.dial(t)
	good.send(cmd("PING"))
	good.expect("+PONG\r\n")

	for _, garbage := range []string{"*abc\r\n", "*1\r\n$99999999999\r\n", "\x00\xff\xfe" + strings.Repeat("z", 70000)} {
		bad := ts.dial(t)
		bad.send(garbage)
		line, err := bad.r.ReadString('\n')
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(line, "-ERR Protocol error: "), line)
		bad.expectClosed()
	}
	good.send(cmd("ECHO", "still here"))
	good.expect("$10\r\nstill here\r\n")
	good.send(cmd("INFO", "stats"))
	require.Contains(t, readBulk(t, good), "protocol_errors:3\r\n")
}

// A huge announced bulk is refused from its header: the server neither
// waits for nor buffers the data.
func TestHugeBulkRefusedAtHeader(t *testing.T) {
	ts := start(t, commands.Config{ProtoMaxBulkLen: 1 << 20})
	rc := ts.dial(t)
	rc.send("*2\r\n$4\r\nECHO\r\n$1048577\r\n")
	rc.expect("-ERR Protocol error: invalid bulk length\r\n")
	rc.expectClosed()

	// At the limit the value goes through, streamed in pieces.
	rc = ts.dial(t)
	big := strings.Repeat("x", 1<<20)
	req := cmd("ECHO", big) + cmd("PING")
	for i := 0; i < len(req); i += 100000 {
		rc.send(req[i:min(i+100000, len(req))])
	}
	rc.expect(fmt.Sprintf("$%d\r\n%s\r\n+PONG\r\n", len(big), big))
}

func TestProtoMaxBulkLenConfigSet(t *testing.T) {
	ts := start(t, commands.Config{})
	rc := ts.dial(t)
	rc.send(cmd("CONFIG", "SET", "proto-max-bulk-len", "1mb") + cmd("CONFIG", "GET", "proto-max-bulk-len"))
	rc.expect("+OK\r\n*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n")
	rc.send("*2\r\n$4\r\nECHO\r\n$1048577\r\n")
	rc.expect("-ERR Protocol error: invalid bulk length\r\n")
}

// blocker is a test command that blocks until released (or its context
// ends), then replies +DONE.
type blocker struct {
	started, release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) command() *commands.Command {
	return &commands.Command{Name: "test.block", Arity: 1, Run: func(c *commands.Ctx) {
		b.started <- struct{}{}
		select {
		case <-b.release:
			c.W.Simple("DONE")
		case <-c.Done():
			c.W.Error("ERR canceled")
		}
	}}
}

func TestShutdownLetsInFlightCommandFinish(t *testing.T) {
	b := newBlocker()
	ts := start(t, commands.Config{}, b.command())
	busy := ts.dial(t)
	idle := ts.dial(t)
	idle.send(cmd("PING"))
	idle.expect("+PONG\r\n")
	busy.send(cmd("test.block") + cmd("PING"))
	<-b.started

	shut := make(chan error, 1)
	go func() { shut <- ts.rs.Shutdown(context.Background()) }()
	// New connections are refused once the listener is closed.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", ts.addr)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a command was in flight", err)
	default:
	}

	close(b.release)
	require.NoError(t, <-shut)
	// The in-flight command's reply went out; the pipelined PING behind it
	// did not run; then the connection closed, as did the idle one.
	busy.expect("+DONE\r\n")
	busy.expectClosed()
	idle.expectClosed()
	<-ts.done
	require.NoError(t, ts.serveErr)
}

func TestShutdownDeadlineCancelsCommands(t *testing.T) {
	b := newBlocker()
	ts := start(t, commands.Config{}, b.command())
	rc := ts.dial(t)
	rc.send(cmd("test.block"))
	<-b.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ts.rs.Shutdown(ctx), context.DeadlineExceeded)
	<-ts.done
	require.NoError(t, ts.serveErr)
	// The command saw its context end; its reply may or may not have made it
	// before the connection closed.
	require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	rest, err := io.ReadAll(rc.r)
	require.NoError(t, err)
	require.Contains(t, []string{"", "-ERR canceled\r\n"}, string(rest))
}

func TestHandlerBugsBecomeErrors(t *testing.T) {
	table := commands.NewTable()
	scripting.Register(table)
	table.Add(
		&commands.Command{Name: "test.panic", Arity: 1, Run: func(c *commands.Ctx) {
			c.W.Array(2)
			panic("boom")
		}},
		&commands.Command{Name: "test.silent", Arity: 1, Run: func(c *commands.Ctx) {}},
		&commands.Command{Name: "test.twice", Arity: 1, Run: func(c *commands.Ctx) { c.W.Int(1); c.W.Int(2) }},
	)
	// A store for the script below.
	ts := serve(t, &commands.Server{Table: table, Store: model.On(memory.New(memory.Options{}))})
	rc := ts.dial(t)
	rc.send(cmd("test.panic") + cmd("test.silent") + cmd("test.twice") + cmd("PING"))
	rc.expect("-ERR internal error in 'test.panic'\r\n" +
		"-ERR internal error in 'test.silent': malformed reply\r\n" +
		"-ERR internal error in 'test.twice': malformed reply\r\n" +
		"+PONG\r\n")

	// Each recovered panic is counted where an operator (and the fuzzer)
	// can see it, also one under a script, which gopher-lua turns into a
	// script error; CONFIG RESETSTAT does not hide them.
	rc.send(cmd("EVAL", "return redis.pcall('test.panic')", "0"))
	require.NoError(t, rc.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := rc.r.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^-ERR .*boom`, line)
	rc.send(cmd("CONFIG", "RESETSTAT") + cmd("INFO", "redamo"))
	rc.expect("+OK\r\n")
	require.Contains(t, readBulk(t, rc), "\r\nrecovered_panics:2\r\n")
}

func TestClientIDsListAndKill(t *testing.T) {
	ts := start(t, commands.Config{})
	a, b := ts.dial(t), ts.dial(t)
	a.send(cmd("CLIENT", "ID"))
	a.expect(":1\r\n")
	b.send(cmd("CLIENT", "ID"))
	b.expect(":2\r\n")

	a.send(cmd("CLIENT", "LIST"))
	list := readBulk(t, a)
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^id=1 addr=127\.0\.0\.1:\d+ laddr=`+regexp.QuoteMeta(ts.addr)+` fd=\d+ name= age=\d+ idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 `+
		`qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client\|list user=default redir=-1 resp=2 lib-name= lib-ver=$`, lines[0])
	require.Contains(t, lines[1], "id=2 ")
	require.Contains(t, lines[1], " cmd=client|id ")

	// Other connections see b's SELECT once it ran.
	b.send(cmd("SELECT", "5"))
	b.expect("+OK\r\n")
	a.send(cmd("CLIENT", "LIST", "ID", "2"))
	require.Contains(t, readBulk(t, a), " db=5 ")

	a.send(cmd("CLIENT", "KILL", "ID", "2"))
	a.expect(":1\r\n")
	b.expectClosed()
	// SKIPME defaults to yes: a does not kill itself.
	a.send(cmd("CLIENT", "KILL", "USER", "default"))
	a.expect(":0\r\n")
	a.send(cmd("CLIENT", "KILL", "USER", "default", "SKIPME", "no"))
	a.expect(":1\r\n")
	a.expectClosed()

	c := ts.dial(t)
	c.send(cmd("CLIENT", "ID"))
	c.expect(":3\r\n")
}

func readBulk(t *testing.T, rc *rawConn) string {
	t.Helper()
	hdr, err := rc.r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(hdr, "$"), hdr)
	n, err := strconv.Atoi(strings.TrimSpace(hdr[1:]))
	require.NoError(t, err)
	body := rc.read(n + 2)
	return body[:n]
}

func TestHooksAndCommandStats(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	failed := map[string]int{}
	conns := 0
	srv := &commands.Server{}
	rs := resp.New(srv, resp.Options{
		OnCommand: func(name string, _ time.Duration, f bool) {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			if f {
				failed[name]++
			}
		},
		OnConn: func(d int) {
			mu.Lock()
			defer mu.Unlock()
			conns += d
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- rs.Serve(ln) }()
	defer func() {
		require.NoError(t, rs.Shutdown(context.Background()))
		require.NoError(t, <-done)
	}()
	ts := &testServer{addr: ln.Addr().String()}
	rc := ts.dial(t)
	rc.send(cmd("PING") + cmd("PING", "a", "b") + cmd("SELECT", "99") + cmd("CLIENT", "ID") + cmd("NOSUCH"))
	_ = rc.read(len("+PONG\r\n-ERR wrong number of arguments for 'ping' command\r\n-ERR DB index is out of range\r\n:1\r\n"))
	_, err = rc.r.ReadString('\n')
	require.NoError(t, err)

	mu.Lock()
	// PING's arity (-1) lets "PING a b" run: the handler refuses it, so it
	// is a failed call, as in Redis.
	require.Equal(t, map[string]int{"ping": 2, "select": 1, "client|id": 1}, calls)
	require.Equal(t, map[string]int{"ping": 1, "select": 1}, failed)
	require.Equal(t, 1, conns)
	mu.Unlock()

	rc.send(cmd("INFO", "commandstats", "stats"))
	info := readBulk(t, rc)
	require.Regexp(t, `cmdstat_ping:calls=2,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1\r\n`, info)
	require.Regexp(t, `cmdstat_select:calls=1,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1\r\n`, info)
	require.Contains(t, info, "total_commands_processed:4\r\n")
	require.Contains(t, info, "total_connections_received:1\r\n")

	rc.send(cmd("CONFIG", "RESETSTAT") + cmd("INFO", "commandstats"))
	rc.expect("+OK\r\n")
	require.Regexp(t, `^# Commandstats\r\ncmdstat_config\|resetstat:calls=1,`, readBulk(t, rc))

	rc.send(cmd("QUIT"))
	rc.expect("+OK\r\n")
	rc.expectClosed()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return conns == 0
	}, 5*time.Second, 10*time.Millisecond)
}

// A blocking command's context ends when its client hangs up, so it stops
// waiting (and consumes nothing); while the client stays, it keeps waiting.
func TestBlockingCommandSeesHangup(t *testing.T) {
	started := make(chan struct{}, 4)
	ended := make(chan error, 4)
	wait := &commands.Command{Name: "test.bwait", Arity: 2, Flags: []string{commands.FlagBlocking}, Run: func(c *commands.Ctx) {
		c.Park()
		started <- struct{}{}
		d, _ := time.ParseDuration(string(c.Args[1]))
		select {
		case <-c.Done():
			ended <- c.Err()
			c.W.Error("ERR canceled")
		case <-time.After(d):
			ended <- nil
			c.W.Simple("TIMEOUT")
		}
	}}
	ts := start(t, commands.Config{}, wait)

	rc := ts.dial(t)
	rc.send(cmd("test.bwait", "1m"))
	<-started
	require.NoError(t, rc.c.Close())
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked command did not see its client hang up")
	}

	// A live client is not cancelled, and its connection reads normally
	// afterwards, pipelined requests included.
	rc = ts.dial(t)
	rc.send(cmd("test.bwait", "20ms") + cmd("PING"))
	rc.expect("+TIMEOUT\r\n+PONG\r\n")
	require.NoError(t, <-ended)
	rc.send(cmd("test.bwait", "1ms"))
	rc.expect("+TIMEOUT\r\n")
}

func TestMaxClients(t *testing.T) {
	ts := start(t, commands.Config{MaxClients: 2})
	a, b := ts.dial(t), ts.dial(t)
	a.send(cmd("PING"))
	a.expect("+PONG\r\n")
	b.send(cmd("PING"))
	b.expect("+PONG\r\n")
	c := ts.dial(t)
	c.expect("-ERR max number of clients reached\r\n")
	c.expectClosed()
	a.send(cmd("INFO", "stats", "clients"))
	info := readBulk(t, a)
	require.Contains(t, info, "rejected_connections:1\r\n")
	require.Contains(t, info, "maxclients:2\r\n")

	// Raising the limit admits new clients at once.
	a.send(cmd("CONFIG", "SET", "maxclients", "3"))
	a.expect("+OK\r\n")
	d := ts.dial(t)
	d.send(cmd("PING"))
	d.expect("+PONG\r\n")
}

// Shutdown does not wait out a blocking command's timeout: the command stops
// waiting at once, replies, and the connection closes.
func TestShutdownEndsBlockingWaits(t *testing.T) {
	started := make(chan struct{}, 1)
	wait := &commands.Command{Name: "test.bwait", Arity: 1, Flags: []string{commands.FlagBlocking}, Run: func(c *commands.Ctx) {
		c.Park()
		started <- struct{}{}
		select {
		case <-c.Done():
			c.W.Nil()
		case <-time.After(time.Minute):
			c.W.Simple("TIMEOUT")
		}
	}}
	ts := start(t, commands.Config{}, wait)
	rc := ts.dial(t)
	rc.send(cmd("test.bwait"))
	<-started
	require.NoError(t, ts.rs.Shutdown(context.Background()))
	rc.expect("$-1\r\n")
	rc.expectClosed()
}

// A Shutdown that wins the race with Serve must not leave Serve accepting
// forever (a server stopped before any client came hung its owner).
func TestShutdownBeforeServe(t *testing.T) {
	rs := resp.New(&commands.Server{Table: commands.NewTable()}, resp.Options{})
	require.NoError(t, rs.Shutdown(context.Background()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() { done <- rs.Serve(ln) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve after Shutdown kept serving")
	}
}

// farListener makes every accepted connection look as if it came from a
// remote host, so protected mode can be tested over loopback.
type farListener struct{ net.Listener }

type farConn struct{ net.Conn }

func (farConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}
}

func (l farListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return farConn{c}, nil
}

func TestProtectedMode(t *testing.T) {
	tests := []struct {
		name   string
		cfg    commands.Config
		denied bool
	}{
		{name: "remote client, no password", denied: true},
		{name: "remote client, password set", cfg: commands.Config{RequirePass: "pw"}},
		{name: "protected mode off", cfg: commands.Config{Unprotected: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &commands.Server{Table: commands.NewTable(), Config: tc.cfg}
			rs := resp.New(srv, resp.Options{})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			done := make(chan struct{})
			go func() { _ = rs.Serve(farListener{ln}); close(done) }()
			t.Cleanup(func() { _ = rs.Shutdown(context.Background()); <-done })

			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write([]byte("PING\r\n"))
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			line, err := bufio.NewReader(c).ReadString('\n')
			require.NoError(t, err)
			if tc.denied {
				require.Equal(t, "-"+commands.MsgProtectedMode+"\r\n", line)
				return
			}
			if tc.cfg.RequirePass != "" {
				require.Equal(t, "-"+commands.MsgNoAuth+"\r\n", line)
				return
			}
			require.Equal(t, "+PONG\r\n", line)
		})
	}
}

// writeLog records the size of every write of the connections it accepts.
type writeLog struct {
	net.Listener
	mu     sync.Mutex
	writes []int
}

type loggedConn struct {
	net.Conn
	log *writeLog
}

func (l *writeLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return loggedConn{c, l}, nil
}

func (c loggedConn) Write(b []byte) (int, error) {
	c.log.mu.Lock()
	c.log.writes = append(c.log.writes, len(b))
	c.log.mu.Unlock()
	return c.Conn.Write(b)
}

func (l *writeLog) take() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes
	l.writes = nil
	return w
}

// The replies to the requests of one read go out in one write; a pipeline
// whose replies exceed the output bound goes out in several, in order.
func TestRepliesOneWritePerRead(t *testing.T) {
	srv := &commands.Server{Table: commands.NewTable()}
	rs := resp.New(srv, resp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	log := &writeLog{Listener: ln}
	done := make(chan struct{})
	go func() { _ = rs.Serve(log); close(done) }()
	t.Cleanup(func() { _ = rs.Shutdown(context.Background()); <-done })
	rc := (&testServer{addr: ln.Addr().String()}).dial(t)

	batch := strings.Repeat(cmd("PING"), 15) + cmd("ECHO", "last")
	rc.send(batch)
	rc.expect(strings.Repeat("+PONG\r\n", 15) + "$4\r\nlast\r\n")
	require.Equal(t, []int{15*7 + 10}, log.take())

	val := strings.Repeat("v", 1000)
	rc.send(strings.Repeat(cmd("ECHO", val), 200))
	rc.expect(strings.Repeat("$1000\r\n"+val+"\r\n", 200))
	writes := log.take()
	require.Greater(t, len(writes), 1)
	for _, n := range writes {
		require.LessOrEqual(t, n, 64*1024+1009)
	}
}

// TestCommandStatsSeePipelinedCalls checks when a connection's calls reach
// INFO commandstats (a connection adds its calls in runs, see
// commands.Conn.FlushStats): a call counts for any command after it on its
// connection, and for every connection once its reply was written.
func TestCommandStatsSeePipelinedCalls(t *testing.T) {
	ts := start(t, commands.Config{})
	a, b := ts.dial(t), ts.dial(t)
	calls := func(info, name string) int {
		m := regexp.MustCompile(`cmdstat_` + regexp.QuoteMeta(name) + `:calls=(\d+),`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		return n
	}
	reset := func(rc *rawConn) {
		rc.send(cmd("CONFIG", "RESETSTAT"))
		rc.expect("+OK\r\n")
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"same pipeline sees earlier calls", func(t *testing.T) {
			a.send(cmd("ECHO", "x") + cmd("ECHO", "y") + cmd("ECHO", "z") + cmd("INFO", "commandstats"))
			a.expect("$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n")
			require.Equal(t, 3, calls(readBulk(t, a), "echo"))
		}},
		{"INFO after INFO counts the first", func(t *testing.T) {
			a.send(cmd("INFO", "commandstats") + cmd("INFO", "commandstats"))
			require.Equal(t, 0, calls(readBulk(t, a), "info"))
			require.Equal(t, 1, calls(readBulk(t, a), "info"))
		}},
		{"RESETSTAT clears calls pipelined before it", func(t *testing.T) {
			a.send(cmd("PING") + cmd("PING") + cmd("CONFIG", "RESETSTAT") + cmd("INFO", "commandstats"))
			a.expect("+PONG\r\n+PONG\r\n+OK\r\n")
			info := readBulk(t, a)
			require.Equal(t, 0, calls(info, "ping"))
			require.Equal(t, 1, calls(info, "config|resetstat"))
		}},
		{"other connections see calls once replied", func(t *testing.T) {
			a.send(strings.Repeat(cmd("ECHO", "x"), 5))
			a.expect(strings.Repeat("$1\r\nx\r\n", 5))
			b.send(cmd("INFO", "commandstats"))
			require.Equal(t, 5, calls(readBulk(t, b), "echo"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(a)
			tc.run(t)
		})
	}
}

// TestStoreStatsSeePipelinedRequests checks when a connection's store
// requests reach the request statistics (they wait in the connection's
// dynastore.Tally): all of a pipeline's once its replies are written, and
// those of a blocking command as they happen, not when it replies.
func TestStoreStatsSeePipelinedRequests(t *testing.T) {
	stats := dynastore.NewStats()
	ts := serve(t, &commands.Server{
		Table: commands.NewTable(),
		Store: model.On(memory.New(memory.Options{Observer: stats})),
		Stats: stats,
	})
	a, b := ts.dial(t), ts.dial(t)

	a.send(cmd("SET", "k", "v") + strings.Repeat(cmd("GET", "k"), 5) + cmd("DEL", "k"))
	a.expect("+OK\r\n" + strings.Repeat("$1\r\nv\r\n", 5) + ":1\r\n")
	require.Equal(t, int64(1), stats.Requests("set"))
	require.Equal(t, int64(5), stats.Requests("get", dynastore.OpGetItem))
	require.Equal(t, int64(1), stats.Requests("del"))

	a.send(cmd("BLPOP", "q", "0"))
	require.Eventually(t, func() bool { return stats.Requests("blpop") > 0 }, 5*time.Second, 10*time.Millisecond,
		"a blocked command's first attempt counts before it replies")
	b.send(cmd("RPUSH", "q", "x"))
	b.expect(":1\r\n")
	a.expect("*2\r\n$1\r\nq\r\n$1\r\nx\r\n")
}

// prefetchLog is a memory store that records the keys of every Prefetch,
// a replaced item's with a "!".
type prefetchLog struct {
	*memory.Store
	mu   sync.Mutex
	keys []string
}

func (p *prefetchLog) Prefetch(reads, replaced []dynastore.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range reads {
		p.keys = append(p.keys, string(k.PK[2:]))
	}
	for _, k := range replaced {
		p.keys = append(p.keys, "!"+string(k.PK[2:]))
	}
	p.Store.Prefetch(reads, replaced)
}

func (p *prefetchLog) taken() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys
}

// A pipeline's reads and the items its SETs replace are handed to the
// store's Prefetch before they run, as far as they have arrived whole; a
// lone request and other writes are not.
func TestPipelinePrefetch(t *testing.T) {
	st := &prefetchLog{Store: memory.New(memory.Options{})}
	ts := serve(t, &commands.Server{Table: commands.NewTable(), Store: model.On(st)})
	c := ts.dial(t)

	c.send(cmd("GET", "a"))
	c.expect("$-1\r\n")
	c.send(cmd("SET", "a", "1") + cmd("APPEND", "b", "2"))
	c.expect("+OK\r\n:1\r\n")
	require.Empty(t, st.taken(), "one key left: nothing to overlap")

	c.send(cmd("GET", "a") + cmd("SET", "c", "3") + cmd("GET", "b") + cmd("DEL", "x") + cmd("EXISTS", "zz") + "*2\r\n$3\r\nGET\r\n$1\r")
	c.expect("$1\r\n1\r\n+OK\r\n$1\r\n2\r\n:0\r\n:0\r\n")
	require.Equal(t, []string{"a", "b", "zz", "!c"}, st.taken())
	c.send("\nc\r\n")
	c.expect("$1\r\n3\r\n")
	require.Equal(t, []string{"a", "b", "zz", "!c"}, st.taken(), "a request alone in its read")
}

// clockCommands are test commands: test.now replies with the command's
// clock reading (ns), test.sleep sleeps 20 ms.
func clockCommands() []*commands.Command {
	return []*commands.Command{
		{Name: "test.now", Arity: 1, Run: func(c *commands.Ctx) { c.W.Int(c.Now().UnixNano()) }},
		{Name: "test.sleep", Arity: 1, Run: func(c *commands.Ctx) {
			time.Sleep(20 * time.Millisecond)
			c.W.Simple("OK")
		}},
	}
}

// A command of a pipeline takes the end of the command before it as its
// clock reading; one after the connection waited for the client reads the
// clock again.
func TestPipelineClock(t *testing.T) {
	ts := start(t, commands.Config{}, clockCommands()...)
	rc := ts.dial(t)
	readInt := func() int64 {
		t.Helper()
		line, err := rc.r.ReadString('\n')
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(line, ":"), "%q", line)
		n, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
		require.NoError(t, err)
		return n
	}
	rc.send(cmd("test.now") + cmd("test.sleep") + cmd("test.now") + cmd("test.now"))
	first := readInt()
	rc.expect("+OK\r\n")
	second, third := readInt(), readInt()
	require.GreaterOrEqual(t, second-first, int64(20*time.Millisecond), "after the sleep: its end, not its start")
	require.GreaterOrEqual(t, third, second)

	time.Sleep(30 * time.Millisecond)
	rc.send(cmd("test.now"))
	require.GreaterOrEqual(t, readInt()-third, int64(30*time.Millisecond), "read again after waiting for the client")
}
