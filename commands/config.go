package commands

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// CONFIG: the parameters clients and tools read and set, each stating what
// redamo really does.

func configCommand() *Command {
	adminFlags := []string{FlagAdmin, FlagNoScript, FlagLoading, FlagStale}
	adminCats := []string{"admin", "slow", "dangerous"}
	return &Command{
		Name: "config", Arity: -2, Categories: []string{"slow"},
		Summary: "A container for server configuration commands", Since: "2.0.0", Group: "server",
		Complexity: "Depends on subcommand.",
		Subcommands: []*Command{
			{
				Name: "config|get", Arity: -3, Flags: adminFlags, Categories: adminCats,
				Summary: "Get the values of configuration parameters", Since: "2.0.0", Group: "server",
				Complexity: "O(N) when N is the number of configuration parameters provided",
				History:    [][2]string{{"7.0.0", "Added the ability to pass multiple pattern parameters in one call"}},
				Args: []Arg{{Name: "parameter", Type: "block", KeySpecIndex: -1, Flags: []string{"multiple"}, Args: []Arg{
					{Name: "parameter", Type: "string", KeySpecIndex: -1},
				}}},
				Run: cmdConfigGet,
			},
			{
				Name: "config|help", Arity: 2, Flags: []string{FlagLoading, FlagStale}, Categories: []string{"slow"},
				Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Group: "server",
				Complexity: "O(1)",
				Run:        cmdConfigHelp,
			},
			{
				Name: "config|rewrite", Arity: 2, Flags: adminFlags, Categories: adminCats,
				Summary: "Rewrite the configuration file with the in memory configuration", Since: "2.8.0",
				Group: "server", Complexity: "O(1)",
				// redamo is configured by flags and environment only.
				Run: func(c *Ctx) { c.W.Error(MsgNoConfigFile) },
			},
			{
				Name: "config|resetstat", Arity: 2, Flags: adminFlags, Categories: adminCats,
				Summary: "Reset the stats returned by INFO", Since: "2.0.0", Group: "server", Complexity: "O(1)",
				Run: cmdConfigResetstat,
			},
			{
				Name: "config|set", Arity: -4, Flags: adminFlags, Categories: adminCats,
				Tips:    []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
				Summary: "Set configuration parameters to the given values", Since: "2.0.0", Group: "server",
				Complexity: "O(N) when N is the number of configuration parameters provided",
				History:    [][2]string{{"7.0.0", "Added the ability to set multiple parameters in one call."}},
				Args: []Arg{{Name: "parameter_value", Type: "block", KeySpecIndex: -1, Flags: []string{"multiple"}, Args: []Arg{
					{Name: "parameter", Type: "string", KeySpecIndex: -1},
					{Name: "value", Type: "string", KeySpecIndex: -1},
				}}},
				Run: cmdConfigSet,
			},
		},
	}
}

// configParam is one parameter CONFIG GET reports. set is nil for
// parameters redamo cannot change; immutable marks those Redis itself
// refuses to change at run time.
type configParam struct {
	name string
	get  func(s *Server) string
	// check validates a new value ("" if fine, else the reason); set
	// applies a checked one.
	check     func(v string) string
	set       func(s *Server, v string)
	immutable bool
}

// configParams are the parameters clients and tools ask for. Each value
// states what redamo really does: no snapshots or AOF (the data is in the
// store), no memory limit or eviction, no idle timeout, no cluster.
var configParams = []configParam{
	{name: "appendonly", get: fixed("no")},
	{name: "bind", get: func(s *Server) string { h, _ := splitHostPort(s.Config.Addr); return h }, immutable: true},
	{name: "cluster-enabled", get: fixed("no"), immutable: true},
	{name: "databases", get: fixed(strconv.Itoa(NumDBs)), immutable: true},
	{name: "maxclients", get: func(s *Server) string { return strconv.FormatInt(s.MaxClients(), 10) },
		check: checkMaxClients, set: func(s *Server, v string) { n, _ := strconv.ParseInt(v, 10, 64); s.SetMaxClients(n) }},
	// No memory limit, so no eviction: the eviction tuning below is inert,
	// exactly as in a Redis whose maxmemory is 0.
	{name: "maxmemory", get: fixed("0")},
	{name: "maxmemory-clients", get: fixed("0")},
	{name: "maxmemory-eviction-tenacity", get: fixed("10")},
	{name: "maxmemory-policy", get: fixed("noeviction")},
	{name: "maxmemory-samples", get: fixed("5")},
	{name: "notify-keyspace-events", get: fixed("")},
	{name: "protected-mode", get: func(s *Server) string { return yesNo(s.ProtectedMode()) },
		check: checkYesNo, set: func(s *Server, v string) { s.SetProtectedMode(strings.EqualFold(v, "yes")) }},
	{name: "port", get: func(s *Server) string { _, p := splitHostPort(s.Config.Addr); return p }, immutable: true},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.ProtoMaxBulkLen(), 10) },
		check: checkProtoMaxBulkLen, set: func(s *Server, v string) { n, _ := memToBytes(v); s.SetProtoMaxBulkLen(int64(n)) }},
	{name: "requirepass", get: func(s *Server) string { return s.RequirePass() },
		set: func(s *Server, v string) { s.SetRequirePass(v) }},
	{name: "save", get: fixed("")},
	{name: "timeout", get: fixed("0")},
}

