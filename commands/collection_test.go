package commands_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
)

// collBackend is one store a collection test runs on.
type collBackend struct {
	name  string
	store dynastore.Store
	stats *dynastore.Stats
	// big is the collection size the size tests use on this backend.
	big int
}

// collBackends returns a fresh memory store, and a fresh DynamoDB Local
// table when one is configured (see dynamotest).
func collBackends(t *testing.T) []collBackend {
	t.Helper()
	mst := dynastore.NewStats()
	out := []collBackend{{name: "memory", store: memory.New(memory.Options{Observer: mst}), stats: mst, big: 100_000}}
	if testingDynamo() {
		dst := dynastore.NewStats()
		out = append(out, collBackend{name: "dynamodb", store: dynamotest.NewStore(t, dynamo.Config{Observer: dst}), stats: dst, big: 20_000})
	} else {
		// Let dynamotest skip or fail (make test requires it) in a subtest.
		t.Run("dynamodb", func(t *testing.T) { dynamotest.Endpoint(t) })
	}
	return out
}

// collInstanceBackends is collBackends and the embedded store's
// AWS-faithful mode, for the tests across instances.
func collInstanceBackends(t *testing.T) []collBackend {
	t.Helper()
	f := testserver.Faithful(t, 1)
	return append(collBackends(t), collBackend{name: f.Name, store: f.Store, stats: f.Stats, big: 20_000})
}

func testingDynamo() bool { return os.Getenv(dynamotest.EnvEndpoint) != "" }

// forBackends runs body on a fresh server per backend.
func forBackends(t *testing.T, body func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client)) {
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := testserver.Start(t, b.store, testserver.WithStats(b.stats))
			body(t, b, s, s.Client(t))
		})
	}
}

// norm renders a reply for comparison: arrays and maps as [a b c] with
// their elements sorted (set and hash orders are not defined), errors as
// "ERR: ...", nil as "nil".
func norm(v any, err error) string {
	if errors.Is(err, redis.Nil) {
		return "nil"
	}
	if err != nil {
		return "ERR: " + err.Error()
	}
	return normValue(v)
}

func normValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = normValue(x)
		}
		sort.Strings(parts)
		return "[" + strings.Join(parts, " ") + "]"
	case map[any]any:
		var parts []string
		for k, x := range v {
			parts = append(parts, normValue(k)+"="+normValue(x))
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, " ") + "}"
	default:
		return fmt.Sprint(v)
	}
}

func do(t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	return norm(c.Do(context.Background(), args...).Result())
}

func args(s string) []any {
	var out []any
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, f)
	}
	return out
}

// TestCollectionScripts runs command scripts (testdata/collections.txt:
// "command -> normalized reply" per line, "---" between scripts) on every
// backend, each script on an empty db.
func TestCollectionScripts(t *testing.T) {
	scripts := loadScripts(t, "testdata/collections.txt")
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		for i, sc := range scripts {
			require.NoError(t, c.FlushAll(context.Background()).Err())
			for _, st := range sc {
				require.Equal(t, st.want, do(t, c, args(st.cmd)...), "script %d line %d: %s", i, st.line, st.cmd)
			}
		}
	})
}

type scriptStep struct {
	line      int
	cmd, want string
}

func loadScripts(t *testing.T, path string) [][]scriptStep {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]scriptStep
	var cur []scriptStep
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == "---":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cmd, want, ok := strings.Cut(line+" ", " -> ")
		want = strings.TrimSuffix(want, " ")
		require.True(t, ok, "%s:%d: no ' -> '", path, i+1)
		cur = append(cur, scriptStep{line: i + 1, cmd: cmd, want: want})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	require.NotEmpty(t, out)
	return out
}

