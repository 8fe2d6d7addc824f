package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/redamo/redamo/dynastore"
)

// The SDK's own retryer is off (it waits up to seconds and keeps a client-side
// retry quota); this file retries instead, with short jittered backoff, a
// timeout per attempt and a total budget, and knows which failures may have
// been applied.

// retryMode says which failures a request may be retried after.
type retryMode uint8

const (
	// retrySafe requests have no side effect (reads) or are made idempotent
	// (TransactWriteItems with a ClientRequestToken): any transient failure
	// is retried.
	retrySafe retryMode = iota
	// retryUnapplied requests (single-item writes) are retried only after a
	// failure that proves they were not applied: throttling, 503, a
	// connection that never carried the request. After a timeout or a 500
	// the write may have happened; repeating it could apply an ADD twice or
	// turn our own success into a condition failure, so the outcome is
	// reported as unknown (ErrUnavailable) instead.
	retryUnapplied
)

// class is how one failed attempt is treated.
type class uint8

const (
	classFinal     class = iota // not retried: the answer (condition failed, validation, ...)
	classUnapplied              // transient, and certainly not applied
	classUnknown                // transient, but it may have been applied
)

// failure is one attempt's error, classified.
type failure struct {
	err   error
	class class
	// kind is the sentinel it becomes when retries run out.
	kind error
}

var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
	"TooManyRequestsException":               true,
}

// classify sorts one attempt's error. attemptCtx is the attempt's context,
// wrote whether the whole request was written to a connection.
//
// Both paths report errors in the SDK's shapes: an error response is a
// smithy.APIError (the SDK's types, or the direct path's apiError) inside a
// smithyhttp.ResponseError that carries the status.
func classify(err error, attemptCtx context.Context, wrote bool) failure {
	var (
		api smithy.APIError
		re  *smithyhttp.ResponseError
	)
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode() // 0 when no response arrived
	}
	unknown := classUnknown
	if !wrote {
		unknown = classUnapplied
	}
	isAPI := errors.As(err, &api)
	switch {
	case isAPI && (api.ErrorCode() == codeConditionFailed || api.ErrorCode() == codeTxCanceled):
		// Transactions sort their cancellations themselves (txCanceled).
		return failure{err: err, class: classFinal}
	case isAPI:
		// A whole error response was read: its code says what happened.
		switch {
		case throttleCodes[api.ErrorCode()]:
			return failure{err: err, class: classUnapplied, kind: dynastore.ErrThrottled}
		case api.ErrorCode() == "TransactionConflictException":
			// A single-item write hit an item a transaction is writing.
			return failure{err: err, class: classUnapplied, kind: dynastore.ErrTxConflict}
		case api.ErrorCode() == "TransactionInProgressException":
			// The same ClientRequestToken is still being processed: ask again.
			return failure{err: err, class: classUnapplied, kind: dynastore.ErrUnavailable}
		case status == 503:
			return failure{err: err, class: classUnapplied, kind: dynastore.ErrUnavailable}
		case status >= 500:
			return failure{err: err, class: classUnknown, kind: dynastore.ErrUnavailable}
		}
		return failure{err: err, class: classFinal}
	case attemptCtx.Err() != nil:
		// The attempt timed out, possibly while reading a response (the SDK
		// then reports the response's status with a read error).
		return failure{err: err, class: unknown, kind: dynastore.ErrUnavailable}
	case status == 503:
		return failure{err: err, class: classUnapplied, kind: dynastore.ErrUnavailable}
	case status >= 500:
		return failure{err: err, class: classUnknown, kind: dynastore.ErrUnavailable}
	case status >= 200 && status < 300:
		// A success whose body could not be read: a write happened, but
		// what it returned is lost.
		return failure{err: err, class: classUnknown, kind: dynastore.ErrUnavailable}
	case status != 0:
		return failure{err: err, class: classFinal}
	}
	// No response: the connection failed.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return failure{err: err, class: classUnapplied, kind: dynastore.ErrUnavailable}
	}
	if isNetErr(err) {
		return failure{err: err, class: unknown, kind: dynastore.ErrUnavailable}
	}
	return failure{err: err, class: classFinal}
}

func isNetErr(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var rse *smithyhttp.RequestSendError
	return errors.As(err, &rse) || errors.Is(err, context.DeadlineExceeded)
}

// errorDetail is the short form of an SDK error for messages: the API error
// code and message when there is one, without request ids.
func errorDetail(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if m := api.ErrorMessage(); m != "" {
			return api.ErrorCode() + ": " + m
		}
		return api.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d", re.HTTPStatusCode())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "request timed out"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return err.Error()
}

// mapFinal turns a non-retried SDK error into the store's error.
func mapFinal(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		msg := api.ErrorMessage()
		switch api.ErrorCode() {
		case "ValidationException":
			return fmt.Errorf("%w: %s", validationKind(msg), msg)
		case "ItemCollectionSizeLimitExceededException":
			return fmt.Errorf("%w: %s", dynastore.ErrItemTooLarge, msg)
		case "IdempotentParameterMismatchException", "SerializationException":
			return fmt.Errorf("%w: %s", dynastore.ErrInvalid, msg)
		}
	}
	var inv smithy.InvalidParamsError
	if errors.As(err, &inv) {
		return fmt.Errorf("%w: %s", dynastore.ErrInvalid, inv.Error())
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}

