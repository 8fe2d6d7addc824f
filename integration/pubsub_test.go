package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterPubSub: three redamo processes on one table, found through
// the table and linked by their bus. A message published through any
// instance reaches the matching subscribers of all three, PUBLISH counts
// them all, PUBSUB NUMSUB and NUMPAT add up across instances, and each
// subscriber receives one publisher's messages in order.
func TestClusterPubSub(t *testing.T) {
	cs := cluster(t, 3)
	ctx := context.Background()
	subs := []*redis.PubSub{
		cs[0].Subscribe(ctx, "news"),
		cs[1].Subscribe(ctx, "news"),
		cs[2].PSubscribe(ctx, "n*"),
	}
	for _, s := range subs {
		t.Cleanup(func() { _ = s.Close() })
		_, err := s.Receive(ctx) // the subscription's confirmation
		require.NoError(t, err)
	}
	// A new instance is linked within its first heartbeat's read; until
	// every bus has the others, a publish counts fewer receivers.
	require.Eventually(t, func() bool {
		for _, c := range cs {
			if n, err := c.Publish(ctx, "warmup", "x").Result(); err != nil || n != 0 {
				return false
			}
			if n, err := c.PubSubNumSub(ctx, "news").Result(); err != nil || n["news"] != 2 {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the instances never saw each other's subscribers")
	for i, c := range cs {
		require.EqualValues(t, 1, c.PubSubNumPat(ctx).Val(), "instance %d", i)
	}
	const n = 50
	for i := range n {
		require.EqualValues(t, 3, cs[i%3].Publish(ctx, "news", fmt.Sprint(i)).Val(), "message %d through instance %d", i, i%3)
	}
	for si, s := range subs {
		ch := s.Channel()
		for i := range n {
			select {
			case m := <-ch:
				require.Equal(t, "news", m.Channel)
				require.Equal(t, fmt.Sprint(i), m.Payload, "subscriber %d", si)
			case <-time.After(20 * time.Second):
				t.Fatalf("subscriber %d: message %d never arrived", si, i)
			}
		}
	}
}

// TestClusterPubSubKilledInstance: an instance killed (SIGKILL: its table
// item stays until its heartbeat lapses) while messages flow does not stop
// the others delivering to each other, and one started in its place is
// reached by publishers without restarting them.
func TestClusterPubSubKilledInstance(t *testing.T) {
	ep := endpoint(t)
	table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	ctx := context.Background()
	nodes := make([]*instance, 3)
	cs := make([]*redis.Client, 3)
	for i := range nodes {
		nodes[i] = &instance{t: t, args: []string{"--store", "dynamodb", "--endpoint", ep,
			"--region", "us-east-1", "--table", table, "--create-table"}}
		cs[i] = nodes[i].start()
	}
	// subscribe subscribes through c and waits until publishers through
	// every client in via count want receivers on the channel.
	subscribe := func(c *redis.Client, ch string, via []*redis.Client, want int64) *redis.PubSub {
		ps := c.Subscribe(ctx, ch)
		t.Cleanup(func() { _ = ps.Close() })
		_, err := ps.Receive(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			for _, p := range via {
				if n, err := p.PubSubNumSub(ctx, ch).Result(); err != nil || n[ch] != want {
					return false
				}
			}
			return true
		}, 30*time.Second, 50*time.Millisecond)
		return ps
	}
	sub0 := subscribe(cs[0], "jobs", cs, 1)
	_ = subscribe(cs[1], "jobs", cs, 2)
	recv := func(ps *redis.PubSub, want string) {
		t.Helper()
		select {
		case m := <-ps.Channel():
			require.Equal(t, want, m.Payload)
		case <-time.After(20 * time.Second):
			t.Fatalf("%q never arrived", want)
		}
	}
	require.EqualValues(t, 2, cs[2].Publish(ctx, "jobs", "before").Val())
	recv(sub0, "before")

	nodes[1].kill()
	// The dead instance's subscriber is gone at once: its link is refused.
	for i := range 20 {
		msg := fmt.Sprint("after-", i)
		require.EqualValues(t, 1, cs[2].Publish(ctx, "jobs", msg).Val(), msg)
		recv(sub0, msg)
	}

	// A new instance on the table is linked and its subscribers counted.
	cs[1] = nodes[1].start()
	_ = subscribe(cs[1], "jobs", []*redis.Client{cs[0], cs[2]}, 2)
	require.EqualValues(t, 2, cs[2].Publish(ctx, "jobs", "again").Val())
	recv(sub0, "again")
}
