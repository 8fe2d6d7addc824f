package commands

import (
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/pubsub"
)

// Version is the Redis version redamo reports (INFO, HELLO): clients gate
// features on it, so it names the Redis 7 line whose replies redamo matches.
const Version = "7.0.15"

// Server is the state shared by all connections of one redamo process. It holds
// nothing correctness depends on across instances: that lives in the Store.
type Server struct {
	Store model.Target
	// Stats counts the Store's requests per command and operation.
	Stats *model.Stats
	Table *Table
	// Clock is the time source; nil is the real clock, corrected by the
	// store's offset (clock.go). Tests replace it.
	Clock   func() time.Time
	Config  Config
	Clients Clients
	Started time.Time

	// Commands holds the per-command statistics of INFO commandstats.
	Commands *CommandStats
	// Net counts the process's connections and network traffic (INFO stats).
	Net NetStats
	// Panics counts the panics recovered while serving (a handler's, a
	// connection's, a command's run by a script or the CLI): each is a bug
	// that one request would otherwise have turned into a dead process.
	// INFO redamo reports it; CONFIG RESETSTAT leaves it alone, so no
	// client can hide one.
	Panics atomic.Int64
	// OnCommand, when set, is told about every executed command (Prometheus
	// metrics hang here); rejected commands (unknown, arity, NOAUTH) are not
	// reported to it.
	OnCommand func(name string, d time.Duration, failed bool)

	// Settings CONFIG SET may change while the server runs; zero means "as in
	// Config".
	requirePass atomic.Pointer[string]
	maxBulkLen  atomic.Int64
	hllSparse   atomic.Int64 // hll-sparse-max-bytes + 1 once set (hyperloglog.go)
	maxClients  atomic.Int64
	maxQueryBuf atomic.Int64
	pubsubLimit atomic.Pointer[OutputLimit] // outputlimit.go
	// unprotected is CONFIG SET protected-mode's override: nil until set.
	unprotected atomic.Pointer[bool]
	// enc holds the encoding parameters (encoding.go): nil until set.
	enc atomic.Pointer[encodingState]

	// lists is the list family's per-process state (blocked clients, key
	// locks): see blocking.go.
	listsOnce sync.Once
	lists     *listRuntime
	// proc is the data model's per-process state (its caches): see
	// dataModel.
	procOnce sync.Once
	proc     *model.Process

	// scriptLimit is CONFIG SET busy-reply-threshold's (nil until set).
	scriptLimit atomic.Pointer[time.Duration]
	// luaMemLimit is CONFIG SET lua-memory-limit's (nil until set).
	luaMemLimit atomic.Pointer[int64]
	// Coord is the process's share of the coordination commands: their
	// counters and wakeups.
	Coord coord.Service
	// PubSub is the process's publish/subscribe (pubsub.go); made on first
	// use when nil. The bus plugs the other instances in with its SetPeers.
	PubSub  *pubsub.Hub
	hubOnce sync.Once
	// Events is the process's key events (notify.go): keyspace
	// notifications, and the consumers of every write (client tracking,
	// watch). Made with the hub on first use when the server was built
	// without one.
	Events *events.Dispatcher

	// clocked is Store as a model.Clocked (nil if it is not one),
	// found once (clock.go).
	clockOnce sync.Once
	clocked   model.Clocked

	// tracker is the client tracking table (tracking.go).
	tracker tracker

	// OnShutdown, when set, stops this instance as SIGTERM does: SHUTDOWN
	// calls it (server.go), and replies nothing.
	OnShutdown func()
	// slowlog, latency and monitors are SLOWLOG's, LATENCY's and
	// MONITOR's (slowlog.go, latency.go, monitor.go).
	slowlog  slowlog
	latency  latencyMonitor
	monitors monitors
}

// DefaultProtoMaxBulkLen is Redis's default proto-max-bulk-len (512 MB).
const DefaultProtoMaxBulkLen = 512 * 1024 * 1024

// RequirePass returns the password clients must AUTH with, "" for none:
// Config.RequirePass unless CONFIG SET changed it.
func (s *Server) RequirePass() string {
	if p := s.requirePass.Load(); p != nil {
		return *p
	}
	return s.Config.RequirePass
}

