package main

import (
	"context"
	"fmt"
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

	// The keys persisted and deleted before their TTL passed must be so
	// before it passes, which a busy machine may not get to within a
	// short TTL: the replies prove they were, else the try is made again
	// with longer TTLs under new names (late events of an earlier try's
	// keys are skipped).
	var try int
	var persisted, deleted, session string
	for ttl := 200 * time.Millisecond; ; ttl *= 2 {
		require.Less(t, ttl, time.Minute, "PERSIST and DEL never ran before the TTL passed")
		try++
		persisted, deleted, session = fmt.Sprint("persisted:", try), fmt.Sprint("deleted:", try), fmt.Sprint("session:", try)
		set := time.Now()
		require.NoError(t, c.Set(ctx, persisted, "v", ttl).Err())
		kept, err := c.Persist(ctx, persisted).Result()
		require.NoError(t, err)
		require.NoError(t, c.Set(ctx, deleted, "v", ttl).Err())
		gone, err := c.Del(ctx, deleted).Result()
		require.NoError(t, err)
		if kept && gone == 1 {
			require.NoError(t, c.Set(ctx, session, "v", ttl+1100*time.Millisecond).Err())
			break
		}
		require.GreaterOrEqual(t, time.Since(set), ttl, "a key expired before its TTL")
	}
	timeout := time.After(time.Minute)
	for done := false; !done; {
		select {
		case m := <-sub.Channel():
			require.NotContains(t, []string{persisted, deleted}, m.Payload)
			done = m.Payload == session
		case <-timeout:
			t.Fatal("no expired event")
		}
	}
	require.Zero(t, c.Exists(ctx, session).Val())
	require.Equal(t, "v", c.Get(ctx, persisted).Val())
}
