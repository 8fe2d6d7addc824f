package model

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

var errTestThrottled = fmt.Errorf("test: throttled: %w", dynastore.ErrThrottled)

// paced sends the ranges the table throttled again, split, until each
// was applied once; after throttles it has one range in flight, and
// adds more as they succeed.
func TestPacedThrottledRanges(t *testing.T) {
	const n, step = 16 * bigBatch, bigBatch
	var (
		mu       sync.Mutex
		applied  = make([]int, n)
		running  atomic.Int32
		started  atomic.Int32
		wave     = make(chan struct{})
		sizes    []int64
		afterMax []int32
	)
	err := paced(context.Background(), n, step, func(_ context.Context, lo, hi int64) error {
		run := running.Add(1)
		defer running.Add(-1)
		k := started.Add(1)
		if k <= bigParallel {
			// The first wave: all in flight at once, then all throttled.
			if k == bigParallel {
				close(wave)
			}
			<-wave
			return errTestThrottled
		}
		mu.Lock()
		defer mu.Unlock()
		if k == bigParallel+1 {
			afterMax = append(afterMax, run)
		}
		sizes = append(sizes, hi-lo)
		for i := lo; i < hi; i++ {
			applied[i]++
		}
		return nil
	})
	require.NoError(t, err)
	for i, a := range applied {
		require.Equal(t, 1, a, "range of %d", i)
	}
	require.Equal(t, []int32{1}, afterMax, "after a wave of throttles, one range at a time")
	require.Contains(t, sizes, int64(step/2), "a throttled range is sent again in halves")
}

// A table that never takes the writes: paced gives up with the throttle,
// and any other error stops it at once.
func TestPacedGivesUp(t *testing.T) {
	patience, rangeTime := bigPatience, bigRangeTime
	bigPatience, bigRangeTime = 100*time.Millisecond, 0
	defer func() { bigPatience, bigRangeTime = patience, rangeTime }()
	err := paced(context.Background(), 40, 8, func(context.Context, int64, int64) error { return errTestThrottled })
	require.ErrorIs(t, err, dynastore.ErrThrottled)

	boom := errors.New("test: boom")
	err = paced(context.Background(), 1000, 1, func(_ context.Context, lo, _ int64) error {
		if lo == 0 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
}

// neverTakes is a table that throttles every BatchWriteItem.
type neverTakes struct{ dynastore.Store }

func (neverTakes) BatchWrite(context.Context, []dynastore.Item, []dynastore.Key) error {
	return errTestThrottled
}

// A big write or edit the table never takes fails with the throttle once
// paced runs out of patience, and publishes nothing.
func TestBigWriteThrottledPublishesNothing(t *testing.T) {
	mem := memory.New(memory.Options{})
	ok := procScope{storeScope{context.Background(), mem}, NewProcess(nil)}
	val := make([]byte, 3*bigChunkSize)
	_, err := SetString(ok, []byte("k"), val, SetOptions{})
	require.NoError(t, err)
	// Only the writes the table never takes run out of a short patience:
	// the ones around them, which it takes, keep the default, which a
	// busy machine under -race can need.
	patience, rangeTime := bigPatience, bigRangeTime
	defer func() { bigPatience, bigRangeTime = patience, rangeTime }()
	bigPatience, bigRangeTime = 100*time.Millisecond, 0
	throttled := procScope{storeScope{context.Background(), neverTakes{mem}}, NewProcess(nil)}
	_, err = SetString(throttled, []byte("k"), []byte(string(make([]byte, 2*bigChunkSize))+"x"), SetOptions{})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	_, err = SetRange(throttled, []byte("k"), 5, []byte("x"), 1<<40)
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	bigPatience, bigRangeTime = patience, rangeTime
	ks, err := ReadKey(ok, []byte("k"))
	require.NoError(t, err)
	got, err := bind(ok, ks).StringValue()
	require.NoError(t, err)
	require.Equal(t, val, got)
}
