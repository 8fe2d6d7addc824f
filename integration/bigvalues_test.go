package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// bigBytes is n bytes drawn from seed: values that differ in every chunk,
// so a read that mixed two of them would show.
func bigBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// TestBigValuesAcrossInstances writes and reads a big string (50 MB on the
// faithful store; less on DynamoDB Local, whose instances are processes
// that copy every value through HTTP) through two instances while one of
// them is killed mid-write and the faithful store's requests fail: every
// read answers one whole value that was written, never a mix, and the
// chunks of the values overwritten or never published are swept.
func TestBigValuesAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		size := 50 << 20
		if b.name == "dynamodb" {
			size = 8 << 20
		}
		bigAcrossInstances(t, b, size, bigShape{
			set: func(ctx context.Context, c *redis.Client, v []byte) error { return c.Set(ctx, "big", v, 0).Err() },
			get: func(ctx context.Context, c *redis.Client) ([]byte, error) { return c.Get(ctx, "big").Bytes() },
		})
	})
}

// TestBigHashFieldAcrossInstances is TestBigValuesAcrossInstances for a
// hash with a 10 MB field beside a small one.
func TestBigHashFieldAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		bigAcrossInstances(t, b, 10<<20, bigShape{
			set: func(ctx context.Context, c *redis.Client, v []byte) error {
				return c.HSet(ctx, "bigh", "small", "s", "f", v).Err()
			},
			get: func(ctx context.Context, c *redis.Client) ([]byte, error) { return c.HGet(ctx, "bigh", "f").Bytes() },
		})
	})
}

// TestBigListElementAcrossInstances is TestBigValuesAcrossInstances for
// a list's 10 MB element beside a small one, the list replaced whole in
// MULTI/EXEC.
func TestBigListElementAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		bigAcrossInstances(t, b, 10<<20, bigShape{
			set: func(ctx context.Context, c *redis.Client, v []byte) error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Del(ctx, "bigl")
					p.RPush(ctx, "bigl", "s", v)
					return nil
				})
				return err
			},
			get: func(ctx context.Context, c *redis.Client) ([]byte, error) { return c.LIndex(ctx, "bigl", 1).Bytes() },
		})
	})
}

// A 10 MB list element pushed through one instance is read, moved and
// popped through another, whole.
func TestBigListPushPopAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		v := bigBytes(4, 10<<20)
		ca, cb := b.node(t).start(), b.node(t).start()
		eq := func(got []byte, err error) {
			t.Helper()
			require.NoError(t, err)
			require.True(t, bytes.Equal(v, got), "%d bytes where %d were pushed", len(got), len(v))
		}
		require.EqualValues(t, 2, ca.RPush(ctx, "l", "s", v).Val())
		eq(cb.LIndex(ctx, "l", -1).Bytes())
		require.EqualValues(t, 1, cb.LPos(ctx, "l", string(v), redis.LPosArgs{}).Val())
		eq(cb.LMove(ctx, "l", "d", "RIGHT", "LEFT").Bytes())
		eq(ca.LIndex(ctx, "d", 0).Bytes())
		got, err := ca.BLPop(ctx, 5*time.Second, "d").Result()
		require.NoError(t, err)
		eq([]byte(got[1]), nil)
		require.EqualValues(t, 1, cb.RPush(ctx, "l", v).Val()-1)
		eq(ca.RPop(ctx, "l").Bytes())
		require.Equal(t, []string{"s"}, cb.LRange(ctx, "l", 0, -1).Val())
	})
}

// bigShape is how a big value is written and read: a string, a field.
type bigShape struct {
	set func(ctx context.Context, c *redis.Client, v []byte) error
	get func(ctx context.Context, c *redis.Client) ([]byte, error)
}

