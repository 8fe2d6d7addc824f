package events

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The values CONFIG GET answers after CONFIG SET, as redis-server 7.0.15
// printed them.
func TestFlagsRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"KEA", "AKE"},
		{"Kgn", "gnK"},
		{"AKEmn", "AKEm"},
		{"gx$lshzetdK", "AK"},
		{"Emn", "nEm"},
		{"", ""},
		{"nm", "nm"},
	} {
		c, ok := ParseFlags(tc.in)
		require.True(t, ok, tc.in)
		require.Equal(t, tc.out, c.String(), tc.in)
	}
	_, ok := ParseFlags("KQ")
	require.False(t, ok)
}

func TestMessages(t *testing.T) {
	e := Event{DB: 3, Class: String, Name: "set", Key: []byte("k")}
	chs, ps := e.Messages(Keyspace | Keyevent | String)
	require.Equal(t, [][]byte{[]byte("__keyspace@3__:k"), []byte("__keyevent@3__:set")}, chs)
	require.Equal(t, [][]byte{[]byte("set"), []byte("k")}, ps)
	chs, _ = e.Messages(Keyspace | List)
	require.Empty(t, chs)
	chs, _ = e.Messages(String)
	require.Empty(t, chs, "neither K nor E")
}

// interestPeers records the interest declarations a Dispatcher makes.
type interestPeers struct {
	mu   sync.Mutex
	last *bool
	n    int
}

func (p *interestPeers) Send(Event, bool) {}
func (p *interestPeers) Anyone() bool     { return false }
func (p *interestPeers) Flags(context.Context, Class) error {
	return nil
}
func (p *interestPeers) Interest(_ context.Context, on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.n = &on, p.n+1
	return nil
}

type nopConsumer struct{ int }

func (nopConsumer) KeyEvent(Event) {}

// Consumers coming and going at once: the last declaration the peers get
// says whether a consumer is left, and each addition was declared.
func TestInterestDeclarations(t *testing.T) {
	for round := range 200 {
		p := &interestPeers{}
		d := &Dispatcher{}
		d.SetPeers(p)
		keep, err := d.AddConsumer(context.Background(), nopConsumer{0})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rm, err := d.AddConsumer(context.Background(), nopConsumer{i + 1})
				require.NoError(t, err)
				rm()
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); keep() }()
		wg.Wait()
		require.GreaterOrEqual(t, p.n, 5, "round %d", round)
		require.NotNil(t, p.last)
		require.False(t, *p.last, "round %d: declared on with no consumer left", round)
		keep2, err := d.AddConsumer(context.Background(), nopConsumer{9})
		require.NoError(t, err)
		require.True(t, *p.last)
		keep2()
		require.False(t, *p.last)
	}
}

// A read of the table that began before a change does not undo it, even
// when the flags went back to the value they had as it began.
func TestApplyFlagsSince(t *testing.T) {
	d := &Dispatcher{}
	kea, _ := ParseFlags("KEA")
	kean, _ := ParseFlags("KEAn")
	d.ApplyFlags(kea)
	gen := d.FlagsGen()
	d.ApplyFlags(kean)
	d.ApplyFlags(kea)
	d.ApplyFlagsSince(0, gen) // the read saw the table before both changes
	require.Equal(t, kea, d.Flags())
	d.ApplyFlagsSince(kean, d.FlagsGen())
	require.Equal(t, kean, d.Flags())
}
