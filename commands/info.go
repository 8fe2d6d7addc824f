package commands

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// INFO: Redis's sections, each as redamo really is (no snapshots, no
// replicas, no memory limit), then redamo's own (the store and its cost).

// infoSection renders one INFO section's fields (without its "# Title"
// line), each "name:value\r\n".
type infoSection struct {
	name, title string
	render      func(c *Ctx, b *strings.Builder) error
}

// infoSections in Redis's order, then redamo's own.
var infoSections = []infoSection{
	{"server", "Server", infoServer},
	{"clients", "Clients", infoClients},
	{"memory", "Memory", infoMemory},
	{"persistence", "Persistence", infoPersistence},
	{"stats", "Stats", infoStats},
	{"replication", "Replication", infoReplication},
	{"cpu", "CPU", infoCPU},
	{"modules", "Modules", func(*Ctx, *strings.Builder) error { return nil }},
	{"commandstats", "Commandstats", infoCommandstats},
	{"cluster", "Cluster", func(_ *Ctx, b *strings.Builder) error { b.WriteString("cluster_enabled:0\r\n"); return nil }},
	{"keyspace", "Keyspace", infoKeyspace},
	{"redamo", "Redamo", infoRedamo},
	{"coordination", "Coordination", infoCoordination},
}

// infoCoordination counts this process's LOCK.* and LEADER.* outcomes
// (coord.Service.Each): lock_granted, leader_notowner, ...
func infoCoordination(c *Ctx, b *strings.Builder) error {
	c.Srv.Coord.Each(func(family, outcome string, n int64) {
		infoField(b, family+"_"+outcome, n)
	})
	// One line per queue this process served, as keyspace's per database.
	var lines []string
	c.Srv.Coord.Queues.EachQueue(func(name string, st *coord.QueueStats) {
		var f []string
		st.Each(func(op string, n int64) { f = append(f, op+"="+strconv.FormatInt(n, 10)) })
		lines = append(lines, "queue:"+name+":"+strings.Join(f, ","))
	})
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	return nil
}

// defaultInfo are the sections of a bare INFO: Redis's default set minus
// keyspace. Client libraries (ioredis, BullMQ) send a bare INFO on every
// connect as a readiness check, and the embedded store counts its keys
// exactly by walking every item (keyspaceInfo). INFO keyspace (or all,
// everything) reports it; no section scans the table.
var defaultInfo = map[string]bool{
	"server": true, "clients": true, "memory": true, "persistence": true, "stats": true,
	"replication": true, "cpu": true, "modules": true, "cluster": true,
}

func cmdInfo(c *Ctx) {
	// An INFO right after another counts it (Run flushes only when the
	// command changes).
	if c.Conn != nil {
		c.Conn.FlushStats()
	}
	want := map[string]bool{}
	all := false
	if len(c.Args) == 1 {
		want = defaultInfo
	}
	for _, a := range c.Args[1:] {
		switch s := strings.ToLower(string(a)); s {
		case "all", "everything":
			all = true
		case "default":
			for k := range defaultInfo {
				want[k] = true
			}
		default:
			want[s] = true
		}
	}
	var b strings.Builder
	n := 0
	for _, sec := range infoSections {
		if !all && !want[sec.name] {
			continue
		}
		if n > 0 {
			b.WriteString("\r\n")
		}
		n++
		b.WriteString("# " + sec.title + "\r\n")
		if err := sec.render(c, &b); err != nil {
			c.Fail(err)
			return
		}
	}
	c.W.Verbatim("txt", b.String())
}

func infoField(b *strings.Builder, name string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", name, v)
}

func infoServer(c *Ctx, b *strings.Builder) error {
	now := c.Srv.Now()
	uptime := int64(now.Sub(c.Srv.Started).Seconds())
	_, port := splitHostPort(c.Srv.Config.Addr)
	infoField(b, "redis_version", Version)
	infoField(b, "redis_git_sha1", "00000000")
	infoField(b, "redis_git_dirty", 0)
	infoField(b, "redis_mode", "standalone")
	infoField(b, "os", procInfo().os)
	infoField(b, "arch_bits", strconv.IntSize)
	infoField(b, "multiplexing_api", procInfo().poller)
	infoField(b, "process_id", procInfo().pid)
	infoField(b, "process_supervised", "no")
	infoField(b, "run_id", procInfo().runID)
	infoField(b, "tcp_port", port)
	infoField(b, "server_time_usec", now.UnixMicro())
	infoField(b, "uptime_in_seconds", uptime)
	infoField(b, "uptime_in_days", uptime/86400)
	infoField(b, "executable", procInfo().executable)
	infoField(b, "config_file", "")
	infoField(b, "redamo_version", c.Srv.Config.RedamoVersion)
	infoField(b, "go_version", procInfo().goVersion)
	return nil
}

