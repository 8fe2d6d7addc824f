package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/retry"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
)

// bigTableKeys is the size of the table the whole-keyspace commands are
// run on: big enough that DynamoDB fills several 1 MB Scan pages.
const bigTableKeys = 100_000

// TestWholeKeyspaceCommandsOnABigTable: DBSIZE, KEYS, SCAN to the end and
// RANDOMKEY on a table of 100,000 keys on DynamoDB Local. The
// store's policy is cut tighter than the default, so that a Scan page
// given no more time than a single-item request fails here at once, not
// only on a loaded machine (where DBSIZE failed with "DynamoDB is
// unavailable" under the default policy): a page has its own attempts and
// a page's slack, the scan in all a bound of minutes.
func TestWholeKeyspaceCommandsOnABigTable(t *testing.T) {
	if testing.Short() {
		t.Skip("a table of 100,000 keys")
	}
	st := dynamotest.NewStore(t, dynamo.Config{
		RequestTimeout: 300 * time.Millisecond,
		RetryBudget:    500 * time.Millisecond,
	})
	fillStrings(t, st, bigTableKeys)
	c := testserver.Start(t, st).Client(t)
	ctx := context.Background()

	start := time.Now()
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	require.EqualValues(t, bigTableKeys, n)
	t.Logf("DBSIZE of %d keys in %v", n, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	t.Logf("KEYS * of %d keys in %v", len(keys), time.Since(start).Round(time.Millisecond))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		require.False(t, seen[k], "%q listed twice", k)
		seen[k] = true
	}
	require.Len(t, seen, bigTableKeys)

	scanned := 0
	for cur := uint64(0); ; {
		ks, next, err := c.Scan(ctx, cur, "", 100_000).Result()
		require.NoError(t, err)
		scanned += len(ks)
		if cur = next; cur == 0 {
			break
		}
	}
	require.Equal(t, bigTableKeys, scanned)

	k, err := c.RandomKey(ctx).Result()
	require.NoError(t, err)
	require.True(t, seen[k], "RANDOMKEY %q", k)
}

// fillStrings writes n small string keys straight into st, in batches
// written by a few writers at once.
func fillStrings(t *testing.T, st dynastore.Store, n int) {
	t.Helper()
	const writers = 8
	start := time.Now()
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]dynastore.Item, 0, n/writers+1)
			for i := w; i < n; i += writers {
				items = append(items, model.StringItem(0, []byte(fmt.Sprint("key:", i)), []byte("v"), 0, 0))
			}
			// The test's store is cut tight for scans: writes get
			// the time they need.
			errs[w] = dynastore.BatchWrite(retry.WithSlack(context.Background(), time.Minute), st, items, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d keys written in %v", n, time.Since(start).Round(time.Millisecond))
}
