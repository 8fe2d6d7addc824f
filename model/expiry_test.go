package model_test

// The expiry index and its reaper, on a test clock: each "second" of a
// test is one flush of the index and one pass of each reaper, as Run would
// make them.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// expiryEnv is a store with an expiry index over it, a clock the test
// moves, and the events reapers raised (each with when it was raised).
type expiryEnv struct {
	t      *testing.T
	e      *keysEnv
	now    *atomic.Int64
	wanted atomic.Bool
	ix     *model.ExpiryIndex
	// s writes through the index's wrapper, as commands do.
	s *scope

	mu     sync.Mutex
	events []expiredEvent
}

type expiredEvent struct {
	key string
	at  int64
}

func newExpiryEnv(t *testing.T, e *keysEnv) *expiryEnv {
	x := &expiryEnv{t: t, e: e, now: &atomic.Int64{}}
	// Ten seconds into a minute, so that a test of a few seconds reads
	// one minute's partitions per pass and its request counts are exact.
	x.now.Store((time.Now().UnixMilli()/60000+1)*60000 + 10000)
	x.wanted.Store(true)
	x.ix = &model.ExpiryIndex{Store: e.store, Wanted: x.wanted.Load, Clock: x.clock}
	x.s = &scope{Context: dynastore.WithLabel(context.Background(), "cmd"), st: x.ix.Wrap(e.store), proc: model.NewProcess(testLimits), now: x.now}
	return x
}

func (x *expiryEnv) clock() time.Time { return time.UnixMilli(x.now.Load()) }

func (x *expiryEnv) reaper(id string, st dynastore.Store) *model.Reaper {
	return &model.Reaper{Store: st, Clock: x.clock, Wanted: x.wanted.Load, ID: id,
		Expired: func(db int, key []byte) {
			x.mu.Lock()
			x.events = append(x.events, expiredEvent{fmt.Sprintf("%d:%s", db, key), x.now.Load()})
			x.mu.Unlock()
		}}
}

// second moves the clock by d, flushes the index and makes a pass of each
// reaper.
func (x *expiryEnv) second(d time.Duration, rs ...*model.Reaper) {
	x.t.Helper()
	x.now.Add(d.Milliseconds())
	require.NoError(x.t, x.ix.Flush(context.Background()))
	for _, r := range rs {
		require.NoError(x.t, r.PassOnce(context.Background()))
	}
}

func (x *expiryEnv) raised() []expiredEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]expiredEvent(nil), x.events...)
}

func (x *expiryEnv) set(key string, ttl time.Duration) int64 {
	x.t.Helper()
	at := x.now.Load() + ttl.Milliseconds()
	o := model.SetOptions{}
	if ttl > 0 {
		o.ExpireAt = at
	}
	_, err := model.SetString(x.s, []byte(key), []byte("v"), o)
	require.NoError(x.t, err)
	return at
}

// TestExpiredUntouchedKey: a key nobody touches after SET PX yields one
// expired event, raised by the first pass at least reaperLag after its
// expiry (so at most about a second after it), and never another.
func TestExpiredUntouchedKey(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		r := x.reaper("a", e.store)
		x.second(0, r)
		at := x.set("k", 2500*time.Millisecond)
		x.second(300*time.Millisecond, r) // passes off the whole second
		for range 6 {
			x.second(time.Second, r)
		}
		evs := x.raised()
		require.Len(t, evs, 1)
		require.Equal(t, "0:k", evs[0].key)
		require.GreaterOrEqual(t, evs[0].at, at)
		require.LessOrEqual(t, evs[0].at, at+1250, "raised by the first pass that saw it due")
		ks, err := model.ReadKey(x.s, []byte("k"))
		require.NoError(t, err)
		require.False(t, ks.Live)
		it, err := e.store.Get(context.Background(), model.ItemKey(0, []byte("k")))
		require.NoError(t, err)
		require.Nil(t, it, "the reaper deleted the key item")
	})
}

// TestExpiredShortTTL: a key whose TTL passes before its entry is written
// is still reaped (its entry is due after it was recorded).
func TestExpiredShortTTL(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		r := x.reaper("a", e.store)
		x.second(0, r)
		x.set("k", time.Millisecond)
		x.now.Add(50) // recorded, not yet flushed
		x.second(time.Second, r)
		x.second(time.Second, r)
		require.Len(t, x.raised(), 1)
	})
}