// TestCollectionRequestCounts checks the DynamoDB requests each command
// costs, on small (inline) and large collections, as one instance sees
// them: its caches know the collections it wrote or read.
func TestCollectionRequestCounts(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		// A large set and hash: more entries than the inline limit.
		members := make([]any, 0, 300)
		pairs := make([]any, 0, 600)
		for i := 0; i < 300; i++ {
			members = append(members, "m"+strconv.Itoa(i))
			pairs = append(pairs, "f"+strconv.Itoa(i), strconv.Itoa(i))
		}
		require.NoError(t, c.SAdd(ctx, "big", members...).Err())
		require.NoError(t, c.HSet(ctx, "bigh", pairs...).Err())
		require.NoError(t, c.SAdd(ctx, "small", "a", "b").Err())
		require.NoError(t, c.HSet(ctx, "smallh", "a", "1").Err())

		cases := []struct {
			cmd  string
			want string
			n    int64
		}{
			{"sadd small c", "1", 1},
			{"sadd small c", "0", 1},
			{"srem small c", "1", 1},
			{"sismember small a", "1", 1},
			{"scard small", "2", 1},
			{"smembers small", "[a b]", 1},
			{"hset smallh b 2", "1", 1},
			{"hset smallh b 3", "0", 1},
			{"hincrby smallh b 5", "8", 1},
			{"hsetnx smallh c 1", "1", 1},
			{"hdel smallh b c", "2", 1},
			{"hget smallh a", "1", 1},
			{"hlen smallh", "1", 1},
			{"sadd fresh x", "1", 1},
			{"hset freshh x y", "1", 1},
			{"srem small zz", "0", 1},
			// The last member: the fast path fails (it cannot empty the
			// key), the general path deletes the key item.
			{"srem fresh x", "1", 2},
			{"sadd fresh y", "1", 1},
			// Large collections this instance built: a blind write is one
			// transaction (TestCollectionCachesAcrossInstances covers those
			// another instance built).
			{"sadd big new", "1", 1},
			{"hset bigh brandnew v", "1", 1},
			{"sadd big new", "0", 1},
			{"sadd big new2", "1", 1},
			{"srem big new", "1", 1},
			{"srem big nosuch", "0", 1},
			{"sismember big m7", "1", 2},
			{"scard big", "301", 1},
			{"hlen bigh", "301", 1},
			{"hset bigh f1 x", "0", 2},
			{"hset bigh brandnew2 v", "1", 1},
			{"hincrby bigh f2 5", "7", 3},
			{"hdel bigh f3", "1", 1},
			{"hget bigh f4", "4", 2},
			{"del big", "1", 1},
			{"scard big", "0", 1},
		}
		for _, tc := range cases {
			b.stats.Reset()
			a := args(tc.cmd)
			require.Equal(t, tc.want, do(t, c, a...), tc.cmd)
			name := strings.ToLower(a[0].(string))
			require.Equal(t, tc.n, b.stats.Requests(name), "%s: requests %v", tc.cmd, b.stats.Keys())
		}

		// Several members of a known large collection: one read of the key
		// item and the members, then one transaction (no inline
		// UpdateItem), or none when nothing changes.
		require.NoError(t, c.SAdd(ctx, "big", members...).Err())
		// tx is the transactions, card SCARD/HLEN afterwards, check a reply
		// in argument order.
		for _, tc := range []struct {
			cmd, want              string
			tx                     int64
			card, check, checkWant string
		}{
			{"sadd big new3 new4 m1", "2", 1, "scard big -> 302", "smismember big new3 new4 m1 m2", "[1 1 1 1]"},
			{"sadd big m1 m2", "0", 0, "scard big -> 302", "smismember big m1 m2", "[1 1]"},
			{"srem big new3 new4 zz", "2", 1, "scard big -> 300", "smismember big new3 new4 zz m1", "[0 0 0 1]"},
			{"srem big zz yy", "0", 0, "scard big -> 300", "smismember big zz yy", "[0 0]"},
			{"hset bigh g1 a g2 b f1 c", "2", 1, "hlen bigh -> 303", "hmget bigh g1 g2 f1 f2", "[a b c 7]"},
			{"hmset bigh g1 x g3 y", "OK", 1, "hlen bigh -> 304", "hmget bigh g1 g3 g2", "[x y b]"},
			{"hdel bigh g1 g2 g3 nosuch", "3", 1, "hlen bigh -> 301", "hmget bigh g1 g2 g3 f1", "[<nil> <nil> <nil> c]"},
		} {
			b.stats.Reset()
			a := args(tc.cmd)
			require.Equal(t, tc.want, do(t, c, a...), tc.cmd)
			name := strings.ToLower(a[0].(string))
			require.Equal(t, int64(0), b.stats.Requests(name, dynastore.OpGetItem), "%s: requests %v", tc.cmd, b.stats.Keys())
			require.Equal(t, int64(1), b.stats.Requests(name, dynastore.OpBatchGetItem), tc.cmd)
			require.Equal(t, tc.tx, b.stats.Requests(name, dynastore.OpTransactWriteItems), tc.cmd)
			require.Equal(t, 1+tc.tx, b.stats.Requests(name), tc.cmd)
			card, cardWant, _ := strings.Cut(tc.card, " -> ")
			require.Equal(t, cardWant, do(t, c, args(card)...), tc.cmd)
			got, err := c.Do(ctx, args(tc.check)...).Result()
			require.NoError(t, err, tc.check)
			require.Equal(t, tc.checkWant, fmt.Sprint(got), tc.check)
		}
		require.ElementsMatch(t, members, toAny(c.SMembers(ctx, "big").Val()))
		h := c.HGetAll(ctx, "bigh").Val()
		require.Len(t, h, 301)
		require.Equal(t, "c", h["f1"])
		require.Equal(t, "v", h["brandnew"])
	})
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// errInjected is the failure the test stores inject.
var errInjected = fmt.Errorf("injected: %w", dynastore.ErrUnavailable)

// TestCollectionConcurrency runs several server instances on one store and
// checks invariants under concurrent writers.
func TestCollectionConcurrency(t *testing.T) {
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st := b.store
			if b.name == "memory" {
				// Open the window between a read and the transaction
				// that depends on it, as DynamoDB's latency does.
				st = slowReads{st}
			}
			var clients []*redis.Client
			for i := 0; i < 3; i++ {
				// A contended command may retry for seconds on a loaded
				// machine; this test is about the sums, not latency.
				clients = append(clients, testserver.Start(t, st).Client(t))
			}
			const workers, ops = 9, 40
			// A large set every instance knows: its writes of several
			// members read them and commit in one transaction; their
			// replies must add up to its count.
			const largeInit = 200
			large := make([]any, largeInit)
			for i := range large {
				large[i] = "l" + strconv.Itoa(i)
			}
			require.NoError(t, clients[0].SAdd(ctx, "ls", large...).Err())
			for _, c := range clients {
				require.EqualValues(t, largeInit, c.SCard(ctx, "ls").Val())
			}
			var largeAdded, largeRemoved atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					c := clients[w%len(clients)]
					for i := 0; i < ops; i++ {
						m := "m" + strconv.Itoa((w*7+i)%150) // crosses the inline limit
						if err := c.HIncrBy(ctx, "counter", "f"+strconv.Itoa(i%3), 1).Err(); err != nil {
							errs <- fmt.Errorf("hincrby: %w", err)
							return
						}
						if err := c.SAdd(ctx, "s", m).Err(); err != nil {
							errs <- fmt.Errorf("sadd %s: %w", m, err)
							return
						}
						if i%3 == 0 {
							if err := c.SRem(ctx, "s", m).Err(); err != nil {
								errs <- fmt.Errorf("srem %s: %w", m, err)
								return
							}
						}
						if i%2 == 0 {
							// Overlapping picks from 260 members, so
							// writers race on the same ones.
							pick := func(k int) string { return "l" + strconv.Itoa((w*37+i*11+k*53)%260) }
							n, err := c.SAdd(ctx, "ls", pick(0), pick(1), pick(2)).Result()
							if err != nil {
								errs <- fmt.Errorf("sadd ls: %w", err)
								return
							}
							largeAdded.Add(n)
							n, err = c.SRem(ctx, "ls", pick(3), pick(4)).Result()
							if err != nil {
								errs <- fmt.Errorf("srem ls: %w", err)
								return
							}
							largeRemoved.Add(n)
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			c := clients[0]
			total := int64(0)
			for k, v := range c.HGetAll(ctx, "counter").Val() {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err, k)
				total += n
			}
			require.EqualValues(t, workers*ops, total)
			require.EqualValues(t, len(c.SMembers(ctx, "s").Val()), c.SCard(ctx, "s").Val())
			card := c.SCard(ctx, "ls").Val()
			require.EqualValues(t, len(c.SMembers(ctx, "ls").Val()), card)
			require.EqualValues(t, largeInit+largeAdded.Load()-largeRemoved.Load(), card)
		})
	}
}

