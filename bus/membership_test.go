package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/events"
)

// countingStore counts the requests that go through it.
type countingStore struct {
	dynastore.Store
	n atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	s.n.Add(1)
	return s.Store.Get(ctx, k)
}

func (s *countingStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.n.Add(1)
	return s.Store.Put(ctx, it, o)
}

func (s *countingStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	s.n.Add(1)
	return s.Store.Delete(ctx, k, o)
}

func (s *countingStore) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	s.n.Add(1)
	return s.Store.Query(ctx, q)
}

// TestMembershipCost: an idle instance spends two requests per heartbeat
// (renew, read), and a publish none. The figure for an idle cluster of
// three at the default period is logged.
func TestMembershipCost(t *testing.T) {
	st := &countingStore{Store: memory.New(memory.Options{})}
	clk := newClock()
	var bs []*Bus
	for range 3 {
		bs = append(bs, startBus(t, testConfig(clk), st, newLocal(nil)))
	}
	beat(t, bs...)
	connected(t, bs[0], bs[1].id, bs[2].id)

	before := st.n.Load()
	const periods = 5
	for range periods {
		beat(t, bs...)
	}
	perPeriod := float64(st.n.Load()-before) / periods
	require.Equal(t, 6.0, perPeriod, "three instances, two requests each")

	before = st.n.Load()
	_, err := bs[0].Publish(context.Background(), testMessage("c", "x"))
	require.NoError(t, err)
	require.Equal(t, before, st.n.Load(), "a publish makes no store request")
	require.NoError(t, bs[1].Interest(context.Background(), true))
	bs[0].Send(events.Event{Class: events.String, Name: "set", Key: []byte("k")}, false)
	bs[0].Send(events.Event{Class: events.String, Name: "set", Key: []byte("k")}, true)
	require.NoError(t, bs[2].Flags(context.Background(), events.All))
	require.Equal(t, before, st.n.Load(), "nor do key events, interest or flags")
	t.Logf("idle cluster of three: %.1f requests per %v heartbeat = %.2f requests/s", perPeriod, defaultHeartbeat, perPeriod/defaultHeartbeat.Seconds())
}

// TestLoop: with the periodic loop running (short real periods), a member
// that dies without deleting its item is dropped once its heartbeat lapses,
// and one that joins is picked up.
func TestLoop(t *testing.T) {
	st := memory.New(memory.Options{})
	cfg := Config{Listen: "127.0.0.1:0", Secret: testSecret, Heartbeat: 20 * time.Millisecond}
	start := func() *Bus {
		b, err := New(cfg, st, newLocal(nil))
		require.NoError(t, err)
		require.NoError(t, b.Start(context.Background()))
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b := start(), start()
	connected(t, a, b.id)
	connected(t, b, a.id)
	b.shutdown(false)
	connected(t, a)
	c := start()
	connected(t, a, c.id)
	connected(t, c, a.id)
}
