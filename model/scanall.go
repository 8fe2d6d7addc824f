package model

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

// A whole-table scan (DBSIZE, KEYS, FLUSHDB, FLUSHALL) is many requests,
// and the store's retry policy bounds each request, not the scan: every
// page gets its own attempts and budget. A page is no request of a few KB
// either: DynamoDB fills it up to 1 MB, which a loaded table (DynamoDB
// Local most of all) may take longer to read than the policy allows a
// single-item request, so a page has scanPageSlack more, in each attempt
// and in all. What bounds the scan is ScanAllBound, after which it fails
// with ErrScanTooLong rather than holding its client for ever.
const (
	scanPageSlack = 10 * time.Second
	// DefaultScanAllBound is how long a whole-table scan may take in all
	// (README, "Keys and the keyspace").
	DefaultScanAllBound = 10 * time.Minute
)

// ErrScanTooLong ends a whole-table scan that outlasted its bound.
var ErrScanTooLong = errors.New("model: the table scan did not finish in time")

// scanAllBound is DefaultScanAllBound unless a test shortened it.
var scanAllBound atomic.Int64

func init() { scanAllBound.Store(int64(DefaultScanAllBound)) }

// SetScanAllBound changes the bound of whole-table scans for the whole
// process and returns the previous one (tests use it to reach it quickly).
func SetScanAllBound(d time.Duration) time.Duration {
	return time.Duration(scanAllBound.Swap(int64(d)))
}

// scanPage reads one page of a scan, with the slack a page needs beyond
// the store's policy.
func scanPage(ctx context.Context, st dynastore.Store, sc dynastore.Scan) (dynastore.ScanPage, error) {
	return st.Scan(retry.WithSlack(ctx, scanPageSlack), sc)
}

// ScanAll runs a table scan with filter to the end, calling fn for every
// item. Each page is a request of its own (scanPage); the whole scan is
// bounded by the scan bound, past which it fails with ErrScanTooLong.
func ScanAll(ctx context.Context, st dynastore.Store, filter dynastore.Cond, fn func(dynastore.Item) error) error {
	bound := time.Duration(scanAllBound.Load())
	sctx, cancel := context.WithTimeoutCause(ctx, bound, ErrScanTooLong)
	defer cancel()
	var after *dynastore.Key
	for pages := 1; ; pages++ {
		page, err := scanPage(sctx, st, dynastore.Scan{Filter: filter, After: after})
		if err != nil {
			if ctx.Err() == nil && errors.Is(context.Cause(sctx), ErrScanTooLong) {
				return fmt.Errorf("%w: %d pages read in %v", ErrScanTooLong, pages-1, bound)
			}
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		after = page.Next
	}
}
