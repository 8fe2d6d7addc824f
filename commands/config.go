package commands

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// CONFIG: Redis 7.0.15's parameters, as clients and tools read and set
// them. The ones redamo acts on state what it does; the rest keep Redis's
// defaults, and redamo refuses to change them.

// cmdConfigRewrite: redamo is configured by flags and environment only.
func cmdConfigRewrite(c *Ctx) { c.W.Error(MsgNoConfigFile) }

// configParam is one of Redis 7.0.15's parameters. CONFIG GET reports
// get's value, or def when get is nil. set is nil for parameters redamo
// cannot change: CONFIG SET then accepts only the current value.
type configParam struct {
	// name, and alias (Redis's older name) when it has one.
	name, alias string
	def         string
	get         func(s *Server) string
	// check validates a new value ("" if fine, else the reason); set
	// applies a checked one. setCtx, for a setting that is the table's,
	// applies it through the store and may fail: CONFIG SET runs it
	// before any set, and its error is the reply.
	check  func(v string) string
	set    func(s *Server, v string)
	setCtx func(c *Ctx, v string) error
	flags  configFlags
}

type configFlags uint8

const (
	// cfgImmutable: Redis refuses to change it at run time.
	cfgImmutable configFlags = 1 << iota
	// cfgProtected: Redis refuses to change it unless enable-protected-configs.
	cfgProtected
	// cfgHidden: answers to its exact name, never to a pattern.
	cfgHidden
)

func (p configParam) hidden() configParam {
	p.flags |= cfgHidden
	return p
}

func (p *configParam) value(s *Server) string {
	if p.get != nil {
		return p.get(s)
	}
	return p.def
}

