package commands

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redamo/redamo/model"
)

// MONITOR streams every command this instance runs to the connections that
// asked for it, in Redis's line format:
//
//	+1700000000.123456 [0 127.0.0.1:1234] "set" "k" "v"
//
// Only this instance's commands: a client of another instance on the same
// table is not shown (the instances exchange key events and messages, not
// commands; a monitor that saw every instance's traffic would cost each
// instance a message per command). What is shown follows Redis 7.0: a
// command after it ran (so a SELECT shows the database it selected), a
// script's commands after the EVAL or FCALL that ran them, as "[db lua]",
// a transaction's commands before its EXEC, a blocked command once, as it
// starts; administrative commands (flag admin: CONFIG, MONITOR itself, ...)
// never; AUTH's and HELLO's passwords as "(redacted)". Commands that were
// refused before they ran (unknown, wrong arity, NOAUTH, queued in MULTI)
// are not shown.

func registerMonitor(t *Table) {
	t.Register([]Row{{Name: "monitor", Run: cmdMonitor}})
}

const (
	msgMonitorDenyBlocking = "ERR MONITOR isn't allowed for DENY BLOCKING client"
	// msgMonitorUnavailable: a connection that cannot be sent lines (the
	// shell CLI's).
	msgMonitorUnavailable = "ERR MONITOR is not available on this connection"
)

// cmdMonitor makes the connection a monitor. Inside EXEC Redis refuses it
// (the client expects one reply per command); a second MONITOR is ignored,
// without a reply, as in Redis. RESET, and the connection's end, stop it
// (Server.Leave).
func cmdMonitor(c *Ctx) {
	if c.InTx || c.InScript {
		c.W.Error(msgMonitorDenyBlocking)
		return
	}
	p, ok := c.Conn.Sub.(Pusher)
	if !ok {
		c.W.Error(msgMonitorUnavailable)
		return
	}
	if c.Srv.monitors.has(c.Conn) {
		c.Conn.NoReply = true
		return
	}
	c.Srv.monitors.add(c.Conn, p)
	c.W.Simple("OK")
}

// monitors is the set of monitoring connections. n is read on every
// command: while nobody monitors, that one atomic load is all MONITOR
// costs.
type monitors struct {
	n     atomic.Int32
	mu    sync.Mutex
	conns map[*Conn]Pusher
}

func (m *monitors) add(cn *Conn, p Pusher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns == nil {
		m.conns = map[*Conn]Pusher{}
	}
	m.conns[cn] = p
	m.n.Store(int32(len(m.conns)))
}

func (m *monitors) has(cn *Conn) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.conns[cn]
	return ok
}

// msgMonitorKeyspace refuses a monitor's command that reads or writes
// keys: Redis treats a monitor as a replica.
const msgMonitorKeyspace = "ERR Replica can't interact with the keyspace"

// refusedToMonitor reports whether cmd, sent by a monitoring connection,
// is refused as Redis refuses it.
func (m *monitors) refusedToMonitor(c *Ctx, cmd *Command) bool {
	if c.InTx || c.InScript || !m.has(c.Conn) {
		return false
	}
	return cmd.HasFlag(FlagWrite) || cmd.HasFlag(FlagReadonly) || cmd.HasFlag("may_replicate")
}

// remove forgets a connection that closed (Server.Leave) or was RESET.
func (m *monitors) remove(cn *Conn) {
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns, cn)
	m.n.Store(int32(len(m.conns)))
}

// send pushes one line (without its "+" and CRLF) to every monitor.
func (m *monitors) send(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.conns {
		p.PushReply(func(w Writer) { w.Simple(line) })
	}
}

// monitorStage says when a command is shown to monitors.
type monitorStage uint8

const (
	monitorNever monitorStage = iota
	monitorBefore
	monitorAfter
)

const (
	flagAdmin       = "admin"
	flagSkipMonitor = "skip_monitor"
)

// monitorWhen is when Redis shows a call of cmd: never an administrative
// command; a script's call (skip_monitor: EVAL, FCALL and their variants
// show themselves before they run) and a blocking one before; the rest
// after.
func monitorWhen(cmd *Command) monitorStage {
	switch {
	case cmd.HasFlag(flagAdmin):
		return monitorNever
	case cmd.HasFlag(flagSkipMonitor), cmd.HasFlag(FlagBlocking):
		return monitorBefore
	}
	return monitorAfter
}

// feedMonitors shows c's command to the monitors if stage is when it is
// shown. A command run by a unit of work (EXEC, a script) is held with
// the unit's events, and shown only once the unit committed, so an
// attempt that ran again is shown once.
func (s *Server) feedMonitors(c *Ctx, cmd *Command, stage monitorStage) {
	if monitorWhen(cmd) != stage {
		return
	}
	line := monitorLine(c, cmd)
	if c.events != nil {
		c.events.monitor = append(c.events.monitor, line)
		return
	}
	s.monitors.send(line)
}

// monitorLine formats c's call as Redis's replicationFeedMonitors does.
func monitorLine(c *Ctx, cmd *Command) string {
	now := c.Srv.Now()
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " ["...)
	db := 0
	if c.Conn != nil {
		db = c.Conn.DB
	}
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, ' ')
	switch {
	case c.InScript:
		b = append(b, "lua"...)
	case c.Conn != nil:
		b = append(b, c.Conn.Addr...)
	}
	b = append(b, "] "...)
	redacted := redactedArgs(cmd, c.Args)
	for i, a := range c.Args {
		if i > 0 {
			b = append(b, ' ')
		}
		if redacted(i) {
			a = []byte(redactedArg)
		}
		b = appendRepr(b, a)
	}
	return string(b)
}

// redactedArg replaces a password wherever Redis logs a command.
const redactedArg = "(redacted)"

// redactedArgs tells which of args Redis replaces by "(redacted)" in
// MONITOR and SLOWLOG: AUTH's password (and user), HELLO's AUTH pair, the
// value CONFIG SET gives requirepass, masterauth or masteruser. Redis
// redacts as the command parses them, so what follows a syntax error it
// stops at is shown.
func redactedArgs(cmd *Command, args [][]byte) func(i int) bool {
	switch cmd.Name {
	case "auth":
		if len(args) > 3 {
			return noneRedacted
		}
		return func(i int) bool { return i >= 1 }
	case "hello":
		if len(args) < 2 {
			return noneRedacted
		}
		if v, ok := model.String2ll(args[1]); !ok || v < 2 || v > 3 {
			// Refused before HELLO reads its options.
			return noneRedacted
		}
		var idx []int
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case argIs(args[j], "auth") && more >= 2:
				idx = append(idx, j+1, j+2)
				j += 2
			case argIs(args[j], "setname") && more >= 1:
				j++
			default:
				j = len(args)
			}
		}
		return indexIn(idx)
	case "config|set":
		var idx []int
		for j := 2; j+1 < len(args); j += 2 {
			if argIs(args[j], "requirepass") || argIs(args[j], "masterauth") || argIs(args[j], "masteruser") {
				idx = append(idx, j+1)
			}
		}
		return indexIn(idx)
	}
	return noneRedacted
}

func noneRedacted(int) bool { return false }

func indexIn(idx []int) func(int) bool {
	if len(idx) == 0 {
		return noneRedacted
	}
	return func(i int) bool {
		for _, j := range idx {
			if i == j {
				return true
			}
		}
		return false
	}
}

// appendRepr quotes s as Redis's sdscatrepr does.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&0xf])
			}
		}
	}
	return append(b, '"')
}
