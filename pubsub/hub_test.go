package pubsub_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/pubsub"
)

type got struct {
	kind                      pubsub.Kind
	pattern, channel, payload string
}

type recorder struct {
	mu   sync.Mutex
	msgs []got
}

func (r *recorder) Push(_ context.Context, k pubsub.Kind, pattern, channel, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, got{k, string(pattern), string(channel), string(payload)})
}

func publish(t *testing.T, h *pubsub.Hub, shard bool, channel, payload string) int64 {
	t.Helper()
	n, err := h.Publish(context.Background(), pubsub.Message{Shard: shard, Channel: []byte(channel), Payload: []byte(payload)})
	require.NoError(t, err)
	return n
}

func TestHubMatching(t *testing.T) {
	h := pubsub.NewHub()
	a, b, c := &recorder{}, &recorder{}, &recorder{}
	require.True(t, h.Subscribe(a, pubsub.Channel, []byte("news")))
	require.False(t, h.Subscribe(a, pubsub.Channel, []byte("news")), "twice is once")
	require.True(t, h.Subscribe(a, pubsub.Pattern, []byte("n*")))
	require.True(t, h.Subscribe(b, pubsub.Pattern, []byte("n[ae]ws")))
	require.True(t, h.Subscribe(b, pubsub.Pattern, []byte(`n\*`)))
	require.True(t, h.Subscribe(c, pubsub.Shard, []byte("news")))

	require.Equal(t, int64(3), publish(t, h, false, "news", "1"), "a's channel and pattern, b's pattern; not c's shard channel")
	require.Equal(t, int64(2), publish(t, h, false, "n*", "2"), "a's n* and b's escaped star")
	require.Equal(t, int64(1), publish(t, h, true, "news", "3"), "a shard message reaches shard subscribers only")
	require.Equal(t, int64(0), publish(t, h, false, "other", "4"))

	require.ElementsMatch(t, []got{
		{pubsub.Channel, "", "news", "1"}, {pubsub.Pattern, "n*", "news", "1"}, {pubsub.Pattern, "n*", "n*", "2"},
	}, a.msgs)
	require.ElementsMatch(t, []got{{pubsub.Pattern, "n[ae]ws", "news", "1"}, {pubsub.Pattern, `n\*`, "n*", "2"}}, b.msgs)
	require.Equal(t, []got{{pubsub.Shard, "", "news", "3"}}, c.msgs)
}

func TestHubCounts(t *testing.T) {
	h := pubsub.NewHub()
	a, b := &recorder{}, &recorder{}
	h.Subscribe(a, pubsub.Channel, []byte("x"))
	h.Subscribe(a, pubsub.Channel, []byte("y"))
	h.Subscribe(b, pubsub.Channel, []byte("x"))
	h.Subscribe(a, pubsub.Pattern, []byte("p*"))
	h.Subscribe(b, pubsub.Pattern, []byte("p*"))
	h.Subscribe(b, pubsub.Shard, []byte("s"))

	require.Equal(t, 2, h.Count(a, pubsub.Channel))
	require.Equal(t, [][]byte{[]byte("x"), []byte("y")}, h.Names(a, pubsub.Channel))
	require.Equal(t, []int64{2, 1, 0}, h.LocalNumSub([][]byte{[]byte("x"), []byte("y"), []byte("z")}, false))
	require.Equal(t, []int64{1}, h.LocalNumSub([][]byte{[]byte("s")}, true))
	require.Equal(t, int64(1), h.LocalNumPat(), "distinct patterns, as Redis counts them")
	require.ElementsMatch(t, [][]byte{[]byte("x"), []byte("y")}, h.LocalChannels(nil, false))
	require.Equal(t, [][]byte{[]byte("y")}, h.LocalChannels([]byte("[y]"), false))
	chans, pats, shards := h.Totals()
	require.Equal(t, []int{2, 1, 1}, []int{chans, pats, shards})

	require.True(t, h.Unsubscribe(a, pubsub.Channel, []byte("x")))
	require.False(t, h.Unsubscribe(a, pubsub.Channel, []byte("x")))
	require.Equal(t, []int64{1}, h.LocalNumSub([][]byte{[]byte("x")}, false))

	h.Leave(b)
	h.Leave(a)
	chans, pats, shards = h.Totals()
	require.Equal(t, []int{0, 0, 0}, []int{chans, pats, shards})
	require.Equal(t, 0, h.Count(a, pubsub.Pattern))
	require.Zero(t, publish(t, h, false, "x", "gone"))
}

// TestHubOrder: messages of one publisher on one channel arrive in the
// order published, at every subscriber, while other publishers publish at
// the same time.
func TestHubOrder(t *testing.T) {
	h := pubsub.NewHub()
	subs := []*recorder{{}, {}, {}}
	for _, s := range subs {
		h.Subscribe(s, pubsub.Channel, []byte("c"))
		h.Subscribe(s, pubsub.Pattern, []byte("*"))
	}
	const publishers, each = 4, 200
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				publish(t, h, false, "c", string(rune('a'+p))+string(rune(i)))
			}
		}()
	}
	wg.Wait()
	for _, s := range subs {
		require.Len(t, s.msgs, 2*publishers*each)
		next := map[string]int{}
		for _, m := range s.msgs {
			key := m.pattern + "/" + m.payload[:1]
			require.Equal(t, next[key], int([]rune(m.payload[1:])[0]), "publisher %s", key)
			next[key]++
		}
	}
}

// fakePeers answers for other instances with fixed figures.
type fakePeers struct {
	published []pubsub.Message
}

func (f *fakePeers) Publish(_ context.Context, m pubsub.Message) (int64, error) {
	f.published = append(f.published, m)
	return 5, nil
}

func (f *fakePeers) Channels(_ context.Context, pattern []byte, shard bool) ([][]byte, error) {
	return [][]byte{[]byte("remote"), []byte("x")}, nil
}

func (f *fakePeers) NumSub(_ context.Context, channels [][]byte, shard bool) ([]int64, error) {
	out := make([]int64, len(channels))
	for i := range out {
		out[i] = 10
	}
	return out, nil
}

func (f *fakePeers) NumPat(context.Context) (int64, error) { return 7, nil }

func TestHubPeers(t *testing.T) {
	h := pubsub.NewHub()
	a := &recorder{}
	h.Subscribe(a, pubsub.Channel, []byte("x"))
	h.Subscribe(a, pubsub.Pattern, []byte("x*"))
	p := &fakePeers{}
	h.SetPeers(p)

	require.Equal(t, int64(2+5), publish(t, h, false, "x", "m"), "the local receivers and the peers'")
	require.Equal(t, []pubsub.Message{{Channel: []byte("x"), Payload: []byte("m")}}, p.published)
	ctx := context.Background()
	n, err := h.NumSub(ctx, [][]byte{[]byte("x"), []byte("y")}, false)
	require.NoError(t, err)
	require.Equal(t, []int64{11, 10}, n)
	chans, err := h.Channels(ctx, nil, false)
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("remote"), []byte("x")}, chans, "without duplicates")
	pats, err := h.NumPat(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(8), pats)

	// What a peer asks this instance: local figures only.
	require.Equal(t, int64(2), h.Deliver(pubsub.Message{Channel: []byte("x"), Payload: []byte("from a peer")}))
	require.Equal(t, []int64{1}, h.LocalNumSub([][]byte{[]byte("x")}, false))
}