// configParams are Redis 7.0.15's parameters with the values a
// redis-server without a configuration file reports, except where redamo
// does otherwise: it takes no snapshots (save), listens where it was told
// (bind, port), keeps its limits and password per process, and bounds its
// inline layout by the encoding parameters (encoding.go). The others
// describe machinery redamo does not have (AOF, replication, eviction,
// TLS set by CONFIG, ...): their defaults turn most of it off or leave it
// inert (no maxmemory, so no eviction), and CONFIG SET may not change them.
var configParams = []configParam{
	{name: "acl-pubsub-default", def: "resetchannels"},
	{name: "aclfile", def: "", flags: cfgImmutable},
	{name: "acllog-max-len", def: "128"},
	{name: "active-defrag-cycle-max", def: "25"},
	{name: "active-defrag-cycle-min", def: "1"},
	{name: "active-defrag-ignore-bytes", def: "104857600"},
	{name: "active-defrag-max-scan-fields", def: "1000"},
	{name: "active-defrag-threshold-lower", def: "10"},
	{name: "active-defrag-threshold-upper", def: "100"},
	{name: "active-expire-effort", def: "1"},
	{name: "activedefrag", def: "no"},
	{name: "activerehashing", def: "yes"},
	{name: "always-show-logo", def: "no", flags: cfgImmutable},
	{name: "aof-disable-auto-gc", def: "no"},
	{name: "aof-load-truncated", def: "yes"},
	{name: "aof-rewrite-incremental-fsync", def: "yes"},
	{name: "aof-timestamp-enabled", def: "no"},
	{name: "aof-use-rdb-preamble", def: "yes"},
	{name: "aof_rewrite_cpulist", def: "", flags: cfgImmutable},
	{name: "appenddirname", def: "appendonlydir", flags: cfgImmutable},
	{name: "appendfilename", def: "appendonly.aof", flags: cfgImmutable},
	{name: "appendfsync", def: "everysec"},
	{name: "appendonly", def: "no"},
	{name: "auto-aof-rewrite-min-size", def: "67108864"},
	{name: "auto-aof-rewrite-percentage", def: "100"},
	{name: "bgsave_cpulist", def: "", flags: cfgImmutable},
	{name: "bind", get: func(s *Server) string { h, _ := splitHostPort(s.Config.Addr); return h }},
	{name: "bind-source-addr", def: ""},
	{name: "bio_cpulist", def: "", flags: cfgImmutable},
	{name: "busy-reply-threshold", alias: "lua-time-limit", get: func(s *Server) string { return strconv.FormatInt(s.ScriptTimeLimit().Milliseconds(), 10) },
		check: checkInt(0, math.MaxInt64/int64(time.Millisecond)), set: func(s *Server, v string) {
			n, _ := model.String2ll([]byte(v))
			s.SetScriptTimeLimit(time.Duration(n) * time.Millisecond)
		}},
	{name: "client-output-buffer-limit", get: outputLimitsValue, check: checkOutputLimits, set: setOutputLimits},
	{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.ClientQueryBufferLimit(), 10) },
		check: checkMemory(protoMaxBulkLenMin, math.MaxInt64), set: func(s *Server, v string) { n, _ := memToBytes(v); s.SetClientQueryBufferLimit(int64(n)) }},
	{name: "cluster-allow-pubsubshard-when-down", def: "yes"},
	{name: "cluster-allow-reads-when-down", def: "no"},
	{name: "cluster-allow-replica-migration", def: "yes"},
	{name: "cluster-announce-bus-port", def: "0"},
	{name: "cluster-announce-hostname", def: ""},
	{name: "cluster-announce-ip", def: ""},
	{name: "cluster-announce-port", def: "0"},
	{name: "cluster-announce-tls-port", def: "0"},
	{name: "cluster-config-file", def: "nodes.conf", flags: cfgImmutable},
	{name: "cluster-enabled", def: "no", flags: cfgImmutable},
	{name: "cluster-link-sendbuf-limit", def: "0"},
	{name: "cluster-migration-barrier", def: "1"},
	{name: "cluster-node-timeout", def: "15000"},
	{name: "cluster-port", def: "0", flags: cfgImmutable},
	{name: "cluster-preferred-endpoint-type", def: "ip"},
	{name: "cluster-replica-no-failover", alias: "cluster-slave-no-failover", def: "no"},
	{name: "cluster-replica-validity-factor", alias: "cluster-slave-validity-factor", def: "10"},
	{name: "cluster-require-full-coverage", def: "yes"},
	{name: "crash-log-enabled", def: "yes"},
	{name: "crash-memcheck-enabled", def: "yes"},
	{name: "daemonize", def: "no", flags: cfgImmutable},
	{name: "databases", def: strconv.Itoa(NumDBs), flags: cfgImmutable},
	{name: "dbfilename", def: "dump.rdb", flags: cfgProtected},
	{name: "dir", get: func(*Server) string { d, _ := os.Getwd(); return d }, flags: cfgProtected},
	{name: "disable-thp", def: "yes", flags: cfgImmutable},
	{name: "dynamic-hz", def: "yes"},
	{name: "enable-debug-command", def: "no", flags: cfgImmutable},
	{name: "enable-module-command", def: "no", flags: cfgImmutable},
	{name: "enable-protected-configs", def: "no", flags: cfgImmutable},
	encodingParam("hash-max-listpack-entries", "hash-max-ziplist-entries", func(p *encodingParams) *int64 { return &p.hashEntries }, sizeParam),
	encodingParam("hash-max-listpack-value", "hash-max-ziplist-value", func(p *encodingParams) *int64 { return &p.hashValue }, memSizeParam),
	{name: "hll-sparse-max-bytes", get: func(s *Server) string { return strconv.FormatInt(s.HLLSparseMaxBytes(), 10) },
		check: checkMemory(0, math.MaxInt64), set: func(s *Server, v string) { n, _ := memToBytes(v); s.SetHLLSparseMaxBytes(int64(n)) }},
	{name: "hz", def: "10"},
	{name: "ignore-warnings", def: ""},
	{name: "io-threads", def: "1", flags: cfgImmutable},
	{name: "io-threads-do-reads", def: "no", flags: cfgImmutable},
	{name: "jemalloc-bg-thread", def: "yes"},
	{name: "key-load-delay", def: "0", flags: cfgHidden},
	latencyThresholdParam,
	{name: "latency-tracking", def: "yes"},
	{name: "latency-tracking-info-percentiles", def: "50 99 99.9"},
	{name: "lazyfree-lazy-eviction", def: "no"},
	{name: "lazyfree-lazy-expire", def: "no"},
	{name: "lazyfree-lazy-server-del", def: "no"},
	{name: "lazyfree-lazy-user-del", def: "no"},
	{name: "lazyfree-lazy-user-flush", def: "no"},
	{name: "lfu-decay-time", def: "1"},
	{name: "lfu-log-factor", def: "10"},
	{name: "list-compress-depth", def: "0"},
	encodingParam("list-max-listpack-size", "list-max-ziplist-size", func(p *encodingParams) *int64 { return &p.listSize }, intParam),
	{name: "loading-process-events-interval-bytes", def: "2097152", flags: cfgHidden},
	{name: "logfile", def: "", flags: cfgImmutable},
	{name: "loglevel", def: "notice"},
	{name: "lua-enable-deprecated-api", def: "no", flags: cfgImmutable | cfgHidden},
	// redamo's own (luamem.go): hidden, so CONFIG GET * answers as Redis.
	{name: "lua-memory-limit", flags: cfgHidden, get: func(s *Server) string { return strconv.FormatInt(s.LuaMemoryLimit(), 10) },
		check: checkMemory(0, math.MaxInt64), set: func(s *Server, v string) { n, _ := memToBytes(v); s.SetLuaMemoryLimit(int64(n)) }},
	{name: "masterauth", def: ""},
	{name: "masteruser", def: ""},
	{name: "maxclients", get: func(s *Server) string { return strconv.FormatInt(s.MaxClients(), 10) },
		check: checkInt(1, math.MaxUint32), set: func(s *Server, v string) { n, _ := model.String2ll([]byte(v)); s.SetMaxClients(n) }},
	{name: "maxmemory", def: "0"},
	{name: "maxmemory-clients", def: "0"},
	{name: "maxmemory-eviction-tenacity", def: "10"},
	{name: "maxmemory-policy", def: "noeviction"},
	{name: "maxmemory-samples", def: "5"},
	{name: "min-replicas-max-lag", alias: "min-slaves-max-lag", def: "10"},
	{name: "min-replicas-to-write", alias: "min-slaves-to-write", def: "0"},
	{name: "no-appendfsync-on-rewrite", def: "no"},
	{name: "notify-keyspace-events", get: func(s *Server) string { return s.KeyEvents().Flags().String() },
		check: checkKeyspaceEvents, setCtx: setKeyspaceEvents},
	{name: "oom-score-adj", def: "no"},
	{name: "oom-score-adj-values", def: "0 200 800"},
	{name: "pidfile", def: "", flags: cfgImmutable},
	{name: "port", get: func(s *Server) string { _, p := splitHostPort(s.Config.Addr); return p }},
	{name: "proc-title-template", def: "{title} {listen-addr} {server-mode}"},
	{name: "propagation-error-behavior", def: "ignore"},
	{name: "protected-mode", get: func(s *Server) string { return yesNo(s.ProtectedMode()) },
		check: checkYesNo, set: func(s *Server, v string) { s.SetProtectedMode(strings.EqualFold(v, "yes")) }},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.ProtoMaxBulkLen(), 10) },
		check: checkMemory(protoMaxBulkLenMin, math.MaxInt64), set: func(s *Server, v string) { n, _ := memToBytes(v); s.SetProtoMaxBulkLen(int64(n)) }},
	{name: "rdb-del-sync-files", def: "no"},
	{name: "rdb-key-save-delay", def: "0", flags: cfgHidden},
	{name: "rdb-save-incremental-fsync", def: "yes"},
	{name: "rdbchecksum", def: "yes", flags: cfgImmutable},
	{name: "rdbcompression", def: "yes"},
	{name: "repl-backlog-size", def: "1048576"},
	{name: "repl-backlog-ttl", def: "3600"},
	{name: "repl-disable-tcp-nodelay", def: "no"},
	{name: "repl-diskless-load", def: "disabled"},
	{name: "repl-diskless-sync", def: "yes"},
	{name: "repl-diskless-sync-delay", def: "5"},
	{name: "repl-diskless-sync-max-replicas", def: "0"},
	{name: "repl-ping-replica-period", alias: "repl-ping-slave-period", def: "10"},
	{name: "repl-timeout", def: "60"},
	{name: "replica-announce-ip", alias: "slave-announce-ip", def: ""},
	{name: "replica-announce-port", alias: "slave-announce-port", def: "0"},
	{name: "replica-announced", def: "yes"},
	{name: "replica-ignore-disk-write-errors", def: "no"},
	{name: "replica-ignore-maxmemory", alias: "slave-ignore-maxmemory", def: "yes"},
	{name: "replica-lazy-flush", alias: "slave-lazy-flush", def: "no"},
	{name: "replica-priority", alias: "slave-priority", def: "100"},
	{name: "replica-read-only", alias: "slave-read-only", def: "yes"},
	{name: "replica-serve-stale-data", alias: "slave-serve-stale-data", def: "yes"},
	{name: "replicaof", alias: "slaveof", def: "", flags: cfgImmutable},
	{name: "requirepass", get: func(s *Server) string { return s.RequirePass() },
		set: func(s *Server, v string) { s.SetRequirePass(v) }},
	{name: "sanitize-dump-payload", def: "no"},
	{name: "save", def: ""}, // no snapshots: the data is in the store
	{name: "server_cpulist", def: "", flags: cfgImmutable},
	encodingParam("set-max-intset-entries", "", func(p *encodingParams) *int64 { return &p.setIntsetEntries }, sizeParam),
	encodingParam("set-max-listpack-entries", "", func(p *encodingParams) *int64 { return &p.setEntries }, sizeParam).hidden(),
	encodingParam("set-max-listpack-value", "", func(p *encodingParams) *int64 { return &p.setValue }, memSizeParam).hidden(),
	{name: "set-proc-title", def: "yes", flags: cfgImmutable},
	{name: "shutdown-on-sigint", def: "default"},
	{name: "shutdown-on-sigterm", def: "default"},
	{name: "shutdown-timeout", def: "10"},
	slowlogSlowerThanParam,
	slowlogMaxLenParam,
	{name: "socket-mark-id", def: "0", flags: cfgImmutable},
	{name: "stop-writes-on-bgsave-error", def: "yes"},
	encodingParam("stream-node-max-bytes", "", func(p *encodingParams) *int64 { return &p.streamNodeBytes }, memSizeParam),
	encodingParam("stream-node-max-entries", "", func(p *encodingParams) *int64 { return &p.streamNodeEntries }, sizeParam),
	{name: "supervised", def: "no", flags: cfgImmutable},
	{name: "syslog-enabled", def: "no", flags: cfgImmutable},
	{name: "syslog-facility", def: "local0", flags: cfgImmutable},
	{name: "syslog-ident", def: "redis", flags: cfgImmutable},
	{name: "tcp-backlog", def: "511", flags: cfgImmutable},
	{name: "tcp-keepalive", def: "300"},
	{name: "timeout", def: "0"},
	{name: "tls-auth-clients", def: "yes"},
	{name: "tls-ca-cert-dir", def: ""},
	{name: "tls-ca-cert-file", def: ""},
	{name: "tls-cert-file", def: ""},
	{name: "tls-ciphers", def: ""},
	{name: "tls-ciphersuites", def: ""},
	{name: "tls-client-cert-file", def: ""},
	{name: "tls-client-key-file", def: ""},
	{name: "tls-client-key-file-pass", def: ""},
	{name: "tls-cluster", def: "no"},
	{name: "tls-dh-params-file", def: ""},
	{name: "tls-key-file", def: ""},
	{name: "tls-key-file-pass", def: ""},
	{name: "tls-port", def: "0"},
	{name: "tls-prefer-server-ciphers", def: "no"},
	{name: "tls-protocols", def: ""},
	{name: "tls-replication", def: "no"},
	{name: "tls-session-cache-size", def: "20480"},
	{name: "tls-session-cache-timeout", def: "300"},
	{name: "tls-session-caching", def: "yes"},
	trackingMaxKeysParam,
	{name: "unixsocket", def: "", flags: cfgImmutable},
	{name: "unixsocketperm", def: "0", flags: cfgImmutable},
	{name: "use-exit-on-panic", def: "no", flags: cfgHidden},
	{name: "watchdog-period", def: "0", flags: cfgHidden},
	encodingParam("zset-max-listpack-entries", "zset-max-ziplist-entries", func(p *encodingParams) *int64 { return &p.zsetEntries }, sizeParam),
	encodingParam("zset-max-listpack-value", "zset-max-ziplist-value", func(p *encodingParams) *int64 { return &p.zsetValue }, memSizeParam),
}

