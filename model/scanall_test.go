package model_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/retry"
	"github.com/redamo/redamo/model"
)

// policyStore answers scans in pages of pageItems items, each page one
// request run under policy, as a remote store runs every request.
type policyStore struct {
	*memory.Store
	policy    retry.Policy
	pageItems int
}

func (s policyStore) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	sc.Limit = s.pageItems
	var page dynastore.ScanPage
	_, err := s.policy.Run(ctx, dynastore.OpScan, retry.Read, func(actx context.Context) (err error) {
		page, err = s.Store.Scan(actx, sc)
		return err
	})
	return page, err
}

// A whole-table scan gives every page a request of its own with the slack
// of a page: each page here takes longer than the store's policy allows a
// request (attempt and budget), and each segment's pages in turn far
// longer, yet the scan reads every item. Without the slack the first page ends at its attempt
// timeout, whatever the machine's speed: the latency hook waits at least
// its latency.
func TestScanAllPagesHaveTheirOwnBudget(t *testing.T) {
	mem := memory.New(memory.Options{})
	ctx := context.Background()
	const keys = 20
	for i := range keys {
		_, err := mem.Put(ctx, model.StringItem(0, []byte(fmt.Sprint("k", i)), []byte("v"), 0, 0), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	const latency = 30 * time.Millisecond
	mem.SetLatency(latency)
	st := policyStore{Store: mem, pageItems: 1, policy: retry.Policy{
		MaxAttempts: 2, AttemptTimeout: latency / 3, Budget: latency / 2, Base: time.Microsecond, Cap: time.Microsecond}}

	var pages atomic.Int64
	counting := countingScans{Store: st, n: &pages}
	n := 0
	require.NoError(t, model.ScanAll(ctx, counting, model.KeyFilter(0, nil, 0), func(dynastore.Item) error { n++; return nil }))
	require.Equal(t, keys, n)
	require.GreaterOrEqual(t, pages.Load(), int64(keys), "one request per page of one item")
}

// A scan that outlasts the bound of whole-table scans fails with
// ErrScanTooLong, which says so, not with the store's unavailability.
func TestScanAllBound(t *testing.T) {
	mem := memory.New(memory.Options{})
	ctx := context.Background()
	_, err := mem.Put(ctx, model.StringItem(0, []byte("k"), []byte("v"), 0, 0), dynastore.WriteOptions{})
	require.NoError(t, err)
	mem.SetLatency(time.Hour)
	defer model.SetScanAllBound(model.SetScanAllBound(20 * time.Millisecond))
	st := policyStore{Store: mem, pageItems: 1, policy: retry.DefaultPolicy}
	err = model.ScanAll(ctx, st, model.KeyFilter(0, nil, 0), func(dynastore.Item) error { return nil })
	require.ErrorIs(t, err, model.ErrScanTooLong)
	require.NotErrorIs(t, err, dynastore.ErrUnavailable)

	// The caller giving up is not the bound.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	defer model.SetScanAllBound(model.SetScanAllBound(time.Hour))
	err = model.ScanAll(gone, st, model.KeyFilter(0, nil, 0), func(dynastore.Item) error { return nil })
	require.Error(t, err)
	require.NotErrorIs(t, err, model.ErrScanTooLong)
}

// countingScans counts the Scan requests made through it.
type countingScans struct {
	dynastore.Store
	n *atomic.Int64
}

func (s countingScans) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	s.n.Add(1)
	return s.Store.Scan(ctx, sc)
}

// A page that fails fails the scan, whichever segment it is of: a segment
// never looks finished for having failed.
func TestScanAllPageFailure(t *testing.T) {
	mem := memory.New(memory.Options{})
	ctx := context.Background()
	for i := range 20 {
		_, err := mem.Put(ctx, model.StringItem(0, []byte(fmt.Sprint("k", i)), []byte("v"), 0, 0), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	st := policyStore{Store: mem, pageItems: 1}
	for skip := range 8 {
		var pages atomic.Int64
		failing := failingScan{Store: st, n: &pages, at: int64(skip)}
		n := 0
		err := model.ScanAll(ctx, failing, model.KeyFilter(0, nil, 0), func(dynastore.Item) error { n++; return nil })
		require.ErrorIs(t, err, dynastore.ErrUnavailable, "page %d failed", skip)
	}
}

// failingScan fails the Scan request numbered at (from 0).
type failingScan struct {
	dynastore.Store
	n  *atomic.Int64
	at int64
}

func (s failingScan) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	if s.n.Add(1)-1 == s.at {
		return dynastore.ScanPage{}, dynastore.ErrUnavailable
	}
	return s.Store.Scan(ctx, sc)
}
