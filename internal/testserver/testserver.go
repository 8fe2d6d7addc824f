// Package testserver runs redamo's RESP server in-process for tests: on a
// free 127.0.0.1 port, around a given store, closed when the test ends. It
// also hands out the storage backends a server test should run on (Stores):
// the memory store always, and a fresh DynamoDB Local table when
// REDAMO_TEST_DYNAMODB_ENDPOINT is set. A server started on a Backend has a
// bus (on a free 127.0.0.1 port), as cmd/redamo's instances of one table
// have, so that pub/sub, key events and notify-keyspace-events reach every
// instance of a test's store.
package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/bus"
	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/resp"
	"github.com/redamo/redamo/scripting"
)

// Server is a running redamo server.
type Server struct {
	// Addr is host:port to connect to.
	Addr string
	// Stats counts the store's requests per command and operation, when the
	// store reports to it (see WithStats and Backend).
	Stats *dynastore.Stats
	// Srv is the shared server state (config, command table, clients).
	Srv *commands.Server
	// RESP is the protocol server.
	RESP *resp.Server
	// Bus links the server to the others on its store (nil: none; see
	// WithBus).
	Bus *bus.Bus

	mu   sync.Mutex
	logs []string
	// killed is set by Kill: the test's end then has nothing to shut down.
	killed bool
}

type config struct {
	stats *dynastore.Stats
	cfg   commands.Config
	clock func() time.Time
	bus   bool
}

// Option configures Start.
type Option func(*config)

// WithStats names the Stats the store reports to, so tests can read
// per-command request counts through Server.Stats.
func WithStats(st *dynastore.Stats) Option { return func(c *config) { c.stats = st } }

// WithRequirePass sets requirepass.
func WithRequirePass(p string) Option { return func(c *config) { c.cfg.RequirePass = p } }

// WithConfig changes the server configuration before start.
func WithConfig(f func(*commands.Config)) Option { return func(c *config) { f(&c.cfg) } }

// WithClock replaces the server's clock (expiry tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithBus gives the server a bus to the other servers of its store that
// have one, as Backend.Start does. Start waits until it is linked to every
// one of them, both ways. A store that records or fails requests sees the
// bus's too (two at start, two per heartbeat, one at the end).
func WithBus() Option { return func(c *config) { c.bus = true } }

// Start serves store on a free 127.0.0.1 port until the test ends; a nil
// store means a fresh memory store reporting to Server.Stats. The server's
// log lines (handler panics and the like) fail the test.
func Start(t testing.TB, store dynastore.Store, opts ...Option) *Server {
	t.Helper()
	cfg := config{cfg: commands.Config{StoreName: "test", TableName: t.Name()}}
	for _, o := range opts {
		o(&cfg)
	}
	if store == nil {
		// A fresh memory store reporting to Stats.
		if cfg.stats == nil {
			cfg.stats = dynastore.NewStats()
		}
		store = memory.New(memory.Options{Observer: cfg.stats})
		cfg.cfg.StoreName = "memory"
	}
	if cfg.stats == nil {
		cfg.stats = dynastore.NewStats()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.cfg.Addr = ln.Addr().String()

	table := commands.NewTable()
	scripting.Register(table)
	s := &Server{Addr: ln.Addr().String(), Stats: cfg.stats}
	s.Srv = &commands.Server{
		Store:   model.On(store),
		Stats:   cfg.stats,
		Table:   table,
		Clock:   cfg.clock,
		Config:  cfg.cfg,
		Started: time.Now(),
	}
	var ropt resp.Options
	ropt.Logf = func(format string, args ...any) {
		s.mu.Lock()
		s.logs = append(s.logs, format)
		s.mu.Unlock()
		t.Errorf("redamo logged: "+format, args...)
	}
	s.RESP = resp.New(s.Srv, ropt)
	if cfg.bus {
		s.Bus = startBus(t, store, s.Srv, cfg.cfg.RequirePass)
	}

	done := make(chan error, 1)
	go func() { done <- s.RESP.Serve(ln) }()
	t.Cleanup(func() {
		s.mu.Lock()
		killed := s.killed
		s.mu.Unlock()
		if !killed {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.RESP.Shutdown(ctx); err != nil {
				t.Errorf("testserver: shutdown: %v", err)
			}
			if s.Bus != nil {
				// A store a test broke may refuse the withdrawal: the item
				// then lapses, as a dead instance's does.
				_ = s.Bus.Close()
			}
		}
		if err := <-done; err != nil {
			t.Errorf("testserver: serve: %v", err)
		}
	})
	return s
}

// startBus starts srv's bus, plugs it into srv's pub/sub and key events,
// and waits until it is linked to the other members both ways (the
// password keys it, as in cmd/redamo).
func startBus(t testing.TB, store dynastore.Store, srv *commands.Server, password string) *bus.Bus {
	t.Helper()
	b, err := bus.New(bus.Config{
		Listen: "127.0.0.1:0",
		Secret: bus.SecretFromPassword(password),
		Events: srv.KeyEvents(),
	}, store, srv.Hub())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Start(ctx))
	srv.Hub().SetPeers(b)
	srv.KeyEvents().SetPeers(b)
	require.Eventually(t, b.Linked, 30*time.Second, time.Millisecond, "testserver: the bus never linked to its peers")
	return b
}

// Kill stops the server at once, as close to a SIGKILL as a server in
// the test's own process can be: the listener and every connection close
// without waiting for the commands in flight, whose contexts are
// cancelled (they may still finish the store request they are in, as a
// request a killed process sent may still be applied; a test that wants
// no later request wraps the store to refuse them).
func (s *Server) Kill() {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.RESP.Shutdown(ctx)
	if s.Bus != nil {
		s.Bus.Kill()
	}
}

