package resp_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
)

// trStep is one command of a client tracking scenario: conn sends cmd
// ($id0.. name the connections' ids), then the replies and pushes each
// connection has are read, the sender's first: reads, or reads2/reads3
// for one protocol when they differ.
type trStep struct {
	conn           int
	cmd            string
	reads          map[int]int
	reads2, reads3 map[int]int
}

// Special steps: flagsOf reads CLIENT LIST's flags and redir of the
// connection conn; waitGone waits until connection conn has left the
// server's list.
const (
	flagsOf  = "flags-of"
	waitGone = "wait-gone"
)

func r(conn, n int) map[int]int { return map[int]int{conn: n} }

// Connection 0 tracks, 1 writes, 2 is a redirect target.
var trackingScenario = []trStep{
	// The default mode: a key read is invalidated once, when it changes.
	{conn: 0, cmd: "CLIENT TRACKING on", reads: r(0, 1)},
	{conn: 0, cmd: flagsOf},
	{conn: 0, cmd: "GET a", reads: r(0, 1)},
	{conn: 0, cmd: "MGET b c", reads: r(0, 1)},
	{conn: 0, cmd: "STRLEN d", reads: r(0, 1)},
	{conn: 1, cmd: "INFO", reads: r(1, 1)},
	{conn: 1, cmd: "SET a 1", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "SET a 2", reads: r(1, 1)},
	{conn: 1, cmd: "MSET b 1 c 2 a 3", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 2}},
	{conn: 1, cmd: "DEL nothing", reads: r(1, 1)},
	{conn: 1, cmd: "INCR d", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	// The client's own change: after its reply.
	{conn: 0, cmd: "GET a", reads: r(0, 1)},
	{conn: 0, cmd: "SET a x", reads: r(0, 1), reads3: r(0, 2)},
	// NOLOOP: not its own changes; the key is forgotten all the same.
	{conn: 0, cmd: "CLIENT TRACKING on NOLOOP", reads: r(0, 1)},
	{conn: 0, cmd: "GET a", reads: r(0, 1)},
	{conn: 0, cmd: "APPEND a y", reads: r(0, 1)},
	{conn: 1, cmd: "SET a 5", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT GETREDIR", reads: r(0, 1)},
	// A transaction's changes, after EXEC.
	{conn: 0, cmd: "GET h", reads: r(0, 1)},
	{conn: 1, cmd: "MULTI", reads: r(1, 1)},
	{conn: 1, cmd: "SET h 1", reads: r(1, 1)},
	{conn: 1, cmd: "INCRBY h 2", reads: r(1, 1)},
	{conn: 1, cmd: "EXEC", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	// A flush invalidates everything, the client's own flush included.
	{conn: 0, cmd: "GET a", reads: r(0, 1)},
	{conn: 1, cmd: "FLUSHALL", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "FLUSHDB", reads: r(0, 1), reads3: r(0, 2)},
	{conn: 1, cmd: "SET a 1", reads: r(1, 1)},
	{conn: 1, cmd: "INFO", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},
	{conn: 0, cmd: "GET a", reads: r(0, 1)},
	{conn: 1, cmd: "SET a 2", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT GETREDIR", reads: r(0, 1)},

	// OPTIN: only after CLIENT CACHING yes, for the next command.
	{conn: 0, cmd: "CLIENT TRACKING on OPTIN", reads: r(0, 1)},
	{conn: 0, cmd: "GET x", reads: r(0, 1)},
	{conn: 1, cmd: "SET x 1", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT CACHING yes", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "GET x", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 1, cmd: "SET x 2", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "CLIENT CACHING yes", reads: r(0, 1)},
	{conn: 0, cmd: "PING", reads: r(0, 1)},
	{conn: 0, cmd: "GET y", reads: r(0, 1)},
	{conn: 1, cmd: "SET y 1", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT CACHING yes", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT ID", reads: r(0, 1)},
	{conn: 0, cmd: "GET z", reads: r(0, 1)},
	{conn: 1, cmd: "SET z 1", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "MULTI", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT CACHING yes", reads: r(0, 1)},
	{conn: 0, cmd: "GET w", reads: r(0, 1)},
	{conn: 0, cmd: "EXEC", reads: r(0, 1)},
	{conn: 0, cmd: "GET v", reads: r(0, 1)},
	{conn: 1, cmd: "MSET w 1 v 1", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "CLIENT TRACKING on OPTOUT", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},
	// OPTOUT: unless after CLIENT CACHING no.
	{conn: 0, cmd: "CLIENT TRACKING on OPTOUT", reads: r(0, 1)},
	{conn: 0, cmd: "GET x", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT CACHING no", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "GET y", reads: r(0, 1)},
	{conn: 1, cmd: "SET y 2", reads: r(1, 1)},
	{conn: 1, cmd: "SET x 3", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},

	// BCAST: every change under the prefixes, a message per prefix.
	{conn: 0, cmd: "CLIENT TRACKING on BCAST PREFIX b PREFIX a", reads: r(0, 1)},
	{conn: 0, cmd: flagsOf},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 1, cmd: "MSET a1 1 b1 2 c1 3 a2 4", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 2}},
	{conn: 1, cmd: "SET c 1", reads: r(1, 1)},
	{conn: 1, cmd: "DEL a2 a1 a3", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "SET a3 x", reads: r(0, 1), reads3: r(0, 2)},
	{conn: 0, cmd: "CLIENT TRACKING on BCAST NOLOOP PREFIX c", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "SET c2 x", reads: r(0, 1)},
	{conn: 1, cmd: "SET c3 x", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "FLUSHALL", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 1, cmd: "INFO", reads: r(1, 1)},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING on BCAST", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 1, cmd: "SET zz 1", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: "CLIENT TRACKING on", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},

	// REDIRECT: a RESP3 client gets pushes; a RESP2 one only once
	// subscribed, as messages on __redis__:invalidate.
	{conn: 0, cmd: "CLIENT TRACKING on REDIRECT $id2", reads: r(0, 1)},
	{conn: 0, cmd: "GET q", reads: r(0, 1)},
	{conn: 1, cmd: "SET q 1", reads: r(1, 1), reads3: map[int]int{1: 1, 2: 1}},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},
	{conn: 2, cmd: "SUBSCRIBE __redis__:invalidate", reads: r(2, 1)},
	{conn: 0, cmd: "CLIENT TRACKING on REDIRECT $id2", reads: r(0, 1)},
	{conn: 0, cmd: flagsOf},
	{conn: 0, cmd: "CLIENT GETREDIR", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "GET r", reads: r(0, 1)},
	{conn: 1, cmd: "SET r 1", reads: map[int]int{1: 1, 2: 1}},
	{conn: 0, cmd: "GET r", reads: r(0, 1)},
	{conn: 0, cmd: "SET r 2", reads: r(0, 1), reads2: map[int]int{0: 1, 2: 1}, reads3: map[int]int{0: 1, 2: 1}},
	{conn: 1, cmd: "FLUSHALL", reads: map[int]int{1: 1, 2: 1}},
	{conn: 0, cmd: "CLIENT TRACKING on BCAST REDIRECT $id2", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING off", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING on BCAST REDIRECT $id2", reads: r(0, 1)},
	{conn: 1, cmd: "SET r 3", reads: map[int]int{1: 1, 2: 1}},
	// The redirect client gone: the redirect is broken (told on RESP3).
	{conn: 2, cmd: "QUIT", reads: r(2, 1)},
	{conn: 2, cmd: waitGone},
	{conn: 1, cmd: "SET r 4", reads: r(1, 1), reads3: map[int]int{1: 1, 0: 1}},
	{conn: 0, cmd: flagsOf},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT GETREDIR", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKING on BCAST", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 0, cmd: "RESET", reads: r(0, 1)},
	{conn: 0, cmd: "CLIENT TRACKINGINFO", reads: r(0, 1)},
	{conn: 1, cmd: "INFO", reads: r(1, 1)},
}

var infoTracking = regexp.MustCompile(`tracking_[a-z_]+:\d+`)

// runTrackingScenario returns every reply and push read, in order, each
// prefixed by its step and the connection that read it; the connections'
// ids read as $idN.
func runTrackingScenario(t *testing.T, addr string, proto int) []string {
	t.Helper()
	var conns [3]*compat.Conn
	var ids [3]string
	for i := range conns {
		c, err := compat.Dial(addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		if proto == 3 {
			_, err := c.DoStrings("HELLO", "3")
			require.NoError(t, err)
		}
		id, err := c.DoStrings("CLIENT", "ID")
		require.NoError(t, err)
		ids[i] = strings.TrimSuffix(strings.TrimPrefix(string(id), ":"), "\r\n")
		conns[i] = c
	}
	// Ids are in CLIENT's replies, CLIENT LIST and tracking-redir-broken.
	normalize := func(s string) string {
		if !strings.HasPrefix(s, "CLIENT") && !strings.HasPrefix(s, "flags") && !strings.Contains(s, "tracking-redir-broken") {
			return s
		}
		for i, id := range ids {
			s = strings.ReplaceAll(s, ":"+id+"\r\n", ":$id"+strconv.Itoa(i)+"\r\n")
			s = strings.ReplaceAll(s, "redir="+id+" ", "redir=$id"+strconv.Itoa(i)+" ")
		}
		return s
	}
	var out []string
	for _, st := range trackingScenario {
		switch st.cmd {
		case flagsOf:
			list, err := conns[1].DoStrings("CLIENT", "LIST", "ID", ids[st.conn])
			require.NoError(t, err)
			fields := regexp.MustCompile(`flags=\S+|redir=\S+`).FindAllString(string(list), -1)
			out = append(out, "flags of "+strconv.Itoa(st.conn)+": "+normalize(strings.Join(fields, " ")+" "))
			continue
		case waitGone:
			for {
				list, err := conns[1].DoStrings("CLIENT", "LIST", "ID", ids[st.conn])
				require.NoError(t, err)
				if !strings.Contains(string(list), "id="+ids[st.conn]+" ") {
					break
				}
			}
			continue
		}
		reads := st.reads
		if proto == 2 && st.reads2 != nil {
			reads = st.reads2
		}
		if proto == 3 && st.reads3 != nil {
			reads = st.reads3
		}
		args := strings.Fields(strings.NewReplacer("$id0", ids[0], "$id1", ids[1], "$id2", ids[2]).Replace(st.cmd))
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		require.NoError(t, conns[st.conn].Send(bs))
		for _, c := range []int{st.conn, (st.conn + 1) % 3, (st.conn + 2) % 3} {
			for range reads[c] {
				got, err := conns[c].ReadRaw()
				require.NoError(t, err, "%s: reading conn %d", st.cmd, c)
				s := string(got)
				if args[0] == "INFO" {
					s = strings.Join(infoTracking.FindAllString(s, -1), " ")
				}
				out = append(out, normalize(st.cmd+" -> "+strconv.Itoa(c)+": "+s))
			}
		}
	}
	return out
}

// TestTrackingLikeRedis runs the scenario on redis-server and on redamo,
// over RESP2 and RESP3, and compares every byte read (INFO's tracking
// fields only).
func TestTrackingLikeRedis(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		for _, proto := range []int{2, 3} {
			t.Run(b.Name+"/resp"+strconv.Itoa(proto), func(t *testing.T) {
				ref := compat.ReferenceRedis(t, "")
				want := runTrackingScenario(t, ref, proto)
				got := runTrackingScenario(t, b.Start(t).Addr, proto)
				require.Equal(t, want, got)
			})
		}
	}
}

// linkedPeers stands for the bus between two instances: what one
// dispatcher sends, the other receives (without its origin, which never
// leaves a process), and the interest each declared.
type linkedPeers struct {
	mu       sync.Mutex
	to       *events.Dispatcher
	interest *atomic.Bool // the other instance's
	mine     atomic.Bool
	declared []bool
}

func (p *linkedPeers) Send(e events.Event, all bool) {
	if all || p.interest.Load() {
		e.Origin = nil
		p.to.Receive(e)
	}
}

func (p *linkedPeers) Interest(_ context.Context, on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mine.Store(on)
	p.declared = append(p.declared, on)
	return nil
}

func (p *linkedPeers) Anyone() bool                              { return p.interest.Load() }
func (p *linkedPeers) Flags(context.Context, events.Class) error { return nil }

// TestTrackingAcrossInstances: two instances on one store, their key
// events linked as the bus links them. A client of the first is told of
// the changes made through the second: a key it read (once, NOLOOP or
// not), a BCAST prefix, a flush; the first instance declares its interest
// while a client tracks, and withdraws it when none does.
func TestTrackingAcrossInstances(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) { trackAcrossInstances(t, b) })
	}
}

