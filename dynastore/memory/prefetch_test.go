package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

func prefetchKey(s string) dynastore.Key { return dynastore.Key{PK: []byte(s), SK: []byte{0}} }

// Prefetch makes no request and skips a shard being written rather than
// waiting for it.
func TestPrefetchNeverBlocks(t *testing.T) {
	stats := dynastore.NewStats()
	s := New(Options{Observer: stats})
	ctx := context.Background()
	keys := []dynastore.Key{prefetchKey("a"), prefetchKey("b"), prefetchKey(""), {PK: make([]byte, 2000), SK: []byte{0}}}
	for _, k := range keys[:2] {
		_, err := s.Put(ctx, dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)}, {Name: dynastore.AttrSK, Value: dynastore.B(k.SK)}, {Name: "v", Value: dynastore.N("1")}}, dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	before := stats.Snapshot()

	sh := s.shard(s.shardOf(keys[0].PK))
	sh.mu.Lock()
	done := make(chan struct{})
	go func() {
		s.Prefetch(keys[:2], keys[2:])
		s.Prefetch(nil, keys)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Prefetch waited for a write-locked shard")
	}
	sh.mu.Unlock()
	require.True(t, sh.mu.TryLock(), "Prefetch left no lock behind")
	sh.mu.Unlock()
	s.Prefetch(keys, nil)
	s.Prefetch(keys[2:], keys[:2])
	require.Equal(t, before, stats.Snapshot(), "no request counted")
	for _, k := range keys[:2] {
		it, err := s.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, dynastore.N("1"), it.Get("v"))
	}
}

// Prefetches racing with writes that create, replace and delete the items
// they look at, and grow the shards' indexes (the race detector checks
// that every read is under a lock).
func TestPrefetchWithWrites(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	const n = 2000
	keys := make([]dynastore.Key, n)
	for i := range keys {
		keys[i] = prefetchKey("k" + strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < n; i += 2 {
				k := keys[i]
				it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)}, {Name: dynastore.AttrSK, Value: dynastore.B(k.SK)}, {Name: "v", Value: dynastore.B(fmt.Sprint(i))}}
				_, err := s.Put(ctx, it, dynastore.WriteOptions{})
				require.NoError(t, err)
				if i%3 == 0 {
					_, err = s.Delete(ctx, k, dynastore.WriteOptions{})
					require.NoError(t, err)
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; i+maxPrefetch <= n; i += 7 {
			// Reads and replaced items, and more keys than Prefetch takes.
			s.Prefetch(keys[i:i+maxPrefetch/2], keys[i+maxPrefetch/2:i+maxPrefetch])
			s.Prefetch(keys[i:i+maxPrefetch], keys[i:i+maxPrefetch])
		}
	})
	wg.Wait()
	for i, k := range keys {
		it, err := s.Get(ctx, k)
		require.NoError(t, err)
		if i%3 == 0 {
			require.Nil(t, it)
		} else {
			require.Equal(t, dynastore.B(fmt.Sprint(i)), it.Get("v"))
		}
	}
}