// TestExpiredTwoReapers: two reapers on one table raise one event per key,
// whether one holds the lease and the other waits, or the second takes the
// lease over while the first is between reading a key and deleting it.
func TestExpiredTwoReapers(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		b := x.reaper("b", e.store)
		var once sync.Once
		// a's deletes first let b, which takes the lapsed lease over,
		// make a whole pass.
		hooked := &deleteHook{Store: e.store, before: func() {
			once.Do(func() {
				x.now.Add(10_000)
				require.NoError(t, b.PassOnce(context.Background()))
			})
		}}
		a := x.reaper("a", hooked)
		x.second(0, a, b)
		x.set("k1", 1500*time.Millisecond)
		for range 3 {
			x.second(time.Second, a, b)
		}
		require.Equal(t, []string{"0:k1"}, keysOf(x.raised()), "one holder reaps")
		hooked.armed.Store(true)
		x.set("k2", 1500*time.Millisecond)
		for range 3 {
			x.second(time.Second, a, b)
		}
		require.Equal(t, []string{"0:k1", "0:k2"}, keysOf(x.raised()), "the race yields one event")
	})
}

// deleteHook runs before once armed, ahead of each Delete.
type deleteHook struct {
	dynastore.Store
	armed  atomic.Bool
	before func()
}

func (h *deleteHook) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	if h.armed.Load() {
		h.before()
	}
	return h.Store.Delete(ctx, k, o)
}

func keysOf(evs []expiredEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.key)
	}
	return out
}

// TestExpiredChangedBeforeExpiry: a key rewritten without TTL, deleted or
// persisted before its TTL passes yields no event; one whose TTL was
// extended yields one, at its new expiry; one whose TTL was shortened
// yields one at the earlier time.
func TestExpiredChangedBeforeExpiry(t *testing.T) {
	cases := []struct {
		name   string
		change func(x *expiryEnv) (at int64)
		events int
	}{
		{"rewritten", func(x *expiryEnv) int64 { x.set("k", 0); return 0 }, 0},
		{"deleted", func(x *expiryEnv) int64 {
			_, err := model.DeleteKey(x.s, []byte("k"))
			require.NoError(x.t, err)
			return 0
		}, 0},
		{"persisted", func(x *expiryEnv) int64 {
			ok, err := model.Persist(x.s, []byte("k"))
			require.NoError(x.t, err)
			require.True(x.t, ok)
			return 0
		}, 0},
		{"extended", func(x *expiryEnv) int64 {
			at := x.now.Load() + 5000
			ok, err := model.Expire(x.s, []byte("k"), at, 0)
			require.NoError(x.t, err)
			require.True(x.t, ok)
			return at
		}, 1},
		{"shortened", func(x *expiryEnv) int64 {
			at := x.now.Load() + 1000
			ok, err := model.Expire(x.s, []byte("k"), at, 0)
			require.NoError(x.t, err)
			require.True(x.t, ok)
			return at
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forStores(t, func(t *testing.T, e *keysEnv) {
				x := newExpiryEnv(t, e)
				r := x.reaper("a", e.store)
				x.second(0, r)
				x.set("k", 3000*time.Millisecond)
				x.second(time.Second, r)
				at := tc.change(x)
				for range 8 {
					x.second(time.Second, r)
				}
				evs := x.raised()
				require.Len(t, evs, tc.events)
				if tc.events == 1 {
					require.GreaterOrEqual(t, evs[0].at, at)
					require.LessOrEqual(t, evs[0].at, at+1250)
				}
			})
		})
	}
}

// TestExpiredInTransaction: a unit of work (EXEC, a script) records its
// expiries when it commits.
func TestExpiredInTransaction(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		r := x.reaper("a", e.store)
		x.second(0, r)
		at := x.now.Load() + 1500
		_, err := model.Unit{Keys: [][]byte{[]byte("t1"), []byte("t2")}, Work: func(txn *model.Txn) error {
			c := &scope{Context: x.s.Context, st: txn, proc: x.s.proc, now: x.now}
			for _, k := range []string{"t1", "t2"} {
				if _, err := model.SetString(c, []byte(k), []byte("v"), model.SetOptions{ExpireAt: at}); err != nil {
					return err
				}
			}
			return nil
		}}.Run(x.s)
		require.NoError(t, err)
		for range 3 {
			x.second(time.Second, r)
		}
		require.ElementsMatch(t, []string{"0:t1", "0:t2"}, keysOf(x.raised()))
	})
}

