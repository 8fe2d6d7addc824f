package retry

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// callerCtx counts the calls to its Done made by timer goroutines: a
// timer fires whenever it fires, possibly after the call it was set for
// returned, and a caller may reuse its context by then (a command's
// context serves the connection's next command, or is zeroed: a timer
// that reached back into one crashed a loaded server).
type callerCtx struct {
	context.Context
	fromTimers atomic.Int32
}

func (c *callerCtx) Done() <-chan struct{} {
	buf := make([]byte, 8<<10)
	if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "time.goFunc") {
		c.fromTimers.Add(1)
	}
	return c.Context.Done()
}

// TestRetryAttemptsLeaveTheCallersContext runs a request whose attempts
// all time out and checks that their deadline timers never touch the
// caller's context, while cancelling it still ends an attempt.
func TestRetryAttemptsLeaveTheCallersContext(t *testing.T) {
	p := Policy{MaxAttempts: 3, AttemptTimeout: time.Millisecond, Budget: 10 * time.Second, Base: time.Microsecond, Cap: time.Microsecond}
	outlive := func(actx context.Context) error {
		<-actx.Done() // a request that outlives its attempt
		return &Failure{Err: actx.Err(), Class: Unapplied}
	}
	ctx := &callerCtx{Context: context.Background()}
	attempts, err := p.Run(ctx, "GetItem", Read, outlive)
	require.Error(t, err)
	require.Equal(t, 3, attempts)
	time.Sleep(10 * time.Millisecond) // every timer has fired
	require.Zero(t, ctx.fromTimers.Load(), "calls of the caller's Done from attempt timers")

	p.AttemptTimeout, p.Budget = time.Minute, time.Minute
	parent, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	_, err = p.Run(parent, "GetItem", Read, outlive)
	require.ErrorIs(t, err, context.Canceled, "the caller's cancellation reaches the attempt")
}

// TestOutcome follows what a request's attempts tell about whether it was
// applied: a write whose retries run out after an attempt that may have
// been applied is ErrOutcomeUnknown, unless a later answer proved that
// none was (Settles); a read never is; a single-item write (Once) stops at
// the first unknown attempt.
func TestOutcome(t *testing.T) {
	unknown := &Failure{Err: errors.New("500"), Class: Unknown, Kind: dynastore.ErrUnavailable}
	throttled := &Failure{Err: errors.New("throttled"), Class: Unapplied, Kind: dynastore.ErrThrottled}
	settled := &Failure{Err: errors.New("canceled"), Class: Unapplied, Kind: dynastore.ErrTxConflict, Settles: true}
	cases := []struct {
		name     string
		mode     Mode
		attempts []error
		calls    int
		unknown  bool
		kind     error
	}{
		{"read", Read, []error{unknown, unknown, unknown}, 3, false, dynastore.ErrUnavailable},
		{"idempotent write, unknown then throttled", Idempotent, []error{unknown, throttled, throttled}, 3, true, dynastore.ErrThrottled},
		{"idempotent write, settled after unknown", Idempotent, []error{unknown, settled, throttled}, 3, false, dynastore.ErrThrottled},
		{"idempotent write, never unknown", Idempotent, []error{throttled, throttled, throttled}, 3, false, dynastore.ErrThrottled},
		{"once, unknown first", Once, []error{unknown, throttled, throttled}, 1, true, dynastore.ErrUnavailable},
		{"once, throttled", Once, []error{throttled, throttled, throttled}, 3, false, dynastore.ErrThrottled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{MaxAttempts: len(tc.attempts), Base: time.Microsecond, Cap: time.Microsecond}
			n := 0
			calls, err := p.Run(context.Background(), "op", tc.mode, func(context.Context) error {
				n++
				return tc.attempts[n-1]
			})
			require.Equal(t, tc.calls, calls)
			require.ErrorIs(t, err, tc.kind)
			require.Equal(t, tc.unknown, errors.Is(err, dynastore.ErrOutcomeUnknown), "%v", err)
		})
	}
}

