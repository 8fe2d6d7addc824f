package commands

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/model"
)

// LATENCY: Redis 7.0's latency monitor and its per-command latency
// histograms, for this instance. The events redamo records are Redis's
// "command" and "fast-command" (a command, or one flagged fast, that took
// at least latency-monitor-threshold milliseconds, store requests
// included); Redis's other events are about forks, disks and eviction,
// which redamo does not have. The histograms (LATENCY HISTOGRAM) count
// every call, as INFO commandstats does (commandTally in serverstate.go).

func registerLatency(t *Table) {
	t.Register([]Row{
		{Name: "latency|doctor", Run: cmdLatencyDoctor},
		{Name: "latency|graph", Run: cmdLatencyGraph},
		{Name: "latency|help", Run: cmdLatencyHelp},
		{Name: "latency|histogram", Run: cmdLatencyHistogram},
		{Name: "latency|history", Run: cmdLatencyHistory},
		{Name: "latency|latest", Run: cmdLatencyLatest},
		{Name: "latency|reset", Run: cmdLatencyReset},
	})
}

// latencyTSLen is Redis's LATENCY_TS_LEN: the samples kept per event.
const latencyTSLen = 160

type latencySample struct {
	time   int64 // Unix seconds; 0 for an unused slot
	millis int64
}

// latencySeries is one event's samples, a ring as in Redis: idx is the
// next slot to fill.
type latencySeries struct {
	idx     int
	max     int64
	samples [latencyTSLen]latencySample
}

// latencyMonitor holds the events. threshold is read on every command
// (nil until CONFIG SET: 0, off); the lock is taken only for a sample.
type latencyMonitor struct {
	threshold atomic.Pointer[int64]

	mu     sync.Mutex
	events map[string]*latencySeries
	order  []string // the events in the order first seen
}

func (m *latencyMonitor) limit() int64 {
	if p := m.threshold.Load(); p != nil {
		return *p
	}
	return 0
}

// record adds a sample for c's call of cmd if it took at least the
// threshold, as Redis's latencyAddSampleIfNeeded does after every call.
func (m *latencyMonitor) record(c *Ctx, cmd *Command, d time.Duration) {
	th := m.limit()
	ms := d.Milliseconds()
	if th == 0 || ms < th {
		return
	}
	event := "command"
	if cmd.HasFlag("fast") {
		event = "fast-command"
	}
	m.add(event, ms, c.Srv.Now().Unix())
}

func (m *latencyMonitor) add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		if m.events == nil {
			m.events = map[string]*latencySeries{}
		}
		ts = &latencySeries{}
		m.events[event] = ts
		m.order = append(m.order, event)
	}
	ts.max = max(ts.max, ms)
	// One sample per second: the highest.
	prev := &ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
	if prev.time == now {
		prev.millis = max(prev.millis, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{now, ms}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

// series returns a copy of each event's series, in the order first seen
// (Redis's is its dict's: no client can rely on one).
func (m *latencyMonitor) series() (names []string, out []latencySeries) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range m.order {
		names = append(names, name)
		out = append(out, *m.events[name])
	}
	return names, out
}

func (m *latencyMonitor) get(event string) (latencySeries, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, ok := m.events[event]
	if !ok {
		return latencySeries{}, false
	}
	return *ts, true
}

// reset forgets the events named (case-insensitively), or every event.
func (m *latencyMonitor) reset(names [][]byte) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	kept := m.order[:0]
	for _, ev := range m.order {
		drop := len(names) == 0
		for _, name := range names {
			drop = drop || strings.EqualFold(ev, string(name))
		}
		if drop {
			delete(m.events, ev)
			n++
		} else {
			kept = append(kept, ev)
		}
	}
	m.order = kept
	return n
}

// inOrder calls f with the series' used samples, oldest first.
func (ts *latencySeries) inOrder(f func(s latencySample)) {
	for j := 0; j < latencyTSLen; j++ {
		if s := ts.samples[(ts.idx+j)%latencyTSLen]; s.time != 0 {
			f(s)
		}
	}
}

func cmdLatencyHistory(c *Ctx) {
	ts, _ := c.Srv.latency.get(string(c.Args[2]))
	var samples []latencySample
	ts.inOrder(func(s latencySample) { samples = append(samples, s) })
	c.W.Array(len(samples))
	for _, s := range samples {
		c.W.Array(2)
		c.W.Int(s.time)
		c.W.Int(s.millis)
	}
}

func cmdLatencyLatest(c *Ctx) {
	names, series := c.Srv.latency.series()
	c.W.Array(len(names))
	for i, name := range names {
		ts := &series[i]
		last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
		c.W.Array(4)
		c.W.BulkString(name)
		c.W.Int(last.time)
		c.W.Int(last.millis)
		c.W.Int(ts.max)
	}
}

