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
	"syscall"
)

// The server family: COMMAND, INFO, CONFIG, TIME, WAIT and LASTSAVE.
// Metadata as Redis 7.0.15's COMMAND INFO/DOCS report it. (DBSIZE, FLUSHDB
// and FLUSHALL live with the keys.)
func registerServer(t *Table) {
	t.Register(
		commandCommand(),
		&Command{
			Name: "info", Arity: -1, Flags: []string{FlagLoading, FlagStale}, Categories: []string{"slow", "dangerous"},
			Tips:    []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
			Summary: "Get information and statistics about the server", Since: "1.0.0", Group: "server", Complexity: "O(1)",
			History: [][2]string{{"7.0.0", "Added support for taking multiple section arguments."}},
			Args:    []Arg{{Name: "section", Type: "string", KeySpecIndex: -1, Flags: []string{"optional", "multiple"}}},
			Run:     cmdInfo,
		},
		configCommand(),
		&Command{
			Name: "time", Arity: 1, Flags: []string{FlagLoading, FlagStale, FlagFast}, Categories: []string{"fast"},
			Tips:    []string{"nondeterministic_output"},
			Summary: "Return the current server time", Since: "2.6.0", Group: "server", Complexity: "O(1)",
			Run: cmdTime,
		},
		&Command{
			Name: "wait", Arity: 3, Flags: []string{FlagNoScript}, Categories: []string{"slow", "connection"},
			Tips:    []string{"request_policy:all_shards", "response_policy:agg_min"},
			Summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
			Since:   "3.0.0", Group: "generic", Complexity: "O(1)",
			Args: []Arg{
				{Name: "numreplicas", Type: "integer", KeySpecIndex: -1},
				{Name: "timeout", Type: "integer", KeySpecIndex: -1},
			},
			Run: cmdWait,
		},
		&Command{
			Name: "lastsave", Arity: 1, Flags: []string{FlagLoading, FlagStale, FlagFast},
			Categories: []string{"admin", "fast", "dangerous"},
			Tips:       []string{"nondeterministic_output"},
			Summary:    "Get the UNIX time stamp of the last successful save to disk", Since: "1.0.0",
			Group: "server", Complexity: "O(1)",
			Run: cmdLastsave,
		},
	)
}

// ---- TIME, WAIT, LASTSAVE ----------------------------------------------------

func cmdTime(c *Ctx) {
	now := c.Srv.Now()
	c.W.Array(2)
	c.W.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.W.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// cmdWait validates its arguments like Redis and replies 0 at once. redamo
// has no replicas to count: a write is acknowledged only once DynamoDB has
// stored it durably across availability zones, so there is nothing to wait
// for (Redis would block until the timeout, forever with 0, to reply 0).
func cmdWait(c *Ctx) {
	if _, ok := string2ll(c.Args[1]); !ok {
		c.W.Error(MsgNotInt)
		return
	}
	timeout, ok := string2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgTimeoutNotInt)
		return
	}
	if timeout < 0 {
		c.W.Error(MsgNegativeTimeout)
		return
	}
	c.W.Int(0)
}

// cmdLastsave replies with the current time: every acknowledged write is
// already persisted in the store, so the last successful save is now.
func cmdLastsave(c *Ctx) { c.W.Int(c.Srv.Now().Unix()) }

// ---- COMMAND -------------------------------------------------------------------

