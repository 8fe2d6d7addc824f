package dynamo_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
)

// clockStore returns a store with clock probes on a fresh table of
// DynamoDB Local (dynamotest.NewStore's stores send none).
func clockStore(t *testing.T, stats *dynastore.Stats) *dynamo.Store {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := dynamo.NewTemp(ctx, dynamo.Config{Endpoint: dynamotest.Endpoint(t), Observer: stats,
		ClockProbes: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, s.Close())
		require.NoError(t, s.DeleteTable(ctx))
	})
	return s
}

// DynamoDB Local runs on this machine's clock: after the calibration the
// interval must be narrow and hold 0, so that the clock is not moved.
// That also checks how the estimator reads Date (truncated to the second):
// were it rounded, the interval would be half a second off.
func TestClockAgainstDynamoDBLocal(t *testing.T) {
	stats := dynastore.NewStats()
	s := clockStore(t, stats)
	select {
	case <-s.ClockCalibrated():
	case <-time.After(30 * time.Second):
		t.Fatal("the clock's calibration did not end")
	}
	off, unc, ok := s.ClockOffset()
	require.True(t, ok)
	lo, hi := s.ClockBounds()
	probes := stats.Requests(dynamo.ClockLabel, dynastore.OpGetItem)
	t.Logf("offset %v ± %v, interval [%v, %v], from %d samples, %d probes", off, unc, lo, hi, s.ClockSamples(), probes)
	// One sample's interval is at least a second wide (Date counts whole
	// seconds) plus its round trip: narrower proves the samples were
	// combined, without a bound a busy machine's round trips could break.
	require.Less(t, unc, time.Second)
	require.Less(t, off.Abs(), unc+50*time.Millisecond)
	require.LessOrEqual(t, lo, time.Millisecond)
	require.GreaterOrEqual(t, hi, -time.Millisecond)
	require.GreaterOrEqual(t, probes, int64(1))
	require.LessOrEqual(t, probes, int64(10))
	require.GreaterOrEqual(t, s.ClockSamples(), int(probes))
	require.Equal(t, int64(0), stats.Snapshot()[dynastore.StatKey{Label: dynamo.ClockLabel, Op: dynastore.OpGetItem}].Errors)
}

// Close stops the probes, even in the middle of the calibration.
func TestClockProbesStopOnClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stats := dynastore.NewStats()
	s, err := dynamo.NewTemp(ctx, dynamo.Config{Endpoint: dynamotest.Endpoint(t), ClockProbes: true,
		Observer: stats, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.DeleteTable(ctx)) }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, s.Close())
	// Close must not wait out the calibration; only a hang takes a minute.
	require.Less(t, time.Since(start), time.Minute)
	probes := stats.Requests(dynamo.ClockLabel, dynastore.OpGetItem)
	require.Less(t, probes, int64(10), "still calibrating when closed")
	time.Sleep(1500 * time.Millisecond)
	require.Equal(t, probes, stats.Requests(dynamo.ClockLabel, dynastore.OpGetItem), "no probe after Close")
}