func cmdLatencyReset(c *Ctx) {
	c.W.Int(c.Srv.latency.reset(c.Args[2:]))
}

var latencyHelp = []string{
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
}

func cmdLatencyHelp(c *Ctx) {
	writeHelp(c, "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", latencyHelp...)
}

// ---- GRAPH -------------------------------------------------------------------

func cmdLatencyGraph(c *Ctx) {
	event := string(c.Args[2])
	ts, ok := c.Srv.latency.get(event)
	if !ok {
		c.W.Error(errorf("No samples available for event '%s'", cString(c.Args[2])))
		return
	}
	c.W.Verbatim("txt", latencyGraph(event, &ts, c.Srv.Now().Unix()))
}

// latencyGraph draws the series as Redis's latencyCommandGenSparkeline
// does: a header, then a sparkline of 4 rows, 80 columns, each sample
// labelled with how long ago it was.
func latencyGraph(event string, ts *latencySeries, now int64) string {
	var seq sparkline
	var lo, hi int64
	ts.inOrder(func(s latencySample) {
		if len(seq.values) == 0 {
			lo, hi = s.millis, s.millis
		} else {
			lo, hi = min(lo, s.millis), max(hi, s.millis)
		}
		elapsed := now - s.time
		var label string
		switch {
		case elapsed < 60:
			label = fmt.Sprintf("%ds", elapsed)
		case elapsed < 3600:
			label = fmt.Sprintf("%dm", elapsed/60)
		case elapsed < 3600*24:
			label = fmt.Sprintf("%dh", elapsed/3600)
		default:
			label = fmt.Sprintf("%dd", elapsed/(3600*24))
		}
		seq.add(float64(s.millis), label)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, ts.max)
	b.WriteString(strings.Repeat("-", 80))
	b.WriteByte('\n')
	seq.render(&b, 80, 4)
	return b.String()
}

// sparkline is Redis's sparkline.c with SPARKLINE_FILL, the only way
// LATENCY GRAPH draws.
type sparkline struct {
	values   []float64
	labels   []string
	min, max float64
}

func (s *sparkline) add(v float64, label string) {
	if len(s.values) == 0 {
		s.min, s.max = v, v
	} else if v < s.min {
		s.min = v
	} else if v > s.max {
		s.max = v
	}
	s.values = append(s.values, v)
	s.labels = append(s.labels, label)
}

func (s *sparkline) render(b *strings.Builder, columns, rows int) {
	for j := 0; j < len(s.values); j += columns {
		if j != 0 {
			b.WriteByte('\n')
		}
		s.renderRange(b, rows, j, min(columns, len(s.values)-j))
	}
}

func (s *sparkline) renderRange(b *strings.Builder, rows, offset, n int) {
	const fill = "_o#"
	relmax := s.max - s.min
	if relmax == 0 {
		relmax = 1
	}
	steps := len(fill) * rows
	chars := make([]byte, n)
	for row := 0; ; row++ {
		more := false
		for j := range chars {
			chars[j] = ' '
		}
		for j := 0; j < n; j++ {
			v := s.values[offset+j]
			step := int(float64(int((v-s.min)*float64(steps))) / relmax)
			step = max(0, min(step, steps-1))
			if row < rows {
				more = true
				idx := step - (rows-row-1)*len(fill)
				switch {
				case idx >= 0 && idx < len(fill):
					chars[j] = fill[idx]
				case idx >= len(fill):
					chars[j] = '|'
				}
				continue
			}
			// One blank row between the graph and the labels.
			if row-rows < 1 {
				more = true
				break
			}
			if label := s.labels[offset+j]; len(label) > row-rows-1 {
				more = true
				chars[j] = label[row-rows-1]
			}
		}
		if !more {
			return
		}
		b.Write(chars)
		b.WriteByte('\n')
	}
}

// ---- DOCTOR ------------------------------------------------------------------

func cmdLatencyDoctor(c *Ctx) {
	c.W.Verbatim("txt", latencyReport(c.Srv))
}

// latencyReport is Redis's createLatencyReport for the events redamo
// records. Redis also advises on transparent huge pages it finds in its
// own memory, because forks for snapshots suffer from them; redamo never
// forks, so that advice has no reason to appear.
func latencyReport(s *Server) string {
	names, series := s.latency.series()
	threshold := s.latency.limit()
	if len(names) == 0 && threshold == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	var b strings.Builder
	var slowlogEnable, slowlogTune, slowlogInspect, scheduler, largeObjects bool
	advices := 0
	now := s.Now().Unix()
	for i, name := range names {
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		st := analyzeLatency(&series[i], now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, name, st.samples, st.avg, st.mad, float64(st.period)/float64(st.samples), series[i].max)
		switch strings.ToLower(name) {
		case "command":
			if sl := s.slowlog.threshold(); sl < 0 {
				slowlogEnable = true
				advices++
			} else if sl/1000 > threshold {
				slowlogTune = true
				advices++
			}
			slowlogInspect, largeObjects = true, true
			advices += 2
		case "fast-command":
			scheduler = true
			advices++
		}
		b.WriteByte('\n')
	}
	switch {
	case len(names) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	case advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	default:
		b.WriteString("\nI have a few advices for you:\n\n")
		if slowlogEnable {
			fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold*1000)
		}
		if slowlogTune {
			fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", threshold*1000)
		}
		if slowlogInspect {
			b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
		}
		if scheduler {
			b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
				"  1) Lower the system load.\n" +
				"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
				"  3) Check if you have a \"noisy neighbour\" problem.\n" +
				"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
				"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
		}
		if largeObjects {
			b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
		}
	}
	return b.String()
}

