// Package retry is the one retry policy of redamo's stores: bounded attempts,
// a timeout per attempt, a total budget, jittered exponential backoff, and
// the distinction between a failure that certainly was not applied and one
// that may have been.
//
// The runner knows nothing about HTTP or DynamoDB: an attempt function
// returns a *Failure to say how its error is to be treated (a backend
// classifies its own errors: dynastore/dynamo sorts status codes and API
// error codes; a simulated backend knows what it simulated). Any other error
// is final: returned to the caller as it is.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Mode says which failures a request may be retried after.
type Mode uint8

const (
	// Read requests have no side effect: any transient failure is
	// retried, and an unknown outcome means nothing.
	Read Mode = iota
	// Idempotent writes (TransactWriteItems with a ClientRequestToken)
	// are retried after any transient failure: a repeat is applied at
	// most once. When the retries run out after an attempt that may have
	// been applied, the outcome is unknown (dynastore.ErrOutcomeUnknown).
	Idempotent
	// Once requests (single-item writes) are retried only after a failure
	// that proves they were not applied: throttling, 503, a connection that
	// never carried the request. After a timeout or a 500 the write may
	// have happened; repeating it could apply an ADD twice or turn our own
	// success into a condition failure, so the outcome is reported as
	// unknown instead.
	Once
)

// Class is how one failed attempt is treated.
type Class uint8

const (
	// Final failures are not retried: they are the answer (a condition
	// failed, a validation error, ...).
	Final Class = iota
	// Unapplied failures are transient and certainly had no effect.
	Unapplied
	// Unknown failures are transient, but the request may have been applied.
	Unknown
)

// Failure is one attempt's error, classified. An attempt function returns a
// *Failure for any error that is not final.
type Failure struct {
	Err   error
	Class Class
	// Kind is the sentinel the request's error wraps when retries run out
	// (dynastore.ErrThrottled, dynastore.ErrUnavailable, ...); nil:
	// dynastore.ErrUnavailable.
	Kind error
	// Progress says the attempt did useful work even though it asks for
	// another (a batch that returned part of its keys): the next attempt
	// does not count against Policy.MaxAttempts nor draw from the quota,
	// but it still waits its backoff (AWS advises backoff before asking
	// for a batch's unprocessed keys again).
	Progress bool
	// Settles says the answer proves that no earlier attempt was applied
	// (a transaction canceled under the ClientRequestToken of the attempts
	// before it: had one of them been applied, DynamoDB would have
	// answered success), so an earlier unknown outcome is resolved.
	Settles bool
	// Timeout says the attempt timed out or lost its connection: a retry
	// after it costs the quota TimeoutRetryCost instead of RetryCost.
	Timeout bool
	// MinRetry keeps the request retrying until this long after its first
	// attempt, past MaxAttempts and the budget (not past the caller's
	// deadline): DynamoDB's TransactionInProgressException asks for a
	// retry at least 5 s after the first attempt, which is what completes
	// the transaction in progress.
	MinRetry time.Duration
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Policy bounds a request's attempts. The zero value makes one attempt with
// no timeout of its own.
type Policy struct {
	// MaxAttempts is the most attempts that did no progress (at least 1).
	MaxAttempts int
	// AttemptTimeout bounds each attempt (0: only the budget does).
	AttemptTimeout time.Duration
	// Budget bounds the whole request, attempts and waits (0: only the
	// caller's context does).
	Budget time.Duration
	// Base and Cap shape the backoff: the wait before retry n is about
	// Base*2^(n-1), at most Cap.
	Base, Cap time.Duration
	// ThrottleBase and ThrottleCap shape the backoff after a throttled
	// attempt (Kind dynastore.ErrThrottled), which needs longer waits:
	// the table sheds load until its partitions split or its capacity
	// grows. Zero: Base and Cap.
	ThrottleBase, ThrottleCap time.Duration
	// Quota is the retry quota retries draw from (nil: none); retries
	// after a conflict (Kind dynastore.ErrTxConflict) draw nothing.
	Quota *Quota
	// Describe renders a failure's error in the message of a request whose
	// retries ran out (nil: its Error()).
	Describe func(error) string
}

// The defaults of both stores' policies (DefaultPolicy).
const (
	DefaultMaxAttempts    = 6
	DefaultAttemptTimeout = 2 * time.Second
	DefaultBudget         = 3 * time.Second
	DefaultBase           = 10 * time.Millisecond
	DefaultCap            = 200 * time.Millisecond
	// A throttled request waits longer: 50-100 ms, then doubling up to
	// 0.5-1 s, so that the default attempts span about 1.3-2.6 s of a
	// throttled table's recovery within the budget. (AWS's SDKs wait
	// longer still, from 500 ms per 4xx retry in the Java SDK's default
	// policy, but a Redis client waits on the reply.)
	DefaultThrottleBase = 100 * time.Millisecond
	DefaultThrottleCap  = time.Second
)

// DefaultPolicy is the policy of the DynamoDB backend and of the embedded
// store's AWS-faithful mode unless configured otherwise; its Quota is left
// to the store.
var DefaultPolicy = Policy{
	MaxAttempts:    DefaultMaxAttempts,
	AttemptTimeout: DefaultAttemptTimeout,
	Budget:         DefaultBudget,
	Base:           DefaultBase,
	Cap:            DefaultCap,
	ThrottleBase:   DefaultThrottleBase,
	ThrottleCap:    DefaultThrottleCap,
}

// Backoff is the wait before retry n (1-based): exponential from Base,
// capped at Cap, with "equal jitter" so that concurrent retries spread out
// but never wait less than half the step.
func (p Policy) Backoff(n int) time.Duration {
	return backoff(p.Base, p.Cap, n)
}

// backoffAfter is the wait before retry n after failure f.
func (p Policy) backoffAfter(f *Failure, n int) time.Duration {
	if errors.Is(f.Kind, dynastore.ErrThrottled) && p.ThrottleCap > 0 {
		return backoff(p.ThrottleBase, p.ThrottleCap, n)
	}
	return p.Backoff(n)
}

func backoff(base, ceil time.Duration, n int) time.Duration {
	d := base << min(n-1, 16)
	if d > ceil || d <= 0 {
		d = ceil
	}
	half := d / 2
	return half + rand.N(half+1)
}

type slackKey struct{}

// WithSlack gives the requests made under ctx d more time, in each attempt
// and in all: a request that carries megabytes (a big value's chunks)
// needs longer than one of a few KB, which the policy's limits are cut
// for.
func WithSlack(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, slackKey{}, d)
}