// validationKind sorts ValidationException messages by what they mean; the
// substrings cover both DynamoDB's and DynamoDB Local's wording.
func validationKind(msg string) error {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "item size") && strings.Contains(m, "exceeded"):
		return dynastore.ErrItemTooLarge
	case strings.Contains(m, "transaction payload size"),
		strings.Contains(m, "transaction request cannot be larger"),
		strings.Contains(m, "member must have length less than or equal to 100"):
		return dynastore.ErrTxTooLarge
	case strings.Contains(m, "primary key values must be under"),
		strings.Contains(m, "size of hashkey has exceeded"),
		strings.Contains(m, "range key") && strings.Contains(m, "exceeded"),
		strings.Contains(m, "key attribute cannot contain an empty"):
		return dynastore.ErrKeyTooLarge
	}
	return dynastore.ErrInvalid
}

// exhausted is the error after retries ran out (or a failure that may have
// been applied was not retried).
func exhausted(f failure, attempts int, unknownOutcome bool) error {
	kind := f.kind
	if kind == nil {
		kind = dynastore.ErrUnavailable
	}
	what := fmt.Sprintf("after %d attempts", attempts)
	if attempts == 1 {
		what = "after 1 attempt"
	}
	if unknownOutcome {
		what += "; the write may or may not have been applied"
	}
	var tx *dynastore.TxCanceledError
	if errors.As(f.err, &tx) {
		// Keep the per-action reasons; a conflict is already ErrTxConflict.
		if kind == dynastore.ErrTxConflict {
			return fmt.Errorf("%w (%s)", tx, what)
		}
		return fmt.Errorf("%w: %w (%s)", kind, tx, what)
	}
	return fmt.Errorf("%w: %s (%s)", kind, errorDetail(f.err), what)
}

// retryPolicy bounds a request's attempts.
type retryPolicy struct {
	maxAttempts    int
	attemptTimeout time.Duration
	budget         time.Duration
	base, cap      time.Duration
}

// backoff is the wait before retry n (1-based): exponential from base,
// capped, with "equal jitter" so that concurrent retries spread out but
// never wait less than half the step.
func (p retryPolicy) backoff(n int) time.Duration {
	d := p.base << min(n-1, 16)
	if d > p.cap || d <= 0 {
		d = p.cap
	}
	half := d / 2
	return half + rand.N(half+1)
}

// errRetry is returned by an attempt function to ask for another attempt
// without an SDK error: BatchGetItem's unprocessed keys, a transaction
// canceled only by conflicts. progress says the attempt did useful work, so
// the retry is immediate and does not count against the attempt limit.
type errRetry struct {
	cause    error
	kind     error
	progress bool
}

func (e *errRetry) Error() string { return e.cause.Error() }
func (e *errRetry) Unwrap() error { return e.cause }

// run calls fn until it succeeds, fails for good, or the policy's limits are
// reached, and returns the number of attempts made. A final failure is
// returned as fn returned it (the caller maps it: mapFinal); when retries
// run out the error wraps the failure's sentinel (ErrThrottled,
// ErrUnavailable, ...). fn receives a context bounded by the per-attempt
// timeout.
func (p retryPolicy) run(ctx context.Context, op string, mode retryMode, fn func(ctx context.Context) error) (int, error) {
	deadline := time.Now().Add(p.budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	attempts, failures := 0, 0
	for {
		attempts++
		var wrote atomic.Bool
		ad := time.Now().Add(p.attemptTimeout)
		if ad.After(deadline) {
			ad = deadline
		}
		// The attempt's context is not a child of ctx: its deadline timer
		// may fire after run returned, and must not reach back into ctx,
		// which a caller may reuse (a command's context). ctx's
		// cancellation still reaches it through AfterFunc, whose
		// registration stop removes before run goes on.
		actx, cancel := context.WithDeadline(context.WithoutCancel(ctx), ad)
		stop := context.AfterFunc(ctx, cancel)
		// Once the whole request is written the server may act on it; a
		// failure before that proves it was not applied.
		actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(true)
				}
			},
		})
		err := fn(actx)
		f := failure{}
		if err != nil {
			var rt *errRetry
			if errors.As(err, &rt) {
				f = failure{err: rt.cause, class: classUnapplied, kind: rt.kind}
			} else {
				f = classify(err, actx, wrote.Load())
			}
		}
		stop()
		cancel()
		if err == nil {
			return attempts, nil
		}
		if ctx.Err() != nil {
			// The caller gave up (client gone, server shutting down).
			return attempts, fmt.Errorf("%w: %s: %w", dynastore.ErrUnavailable, op, ctx.Err())
		}
		switch {
		case f.class == classFinal:
			return attempts, f.err
		case f.class == classUnknown && mode == retryUnapplied:
			return attempts, exhausted(f, attempts, true)
		}
		var rt *errRetry
		if errors.As(err, &rt) && rt.progress {
			if time.Now().Before(deadline) {
				continue
			}
			return attempts, exhausted(f, attempts, false)
		}
		failures++
		if failures >= p.maxAttempts {
			return attempts, exhausted(f, attempts, false)
		}
		wait := p.backoff(failures)
		if time.Now().Add(wait).After(deadline) {
			return attempts, exhausted(f, attempts, false)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return attempts, fmt.Errorf("%w: %s: %w", dynastore.ErrUnavailable, op, ctx.Err())
		}
	}
}
