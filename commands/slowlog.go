package commands

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/model"
)

// SLOWLOG: this instance's commands that took at least
// slowlog-log-slower-than microseconds, newest first, at most
// slowlog-max-len of them, as Redis 7.0 keeps them. A command's duration is
// its whole run, store requests included (a DynamoDB round trip is part of
// what a client waits for); a blocking command's includes its wait, which
// Redis leaves out. Each instance keeps its own log, as each Redis server
// does.

func registerSlowlog(t *Table) {
	t.Register([]Row{
		{Name: "slowlog|get", Run: cmdSlowlogGet},
		{Name: "slowlog|len", Run: cmdSlowlogLen},
		{Name: "slowlog|reset", Run: cmdSlowlogReset},
		{Name: "slowlog|help", Run: cmdSlowlogHelp},
	})
}

const (
	// Redis's SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
	slowlogMaxArgc   = 32
	slowlogMaxString = 128

	defaultSlowlogSlowerThan = 10000
	defaultSlowlogMaxLen     = 128

	msgSlowlogCount = "ERR count should be greater than or equal to -1"
)

var slowlogHelp = []string{
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
}

// slowlogEntry is one logged call.
type slowlogEntry struct {
	id, time, micros int64
	args             [][]byte
	peer, name       string
}

// slowlog is the instance's log. slower and maxLen are CONFIG's (nil until
// set); the threshold is read on every command, the lock taken only for a
// command that is logged.
type slowlog struct {
	slower atomic.Pointer[int64]
	maxLen atomic.Pointer[int64]

	mu      sync.Mutex
	nextID  int64
	entries []slowlogEntry // oldest first
}

func (l *slowlog) threshold() int64 {
	if p := l.slower.Load(); p != nil {
		return *p
	}
	return defaultSlowlogSlowerThan
}

func (l *slowlog) limit() int64 {
	if p := l.maxLen.Load(); p != nil {
		return *p
	}
	return defaultSlowlogMaxLen
}

// record logs c's call of cmd, which took d, if it is slow enough.
func (l *slowlog) record(c *Ctx, cmd *Command, d time.Duration) {
	th := l.threshold()
	us := d.Microseconds()
	if th < 0 || us < th || cmd.HasFlag("skip_slowlog") {
		return
	}
	e := slowlogEntry{time: c.Srv.Now().Unix(), micros: us, args: slowlogArgs(cmd, c.Args)}
	switch {
	case c.InScript:
		// Redis's script client has no address and no name.
		e.peer = "?:0"
	case c.Conn != nil:
		e.peer, e.name = c.Conn.Addr, c.Conn.Name()
	}
	if c.events != nil {
		// A command of a unit of work (EXEC, a script) is logged once the
		// unit committed: an attempt that ran again is logged once.
		c.events.slow = append(c.events.slow, e)
		return
	}
	l.push(e)
}

// push adds an entry, giving it the next id.
func (l *slowlog) push(e slowlogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
}

// trim drops the oldest entries past slowlog-max-len (mu held).
func (l *slowlog) trim() {
	if n := int64(len(l.entries)) - l.limit(); n > 0 {
		l.entries = append(l.entries[:0], l.entries[n:]...)
	}
}

// slowlogArgs copies args as Redis logs them: at most 32, the last of
// which then says how many more there were, each cut to 128 bytes with
// how many more there were, passwords redacted.
func slowlogArgs(cmd *Command, args [][]byte) [][]byte {
	n := min(len(args), slowlogMaxArgc)
	redacted := redactedArgs(cmd, args)
	out := make([][]byte, n)
	for i := range out {
		a := args[i]
		switch {
		case n != len(args) && i == n-1:
			a = fmt.Appendf(nil, "... (%d more arguments)", len(args)-n+1)
		case redacted(i):
			a = []byte(redactedArg)
		case len(a) > slowlogMaxString:
			a = fmt.Appendf(append([]byte(nil), a[:slowlogMaxString]...), "... (%d more bytes)", len(a)-slowlogMaxString)
		default:
			a = append([]byte(nil), a...)
		}
		out[i] = a
	}
	return out
}

func cmdSlowlogGet(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.Error(ErrSubcommandSyntax("slowlog", string(c.Args[1])))
		return
	}
	count := int64(10)
	if len(c.Args) == 3 {
		n, ok := model.String2ll(c.Args[2])
		if !ok || n < -1 {
			c.W.Error(msgSlowlogCount)
			return
		}
		count = n
	}
	l := &c.Srv.slowlog
	l.mu.Lock()
	if count == -1 || count > int64(len(l.entries)) {
		count = int64(len(l.entries))
	}
	picked := make([]slowlogEntry, count)
	for i := range picked {
		picked[i] = l.entries[len(l.entries)-1-i]
	}
	l.mu.Unlock()
	c.W.Array(len(picked))
	for _, e := range picked {
		c.W.Array(6)
		c.W.Int(e.id)
		c.W.Int(e.time)
		c.W.Int(e.micros)
		c.W.Array(len(e.args))
		for _, a := range e.args {
			c.W.Bulk(a)
		}
		c.W.BulkString(e.peer)
		c.W.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *Ctx) {
	l := &c.Srv.slowlog
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	c.W.Int(int64(n))
}

func cmdSlowlogReset(c *Ctx) {
	l := &c.Srv.slowlog
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	c.W.Simple("OK")
}

func cmdSlowlogHelp(c *Ctx) {
	writeHelp(c, "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", slowlogHelp...)
}

// The CONFIG parameters of the slow log.
var (
	slowlogSlowerThanParam = configParam{
		name:  "slowlog-log-slower-than",
		get:   func(s *Server) string { return strconv.FormatInt(s.slowlog.threshold(), 10) },
		check: checkInt(-1, 1<<63-1),
		set: func(s *Server, v string) {
			n, _ := model.String2ll([]byte(v))
			s.slowlog.slower.Store(&n)
			s.slowlog.trimIfOn()
		},
	}
	slowlogMaxLenParam = configParam{
		name:  "slowlog-max-len",
		get:   func(s *Server) string { return strconv.FormatInt(s.slowlog.limit(), 10) },
		check: checkInt(0, 1<<63-1),
		set: func(s *Server, v string) {
			n, _ := model.String2ll([]byte(v))
			s.slowlog.maxLen.Store(&n)
			s.slowlog.trimIfOn()
		},
	}
)

// trimIfOn trims the log to slowlog-max-len unless it is off: Redis trims
// after every command while the log is on (so right after the CONFIG SET
// that lowered the limit or turned it on), and never while it is off.
func (l *slowlog) trimIfOn() {
	if l.threshold() < 0 {
		return
	}
	l.mu.Lock()
	l.trim()
	l.mu.Unlock()
}
