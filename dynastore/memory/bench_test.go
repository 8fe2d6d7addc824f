package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// benchKeys is the key space of the store benchmarks: n keys of
// redis-benchmark's shape ("key:000012345").
func benchKeys(n int) []dynastore.Key {
	keys := make([]dynastore.Key, n)
	for i := range keys {
		keys[i] = key(fmt.Sprintf("key:%09d", i))
	}
	return keys
}

// benchItem is a key item as SET writes it (type, value, version), with a
// counter for INCR's update.
func benchItem(k dynastore.Key) dynastore.Item {
	return item(k, "t", dynastore.S("string"), "v", dynastore.B("xxx"), "n", dynastore.N("0"), "ver", dynastore.N("8205412094530264121"))
}

// benchIncr is INCR's update and condition (model/strings.go IncrBy).
var (
	benchIncr = dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: "t", Val: dynastore.S("string")},
			{Attr: "ver", Val: dynastore.N("1234567890123456789")},
		},
		Add:    []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}},
		Remove: []string{"e"},
	}
	benchIncrOpts = dynastore.WriteOptions{
		Cond: dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{
			dynastore.Exists{Attr: "t"}, dynastore.IsType{Attr: "n", Type: dynastore.KindN},
		}},
		Return:       dynastore.ReturnAllNew,
		OldOnFailure: true,
	}
)

// cpuTime is the CPU time the process has used, all threads (GC included).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU starts counting CPU time; the function it returns reports it
// per operation as cpu-ns/op. On a shared machine wall time per op depends
// on the other processes; CPU time per op much less.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkStore runs GetItem, PutItem and INCR's UpdateItem on random keys
// of a store of 100,000 items (redis-benchmark -r 100000), and PutItem of
// new keys, from one
// goroutine and from 50 at once (redis-benchmark -c 50), with an observer
// as redamo has one. The parallel runs show how much writers on different
// keys wait for each other.
func BenchmarkStore(b *testing.B) {
	const n = 100_000
	keys := benchKeys(n)
	items := make([]dynastore.Item, n)
	for i, k := range keys {
		items[i] = benchItem(k)
	}
	var fresh atomic.Int64 // numbers the keys "insert" adds
	ops := []struct {
		name string
		run  func(s *memory.Store, ctx context.Context, i int) error
	}{
		{"get", func(s *memory.Store, ctx context.Context, i int) error {
			_, err := s.Get(ctx, keys[i])
			return err
		}},
		{"put", func(s *memory.Store, ctx context.Context, i int) error {
			_, err := s.Put(ctx, items[i], dynastore.WriteOptions{})
			return err
		}},
		{"update", func(s *memory.Store, ctx context.Context, i int) error {
			_, err := s.Update(ctx, keys[i], benchIncr, benchIncrOpts)
			return err
		}},
		// A Put of a key not yet stored: what SET and INCR cost on a key
		// space redis-benchmark has not filled yet (index inserts).
		{"insert", func(s *memory.Store, ctx context.Context, i int) error {
			k := key(fmt.Sprintf("new:%09d:%d", i, fresh.Add(1)))
			_, err := s.Put(ctx, benchItem(k), dynastore.WriteOptions{Handover: true})
			return err
		}},
	}
	for _, op := range ops {
		for _, parallel := range []bool{false, true} {
			name := op.name + "/serial"
			if parallel {
				name = op.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				s := memory.New(memory.Options{Observer: dynastore.NewStats()})
				ctx := dynastore.WithLabel(context.Background(), op.name)
				for _, it := range items {
					if _, err := s.Put(ctx, it, dynastore.WriteOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				defer reportCPU(b)()
				if !parallel {
					r := rand.New(rand.NewPCG(1, 2))
					for b.Loop() {
						if err := op.run(s, ctx, r.IntN(n)); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(25) // 50 goroutines on 2 CPUs
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
					for pb.Next() {
						if err := op.run(s, ctx, r.IntN(n)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkHotKey is redis-benchmark's INCR and SET without -r: every
// goroutine writes the same key.
func BenchmarkHotKey(b *testing.B) {
	k := key("hot")
	it := benchItem(k)
	for _, op := range []string{"incr", "put"} {
		b.Run(op, func(b *testing.B) {
			s := memory.New(memory.Options{Observer: dynastore.NewStats()})
			ctx := dynastore.WithLabel(context.Background(), op)
			b.ReportAllocs()
			b.SetParallelism(25)
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					if op == "incr" {
						_, err = s.Update(ctx, k, benchIncr, benchIncrOpts)
					} else {
						_, err = s.Put(ctx, it, dynastore.WriteOptions{})
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
