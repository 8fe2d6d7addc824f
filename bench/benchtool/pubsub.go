package main

// benchtool pubsub: publish/subscribe across redamo instances on one table.
// Latency: one publisher on the first instance, one subscriber on the
// second, one message at a time, each carrying its send time. Throughput:
// S subscribers spread over every instance, publishers on all of them,
// until every subscriber has every message.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func runPubSub(args []string) error {
	fs := flag.NewFlagSet("pubsub", flag.ExitOnError)
	addrList := fs.String("addrs", "", "comma-separated addresses of redamo instances on one table (at least two)")
	subList := fs.String("subscribers", "1,100", "subscriber counts for the throughput runs")
	latencyN := fs.Int("latency-messages", 2000, "messages of the latency run")
	msgs := fs.Int("messages", 5000, "messages per throughput run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addrs := strings.Split(*addrList, ",")
	if len(addrs) < 2 {
		return errors.New("-addrs: give at least two instances")
	}
	ctx := context.Background()
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, PoolSize: 64})
		defer clients[i].Close()
	}

	lat, err := pubsubLatency(ctx, clients[0], clients[1], *latencyN)
	if err != nil {
		return err
	}
	s := summarize(lat)
	fmt.Printf("publish to receive, instance 1 -> instance 2, one message at a time: p50 %.3f ms, p99 %.3f ms (%d messages)\n", s.p50, s.p99, len(lat))

	for _, f := range strings.Split(*subList, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return fmt.Errorf("-subscribers: %q is not a count", f)
		}
		rate, deliveries, err := pubsubThroughput(ctx, clients, n, *msgs)
		if err != nil {
			return err
		}
		fmt.Printf("%d subscribers over %d instances, %d publishers: %.0f messages/s published, %.0f deliveries/s\n", n, len(clients), len(clients)*4, rate, deliveries)
	}
	return nil
}

// waitSubscribed waits until channel has want subscribers as seen from c
// (every instance's bus has linked the others).
func waitSubscribed(ctx context.Context, c *redis.Client, channel string, want int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := c.PubSubNumSub(ctx, channel).Result()
		if err == nil && n[channel] == want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s never had %d subscribers", channel, want)
}

func pubsubLatency(ctx context.Context, pub, sub *redis.Client, n int) ([]time.Duration, error) {
	const channel = "bench:pubsub:latency"
	ps := sub.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return nil, err
	}
	if err := waitSubscribed(ctx, pub, channel, 1); err != nil {
		return nil, err
	}
	ch := ps.Channel()
	out := make([]time.Duration, 0, n)
	for range n {
		if err := pub.Publish(ctx, channel, strconv.FormatInt(time.Now().UnixNano(), 10)).Err(); err != nil {
			return nil, err
		}
		select {
		case m := <-ch:
			sent, err := strconv.ParseInt(m.Payload, 10, 64)
			if err != nil {
				return nil, err
			}
			out = append(out, time.Duration(time.Now().UnixNano()-sent))
		case <-time.After(10 * time.Second):
			return nil, errors.New("a message never arrived")
		}
	}
	return out, nil
}

func pubsubThroughput(ctx context.Context, clients []*redis.Client, subs, msgs int) (published, delivered float64, err error) {
	channel := fmt.Sprint("bench:pubsub:", subs)
	var done sync.WaitGroup
	errs := make(chan error, subs)
	var ready sync.WaitGroup
	for i := range subs {
		ps := clients[i%len(clients)].Subscribe(ctx, channel)
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			return 0, 0, err
		}
		ch := ps.Channel(redis.WithChannelSize(msgs))
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			for got := 0; got < msgs; got++ {
				select {
				case <-ch:
				case <-time.After(30 * time.Second):
					errs <- fmt.Errorf("a subscriber got %d of %d messages", got, msgs)
					return
				}
			}
		}()
	}
	ready.Wait()
	for _, c := range clients {
		if err := waitSubscribed(ctx, c, channel, int64(subs)); err != nil {
			return 0, 0, err
		}
	}
	const perInstance = 4
	publishers := len(clients) * perInstance
	start := time.Now()
	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Add(1)
		go func() {
			defer pubs.Done()
			c := clients[p%len(clients)]
			for i := p; i < msgs; i += publishers {
				if err := c.Publish(ctx, channel, "m").Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	pubs.Wait()
	done.Wait()
	elapsed := time.Since(start).Seconds()
	select {
	case err := <-errs:
		return 0, 0, err
	default:
	}
	return float64(msgs) / elapsed, float64(msgs*subs) / elapsed, nil
}