// slowReads answers each BatchGet after a short pause.
type slowReads struct{ dynastore.Store }

func (s slowReads) BatchGet(ctx context.Context, k []dynastore.Key) ([]dynastore.Item, error) {
	items, err := s.Store.BatchGet(ctx, k)
	time.Sleep(200 * time.Microsecond)
	return items, err
}

// TestCollectionsAtSize builds a set, a hash and a sorted set of b.big
// entries with one command each, then uses them.
func TestCollectionsAtSize(t *testing.T) {
	if testing.Short() {
		t.Skip("size test")
	}
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, _ *redis.Client) {
		ctx := context.Background()
		// Building the collections is one command each, doing n writes.
		c := s.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Minute })
		n := b.big
		members := make([]any, n)
		pairs := make([]any, 0, 2*n)
		for i := range members {
			members[i] = "member:" + strconv.Itoa(i)
			pairs = append(pairs, "field:"+strconv.Itoa(i), strconv.Itoa(i))
		}
		require.EqualValues(t, n, mustInt(t, c.SAdd(ctx, "set", members...)))
		require.EqualValues(t, n, mustInt(t, c.HSet(ctx, "hash", pairs...)))
		zs := make([]redis.Z, n)
		for i := range zs {
			zs[i] = redis.Z{Score: float64(i), Member: members[i]}
		}
		require.EqualValues(t, n, mustInt(t, c.ZAdd(ctx, "zset", zs...)))
		b.stats.Reset()
		require.EqualValues(t, n, c.ZCard(ctx, "zset").Val())
		require.EqualValues(t, 1, b.stats.Requests("zcard"))
		require.Equal(t, 12345.0, c.ZScore(ctx, "zset", "member:12345").Val())
		require.Equal(t, []string{"member:777", "member:778"}, c.ZRangeByScore(ctx, "zset", &redis.ZRangeBy{Min: "777", Max: "+inf", Count: 2}).Val())
		require.LessOrEqual(t, b.stats.Requests("zrangebyscore"), int64(2), "a page of the order, not the set")
		require.Equal(t, []redis.Z{{Score: 0, Member: "member:0"}}, c.ZPopMin(ctx, "zset").Val())
		require.LessOrEqual(t, b.stats.Requests("zpopmin"), int64(3))
		require.EqualValues(t, 1, mustInt(t, c.ZAdd(ctx, "zset", redis.Z{Score: -1, Member: "first"})))
		require.LessOrEqual(t, b.stats.Requests("zadd"), int64(3))
		require.EqualValues(t, 0, c.ZRank(ctx, "zset", "first").Val())
		require.EqualValues(t, n-1, c.ZRevRank(ctx, "zset", "first").Val())

		b.stats.Reset()
		require.EqualValues(t, n, c.SCard(ctx, "set").Val())
		require.EqualValues(t, n, c.HLen(ctx, "hash").Val())
		require.EqualValues(t, 1, b.stats.Requests("scard"))
		require.EqualValues(t, 1, b.stats.Requests("hlen"))

		require.True(t, c.SIsMember(ctx, "set", "member:12345").Val())
		require.Equal(t, "777", c.HGet(ctx, "hash", "field:777").Val())
		require.EqualValues(t, 1, c.SAdd(ctx, "set", "extra").Val())
		require.EqualValues(t, 1, c.SRem(ctx, "set", "member:0").Val())
		require.EqualValues(t, 778, c.HIncrBy(ctx, "hash", "field:777", 1).Val())
		require.LessOrEqual(t, b.stats.Requests("sadd"), int64(3))
		require.LessOrEqual(t, b.stats.Requests("srem"), int64(3))
		require.LessOrEqual(t, b.stats.Requests("hincrby"), int64(3))

		all, err := c.SMembers(ctx, "set").Result()
		require.NoError(t, err)
		require.Len(t, all, n)
		h, err := c.HGetAll(ctx, "hash").Result()
		require.NoError(t, err)
		require.Len(t, h, n)
		require.Equal(t, "778", h["field:777"])

		// SSCAN walks the whole set, page by page, statelessly.
		seen := map[string]bool{}
		var cursor uint64
		for {
			keys, next, err := c.SScan(ctx, "set", cursor, "", 5000).Result()
			require.NoError(t, err)
			for _, k := range keys {
				seen[k] = true
			}
			if next == 0 {
				break
			}
			cursor = next
		}
		require.Len(t, seen, n)

		b.stats.Reset()
		require.EqualValues(t, 3, c.Del(ctx, "set", "hash", "zset").Val())
		require.LessOrEqual(t, b.stats.Requests("del"), int64(3))
		require.EqualValues(t, 0, c.Exists(ctx, "set", "hash", "zset").Val())
	})
}

func mustInt(t *testing.T, cmd *redis.IntCmd) int64 {
	t.Helper()
	n, err := cmd.Result()
	require.NoError(t, err)
	return n
}

// TestCollectionScanAcrossInstances pages through a large set and hash with
// SSCAN/HSCAN, alternating between two server instances on one store: the
// cursor is in the table, not in either process.
func TestCollectionScanAcrossInstances(t *testing.T) {
	for _, b := range collInstanceBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			a := testserver.Start(t, b.store).Client(t)
			z := testserver.Start(t, b.store).Client(t)
			members := make([]any, 0, 300)
			pairs := make([]any, 0, 600)
			for i := 0; i < 300; i++ {
				members = append(members, "m"+strconv.Itoa(i))
				pairs = append(pairs, "f"+strconv.Itoa(i), strconv.Itoa(i))
			}
			require.NoError(t, a.SAdd(ctx, "s", members...).Err())
			require.NoError(t, a.HSet(ctx, "h", pairs...).Err())
			clients := []*redis.Client{a, z}
			seen := map[string]int{}
			var cursor uint64
			for i := 0; ; i++ {
				keys, next, err := clients[i%2].SScan(ctx, "s", cursor, "m1*", 25).Result()
				require.NoError(t, err)
				for _, k := range keys {
					seen[k]++
				}
				if next == 0 {
					break
				}
				cursor = next
			}
			// m1, m10..m19, m100..m199: every match exactly once.
			require.Len(t, seen, 111)
			for k, n := range seen {
				require.Equal(t, 1, n, k)
			}
			fields := map[string]string{}
			cursor = 0
			for i := 0; ; i++ {
				kv, next, err := clients[i%2].HScan(ctx, "h", cursor, "", 40).Result()
				require.NoError(t, err)
				require.Zero(t, len(kv)%2)
				for j := 0; j < len(kv); j += 2 {
					fields[kv[j]] = kv[j+1]
				}
				if next == 0 {
					break
				}
				cursor = next
			}
			require.Len(t, fields, 300)
			require.Equal(t, "123", fields["f123"])
		})
	}
}