func infoClients(c *Ctx, b *strings.Builder) error {
	infoField(b, "connected_clients", len(c.Srv.Clients.List()))
	infoField(b, "cluster_connections", 0)
	infoField(b, "maxclients", c.Srv.MaxClients())
	infoField(b, "blocked_clients", c.Srv.BlockedClients())
	infoField(b, "tracking_clients", c.Srv.tracker.clients.Load())
	return nil
}

func infoMemory(_ *Ctx, b *strings.Builder) error {
	m := memInfo()
	infoField(b, "used_memory", m.used)
	infoField(b, "used_memory_human", bytesToHuman(m.used))
	infoField(b, "used_memory_rss", m.rss)
	infoField(b, "used_memory_rss_human", bytesToHuman(m.rss))
	infoField(b, "maxmemory", 0)
	infoField(b, "maxmemory_human", "0B")
	infoField(b, "maxmemory_policy", "noeviction")
	infoField(b, "mem_allocator", "go")
	return nil
}

// bytesToHuman formats a size as Redis's bytesToHuman does.
func bytesToHuman(n uint64) string {
	f := float64(n)
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.2fK", f/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.2fM", f/(1024*1024))
	case n < 1024*1024*1024*1024:
		return fmt.Sprintf("%.2fG", f/(1024*1024*1024))
	default:
		return fmt.Sprintf("%.2fT", f/(1024*1024*1024*1024))
	}
}

// infoPersistence: redamo never loads or snapshots; the store is the
// persistence.
func infoPersistence(_ *Ctx, b *strings.Builder) error {
	infoField(b, "loading", 0)
	infoField(b, "async_loading", 0)
	infoField(b, "rdb_bgsave_in_progress", 0)
	infoField(b, "aof_enabled", 0)
	infoField(b, "aof_rewrite_in_progress", 0)
	return nil
}

func infoStats(c *Ctx, b *strings.Builder) error {
	net := &c.Srv.Net
	infoField(b, "total_connections_received", net.Connections.Load())
	infoField(b, "total_commands_processed", c.Srv.Commands.Processed())
	infoField(b, "instantaneous_ops_per_sec", int64(c.Srv.Commands.OpsPerSec()))
	infoField(b, "total_net_input_bytes", net.In())
	infoField(b, "total_net_output_bytes", net.Out())
	infoField(b, "instantaneous_input_kbps", fmt.Sprintf("%.2f", net.InKbps()))
	infoField(b, "instantaneous_output_kbps", fmt.Sprintf("%.2f", net.OutKbps()))
	infoField(b, "rejected_connections", net.Rejected.Load())
	infoField(b, "protocol_errors", net.ProtocolErrors.Load())
	chans, pats, shards := c.Srv.Hub().Totals()
	infoField(b, "pubsub_channels", chans)
	infoField(b, "pubsub_patterns", pats)
	infoField(b, "pubsubshard_channels", shards)
	_, keys, items, prefixes := c.Srv.trackingInfo()
	infoField(b, "tracking_total_keys", keys)
	infoField(b, "tracking_total_items", items)
	infoField(b, "tracking_total_prefixes", prefixes)
	infoField(b, "client_output_buffer_limit_disconnections", net.OutputLimitDisconnections.Load())
	return nil
}

func infoReplication(_ *Ctx, b *strings.Builder) error {
	infoField(b, "role", "master")
	infoField(b, "connected_slaves", 0)
	return nil
}

func infoCPU(_ *Ctx, b *strings.Builder) error {
	sys, user := cpuTimes()
	infoField(b, "used_cpu_sys", fmt.Sprintf("%.6f", sys))
	infoField(b, "used_cpu_user", fmt.Sprintf("%.6f", user))
	return nil
}

