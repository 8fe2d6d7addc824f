package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// TestPubSubGoRedis: go-redis's PubSub (a dedicated connection that
// receives as messages arrive) works unchanged, on both protocols and
// backends, with channels and patterns.
func TestPubSubGoRedis(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		for _, proto := range []int{2, 3} {
			t.Run(b.Name+"/resp"+string(rune('0'+proto)), func(t *testing.T) {
				srv := b.Start(t)
				rdb := srv.Client(t, func(o *redis.Options) { o.Protocol = proto })
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ps := rdb.Subscribe(ctx, "orders")
				defer ps.Close()
				_, err := ps.Receive(ctx) // the subscription's confirmation
				require.NoError(t, err)
				require.NoError(t, ps.PSubscribe(ctx, "user:*"))
				_, err = ps.Receive(ctx)
				require.NoError(t, err)

				require.Equal(t, int64(1), rdb.Publish(ctx, "orders", "o1").Val())
				require.Equal(t, int64(1), rdb.Publish(ctx, "user:7", "u7").Val())
				require.Equal(t, int64(0), rdb.Publish(ctx, "nobody", "x").Val())
				m, err := ps.ReceiveMessage(ctx)
				require.NoError(t, err)
				require.Equal(t, redis.Message{Channel: "orders", Payload: "o1"}, *m)
				m, err = ps.ReceiveMessage(ctx)
				require.NoError(t, err)
				require.Equal(t, redis.Message{Channel: "user:7", Pattern: "user:*", Payload: "u7"}, *m)

				require.Equal(t, map[string]int64{"orders": 1, "user:7": 0}, rdb.PubSubNumSub(ctx, "orders", "user:7").Val())
				require.Equal(t, int64(1), rdb.PubSubNumPat(ctx).Val())
				require.NoError(t, ps.Unsubscribe(ctx, "orders"))
				require.NoError(t, ps.PUnsubscribe(ctx, "user:*"))
				for _, kind := range []string{"unsubscribe", "punsubscribe"} {
					msg, err := ps.Receive(ctx)
					require.NoError(t, err)
					require.Equal(t, kind, msg.(*redis.Subscription).Kind)
				}
				require.Equal(t, int64(0), rdb.PubSubNumPat(ctx).Val())
				require.Equal(t, int64(0), rdb.Publish(ctx, "orders", "o2").Val())
			})
		}
	}
}
