package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// DefaultRetryBudget is how long an optimistic unit of work (a
// read-then-write conditioned on what was read, a MULTI/EXEC run) keeps
// re-running after losing races before it gives up. It is a time, not a
// count of attempts: a hot key (a queue many consumers pop, a counter many
// clients bump) sees many short-lived conflicts, and a writer that only
// had to wait its turn should get it. Each instance lets one of its own
// writers of a key contend at a time (the per-process key locks), so the
// contenders of a key are about as many as the instances.
const DefaultRetryBudget = 10 * time.Second

// maxBackoff caps the pause between two attempts.
const maxBackoff = 64 * time.Millisecond

// retryBudget is DefaultRetryBudget unless a test shortened it.
var retryBudget atomic.Int64

func init() { retryBudget.Store(int64(DefaultRetryBudget)) }

// SetRetryBudget changes the retry budget of the whole process and returns
// the previous one (tests use it to reach the give-up quickly).
func SetRetryBudget(d time.Duration) time.Duration {
	return time.Duration(retryBudget.Swap(int64(d)))
}

// ErrGaveUp ends an optimistic unit that kept losing races for the whole
// retry budget. It wraps dynastore.ErrTxConflict, so it maps to the same
// reply as a conflict the store reported.
var ErrGaveUp = fmt.Errorf("model: gave up after conflicting attempts: %w", dynastore.ErrTxConflict)

// ErrConflict is a commit that lost a race to another writer: the unit of
// work runs again from the start (Retry says whether and when).
var ErrConflict = errors.New("model: conflicting write")

// Retry is the one retry policy of every optimistic unit of work. Its zero
// value is ready; one Retry serves one unit of work.
type Retry struct {
	lost  int
	start time.Time
}

// Lost is called each time the unit's attempt lost a race to another
// writer. The first lost race is retried at once (it is often a stale
// cache entry); after that Lost waits a short random time, growing with
// the attempts up to maxBackoff, so that contenders spread out instead of
// colliding again. It returns ErrGaveUp once the unit has been losing for
// the retry budget, and the context's error, wrapped, when ctx ends while
// it waits.
func (r *Retry) Lost(ctx context.Context) error {
	r.lost++
	if r.lost == 1 {
		r.start = time.Now()
		return nil
	}
	if time.Since(r.start) >= time.Duration(retryBudget.Load()) {
		return ErrGaveUp
	}
	ceil := min(time.Millisecond<<min(r.lost, 20)/2, maxBackoff)
	t := time.NewTimer(rand.N(ceil) + time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("model: %w", ctx.Err())
	}
}

// Retryable reports whether err is a lost race a unit of work may re-run
// after: a commit conflict of a Txn, or a transaction conflict the store
// reported (DynamoDB's TransactionConflict).
func Retryable(err error) bool {
	if errors.Is(err, dynastore.ErrOutcomeUnknown) {
		return false // running it again could apply it twice
	}
	return errors.Is(err, ErrConflict) || (errors.Is(err, dynastore.ErrTxConflict) && !errors.Is(err, ErrGaveUp))
}
