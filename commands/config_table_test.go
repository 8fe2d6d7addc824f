package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestKeyspaceEventsSettingIsTheTables: notify-keyspace-events holds for
// every instance of a table, as it holds for every client of one Redis
// server. CONFIG SET through one instance writes it to the table (one
// request) and the others apply it (at once as a rule: it is sent to them
// before the reply); an instance started later reads it at start.
func TestKeyspaceEventsSettingIsTheTables(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			a, z := b.Start(t), b.Start(t)
			ca, cz := a.Client(t), z.Client(t)
			require.Equal(t, map[string]string{"notify-keyspace-events": ""}, cz.ConfigGet(ctx, "notify-keyspace-events").Val())

			before := b.Stats.Snapshot()
			require.NoError(t, ca.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
			require.Equal(t, map[string]int64{dynastore.OpUpdateItem: 1}, testserver.RequestsSince(before, b.Stats.Snapshot(), "config|set"))
			// Applied by the connected instance before the reply as a
			// rule; a fresh-clone run once saw the faithful mode's
			// instance apply it a moment later (the fan-out missed it and
			// its next read of the table's setting took it), so the test
			// waits for it, boundedly.
			require.Eventually(t, func() bool {
				return cz.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"] == "AKE"
			}, 20*time.Second, 10*time.Millisecond, "applied on the other instance")
			later := b.Start(t).Client(t)
			require.Equal(t, map[string]string{"notify-keyspace-events": "AKE"}, later.ConfigGet(ctx, "notify-keyspace-events").Val(), "read at start")

			// A write through one instance is published on every one; the
			// events cost no request beyond the write's.
			subs := map[string]*redis.PubSub{"a": ca.PSubscribe(ctx, "__key*@0__:*"), "z": cz.PSubscribe(ctx, "__key*@0__:*"), "later": later.PSubscribe(ctx, "__key*@0__:*")}
			for _, ps := range subs {
				t.Cleanup(func() { _ = ps.Close() })
				_, err := ps.Receive(ctx)
				require.NoError(t, err)
			}
			before = b.Stats.Snapshot()
			require.NoError(t, cz.Set(ctx, "k", "v", 0).Err())
			require.Equal(t, map[string]int64{dynastore.OpPutItem: 1}, testserver.RequestsSince(before, b.Stats.Snapshot(), "set"))
			for name, ps := range subs {
				for _, want := range []string{"__keyspace@0__:k set", "__keyevent@0__:set k"} {
					select {
					case m := <-ps.Channel():
						require.Equal(t, want, m.Channel+" "+m.Payload, name)
					case <-time.After(20 * time.Second):
						t.Fatalf("%s: %q never came", name, want)
					}
				}
			}

			// CONFIG SET of another parameter writes nothing.
			before = b.Stats.Snapshot()
			require.NoError(t, ca.ConfigSet(ctx, "maxclients", "100").Err())
			require.Empty(t, testserver.RequestsSince(before, b.Stats.Snapshot(), "config|set"))

			require.NoError(t, later.ConfigSet(ctx, "notify-keyspace-events", "").Err())
			for i, c := range []string{"a", "z"} {
				got := []map[string]string{ca.ConfigGet(ctx, "notify-keyspace-events").Val(), cz.ConfigGet(ctx, "notify-keyspace-events").Val()}[i]
				require.Equal(t, map[string]string{"notify-keyspace-events": ""}, got, c)
			}
		})
	}
}

// TestClientOutputBufferLimitConfig: CONFIG SET client-output-buffer-limit
// takes Redis's syntax and answers Redis's errors; redamo applies the
// pubsub class, and refuses to change the classes it has no use for.
func TestClientOutputBufferLimitConfig(t *testing.T) {
	const def = "{client-output-buffer-limit=normal 0 0 0 slave 268435456 67108864 60 pubsub "
	const why = failed + "'client-output-buffer-limit') - "
	steps := []struct {
		set        string // CONFIG SET's value; "" with get: CONFIG GET
		get        bool
		want       string
		redamoOnly bool
	}{
		{get: true, want: def + "33554432 8388608 60}"},
		{set: "pubsub 1mb 256kb 60", want: "OK"},
		{get: true, want: def + "1048576 262144 60}"},
		{set: "pubsub 1 2", want: why + "Wrong number of arguments in buffer limit configuration."},
		{set: "master 1 2 3", want: why + "Invalid client class specified in buffer limit configuration."},
		{set: "pubsub 1 2 -1", want: why + "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{set: "pubsub x 2 3", want: why + "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{set: "pubsub 1 2 3x", want: why + "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{set: "PUBSUB 10 20 30 pubsub 11 21 31 normal 0 0 0", want: "OK"},
		{get: true, want: def + "11 21 31}"},
		{set: "", want: "OK"},
		{get: true, want: def + "11 21 31}"},
		{set: "replica 1 2 3", want: why + "redamo does not support changing it", redamoOnly: true},
		{set: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", want: "OK"},
		{get: true, want: def + "33554432 8388608 60}"},
	}
	run := func(t *testing.T, c *redis.Client, forRedis bool) {
		for _, st := range steps {
			if forRedis && st.redamoOnly {
				continue
			}
			if st.get {
				require.Equal(t, st.want, do(t, c, "CONFIG", "GET", "client-output-buffer-limit"))
				continue
			}
			require.Equal(t, st.want, do(t, c, "CONFIG", "SET", "client-output-buffer-limit", st.set), st.set)
		}
	}
	t.Run("redamo", func(t *testing.T) { run(t, testserver.Start(t, nil).Client(t), false) })
	t.Run("redis-server", func(t *testing.T) {
		if c := realRedis(t); c != nil {
			run(t, c, true)
		}
	})
}
