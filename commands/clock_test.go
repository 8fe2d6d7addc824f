package commands_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
)

// offsetStore is an embedded store that claims its clock is off from the
// local one by a given offset, as a DynamoDB store measures it.
type offsetStore struct {
	*memory.Store
	offset, uncertainty atomic.Int64
	measured            atomic.Bool
}

func (s *offsetStore) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	return time.Duration(s.offset.Load()), time.Duration(s.uncertainty.Load()), s.measured.Load()
}

func (s *offsetStore) ClockSamples() int { return 7 }

func newOffsetStore(offset, uncertainty time.Duration) *offsetStore {
	s := &offsetStore{Store: memory.New(memory.Options{})}
	s.offset.Store(int64(offset))
	s.uncertainty.Store(int64(uncertainty))
	s.measured.Store(true)
	return s
}

// infoFields returns INFO section's fields by name.
func infoFields(t *testing.T, info string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

func infoFloat(t *testing.T, fields map[string]string, name string) float64 {
	t.Helper()
	v, ok := fields[name]
	require.True(t, ok, "INFO has no %s", name)
	f, err := strconv.ParseFloat(v, 64)
	require.NoError(t, err, "%s:%s", name, v)
	return f
}

// The server's clock is the store's: every reading, those a pipeline's
// commands take from the end of the one before included, is the local
// clock moved by the store's offset, and command durations are not.
func TestNowFollowsStoreOffset(t *testing.T) {
	ctx := context.Background()
	const offset = time.Hour
	st := newOffsetStore(offset, 20*time.Millisecond)
	s := testserver.Start(t, st)
	rdb := s.Client(t)

	pipe := rdb.Pipeline()
	for i := range 10 {
		pipe.Set(ctx, fmt.Sprint("k", i), "v", time.Minute)
	}
	var at []*redis.DurationCmd
	for i := range 10 {
		at = append(at, pipe.PExpireTime(ctx, fmt.Sprint("k", i)))
	}
	tm := pipe.Time(ctx)
	before := time.Now()
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	after := time.Now()
	for i, c := range at {
		got := time.UnixMilli(int64(c.Val() / time.Millisecond))
		require.False(t, got.Before(before.Add(offset+time.Minute).Truncate(time.Millisecond)), "k%d expires at %v", i, got)
		require.False(t, got.After(after.Add(offset+time.Minute)), "k%d expires at %v", i, got)
	}
	require.WithinRange(t, tm.Val(), before.Add(offset).Truncate(time.Microsecond), after.Add(offset))
	require.Equal(t, 20*time.Millisecond, s.Srv.ClockUncertainty())

	info, err := rdb.Info(ctx, "redamo").Result()
	require.NoError(t, err)
	f := infoFields(t, info)
	require.Equal(t, "3600000", f["clock_offset_ms"])
	require.Equal(t, "20", f["clock_uncertainty_ms"])
	require.Equal(t, "7", f["clock_samples"])

	// Durations are the local clock's: not moved by the offset.
	stats, err := rdb.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	row := infoFields(t, stats)["cmdstat_set"]
	require.True(t, strings.HasPrefix(row, "calls=10,"), row)
	usec, err := strconv.ParseInt(strings.TrimPrefix(strings.Split(row, ",")[1], "usec="), 10, 64)
	require.NoError(t, err, row)
	require.GreaterOrEqual(t, usec, int64(0), row)
	require.Less(t, usec, int64(time.Second/time.Microsecond), row)

	// Until the store has measured its offset, the local clock, and a
	// conservative uncertainty.
	st.measured.Store(false)
	require.WithinDuration(t, time.Now(), s.Srv.Now(), time.Second)
	require.Equal(t, time.Second, s.Srv.ClockUncertainty())
	st.offset.Store(int64(-1234567 * time.Microsecond))
	st.measured.Store(true)
	info, err = rdb.Info(ctx, "redamo").Result()
	require.NoError(t, err)
	require.Equal(t, "-1234.567", infoFields(t, info)["clock_offset_ms"])
}

// A test clock is the clock: no offset, no uncertainty.
func TestTestClockIgnoresStoreOffset(t *testing.T) {
	fixed := time.Unix(1_700_000_000, 0)
	srv := &commands.Server{Store: model.On(newOffsetStore(time.Hour, time.Second)), Clock: func() time.Time { return fixed }}
	require.Equal(t, fixed, srv.Now())
	require.Equal(t, time.Duration(0), srv.ClockUncertainty())
}

// INFO's redamo section shows the clock's offset and how well it is known:
// exactly 0 on the embedded store, measured on DynamoDB (Local, on this
// machine's clock).
func TestInfoClock(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			rdb := b.Start(t).Client(t)
			info, err := rdb.Info(ctx, "redamo").Result()
			require.NoError(t, err)
			f := infoFields(t, info)
			if b.Name == "memory" {
				require.Equal(t, "0", f["clock_offset_ms"])
				require.Equal(t, "0", f["clock_uncertainty_ms"])
				require.Equal(t, "0", f["clock_samples"])
				return
			}
			// Creating the table took requests: the estimate rests on
			// their responses at least.
			require.GreaterOrEqual(t, infoFloat(t, f, "clock_samples"), 1.0)
			unc := infoFloat(t, f, "clock_uncertainty_ms")
			require.Less(t, unc, 1000.0)
			require.Less(t, math.Abs(infoFloat(t, f, "clock_offset_ms")), unc+50)
		})
	}
}
