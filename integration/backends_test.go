package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/internal/testserver"
)

// backend is a table that several redamo instances share: DynamoDB Local,
// each instance a process, or the embedded store's AWS-faithful mode,
// each instance a server in the test's process on one store (an embedded
// store cannot be shared between processes). DynamoDB Local lets a
// transaction and a concurrent write to the same item both pass and
// answers in about a millisecond; the faithful mode has AWS's latency,
// conflicts and throttling, so the invariants are checked against both.
type backend struct {
	name string
	// node returns a new instance on the table, not yet started.
	node func(t *testing.T) node
	// cluster starts n instances and returns a client of each.
	cluster func(t *testing.T, n int) []*redis.Client
	// stats counts the faithful store's requests (nil on DynamoDB Local,
	// whose requests the processes count).
	stats *dynastore.Stats
	// faulty turns the faithful store's faults on (killFaults), for a test
	// whose clients expect errors, once its setup is done, and calm off
	// again for its final checks; DynamoDB Local injects none.
	faulty, calm func()
	// store is the table itself, for a test's own checks of what the
	// instances left in it.
	store func(t *testing.T) dynastore.Store
}

// node is one instance that can be killed abruptly and started again on
// the same table.
type node interface {
	start() *redis.Client
	kill()
}

// forBackends runs f on a fresh table of each backend, as subtests
// "dynamodb" (skipped without DynamoDB Local, as endpoint says) and
// "faithful".
func forBackends(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("dynamodb", func(t *testing.T) {
		ep := endpoint(t)
		table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
		f(t, backend{
			name: "dynamodb",
			node: func(t *testing.T) node {
				return &instance{t: t, args: []string{"--store", "dynamodb", "--endpoint", ep,
					"--region", "us-east-1", "--table", table, "--create-table"}}
			},
			cluster: cluster,
			faulty:  func() {},
			calm:    func() {},
			store: func(t *testing.T) dynastore.Store {
				// The instances' credentials: DynamoDB Local keeps tables per access key.
				t.Setenv("AWS_ACCESS_KEY_ID", "redamotest")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "redamotest")
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				st, err := dynamo.New(ctx, dynamo.Config{Table: table, Endpoint: ep, Region: "us-east-1", CreateTable: true})
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				return st
			},
		})
	})
	t.Run("faithful", func(t *testing.T) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("faithful store seed %d", seed)
		kinds := &errorKinds{}
		fb := testserver.Faithful(t, seed, func(o *faithful.Options) { o.Observer = dynastore.Observers{o.Observer, kinds} })
		b := backend{name: "faithful", stats: fb.Stats, store: func(*testing.T) dynastore.Store { return fb.Store }}
		b.faulty = func() { fb.Store.(*faithful.Store).SetFaults(killFaults) }
		b.calm = func() { fb.Store.(*faithful.Store).SetFaults(faithful.Faults{}) }
		b.node = func(t *testing.T) node { return &inproc{t: t, store: fb.Store, stats: fb.Stats} }
		b.cluster = func(t *testing.T, n int) []*redis.Client {
			cs := make([]*redis.Client, n)
			for i := range cs {
				cs[i] = b.node(t).start()
			}
			return cs
		}
		f(t, b)
		t.Logf("faithful store: %s; failed calls by kind: %s", faithfulFigures(fb.Stats), kinds)
	})
}

// killFaults are the faults of the kill loops' faithful store, far more
// frequent than AWS's: those tests expect errors (their instance dies
// under them), so answers lost after a write was applied, refusals before
// it, timeouts and resets must leave the same invariants whole. Timeouts
// are rarer: each waits for an attempt's whole time.
var killFaults = faithful.Faults{InternalError: 0.02, Unavailable: 0.02, Timeout: 0.0005, ResetBefore: 0.01, ResetAfter: 0.01}

// errorKinds counts a store's failed calls by what they became after the
// store's retries: a condition that did not hold (an answer, not a
// failure), a transaction conflict, throttling, unavailable, other.
type errorKinds struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *errorKinds) Observe(_ context.Context, r dynastore.Request) {
	if r.Err == nil {
		return
	}
	kind := "other"
	switch {
	case errors.Is(r.Err, dynastore.ErrConditionFailed):
		kind = "condition"
	case errors.Is(r.Err, dynastore.ErrThrottled):
		kind = "throttled"
	case errors.Is(r.Err, dynastore.ErrTxConflict):
		kind = "conflict"
	case errors.Is(r.Err, dynastore.ErrTxCanceled):
		kind = "canceled"
	case errors.Is(r.Err, dynastore.ErrUnavailable):
		kind = "unavailable"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[string]int{}
	}
	e.n[r.Op+" "+kind]++
}

