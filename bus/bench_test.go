package bus

import (
	"context"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/events"
)

// benchCluster is three buses on loopback; subscribers to "c" on the two
// that do not publish.
func benchCluster(b *testing.B) []*Bus {
	st := memory.New(memory.Options{})
	clk := newClock()
	var bs []*Bus
	for i := range 3 {
		subs := map[string]int64{"c": 1}
		if i == 0 {
			subs = nil
		}
		bus, err := New(testConfig(clk), st, newLocal(subs))
		require.NoError(b, err)
		bus.manual = true
		require.NoError(b, bus.Start(context.Background()))
		b.Cleanup(func() { bus.Close() })
		bs = append(bs, bus)
	}
	for _, bus := range bs {
		require.NoError(b, bus.beat(context.Background()))
	}
	require.Eventually(b, func() bool {
		n, err := bs[0].Publish(context.Background(), testMessage("c", "warm"))
		return err == nil && n == 2
	}, 10*time.Second, 5*time.Millisecond)
	return bs
}

// BenchmarkPublish: one publisher's PUBLISH across the bus, which returns
// once both peers delivered and answered: the publish-to-deliver latency
// (p50, p99) is at most the reported round trip.
func BenchmarkPublish(b *testing.B) {
	bs := benchCluster(b)
	ctx := context.Background()
	m := testMessage("c", "0123456789abcdef0123456789abcdef")
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		n, err := bs[0].Publish(ctx, m)
		lat = append(lat, time.Since(t0))
		if err != nil || n != 2 {
			b.Fatalf("publish: %d, %v", n, err)
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPublishParallel: messages per second with many publishers (one
// per goroutine) through one instance to two others.
func BenchmarkPublishParallel(b *testing.B) {
	bs := benchCluster(b)
	ctx := context.Background()
	m := testMessage("c", "0123456789abcdef0123456789abcdef")
	b.SetParallelism(16 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if n, err := bs[0].Publish(ctx, m); err != nil || n != 2 {
				b.Errorf("publish: %d, %v", n, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "msgs/s")
}

// countEvents counts the events it receives.
type countEvents struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (c *countEvents) Receive(events.Event) {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
}
func (c *countEvents) ApplyFlags(events.Class)              {}
func (c *countEvents) FlagsGen() uint64                     { return 0 }
func (c *countEvents) ApplyFlagsSince(events.Class, uint64) {}

// BenchmarkSendEvent: key events per second from one instance to two
// others that want them all (Send returns without waiting; the clock stops
// when both received every one).
func BenchmarkSendEvent(b *testing.B) {
	st := memory.New(memory.Options{})
	clk := newClock()
	var bs []*Bus
	var sinks []*countEvents
	for range 3 {
		sink := &countEvents{want: int64(b.N), done: make(chan struct{})}
		cfg := testConfig(clk)
		cfg.Events = sink
		bus, err := New(cfg, st, newLocal(nil))
		require.NoError(b, err)
		bus.manual = true
		require.NoError(b, bus.Start(context.Background()))
		b.Cleanup(func() { bus.Close() })
		bs, sinks = append(bs, bus), append(sinks, sink)
	}
	for _, bus := range bs {
		require.NoError(b, bus.beat(context.Background()))
	}
	require.Eventually(b, func() bool { return bs[0].Linked() && bs[1].Linked() && bs[2].Linked() }, 10*time.Second, time.Millisecond)
	e := events.Event{DB: 0, Class: events.String, Name: "set", Key: []byte("key:000001")}
	b.ReportAllocs()
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		bs[0].Send(e, true)
	}
	<-sinks[1].done
	<-sinks[2].done
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "events/s")
}