func trackAcrossInstances(t *testing.T, b testserver.Backend) {
	// Without testserver's bus: linkedPeers links them instead.
	a, other := testserver.Start(t, b.Store), testserver.Start(t, b.Store)
	da, db := a.Srv.KeyEvents(), other.Srv.KeyEvents()
	pa, pb := &linkedPeers{to: db}, &linkedPeers{to: da}
	pa.interest, pb.interest = &pb.mine, &pa.mine
	da.SetPeers(pa)
	db.SetPeers(pb)
	dial := func(addr string) *compat.Conn {
		c, err := compat.Dial(addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	tracker, writer := dial(a.Addr), dial(other.Addr)
	do := func(c *compat.Conn, want string, args ...string) {
		t.Helper()
		got, err := c.DoStrings(args...)
		require.NoError(t, err)
		require.Equal(t, want, string(got), "%v", args)
	}
	pushed := func(want string) {
		t.Helper()
		got, err := tracker.ReadRaw()
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	_, err := tracker.DoStrings("HELLO", "3")
	require.NoError(t, err)
	do(tracker, "+OK\r\n", "CLIENT", "TRACKING", "on", "NOLOOP")
	require.Equal(t, []bool{true}, pa.declared)
	do(tracker, "_\r\n", "GET", "k")

	do(writer, "+OK\r\n", "SET", "k", "1")
	pushed(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	// Once: the key is read again before it is invalidated again.
	do(writer, "+OK\r\n", "SET", "k", "2")
	do(tracker, "$1\r\n2\r\n", "GET", "k")
	do(writer, ":1\r\n", "DEL", "k")
	pushed(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")

	do(writer, "+OK\r\n", "FLUSHALL")
	pushed(">2\r\n$10\r\ninvalidate\r\n_\r\n")

	// No client tracks and the table is empty: no more interest.
	do(tracker, "+OK\r\n", "CLIENT", "TRACKING", "off")
	require.Equal(t, []bool{true, false}, pa.declared)
	do(tracker, "+OK\r\n", "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:")
	do(writer, "+OK\r\n", "MSET", "user:1", "a", "other", "b", "user:2", "c")
	// Another instance's events come one by one.
	pushed(">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:1\r\n")
	pushed(">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:2\r\n")

	do(tracker, "+RESET\r\n", "RESET")
	require.Equal(t, []bool{true, false, true, false}, pa.declared)
	do(writer, "+OK\r\n", "SET", "user:3", "x")
	do(tracker, "+PONG\r\n", "PING")
}

// TestTrackingTableMaxKeys: past tracking-table-max-keys a key leaves the
// table, and its client is told as if it changed (which key Redis picks
// at random); 0 lifts the limit.
func TestTrackingTableMaxKeys(t *testing.T) {
	ts := serve(t, &commands.Server{Table: commands.NewTable(), Store: model.On(memory.New(memory.Options{}))})
	c, err := compat.Dial(ts.addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	do := func(args ...string) string {
		t.Helper()
		got, err := c.DoStrings(args...)
		require.NoError(t, err)
		return string(got)
	}
	trackedKeys := func() string {
		t.Helper()
		return regexp.MustCompile(`tracking_total_keys:\d+`).FindString(do("INFO", "stats"))
	}
	do("HELLO", "3")
	require.Equal(t, "+OK\r\n", do("CONFIG", "SET", "tracking-table-max-keys", "1"))
	require.Equal(t, "%1\r\n$23\r\ntracking-table-max-keys\r\n$1\r\n1\r\n", do("CONFIG", "GET", "tracking-table-max-keys"))
	require.Equal(t, "+OK\r\n", do("CLIENT", "TRACKING", "on"))
	require.Equal(t, "_\r\n", do("GET", "a"))
	require.Equal(t, "_\r\n", do("GET", "b"))
	push, err := c.ReadRaw()
	require.NoError(t, err)
	require.Contains(t, []string{
		">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n",
		">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nb\r\n",
	}, string(push))
	require.Equal(t, "tracking_total_keys:1", trackedKeys())

	require.Equal(t, "+OK\r\n", do("CONFIG", "SET", "tracking-table-max-keys", "0"))
	require.Equal(t, "*3\r\n_\r\n_\r\n_\r\n", do("MGET", "c", "d", "e"))
	require.Equal(t, "tracking_total_keys:4", trackedKeys())
}

// TestTrackingCacheStaysCorrect: a client of one instance keeps a cache
// of what it reads, dropping a key when told; clients of another instance
// overwrite the keys meanwhile. Once the writes are over and the
// invalidations read, every cached value is the stored one: no write
// slips between a read and its key's remembering.
func TestTrackingCacheStaysCorrect(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			a, other := testserver.Start(t, b.Store), testserver.Start(t, b.Store)
			da, db := a.Srv.KeyEvents(), other.Srv.KeyEvents()
			pa, pb := &linkedPeers{to: db}, &linkedPeers{to: da}
			pa.interest, pb.interest = &pb.mine, &pa.mine
			da.SetPeers(pa)
			db.SetPeers(pb)
			cacheCheck(t, a.Addr, other.Addr)
		})
	}
}

func cacheCheck(t *testing.T, trackerAddr, writerAddr string) {
	keys := []string{"k0", "k1", "k2", "k3"}
	c, err := compat.Dial(trackerAddr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	cache := map[string]string{}
	invalidate := regexp.MustCompile(`\$(\d+)\r\n`)
	// reply reads the reply to the command sent, handling the pushes
	// before it.
	reply := func() string {
		for {
			got, err := c.ReadRaw()
			require.NoError(t, err)
			s := string(got)
			if !strings.HasPrefix(s, ">") {
				return s
			}
			// >2 $10 invalidate *n $len key ...
			body := s[strings.Index(s, "invalidate\r\n")+len("invalidate\r\n"):]
			if strings.HasPrefix(body, "_") {
				clear(cache)
				continue
			}
			for _, m := range invalidate.FindAllStringSubmatchIndex(body, -1) {
				n, _ := strconv.Atoi(body[m[2]:m[3]])
				delete(cache, body[m[1]:m[1]+n])
			}
		}
	}
	send := func(args ...string) string {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		require.NoError(t, c.Send(bs))
		return reply()
	}
	send("HELLO", "3")
	require.Equal(t, "+OK\r\n", send("CLIENT", "TRACKING", "on"))

	stop := compat.Overwrite(t, writerAddr, keys, 2)
	reads := 0
	for i := range 2000 {
		k := keys[i%len(keys)]
		if _, ok := cache[k]; ok {
			send("PING") // the invalidations come with the replies
			continue
		}
		cache[k] = send("GET", k)
		reads++
	}
	t.Logf("%d reads for 2000 lookups", reads)
	stop()
	// Every invalidation was queued before the writers' replies; it is
	// out by the second PONG at the latest.
	require.Equal(t, "+PONG\r\n", send("PING"))
	require.Equal(t, "+PONG\r\n", send("PING"))
	for k, v := range cache {
		require.Equal(t, v, send("GET", k), "cached %s", k)
	}
}