// Run calls fn until it succeeds, fails for good, or the policy's limits are
// reached, and returns the number of attempts made. A final failure is
// returned as fn returned it (a *Failure of class Final is unwrapped); when
// retries run out the error wraps the failure's Kind. fn receives a context
// bounded by the attempt timeout and the budget; op names the request in
// errors.
func (p Policy) Run(ctx context.Context, op string, mode Mode, fn func(ctx context.Context) error) (int, error) {
	start := time.Now()
	if slack, ok := ctx.Value(slackKey{}).(time.Duration); ok {
		if p.Budget > 0 {
			p.Budget += slack
		}
		if p.AttemptTimeout > 0 {
			p.AttemptTimeout += slack
		}
	}
	deadline := time.Time{}
	if p.Budget > 0 {
		deadline = start.Add(p.Budget)
	}
	ctxDeadline, hasCtxDeadline := ctx.Deadline()
	if hasCtxDeadline && (deadline.IsZero() || ctxDeadline.Before(deadline)) {
		deadline = ctxDeadline
	}
	attempts, failures, progressed := 0, 0, 0
	// cost is what the last retry drew from the quota.
	cost := 0
	// maybe: an attempt of this write may have been applied, and no later
	// answer proved otherwise.
	maybe := false
	gaveUp := func() error {
		err := fmt.Errorf("%w: %s: %w", dynastore.ErrUnavailable, op, ctx.Err())
		if maybe {
			err = fmt.Errorf("%w: %w", dynastore.ErrOutcomeUnknown, err)
		}
		return err
	}
	for {
		attempts++
		began := time.Now()
		err := p.attempt(ctx, deadline, fn)
		if err == nil {
			if p.Quota != nil {
				p.Quota.put(max(cost, SuccessRefill))
			}
			return attempts, nil
		}
		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{Err: err, Class: Final}
		}
		switch {
		case f.Settles:
			maybe = false
		case f.Class == Unknown && mode != Read:
			maybe = true
		}
		if ctx.Err() != nil {
			// The caller gave up (client gone, server shutting down).
			return attempts, gaveUp()
		}
		switch {
		case f.Class == Final:
			return attempts, f.Err
		case maybe && mode == Once:
			return attempts, p.exhausted(f, attempts, true)
		}
		limit := deadline
		var wait time.Duration
		if f.Progress {
			// Part of the work was done: the attempt does not count,
			// but the rest waits, as AWS advises for a batch's
			// unprocessed keys, and draws nothing from the quota.
			progressed++
			wait = p.backoffAfter(f, progressed)
		} else {
			progressed = 0
			failures++
			pending := f.MinRetry > 0 && began.Sub(start) < f.MinRetry
			if pending && !limit.IsZero() {
				limit = later(limit, start.Add(f.MinRetry+p.AttemptTimeout))
				if hasCtxDeadline && ctxDeadline.Before(limit) {
					limit = ctxDeadline
				}
			}
			if failures >= max(p.MaxAttempts, 1) && !pending {
				return attempts, p.exhausted(f, attempts, maybe)
			}
			wait = p.backoffAfter(f, failures)
			if pending {
				// The retry that completes the transaction comes once
				// MinRetry has passed, not long after.
				wait = min(wait, max(start.Add(f.MinRetry).Sub(time.Now()), 0)+p.Base)
			}
		}
		if !limit.IsZero() && time.Now().Add(wait).After(limit) {
			return attempts, p.exhausted(f, attempts, maybe)
		}
		cost = 0
		// A conflict is no sign of an overloaded service (another
		// writer won), and a batch that made progress is being served:
		// neither draws from the quota.
		if !f.Progress && p.Quota != nil && !errors.Is(f.Kind, dynastore.ErrTxConflict) {
			cost = RetryCost
			if f.Timeout {
				cost = TimeoutRetryCost
			}
			if !p.Quota.take(cost) {
				err := p.exhausted(f, attempts, maybe)
				return attempts, fmt.Errorf("%w; retry quota exhausted", err)
			}
		}
		deadline = later(deadline, limit)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return attempts, gaveUp()
		}
	}
}

