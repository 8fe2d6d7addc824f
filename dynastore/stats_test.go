package dynastore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// TestTally checks that requests made with a Tally's context reach its
// Stats only on Flush, exactly, also when several goroutines observe at
// once, and that a Tally of another Stats does not hold them back.
func TestTally(t *testing.T) {
	stats, other := dynastore.NewStats(), dynastore.NewStats()
	tally := stats.NewTally()
	ctx := dynastore.WithLabel(dynastore.WithTally(context.Background(), tally), "get")
	get := dynastore.StatKey{Label: "get", Op: dynastore.OpGetItem}
	put := dynastore.StatKey{Label: "get", Op: dynastore.OpPutItem}

	const goroutines, each = 4, 250
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := dynastore.Request{Label: "get", Op: dynastore.OpGetItem, Attempts: 1, RCU: 0.5}
				if g == 0 && i == 0 {
					r = dynastore.Request{Label: "get", Op: dynastore.OpPutItem, Attempts: 3, WCU: 2, Err: dynastore.ErrConditionFailed}
				}
				stats.Observe(ctx, r)
			}
		}()
	}
	wg.Wait()
	require.Empty(t, stats.Snapshot(), "held until Flush")

	tally.Flush()
	snap := stats.Snapshot()
	require.Equal(t, dynastore.StatRow{Requests: goroutines*each - 1, RCU: 0.5 * (goroutines*each - 1)}, snap[get])
	require.Equal(t, dynastore.StatRow{Requests: 1, Retries: 2, Errors: 1, WCU: 2}, snap[put])

	tally.Flush()
	require.Equal(t, snap, stats.Snapshot(), "a second Flush adds nothing")

	other.Observe(ctx, dynastore.Request{Label: "get", Op: dynastore.OpGetItem, Attempts: 1})
	require.Equal(t, int64(1), other.Requests("get"), "another Stats's tally does not hold a request")
	stats.Observe(dynastore.WithLabel(context.Background(), "get"), dynastore.Request{Label: "get", Op: dynastore.OpGetItem, Attempts: 1})
	require.Equal(t, int64(goroutines*each+1), stats.Requests("get"), "without a tally a request counts at once")
}

type timedObserver struct{}

func (timedObserver) Observe(context.Context, dynastore.Request) {}

func TestTimed(t *testing.T) {
	stats := dynastore.NewStats()
	for _, tc := range []struct {
		name string
		obs  dynastore.Observer
		want bool
	}{
		{"none", nil, false},
		{"stats", stats, false},
		{"stats only", dynastore.Observers{stats, stats}, false},
		{"an observer that may read durations", timedObserver{}, true},
		{"one of several", dynastore.Observers{stats, timedObserver{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, dynastore.Timed(tc.obs))
		})
	}
}
