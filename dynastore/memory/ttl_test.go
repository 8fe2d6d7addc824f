package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

func TestExpireTTL(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	now := time.Unix(1_000_000, 0)
	// Enough items that one step cannot see them all: the sweep must resume.
	const n = ttlBatch*2 + 10
	for i := range n {
		it := dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(fmt.Sprintf("k%06d", i))},
			{Name: dynastore.AttrSK, Value: dynastore.B{0}},
		}
		switch i % 3 {
		case 0: // expired a second ago
			it.Set(dynastore.AttrTTL, dynastore.N(fmt.Sprint(now.Unix()-1)))
		case 1: // expires in the future
			it.Set(dynastore.AttrTTL, dynastore.N(fmt.Sprint(now.Unix()+60)))
		}
		_, err := s.Put(ctx, it, dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	deleted := 0
	for range 3 {
		deleted += s.ExpireTTL(now)
	}
	expired := (n + 2) / 3
	require.Equal(t, expired, deleted)
	require.Equal(t, n-expired, s.Len())
	// Another full pass finds nothing more.
	for range 3 {
		require.Zero(t, s.ExpireTTL(now))
	}
	it, err := s.Get(ctx, dynastore.Key{PK: []byte("k000001"), SK: []byte{0}})
	require.NoError(t, err)
	require.NotNil(t, it, "an item whose ttl is in the future stays")
}

func TestRunTTLStopsWithContext(t *testing.T) {
	s := New(Options{})
	_, err := s.Put(context.Background(), dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B("k")},
		{Name: dynastore.AttrSK, Value: dynastore.B{0}},
		{Name: dynastore.AttrTTL, Value: dynastore.N("1")},
	}, dynastore.WriteOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.RunTTL(ctx, time.Millisecond, 0); close(done) }()
	require.Eventually(t, func() bool { return s.Len() == 0 }, 5*time.Second, time.Millisecond)
	cancel()
	<-done
}