// TestCollectionScanAcrossRewrite: an SSCAN goes on after its set was
// rewritten into a new generation (COPY, then RENAME over it), and returns
// every member present throughout, as Redis's SCAN guarantees.
func TestCollectionScanAcrossRewrite(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		members := make([]any, 300)
		for i := range members {
			members[i] = "m" + strconv.Itoa(i)
		}
		require.NoError(t, c.SAdd(ctx, "s", members...).Err())
		seen := map[string]bool{}
		var cursor uint64
		for i := 0; ; i++ {
			if i == 2 {
				require.EqualValues(t, 1, c.Copy(ctx, "s", "t", 0, false).Val())
				require.NoError(t, c.Rename(ctx, "t", "s").Err())
			}
			keys, next, err := c.SScan(ctx, "s", cursor, "", 40).Result()
			require.NoError(t, err)
			for _, k := range keys {
				seen[k] = true
			}
			if next == 0 {
				require.Greater(t, i, 2, "the rewrite came mid-iteration")
				break
			}
			cursor = next
		}
		require.Len(t, seen, len(members))
	})
}

// FuzzParseScanCursor checks the cursor parser against strtoul's rules on
// the C string Redis sees (cut at the first NUL byte).
func FuzzParseScanCursor(f *testing.F) {
	for _, s := range []string{"0", "", "-1", "+5", "18446744073709551615", "18446744073709551616", " 1", "1 ", "0x10", "--1", "7\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := commands.ParseScanCursorForTest([]byte(s))
		if !ok {
			return
		}
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		body := strings.TrimLeft(s, "+-")
		if len(s)-len(body) > 1 {
			t.Fatalf("%q: accepted more than one sign", s)
		}
		if body == "" {
			require.Empty(t, s)
			require.Zero(t, c)
			return
		}
		u, err := strconv.ParseUint(body, 10, 64)
		require.NoError(t, err, s)
		if strings.HasPrefix(s, "-") {
			u = -u
		}
		require.Equal(t, u, c, s)
	})
}