func infoCommandstats(c *Ctx, b *strings.Builder) error {
	for _, st := range c.Srv.Commands.Snapshot() {
		perCall := 0.0
		if st.Calls > 0 {
			perCall = float64(st.Usec) / float64(st.Calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			st.Name, st.Calls, st.Usec, perCall, st.Rejected, st.Failed)
	}
	return nil
}

func infoKeyspace(c *Ctx, b *strings.Builder) error {
	dbs, err := keyspaceInfo(c)
	if err != nil {
		return err
	}
	for _, d := range dbs {
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", d.DB, d.Keys, d.Expires)
	}
	return nil
}

// infoRedamo reports the store and what it cost: DynamoDB requests,
// retries, errors and capacity units, per operation and per command.
func infoRedamo(c *Ctx, b *strings.Builder) error {
	cfg := c.Srv.Config
	infoField(b, "store", cfg.StoreName)
	infoField(b, "table", cfg.TableName)
	infoField(b, "region", cfg.Region)
	infoField(b, "endpoint", cfg.Endpoint)
	// The offset Now adds to the local clock to read the store's, and
	// how far off that may be (clock.go).
	var off time.Duration
	if c.Srv.Clock == nil {
		off = c.Srv.clockOffset()
	}
	infoField(b, "clock_offset_ms", infoMillis(off))
	infoField(b, "clock_uncertainty_ms", infoMillis(c.Srv.ClockUncertainty()))
	infoField(b, "clock_samples", c.Srv.clockSamples())
	infoField(b, "recovered_panics", c.Srv.Panics.Load())
	// The process's retry quota (model.RetryQuota): what is left, and how
	// many retries it refused (requests that failed at once instead).
	available, refusals := model.RetryQuota()
	infoField(b, "retry_quota_available", available)
	infoField(b, "retry_quota_refusals", refusals)
	// Commands on hot keys that shared a request (model.Coalescer): the
	// batches of more than one, the commands they answered, and those
	// waiting for their batch's turn now.
	batches, coalesced := c.Process().Coalesced()
	infoField(b, "coalesced_batches", batches)
	infoField(b, "coalesced_commands", coalesced)
	infoField(b, "coalesce_waiting", c.Process().CoalesceWaiting())
	if c.Srv.Stats == nil {
		return nil
	}
	snap := c.Srv.Stats.Snapshot()
	keys := c.Srv.Stats.Keys()
	type total struct {
		req, retries, errs int64
		rcu, wcu           float64
	}
	byOp := map[string]*total{}
	var ops []string
	var sum total
	for _, k := range keys {
		r := snap[k]
		t := byOp[k.Op]
		if t == nil {
			t = &total{}
			byOp[k.Op] = t
			ops = append(ops, k.Op)
		}
		for _, x := range []*total{t, &sum} {
			x.req += r.Requests
			x.retries += r.Retries
			x.errs += r.Errors
			x.rcu += r.RCU
			x.wcu += r.WCU
		}
	}
	row := func(name string, t total) {
		fmt.Fprintf(b, "%s:requests=%d,retries=%d,errors=%d,rcu=%.2f,wcu=%.2f\r\n",
			name, t.req, t.retries, t.errs, t.rcu, t.wcu)
	}
	row("store_requests", sum)
	sort.Strings(ops)
	for _, op := range ops {
		row("store_op_"+op, *byOp[op])
	}
	for _, k := range keys {
		r := snap[k]
		label := k.Label
		if label == "" {
			label = "(none)"
		}
		row("store_cmd_"+label+"@"+k.Op, total{r.Requests, r.Retries, r.Errors, r.RCU, r.WCU})
	}
	return nil
}

// infoMillis renders d in milliseconds, to the microsecond, without
// trailing zeros ("0", "-12.5", "0.731").
func infoMillis(d time.Duration) string {
	ms := math.Round(float64(d)/float64(time.Microsecond)) / 1000
	if ms == 0 {
		ms = 0 // not -0
	}
	return strconv.FormatFloat(ms, 'f', -1, 64)
}

// process describes this process for INFO server; it does not change.
type process struct {
	os, poller, runID, executable, goVersion string
	pid                                      int
}

var procInfo = sync.OnceValue(func() process {
	p := process{pid: os.Getpid(), poller: "go netpoll", goVersion: runtime.Version()}
	// Like uname -s -r -m.
	sys := runtime.GOOS
	if sys != "" {
		sys = strings.ToUpper(sys[:1]) + sys[1:]
	}
	machine := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[runtime.GOARCH]
	if machine == "" {
		machine = runtime.GOARCH
	}
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		p.os = fmt.Sprintf("%s %s %s", sys, strings.TrimSpace(string(rel)), machine)
	} else {
		p.os = sys + " " + machine
	}
	if runtime.GOOS == "linux" {
		p.poller = "epoll"
	}
	id := make([]byte, 20)
	_, _ = rand.Read(id)
	p.runID = hex.EncodeToString(id)
	p.executable, _ = os.Executable()
	return p
})

type memUsage struct{ used, rss uint64 }

// memInfo reads the Go heap in use and the resident set size (the whole
// runtime's reservation where /proc is not available).
func memInfo() memUsage {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := memUsage{used: ms.Alloc, rss: ms.Sys}
	if statm, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				m.rss = pages * uint64(os.Getpagesize())
			}
		}
	}
	return m
}
