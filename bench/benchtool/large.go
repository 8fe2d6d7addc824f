package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// runLarge builds a list, a set, a hash and a sorted set of n entries on
// redamo (and on a real redis-server, for reference), with commands of each
// of buildBatches entries, and times single-entry commands on them with one
// client: the 100,000-entry figures of the memory store (compare has
// DynamoDB's).
func runLarge(args []string) error {
	fs := flag.NewFlagSet("large", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "redamo address")
	redisAddr := fs.String("redis-addr", "", "a real redis-server, measured the same way (empty: skip)")
	n := fs.Int("n", 100000, "entries of each collection")
	ops := fs.Int("ops", 2000, "measured operations per command and server")
	batchList := fs.String("batches", "100,1000", "entries per build command, one build each (comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	batches, err := parseInts(*batchList)
	if err != nil {
		return fmt.Errorf("-batches: %w", err)
	}
	// RPOP takes the n original elements from the tail, LINDEX reads the
	// first half.
	if *n < 2 || *ops < 1 || *ops > *n {
		return errors.New("need -n >= 2 and 1 <= -ops <= -n")
	}
	servers := []struct{ name, addr string }{{"redamo", *addr}}
	if *redisAddr != "" {
		servers = append(servers, struct{ name, addr string }{"redis", *redisAddr})
	}
	ctx := context.Background()
	prefix := "large:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	cmds := largeCommands(prefix, *n)
	clients := make([]*redis.Client, len(servers))
	for s, srv := range servers {
		bulk := redis.NewClient(&redis.Options{Addr: srv.addr, PoolSize: len(kinds), MaxRetries: -1, ReadTimeout: buildTimeout})
		var err error
		for _, b := range batches {
			// The commands are measured on the last build; the others go.
			p := prefix
			if b != batches[len(batches)-1] {
				p = prefix + "b" + strconv.Itoa(b) + ":"
			}
			var took map[string]time.Duration
			if took, err = fill(ctx, bulk, p, *n, b); err == nil {
				err = checkLens(ctx, bulk, p, int64(*n))
			}
			if err != nil {
				break
			}
			reportBuild(srv.name, *n, b, took)
			if p != prefix {
				err = bulk.Del(ctx, p+"list", p+"set", p+"hash", p+"zset").Err()
			}
		}
		bulk.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", srv.name, err)
		}
		clients[s] = redis.NewClient(&redis.Options{Addr: srv.addr, PoolSize: 1, MaxRetries: -1})
		defer clients[s].Close()
	}
	// The servers take turns every few operations, so that the machine's
	// moods (CPU wake-up latency can vary widely) fall on both.
	const chunk = 10
	results := make([][]summary, len(servers))
	for _, c := range cmds {
		lat := make([][]time.Duration, len(servers))
		for from := 0; from < *ops; from += chunk {
			for s := range servers {
				for i := from; i < min(from+chunk, *ops); i++ {
					start := time.Now()
					if err := c.do(ctx, clients[s], i); err != nil {
						return fmt.Errorf("%s on %s: %w", c.name, servers[s].name, err)
					}
					lat[s] = append(lat[s], time.Since(start))
				}
			}
		}
		for s := range servers {
			results[s] = append(results[s], summarize(lat[s]))
		}
	}
	for s, srv := range servers {
		if err := clients[s].Del(ctx, prefix+"list", prefix+"set", prefix+"hash", prefix+"zset").Err(); err != nil {
			return fmt.Errorf("deleting the collections on %s: %w", srv.name, err)
		}
	}
	fmt.Printf("One client, %d ops per command, on collections of %d entries\n", *ops, *n)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "command\tredamo ops/s\tp50 ms\tp99 ms\t"
	if len(servers) > 1 {
		header += "\tredis ops/s\tp50 ms\tp99 ms\tratio\t"
	}
	fmt.Fprintln(tw, header)
	for j, c := range cmds {
		a := results[0][j]
		line := fmt.Sprintf("%s\t%.0f\t%.3f\t%.3f\t", c.name, a.opsPerSec, a.p50, a.p99)
		if len(servers) > 1 {
			b := results[1][j]
			line += fmt.Sprintf("\t%.0f\t%.3f\t%.3f\t%.2f\t", b.opsPerSec, b.p50, b.p99, a.opsPerSec/b.opsPerSec)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// checkLens checks that fill built collections of n entries each.
func checkLens(ctx context.Context, rdb *redis.Client, prefix string, n int64) error {
	for kind, f := range map[string]func(string) *redis.IntCmd{
		"list": func(k string) *redis.IntCmd { return rdb.LLen(ctx, k) },
		"set":  func(k string) *redis.IntCmd { return rdb.SCard(ctx, k) },
		"hash": func(k string) *redis.IntCmd { return rdb.HLen(ctx, k) },
		"zset": func(k string) *redis.IntCmd { return rdb.ZCard(ctx, k) },
	} {
		got, err := f(prefix + kind).Result()
		if err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("the %s holds %d entries, want %d", kind, got, n)
		}
	}
	return nil
}

// largeCommand is one measured single-entry command on the collections.
type largeCommand struct {
	name string
	do   func(ctx context.Context, rdb *redis.Client, i int) error
}

// largeCommands are the commands runLarge times: writes that add and remove
// entries, point reads of existing entries spread over the collection, and
// the counts.
func largeCommands(prefix string, n int) []largeCommand {
	list, set, hash, zset := prefix+"list", prefix+"set", prefix+"hash", prefix+"zset"
	// spread visits the entries in a scattered order.
	spread := func(i int) string { return "e" + strconv.Itoa(int(uint64(i)*7919%uint64(n))) }
	return []largeCommand{
		{"LPUSH", func(ctx context.Context, rdb *redis.Client, i int) error {
			return rdb.LPush(ctx, list, "x"+strconv.Itoa(i)).Err()
		}},
		{"RPOP", func(ctx context.Context, rdb *redis.Client, i int) error {
			return expect(rdb.RPop(ctx, list).Result())("e" + strconv.Itoa(n-1-i))
		}},
		{"LINDEX", func(ctx context.Context, rdb *redis.Client, i int) error {
			return rdb.LIndex(ctx, list, int64(uint64(i)*7919%uint64(n/2))).Err()
		}},
		{"LLEN", func(ctx context.Context, rdb *redis.Client, i int) error { return rdb.LLen(ctx, list).Err() }},
		{"SADD", func(ctx context.Context, rdb *redis.Client, i int) error {
			return expect(rdb.SAdd(ctx, set, "x"+strconv.Itoa(i)).Result())(1)
		}},
		{"SISMEMBER", func(ctx context.Context, rdb *redis.Client, i int) error {
			return expect(rdb.SIsMember(ctx, set, spread(i)).Result())(true)
		}},
		{"SCARD", func(ctx context.Context, rdb *redis.Client, i int) error { return rdb.SCard(ctx, set).Err() }},
		{"HSET", func(ctx context.Context, rdb *redis.Client, i int) error {
			return expect(rdb.HSet(ctx, hash, "x"+strconv.Itoa(i), "v").Result())(1)
		}},
		{"HGET", func(ctx context.Context, rdb *redis.Client, i int) error {
			f := spread(i)
			return expect(rdb.HGet(ctx, hash, f).Result())(f)
		}},
		{"HLEN", func(ctx context.Context, rdb *redis.Client, i int) error { return rdb.HLen(ctx, hash).Err() }},
		{"ZADD", func(ctx context.Context, rdb *redis.Client, i int) error {
			return expect(rdb.ZAdd(ctx, zset, redis.Z{Score: float64(i) + 0.5, Member: "x" + strconv.Itoa(i)}).Result())(1)
		}},
		{"ZSCORE", func(ctx context.Context, rdb *redis.Client, i int) error {
			m := spread(i)
			n, _ := strconv.Atoi(m[1:])
			return expect(rdb.ZScore(ctx, zset, m).Result())(float64(n))
		}},
		{"ZRANGEBYSCORE LIMIT 0 10", func(ctx context.Context, rdb *redis.Client, i int) error {
			return rdb.ZRangeByScore(ctx, zset, &redis.ZRangeBy{Min: strconv.Itoa(i * 7 % n), Max: "+inf", Count: 10}).Err()
		}},
		{"ZPOPMIN", func(ctx context.Context, rdb *redis.Client, i int) error { return rdb.ZPopMin(ctx, zset).Err() }},
		{"ZCARD", func(ctx context.Context, rdb *redis.Client, i int) error { return rdb.ZCard(ctx, zset).Err() }},
	}
}
