package faithful

import (
	"context"
	"time"

	"github.com/redamo/redamo/dynastore/retry"
)

// DefaultPolicy is the DynamoDB backend's default retry policy: the
// faithful store's simulated attempts are retried exactly as real ones.
// Its Quota is left nil: New gives each store a bucket of its own, as
// each server process has one (tests run many stores in one process).
var DefaultPolicy = retry.DefaultPolicy

// fault builds an attempt's failure for the retry policy: what the
// simulation knows of whether it was applied, and the sentinel it
// becomes when retries run out.
func failure(err error, class retry.Class, kind error) *retry.Failure {
	return &retry.Failure{Err: err, Class: class, Kind: kind}
}

// sleep waits d, or until ctx is done (its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