// TestCollectionCachesAcrossInstances has instance b change keys behind
// instance a's caches (its exact key items and its large collections'
// generations): DEL, re-creation, RENAME, type changes, expiry, layout
// changes both ways. a's replies must be what Redis would send; a stale
// cache may only cost requests. Each step is "instance command -> reply",
// with " #n" when it must cost n requests (which shows the path taken).
func TestCollectionCachesAcrossInstances(t *testing.T) {
	big := func(prefix string, n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = prefix + strconv.Itoa(i)
		}
		return strings.Join(parts, " ")
	}
	bigPairs := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = "f" + strconv.Itoa(i) + " " + strconv.Itoa(i)
		}
		return strings.Join(parts, " ")
	}
	// setOf and hashOf are the normalized replies of SMEMBERS and HGETALL.
	setOf := func(members string) string {
		f := strings.Fields(members)
		sort.Strings(f)
		return "[" + strings.Join(f, " ") + "]"
	}
	hashOf := func(pairs string) string {
		f := strings.Fields(pairs)
		var kv []string
		for i := 0; i+1 < len(f); i += 2 {
			kv = append(kv, f[i]+"="+f[i+1])
		}
		sort.Strings(kv)
		return "{" + strings.Join(kv, " ") + "}"
	}
	wrongType := "ERR: WRONGTYPE Operation against a key holding the wrong kind of value"
	scripts := []struct {
		name  string
		steps []string
	}{
		// A whole read of a large collection a knows reads the first page
		// of members beside the key item (2 requests); a page of a stale
		// generation is dropped and read again (3).
		{"large set read after changes elsewhere", []string{
			"a sadd R " + big("m", 200) + " -> 200", "a scard R -> 200",
			"a smembers R -> " + setOf(big("m", 200)) + " #2",
			"b del R -> 1", "b sadd R " + big("n", 150) + " -> 150",
			"a smembers R -> " + setOf(big("n", 150)) + " #3",
			"a smembers R -> " + setOf(big("n", 150)) + " #2",
			"b del R -> 1", "b set R v -> OK",
			"a smembers R -> " + wrongType + " #2", "a smembers R -> " + wrongType + " #1",
		}},
		{"large hash read after a rename elsewhere", []string{
			"a hset H " + bigPairs(100) + " -> 100", "a hgetall H -> " + hashOf(bigPairs(100)) + " #2",
			"b rename H H2 -> OK", "b hset H x 1 -> 1",
			"a hgetall H -> {x=1} #2", "a hgetall H -> {x=1} #1",
			"a hgetall H2 -> " + hashOf(bigPairs(100)) + " #2",
			"b del H2 -> 1", "a hgetall H2 -> {} #2", "a hgetall H2 -> {} #1",
		}},
		{"small set deleted and re-created", []string{
			// The second SADD of y: the cached set already holds it, so the
			// update goes out under its full condition at once, which
			// holds on the deleted set.
			"a sadd s x -> 1", "a sadd s y -> 1 #1", "b del s -> 1", "a sadd s y -> 1 #1",
			"b sadd s z -> 1", "a sadd s z -> 0 #1", "a srem s y -> 1 #1", "a smembers s -> [z]",
		}},
		{"small hash changed elsewhere", []string{
			"a hset h f 1 -> 1", "b hset h f 2 -> 0", "a hincrby h f 1 -> 3 #2",
			"b hdel h f -> 1", "a hsetnx h f 9 -> 1", "b hset h g 1 -> 1", "a hdel h g -> 1",
			"a hgetall h -> {f=9}",
		}},
		{"small set becomes a string", []string{
			"a sadd k x -> 1", "b del k -> 1", "b set k v -> OK",
			"a sadd k y -> ERR: WRONGTYPE Operation against a key holding the wrong kind of value",
			"a srem k v -> ERR: WRONGTYPE Operation against a key holding the wrong kind of value",
			"a get k -> v",
		}},
		{"small set expires", []string{
			"a sadd e x -> 1", "b pexpire e 1 -> 1", "sleep", "a sadd e y -> 1 #2", "a smembers e -> [y]", "a ttl e -> -1",
		}},
		{"small set grows large elsewhere", []string{
			"a sadd g x -> 1", "b sadd g " + big("m", 200) + " -> 200", "a sadd g x -> 0", "a sadd g new -> 1",
			"a srem g m7 -> 1", "a scard g -> 201",
		}},
		{"large set deleted and re-created", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b del L -> 1", "b sadd L " + big("n", 150) + " -> 150",
			"a sadd L m1 -> 1 #2", "a sadd L n1 -> 0 #1", "a srem L n2 -> 1 #1", "a scard L -> 150",
			"a sismember L m2 -> 0",
		}},
		{"large set shrinks inline elsewhere", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b del L -> 1", "b sadd L x -> 1",
			"a srem L x -> 1", "a exists L -> 0", "a sadd L y -> 1", "a smembers L -> [y]",
		}},
		{"large set renamed away and back", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b rename L L2 -> OK", "a sadd L z -> 1 #2", "a scard L2 -> 200", "a smembers L -> [z]",
			"b del L -> 1", "b rename L2 L -> OK", "a sadd L z -> 1 #2", "a scard L -> 201",
		}},
		{"large hash becomes a large set", []string{
			"a hset H " + bigPairs(100) + " -> 100", "a hlen H -> 100",
			"b del H -> 1", "b sadd H " + big("f", 200) + " -> 200",
			"a hset H f1 x -> ERR: WRONGTYPE Operation against a key holding the wrong kind of value #1",
			"a hdel H f1 -> ERR: WRONGTYPE Operation against a key holding the wrong kind of value",
			"a scard H -> 200",
		}},
		{"large set expires", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b pexpire L 1 -> 1", "sleep", "a sadd L m1 -> 1 #2", "a scard L -> 1",
		}},
		{"large set emptied to one member", []string{
			"a sadd L " + big("m", 130) + " -> 130", "a scard L -> 130",
			// Two removals of fewer members than a transaction holds:
			// L keeps its generation.
			"b srem L " + big("m", 64) + " -> 64",
			"b srem L " + strings.TrimPrefix(big("m", 129), big("m", 64)+" ") + " -> 65",
			"a srem L m129 -> 1 #3", "a exists L -> 0",
		}},
		// Several members of a large collection a knows: a reads its key
		// item and them in one BatchGet and writes them in one transaction
		// (#2); when the key item no longer holds the generation, the
		// general path goes on from the key item read.
		{"several members after re-creation elsewhere", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"a sadd L m1 m2 x1 -> 1 #2",
			"b del L -> 1", "b sadd L " + big("n", 150) + " -> 150",
			"a sadd L m1 n1 x -> 2 #3", "a scard L -> 152",
			"a sismember L m1 -> 1", "a sismember L x -> 1", "a sismember L m2 -> 0", "a sismember L x1 -> 0",
			"a srem L n1 n2 zz -> 2 #2", "a scard L -> 150", "a sismember L n1 -> 0", "a sismember L n3 -> 1",
			"b del L -> 1", "a srem L n3 n4 -> 0 #1", "a exists L -> 0",
		}},
		{"several members of a large hash after re-creation elsewhere", []string{
			"a hset H " + bigPairs(100) + " -> 100", "a hlen H -> 100",
			"b del H -> 1", "b hset H " + bigPairs(70) + " -> 70",
			"a hset H f1 x f99 y -> 1 #3", "a hlen H -> 71", "a hget H f1 -> x", "a hget H f99 -> y", "a hget H f98 -> nil",
			"a hdel H f1 f2 f98 -> 2 #2", "a hlen H -> 69", "a hget H f1 -> nil", "a hget H f3 -> 3",
		}},
		{"several members after a rename elsewhere", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b rename L L2 -> OK",
			"a sadd L m1 z -> 2 #2", "a smembers L -> [m1 z]", "a scard L2 -> 200",
			"a srem L2 m1 m2 zz -> 2 #2", "a srem L2 m3 m4 -> 2 #2", "a scard L2 -> 196",
			"b rename L2 L -> OK", "a srem L2 m5 m6 -> 0 #1", "a srem L m5 m6 -> 2", "a scard L -> 194",
		}},
		{"several members changed elsewhere first", []string{
			"a sadd L " + big("m", 200) + " -> 200", "a scard L -> 200",
			"b srem L m5 -> 1", "b sadd L x -> 1",
			"a sadd L m5 x y -> 2 #2", "a scard L -> 202", "a sismember L m5 -> 1", "a sismember L y -> 1",
			"b srem L m6 -> 1", "b sadd L zz -> 1",
			"a srem L x m6 m7 zz -> 3 #2", "a scard L -> 199", "a sismember L m6 -> 0", "a sismember L zz -> 0",
			"a hset H " + bigPairs(100) + " -> 100", "a hlen H -> 100",
			"b hdel H f1 -> 1", "b hset H new1 x -> 1",
			"a hset H f1 a f2 b new1 c new2 d -> 2 #2", "a hlen H -> 102",
			"a hget H f1 -> a", "a hget H f2 -> b", "a hget H new1 -> c", "a hget H new2 -> d",
		}},
		{"several members of a large hash that became a string", []string{
			"a hset H " + bigPairs(100) + " -> 100", "a hlen H -> 100",
			"b del H -> 1", "b set H v -> OK",
			"a hset H f1 x f2 y -> " + wrongType + " #1",
			"a hdel H f1 f2 -> " + wrongType, "a get H -> v",
		}},
		{"large set emptied by several members", []string{
			"a sadd L " + big("m", 130) + " -> 130", "a scard L -> 130",
			"b srem L " + big("m", 64) + " -> 64",
			"b srem L " + strings.TrimPrefix(big("m", 127), big("m", 64)+" ") + " -> 63",
			// Down to m127..m129: a's removal of two keeps one member;
			// the one that would empty L fails genLiveCond and the general
			// path deletes the key item.
			"a srem L m127 zz -> 1 #2", "a scard L -> 2",
			"a srem L m128 m129 zz -> 2 #3", "a exists L -> 0",
		}},
	}
	for _, b := range collInstanceBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			clients := map[string]*redis.Client{
				"a": testserver.Start(t, b.store).Client(t),
				"b": testserver.Start(t, b.store).Client(t),
			}
			for _, sc := range scripts {
				t.Run(sc.name, func(t *testing.T) {
					require.NoError(t, clients["a"].FlushAll(ctx).Err())
					for _, st := range sc.steps {
						if st == "sleep" {
							time.Sleep(5 * time.Millisecond)
							continue
						}
						cmd, want, ok := strings.Cut(st, " -> ")
						require.True(t, ok, st)
						want, cost, counted := strings.Cut(want, " #")
						who, cmd, _ := strings.Cut(cmd, " ")
						b.stats.Reset()
						a := args(cmd)
						require.Equal(t, want, do(t, clients[who], a...), "%s: %s", who, cmd)
						if counted {
							got := b.stats.Requests(strings.ToLower(a[0].(string)))
							require.Equal(t, cost, strconv.FormatInt(got, 10), "%s: %s: requests %v", who, cmd, b.stats.Snapshot())
						}
					}
				})
			}
		})
	}
}

