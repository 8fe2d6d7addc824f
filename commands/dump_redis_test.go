package commands_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/internal/testserver"
)

// dumpCase is a key built in a real redis-server, and whether redamo's
// DUMP of it after RESTORE gives Redis's payload back byte for byte (see
// model/dump.go for why some cannot).
type dumpCase struct {
	key       string
	identical bool
}

func buildRedisValues(ctx context.Context, t *testing.T, c *redis.Client) []dumpCase {
	do := func(args ...any) {
		t.Helper()
		require.NoError(t, c.Do(ctx, args...).Err(), "%v", args)
	}
	var cases []dumpCase
	add := func(key string, identical bool) { cases = append(cases, dumpCase{key, identical}) }
	for k, v := range map[string]string{
		"s:word": "hello", "s:int": "12345", "s:bigint": "12345678901234", "s:empty": "",
		"s:runs": strings.Repeat("abc", 400), "s:bin": "\x00\xff\x01binary\r\n",
	} {
		do("SET", k, v)
		add(k, true)
	}
	do("RPUSH", "l:small", "a", "b", "c", "1", "300", "-5", "70000", "-0", "01")
	add("l:small", true)
	for i := range 1500 {
		do("RPUSH", "l:big", strings.Repeat("x", i%70)+strconv.Itoa(i))
	}
	add("l:big", true)
	do("RPUSH", "l:long", strings.Repeat("h", 10000), "a", strings.Repeat("i", 5000))
	add("l:long", true)
	do("LPUSH", "l:lpushed", "a", "b", "c")
	add("l:lpushed", true)

	do("SADD", "set:int16", 1, 2, 3, -5, 300)
	do("SADD", "set:int32", 1, 100000, -100000)
	do("SADD", "set:int64", 1, int64(1)<<40)
	add("set:int16", true)
	add("set:int32", true)
	add("set:int64", true)
	do("SADD", "set:strings", "a", "b", "c", "long member "+strings.Repeat("z", 40))
	add("set:strings", false) // a hash table: Redis's order
	for i := range 600 {
		do("SADD", "set:manyints", i*7)
	}
	add("set:manyints", false)

	do("HSET", "h:sorted", "a", "1", "b", "x", "c", "300")
	add("h:sorted", true)
	do("HSET", "h:unsorted", "z", "1", "a", "2")
	add("h:unsorted", false) // a listpack in insertion order
	for i := range 600 {
		do("HSET", "h:big", "field"+strconv.Itoa(i), strings.Repeat("v", i%30))
	}
	add("h:big", false)
	do("HSET", "h:longval", "f", strings.Repeat("w", 100))
	add("h:longval", true)

	do("ZADD", "z:small", 1, "one", 1.5, "onehalf", "-inf", "minf", "+inf", "pinf", 0.1, "tenth", 1e20, "big", math.Ldexp(1, 62), "p62", 0, "zero", -3, "neg")
	add("z:small", true)
	for i := range 200 {
		do("ZADD", "z:big", float64(i)/3, "m"+strconv.Itoa(i))
	}
	add("z:big", true)
	do("ZADD", "z:longmember", 1, strings.Repeat("m", 100))
	add("z:longmember", true)

	for i := range 250 {
		if i%50 == 7 {
			do("XADD", "x:plain", fmt.Sprintf("%d-%d", 1000+i/3, i), "other", "x", "f2", i)
		} else {
			do("XADD", "x:plain", fmt.Sprintf("%d-%d", 1000+i/3, i), "name", "n"+strconv.Itoa(i), "count", i)
		}
	}
	add("x:plain", true)
	for i := range 30 {
		do("XADD", "x:bigentries", fmt.Sprintf("7-%d", i), "payload", strings.Repeat("p", 300+i))
	}
	add("x:bigentries", true)
	do("XADD", "x:empty", "5-5", "a", "b")
	do("XDEL", "x:empty", "5-5")
	add("x:empty", true)
	for i := range 20 {
		do("XADD", "x:deleted", fmt.Sprintf("1-%d", i+1), "f", i)
	}
	do("XDEL", "x:deleted", "1-3", "1-4")
	add("x:deleted", false) // deleted entries are not kept
	for i := range 10 {
		do("XADD", "x:groups", fmt.Sprintf("2-%d", i+1), "f", i)
	}
	do("XGROUP", "CREATE", "x:groups", "g1", "0")
	do("XGROUP", "CREATE", "x:groups", "g0", "$")
	do("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 3, "STREAMS", "x:groups", ">")
	do("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 2, "STREAMS", "x:groups", ">")
	do("XACK", "x:groups", "g1", "2-2")
	do("XGROUP", "CREATECONSUMER", "x:groups", "g1", "carol")
	add("x:groups", true)
	return cases
}

// canonicalPayload is the content of a payload in an order that does not
// depend on a hash table's, nor on a stream's nodes.
func canonicalPayload(t *testing.T, p []byte) string {
	t.Helper()
	o, err := rdb.Restore(p)
	require.NoError(t, err)
	switch o.Kind() {
	case rdb.KindSet:
		ms := make([]string, len(o.Elems))
		for i, m := range o.Elems {
			ms[i] = string(m)
		}
		slices.Sort(ms)
		return fmt.Sprintf("set %q", ms)
	case rdb.KindHash:
		var ps []string
		for i := 0; i < len(o.Pairs); i += 2 {
			ps = append(ps, strconv.Quote(string(o.Pairs[i]))+"="+strconv.Quote(string(o.Pairs[i+1])))
		}
		slices.Sort(ps)
		return "hash " + strings.Join(ps, ",")
	case rdb.KindZSet:
		es := slices.Clone(o.ZSet)
		slices.SortFunc(es, func(a, b rdb.ZEntry) int { return strings.Compare(string(a.Member), string(b.Member)) })
		return fmt.Sprintf("zset %v", es)
	case rdb.KindStream:
		s := *o.Stream
		s.Nodes = nil
		return fmt.Sprintf("stream %+v", s)
	}
	return fmt.Sprintf("%d %q %q", o.Kind(), o.String, o.Elems)
}

// TestDumpRestoreWithRedis RESTOREs into redamo what a real redis-server
// DUMPed for every type and encoding, on each backend, and compares the
// content, OBJECT ENCODING and redamo's DUMP with Redis's; then the other
// way: redis-server RESTOREs redamo's DUMP to the same content.
func TestDumpRestoreWithRedis(t *testing.T) {
	srv, err := compat.StartRedis()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	real := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { real.Close() })
	cases := buildRedisValues(ctx, t, real)
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			for _, tc := range cases {
				t.Run(tc.key, func(t *testing.T) {
					payload, err := real.Dump(ctx, tc.key).Result()
					require.NoError(t, err)
					require.NoError(t, c.Restore(ctx, tc.key, 0, payload).Err())
					require.Equal(t, real.Type(ctx, tc.key).Val(), c.Type(ctx, tc.key).Val())
					if typ := real.Type(ctx, tc.key).Val(); typ != "stream" {
						require.Equal(t, real.ObjectEncoding(ctx, tc.key).Val(), c.ObjectEncoding(ctx, tc.key).Val())
					}
					mine, err := c.Dump(ctx, tc.key).Result()
					require.NoError(t, err)
					require.Equal(t, canonicalPayload(t, []byte(payload)), canonicalPayload(t, []byte(mine)))
					if tc.identical {
						require.Equal(t, fmt.Sprintf("%q", payload), fmt.Sprintf("%q", mine), "redamo's DUMP differs from redis-server's")
					}
					require.NoError(t, real.RestoreReplace(ctx, "back:"+tc.key, 0, mine).Err())
					back, err := real.Dump(ctx, "back:"+tc.key).Result()
					require.NoError(t, err)
					require.Equal(t, canonicalPayload(t, []byte(payload)), canonicalPayload(t, []byte(back)))
				})
			}
		})
	}
}
