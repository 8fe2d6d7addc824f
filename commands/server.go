package commands

import (
	"strconv"
	"strings"

	"github.com/redamo/redamo/model"
)

// The server family: COMMAND (command_cmd.go), INFO (info.go), CONFIG
// (config.go), MEMORY (memory.go), TIME, WAIT and LASTSAVE. (DBSIZE,
// FLUSHDB and FLUSHALL live with the keys.)
func registerServer(t *Table) {
	t.Register([]Row{
		{Name: "command", Run: cmdCommandAll},
		{Name: "command|count", Run: cmdCommandCount},
		{Name: "command|docs", Run: cmdCommandDocs},
		{Name: "command|getkeys", Run: func(c *Ctx) { getKeysReply(c, false) }},
		{Name: "command|getkeysandflags", Run: func(c *Ctx) { getKeysReply(c, true) }},
		{Name: "command|help", Run: cmdCommandHelp},
		{Name: "command|info", Run: cmdCommandInfo},
		{Name: "command|list", Run: cmdCommandList},
		{Name: "info", Run: cmdInfo},
		{Name: "config|get", Run: cmdConfigGet},
		{Name: "config|help", Run: cmdConfigHelp},
		{Name: "config|resetstat", Run: cmdConfigResetstat},
		{Name: "config|rewrite", Run: cmdConfigRewrite},
		{Name: "config|set", Run: cmdConfigSet},
		{Name: "memory|help", Run: cmdMemoryHelp},
		{Name: "memory|usage", Run: cmdMemoryUsage},
		{Name: "time", Run: cmdTime},
		{Name: "wait", Run: cmdWait},
		{Name: "lastsave", Run: cmdLastsave},
	})
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
	if _, ok := model.String2ll(c.Args[1]); !ok {
		c.W.Error(MsgNotInt)
		return
	}
	timeout, ok := model.String2ll(c.Args[2])
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