type latencyStats struct {
	samples, avg, mad, period int64
}

// analyzeLatency is Redis's analyzeLatencyForEvent.
func analyzeLatency(ts *latencySeries, now int64) latencyStats {
	var st latencyStats
	var sum, oldest int64
	ts.inOrder(func(s latencySample) {
		st.samples++
		sum += s.millis
		if oldest == 0 || s.time < oldest {
			oldest = s.time
		}
	})
	if st.samples == 0 {
		return st
	}
	st.avg = sum / st.samples
	st.period = max(now-oldest, 1)
	var dev int64
	ts.inOrder(func(s latencySample) {
		d := st.avg - s.millis
		if d < 0 {
			d = -d
		}
		dev += d
	})
	st.mad = dev / st.samples
	return st
}

// ---- HISTOGRAM -----------------------------------------------------------------

// latencyBuckets is how many levels a command's histogram has: Redis
// reports cumulative counts at 1024 ns and each power of two above, up to
// the 1 s it caps durations at.
const latencyBuckets = 32

// latencyBucket is the level at which Redis's histogram (an HDR histogram
// of 2 significant digits, iterated logarithmically from 1024 ns) first
// counts a call of ns nanoseconds: level k covers up to the highest value
// equivalent to 2^k, 2^k + 2^(k-7) - 1.
func latencyBucket(ns int64) int {
	ns = max(1, min(ns, int64(time.Second)))
	k := bits.Len64(uint64(ns)) - 1
	if k >= 7 && ns > 1<<k+1<<(k-7)-1 {
		k++
	}
	return max(k, 10)
}

// latencyBucketMicros is the value Redis reports for level k.
func latencyBucketMicros(k int) int64 {
	return (1<<k + 1<<(k-7) - 1) / 1000
}

func cmdLatencyHistogram(c *Ctx) {
	stats := c.Srv.Commands
	var rows []CommandStat
	if stats != nil {
		if c.Conn != nil {
			c.Conn.FlushStats()
		}
		all := stats.Snapshot()
		if len(c.Args) == 2 {
			rows = all
		} else {
			for _, a := range c.Args[2:] {
				name := asciiLower(string(a))
				for _, r := range all {
					if r.Name == name || strings.HasPrefix(r.Name, name+"|") && !strings.Contains(name, "|") {
						rows = append(rows, r)
					}
				}
			}
		}
	}
	kept := rows[:0]
	for _, r := range rows {
		if r.Calls > 0 {
			kept = append(kept, r)
		}
	}
	c.W.Map(len(kept))
	for _, r := range kept {
		c.W.BulkString(r.Name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(r.Calls)
		c.W.BulkString("histogram_usec")
		levels := 0
		for _, n := range r.Latency {
			if n != 0 {
				levels++
			}
		}
		c.W.Map(levels)
		var cum int64
		for k, n := range r.Latency {
			if n == 0 {
				continue
			}
			cum += n
			c.W.Int(latencyBucketMicros(k))
			c.W.Int(cum)
		}
	}
}

// latencyThresholdParam is CONFIG's latency-monitor-threshold.
var latencyThresholdParam = configParam{
	name:  "latency-monitor-threshold",
	get:   func(s *Server) string { return strconv.FormatInt(s.latency.limit(), 10) },
	check: checkInt(0, 1<<63-1),
	set: func(s *Server, v string) {
		n, _ := model.String2ll([]byte(v))
		s.latency.threshold.Store(&n)
	},
}
