package rdb_test

import (
	"bytes"
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
)

// redisValues builds, in a real redis-server, a key of every type in every
// encoding Redis 7.0 writes; each names whether Restore and Dump give its
// payload back byte for byte (a stream with deleted entries does not: the
// deleted entries are not kept).
func redisValues(ctx context.Context, t *testing.T, c *redis.Client) map[string]bool {
	do := func(args ...any) {
		t.Helper()
		require.NoError(t, c.Do(ctx, args...).Err(), "%v", args)
	}
	keys := map[string]bool{}
	str := func(k, v string) { do("SET", k, v); keys[k] = true }
	str("s:word", "hello")
	str("s:int", "12345")
	str("s:neg", "-7")
	str("s:bigint", "12345678901234")
	str("s:empty", "")
	str("s:runs", strings.Repeat("abc", 400))
	str("s:bin", "\x00\xff\x01binary\r\n")

	do("RPUSH", "l:small", "a", "b", "c", "1", "2", "300", "-5", "70000", "9223372036854775807", "-0", "01")
	keys["l:small"] = true
	for i := range 3000 {
		do("RPUSH", "l:big", strings.Repeat("x", i%70)+strconv.Itoa(i))
	}
	keys["l:big"] = true
	do("RPUSH", "l:huge", strings.Repeat("h", 10000), "a", strings.Repeat("i", 5000), "b")
	keys["l:huge"] = true

	do("SADD", "set:int16", 1, 2, 3, -5, 300)
	do("SADD", "set:int32", 1, 100000, -100000)
	do("SADD", "set:int64", 1, int64(1)<<40)
	do("SADD", "set:strings", "a", "b", "c", "long member "+strings.Repeat("z", 40))
	for i := range 600 {
		do("SADD", "set:manyints", i*7)
	}
	keys["set:int16"], keys["set:int32"], keys["set:int64"], keys["set:strings"], keys["set:manyints"] = true, true, true, true, true

	do("HSET", "h:small", "f1", "v1", "f2", "2", "num", "-300", "long", strings.Repeat("q", 60))
	for i := range 600 {
		do("HSET", "h:big", "field"+strconv.Itoa(i), strings.Repeat("v", i%30))
	}
	do("HSET", "h:longval", "f", strings.Repeat("w", 100))
	keys["h:small"], keys["h:big"], keys["h:longval"] = true, true, true

	do("ZADD", "z:small", 1, "one", 1.5, "onehalf", "-inf", "minf", "+inf", "pinf", 0.1, "tenth", 1e20, "big", math.Ldexp(1, 62), "p62", 0, "zero", -3, "neg")
	for i := range 200 {
		do("ZADD", "z:big", float64(i)/3, "m"+strconv.Itoa(i))
	}
	do("ZADD", "z:longmember", 1, strings.Repeat("m", 100))
	keys["z:small"], keys["z:big"], keys["z:longmember"] = true, true, true

	for i := range 250 {
		if i%50 == 7 {
			do("XADD", "x:plain", fmt.Sprintf("%d-%d", 1000+i/3, i), "other", "x", "f2", i)
		} else {
			do("XADD", "x:plain", fmt.Sprintf("%d-%d", 1000+i/3, i), "name", "n"+strconv.Itoa(i), "count", i)
		}
	}
	keys["x:plain"] = true
	for i := range 30 {
		do("XADD", "x:bigentries", "*", "payload", strings.Repeat("p", 300+i))
	}
	keys["x:bigentries"] = true
	do("XADD", "x:empty", "5-5", "a", "b")
	do("XDEL", "x:empty", "5-5")
	keys["x:empty"] = true
	for i := range 20 {
		do("XADD", "x:deleted", fmt.Sprintf("1-%d", i+1), "f", i)
	}
	do("XDEL", "x:deleted", "1-3", "1-4")
	keys["x:deleted"] = false
	for i := range 10 {
		do("XADD", "x:groups", fmt.Sprintf("2-%d", i+1), "f", i)
	}
	do("XGROUP", "CREATE", "x:groups", "g1", "0")
	do("XGROUP", "CREATE", "x:groups", "g0", "$")
	do("XREADGROUP", "GROUP", "g1", "alice", "COUNT", 3, "STREAMS", "x:groups", ">")
	do("XREADGROUP", "GROUP", "g1", "bob", "COUNT", 2, "STREAMS", "x:groups", ">")
	do("XACK", "x:groups", "g1", "2-2")
	do("XGROUP", "CREATECONSUMER", "x:groups", "g1", "carol")
	keys["x:groups"] = true
	return keys
}

// TestRedisObjects restores what redis-server DUMPed for every type and
// encoding, and dumps it again: the payload comes back byte for byte, and
// redis-server restores it.
func TestRedisObjects(t *testing.T) {
	srv, err := compat.StartRedis()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	for key, identical := range redisValues(ctx, t, c) {
		t.Run(key, func(t *testing.T) {
			payload, err := c.Dump(ctx, key).Result()
			require.NoError(t, err)
			o, err := rdb.Restore([]byte(payload))
			require.NoError(t, err)
			again := rdb.Dump(o, rdb.DefaultOptions)
			if identical {
				require.True(t, bytes.Equal([]byte(payload), again), "payload %q\nredis-server's %.300q", again, payload)
			}
			require.NoError(t, c.RestoreReplace(ctx, "copy:"+key, 0, string(again)).Err())
			back, err := c.Dump(ctx, "copy:"+key).Result()
			require.NoError(t, err)
			o2, err := rdb.Restore([]byte(back))
			require.NoError(t, err)
			require.Equal(t, canonical(o), canonical(o2))
		})
	}
}

// canonical is o's content in an order that does not depend on a hash
// table's: a set's members and a hash's pairs sorted.
func canonical(o *rdb.Object) string {
	var parts []string
	switch o.Kind() {
	case rdb.KindSet:
		for _, m := range o.Elems {
			parts = append(parts, string(m))
		}
		slices.Sort(parts)
	case rdb.KindHash:
		for i := 0; i < len(o.Pairs); i += 2 {
			parts = append(parts, strconv.Quote(string(o.Pairs[i]))+"="+strconv.Quote(string(o.Pairs[i+1])))
		}
		slices.Sort(parts)
	case rdb.KindStream:
		// The nodes of a stream with deleted entries are not kept.
		s := *o.Stream
		s.Nodes = nil
		return fmt.Sprintf("%+v", s)
	default:
		return fmt.Sprintf("%d %q %q %v %+v", o.Kind(), o.String, o.Elems, o.ZSet, o.Stream)
	}
	return strings.Join(parts, ",")
}
