package testserver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
)

// go-redis's default handshake is HELLO 3 then CLIENT SETINFO; the server
// must accept it, on every backend.
func TestGoRedisHandshake(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			rdb := s.Client(t)
			ctx := context.Background()
			require.Equal(t, "PONG", rdb.Ping(ctx).Val())
			require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
			require.Equal(t, "v", rdb.Get(ctx, "k").Val())
			require.Positive(t, s.Stats.Requests("set"))
		})
	}
}

func TestStartWithoutStore(t *testing.T) {
	s := testserver.Start(t, nil)
	require.Equal(t, "PONG", s.Client(t).Ping(context.Background()).Val())
}

// goRedisReadTimeout is go-redis's default read timeout.
const goRedisReadTimeout = 3 * time.Second

// slowGets answers every read after a pause longer than go-redis's default
// read timeout, as DynamoDB Local on a loaded machine answers a big write.
type slowGets struct {
	dynastore.Store
	reads atomic.Int64
}

func (s *slowGets) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	s.reads.Add(1)
	select {
	case <-time.After(goRedisReadTimeout + time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Get(ctx, k)
}

// A test's client waits for a slow reply instead of reporting an i/o
// timeout: how long a command takes is not what a test checks.
func TestClientWaitsForSlowReplies(t *testing.T) {
	st := &slowGets{Store: memory.New(memory.Options{})}
	c := testserver.Start(t, st).Client(t)
	require.ErrorIs(t, c.Get(context.Background(), "k").Err(), redis.Nil)
	require.Positive(t, st.reads.Load(), "GET read through the slow store")
}