func fixed(v string) func(*Server) string { return func(*Server) string { return v } }

func lookupConfig(name string) *configParam {
	for i := range configParams {
		if strings.EqualFold(configParams[i].name, name) {
			return &configParams[i]
		}
	}
	return nil
}

func cmdConfigGet(c *Ctx) {
	type kv struct{ k, v string }
	var out []kv
	seen := map[string]bool{}
	for _, a := range c.Args[2:] {
		name := string(a)
		if !strings.ContainsAny(name, "[*?") {
			if p := lookupConfig(name); p != nil && !seen[p.name] {
				seen[p.name] = true
				out = append(out, kv{name, p.get(c.Srv)})
			}
			continue
		}
		pat := []byte(strings.ToLower(name))
		for i := range configParams {
			p := &configParams[i]
			if !seen[p.name] && globMatch(pat, []byte(p.name)) {
				seen[p.name] = true
				out = append(out, kv{p.name, p.get(c.Srv)})
			}
		}
	}
	c.W.Map(len(out))
	for _, e := range out {
		c.W.BulkString(e.k)
		c.W.BulkString(e.v)
	}
}

func cmdConfigSet(c *Ctx) {
	if len(c.Args)%2 != 0 {
		c.W.Error(MsgSyntax)
		return
	}
	type change struct {
		p   *configParam
		val string
	}
	var changes []change
	failed := func(arg []byte, why string) {
		c.W.Error(fmt.Sprintf(MsgConfigSetFailed, arg, why))
	}
	// Like Redis, the first bad name is the one reported.
	for i := 2; i < len(c.Args); i += 2 {
		name, val := c.Args[i], string(c.Args[i+1])
		p := lookupConfig(string(name))
		if p == nil {
			c.W.Error(fmt.Sprintf(MsgConfigSetUnknown, name))
			return
		}
		if p.immutable {
			failed(name, "can't set immutable config")
			return
		}
		for _, ch := range changes {
			if ch.p == p {
				failed(name, "duplicate parameter")
				return
			}
		}
		if p.set == nil && val != p.get(c.Srv) {
			failed(name, "redamo does not support changing it")
			return
		}
		changes = append(changes, change{p, val})
	}
	// Validate every value before applying any, so a failed CONFIG SET
	// changes nothing (Redis restores the old values instead).
	for i, ch := range changes {
		if ch.p.check != nil {
			if why := ch.p.check(ch.val); why != "" {
				failed(c.Args[2+2*i], why)
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

// protoMaxBulkLenMin is Redis's lower bound for proto-max-bulk-len.
const protoMaxBulkLenMin = 1024 * 1024

func checkProtoMaxBulkLen(v string) string {
	n, ok := memToBytes(v)
	if !ok {
		return "argument must be a memory value"
	}
	if n < protoMaxBulkLenMin || n > math.MaxInt64 {
		return "argument must be between 1048576 and 9223372036854775807 inclusive"
	}
	return ""
}

// checkYesNo accepts a boolean parameter's values as Redis does.
func checkYesNo(v string) string {
	if strings.EqualFold(v, "yes") || strings.EqualFold(v, "no") {
		return ""
	}
	return "argument must be 'yes' or 'no'"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// checkMaxClients applies Redis's bounds for maxclients.
func checkMaxClients(v string) string {
	n, ok := string2ll([]byte(v))
	if !ok {
		return "argument couldn't be parsed into an integer"
	}
	if n < 1 || n > math.MaxUint32 {
		return "argument must be between 1 and 4294967295 inclusive"
	}
	return ""
}

// memToBytes parses a memory value as Redis's memtoull does: digits with an
// optional b, k, kb, m, mb, g or gb suffix (k = 1000, kb = 1024).
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
	if lower == "" || strings.ContainsAny(lower, "+- ") {
		return 0, false
	}
	n, err := strconv.ParseUint(lower, 10, 64)
	if err != nil || (mul > 1 && n > math.MaxUint64/mul) {
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
