package coord

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/wait"
)

// TestLocalChangesWakeWaiters: a release, a resignation and a push through
// the process end the waits on them through its wait registry, not by
// polling: the registry here never polls within the test, and the waits
// last an hour, so a waiter that were not woken would fail the test.
func TestLocalChangesWakeWaiters(t *testing.T) {
	ctx := context.Background()
	clk := func() Clock { return NewClock(time.Now(), 0) }
	newService := func() *Service {
		s := &Service{}
		s.wake.r.Backoff = wait.Backoff{Min: time.Hour, Max: time.Hour}
		return s
	}
	waiting := func(t *testing.T, s *Service) {
		require.Eventually(t, func() bool { return s.wake.r.Waiting() == 1 }, 5*time.Second, time.Millisecond)
	}

	t.Run("lock", func(t *testing.T) {
		s, st := newService(), memory.New(memory.Options{})
		_, ok, err := s.Acquire(ctx, st, []byte("l"), []byte("a"), time.Minute, 0, clk)
		require.NoError(t, err)
		require.True(t, ok)
		got := make(chan bool, 1)
		go func() {
			_, ok, err := s.Acquire(ctx, st, []byte("l"), []byte("b"), time.Minute, time.Hour, clk)
			require.NoError(t, err)
			got <- ok
		}()
		waiting(t, s)
		ok, err = s.Release(ctx, st, []byte("l"), []byte("a"), 0, clk())
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, woken(t, got), "the release hands the lock to the waiter")
	})

	t.Run("leader watch", func(t *testing.T) {
		s, st := newService(), memory.New(memory.Options{})
		l, ok, err := s.Elect(ctx, st, []byte("e"), []byte("a"), nil, time.Minute, 0, clk)
		require.NoError(t, err)
		require.True(t, ok)
		got := make(chan bool, 1)
		go func() {
			_, changed, err := s.Watch(ctx, st, []byte("e"), l.Token, time.Hour, clk)
			require.NoError(t, err)
			got <- changed
		}()
		waiting(t, s)
		ok, err = s.Resign(ctx, st, []byte("e"), []byte("a"), clk())
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, woken(t, got), "the watcher sees the resignation")
	})

	t.Run("queue pop", func(t *testing.T) {
		s, st := newService(), memory.New(memory.Options{})
		got := make(chan int, 1)
		go func() {
			msgs, err := s.Pop(ctx, st, []byte("q"), 1, time.Minute, time.Hour, time.Now)
			require.NoError(t, err)
			got <- len(msgs)
		}()
		waiting(t, s)
		_, _, err := s.Push(ctx, st, []byte("q"), []byte("job"), PushOptions{}, time.Now())
		require.NoError(t, err)
		require.Equal(t, 1, woken(t, got), "the push serves the blocked pop")
	})
}

// woken is what a woken waiter reports; one not woken within 30 s (its
// wait lasts an hour) fails the test.
func woken[T any](t *testing.T, got <-chan T) T {
	t.Helper()
	select {
	case v := <-got:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not woken")
		var zero T
		return zero
	}
}