// condStore records the condition of every single-item write.
type condStore struct {
	dynastore.Store
	mu    sync.Mutex
	conds []dynastore.Cond
}

func (s *condStore) note(c dynastore.Cond) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conds = append(s.conds, c)
}

// take returns the conditions noted since the last take.
func (s *condStore) take() []dynastore.Cond {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.conds
	s.conds = nil
	return out
}

func (s *condStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.note(o.Cond)
	return s.Store.Put(ctx, it, o)
}

func (s *condStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.note(o.Cond)
	return s.Store.Update(ctx, k, u, o)
}

func (s *condStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.note(o.Cond)
	return s.Store.Delete(ctx, k, o)
}

// guardKind names a write condition: "ver" (the key item is exactly the
// one with that version), "absent" (there is no key item), or "full" (a
// fast path's condition on the item's content).
func guardKind(c dynastore.Cond) string {
	switch c := c.(type) {
	case dynastore.Compare:
		if c.Attr == "ver" && c.Op == dynastore.OpEQ {
			return "ver"
		}
	case dynastore.NotExists:
		if c.Attr == dynastore.AttrPK {
			return "absent"
		}
	}
	return "full"
}

// TestCollectionGuardedWrites checks that the fast paths of small
// collections go out under the cached key item's guard alone once the
// instance knows the item, fall back to their full condition when another
// instance wrote the key, and pause guarded writes of a contended key.
func TestCollectionGuardedWrites(t *testing.T) {
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			var skew atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			rec := &condStore{Store: b.store}
			a := testserver.Start(t, rec, testserver.WithClock(clock)).Client(t)
			other := testserver.Start(t, b.store).Client(t)
			steps := []struct {
				c     *redis.Client
				cmd   string
				want  string
				conds string // the guards of a's writes
			}{
				{a, "sadd s x", "1", "[full]"},
				{a, "sadd s y", "1", "[ver]"},
				// Nothing new: the cached item fails the condition that a
				// member is new, so the update goes out under the full
				// condition, which fails and returns the set (no change,
				// as Redis makes none).
				{a, "sadd s y", "0", "[full]"},
				{a, "srem s x", "1", "[ver]"},
				{a, "hset h f 1", "1", "[full]"},
				{a, "hset h g 2", "1", "[ver]"},
				{a, "hincrby h f 5", "6", "[ver]"},
				{a, "hsetnx h n 1", "1", "[ver]"},
				{a, "hdel h g n", "2", "[ver]"},
				{a, "hgetall h", "{f=6}", "[]"},
				{a, "lpush l a", "1", "[full]"},
				{a, "rpush l b", "2", "[ver]"},
				{a, "lpushx l c", "3", "[ver]"},
				{a, "lrange l 0 -1", "[a b c]", "[]"},
				// Emptied through the general path: the key is known absent.
				{a, "srem s y", "1", "[full ver]"},
				{a, "sadd s z", "1", "[absent]"},
				// Another instance writes: the guard fails, the full
				// condition follows, and guarded writes pause.
				{other, "sadd s w", "1", "[]"},
				{a, "sadd s v", "1", "[ver full]"},
				{a, "sadd s u", "1", "[full]"},
				{a, "smembers s", "[u v w z]", "[]"},
				{nil, "pause over", "", "[]"},
				{a, "sadd s t", "1", "[ver]"},
				// PEXPIRE (not a collection command) leaves the cached
				// item behind: the guard fails, and the item the failure
				// returns has expired, so the general path starts from it
				// (a Put guarded by its ver).
				{a, "pexpire s 1000", "1", "[full]"},
				{nil, "expired", "", "[]"},
				{a, "sadd s q", "1", "[ver ver]"},
				{a, "smembers s", "[q]", "[]"},
				// A cached item with an expiry: guarded while live; once it
				// has expired the cached item already says the fast path
				// cannot apply, and the full condition agrees.
				{a, "sadd e x", "1", "[full]"},
				{a, "pexpire e 1000", "1", "[full]"},
				{a, "smembers e", "[x]", "[]"},
				{a, "sadd e y", "1", "[ver]"},
				{nil, "expired", "", "[]"},
				{a, "sadd e z", "1", "[full ver]"},
				{a, "smembers e", "[z]", "[]"},
			}
			for _, st := range steps {
				if st.c == nil { // "pause over", "expired": time passes
					skew.Add(int64(2 * time.Second))
					continue
				}
				require.Equal(t, st.want, do(t, st.c, args(st.cmd)...), st.cmd)
				var kinds []string
				for _, c := range rec.take() {
					kinds = append(kinds, guardKind(c))
				}
				require.Equal(t, st.conds, "["+strings.Join(kinds, " ")+"]", st.cmd)
			}
		})
	}
}

// raceStore is instance a's view of the store in TestCollectionBlindRaces:
// it counts a's requests, runs hook (once) right after a BatchGet, between
// a multi-member write's read of its members and its transaction, and can
// fail the next transaction as a timeout would.
type raceStore struct {
	dynastore.Store
	hook   atomic.Pointer[func()]
	failTx atomic.Bool

	gets, batchGets, txs, writes atomic.Int64
}