// SetRequirePass changes the password for the following AUTH and HELLO
// commands. Like Redis, connections that are already authenticated stay so.
func (s *Server) SetRequirePass(p string) { s.requirePass.Store(&p) }

// ProtoMaxBulkLen returns the largest bulk string a client may send.
func (s *Server) ProtoMaxBulkLen() int64 {
	if n := s.maxBulkLen.Load(); n > 0 {
		return n
	}
	if s.Config.ProtoMaxBulkLen > 0 {
		return s.Config.ProtoMaxBulkLen
	}
	return DefaultProtoMaxBulkLen
}

// SetProtoMaxBulkLen changes the bulk length limit for the following requests.
func (s *Server) SetProtoMaxBulkLen(n int64) { s.maxBulkLen.Store(n) }

// DefaultClientQueryBufferLimit is Redis's default
// client-query-buffer-limit (1 GB).
const DefaultClientQueryBufferLimit = 1024 * 1024 * 1024

// ClientQueryBufferLimit returns how many bytes a client may send while a
// command of its waits (BLPOP ...): they wait to run after it, and a client
// past the limit is closed, as Redis closes one whose query buffer
// outgrows it. Otherwise requests run as they are read, under the
// parser's limits only.
func (s *Server) ClientQueryBufferLimit() int64 {
	if n := s.maxQueryBuf.Load(); n > 0 {
		return n
	}
	return DefaultClientQueryBufferLimit
}

// SetClientQueryBufferLimit changes the limit for the following reads.
func (s *Server) SetClientQueryBufferLimit(n int64) { s.maxQueryBuf.Store(n) }

// DefaultMaxClients is Redis's default maxclients.
const DefaultMaxClients = 10000

// MaxClients returns how many connections may be open at once.
func (s *Server) MaxClients() int64 {
	if n := s.maxClients.Load(); n > 0 {
		return n
	}
	if s.Config.MaxClients > 0 {
		return s.Config.MaxClients
	}
	return DefaultMaxClients
}

// SetMaxClients changes the connection limit for the following connections.
func (s *Server) SetMaxClients(n int64) { s.maxClients.Store(n) }

// ProtectedMode reports whether connections from outside the loopback
// interface are refused while no password is set (Redis's protected-mode).
func (s *Server) ProtectedMode() bool {
	if off := s.unprotected.Load(); off != nil {
		return !*off
	}
	return !s.Config.Unprotected
}

// SetProtectedMode turns protected mode on or off for the following connections.
func (s *Server) SetProtectedMode(on bool) {
	off := !on
	s.unprotected.Store(&off)
}

// Refuses reports whether a new connection from remote must be refused by
// protected mode: it is on, no password is set, and remote is not loopback.
func (s *Server) Refuses(remote net.Addr) bool {
	if !s.ProtectedMode() || s.RequirePass() != "" {
		return false
	}
	if tcp, ok := remote.(*net.TCPAddr); ok {
		return !tcp.IP.IsLoopback()
	}
	return false // unix sockets and the like are local
}

// AuthRequired reports whether connection cn must authenticate before running
// commands that are not flagged no_auth.
func (s *Server) AuthRequired(cn *Conn) bool {
	return !cn.Authed && s.RequirePass() != ""
}

// Resolve finds the command args names, descending into a container
// command's subcommand, and checks its arity. On failure it returns the
// command (nil when unknown) and Redis's error reply for it; a rejected
// command is counted in its statistics by the caller.
func (t *Table) Resolve(args [][]byte) (cmd *Command, errMsg string) {
	if len(args) == 0 {
		return nil, ErrUnknownCommand("", nil)
	}
	cmd = lookup(t, args[0])
	if cmd == nil {
		return nil, ErrUnknownCommand(string(args[0]), args[1:])
	}
	if len(cmd.Subcommands) > 0 && len(args) >= 2 {
		sub := cmd.Subcommand(args[1])
		if sub == nil {
			return nil, ErrUnknownSubcommand(cmd.Name, string(args[1]))
		}
		cmd = sub
	}
	if !cmd.ArityOK(len(args)) {
		return cmd, ErrWrongArgs(cmd.Name)
	}
	return cmd, ""
}