// configIndex finds a parameter by its lower-case name or alias.
var configIndex = func() map[string]*configParam {
	idx := make(map[string]*configParam, 2*len(configParams))
	for i := range configParams {
		p := &configParams[i]
		for _, n := range []string{p.name, p.alias} {
			if n == "" {
				continue
			}
			if idx[n] != nil {
				panic("commands: CONFIG parameter listed twice: " + n)
			}
			idx[n] = p
		}
	}
	return idx
}()

func lookupConfig(name string) *configParam {
	return configIndex[strings.ToLower(name)]
}

// cmdConfigGet answers as Redis 7.0 does: a name is answered under the
// spelling asked for, a pattern matches names and aliases alike (each
// answered under its own name), and a name asked for twice, in any case,
// is answered once.
func cmdConfigGet(c *Ctx) {
	type kv struct{ k, v string }
	var out []kv
	seen := map[string]bool{}
	add := func(name string, p *configParam) {
		if lower := strings.ToLower(name); !seen[lower] {
			seen[lower] = true
			out = append(out, kv{name, p.value(c.Srv)})
		}
	}
	for _, a := range c.Args[2:] {
		name := string(a)
		if !strings.ContainsAny(name, "[*?") {
			if p := lookupConfig(name); p != nil {
				add(name, p)
			}
			continue
		}
		pat := []byte(strings.ToLower(name))
		for i := range configParams {
			p := &configParams[i]
			if p.flags&cfgHidden != 0 {
				continue
			}
			for _, n := range []string{p.name, p.alias} {
				if n != "" && globMatch(pat, []byte(n)) {
					add(n, p)
				}
			}
		}
	}
	c.W.Map(len(out))
	for _, e := range out {
		c.W.BulkString(e.k)
		c.W.BulkString(e.v)
	}
}