func (s *raceStore) requests() int64 {
	return s.gets.Load() + s.batchGets.Load() + s.txs.Load() + s.writes.Load()
}

func (s *raceStore) reset() {
	s.gets.Store(0)
	s.batchGets.Store(0)
	s.txs.Store(0)
	s.writes.Store(0)
}

func (s *raceStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, k)
}

func (s *raceStore) BatchGet(ctx context.Context, k []dynastore.Key) ([]dynastore.Item, error) {
	s.batchGets.Add(1)
	items, err := s.Store.BatchGet(ctx, k)
	if h := s.hook.Swap(nil); h != nil {
		(*h)()
	}
	return items, err
}

func (s *raceStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.writes.Add(1)
	return s.Store.Put(ctx, it, o)
}

func (s *raceStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.writes.Add(1)
	return s.Store.Update(ctx, k, u, o)
}

func (s *raceStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.writes.Add(1)
	return s.Store.Delete(ctx, k, o)
}

func (s *raceStore) Transact(ctx context.Context, a []dynastore.TxAction) error {
	s.txs.Add(1)
	if s.failTx.Swap(false) {
		return errInjected
	}
	return s.Store.Transact(ctx, a)
}

// TestCollectionBlindRaces makes another instance (b) change a large
// collection between the read of the members and the transaction of a's
// write of several of them: a's transaction must fail on the member (or
// key item) condition and the general path must give Redis's reply. n is
// what a's command costs: 2 when nothing interferes, 5 when a member's
// condition fails (2, then GetItem, BatchGetItem, TransactWriteItems).
func TestCollectionBlindRaces(t *testing.T) {
	cases := []struct {
		cmd, hook, want string
		n               int64
		after           []string // "command -> reply" on a
	}{
		{"sadd S new0 new1", "", "2", 2, []string{"scard S -> 202"}},
		{"sadd S m1 new2 new3", "srem S m1", "3", 5, []string{"scard S -> 204", "sismember S m1 -> 1", "sismember S new3 -> 1"}},
		{"sadd S new4 new5", "sadd S new4", "1", 5, []string{"scard S -> 206", "sismember S new5 -> 1"}},
		{"srem S m2 m3", "srem S m2", "1", 5, []string{"scard S -> 204", "sismember S m3 -> 0"}},
		{"srem S m4 zz", "sadd S zz", "2", 5, []string{"scard S -> 203", "sismember S zz -> 0", "sismember S m4 -> 0"}},
		{"srem S m5 m6", "timeout", "ERR: " + commands.MsgUnavailable, 2, []string{"scard S -> 203", "sismember S m5 -> 1"}},
		{"srem S m5 m6", "", "2", 2, []string{"scard S -> 201"}},
		{"hset H f1 a newf b", "hdel H f1", "2", 5, []string{"hlen H -> 101", "hget H f1 -> a", "hget H newf -> b"}},
		{"hset H f2 a newg b", "hset H newg c", "0", 5, []string{"hlen H -> 102", "hget H f2 -> a", "hget H newg -> b"}},
		{"hdel H f3 f4", "hdel H f3", "1", 5, []string{"hlen H -> 100", "hget H f4 -> nil"}},
		{"hdel H f5 nosuch", "hset H nosuch 1", "2", 5, []string{"hlen H -> 99", "hget H nosuch -> nil"}},
		// The key item changes instead: the transaction returns it.
		{"srem S m7 m8", "del S", "0", 2, []string{"exists S -> 0"}},
		{"hset H f6 x f7 y", "rename H H2", "2", 3, []string{"hgetall H -> {f6=x f7=y}", "hlen H2 -> 99"}},
	}
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			rs := &raceStore{Store: b.store}
			a := testserver.Start(t, rs).Client(t)
			other := testserver.Start(t, b.store).Client(t)
			members := make([]any, 200)
			for i := range members {
				members[i] = "m" + strconv.Itoa(i)
			}
			pairs := make([]any, 0, 200)
			for i := 0; i < 100; i++ {
				pairs = append(pairs, "f"+strconv.Itoa(i), strconv.Itoa(i))
			}
			require.NoError(t, a.SAdd(ctx, "S", members...).Err())
			require.NoError(t, a.HSet(ctx, "H", pairs...).Err())
			for _, tc := range cases {
				rs.reset()
				switch tc.hook {
				case "":
				case "timeout":
					rs.failTx.Store(true)
				default:
					hook := func() { require.NoError(t, other.Do(ctx, args(tc.hook)...).Err(), tc.hook) }
					rs.hook.Store(&hook)
				}
				require.Equal(t, tc.want, do(t, a, args(tc.cmd)...), "%s (%s)", tc.cmd, tc.hook)
				require.Nil(t, rs.hook.Load(), "%s: the hook did not run", tc.cmd)
				require.Equal(t, tc.n, rs.requests(), "%s (%s): GetItem %d, BatchGetItem %d, TransactWriteItems %d, others %d",
					tc.cmd, tc.hook, rs.gets.Load(), rs.batchGets.Load(), rs.txs.Load(), rs.writes.Load())
				for _, st := range tc.after {
					cmd, want, _ := strings.Cut(st, " -> ")
					require.Equal(t, want, do(t, a, args(cmd)...), "after %s: %s", tc.cmd, cmd)
				}
			}
		})
	}
}

// stalledRollForward fails every write that rolls a published change
// forward (the transactions that check a key item's pending mark, and the
// update that clears it), as a process that dies right after its commit
// would leave the change.
type stalledRollForward struct{ dynastore.Store }

func marksPending(c dynastore.Cond) bool {
	cmp, ok := c.(dynastore.Compare)
	return ok && cmp.Attr == "pd"
}

func (s stalledRollForward) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	for _, a := range actions {
		if a.Op == dynastore.TxCheck && marksPending(a.Cond) {
			return errors.New("stalled")
		}
	}
	return s.Store.Transact(ctx, actions)
}

func (s stalledRollForward) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if marksPending(o.Cond) {
		return nil, errors.New("stalled")
	}
	return s.Store.Update(ctx, k, u, o)
}

