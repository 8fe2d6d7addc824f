package commands

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The expected texts below are what redis-server 7.0.15 answered for three
// "command" events of 66, 645 and 310 ms, 3 s, 1 s and 0 s before.
const (
	redisLatencyGraph = "command - high 645 ms, low 66 ms (all time high 645 ms)\n" +
		"--------------------------------------------------------------------------------\n" +
		" # \n" +
		" | \n" +
		" |#\n" +
		"_||\n" +
		"   \n" +
		"310\n" +
		"sss\n"
	redisLatencyDoctor = "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n" +
		"1. command: 3 latency spikes (average 340ms, mean deviation 203ms, period 1.00 sec). Worst all time event 645ms.\n" +
		"\nI have a few advices for you:\n\n" +
		"- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 1000'.\n" +
		"- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n" +
		"- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n"
)

func TestLatencyGraphAndDoctorAsRedis(t *testing.T) {
	const t0 = 1795883166
	now := time.Unix(t0+3, 0)
	s := &Server{Clock: func() time.Time { return now }}
	one := int64(1)
	s.latency.threshold.Store(&one)
	s.latency.add("command", 66, t0)
	s.latency.add("command", 645, t0+2)
	// A lower sample in the same second is not kept.
	s.latency.add("command", 100, t0+2)
	s.latency.add("command", 310, t0+3)

	ts, ok := s.latency.get("command")
	require.True(t, ok)
	require.Equal(t, redisLatencyGraph, latencyGraph("command", &ts, now.Unix()))
	require.Equal(t, redisLatencyDoctor, latencyReport(s))

	require.Equal(t, int64(0), s.latency.reset([][]byte{[]byte("fast-command")}))
	require.Equal(t, int64(1), s.latency.reset([][]byte{[]byte("COMMAND")}))
	require.Equal(t, "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n", latencyReport(s))
}

func TestLatencySeriesKeepsTheLast160Seconds(t *testing.T) {
	var m latencyMonitor
	for i := int64(1); i <= latencyTSLen+5; i++ {
		m.add("command", i, 1000+i)
	}
	ts, _ := m.get("command")
	var got []latencySample
	ts.inOrder(func(s latencySample) { got = append(got, s) })
	require.Len(t, got, latencyTSLen)
	require.Equal(t, latencySample{1006, 6}, got[0])
	require.Equal(t, latencySample{1000 + latencyTSLen + 5, latencyTSLen + 5}, got[latencyTSLen-1])
	require.Equal(t, int64(latencyTSLen+5), ts.max)
}

// TestLatencyBucket checks the levels against what Redis's HDR histogram
// reported (the keys of Redis's own LATENCY HISTOGRAM).
func TestLatencyBucket(t *testing.T) {
	cases := []struct {
		ns     int64
		micros int64
	}{
		{0, 1}, {1, 1}, {1031, 1}, {1032, 2}, {2063, 2}, {4000, 4}, {8255, 8},
		{16000, 16}, {20000, 33}, {32768, 33}, {33023, 33}, {33024, 66}, {100000, 132},
		{int64(time.Second), 1082130},
		{int64(time.Hour), 1082130},
	}
	for _, c := range cases {
		require.Equal(t, c.micros, latencyBucketMicros(latencyBucket(c.ns)), "ns=%d", c.ns)
	}
	require.Less(t, latencyBucket(int64(time.Hour)), latencyBuckets)
}