func (e *errorKinds) IgnoresDuration() bool { return true }

func (e *errorKinds) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]string, 0, len(e.n))
	for k := range e.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%s %d; ", k, e.n[k])
	}
	return out
}

// faithfulFigures sums a faithful store's requests per operation: calls
// and the retries the store's policy made.
func faithfulFigures(st *dynastore.Stats) string {
	byOp := map[string]dynastore.StatRow{}
	for k, r := range st.Snapshot() {
		t := byOp[k.Op]
		t.Requests += r.Requests
		t.Retries += r.Retries
		t.Errors += r.Errors
		byOp[k.Op] = t
	}
	out := ""
	for _, op := range []string{dynastore.OpGetItem, dynastore.OpBatchGetItem, dynastore.OpPutItem, dynastore.OpUpdateItem,
		dynastore.OpDeleteItem, dynastore.OpTransactWriteItems, dynastore.OpTransactGetItems, dynastore.OpQuery, dynastore.OpScan} {
		if r, ok := byOp[op]; ok {
			out += fmt.Sprintf("%s %d (%d retries); ", op, r.Requests, r.Retries)
		}
	}
	return out
}

// inproc is an instance served in the test's process on a shared store.
// Killing it closes its server at once and cuts it from the store: a
// request it makes afterwards fails before reaching the store, as a dead
// process makes none (one already in the store may still be applied).
type inproc struct {
	t     *testing.T
	store dynastore.Store
	stats *dynastore.Stats
	srv   *testserver.Server
	cut   *cutStore
}

func (n *inproc) start() *redis.Client {
	n.t.Helper()
	n.cut = &cutStore{Store: n.store}
	n.srv = testserver.Start(n.t, n.cut, testserver.WithStats(n.stats))
	c := redis.NewClient(&redis.Options{Addr: n.srv.Addr, MaxRetries: -1, PoolSize: 64, ReadTimeout: testserver.ClientReadTimeout})
	n.t.Cleanup(func() { _ = c.Close() })
	require.NoError(n.t, c.Ping(context.Background()).Err())
	return c
}

func (n *inproc) kill() {
	n.cut.dead.Store(true)
	n.srv.Kill()
}

// errDead is what a killed instance's store requests fail with.
var errDead = fmt.Errorf("integration: the instance was killed: %w", dynastore.ErrUnavailable)

// cutStore passes requests to a store until it is cut (dead).
type cutStore struct {
	dynastore.Store
	dead atomic.Bool
}

var (
	_ dynastore.SnapshotReader = (*cutStore)(nil)
	_ dynastore.BatchWriter    = (*cutStore)(nil)
	_ dynastore.Clocked        = (*cutStore)(nil)
)

func (c *cutStore) alive() error {
	if c.dead.Load() {
		return errDead
	}
	return nil
}

func (c *cutStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Store.Get(ctx, k)
}

func (c *cutStore) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Store.BatchGet(ctx, keys)
}

func (c *cutStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Store.Put(ctx, it, o)
}

func (c *cutStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Store.Update(ctx, k, u, o)
}

func (c *cutStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Store.Delete(ctx, k, o)
}

func (c *cutStore) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	if err := c.alive(); err != nil {
		return err
	}
	return c.Store.Transact(ctx, actions)
}

func (c *cutStore) BatchWrite(ctx context.Context, puts []dynastore.Item, deletes []dynastore.Key) error {
	if err := c.alive(); err != nil {
		return err
	}
	return dynastore.BatchWrite(ctx, c.Store, puts, deletes)
}

func (c *cutStore) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	if err := c.alive(); err != nil {
		return dynastore.QueryPage{}, err
	}
	return c.Store.Query(ctx, q)
}

func (c *cutStore) Scan(ctx context.Context, s dynastore.Scan) (dynastore.ScanPage, error) {
	if err := c.alive(); err != nil {
		return dynastore.ScanPage{}, err
	}
	return c.Store.Scan(ctx, s)
}

func (c *cutStore) GetSnapshot(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	sr, ok := c.Store.(dynastore.SnapshotReader)
	if !ok {
		return nil, errors.New("integration: the store reads no snapshots")
	}
	if err := c.alive(); err != nil {
		return nil, err
	}
	return sr.GetSnapshot(ctx, keys)
}

func (c *cutStore) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	return c.Store.(dynastore.Clocked).ClockOffset()
}

func (c *cutStore) ClockSamples() int { return c.Store.(dynastore.Clocked).ClockSamples() }
