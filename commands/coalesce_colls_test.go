package commands_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// TestHotCollections: 64 clients of one instance on one list (pushes and
// pops), one set and one CL.THROTTLE key, whose commands coalesce: every
// pushed element is popped exactly once, the SADD replies add up to the
// set's size, and exactly the burst of throttle calls is allowed.
func TestHotCollections(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Start(t)
			const clients, per = 64, 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			popped := map[string]int{}
			var added, allowed int64
			for i := range clients {
				cl := s.Client(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range per {
						require.NoError(t, cl.LPush(ctx, "q", fmt.Sprintf("%d-%d", i, j)).Err())
						v, err := cl.RPop(ctx, "q").Result()
						require.NoError(t, err) // at least this client's own push is there
						n, err := cl.SAdd(ctx, "s", fmt.Sprintf("m%d", (i*per+j)%100), fmt.Sprintf("m%d", (i+j)%100)).Result()
						require.NoError(t, err)
						r, err := cl.Do(ctx, "cl.throttle", "t", 99, 1, 3600).Int64Slice()
						require.NoError(t, err)
						mu.Lock()
						popped[v]++
						added += n
						if r[0] == 0 {
							allowed++
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.Len(t, popped, clients*per)
			for v, n := range popped {
				require.Equal(t, 1, n, "element %s popped %d times", v, n)
			}
			cl := s.Client(t)
			require.EqualValues(t, 0, cl.LLen(ctx, "q").Val())
			require.Equal(t, cl.SCard(ctx, "s").Val(), added)
			require.EqualValues(t, 100, allowed)
		})
	}
}