// later is the later of two deadlines, zero meaning none.
func later(a, b time.Time) time.Time {
	if a.IsZero() || b.IsZero() {
		return time.Time{}
	}
	if b.After(a) {
		return b
	}
	return a
}

// attempt makes one call of fn under the attempt's deadline.
func (p Policy) attempt(ctx context.Context, deadline time.Time, fn func(ctx context.Context) error) error {
	ad := deadline
	if p.AttemptTimeout > 0 {
		if t := time.Now().Add(p.AttemptTimeout); ad.IsZero() || t.Before(ad) {
			ad = t
		}
	}
	if ad.IsZero() {
		return fn(ctx)
	}
	// The attempt's context is not a child of ctx: its deadline timer may
	// fire after Run returned, and must not reach back into ctx, which a
	// caller may reuse (a command's context). ctx's cancellation still
	// reaches it through AfterFunc, whose registration stop removes before
	// Run goes on.
	actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), ad)
	stop := context.AfterFunc(ctx, cancel)
	defer cancel()
	defer stop()
	return fn(actx)
}

// exhausted is the error after retries ran out (or a failure that may have
// been applied was not retried).
func (p Policy) exhausted(f *Failure, attempts int, unknownOutcome bool) error {
	kind := f.Kind
	if kind == nil {
		kind = dynastore.ErrUnavailable
	}
	what := fmt.Sprintf("after %d attempts", attempts)
	if attempts == 1 {
		what = "after 1 attempt"
	}
	if unknownOutcome {
		what += "; the write may or may not have been applied"
		kind = fmt.Errorf("%w: %w", dynastore.ErrOutcomeUnknown, kind)
	}
	var tx *dynastore.TxCanceledError
	if errors.As(f.Err, &tx) {
		// A conflict keeps its per-action reasons (it is ErrTxConflict).
		// Any other kind names them only in its text: a throttled
		// transaction must not be matchable as a cancellation, which
		// callers read as a failed condition or a lost race.
		if kind == dynastore.ErrTxConflict {
			return fmt.Errorf("%w (%s)", tx, what)
		}
		return fmt.Errorf("%w: %s (%s)", kind, tx.Error(), what)
	}
	detail := f.Err.Error()
	if p.Describe != nil {
		detail = p.Describe(f.Err)
	}
	return fmt.Errorf("%w: %s (%s)", kind, detail, what)
}
