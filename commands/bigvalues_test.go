package commands_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// bigValue is n pseudo-random bytes from seed: values that differ in every
// chunk, so a read that mixed two of them would show.
func bigValue(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// Strings past DynamoDB's item size are stored as big values and every
// string command reads and writes them as Redis does, directly, in MULTI
// and in scripts.
func TestBigStrings(t *testing.T) {
	ctx := context.Background()
	const n = 1<<20 + 12345
	a, b := bigValue(1, n), bigValue(2, n)
	for _, be := range testserver.Stores(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb := be.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = time.Minute })
			require.NoError(t, rdb.Set(ctx, "k", a, 0).Err())
			got, err := rdb.Get(ctx, "k").Bytes()
			require.NoError(t, err)
			require.True(t, bytes.Equal(a, got))
			require.EqualValues(t, n, rdb.StrLen(ctx, "k").Val())
			require.Equal(t, "string", rdb.Type(ctx, "k").Val())
			require.Equal(t, "raw", rdb.ObjectEncoding(ctx, "k").Val())
			require.Equal(t, a[500000:900001], []byte(rdb.GetRange(ctx, "k", 500000, 900000).Val()))
			require.Equal(t, a[n-10:], []byte(rdb.GetRange(ctx, "k", -10, -1).Val()))
			require.Equal(t, "", rdb.GetRange(ctx, "k", 5, 2).Val())
			require.GreaterOrEqual(t, rdb.MemoryUsage(ctx, "k").Val(), int64(n))
			require.EqualError(t, rdb.Incr(ctx, "k").Err(), "ERR value is not an integer or out of range")
			require.EqualValues(t, 1, rdb.Exists(ctx, "k").Val())

			// SET GET, GETSET: the old value whole.
			old, err := rdb.SetArgs(ctx, "k", b, redis.SetArgs{Get: true}).Bytes()
			require.NoError(t, err)
			require.True(t, bytes.Equal(a, old))
			old, err = rdb.GetSet(ctx, "k", a).Bytes()
			require.NoError(t, err)
			require.True(t, bytes.Equal(b, old))
			// NX and XX hold a big SET back as a small one.
			require.False(t, rdb.SetNX(ctx, "k", b, 0).Val())
			require.False(t, rdb.SetXX(ctx, "absent", b, 0).Val())
			require.EqualValues(t, 0, rdb.Exists(ctx, "absent").Val())
			// Expiry options.
			require.NoError(t, rdb.SetArgs(ctx, "k", a, redis.SetArgs{TTL: time.Hour}).Err())
			require.NoError(t, rdb.SetArgs(ctx, "k", b, redis.SetArgs{KeepTTL: true}).Err())
			require.Greater(t, rdb.PTTL(ctx, "k").Val(), time.Minute)
			require.True(t, rdb.Persist(ctx, "k").Val())
			require.EqualValues(t, -1, rdb.TTL(ctx, "k").Val())
			require.True(t, rdb.Expire(ctx, "k", time.Hour).Val())
			got, _ = rdb.GetEx(ctx, "k", time.Hour).Bytes()
			require.True(t, bytes.Equal(b, got))

			// MGET mixes big and small.
			require.NoError(t, rdb.Set(ctx, "small", "x", 0).Err())
			vals := rdb.MGet(ctx, "small", "k", "absent").Val()
			require.Equal(t, "x", vals[0])
			require.True(t, bytes.Equal(b, []byte(vals[1].(string))))
			require.Nil(t, vals[2])

			// APPEND grows a small value into a big one, and a big one further.
			require.EqualValues(t, 1+n, rdb.Append(ctx, "small", string(a)).Val())
			require.EqualValues(t, 1+2*n, rdb.Append(ctx, "small", string(b)).Val())
			got, _ = rdb.Get(ctx, "small").Bytes()
			require.True(t, bytes.Equal(append(append([]byte("x"), a...), b...), got))
			require.EqualValues(t, n, rdb.Append(ctx, "fresh", string(a)).Val())
			// proto-max-bulk-len bounds what APPEND and SETRANGE make, big or not.
			require.NoError(t, rdb.ConfigSet(ctx, "proto-max-bulk-len", "2000000").Err())
			require.EqualError(t, rdb.Append(ctx, "fresh", string(a)).Err(), "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
			require.EqualError(t, rdb.SetRange(ctx, "fresh", 2000000, "x").Err(), "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
			require.NoError(t, rdb.ConfigSet(ctx, "proto-max-bulk-len", "536870912").Err())
			require.EqualValues(t, n, rdb.StrLen(ctx, "fresh").Val())

			// SETRANGE, past the end and inside.
			require.EqualValues(t, n+10, rdb.SetRange(ctx, "sr", int64(n)+5, "hello").Val())
			got, _ = rdb.Get(ctx, "sr").Bytes()
			require.Equal(t, append(make([]byte, n+5), "hello"...), got)
			require.EqualValues(t, n+10, rdb.SetRange(ctx, "sr", 3, "abc").Val())
			require.Equal(t, "\x00\x00\x00abc\x00", rdb.GetRange(ctx, "sr", 0, 6).Val())

			// RENAME, COPY, MOVE keep the value; DEL removes it.
			require.NoError(t, rdb.Rename(ctx, "k", "k2").Err())
			require.EqualValues(t, 1, rdb.Copy(ctx, "k2", "k3", 0, false).Val(), rdb.Copy(ctx, "k2", "k3", 0, false).Err())
			require.NoError(t, rdb.Del(ctx, "k2").Err())
			got, _ = rdb.Get(ctx, "k3").Bytes()
			require.True(t, bytes.Equal(b, got))
			require.True(t, rdb.Move(ctx, "k3", 1).Val())
			s, _ := rdb.Do(ctx, "EVAL", "redis.call('select', 1) return redis.call('get', KEYS[1])", 1, "k3").Text()
			require.True(t, bytes.Equal(b, []byte(s)))

			// GETDEL returns the whole value and deletes it.
			got, _ = rdb.GetDel(ctx, "fresh").Bytes()
			require.True(t, bytes.Equal(a, got))
			require.EqualValues(t, 0, rdb.Exists(ctx, "fresh").Val())

			// MULTI/EXEC and scripts write and read big values.
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "m", a, 0)
				p.Get(ctx, "m")
				p.StrLen(ctx, "m")
				return nil
			})
			require.NoError(t, err)
			require.True(t, bytes.Equal(a, []byte(cmds[1].(*redis.StringCmd).Val())))
			require.EqualValues(t, n, cmds[2].(*redis.IntCmd).Val())
			got, _ = rdb.Get(ctx, "m").Bytes()
			require.True(t, bytes.Equal(a, got))
			require.NoError(t, rdb.Eval(ctx, "return redis.call('set', KEYS[1], ARGV[1])", []string{"lua"}, b).Err())
			got, _ = rdb.Get(ctx, "lua").Bytes()
			require.True(t, bytes.Equal(b, got))
			require.NoError(t, rdb.MSet(ctx, "ms1", a, "ms2", "small").Err())
			got, _ = rdb.Get(ctx, "ms1").Bytes()
			require.True(t, bytes.Equal(a, got))
		})
	}
}