// TestCollectionBigWrites changes large collections by more members than
// one transaction holds. The cost follows the change, not the collection;
// a change published but never rolled forward by its writer (a stalled
// instance) is finished by the next reader on another instance, which sees
// all of it; and a reader never sees part of it.
func TestCollectionBigWrites(t *testing.T) {
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			a := testserver.Start(t, b.store, testserver.WithStats(b.stats)).Client(t)
			stalled := testserver.Start(t, stalledRollForward{b.store}).Client(t)
			members := func(prefix string, from, to int) []any {
				var out []any
				for i := from; i < to; i++ {
					out = append(out, prefix+strconv.Itoa(i))
				}
				return out
			}
			// Proportional: the same requests for 1,000 new members whatever
			// the set's size (a rebuild would copy all of it).
			var cost []int64
			for _, size := range []int{3000, 6000} {
				key := "s" + strconv.Itoa(size)
				require.EqualValues(t, size, a.SAdd(ctx, key, members("m", 0, size)...).Val())
				b.stats.Reset()
				require.EqualValues(t, 1000, a.SAdd(ctx, key, members("n", 0, 1000)...).Val())
				cost = append(cost, b.stats.Requests("sadd"))
				require.EqualValues(t, size+1000, a.SCard(ctx, key).Val())
				require.Len(t, a.SMembers(ctx, key).Val(), size+1000)
			}
			require.Equal(t, cost[0], cost[1], "requests of the same change to 3,000 and 6,000 members")
			require.Less(t, cost[0], int64(80))
			t.Logf("SADD of 1,000 new members to a 3,000- or 6,000-member set: %d requests", cost[0])
			require.NoError(t, a.Rename(ctx, "s3000", "s").Err())
			require.EqualValues(t, 4000, a.SCard(ctx, "s").Val())

			// A stalled writer: its change is published, then left.
			require.EqualValues(t, 500, stalled.SRem(ctx, "s", members("m", 0, 500)...).Val())
			require.EqualValues(t, 3500, a.SCard(ctx, "s").Val())
			got := a.SMembers(ctx, "s").Val()
			require.Len(t, got, 3500)
			require.False(t, a.SIsMember(ctx, "s", "m1").Val())
			require.True(t, a.SIsMember(ctx, "s", "m500").Val())

			// A stalled change met first inside MULTI: EXEC sees all of it
			// and commits on top of it.
			require.EqualValues(t, 3000, a.SAdd(ctx, "t", members("m", 0, 3000)...).Val())
			require.EqualValues(t, 700, stalled.SAdd(ctx, "t", members("n", 0, 700)...).Val())
			cmds, err := a.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SCard(ctx, "t")
				p.SIsMember(ctx, "t", "n699")
				p.SAdd(ctx, "t", "extra")
				return nil
			})
			require.NoError(t, err)
			require.EqualValues(t, 3700, cmds[0].(*redis.IntCmd).Val())
			require.True(t, cmds[1].(*redis.BoolCmd).Val())
			require.Len(t, a.SMembers(ctx, "t").Val(), 3701)

			// Sorted sets: a member change is two actions (member, order).
			zs := make([]redis.Z, 400)
			for i := range zs {
				zs[i] = redis.Z{Score: float64(i), Member: "z" + strconv.Itoa(i)}
			}
			require.EqualValues(t, 400, stalled.ZAdd(ctx, "z", zs...).Val())
			for i := range zs {
				zs[i].Score = float64(1000 - i)
			}
			require.EqualValues(t, 0, stalled.ZAdd(ctx, "z", zs...).Val())
			top := a.ZRangeWithScores(ctx, "z", 0, 2).Val()
			require.Equal(t, []redis.Z{{Score: 601, Member: "z399"}, {Score: 602, Member: "z398"}, {Score: 603, Member: "z397"}}, top)
			require.EqualValues(t, 400, a.ZCard(ctx, "z").Val())
			require.EqualValues(t, 399, a.ZRank(ctx, "z", "z0").Val())

			// Readers during big changes see each one whole or not at all.
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var bad atomic.Value
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := len(a.SMembers(ctx, "w").Val())
					if n%300 != 0 {
						bad.Store(n)
					}
				}
			}()
			for round := 0; round < 6; round++ {
				require.EqualValues(t, 300, a.SAdd(ctx, "w", members("r"+strconv.Itoa(round)+":", 0, 300)...).Val())
			}
			close(stop)
			wg.Wait()
			require.Nil(t, bad.Load(), "a reader saw part of a change")
		})
	}
}

// refuseFirstPublish refuses the first commit that publishes a pending
// change, as a concurrent writer's change of the key item would.
type refuseFirstPublish struct {
	dynastore.Store
	refused atomic.Bool
}

func (s *refuseFirstPublish) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	for _, a := range u.Set {
		if a.Attr == "pd" && s.refused.CompareAndSwap(false, true) {
			return nil, dynastore.ErrConditionFailed
		}
	}
	return s.Store.Update(ctx, k, u, o)
}

// TestBigWriteConflictLeavesNothing: a big change whose commit is refused
// runs again, and the pending items of the refused attempt are gone.
func TestBigWriteConflictLeavesNothing(t *testing.T) {
	for _, b := range collBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st := &refuseFirstPublish{Store: b.store}
			c := testserver.Start(t, st).Client(t)
			var ms []any
			for i := 0; i < 600; i++ {
				ms = append(ms, "m"+strconv.Itoa(i))
			}
			require.EqualValues(t, 300, c.SAdd(ctx, "s", ms[:300]...).Val())
			require.EqualValues(t, 300, c.SAdd(ctx, "s", ms[300:]...).Val())
			require.True(t, st.refused.Load(), "the publish was refused once")
			require.EqualValues(t, 600, c.SCard(ctx, "s").Val())
			key, err := b.store.Get(ctx, dynastore.Key{PK: append([]byte{'k', 0}, "s"...), SK: []byte{0}})
			require.NoError(t, err)
			gen, _ := key.Get("g").(dynastore.B)
			require.NotEmpty(t, gen)
			page, err := b.store.Query(ctx, dynastore.Query{PK: append([]byte{'m'}, gen...), Op: dynastore.SKBeginsWith, A: []byte{3}})
			require.NoError(t, err)
			require.Zero(t, len(page.Items), "pending items left behind")
		})
	}
}
