package commands_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// configStep is one command of a CONFIG test and its normalized reply
// (see norm) as redis-server 7.0.15 gives it; redamoOnly steps are about
// what Redis 7.0.15 lacks or redamo does not do.
type configStep struct {
	cmd, want  string
	redamoOnly bool
}

// runConfigSteps runs steps in order on redamo, and on a real redis-server
// when one is installed.
func runConfigSteps(t *testing.T, steps []configStep) {
	t.Helper()
	run := func(t *testing.T, c *redis.Client, forRedis bool) {
		for _, st := range steps {
			if forRedis && st.redamoOnly {
				continue
			}
			require.Equal(t, st.want, do(t, c, args(st.cmd)...), st.cmd)
		}
	}
	t.Run("redamo", func(t *testing.T) { run(t, testserver.Start(t, nil).Client(t), false) })
	t.Run("redis-server", func(t *testing.T) {
		if c := realRedis(t); c != nil {
			run(t, c, true)
		}
	})
}

// failed starts the normalized reply of a CONFIG SET that failed.
const failed = "ERR: ERR CONFIG SET failed (possibly related to argument "

func TestConfigEncodingParams(t *testing.T) {
	runConfigSteps(t, []configStep{
		{cmd: "CONFIG GET *max-*-entries*", want: "{hash-max-listpack-entries=512 hash-max-ziplist-entries=512 set-max-intset-entries=512 zset-max-listpack-entries=128 zset-max-ziplist-entries=128}"},
		{cmd: "CONFIG GET *-value", want: "{hash-max-listpack-value=64 hash-max-ziplist-value=64 zset-max-listpack-value=64 zset-max-ziplist-value=64}"},
		{cmd: "CONFIG GET list-max-*", want: "{list-max-listpack-size=-2 list-max-ziplist-size=-2}"},
		// A name is answered as asked; a pattern answers each alias apart.
		{cmd: "CONFIG GET HASH-MAX-ZIPLIST-ENTRIES", want: "{HASH-MAX-ZIPLIST-ENTRIES=512}"},
		{cmd: "CONFIG GET hash-max-ziplist-entries HASH-max-ZIPLIST-entries", want: "{hash-max-ziplist-entries=512}"},
		{cmd: "CONFIG GET hash-max-ziplist-entries hash-max-*-entries", want: "{hash-max-listpack-entries=512 hash-max-ziplist-entries=512}"},
		// Redis 7.2's set parameters: by name only, as Redis's hidden ones.
		{cmd: "CONFIG GET set-max-listpack-entries set-max-listpack-value", want: "{set-max-listpack-entries=128 set-max-listpack-value=64}", redamoOnly: true},
		{cmd: "CONFIG GET set-max-*", want: "{set-max-intset-entries=512}"},
		{cmd: "CONFIG GET key-load-delay", want: "{key-load-delay=0}"},
		{cmd: "CONFIG GET key-*", want: "{}"},

		// Sizes: 0 and up, as model.String2ll reads them.
		{cmd: "CONFIG SET hash-max-listpack-entries -1", want: failed + "'hash-max-listpack-entries') - argument must be between 0 and 9223372036854775807 inclusive"},
		{cmd: "CONFIG SET hash-max-ziplist-entries 007", want: failed + "'hash-max-ziplist-entries') - argument couldn't be parsed into an integer"},
		{cmd: "CONFIG SET set-max-intset-entries 1k", want: failed + "'set-max-intset-entries') - argument couldn't be parsed into an integer"},
		{cmd: "CONFIG SET zset-max-listpack-entries 9223372036854775808", want: failed + "'zset-max-listpack-entries') - argument couldn't be parsed into an integer"},
		// Memory values: units, no digits is 0, saturating past 64 bits.
		{cmd: "CONFIG SET hash-max-listpack-value 1.5", want: failed + "'hash-max-listpack-value') - argument must be a memory value"},
		{cmd: "CONFIG SET zset-max-ziplist-value -1", want: failed + "'zset-max-ziplist-value') - argument must be a memory value"},
		{cmd: "CONFIG SET hash-max-listpack-value 9223372036854775808", want: failed + "'hash-max-listpack-value') - argument must be between 0 and 9223372036854775807 inclusive"},
		{cmd: "CONFIG SET hash-max-listpack-value 99999999999999999999", want: failed + "'hash-max-listpack-value') - argument must be between 0 and 9223372036854775807 inclusive"},
		{cmd: "CONFIG SET set-max-listpack-value 1.5", want: failed + "'set-max-listpack-value') - argument must be a memory value", redamoOnly: true},
		// An int.
		{cmd: "CONFIG SET list-max-listpack-size 2147483648", want: failed + "'list-max-listpack-size') - argument must be between -2147483648 and 2147483647 inclusive"},
		{cmd: "CONFIG SET list-max-ziplist-size -0", want: failed + "'list-max-ziplist-size') - argument couldn't be parsed into an integer"},

		{cmd: "CONFIG SET hash-max-listpack-value 1KB zset-max-listpack-value 2k list-max-listpack-size -5", want: "OK"},
		{cmd: `CONFIG SET set-max-intset-entries 0 hash-max-ziplist-value ""`, want: "OK"},
		{cmd: "CONFIG GET hash-max-listpack-value zset-max-listpack-value list-max-ziplist-size set-max-intset-entries", want: "{hash-max-listpack-value=0 list-max-ziplist-size=-5 set-max-intset-entries=0 zset-max-listpack-value=2000}"},
		// A name and its alias are two parameters: the later one wins.
		{cmd: "CONFIG SET hash-max-ziplist-entries 5 hash-max-listpack-entries 6", want: "OK"},
		{cmd: "CONFIG GET hash-max-ziplist-entries", want: "{hash-max-ziplist-entries=6}"},
		{cmd: "CONFIG SET hash-max-listpack-entries 5 HASH-MAX-LISTPACK-ENTRIES 6", want: failed + "'HASH-MAX-LISTPACK-ENTRIES') - duplicate parameter"},
		// A failed CONFIG SET changes nothing.
		{cmd: "CONFIG SET hash-max-listpack-entries 7 zset-max-listpack-entries x", want: failed + "'zset-max-listpack-entries') - argument couldn't be parsed into an integer"},
		{cmd: "CONFIG GET hash-max-listpack-entries", want: "{hash-max-listpack-entries=6}"},
		{cmd: "CONFIG SET set-max-listpack-entries 3 set-max-listpack-value 4", want: "OK", redamoOnly: true},
		{cmd: "CONFIG GET set-max-listpack-entries set-max-listpack-value", want: "{set-max-listpack-entries=3 set-max-listpack-value=4}", redamoOnly: true},
	})
}

