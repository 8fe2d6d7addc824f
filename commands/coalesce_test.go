package commands_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// gatedStore holds the first request of one operation (once armed) on
// the key "hot" until open is closed, so that the commands that follow it
// on the key wait behind it.
type gatedStore struct {
	dynastore.Store
	op      atomic.Value // string
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedStore) gate(op string, pk []byte) {
	if armed, _ := g.op.Load().(string); op != armed || !bytes.HasSuffix(pk, []byte("hot")) {
		return
	}
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.open
	}
}

func (g *gatedStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	g.gate("get", k.PK)
	return g.Store.Get(ctx, k)
}

func (g *gatedStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	g.gate("put", it.Key().PK)
	return g.Store.Put(ctx, it, o)
}

func (g *gatedStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	g.gate("update", k.PK)
	return g.Store.Update(ctx, k, u, o)
}

var waitingRE = regexp.MustCompile(`coalesce_waiting:(\d+)`)

// TestHotKeyCoalescing runs 64 clients' commands on one key through one
// instance, all but the first arriving while the first one's request is
// held in flight: they share one request (two in all), each is answered
// as Redis would answer it in some order, and INFO counts the batch.
func TestHotKeyCoalescing(t *testing.T) {
	const clients = 64
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range []struct {
				name, op, label string
				setup           []any
				cmd             func(i int) []any
				check           func(t *testing.T, replies []any, final string)
			}{
				{"incr", "update", "incr", nil, func(int) []any { return []any{"incr", "hot"} },
					func(t *testing.T, replies []any, final string) {
						seen := map[int64]bool{}
						for _, r := range replies {
							seen[r.(int64)] = true
						}
						require.Len(t, seen, clients, "each INCR its own value")
						for v := range seen {
							require.True(t, v >= 1 && v <= clients)
						}
						require.Equal(t, strconv.Itoa(clients), final)
					}},
				{"get", "get", "get", []any{"set", "hot", "v"}, func(int) []any { return []any{"get", "hot"} },
					func(t *testing.T, replies []any, final string) {
						for _, r := range replies {
							require.Equal(t, "v", r)
						}
					}},
				{"set", "put", "set", nil, func(i int) []any { return []any{"set", "hot", fmt.Sprint(i)} },
					func(t *testing.T, replies []any, final string) {
						for _, r := range replies {
							require.Equal(t, "OK", r)
						}
						n, err := strconv.Atoi(final)
						require.NoError(t, err)
						require.True(t, n >= 0 && n < clients)
					}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					g := &gatedStore{Store: b.Store, entered: make(chan struct{}), open: make(chan struct{})}
					s := testserver.Start(t, g, testserver.WithStats(b.Stats))
					ctx := context.Background()
					if tc.setup != nil {
						require.NoError(t, s.Client(t).Do(ctx, tc.setup...).Err())
					}
					g.op.Store(tc.op)
					rdbs := make([]*redis.Client, clients)
					for i := range rdbs {
						rdbs[i] = s.Client(t)
						require.NoError(t, rdbs[i].Ping(ctx).Err())
					}
					before := b.Stats.Requests(tc.label)
					replies := make([]any, clients)
					var wg sync.WaitGroup
					do := func(i int) {
						defer wg.Done()
						var err error
						replies[i], err = rdbs[i].Do(ctx, tc.cmd(i)...).Result()
						require.NoError(t, err)
					}
					wg.Add(1)
					go do(0)
					<-g.entered
					for i := 1; i < clients; i++ {
						wg.Add(1)
						go do(i)
					}
					info := s.Client(t)
					require.Eventually(t, func() bool {
						m := waitingRE.FindStringSubmatch(info.Info(ctx, "redamo").Val())
						return m != nil && m[1] == strconv.Itoa(clients-1)
					}, 10*time.Second, time.Millisecond)
					close(g.open)
					wg.Wait()
					require.Equal(t, int64(2), b.Stats.Requests(tc.label)-before, "requests of %d commands", clients)
					final, err := info.Get(ctx, "hot").Result()
					require.NoError(t, err)
					tc.check(t, replies, final)
					all := info.Info(ctx, "redamo").Val()
					require.Contains(t, all, "coalesced_batches:1\r\n")
					require.Contains(t, all, fmt.Sprintf("coalesced_commands:%d\r\n", clients-1))
					require.NoError(t, info.Del(ctx, "hot").Err())
				})
			}
		})
	}
}
