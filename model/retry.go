package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// MaxAttempts bounds every optimistic unit of work (a read-then-write
// conditioned on what was read, a MULTI/EXEC run): past it the unit gives
// up with ErrGaveUp rather than spinning under heavy contention.
const MaxAttempts = 16

// ErrGaveUp ends an optimistic unit that kept losing races. It wraps
// dynastore.ErrTxConflict, so it maps to the same reply as a conflict the
// store reported.
var ErrGaveUp = fmt.Errorf("model: gave up after %d conflicting attempts: %w", MaxAttempts, dynastore.ErrTxConflict)

// ErrConflict is a commit that lost a race to another writer: the unit of
// work is run again from the start (LostRace says whether and when).
var ErrConflict = errors.New("model: conflicting write")

// LostRace is the one retry policy: it is called when attempt (1-based)
// lost a race to another writer and returns ErrGaveUp once the attempts
// are used up; otherwise, from the third attempt on, it waits a short
// random time (up to 2^attempt ms, capped at 64) so that contenders spread
// out instead of colliding again. It returns the context's error, wrapped,
// when ctx ends while it waits.
func LostRace(ctx context.Context, attempt int) error {
	if attempt >= MaxAttempts {
		return ErrGaveUp
	}
	if attempt < 2 {
		return nil
	}
	t := time.NewTimer(time.Duration(rand.IntN(1<<min(attempt, 6))) * time.Millisecond)
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
	return errors.Is(err, ErrConflict) || (errors.Is(err, dynastore.ErrTxConflict) && !errors.Is(err, ErrGaveUp))
}