// TestExpiredRequests: what expiry events cost in store requests. While
// wanted: the index writes one request per batch of keys (one
// BatchWriteItem for up to 25, one PutItem for a lone key); the
// reaper reads each shard's partition once per pass, renews its lease a
// third of the way through its term, and per batch of due keys makes one
// BatchGetItem, then one DeleteItem per expired key. While not wanted:
// nothing at all.
func TestExpiredRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		r := x.reaper("a", e.store)
		before := e.stats.Snapshot()
		for range 10 {
			x.second(time.Second, r)
		}
		idle := requestsSince(e, before)
		require.Equal(t, map[string]int64{
			// 10 passes of 4 shards, the first reading the previous
			// minute's too (a new holder catches up); the lease read
			// and taken at the first pass, then renewed every third of
			// its 5 s term.
			"expiry-reaper " + dynastore.OpQuery:      4 + 10*4,
			"expiry-reaper " + dynastore.OpGetItem:    1,
			"expiry-reaper " + dynastore.OpUpdateItem: 1 + 4,
		}, idle, "ten idle seconds")

		before = e.stats.Snapshot()
		for i := range 50 {
			x.set(fmt.Sprint("key", i), 1500*time.Millisecond)
		}
		x.set("lone", 0)
		require.NoError(t, x.ix.Flush(context.Background()))
		// The same expiry set again: its entry is there already.
		_, err := model.SetString(x.s, []byte("key0"), []byte("w"), model.SetOptions{KeepTTL: true})
		require.NoError(t, err)
		_, err = model.SetString(x.s, []byte("key1"), []byte("w"), model.SetOptions{ExpireAt: x.now.Load() + 1500})
		require.NoError(t, err)
		require.NoError(t, x.ix.Flush(context.Background()))
		x.set("alone", 1500*time.Millisecond)
		x.second(time.Second, r)
		x.second(time.Second, r)
		require.Len(t, x.raised(), 51)
		got := requestsSince(e, before)
		require.Equal(t, int64(51), got["expiry-reaper "+dynastore.OpDeleteItem])
		require.Equal(t, int64(2), got["expiry-index "+dynastore.OpBatchWriteItem], "50 entries")
		require.Zero(t, got["expiry-index "+dynastore.OpTransactWriteItems])
		require.Equal(t, int64(1), got["expiry-index "+dynastore.OpPutItem])
		require.Equal(t, int64(1), got["expiry-reaper "+dynastore.OpBatchGetItem])

		// Not wanted: no index write, no pass, whatever is written.
		x.wanted.Store(false)
		before = e.stats.Snapshot()
		for i := range 20 {
			x.set(fmt.Sprint("off", i), 1500*time.Millisecond)
		}
		for range 10 {
			x.second(time.Second, r)
		}
		off := requestsSince(e, before)
		require.Empty(t, off)
		require.Len(t, x.raised(), 51)
	})
}

// requestsSince returns the requests made since before by anything but
// the test's own commands, as "label op".
func requestsSince(e *keysEnv, before map[dynastore.StatKey]dynastore.StatRow) map[string]int64 {
	out := map[string]int64{}
	for k, v := range e.stats.Snapshot() {
		if k.Label == "cmd" {
			continue
		}
		if n := v.Requests - before[k].Requests; n > 0 {
			out[k.Label+" "+k.Op] = n
		}
	}
	return out
}

// TestExpiredTakeover: when the lease holder stops, another reaper takes
// the lease over once it lapses (or at its next look, when the holder
// resigned) and reaps the keys that came due meanwhile, from where the
// holder got.
func TestExpiredTakeover(t *testing.T) {
	for _, resign := range []bool{false, true} {
		t.Run(fmt.Sprint("resign=", resign), func(t *testing.T) {
			forStores(t, func(t *testing.T, e *keysEnv) {
				x := newExpiryEnv(t, e)
				a, b := x.reaper("a", e.store), x.reaper("b", e.store)
				x.second(0, a, b)
				x.set("k1", 1500*time.Millisecond)
				x.second(time.Second, a, b)
				x.second(time.Second, a, b)
				require.Equal(t, []string{"0:k1"}, keysOf(x.raised()))
				x.set("k2", 1500*time.Millisecond)
				if resign {
					require.NoError(t, a.Resign(context.Background()))
				}
				x.second(time.Second, b)
				if !resign {
					require.Len(t, x.raised(), 1, "the lease has not lapsed yet")
				}
				for range 7 {
					x.second(time.Second, b)
				}
				require.Equal(t, []string{"0:k1", "0:k2"}, keysOf(x.raised()))
			})
		})
	}
}