// cmdConfigSet checks every name first, then every value, then applies
// them all, so a failed CONFIG SET changes nothing (Redis restores the old
// values instead); the first error found is the one reported, as in Redis.
func cmdConfigSet(c *Ctx) {
	if len(c.Args)%2 != 0 {
		c.W.Error(MsgSyntax)
		return
	}
	type change struct {
		name []byte
		p    *configParam
		val  string
	}
	var changes []change
	failed := func(arg []byte, why string) {
		c.W.Error(fmt.Sprintf(MsgConfigSetFailed, arg, why))
	}
	for i := 2; i < len(c.Args); i += 2 {
		name, val := c.Args[i], string(c.Args[i+1])
		p := lookupConfig(string(name))
		switch {
		case p == nil:
			c.W.Error(fmt.Sprintf(MsgConfigSetUnknown, name))
			return
		case p.flags&cfgImmutable != 0:
			failed(name, MsgConfigWhyImmutable)
			return
		case p.flags&cfgProtected != 0:
			failed(name, MsgConfigWhyProtected)
			return
		}
		// A name and its alias are two parameters to Redis: the later wins.
		for _, ch := range changes {
			if strings.EqualFold(string(ch.name), string(name)) {
				failed(name, MsgConfigWhyDuplicate)
				return
			}
		}
		changes = append(changes, change{name, p, val})
	}
	for _, ch := range changes {
		why := ""
		switch {
		case ch.p.check != nil:
			why = ch.p.check(ch.val)
		case ch.p.set == nil && ch.p.setCtx == nil && !strings.EqualFold(ch.val, ch.p.value(c.Srv)):
			why = MsgConfigWhyUnsupported
		}
		if why != "" {
			failed(ch.name, why)
			return
		}
	}
	for _, ch := range changes {
		if ch.p.setCtx != nil {
			if err := ch.p.setCtx(c, ch.val); err != nil {
				c.Fail(err)
				return
			}
		}
	}
	for _, ch := range changes {
		if ch.p.set != nil {
			ch.p.set(c.Srv, ch.val)
		}
	}
	c.W.Simple("OK")
}