// Subcommand finds a container command's subcommand by its name alone
// ("list" for "client|list"), case-insensitively.
func (c *Command) Subcommand(name []byte) *Command {
	for _, sub := range c.Subcommands {
		short := sub.Name[strings.IndexByte(sub.Name, '|')+1:]
		if strings.EqualFold(short, string(name)) {
			return sub
		}
	}
	return nil
}

// Run executes a resolved command on c and records it in the command
// statistics and the OnCommand hook; on a connection in MULTI it queues
// the command instead (replying +QUEUED), unless it is one of those that
// act on the transaction itself. The label for store accounting must
// already be on c's context (model.Labeled).
func (s *Server) Run(c *Ctx, cmd *Command) {
	if c.Conn != nil && c.Conn.subscribed && c.Conn.Proto == 2 && !cmd.subscribedOK && !c.InTx && !c.InScript {
		c.W.Error(c.Conn.Rejected(cmd, "ERR Can't execute '"+cmd.Name+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"))
		return
	}
	// While nobody monitors, this load is all MONITOR costs a command.
	monitored := s.monitors.n.Load() != 0
	if monitored && s.monitors.refusedToMonitor(c, cmd) {
		c.W.Error(c.Conn.Rejected(cmd, msgMonitorKeyspace))
		return
	}
	if c.Conn != nil && c.Conn.tx.multi && c.queue(cmd) {
		return
	}
	if monitored {
		s.feedMonitors(c, cmd, monitorBefore)
	}
	errs, counting := c.W.(errorCounter)
	before := 0
	if counting {
		before = errs.Errors()
	}
	if c.Conn != nil && c.Conn.tally.name != cmd.Name {
		// The calls and requests before this one count before it runs
		// (INFO, CONFIG RESETSTAT see them).
		c.Conn.FlushStats()
	}
	var start time.Time
	if s.Clock == nil {
		// On the real clock the local reading the command's own derives
		// from (taken as it was dispatched, or the end of the command
		// before it) is its start: one clock read fewer per command. Not
		// the command's reading itself, which the store's offset moved:
		// time.Since would count the offset in the command's duration.
		c.Now()
		start = c.local
	}
	if start.IsZero() {
		start = time.Now()
	}
	c.notes.clear()
	if c.Conn != nil {
		s.trackBefore(c, cmd)
		defer s.trackAfter(c, cmd)
	}
	cmd.Run(c)
	// A full reading, derived from the start by one read of the monotonic
	// clock (time.Now reads the wall clock too).
	end := start.Add(time.Since(start))
	d := end.Sub(start)
	if s.Clock == nil {
		c.end = end
	}
	failed := counting && errs.Errors() > before
	if monitored {
		s.feedMonitors(c, cmd, monitorAfter)
	}
	s.slowlog.record(c, cmd, d)
	s.latency.record(c, cmd, d)
	switch {
	case s.Commands == nil:
	case c.Conn != nil:
		c.Conn.tally.record(s.Commands, cmd.Name, d, failed)
	default:
		s.Commands.Record(cmd.Name, d, failed)
	}
	if s.OnCommand != nil {
		s.OnCommand(cmd.Name, d, failed)
	}
}

// errorCounter is implemented by writers that count the error replies they
// wrote, so Run can tell a failed call (INFO commandstats failed_calls).
type errorCounter interface {
	Errors() int
}

// CommandStats counts calls per command, as INFO commandstats reports them.
// It is safe for concurrent use; the hot path takes no lock once a command
// has been seen.
type CommandStats struct {
	rows sync.Map // name -> *cmdRow
	ops  rateSampler
}

type cmdRow struct {
	calls, nanos, rejected, failed atomic.Int64
	// latency counts the calls per level of LATENCY HISTOGRAM
	// (latencyBucket).
	latency [latencyBuckets]atomic.Int64
}

// CommandStat is one command's totals.
type CommandStat struct {
	Name                          string
	Calls, Usec, Rejected, Failed int64
	// Latency counts the calls per level of LATENCY HISTOGRAM.
	Latency [latencyBuckets]int64
}

// NewCommandStats returns empty statistics.
func NewCommandStats() *CommandStats { return &CommandStats{} }

func (cs *CommandStats) row(name string) *cmdRow {
	if r, ok := cs.rows.Load(name); ok {
		return r.(*cmdRow)
	}
	r, _ := cs.rows.LoadOrStore(name, &cmdRow{})
	return r.(*cmdRow)
}

// Record counts one executed call of name that took d.
func (cs *CommandStats) Record(name string, d time.Duration, failed bool) {
	r := cs.row(name)
	r.calls.Add(1)
	r.nanos.Add(int64(d))
	r.latency[latencyBucket(int64(d))].Add(1)
	if failed {
		r.failed.Add(1)
	}
	cs.ops.total.Add(1)
}

// commandTally is a connection's run of calls of one command not yet
// added to the shared statistics. Adding every call as it ended would be
// four atomic adds per call on counters every core shares; the connection
// adds a run at once when the command changes and before it
// writes replies (Conn.FlushStats), so any call whose reply a client has
// seen is counted, as INFO from any connection shows it.
type commandTally struct {
	stats                *CommandStats
	name                 string
	row                  *cmdRow
	calls, nanos, failed int64
	latency              [latencyBuckets]int64
}

func (t *commandTally) record(cs *CommandStats, name string, d time.Duration, failed bool) {
	if t.row == nil || t.stats != cs || t.name != name {
		t.flush()
		t.stats, t.name, t.row = cs, name, cs.row(name)
	}
	t.calls++
	t.nanos += int64(d)
	t.latency[latencyBucket(int64(d))]++
	if failed {
		t.failed++
	}
}

func (t *commandTally) flush() {
	if t.calls == 0 {
		return
	}
	t.row.calls.Add(t.calls)
	t.row.nanos.Add(t.nanos)
	if t.failed != 0 {
		t.row.failed.Add(t.failed)
	}
	for k, n := range t.latency {
		if n != 0 {
			t.row.latency[k].Add(n)
			t.latency[k] = 0
		}
	}
	t.stats.ops.total.Add(t.calls)
	t.calls, t.nanos, t.failed = 0, 0, 0
}

// Reject counts one call of name refused before it ran (arity, NOAUTH).
func (cs *CommandStats) Reject(name string) {
	cs.row(name).rejected.Add(1)
}

// Snapshot returns every command that was called, rejected or failed, by name.
func (cs *CommandStats) Snapshot() []CommandStat {
	var out []CommandStat
	cs.rows.Range(func(k, v any) bool {
		r := v.(*cmdRow)
		st := CommandStat{
			Name:     k.(string),
			Calls:    r.calls.Load(),
			Usec:     r.nanos.Load() / int64(time.Microsecond),
			Rejected: r.rejected.Load(),
			Failed:   r.failed.Load(),
		}
		for k := range r.latency {
			st.Latency[k] = r.latency[k].Load()
		}
		if st.Calls != 0 || st.Rejected != 0 || st.Failed != 0 {
			out = append(out, st)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Processed returns the number of commands executed since the start (or the
// last Reset): INFO's total_commands_processed.
func (cs *CommandStats) Processed() int64 { return cs.ops.total.Load() }

// OpsPerSec returns the recent command rate (INFO instantaneous_ops_per_sec).
func (cs *CommandStats) OpsPerSec() float64 { return cs.ops.rate() }

// Sample records the command rate; the server calls it every 100 ms, as
// Redis's serverCron samples its instantaneous metrics.
func (cs *CommandStats) Sample(now time.Time) { cs.ops.sample(now) }

// Reset zeroes every counter (CONFIG RESETSTAT).
func (cs *CommandStats) Reset() {
	cs.rows.Range(func(_, v any) bool {
		r := v.(*cmdRow)
		r.calls.Store(0)
		r.nanos.Store(0)
		r.rejected.Store(0)
		r.failed.Store(0)
		for k := range r.latency {
			r.latency[k].Store(0)
		}
		return true
	})
	cs.ops.reset()
}

// NetStats counts connections and bytes for INFO clients and stats.
type NetStats struct {
	// Connections is total_connections_received.
	Connections atomic.Int64
	// In and Out count bytes read from and written to clients.
	in, out rateSampler
	// ProtocolErrors counts connections closed for malformed requests.
	ProtocolErrors atomic.Int64
	// Rejected counts connections refused at maxclients.
	Rejected atomic.Int64
	// OutputLimitDisconnections counts subscribers closed for passing
	// client-output-buffer-limit pubsub (Redis 7.2's
	// client_output_buffer_limit_disconnections; 7.0 only logs them).
	OutputLimitDisconnections atomic.Int64
}

// AddIn counts n bytes read from a client.
func (n *NetStats) AddIn(b int) { n.in.total.Add(int64(b)) }

// AddOut counts n bytes written to a client.
func (n *NetStats) AddOut(b int) { n.out.total.Add(int64(b)) }

// In returns the total bytes read from clients.
func (n *NetStats) In() int64 { return n.in.total.Load() }

// Out returns the total bytes written to clients.
func (n *NetStats) Out() int64 { return n.out.total.Load() }

// InKbps is the recent input rate in KB/s.
func (n *NetStats) InKbps() float64 { return n.in.rate() / 1024 }

// OutKbps is the recent output rate in KB/s.
func (n *NetStats) OutKbps() float64 { return n.out.rate() / 1024 }

// Sample records the traffic rates (every 100 ms, like CommandStats.Sample).
func (n *NetStats) Sample(now time.Time) {
	n.in.sample(now)
	n.out.sample(now)
}

// Reset zeroes the counters (CONFIG RESETSTAT).
func (n *NetStats) Reset() {
	n.Connections.Store(0)
	n.ProtocolErrors.Store(0)
	n.Rejected.Store(0)
	n.in.reset()
	n.out.reset()
}

// rateSampler turns a growing total into a recent per-second rate: the mean
// of the last 16 samples, as Redis computes its instantaneous_* metrics.
type rateSampler struct {
	total atomic.Int64

	mu        sync.Mutex
	lastTime  time.Time
	lastTotal int64
	samples   [16]float64
	idx       int
}

func (r *rateSampler) sample(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.total.Load()
	if !r.lastTime.IsZero() {
		if dt := now.Sub(r.lastTime).Seconds(); dt > 0 {
			r.samples[r.idx] = float64(t-r.lastTotal) / dt
			r.idx = (r.idx + 1) % len(r.samples)
		}
	}
	r.lastTime, r.lastTotal = now, t
}

func (r *rateSampler) rate() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum float64
	for _, s := range r.samples {
		sum += s
	}
	return sum / float64(len(r.samples))
}

func (r *rateSampler) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total.Store(0)
	r.lastTime, r.lastTotal = time.Time{}, 0
	r.samples = [16]float64{}
	r.idx = 0
}

// Config is the part of the process configuration commands can see.
type Config struct {
	Addr        string
	RequirePass string
	StoreName   string // "memory" or "dynamodb"
	TableName   string
	Region      string
	Endpoint    string
	// ProtoMaxBulkLen is the largest bulk string accepted, in bytes.
	ProtoMaxBulkLen int64
	// MaxClients caps open connections (0: DefaultMaxClients, as Redis).
	MaxClients int64
	// Unprotected turns Redis's protected mode off (it is on by default, as
	// in Redis: without a password only loopback clients are accepted).
	Unprotected   bool
	RedamoVersion string
	// BlockingPoll is the longest pause between two store reads of a key
	// clients are blocked on (BLPOP and friends); 0 means
	// DefaultBlockingPoll.
	BlockingPoll time.Duration
}

// Clients is the registry of open connections, implemented by resp/.
type Clients interface {
	// List returns every open connection.
	List() []*Conn
	// Kill closes connection id; false if there is none.
	Kill(id int64) bool
}
