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
	p := Policy{MaxAttempts: 3, AttemptTimeout: time.Millisecond, Budget: 20 * time.Millisecond, Base: time.Microsecond, Cap: time.Microsecond}
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