// TestExpiryWrapKeepsCapabilities: the wrapped store offers what the store
// it wraps does of the optional capabilities the model looks for.
func TestExpiryWrapKeepsCapabilities(t *testing.T) {
	ix := &model.ExpiryIndex{}
	w := ix.Wrap(memory.New(memory.Options{}))
	_, ok := w.(dynastore.Prefetcher)
	require.True(t, ok)
	_, ok = w.(dynastore.SnapshotReader)
	require.True(t, ok)
	_, ok = w.(dynastore.Counter)
	require.True(t, ok)
	_, ok = w.(dynastore.Clocked)
	require.True(t, ok)
	w = ix.Wrap(struct{ dynastore.Store }{memory.New(memory.Options{})})
	_, ok = w.(dynastore.Prefetcher)
	require.False(t, ok, "no hints asked of a store that takes none")
}

// TestExpiredLateEntry: an entry written after the reaper's passes went
// past its place (a slow index write) is handed to the reaper, which reaps
// its key at its next pass.
func TestExpiredLateEntry(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		x := newExpiryEnv(t, e)
		r := x.reaper("a", e.store)
		x.ix.Late = r.Late
		require.NoError(t, r.PassOnce(context.Background()))
		x.set("k", time.Millisecond)
		for range 2 {
			x.now.Add(1000)
			require.NoError(t, r.PassOnce(context.Background()))
		}
		require.Empty(t, x.raised(), "not written yet")
		x.second(0, r)
		require.Equal(t, []string{"0:k"}, keysOf(x.raised()))
	})
}

// TestExpiredStoreFailures: a request of the reaper's that fails (the
// table throttling, say: reading the index, reading keys, renewing the
// lease, deleting a key) delays the events to a later pass, and neither
// loses one nor repeats one.
func TestExpiredStoreFailures(t *testing.T) {
	for _, op := range []string{dynastore.OpQuery, dynastore.OpBatchGetItem, dynastore.OpUpdateItem, dynastore.OpDeleteItem} {
		t.Run(op, func(t *testing.T) {
			forStores(t, func(t *testing.T, e *keysEnv) {
				x := newExpiryEnv(t, e)
				f := &failOnce{Store: e.store}
				r := x.reaper("a", f)
				x.second(0, r)
				x.set("k1", 1500*time.Millisecond)
				x.set("k2", 1500*time.Millisecond)
				x.second(time.Second, r)
				f.op = op
				x.now.Add(1000)
				require.NoError(t, x.ix.Flush(context.Background()))
				_ = r.PassOnce(context.Background())
				require.Empty(t, f.op, "the failure was met")
				for range 3 {
					x.second(time.Second, r)
				}
				require.ElementsMatch(t, []string{"0:k1", "0:k2"}, keysOf(x.raised()))
			})
		})
	}
}

// failOnce fails the next request of kind op (then clears it).
type failOnce struct {
	dynastore.Store
	op string
}

func (f *failOnce) fail(op string) error {
	if f.op == op {
		f.op = ""
		return dynastore.ErrThrottled
	}
	return nil
}

func (f *failOnce) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	if err := f.fail(dynastore.OpQuery); err != nil {
		return dynastore.QueryPage{}, err
	}
	return f.Store.Query(ctx, q)
}

func (f *failOnce) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	if err := f.fail(dynastore.OpBatchGetItem); err != nil {
		return nil, err
	}
	return f.Store.BatchGet(ctx, keys)
}

func (f *failOnce) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := f.fail(dynastore.OpUpdateItem); err != nil {
		return nil, err
	}
	return f.Store.Update(ctx, k, u, o)
}

func (f *failOnce) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := f.fail(dynastore.OpDeleteItem); err != nil {
		return nil, err
	}
	return f.Store.Delete(ctx, k, o)
}