// protoMaxBulkLenMin is Redis's lower bound for proto-max-bulk-len, and
// for client-query-buffer-limit.
const protoMaxBulkLenMin = 1024 * 1024

// numericParam validates and parses a numeric parameter as Redis does.
type numericParam struct {
	check func(string) string
	parse func(string) int64
}

// The kinds of Redis's encoding parameters: a size_t count, a size_t
// memory value, an int.
var (
	sizeParam    = numericParam{checkInt(0, math.MaxInt64), parseInt}
	memSizeParam = numericParam{checkMemory(0, math.MaxInt64), func(v string) int64 { n, _ := memToBytes(v); return int64(n) }}
	intParam     = numericParam{checkInt(math.MinInt32, math.MaxInt32), parseInt}
)

func parseInt(v string) int64 {
	n, _ := model.String2ll([]byte(v))
	return n
}

// checkInt accepts an integer parameter's values within [lo, hi], with
// Redis's messages.
func checkInt(lo, hi int64) func(string) string {
	return func(v string) string {
		n, ok := model.String2ll([]byte(v))
		if !ok {
			return MsgConfigWhyNotInt
		}
		if n < lo || n > hi {
			return fmt.Sprintf(MsgConfigWhyRange, lo, hi)
		}
		return ""
	}
}