func commandCommand() *Command {
	cats := []string{"slow", "connection"}
	flags := []string{FlagLoading, FlagStale}
	sub := func(c *Command) *Command {
		c.Flags, c.Categories, c.Group = flags, cats, "server"
		return c
	}
	return &Command{
		Name: "command", Arity: -1, Flags: flags, Categories: cats,
		Tips:    []string{"nondeterministic_output_order"},
		Summary: "Get array of Redis command details", Since: "2.8.13", Group: "server",
		Complexity: "O(N) where N is the total number of Redis commands",
		Run:        cmdCommandAll,
		Subcommands: []*Command{
			sub(&Command{
				Name: "command|count", Arity: 2,
				Summary: "Get total number of Redis commands", Since: "2.8.13", Complexity: "O(1)",
				Run: cmdCommandCount,
			}),
			sub(&Command{
				Name: "command|docs", Arity: -2, Tips: []string{"nondeterministic_output_order"},
				Summary: "Get array of specific Redis command documentation", Since: "7.0.0",
				Complexity: "O(N) where N is the number of commands to look up",
				Args:       []Arg{{Name: "command-name", Type: "string", KeySpecIndex: -1, Flags: []string{"optional", "multiple"}}},
				Run:        cmdCommandDocs,
			}),
			sub(&Command{
				Name: "command|getkeys", Arity: -4,
				Summary: "Extract keys given a full Redis command", Since: "2.8.13",
				Complexity: "O(N) where N is the number of arguments to the command",
				Run:        func(c *Ctx) { getKeysReply(c, false) },
			}),
			sub(&Command{
				Name: "command|getkeysandflags", Arity: -4,
				Summary: "Extract keys and access flags given a full Redis command", Since: "7.0.0",
				Complexity: "O(N) where N is the number of arguments to the command",
				Run:        func(c *Ctx) { getKeysReply(c, true) },
			}),
			sub(&Command{
				Name: "command|help", Arity: 2,
				Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Complexity: "O(1)",
				Run: cmdCommandHelp,
			}),
			sub(&Command{
				Name: "command|info", Arity: -2, Tips: []string{"nondeterministic_output_order"},
				Summary: "Get array of specific Redis command details, or all when no argument is given.",
				Since:   "2.8.13", Complexity: "O(N) where N is the number of commands to look up",
				History: [][2]string{{"7.0.0", "Allowed to be called with no argument to get info on all commands."}},
				Args:    []Arg{{Name: "command-name", Type: "string", KeySpecIndex: -1, Flags: []string{"optional", "multiple"}}},
				Run:     cmdCommandInfo,
			}),
			sub(&Command{
				Name: "command|list", Arity: -2, Tips: []string{"nondeterministic_output_order"},
				Summary: "Get an array of Redis command names", Since: "7.0.0",
				Complexity: "O(N) where N is the total number of Redis commands",
				Args: []Arg{{Name: "filterby", Type: "oneof", KeySpecIndex: -1, Token: "FILTERBY", Flags: []string{"optional"}, Args: []Arg{
					{Name: "module-name", Type: "string", KeySpecIndex: -1, Token: "MODULE"},
					{Name: "category", Type: "string", KeySpecIndex: -1, Token: "ACLCAT"},
					{Name: "pattern", Type: "pattern", KeySpecIndex: -1, Token: "PATTERN"},
				}}},
				Run: cmdCommandList,
			}),
		},
	}
}

func cmdCommandAll(c *Ctx) {
	all := c.Srv.Table.All()
	c.W.Array(len(all))
	for _, cmd := range all {
		writeCommandInfo(c.W, cmd)
	}
}

func cmdCommandCount(c *Ctx) { c.W.Int(int64(len(c.Srv.Table.All()))) }

// lookupFullName finds "name" or "container|sub".
func (t *Table) lookupFullName(name string) *Command {
	parent, sub, isSub := strings.Cut(name, "|")
	cmd := t.Lookup(parent)
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.Subcommand([]byte(sub))
}

func cmdCommandInfo(c *Ctx) {
	if len(c.Args) == 2 {
		cmdCommandAll(c)
		return
	}
	names := c.Args[2:]
	c.W.Array(len(names))
	for _, n := range names {
		if cmd := c.Srv.Table.lookupFullName(string(n)); cmd != nil {
			writeCommandInfo(c.W, cmd)
		} else {
			c.W.Nil()
		}
	}
}

// writeCommandInfo writes one command's COMMAND INFO entry, as Redis's
// addReplyCommandInfo does.
func writeCommandInfo(w Writer, cmd *Command) {
	w.Array(10)
	w.BulkString(cmd.Name)
	w.Int(int64(cmd.Arity))
	w.Set(len(cmd.Flags))
	for _, f := range cmd.Flags {
		w.Simple(f)
	}
	w.Int(int64(cmd.FirstKey))
	w.Int(int64(cmd.LastKey))
	w.Int(int64(cmd.Step))
	w.Set(len(cmd.Categories))
	for _, cat := range cmd.Categories {
		w.Simple("@" + cat)
	}
	w.Set(len(cmd.Tips))
	for _, tip := range cmd.Tips {
		w.BulkString(tip)
	}
	specs := cmd.keySpecs()
	w.Set(len(specs))
	for _, ks := range specs {
		writeKeySpec(w, ks)
	}
	if len(cmd.Subcommands) == 0 {
		w.Set(0)
		return
	}
	subs := sortedSubcommands(cmd)
	w.Array(len(subs))
	for _, sub := range subs {
		writeCommandInfo(w, sub)
	}
}