// A big value's writes raise the keyspace events a small value's do.
func TestBigStringEvents(t *testing.T) {
	ctx := context.Background()
	for _, be := range testserver.Stores(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb := be.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = time.Minute })
			require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "E$gn").Err())
			sub := rdb.PSubscribe(ctx, "__keyevent@0__:*")
			defer sub.Close()
			_, err := sub.Receive(ctx)
			require.NoError(t, err)
			events := func(key string, val []byte) []string {
				require.NoError(t, rdb.Set(ctx, key, val, 0).Err())
				require.NoError(t, rdb.Append(ctx, key, "x").Err())
				require.NoError(t, rdb.SetRange(ctx, key, 3, "y").Err())
				require.NoError(t, rdb.Expire(ctx, key, time.Hour).Err())
				require.NoError(t, rdb.Rename(ctx, key, key+"2").Err())
				require.NoError(t, rdb.GetDel(ctx, key+"2").Err())
				require.NoError(t, rdb.Set(ctx, "end"+key, "1", 0).Err())
				var out []string
				for {
					m, err := sub.ReceiveMessage(ctx)
					require.NoError(t, err)
					if m.Payload == "end"+key {
						if m.Channel == "__keyevent@0__:set" {
							return out
						}
						continue
					}
					out = append(out, m.Channel+" "+strings.Replace(m.Payload, key, "K", 1))
				}
			}
			small := events("s", []byte("small value"))
			require.Equal(t, small, events("b", bigValue(4, 600<<10)))
			require.Contains(t, small, "__keyevent@0__:new K")
		})
	}
}