// checkMemory accepts a memory parameter's values within [lo, hi], with
// Redis's messages.
func checkMemory(lo, hi uint64) func(string) string {
	return func(v string) string {
		n, ok := memToBytes(v)
		if !ok {
			return MsgConfigWhyNotMemory
		}
		if n < lo || n > hi {
			return fmt.Sprintf(MsgConfigWhyRange, lo, hi)
		}
		return ""
	}
}

func checkKeyspaceEvents(v string) string {
	if _, ok := events.ParseFlags(v); !ok {
		return MsgConfigWhyKeyspaceEvents
	}
	return ""
}

// setKeyspaceEvents makes v the table's notify-keyspace-events, as one
// Redis server's is for all its clients: stored in the table (one write,
// so that every instance reads it at start and at its heartbeats), then
// applied here and by the connected instances before CONFIG SET replies.
func setKeyspaceEvents(c *Ctx, v string) error {
	flags, _ := events.ParseFlags(v)
	if err := model.SetKeyspaceEvents(c, flags.String()); err != nil {
		return err
	}
	return c.Srv.KeyEvents().SetFlags(c, flags)
}

// checkYesNo accepts a boolean parameter's values as Redis does.
func checkYesNo(v string) string {
	if strings.EqualFold(v, "yes") || strings.EqualFold(v, "no") {
		return ""
	}
	return MsgConfigWhyNotYesNo
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// memToBytes parses a memory value as Redis's memtoull does: digits with an
// optional b, k, kb, m, mb, g or gb suffix (k = 1000, kb = 1024); no
// digits at all is 0, and a number past 64 bits saturates (Redis's range
// check then refuses it).
func memToBytes(s string) (uint64, bool) {
	lower := strings.ToLower(s)
	units := []struct {
		suffix string
		mul    uint64
	}{{"kb", 1024}, {"mb", 1024 * 1024}, {"gb", 1024 * 1024 * 1024}, {"b", 1}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}}
	mul := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mul = strings.TrimSuffix(lower, u.suffix), u.mul
			break
		}
	}
	if lower == "" {
		return 0, true
	}
	if strings.ContainsAny(lower, "+- ") {
		return 0, false
	}
	n, err := strconv.ParseUint(lower, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && n > math.MaxUint64/mul:
		return math.MaxUint64, true
	case err != nil:
		return 0, false
	}
	return n * mul, true
}

func cmdConfigResetstat(c *Ctx) {
	c.Srv.Commands.Reset()
	c.Srv.Net.Reset()
	if c.Srv.Stats != nil {
		c.Srv.Stats.Reset()
	}
	c.W.Simple("OK")
}

func cmdConfigHelp(c *Ctx) {
	writeHelp(c, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	)
}
