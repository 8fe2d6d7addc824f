package model

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore/memory"
)

// procScope is a storeScope whose process stays the same.
type procScope struct {
	storeScope
	p *Process
}

func (s procScope) Process() *Process { return s.p }

// TestCoalescer checks group commit on one key: a lone operation runs at
// once on its own; those that arrive while it is in flight share the next
// run, in arrival order, capped at Max per batch, and one arriving while
// that run is in flight waits for the one after.
func TestCoalescer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		waiting int
		batches [][]int // the runs after the lone one
	}{
		{"uncapped", 0, 5, [][]int{{1, 2, 3, 4, 5}, {6}}},
		// 6 joins {5}, which has not been sent yet.
		{"capped", 2, 5, [][]int{{1, 2}, {3, 4}, {5, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := procScope{storeScope{context.Background(), memory.New(memory.Options{})}, NewProcess(nil)}
			c := Coalescer[int, int]{Max: tc.max}
			var mu sync.Mutex
			var runs [][]int
			gates := map[int]chan struct{}{0: make(chan struct{}), 1: make(chan struct{})}
			run := func(ops []int) ([]int, []error) {
				mu.Lock()
				runs = append(runs, append([]int(nil), ops...))
				gate := gates[ops[0]]
				mu.Unlock()
				if gate != nil {
					<-gate
				}
				res := make([]int, len(ops))
				for i, op := range ops {
					res[i] = op * 10
				}
				return res, make([]error, len(ops))
			}
			var wg sync.WaitGroup
			got := make([]int, tc.waiting+2)
			do := func(op int) {
				defer wg.Done()
				r, err := c.Do(s, "k", op, run)
				require.NoError(t, err)
				got[op] = r
			}
			wg.Add(1)
			go do(0)
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 }, 5*time.Second, time.Millisecond)
			for op := 1; op <= tc.waiting; op++ {
				wg.Add(1)
				go do(op)
				require.Eventually(t, func() bool { return c.waitingOps("k") == op }, 5*time.Second, time.Millisecond)
			}
			close(gates[0])
			// Batch {1...} is in flight and held at its gate: 6 is not
			// in it, whatever the cap.
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 2 }, 5*time.Second, time.Millisecond)
			wg.Add(1)
			go do(tc.waiting + 1)
			require.Eventually(t, func() bool { return c.waitingOps("k") > 0 }, 5*time.Second, time.Millisecond)
			close(gates[1])
			wg.Wait()
			require.Equal(t, append([][]int{{0}}, tc.batches...), runs)
			for op, r := range got {
				require.Equal(t, op*10, r)
			}
			var shared, members int64
			for _, b := range tc.batches {
				if len(b) > 1 {
					shared++
					members += int64(len(b))
				}
			}
			b, m := s.p.Coalesced()
			require.Equal(t, [2]int64{shared, members}, [2]int64{b, m})
			require.True(t, c.idle(), "an idle key keeps no lane")
		})
	}
}

// TestDetached checks that a detached scope outlives its command's
// cancellation and keeps its values.
func TestDetached(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "label"))
	s := Detached(procScope{storeScope{ctx, memory.New(memory.Options{})}, NewProcess(nil)})
	cancel()
	require.NoError(t, s.Err())
	require.Nil(t, s.Done())
	require.Equal(t, "label", s.Value(key{}))
}
