package model

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// scanAllSegments is how many segments of the table a whole scan
	// reads at once, scanReadAhead how many pages a segment reads ahead
	// of the one fn is given items of.
	scanAllSegments = 4
	scanReadAhead   = 4
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
// item, one call at a time. The table is read as scanAllSegments segments
// in parallel (DynamoDB's parallel scan: a big table is read several pages
// at a time), and fn meets the items segment after segment, each in the
// store's order, so that the order does not depend on which page came
// first. Each page is a request of its own (scanPage); the whole scan is
// bounded by the scan bound, past which it fails with ErrScanTooLong.
func ScanAll(ctx context.Context, st dynastore.Store, filter dynastore.Cond, fn func(dynastore.Item) error) error {
	bound := time.Duration(scanAllBound.Load())
	deadline := time.Now().Add(bound)
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type result struct {
		page dynastore.ScanPage
		err  error
	}
	segs := make([]chan result, scanAllSegments)
	// stop tells the segments that nobody reads their pages any more.
	// (Not sctx: a page that failed at the bound must still be handed
	// over, or its segment would look finished.)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for i := range segs {
		segs[i] = make(chan result, scanReadAhead)
		wg.Add(1)
		go func(seg int, out chan<- result) {
			defer wg.Done()
			defer close(out)
			sc := dynastore.Scan{Filter: filter, Segment: seg, Segments: scanAllSegments}
			for {
				page, err := scanPage(sctx, st, sc)
				select {
				case out <- result{page, err}:
				case <-stop:
					return
				}
				if err != nil || page.Next == nil {
					return
				}
				sc.After = page.Next
			}
		}(i, segs[i])
	}
	// cancel (run before wg.Wait) ends the pages still being read when
	// fn or a page fails.
	defer cancel()
	pages := 0
	for _, seg := range segs {
		for r := range seg {
			if r.err != nil {
				// A page's attempt may end at the bound a moment
				// before the scan's own timer fires: the clock says
				// whether the bound was reached.
				if ctx.Err() == nil && !time.Now().Before(deadline) {
					return fmt.Errorf("%w: %d pages read in %v", ErrScanTooLong, pages, bound)
				}
				return r.err
			}
			pages++
			for _, it := range r.page.Items {
				if err := fn(it); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
