package retry

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	attempts, err := p.Run(ctx, "GetItem", Idempotent, outlive)
	require.Error(t, err)
	require.Equal(t, 3, attempts)
	time.Sleep(10 * time.Millisecond) // every timer has fired
	require.Zero(t, ctx.fromTimers.Load(), "calls of the caller's Done from attempt timers")

	p.AttemptTimeout, p.Budget = time.Minute, time.Minute
	parent, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	_, err = p.Run(parent, "GetItem", Idempotent, outlive)
	require.ErrorIs(t, err, context.Canceled, "the caller's cancellation reaches the attempt")
}