// ClientReadTimeout is how long a Client waits for a reply. go-redis's own
// default (3 s) would be a timing assertion no test states: a big write
// on DynamoDB Local, under -race on a loaded machine, takes longer and
// succeeds, yet the client would report an i/o timeout. A server that
// never answers still fails the test, after this long.
const ClientReadTimeout = time.Minute

// Client returns a go-redis client for the server (its default options:
// RESP3 through HELLO 3, no retries, ClientReadTimeout), closed when the
// test ends.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.Addr, MaxRetries: -1, ReadTimeout: ClientReadTimeout}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Dial opens a raw TCP connection to the server, closed when the test ends.
func (s *Server) Dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Environment variables naming DynamoDB Local for tests.
const (
	EnvEndpoint        = "REDAMO_TEST_DYNAMODB_ENDPOINT"
	EnvRequireDynamoDB = "REDAMO_TEST_REQUIRE_DYNAMODB"
)

// Backend is a fresh, empty store to run a test on.
type Backend struct {
	// Name is "memory", "dynamodb" or "faithful", for t.Run.
	Name  string
	Store dynastore.Store
	// Stats observes every request of Store.
	Stats *dynastore.Stats
}

// Start serves the backend's store, with its Stats and a bus (WithBus):
// the servers started on one backend are instances of one table.
func (b Backend) Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return Start(t, b.Store, append([]Option{WithStats(b.Stats), WithBus(), WithConfig(func(c *commands.Config) {
		c.StoreName = b.Name
	})}, opts...)...)
}

// Stores returns the backends a test body should run on, each fresh and
// empty: a memory store always, and a DynamoDB Local table with a random
// name (deleted when the test ends) when REDAMO_TEST_DYNAMODB_ENDPOINT is
// set. Without it the DynamoDB backend is skipped with a log line, unless
// REDAMO_TEST_REQUIRE_DYNAMODB=1, which fails the test instead.
//
//	for _, b := range testserver.Stores(t) {
//		t.Run(b.Name, func(t *testing.T) {
//			rdb := b.Start(t).Client(t)
//			...
//		})
//	}
func Stores(t testing.TB) []Backend {
	t.Helper()
	mem := dynastore.NewStats()
	backends := []Backend{{Name: "memory", Store: memory.New(memory.Options{Observer: mem}), Stats: mem}}
	if b, ok := DynamoDB(t); ok {
		backends = append(backends, b)
	}
	return backends
}

// Instances returns the backends a test across several instances of one
// store should run on: those of Stores and the embedded store's
// AWS-faithful mode (Faithful), where latency opens the windows in
// which DynamoDB's transactions conflict and partitions throttle. Only
// those tests take it: the faithful mode is slower, and what it finds is
// between instances.
func Instances(t testing.TB) []Backend {
	t.Helper()
	return append(Stores(t), Faithful(t, 1))
}

// FaithfulScale is the faithful backend's time scale in tests: a tenth
// of AWS's typical latencies keeps every call's window open (a
// transaction's for 1-3 ms) at a tenth of the wall time.
const FaithfulScale = 0.1

// Faithful returns a fresh store in the AWS-faithful mode at
// FaithfulScale (whose clock runs that much faster in capacity too, so a
// test's clients meet the partition and table limits as the same clients
// would on AWS), without faults unless the test sets them (o, when given,
// changes the options), its randomness from seed so that a failing run
// replays its draws.
func Faithful(t testing.TB, seed uint64, o ...func(*faithful.Options)) Backend {
	t.Helper()
	stats := dynastore.NewStats()
	opts := faithful.Options{Observer: stats, Seed: seed, Scale: FaithfulScale}
	for _, f := range o {
		f(&opts)
	}
	return Backend{Name: "faithful", Store: faithful.New(opts), Stats: stats}
}

// DynamoDB returns a fresh DynamoDB Local backend, or ok false (after a log
// line, or a failure under REDAMO_TEST_REQUIRE_DYNAMODB=1) when
// REDAMO_TEST_DYNAMODB_ENDPOINT is not set.
func DynamoDB(t testing.TB) (_ Backend, ok bool) {
	t.Helper()
	endpoint := os.Getenv(EnvEndpoint)
	if endpoint == "" {
		if os.Getenv(EnvRequireDynamoDB) == "1" {
			t.Fatalf("%s=1 but %s is not set", EnvRequireDynamoDB, EnvEndpoint)
		}
		t.Logf("DynamoDB backend skipped: %s is not set", EnvEndpoint)
		return Backend{}, false
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	table := "redamo_test_" + hex.EncodeToString(rnd[:])
	stats := dynastore.NewStats()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dynamo.New(ctx, dynamo.Config{
		Table:       table,
		Endpoint:    endpoint,
		CreateTable: true,
		Observer:    stats,
		// As the server runs: its clock corrected by DynamoDB's offset.
		ClockProbes: true,
	})
	require.NoError(t, err, "DynamoDB Local at %s", endpoint)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.DeleteTable(ctx); err != nil {
			t.Logf("testserver: delete table %s: %v", table, err)
		}
		_ = st.Close()
	})
	return Backend{Name: "dynamodb", Store: st, Stats: stats}, true
}

// RequestsSince is the requests per operation of label between two
// snapshots of a Stats.
func RequestsSince(before, after map[dynastore.StatKey]dynastore.StatRow, label string) map[string]int64 {
	out := map[string]int64{}
	for k, row := range after {
		if k.Label == label {
			if n := row.Requests - before[k].Requests; n > 0 {
				out[k.Op] = n
			}
		}
	}
	return out
}
