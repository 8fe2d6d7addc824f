package commands_test

// Server tests of MONITOR, SLOWLOG and LATENCY over raw TCP, on every
// backend: what a monitor is sent is bytes on the wire, and what the logs
// hold depends on every path a command takes (pipelines, EXEC, scripts).

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// rawClient is one raw RESP connection.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, s *testserver.Server) *rawClient {
	c := s.Dial(t)
	// A reply or line that never comes fails the test, not hangs it.
	require.NoError(t, c.SetDeadline(time.Now().Add(testserver.ClientReadTimeout)))
	return &rawClient{t: t, conn: c, r: bufio.NewReader(c)}
}

// addr is the client's address as the server sees it.
func (c *rawClient) addr() string { return c.conn.LocalAddr().String() }

func (c *rawClient) send(args ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := c.conn.Write([]byte(b.String()))
	require.NoError(c.t, err)
}

func (c *rawClient) read() string {
	c.t.Helper()
	b, err := testserver.ReadReply(c.r)
	require.NoError(c.t, err)
	return string(b)
}

// do sends a command and returns its raw reply.
func (c *rawClient) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// monitorLine matches one MONITOR line and captures what follows the
// timestamp.
var monitorLine = regexp.MustCompile(`^\+(\d+)\.(\d{6}) (\[.*)\r\n$`)

// next returns a monitor's next line without its timestamp.
func (c *rawClient) next() string {
	c.t.Helper()
	line := c.read()
	m := monitorLine.FindStringSubmatch(line)
	require.NotNil(c.t, m, "not a MONITOR line: %q", line)
	return m[3]
}

func TestMonitorOverTCP(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			other := b.Start(t) // another instance on the same table
			mon := dialRaw(t, s)
			a, c := dialRaw(t, s), dialRaw(t, s)
			elsewhere := dialRaw(t, other)

			require.Equal(t, "+OK\r\n", mon.do("MONITOR"))
			require.Regexp(t, `addr=`+regexp.QuoteMeta(mon.addr())+` .* flags=O `, a.do("CLIENT", "LIST"))
			require.Equal(t, "+OK\r\n", a.do("SET", "k", "v w"))
			require.Equal(t, `[0 `+a.addr()+`] "SET" "k" "v w"`, mon.next())
			require.Equal(t, "$3\r\nv w\r\n", c.do("get", "k"))
			require.Equal(t, `[0 `+c.addr()+`] "get" "k"`, mon.next())

			// Another instance's commands are not shown: the next line is
			// this instance's.
			require.Equal(t, "+OK\r\n", elsewhere.do("SET", "k2", "x"))
			require.Equal(t, "+PONG\r\n", a.do("PING"))
			require.Equal(t, `[0 `+a.addr()+`] "PING"`, mon.next())

			// Bytes quoted as Redis's sdscatrepr; SELECT shows the db it selected.
			require.Equal(t, "+OK\r\n", a.do("SELECT", "3"))
			require.Equal(t, `[3 `+a.addr()+`] "SELECT" "3"`, mon.next())
			require.Equal(t, "+OK\r\n", a.do("SET", "\x00\xff\"\\\r\n\t", "1"))
			require.Equal(t, `[3 `+a.addr()+`] "SET" "\x00\xff\"\\\r\n\t" "1"`, mon.next())

			// A transaction: MULTI, its commands, then EXEC; queueing shows nothing.
			require.Equal(t, "+OK\r\n", c.do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", c.do("INCR", "n"))
			require.Equal(t, "+QUEUED\r\n", c.do("INCR", "n"))
			require.Equal(t, "*2\r\n:1\r\n:2\r\n", c.do("EXEC"))
			require.Equal(t, `[0 `+c.addr()+`] "MULTI"`, mon.next())
			require.Equal(t, `[0 `+c.addr()+`] "INCR" "n"`, mon.next())
			require.Equal(t, `[0 `+c.addr()+`] "INCR" "n"`, mon.next())
			require.Equal(t, `[0 `+c.addr()+`] "EXEC"`, mon.next())

			// A script: EVAL first, then its commands as [db lua].
			require.Equal(t, "$3\r\nv w\r\n", c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k"))
			require.Equal(t, `[0 `+c.addr()+`] "EVAL" "return redis.call('get', KEYS[1])" "1" "k"`, mon.next())
			require.Equal(t, `[0 lua] "get" "k"`, mon.next())

			// Passwords are redacted; admin commands are not shown.
			require.Contains(t, c.do("AUTH", "secret"), "-ERR AUTH")
			require.Equal(t, `[0 `+c.addr()+`] "AUTH" "(redacted)"`, mon.next())
			require.Contains(t, c.do("HELLO", "2", "AUTH", "u", "pw", "SETNAME", "n"), "-WRONGPASS")
			require.Equal(t, `[0 `+c.addr()+`] "HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"`, mon.next())
			require.Equal(t, "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n", c.do("CONFIG", "GET", "timeout"))
			require.Equal(t, "+PONG\r\n", c.do("PING"))
			require.Equal(t, `[0 `+c.addr()+`] "PING"`, mon.next())

			// MONITOR inside EXEC is refused; a monitor may not touch keys.
			require.Equal(t, "+OK\r\n", c.do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", c.do("MONITOR"))
			require.Equal(t, "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n", c.do("EXEC"))
			require.Equal(t, `[0 `+c.addr()+`] "MULTI"`, mon.next())
			require.Equal(t, `[0 `+c.addr()+`] "EXEC"`, mon.next())
			require.Equal(t, "-ERR Replica can't interact with the keyspace\r\n", mon.do("GET", "k"))
			// A second MONITOR has no reply; the monitor sees its own PING
			// after its reply.
			mon.send("MONITOR")
			require.Equal(t, "+PONG\r\n", mon.do("PING"))
			require.Equal(t, `[0 `+mon.addr()+`] "PING"`, mon.next())

			// A second monitor sees the same lines; RESET ends monitoring.
			mon2 := dialRaw(t, s)
			require.Equal(t, "+OK\r\n", mon2.do("MONITOR"))
			require.Equal(t, ":1\r\n", a.do("EXISTS", "\x00\xff\"\\\r\n\t"))
			want := `[3 ` + a.addr() + `] "EXISTS" "\x00\xff\"\\\r\n\t"`
			require.Equal(t, want, mon.next())
			require.Equal(t, want, mon2.next())
			require.Equal(t, "+RESET\r\n", mon.do("RESET"))
			require.Equal(t, `[0 `+mon.addr()+`] "RESET"`, mon2.next())
			require.Equal(t, "+PONG\r\n", a.do("PING"))
			require.Equal(t, `[3 `+a.addr()+`] "PING"`, mon2.next())
			require.Equal(t, "$3\r\nv w\r\n", mon.do("GET", "k"))
		})
	}
}

