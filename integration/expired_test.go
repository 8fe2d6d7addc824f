package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterExpiredEvents: three redamo processes on one table with
// notify-keyspace-events Ex. Keys set with a TTL through each instance
// and never touched again each yield one "expired" event to a subscriber
// on every instance: one instance reaps them (the expiry index's lease
// holder), and its events reach the others over the bus.
func TestClusterExpiredEvents(t *testing.T) {
	cs := cluster(t, 3)
	ctx := context.Background()
	const channel = "__keyevent@0__:expired"
	for _, c := range cs {
		require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err())
	}
	subs := make([]*redis.PubSub, len(cs))
	for i, c := range cs {
		subs[i] = c.Subscribe(ctx, channel)
		t.Cleanup(func() { _ = subs[i].Close() })
		_, err := subs[i].Receive(ctx) // the subscription's confirmation
		require.NoError(t, err)
	}
	// Until every bus has the others, an instance's events reach fewer
	// subscribers.
	require.Eventually(t, func() bool {
		for _, c := range cs {
			if n, err := c.PubSubNumSub(ctx, channel).Result(); err != nil || n[channel] != int64(len(cs)) {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the instances never saw each other's subscribers")

	want := map[string]bool{}
	for i, c := range cs {
		key := fmt.Sprint("session:", i)
		require.NoError(t, c.Set(ctx, key, "v", 300*time.Millisecond).Err())
		want[key] = true
	}
	for si, s := range subs {
		ch := s.Channel()
		got := map[string]int{}
		for len(got) < len(want) {
			select {
			case m := <-ch:
				require.True(t, want[m.Payload], "subscriber %d: event for %q", si, m.Payload)
				got[m.Payload]++
				require.Equal(t, 1, got[m.Payload], "subscriber %d: %q expired twice", si, m.Payload)
			case <-time.After(20 * time.Second):
				t.Fatalf("subscriber %d: got %v of %v", si, got, want)
			}
		}
	}
	// A second event would come from a second reaper, within its pass.
	for si, s := range subs {
		select {
		case m := <-s.Channel():
			t.Fatalf("subscriber %d: another event, for %q", si, m.Payload)
		case <-time.After(1500 * time.Millisecond / time.Duration(len(subs))):
		}
	}
	for i, c := range cs {
		n, err := c.Exists(ctx, "session:0", "session:1", "session:2").Result()
		require.NoError(t, err)
		require.Zero(t, n, "instance %d", i)
	}
}
