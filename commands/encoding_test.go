package commands_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// encodingDefaults are Redis 7.0.15's encoding parameters as a server
// without a configuration file has them (each case starts from them).
var encodingDefaults = []any{
	"hash-max-listpack-entries", "512", "hash-max-listpack-value", "64",
	"set-max-intset-entries", "512", "list-max-listpack-size", "-2",
	"zset-max-listpack-entries", "128", "zset-max-listpack-value", "64",
}

// redamoEncodingDefaults adds Redis 7.2's set parameters, which Redis
// 7.0.15 does not know.
var redamoEncodingDefaults = append([]any{"set-max-listpack-entries", "128", "set-max-listpack-value", "64"}, encodingDefaults...)

// realRedis starts a redis-server for the test, or returns nil when none
// is installed (the Redis half of a test is then skipped).
func realRedis(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Log("redis-server is not installed: comparing with Redis skipped")
		return nil
	}
	c := redis.NewClient(&redis.Options{Addr: testserver.RedisServer(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// members returns n arguments prefix0 value prefix1 value ... (value "" for
// none: set members or list elements).
func members(prefix string, n int, value string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(" " + prefix + strconv.Itoa(i))
		if value != "" {
			b.WriteString(" " + value)
		}
	}
	return b.String()
}

// layoutOf tells how key (db 0) is stored: "inline", "large" or "none".
func layoutOf(t *testing.T, st dynastore.Store, key string) string {
	t.Helper()
	it, err := st.Get(context.Background(), commands.KeyItemKeyForTest(0, key))
	require.NoError(t, err)
	switch {
	case it == nil:
		return "none"
	case commands.GenerationForTest(it) != nil:
		return "large"
	}
	return "inline"
}

// The encoding parameters decide OBJECT ENCODING as in Redis 7.0.15 (the
// same commands run on a redis-server when one is installed) and bound
// redamo's inline layout: within both a parameter and redamo's cap a
// collection stays in its key item, past either it is paged.
func TestEncodingParams(t *testing.T) {
	long := strings.Repeat("x", 65)
	cases := []struct {
		name       string
		build      []string // commands, CONFIG SET included
		enc        string   // OBJECT ENCODING k, as Redis 7.0.15 answers
		layout     string
		redamoOnly bool // uses Redis 7.2's set-max-listpack-*
	}{
		{name: "hash by default", build: []string{"HSET k a 1 b 2 c 3"}, enc: "listpack", layout: "inline"},
		{name: "hash past its entries", build: []string{"CONFIG SET hash-max-listpack-entries 2", "HSET k a 1 b 2 c 3"}, enc: "hashtable", layout: "large"},
		{name: "hash at its entries", build: []string{"CONFIG SET hash-max-listpack-entries 2", "HSET k a 1 b 2"}, enc: "listpack", layout: "inline"},
		{name: "hash alias", build: []string{"CONFIG SET hash-max-ziplist-entries 2", "HSET k a 1 b 2 c 3"}, enc: "hashtable", layout: "large"},
		{name: "hash value past its limit", build: []string{"CONFIG SET hash-max-listpack-value 4", "HSET k a 12345"}, enc: "hashtable", layout: "large"},
		{name: "hash field past its limit", build: []string{"CONFIG SET hash-max-ziplist-value 4", "HSET k abcde 1"}, enc: "hashtable", layout: "large"},
		{name: "hash value at its limit", build: []string{"CONFIG SET hash-max-listpack-value 4", "HSET k abcd 1234"}, enc: "listpack", layout: "inline"},
		{name: "hash of no entries", build: []string{"CONFIG SET hash-max-listpack-entries 0", "HSET k a 1"}, enc: "hashtable", layout: "large"},
		{name: "hsetnx of no entries", build: []string{"CONFIG SET hash-max-listpack-entries 0", "HSETNX k a 1"}, enc: "hashtable", layout: "large"},
		{name: "hincrby of no entries", build: []string{"CONFIG SET hash-max-listpack-entries 0", "HINCRBY k a 1"}, enc: "hashtable", layout: "large"},
		{name: "hincrby under a small value limit", build: []string{"CONFIG SET hash-max-listpack-value 10", "HINCRBY k a 5", "HINCRBY k a 5"}, enc: "listpack", layout: "inline"},
		{name: "hincrby past a small value limit", build: []string{"CONFIG SET hash-max-listpack-value 2", "HINCRBY k a 50", "HINCRBY k a 50"}, enc: "hashtable", layout: "large"},
		// Past redamo's cap of 64 entries the layout pages whatever the
		// parameter; OBJECT ENCODING still follows the parameter.
		{name: "hash past the cap", build: []string{"CONFIG SET hash-max-listpack-entries 1000", "HSET k" + members("f", 100, "v")}, enc: "listpack", layout: "large"},
		{name: "hash past the cap by default", build: []string{"HSET k" + members("f", 65, "v")}, enc: "listpack", layout: "large"},
		{name: "hash lowered under it", build: []string{"HSET k a 1 b 2 c 3", "CONFIG SET hash-max-listpack-entries 2", "HSET k d 4"}, enc: "hashtable", layout: "large"},
		{name: "intset", build: []string{"CONFIG SET set-max-intset-entries 2", "SADD k 1 2"}, enc: "intset", layout: "inline"},
		{name: "intset past its entries", build: []string{"CONFIG SET set-max-intset-entries 2", "SADD k 1 2 3"}, enc: "hashtable", layout: "inline"},
		{name: "set of strings", build: []string{"SADD k a b c"}, enc: "hashtable", layout: "inline"},
		{name: "set with a long member", build: []string{"SADD k a " + long}, enc: "hashtable", layout: "large"},
		{name: "set past its listpack entries", build: []string{"CONFIG SET set-max-listpack-entries 2", "SADD k a b c"}, enc: "hashtable", layout: "large", redamoOnly: true},
		{name: "set of no listpack entries", build: []string{"CONFIG SET set-max-listpack-entries 0", "SADD k 1"}, enc: "intset", layout: "large", redamoOnly: true},
		{name: "set past its listpack value", build: []string{"CONFIG SET set-max-listpack-value 3", "SADD k abcd"}, enc: "hashtable", layout: "large", redamoOnly: true},
		{name: "list by default", build: []string{"RPUSH k" + members("e", 128, "")}, enc: "quicklist", layout: "inline"},
		{name: "list past the default", build: []string{"RPUSH k" + members("e", 129, "")}, enc: "quicklist", layout: "large"},
		{name: "list past its size", build: []string{"CONFIG SET list-max-listpack-size 2", "RPUSH k a b c"}, enc: "quicklist", layout: "large"},
		{name: "list at its size", build: []string{"CONFIG SET list-max-listpack-size 2", "RPUSH k a b"}, enc: "quicklist", layout: "inline"},
		{name: "list pushed past its size", build: []string{"CONFIG SET list-max-listpack-size 2", "LPUSH k a", "LPUSH k b", "LPUSH k c"}, enc: "quicklist", layout: "large"},
		{name: "list alias", build: []string{"CONFIG SET list-max-ziplist-size 2", "RPUSH k a b c"}, enc: "quicklist", layout: "large"},
		{name: "list of size 0 holds one", build: []string{"CONFIG SET list-max-listpack-size 0", "RPUSH k a"}, enc: "quicklist", layout: "inline"},
		{name: "list of size 0", build: []string{"CONFIG SET list-max-listpack-size 0", "RPUSH k a b"}, enc: "quicklist", layout: "large"},
		{name: "list of 4 KB nodes", build: []string{"CONFIG SET list-max-listpack-size -1", "RPUSH k" + members("e", 64, "")}, enc: "quicklist", layout: "inline"},
		{name: "list past 4 KB nodes", build: []string{"CONFIG SET list-max-listpack-size -1", "RPUSH k" + members("e", 65, "")}, enc: "quicklist", layout: "large"},
		{name: "list inserted into past its size", build: []string{"RPUSH k a b", "CONFIG SET list-max-listpack-size 2", "LINSERT k BEFORE a z"}, enc: "quicklist", layout: "large"},
	}
	ref := realRedis(t)
	forBackends(t, func(t *testing.T, b collBackend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				type target struct {
					name     string
					cl       *redis.Client
					defaults []any
				}
				// Redis first: its answer is the reference.
				var targets []target
				if ref != nil && !tc.redamoOnly {
					targets = append(targets, target{"redis-server", ref, encodingDefaults})
				}
				targets = append(targets, target{"redamo", c, redamoEncodingDefaults})
				for _, tg := range targets {
					name, cl, defaults := tg.name, tg.cl, tg.defaults
					require.NoError(t, cl.Do(ctx, append([]any{"CONFIG", "SET"}, defaults...)...).Err())
					require.NoError(t, cl.FlushAll(ctx).Err())
					for _, cmd := range tc.build {
						require.NoError(t, cl.Do(ctx, args(cmd)...).Err(), "%s: %s", name, cmd)
					}
					require.Equal(t, tc.enc, cl.ObjectEncoding(ctx, "k").Val(), name)
				}
				require.Equal(t, tc.layout, layoutOf(t, b.store, "k"))
			})
		}
	})
}
