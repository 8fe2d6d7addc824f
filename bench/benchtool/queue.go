package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// runQueue measures one queue's throughput by shard count: clients push
// for a while, then pop (VT 0) what they pushed, on a server whose store
// limits each partition's throughput as DynamoDB does (redamo
// --partition-limit): a queue on one shard is capped by one partition,
// and spreads past it with more.
func runQueue(args []string) error {
	fs := flag.NewFlagSet("queue", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "redamo address (--store memory --partition-limit)")
	shardList := fs.String("shards", "1,2,4,8", "shard counts to measure")
	clients := fs.Int("clients", 64, "concurrent clients")
	duration := fs.Duration("duration", 3*time.Second, "time spent pushing (and then popping) per shard count")
	size := fs.Int("size", 200, "payload bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var shards []int
	for _, s := range strings.Split(*shardList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-shards: %q is not a shard count", s)
		}
		shards = append(shards, n)
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	payload := strings.Repeat("x", *size)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shards\tpushes/s\tpops/s (messages)\tthrottled replies\t\n")
	for _, n := range shards {
		q := fmt.Sprintf("bench:q:%d:%d", n, time.Now().UnixNano())
		if err := c.Do(ctx, "QUEUE.CONFIG", q, "SET", "SHARDS", n).Err(); err != nil {
			return err
		}
		var throttled atomic.Int64
		pushed, pushTook, err := drive(*clients, *duration, func() (int, error) {
			err := c.Do(ctx, "QUEUE.PUSH", q, payload).Err()
			return 1, err
		}, &throttled)
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		popped, popTook, err := drive(*clients, *duration, func() (int, error) {
			res, err := c.Do(ctx, "QUEUE.POP", q, "COUNT", 10, "VT", 0).Result()
			if errors.Is(err, redis.Nil) {
				return 0, nil
			}
			if err != nil {
				return 0, err
			}
			return len(res.([]any)), nil
		}, &throttled)
		if err != nil {
			return fmt.Errorf("pop: %w", err)
		}
		_ = c.Do(ctx, "QUEUE.PURGE", q).Err()
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%d\t\n", n, float64(pushed)/pushTook.Seconds(), float64(popped)/popTook.Seconds(), throttled.Load())
	}
	return tw.Flush()
}

// drive runs op from clients goroutines for d and returns the units op
// reported done and the time taken. Throttled replies (TRYAGAIN) are
// counted and retried.
func drive(clients int, d time.Duration, op func() (int, error), throttled *atomic.Int64) (int64, time.Duration, error) {
	var done atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				n, err := op()
				switch {
				case err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN"):
					throttled.Add(1)
				case err != nil:
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
					return
				}
				done.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	return done.Load(), time.Since(start), first
}