func sortedSubcommands(cmd *Command) []*Command {
	subs := append([]*Command(nil), cmd.Subcommands...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

// keySpecs returns the command's key specs, derived from its legacy key
// range when none were declared (flags are then unknown).
func (c *Command) keySpecs() []KeySpec {
	if len(c.KeySpecs) > 0 || c.FirstKey <= 0 {
		return c.KeySpecs
	}
	last := c.LastKey
	if last >= 0 {
		last -= c.FirstKey
	}
	return []KeySpec{{Index: c.FirstKey, LastKey: last, KeyStep: max(c.Step, 1)}}
}

func writeKeySpec(w Writer, ks KeySpec) {
	n := 3
	if ks.Notes != "" {
		n++
	}
	w.Map(n)
	if ks.Notes != "" {
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	}
	w.BulkString("flags")
	w.Set(len(ks.Flags))
	for _, f := range ks.Flags {
		w.Simple(f)
	}
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	if ks.Keyword != "" {
		w.BulkString("keyword")
		w.BulkString("spec")
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(ks.Keyword)
		w.BulkString("startfrom")
		w.Int(int64(ks.StartFrom))
	} else {
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(ks.Index))
	}
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	if ks.KeyNum {
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(ks.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(ks.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(ks.KeyStep))
	} else {
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(ks.LastKey))
		w.BulkString("keystep")
		w.Int(int64(ks.KeyStep))
		w.BulkString("limit")
		w.Int(int64(ks.Limit))
	}
}

func cmdCommandDocs(c *Ctx) {
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = c.Srv.Table.All()
	} else {
		for _, n := range c.Args[2:] {
			if cmd := c.Srv.Table.lookupFullName(string(n)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.Name)
		writeCommandDocs(c.W, cmd)
	}
}

// writeCommandDocs writes one command's COMMAND DOCS map, as Redis's
// addReplyCommandDocs does.
func writeCommandDocs(w Writer, cmd *Command) {
	n := 1 // group
	for _, present := range []bool{cmd.Summary != "", cmd.Since != "", cmd.Complexity != "",
		len(cmd.History) > 0, len(cmd.Args) > 0, len(cmd.Subcommands) > 0} {
		if present {
			n++
		}
	}
	w.Map(n)
	if cmd.Summary != "" {
		w.BulkString("summary")
		w.BulkString(cmd.Summary)
	}
	if cmd.Since != "" {
		w.BulkString("since")
		w.BulkString(cmd.Since)
	}
	w.BulkString("group")
	w.BulkString(cmd.Group)
	if cmd.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(cmd.Complexity)
	}
	if len(cmd.History) > 0 {
		w.BulkString("history")
		w.Set(len(cmd.History))
		for _, h := range cmd.History {
			w.Array(2)
			w.BulkString(h[0])
			w.BulkString(h[1])
		}
	}
	if len(cmd.Args) > 0 {
		w.BulkString("arguments")
		writeArgs(w, cmd.Args)
	}
	if len(cmd.Subcommands) > 0 {
		subs := sortedSubcommands(cmd)
		w.BulkString("subcommands")
		w.Map(len(subs))
		for _, sub := range subs {
			w.BulkString(sub.Name)
			writeCommandDocs(w, sub)
		}
	}
}

