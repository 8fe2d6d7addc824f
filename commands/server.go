package commands

import (
	"math"
	"strconv"
	"strings"

	"github.com/redamo/redamo/model"
)

// The server family: COMMAND (command_cmd.go), INFO (info.go), CONFIG
// (config.go), MEMORY (memory.go), SLOWLOG (slowlog.go), LATENCY
// (latency.go), MONITOR (monitor.go), TIME, WAIT, the persistence commands
// and SHUTDOWN. (DBSIZE, FLUSHDB, FLUSHALL and SWAPDB live with the keys.)
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
		{Name: "save", Run: cmdSave},
		{Name: "bgsave", Run: cmdBgsave},
		{Name: "bgrewriteaof", Run: cmdBgrewriteaof},
		{Name: "shutdown", Run: cmdShutdown},
		{Name: "swapdb", Run: cmdSwapdb},
	})
	registerSlowlog(t)
	registerLatency(t)
	registerMonitor(t)
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
// already persisted in the store, so the last successful save is now. A
// client that waits for LASTSAVE to pass the time it asked for a save sees
// it do so at once, and SAVE never makes it go backwards.
func cmdLastsave(c *Ctx) { c.W.Int(c.Srv.Now().Unix()) }

// ---- SAVE, BGSAVE, BGREWRITEAOF ----------------------------------------------

// The persistence commands do what they ask for: every write redamo
// acknowledged is already in the table, which DynamoDB keeps durably
// across availability zones, so a save, background or not, is complete as
// soon as it is asked for, and nothing is rewritten because there is no
// append-only file to compact. Each replies what Redis replies once its
// save or rewrite has begun without a hitch; none of them is ever "already
// in progress".

// cmdSave replies OK: the data is saved (LASTSAVE is now).
func cmdSave(c *Ctx) { c.W.Simple("OK") }

// cmdBgsave answers as Redis does with no child process active; inside
// EXEC Redis schedules the save for after the transaction instead, and
// says so.
func cmdBgsave(c *Ctx) {
	if len(c.Args) > 1 && (len(c.Args) != 2 || !argIs(c.Args[1], "schedule")) {
		c.W.Error(MsgSyntax)
		return
	}
	if c.InTx {
		c.W.Simple("Background saving scheduled")
		return
	}
	c.W.Simple("Background saving started")
}

// cmdBgrewriteaof: as BGSAVE, with Redis's words for an AOF rewrite.
func cmdBgrewriteaof(c *Ctx) {
	if c.InTx {
		c.W.Simple("Background append only file rewriting scheduled")
		return
	}
	c.W.Simple("Background append only file rewriting started")
}

// ---- SHUTDOWN ------------------------------------------------------------------

const (
	msgNoShutdown = "ERR No shutdown in progress."
	// msgShutdownUnavailable answers a SHUTDOWN where no process can be
	// stopped (the shell CLI runs its commands in-process).
	msgShutdownUnavailable = "ERR SHUTDOWN is not available here: no redamo server runs in this process"
)

// cmdShutdown stops this instance, not the others on the table, through
// the path SIGTERM takes (Server.OnShutdown): the listener closes, the
// commands in flight finish, connections close and the process exits 0.
// NOSAVE and SAVE change nothing, the data being in the table already;
// NOW and FORCE neither, there being no replicas to wait for nor a save
// that could fail. Like Redis, the client gets no reply: its connection
// closes. SHUTDOWN ABORT finds no shutdown to abort: once one has begun,
// this instance runs no more commands. Redis's refusals inside MULTI and
// in scripts come from the command's flags (no_multi, noscript).
func cmdShutdown(c *Ctx) {
	var save, nosave, abort, other bool
	for _, a := range c.Args[1:] {
		switch {
		case argIs(a, "nosave"):
			nosave = true
		case argIs(a, "save"):
			save = true
		case argIs(a, "now"), argIs(a, "force"):
			other = true
		case argIs(a, "abort"):
			abort = true
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	if (abort && (save || nosave || other)) || (save && nosave) {
		c.W.Error(MsgSyntax)
		return
	}
	if abort {
		c.W.Error(msgNoShutdown)
		return
	}
	if c.Srv.OnShutdown == nil || c.Conn == nil {
		c.W.Error(msgShutdownUnavailable)
		return
	}
	c.Conn.NoReply, c.Conn.CloseAfterReply = true, true
	c.Srv.OnShutdown()
}

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

// ---- SWAPDB ----------------------------------------------------------------------

// msgNoSwapDB refuses SWAPDB of two different databases. A database is
// part of every item's partition key, so a swap would be a mapping from
// the database a client selects to the one its items are under, kept in
// the table and applied by every instance. For the swap to be atomic
// across instances, no instance may serve a command under the old mapping
// once another acknowledged the swap: every command of every instance
// would have to read the mapping in the table (a second read per
// command), or every instance would have to stop serving until all of
// them acknowledged it (an instance that does not answer would stop the
// others). Neither is worth a rarely used command, and swapping half the
// instances is not an option.
const msgNoSwapDB = "ERR SWAPDB is not supported: databases are part of every item's key in the table, and no swap could be atomic across instances"

// cmdSwapdb validates its arguments as Redis does; swapping a database
// with itself changes nothing and replies OK, as in Redis.
func cmdSwapdb(c *Ctx) {
	id1, ok := swapdbIndex(c.Args[1])
	if !ok {
		c.W.Error("ERR invalid first DB index")
		return
	}
	id2, ok := swapdbIndex(c.Args[2])
	if !ok {
		c.W.Error("ERR invalid second DB index")
		return
	}
	switch {
	case id1 < 0 || id1 >= NumDBs || id2 < 0 || id2 >= NumDBs:
		c.W.Error(MsgInvalidDB)
	case id1 == id2:
		c.W.Simple("OK")
	default:
		c.W.Error(msgNoSwapDB)
	}
}

// swapdbIndex parses a database index as Redis's getIntFromObject does.
func swapdbIndex(b []byte) (int64, bool) {
	n, ok := model.String2ll(b)
	return n, ok && n >= math.MinInt32 && n <= math.MaxInt32
}
