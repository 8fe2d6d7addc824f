package model_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/model"
)

// Big writes on a table that throttles them (the faithful store: AWS's
// on-demand ceiling, its partitions' throughput and the
// twice-the-previous-peak rule, its time compressed tenfold) complete:
// their chunk requests are paced to what the table takes instead of
// failing once the store's retries are spent. Two writers and a reader,
// as two instances, put the table in debt, as a burst does on AWS.
func TestBigWritesPacedUnderThrottling(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 300 MB")
	}
	st := faithful.New(faithful.Options{Seed: 1, Scale: 0.1})
	vals := [][]byte{randomBytes(20, 50<<20), randomBytes(21, 50<<20)}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScope(st)
			for n := range 3 {
				start := time.Now()
				_, errs[w*3+n] = model.SetString(s, []byte("k"), vals[w], model.SetOptions{})
				t.Logf("writer %d, 50 MB SET %d: %v after %v", w, n, errs[w*3+n], time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	v := bigValue(t, newScope(st.Memory()), "k")
	require.True(t, bytes.Equal(v, vals[0]) || bytes.Equal(v, vals[1]))
	_ = dynastore.ErrThrottled
}
