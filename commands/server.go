package commands

import (
	"strconv"
	"strings"
)

// The server family: COMMAND (command_cmd.go), INFO (info.go), CONFIG
// (config.go), MEMORY (memory.go), TIME, WAIT and LASTSAVE.
// Metadata as Redis 7.0.15's COMMAND INFO/DOCS report it. (DBSIZE, FLUSHDB
// and FLUSHALL live with the keys.)
func registerServer(t *Table) {
	t.Register(
		commandCommand(),
		infoCommand(),
		configCommand(),
		memoryCommand(),
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