func TestSlowlogOverTCP(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			a, c := dialRaw(t, s), dialRaw(t, s)
			// go-redis's handshake comes before the log is reset.
			rdb := s.Client(t)
			require.NoError(t, rdb.Ping(t.Context()).Err())
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "SET", "slowlog-log-slower-than", "0"))
			require.Equal(t, "+OK\r\n", a.do("SLOWLOG", "RESET"))
			require.Equal(t, "+OK\r\n", c.do("CLIENT", "SETNAME", "worker"))
			long := strings.Repeat("x", 130)
			require.Equal(t, "+OK\r\n", c.do("SET", "k", long))
			args := []string{"RPUSH", "l"}
			for i := 0; i < 40; i++ {
				args = append(args, strconv.Itoa(i))
			}
			require.Equal(t, ":40\r\n", a.do(args...))
			require.Equal(t, ":1\r\n", a.do("EVAL", "return redis.call('exists', 'k')", "0"))

			// SLOWLOG RESET, CLIENT SETNAME, SET, RPUSH, EXISTS (from the
			// script), EVAL: newest first.
			require.Equal(t, ":6\r\n", a.do("SLOWLOG", "LEN"))
			entries, err := rdb.SlowLogGet(t.Context(), -1).Result()
			require.NoError(t, err)
			require.Len(t, entries, 7) // and SLOWLOG LEN itself
			for i, e := range entries {
				require.GreaterOrEqual(t, e.Duration.Microseconds(), int64(0))
				require.NotZero(t, e.Time.Unix())
				if i > 0 {
					require.Equal(t, entries[i-1].ID-1, e.ID)
				}
			}
			require.Equal(t, []string{"SLOWLOG", "LEN"}, entries[0].Args)
			require.Equal(t, a.addr(), entries[0].ClientAddr)
			eval := entries[1]
			require.Equal(t, []string{"EVAL", "return redis.call('exists', 'k')", "0"}, eval.Args)
			require.Equal(t, []string{"exists", "k"}, entries[2].Args)
			require.Equal(t, "?:0", entries[2].ClientAddr)
			require.Equal(t, "", entries[2].ClientName)
			rpush := entries[3].Args
			require.Len(t, rpush, 32)
			require.Equal(t, "... (11 more arguments)", rpush[31])
			require.Equal(t, "28", rpush[30])
			set := entries[4]
			require.Equal(t, []string{"SET", "k", strings.Repeat("x", 128) + "... (2 more bytes)"}, set.Args)
			require.Equal(t, c.addr(), set.ClientAddr)
			require.Equal(t, "worker", set.ClientName)
			require.Equal(t, []string{"CLIENT", "SETNAME", "worker"}, entries[5].Args)
			require.Equal(t, "worker", entries[5].ClientName)

			// GET n, a smaller max-len, the threshold off.
			got := a.do("SLOWLOG", "GET", "1")
			require.True(t, strings.HasPrefix(got, "*1\r\n*6\r\n"), got)
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "SET", "slowlog-max-len", "2"))
			require.Equal(t, ":2\r\n", a.do("SLOWLOG", "LEN"))
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "SET", "slowlog-log-slower-than", "-1"))
			require.Equal(t, "+OK\r\n", a.do("SLOWLOG", "RESET"))
			require.Equal(t, "+OK\r\n", a.do("SET", "k", "v"))
			require.Equal(t, ":0\r\n", a.do("SLOWLOG", "LEN"))
			require.Equal(t, "-ERR count should be greater than or equal to -1\r\n", a.do("SLOWLOG", "GET", "-2"))
		})
	}
}