// Every parameter other than the encoding ones: Redis's value, and Redis's
// refusal for the immutable and protected ones; redamo refuses to change
// the others by name.
func TestConfigOtherParams(t *testing.T) {
	runConfigSteps(t, []configStep{
		{cmd: "CONFIG GET hz lua-time-limit busy-reply-threshold slave-priority", want: "{busy-reply-threshold=5000 hz=10 lua-time-limit=5000 slave-priority=100}"},
		{cmd: "CONFIG GET tls-*-file", want: "{tls-ca-cert-file= tls-cert-file= tls-client-cert-file= tls-client-key-file= tls-dh-params-file= tls-key-file=}"},
		{cmd: "CONFIG GET client-output-buffer-limit", want: "{client-output-buffer-limit=normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60}"},
		{cmd: "CONFIG SET daemonize yes", want: failed + "'daemonize') - can't set immutable config"},
		{cmd: "CONFIG SET dbfilename x.rdb", want: failed + "'dbfilename') - can't set protected config"},
		{cmd: "CONFIG SET hz 10 HZ 10", want: failed + "'HZ') - duplicate parameter"},
		{cmd: "CONFIG SET hz 10 slave-read-only YES", want: "OK"},
		{cmd: "CONFIG SET hz 11", want: failed + "'hz') - redamo does not support changing it", redamoOnly: true},
		{cmd: "CONFIG SET maxclients 0 notify-keyspace-events Ex", want: failed + "'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{cmd: "CONFIG SET maxclients 10 notify-keyspace-events Exq", want: failed + "'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."},
		{cmd: "CONFIG SET notify-keyspace-events Emn", want: "OK"},
		{cmd: "CONFIG GET notify-keyspace-events", want: "{notify-keyspace-events=nEm}"},
		{cmd: "CONFIG GET maxclients", want: "{maxclients=10000}"},
		{cmd: "CONFIG SET proto-max-bulk-len kb", want: failed + "'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"},
	})
}

// CONFIG GET * lists what a redis-server without a configuration file
// lists, with the same values but for where each listens and runs.
func TestConfigGetAllAsRedis(t *testing.T) {
	ref := realRedis(t)
	if ref == nil {
		t.Skip("needs redis-server")
	}
	ctx := context.Background()
	c := testserver.Start(t, nil).Client(t)
	want, err := ref.ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	got, err := c.ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	for _, p := range []string{"port", "dir"} {
		require.Contains(t, got, p)
		delete(got, p)
		delete(want, p)
	}
	require.Equal(t, want, got)
	// Setting a parameter to its value is refused or accepted alike.
	for name, v := range want {
		require.Equal(t, norm(ref.ConfigSet(ctx, name, v).Result()), norm(c.ConfigSet(ctx, name, v).Result()), name)
	}
}
