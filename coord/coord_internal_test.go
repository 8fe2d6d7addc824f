package coord

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// countingStore counts the requests that reach its store.
type countingStore struct {
	dynastore.Store
	n atomic.Int64
}

func (c *countingStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	c.n.Add(1)
	return c.Store.Update(ctx, k, u, o)
}

func realClock() Clock { return NewClock(time.Now(), 0) }

// TestWaitersTakeTurns: clients of one process waiting for one lock take
// turns: only the longest waiter polls, a release through the process
// hands the lock to it, and a client that goes away leaves the line.
func TestWaitersTakeTurns(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memory.New(memory.Options{})}
	var s Service
	_, ok, err := s.Acquire(ctx, st, []byte("l"), []byte("holder"), time.Minute, 0, realClock)
	require.NoError(t, err)
	require.True(t, ok)

	const waiters = 8
	type outcome struct {
		owner string
		ok    bool
		err   error
	}
	results := make(chan outcome, waiters)
	gone, leave := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx := ctx
			if i == waiters-1 {
				wctx = gone // this client disconnects
			}
			owner := string(rune('a' + i))
			l, ok, err := s.Acquire(wctx, st, []byte("l"), []byte(owner), time.Minute, time.Minute, realClock)
			results <- outcome{string(l.Holder), ok, err}
		}()
	}
	require.Eventually(t, func() bool {
		return s.wake.r.WaitingOn(string(mustKey(t, "l"))) == waiters
	}, 5*time.Second, time.Millisecond)
	before := st.n.Load()
	time.Sleep(time.Second)
	// One poller with a backoff growing to 500 ms: a handful of tries,
	// where every waiter polling on its own would make dozens.
	require.LessOrEqual(t, st.n.Load()-before, int64(10), "waiters in line do not poll")

	leave()
	r := <-results
	require.ErrorIs(t, r.err, context.Canceled, "a client that goes away stops waiting")

	ok, err = s.Release(ctx, st, []byte("l"), []byte("holder"), 0, realClock())
	require.NoError(t, err)
	require.True(t, ok)
	r = <-results
	require.NoError(t, r.err)
	require.True(t, r.ok, "the release hands the lock to a waiter")
	// The rest wait on; a release by the new holder serves the next.
	ok, err = s.Release(ctx, st, []byte("l"), []byte(r.owner), 0, realClock())
	require.NoError(t, err)
	require.True(t, ok)
	r2 := <-results
	require.True(t, r2.ok)
	require.NotEqual(t, r.owner, r2.owner)

	// Give the others the lock in turn so the goroutines end.
	for range waiters - 3 {
		_, err := s.Release(ctx, st, []byte("l"), []byte(r2.owner), 0, realClock())
		require.NoError(t, err)
		r2 = <-results
		require.True(t, r2.ok)
	}
	wg.Wait()
	require.Zero(t, s.wake.r.Waiting(), "every waiter left the line")
}

func mustKey(t *testing.T, name string) []byte {
	k, err := LockKey([]byte(name))
	require.NoError(t, err)
	return k.PK
}
