package testserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

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
