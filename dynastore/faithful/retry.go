package faithful

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// class is how one failed attempt is treated by the retry policy.
type class uint8

const (
	classFinal     class = iota // the answer: not retried
	classUnapplied              // transient, and certainly not applied
	classUnknown                // transient, and it may have been applied
)

// attemptError is one simulated attempt's failure, which knows, as the
// DynamoDB backend's classification does from the wire, whether it was
// applied.
type attemptError struct {
	err   error
	class class
	// kind is the sentinel it becomes when retries run out.
	kind error
	// progress: the attempt did useful work (part of a batch), so the
	// next one follows at once.
	progress bool
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// mode says which failures a request may be retried after.
type mode uint8

const (
	// retrySafe: reads, and transactions (idempotent by their token).
	retrySafe mode = iota
	// retryUnapplied: single-item writes, retried only after a failure
	// that proves they were not applied.
	retryUnapplied
)

// Policy bounds a request's attempts, as the DynamoDB backend's does.
type Policy struct {
	MaxAttempts    int
	AttemptTimeout time.Duration
	Budget         time.Duration
	Base, Cap      time.Duration
}

// DefaultPolicy is the DynamoDB backend's default policy.
var DefaultPolicy = Policy{
	MaxAttempts:    6,
	AttemptTimeout: 2 * time.Second,
	Budget:         3 * time.Second,
	Base:           10 * time.Millisecond,
	Cap:            200 * time.Millisecond,
}

func (p Policy) backoff(n int) time.Duration {
	d := p.Base << min(n-1, 16)
	if d > p.Cap || d <= 0 {
		d = p.Cap
	}
	half := d / 2
	return half + rand.N(half+1)
}

// run calls fn until it succeeds, fails for good or the policy's limits
// are reached; it returns the attempts made.
func (p Policy) run(ctx context.Context, op string, m mode, fn func(actx context.Context) error) (int, error) {
	deadline := time.Now().Add(p.Budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	attempts, failures := 0, 0
	for {
		attempts++
		ad := time.Now().Add(p.AttemptTimeout)
		if ad.After(deadline) {
			ad = deadline
		}
		actx, cancel := context.WithDeadline(ctx, ad)
		err := fn(actx)
		cancel()
		if err == nil {
			return attempts, nil
		}
		if ctx.Err() != nil {
			return attempts, fmt.Errorf("%w: %s: %w", dynastore.ErrUnavailable, op, ctx.Err())
		}
		var f *attemptError
		if !errors.As(err, &f) {
			return attempts, err
		}
		switch {
		case f.class == classFinal:
			return attempts, f.err
		case f.class == classUnknown && m == retryUnapplied:
			return attempts, exhausted(f, attempts, true)
		case f.progress:
			if time.Now().Before(deadline) {
				continue
			}
			return attempts, exhausted(f, attempts, false)
		}
		failures++
		if failures >= p.MaxAttempts {
			return attempts, exhausted(f, attempts, false)
		}
		wait := p.backoff(failures)
		if time.Now().Add(wait).After(deadline) {
			return attempts, exhausted(f, attempts, false)
		}
		if err := sleep(ctx, wait); err != nil {
			return attempts, fmt.Errorf("%w: %s: %w", dynastore.ErrUnavailable, op, ctx.Err())
		}
	}
}

// exhausted is the error once retries ran out, or after a failure that
// may have been applied and is not retried.
func exhausted(f *attemptError, attempts int, unknownOutcome bool) error {
	what := fmt.Sprintf("after %d attempts", attempts)
	if unknownOutcome {
		what += "; the write may or may not have been applied"
	}
	var tx *dynastore.TxCanceledError
	if errors.As(f.err, &tx) {
		if f.kind == dynastore.ErrTxConflict {
			return fmt.Errorf("%w (%s)", tx, what)
		}
		return fmt.Errorf("%w: %w (%s)", f.kind, tx, what)
	}
	return fmt.Errorf("%w: %s (%s)", f.kind, f.err, what)
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