func writeArgs(w Writer, args []Arg) {
	w.Array(len(args))
	for _, a := range args {
		n := 2
		for _, present := range []bool{a.Type == "key", a.Token != "", a.Summary != "", a.Since != "",
			a.DeprecatedSince != "", len(a.Flags) > 0, a.Type == "oneof" || a.Type == "block"} {
			if present {
				n++
			}
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.Type == "key" {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		if a.Token != "" {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if a.Summary != "" {
			w.BulkString("summary")
			w.BulkString(a.Summary)
		}
		if a.Since != "" {
			w.BulkString("since")
			w.BulkString(a.Since)
		}
		if a.DeprecatedSince != "" {
			w.BulkString("deprecated_since")
			w.BulkString(a.DeprecatedSince)
		}
		if len(a.Flags) > 0 {
			w.BulkString("flags")
			w.Set(len(a.Flags))
			for _, f := range a.Flags {
				w.Simple(f)
			}
		}
		if a.Type == "oneof" || a.Type == "block" {
			w.BulkString("arguments")
			writeArgs(w, a.Args)
		}
	}
}

func cmdCommandList(c *Ctx) {
	var match func(cmd *Command) bool
	switch {
	case len(c.Args) == 2:
	case len(c.Args) == 5 && strings.EqualFold(string(c.Args[2]), "filterby"):
		val := c.Args[4]
		switch strings.ToLower(string(c.Args[3])) {
		case "module":
			// redamo has no modules: no command belongs to one.
			match = func(*Command) bool { return false }
		case "aclcat":
			match = func(cmd *Command) bool {
				for _, cat := range cmd.Categories {
					if strings.EqualFold(cat, string(val)) {
						return true
					}
				}
				return false
			}
		case "pattern":
			pat := []byte(strings.ToLower(string(val)))
			match = func(cmd *Command) bool { return globMatch(pat, []byte(cmd.Name)) }
		default:
			c.W.Error(MsgSyntax)
			return
		}
	default:
		c.W.Error(MsgSyntax)
		return
	}
	var names []string
	add := func(cmd *Command) {
		if match == nil || match(cmd) {
			names = append(names, cmd.Name)
		}
	}
	for _, cmd := range c.Srv.Table.All() {
		add(cmd)
		for _, sub := range sortedSubcommands(cmd) {
			add(sub)
		}
	}
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// getKeysReply is COMMAND GETKEYS and GETKEYSANDFLAGS.
func getKeysReply(c *Ctx, withFlags bool) {
	args := c.Args[2:]
	cmd := lookup(c.Srv.Table, args[0])
	if cmd != nil && len(cmd.Subcommands) > 0 && len(args) >= 2 {
		cmd = cmd.Subcommand(args[1])
	}
	switch {
	case cmd == nil:
		c.W.Error(MsgGetkeysCommand)
		return
	case !cmd.hasKeys():
		c.W.Error(MsgGetkeysNoKeys)
		return
	case !cmd.ArityOK(len(args)):
		c.W.Error(MsgGetkeysArity)
		return
	}
	keys, ok := cmd.keysOf(args)
	if !ok || len(keys) == 0 {
		if !ok || !cmd.HasFlag("no_mandatory_keys") {
			c.W.Error(MsgGetkeysArgs)
			return
		}
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.W.Bulk(args[k.pos])
			continue
		}
		c.W.Array(2)
		c.W.Bulk(args[k.pos])
		c.W.Set(len(k.flags))
		for _, f := range k.flags {
			c.W.Simple(f)
		}
	}
}

// hasKeys is Redis's doesCommandHaveKeys: a key spec that is not not_key.
func (c *Command) hasKeys() bool {
	for _, ks := range c.keySpecs() {
		if !hasString(ks.Flags, "not_key") {
			return true
		}
	}
	return false
}

type keyRef struct {
	pos   int
	flags []string
}

// keysOf finds the keys of a full command (args[0] is its name) from its key
// specs, as Redis's getKeysUsingKeySpecs does; ok is false when the
// arguments contradict a spec (a numkeys that is not a count, a key range
// past the end).
func (c *Command) keysOf(args [][]byte) (keys []keyRef, ok bool) {
	argc := len(args)
	for _, ks := range c.keySpecs() {
		if hasString(ks.Flags, "not_key") {
			continue
		}
		first := 0
		if ks.Keyword != "" {
			start, end := ks.StartFrom, argc-1
			if start <= 0 {
				start, end = argc+ks.StartFrom, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if strings.EqualFold(string(args[i]), ks.Keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		} else {
			first = ks.Index
		}
		var last int
		step := max(ks.KeyStep, 1)
		if ks.KeyNum {
			if ks.KeyNumIdx >= argc || first+ks.KeyNumIdx >= argc {
				return nil, false
			}
			n, good := string2ll(args[first+ks.KeyNumIdx])
			if !good || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += ks.FirstKey
			last = first + int(n) - 1
		} else {
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + ((argc-first)/ks.Limit + ks.LastKey)
			}
		}
		if last >= argc || last < first || first >= argc {
			return nil, false
		}
		for i := first; i <= last; i += step {
			keys = append(keys, keyRef{pos: i, flags: ks.Flags})
		}
	}
	return keys, true
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cmdCommandHelp(c *Ctx) {
	writeHelp(c, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	)
}

// ---- CONFIG --------------------------------------------------------------------

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

// splitHostPort splits the listen address; a bare port means all interfaces.
func splitHostPort(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, ""
	}
	host, port = strings.Trim(addr[:i], "[]"), addr[i+1:]
	if host == "" {
		host = "*"
	}
	return host, port
}

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

// ---- INFO ----------------------------------------------------------------------

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
}

// defaultInfo are the sections of a bare INFO: Redis's default set minus
// keyspace. Counting keys means scanning the whole table, and client
// libraries (ioredis, BullMQ) send a bare INFO on every connect as a
// readiness check: with DynamoDB that would be a full-table Scan, billed,
// per connection. INFO keyspace (or all, everything) still reports it.
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

// cpuTimes returns the process's system and user CPU time in seconds.
func cpuTimes() (sys, user float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Stime), tv(ru.Utime)
}