func TestLatencyOverTCP(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			a := dialRaw(t, s)
			require.Equal(t, "*0\r\n", a.do("LATENCY", "LATEST"))
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "SET", "latency-monitor-threshold", "5"))
			// A blocking pop that times out takes at least its timeout:
			// a "command" event of 10 ms or more.
			require.Equal(t, "*-1\r\n", a.do("BLPOP", "nolist", "0.01"))
			latest := a.do("LATENCY", "LATEST")
			m := regexp.MustCompile(`^\*1\r\n\*4\r\n\$7\r\ncommand\r\n:(\d+)\r\n:(\d+)\r\n:(\d+)\r\n$`).FindStringSubmatch(latest)
			require.NotNil(t, m, latest)
			ms, _ := strconv.Atoi(m[2])
			require.GreaterOrEqual(t, ms, 10)
			require.Equal(t, m[2], m[3]) // the only sample is the highest
			history := a.do("LATENCY", "HISTORY", "command")
			require.Equal(t, "*1\r\n*2\r\n:"+m[1]+"\r\n:"+m[2]+"\r\n", history)
			graph := a.do("LATENCY", "GRAPH", "command")
			require.Contains(t, graph, "command - high "+m[2]+" ms, low "+m[2]+" ms (all time high "+m[2]+" ms)")
			require.Contains(t, a.do("LATENCY", "DOCTOR"), "1. command: 1 latency spikes (average "+m[2]+"ms")
			require.Equal(t, ":1\r\n", a.do("LATENCY", "RESET"))
			require.Equal(t, "*0\r\n", a.do("LATENCY", "LATEST"))
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "SET", "latency-monitor-threshold", "0"))

			// Every call is in its command's histogram.
			require.Equal(t, "+OK\r\n", a.do("CONFIG", "RESETSTAT"))
			for i := 0; i < 3; i++ {
				require.Equal(t, "+OK\r\n", a.do("SET", "k", "v"))
			}
			h := a.do("LATENCY", "HISTOGRAM", "set")
			require.Regexp(t, `^\*2\r\n\$3\r\nset\r\n\*4\r\n\$5\r\ncalls\r\n:3\r\n\$14\r\nhistogram_usec\r\n\*\d+\r\n(:\d+\r\n)*:3\r\n$`, h)
		})
	}
}

// TestServerCommandsMakeNoRequests: the persistence and introspection
// commands answer from the instance alone, without a DynamoDB request.
func TestServerCommandsMakeNoRequests(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			a := dialRaw(t, s)
			cmds := [][]string{
				{"SAVE"}, {"BGSAVE"}, {"BGSAVE", "SCHEDULE"}, {"BGREWRITEAOF"}, {"LASTSAVE"},
				{"SWAPDB", "0", "1"}, {"SWAPDB", "2", "2"}, {"SHUTDOWN", "ABORT"},
				{"SLOWLOG", "GET"}, {"SLOWLOG", "LEN"}, {"SLOWLOG", "RESET"},
				{"LATENCY", "LATEST"}, {"LATENCY", "DOCTOR"}, {"LATENCY", "HISTOGRAM"}, {"LATENCY", "RESET"},
			}
			before := b.Stats.Snapshot()
			for _, args := range cmds {
				require.NotEmpty(t, a.do(args...))
			}
			after := b.Stats.Snapshot()
			for _, args := range cmds {
				label := strings.ToLower(args[0])
				if len(args) > 1 && (label == "slowlog" || label == "latency") {
					label += "|" + strings.ToLower(args[1])
				}
				require.Empty(t, requestsSince(before, after, label), "%v", args)
			}
		})
	}
}