// TestWaits checks which failures wait before their retry without
// measuring a wait: the backoff is an hour and the budget a minute, so a
// failure that waits ends the request after one attempt, and one retried
// at once makes every attempt. Throttling waits (ThrottleBase) where other
// failures do not (Base), and a batch's unprocessed keys wait even when
// the attempt made progress, as AWS advises for BatchGetItem.
func TestWaits(t *testing.T) {
	throttled := &Failure{Err: errors.New("throttled"), Class: Unapplied, Kind: dynastore.ErrThrottled}
	unavailable := &Failure{Err: errors.New("503"), Class: Unapplied, Kind: dynastore.ErrUnavailable}
	progress := &Failure{Err: errors.New("unprocessed keys"), Class: Unapplied, Kind: dynastore.ErrThrottled, Progress: true}
	cases := []struct {
		name    string
		failure *Failure
		calls   int
	}{
		{"throttled waits", throttled, 1},
		{"unavailable is retried at once", unavailable, 4},
		{"progress waits", progress, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{MaxAttempts: 4, Budget: time.Minute, Base: time.Nanosecond, Cap: time.Nanosecond,
				ThrottleBase: time.Hour, ThrottleCap: time.Hour}
			calls, err := p.Run(context.Background(), "op", Read, func(context.Context) error { return tc.failure })
			require.Error(t, err)
			require.Equal(t, tc.calls, calls)
		})
	}
}

// TestQuota: retries draw RetryCost (TimeoutRetryCost after a timeout)
// from the quota; an empty quota ends the request at once; a success
// returns SuccessRefill, or what its own retry cost.
func TestQuota(t *testing.T) {
	q := NewQuota(RetryCost + TimeoutRetryCost)
	p := Policy{MaxAttempts: 10, Base: time.Nanosecond, Cap: time.Nanosecond, Quota: q}
	timeout := &Failure{Err: errors.New("timeout"), Class: Unapplied, Timeout: true}
	plain := &Failure{Err: errors.New("503"), Class: Unapplied}
	seq := []error{timeout, plain, plain}
	n := 0
	calls, err := p.Run(context.Background(), "op", Read, func(context.Context) error { n++; return seq[n-1] })
	require.ErrorContains(t, err, "retry quota exhausted")
	require.Equal(t, 3, calls)
	require.Zero(t, q.Available())
	require.Equal(t, int64(1), q.Refusals())

	_, err = p.Run(context.Background(), "op", Read, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.Equal(t, SuccessRefill, q.Available())
}

// TestQuotaSparesConflicts: a transaction conflict says another writer
// won, not that the service is overloaded: its retries draw nothing.
func TestQuotaSparesConflicts(t *testing.T) {
	q := NewQuota(0)
	p := Policy{MaxAttempts: 3, Base: time.Nanosecond, Cap: time.Nanosecond, Quota: q}
	conflict := &Failure{Err: errors.New("conflict"), Class: Unapplied, Kind: dynastore.ErrTxConflict}
	calls, err := p.Run(context.Background(), "op", Idempotent, func(context.Context) error { return conflict })
	require.ErrorIs(t, err, dynastore.ErrTxConflict)
	require.Equal(t, 3, calls)
	require.Zero(t, q.Refusals())
}

// TestWithSlack: a request under WithSlack has its slack more in each
// attempt's deadline and in its budget; others keep the policy's.
func TestWithSlack(t *testing.T) {
	p := Policy{MaxAttempts: 1, AttemptTimeout: time.Second, Budget: 2 * time.Second}
	for _, c := range []struct {
		ctx  context.Context
		want time.Duration
	}{
		{context.Background(), time.Second},
		{WithSlack(context.Background(), time.Minute), time.Minute + time.Second},
	} {
		// The deadline is set between before and after, however long
		// the machine takes: bracket it instead of comparing with now.
		var deadline time.Time
		before := time.Now()
		_, err := p.Run(c.ctx, "BatchWriteItem", Idempotent, func(actx context.Context) error {
			d, ok := actx.Deadline()
			require.True(t, ok)
			deadline = d
			return nil
		})
		after := time.Now()
		require.NoError(t, err)
		require.False(t, deadline.Before(before.Add(c.want)), "deadline %v before %v", deadline, before.Add(c.want))
		require.False(t, deadline.After(after.Add(c.want)), "deadline %v after %v", deadline, after.Add(c.want))
	}
}
