package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestExpiredEvents: a running redamo reports keys whose TTL passes
// untouched (the expiry index and reaper are wired in), and none for keys
// persisted or deleted before their TTL passed.
func TestExpiredEvents(t *testing.T) {
	a, _ := startApp(t, testConfig())
	ctx := context.Background()
	c := client(t, &redis.Options{Addr: a.ln.Addr().String()})
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err())
	sub := c.Subscribe(ctx, "__keyevent@0__:expired")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	require.NoError(t, c.Set(ctx, "persisted", "v", 200*time.Millisecond).Err())
	require.NoError(t, c.Persist(ctx, "persisted").Err())
	require.NoError(t, c.Set(ctx, "deleted", "v", 200*time.Millisecond).Err())
	require.NoError(t, c.Del(ctx, "deleted").Err())
	require.NoError(t, c.Set(ctx, "session", "v", 1300*time.Millisecond).Err())
	select {
	case m := <-sub.Channel():
		require.Equal(t, "session", m.Payload)
	case <-time.After(20 * time.Second):
		t.Fatal("no expired event")
	}
	require.Zero(t, c.Exists(ctx, "session").Val())
	require.Equal(t, "v", c.Get(ctx, "persisted").Val())
}