// bigAcrossInstances writes and reads a value of size bytes as shape
// says through two instances while one of them is killed mid-write and
// the store's requests fail (on the faithful store): every read answers
// one whole value that was written, and past the sweeper's grace only the
// published value's chunks remain.
func bigAcrossInstances(t *testing.T, b backend, size int, shape bigShape) {
	ctx := context.Background()
	vals := [][]byte{bigBytes(1, size), bigBytes(2, size), bigBytes(3, size)}
	which := func(v []byte) int {
		for i, w := range vals {
			if bytes.Equal(v, w) {
				return i
			}
		}
		return -1
	}
	na, nb := b.node(t), b.node(t)
	ca, cb := na.start(), nb.start()
	require.NoError(t, shape.set(ctx, cb, vals[0]))

	var reads, writes atomic.Int64
	read := func(c *redis.Client) {
		v, err := shape.get(ctx, c)
		if err != nil {
			return // the instance died, or the store failed: no answer
		}
		require.NotEqual(t, -1, which(v), "a read answered %d bytes that no write wrote", len(v))
		reads.Add(1)
	}
	write := func(c *redis.Client, i int) {
		if shape.set(ctx, c, vals[i%len(vals)]) == nil {
			writes.Add(1)
		}
	}
	// On each instance a writer and a reader; a is killed while its
	// writer is in the middle of a write, b's go on to their end.
	var wg sync.WaitGroup
	aStarted := make(chan struct{})
	aDead := make(chan struct{})
	for i, c := range []*redis.Client{ca, cb} {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for n := range 3 {
				if i == 0 && n == 1 {
					close(aStarted)
				}
				select {
				case <-aDead:
					if i == 0 {
						return
					}
				default:
				}
				write(c, i+n+1)
			}
		}()
		go func() {
			defer wg.Done()
			for range 4 {
				select {
				case <-aDead:
					if i == 0 {
						return
					}
				default:
				}
				read(c)
			}
		}()
	}
	b.faulty()
	<-aStarted
	// Its second write has just started: kill a within it.
	time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
	na.kill()
	close(aDead)
	wg.Wait()
	b.calm()
	ca = na.start()
	// The writes before have the faithful table in debt: a read is
	// throttled (TRYAGAIN, nothing happened) until it recovers, and a
	// client tries again, as Redis clients do on TRYAGAIN.
	settled := func(c *redis.Client) []byte {
		for range 60 {
			v, err := shape.get(ctx, c)
			if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
				require.NoError(t, err)
				return v
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatal("the big value's reads stayed throttled")
		return nil
	}
	va, vb := settled(ca), settled(cb)
	require.NotEqual(t, -1, which(va))
	require.True(t, bytes.Equal(va, vb), "both instances read the same value")
	require.Positive(t, reads.Load(), "no read ever answered")
	t.Logf("%d reads, %d writes of %d bytes", reads.Load(), writes.Load(), size)

	// Past the sweeper's grace only the published value's chunks remain.
	st := b.store(t)
	clock := time.Now()
	sw := &model.Sweeper{Store: st, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
	// The faithful table may still be in debt from the writes: a
	// throttled pass is done again, as the sweeper's next pass would.
	unthrottled := func(f func() error) {
		for range 60 {
			err := f()
			if !errors.Is(err, dynastore.ErrThrottled) {
				require.NoError(t, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatal("the store stayed throttled")
	}
	unthrottled(func() error { return sw.SweepOnce(ctx) })
	clock = clock.Add(2 * time.Minute)
	unthrottled(func() error { return sw.SweepOnce(ctx) })
	chunks := 0
	unthrottled(func() error {
		chunks = 0
		return model.ScanAll(ctx, st, dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte{model.NsChunks}}, func(dynastore.Item) error {
			chunks++
			return nil
		})
	})
	const chunkSize = 384 << 10
	require.Equal(t, (size+chunkSize-1)/chunkSize, chunks, "chunks left besides the published value's")
	require.True(t, bytes.Equal(va, settled(cb)), "the sweep left the published value whole")
}

// TestBigSetMemberAcrossInstances is TestBigValuesAcrossInstances for a
// set whose one member is 4 MB, replaced in MULTI/EXEC.
func TestBigSetMemberAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		bigAcrossInstances(t, b, 4<<20, bigShape{
			set: func(ctx context.Context, c *redis.Client, v []byte) error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Del(ctx, "bigs")
					p.SAdd(ctx, "bigs", v)
					return nil
				})
				return err
			},
			get: func(ctx context.Context, c *redis.Client) ([]byte, error) {
				ms, err := c.SMembers(ctx, "bigs").Result()
				if err != nil || len(ms) != 1 {
					return nil, fmt.Errorf("%d members: %w", len(ms), err)
				}
				return []byte(ms[0]), nil
			},
		})
	})
}

// TestBigStreamEntryAcrossInstances is TestBigValuesAcrossInstances for
// a stream entry with a 10 MB field beside a small one: each write
// replaces the stream (DEL and XADD in MULTI), each read is its last
// entry.
func TestBigStreamEntryAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		bigAcrossInstances(t, b, 10<<20, bigShape{
			set: func(ctx context.Context, c *redis.Client, v []byte) error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Del(ctx, "bigx")
					p.XAdd(ctx, &redis.XAddArgs{Stream: "bigx", Values: []any{"small", "s", "f", v}})
					return nil
				})
				return err
			},
			get: func(ctx context.Context, c *redis.Client) ([]byte, error) {
				es, err := c.XRevRangeN(ctx, "bigx", "+", "-", 1).Result()
				if err != nil {
					return nil, err
				}
				if len(es) != 1 {
					return nil, fmt.Errorf("%d entries", len(es))
				}
				v, _ := es[0].Values["f"].(string)
				return []byte(v), nil
			},
		})
	})
}
