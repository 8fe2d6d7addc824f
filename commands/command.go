// Package commands holds redamo's command table and one handler per Redis
// command, grouped by family (strings.go, keys.go, connection.go, server.go,
// ...). A handler parses its arguments, calls the data model (model/) or a
// coordination recipe (coord/), which decide every store request, and
// answers only through the Writer interface, so the same handler serves
// every backend and both execution paths (a direct request, or a
// transaction buffer). docs/architecture.md describes the layers.
//
// The package knows no RESP bytes: resp/ implements Writer and owns the
// listener and dispatch loop.
package commands

import (
	"context"
	"fmt"
	"github.com/redamo/redamo/pubsub"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/wait"
)

// Writer is how a handler replies. resp/ implements it for RESP2 and RESP3; a
// handler calls exactly one top-level reply per command (an aggregate header
// followed by its elements counts as one).
type Writer interface {
	// Proto is 2 or 3.
	Proto() int
	Simple(s string)
	// Error writes an error reply; msg starts with its code ("ERR ...", "WRONGTYPE ...").
	Error(msg string)
	Int(n int64)
	Bulk(b []byte)
	BulkString(s string)
	// Nil is a null bulk string ($-1 in RESP2, _ in RESP3).
	Nil()
	// NilArray is a null array (*-1 in RESP2, _ in RESP3).
	NilArray()
	// Array starts an array of n elements.
	Array(n int)
	// Map starts a map of n key/value pairs (a flat array of 2n in RESP2).
	Map(n int)
	// Set starts a set of n elements (an array in RESP2).
	Set(n int)
	// Double writes a double (a bulk string in RESP2), formatted as Redis does.
	Double(f float64)
	// HumanDouble writes a double as Redis's addReplyHumanLongDouble does
	// (FormatHumanDouble's text; a bulk string in RESP2).
	HumanDouble(f float64)
	// Bool writes a boolean (:1/:0 in RESP2).
	Bool(b bool)
	// Verbatim writes a verbatim string of the given 3-letter format (a bulk
	// string in RESP2).
	Verbatim(format, s string)
	// BigNumber writes a big number given as its decimal digits (a bulk
	// string in RESP2).
	BigNumber(digits string)
}

// Handler runs one command. The handler has parsed and validated its
// arguments before any I/O, so a syntax error touches no data.
type Handler func(c *Ctx)

// Command flags, as COMMAND reports them, that redamo acts on.
const (
	FlagWrite    = "write"
	FlagReadonly = "readonly"
	FlagNoScript = "noscript"
	FlagBlocking = "blocking"
	FlagLoading  = "loading"
	FlagStale    = "stale"
	FlagNoAuth   = "no_auth"
	FlagNoMulti  = "no_multi"
	FlagMovable  = "movablekeys"
)

// Command is one entry of the command table: its metadata (what COMMAND
// reports) and its handler. A family registers a command with a Row, its
// metadata coming from Redis 7.0.15's table (redis_commands_gen.go).
type Command struct {
	// Name is lower case; a subcommand is "parent|sub".
	Name string
	// Arity follows Redis: n means exactly n arguments including the name,
	// -n means at least n.
	Arity int
	// Flags, in the order COMMAND lists them.
	Flags []string
	// ACL categories without the '@', e.g. "string", "fast", in the order
	// COMMAND lists them.
	Categories []string
	// Key positions (1-based; 0 when the command takes no key; LastKey -1 means
	// the last argument): Redis's legacy key range, derived from its key
	// specs.
	FirstKey, LastKey, Step int
	// Docs for COMMAND DOCS.
	Summary, Since, Group, Complexity string
	// Subcommands, for container commands such as CLIENT and CONFIG.
	Subcommands []*Command
	// Run is the handler; nil for a container that only runs its
	// subcommands (COMMAND alone runs too).
	Run Handler

	// Optional metadata, reported by COMMAND INFO and COMMAND DOCS exactly
	// as Redis does when set. Tips are the command tips
	// ("nondeterministic_output", "request_policy:all_shards"). KeySpecs
	// say where the keys are (COMMAND GETKEYS finds them from these).
	// History is (version, change) pairs; Args the argument tree. DocFlags
	// ("deprecated", "syscmd"), DeprecatedSince and ReplacedBy are those
	// of a deprecated command.
	Tips            []string
	KeySpecs        []KeySpec
	History         [][2]string
	Args            []Arg
	DocFlags        []string
	DeprecatedSince string
	ReplacedBy      string

	// hint is what Prefetch tells the store of the command's key, set by
	// Add (see hintOf).
	hint prefetchHint
	// MayReplicate is the Row's (see Row): the script bridge refuses the
	// command in a read-only script.
	MayReplicate bool
	// SeveralReplies is the Row's (see Row): the server accepts any number
	// of complete replies from it.
	SeveralReplies bool
	// The other facts of the command's Row (see Row), set by Register.
	runsInMulti, readsFirst, replaces bool
	subscribedOK                      bool
	keysProc                          func(args [][]byte) []keyRef
}

// KeySpec is one key specification of COMMAND INFO: where the search for
// keys begins (an argument Index, or after Keyword searched from
// StartFrom) and how keys are found from there (a range, or a count at
// KeyNumIdx when KeyNum is set).
type KeySpec struct {
	Notes string
	// Flags such as "RO", "RW", "OW", "RM", "access", "update", "insert",
	// "delete", "not_key", "incomplete", "variable_flags".
	Flags []string

	Index     int
	Keyword   string
	StartFrom int

	// Unknown: both the begin search and the find keys step are of type
	// "unknown" (SORT's BY/GET and STORE keys); the fields below are unused.
	Unknown bool

	// Range: LastKey (relative to the first key; -1 the last argument),
	// KeyStep and Limit. KeyNum: KeyNumIdx, FirstKey and KeyStep.
	KeyNum    bool
	LastKey   int
	KeyStep   int
	Limit     int
	KeyNumIdx int
	FirstKey  int
}

// Arg is one argument of COMMAND DOCS. Type is "string", "integer",
// "double", "key", "pattern", "unix-time", "pure-token", "oneof" or
// "block" (the last two have Args). KeySpecIndex is meaningful for "key"
// arguments (and patterns with PatternKeys) only. Flags: "optional", "multiple", "multiple_token".
type Arg struct {
	Name, Type   string
	KeySpecIndex int
	// PatternKeys: a pattern naming keys (SORT's BY and GET), which
	// reports a KeySpecIndex as a key does.
	PatternKeys     bool
	Token, Summary  string
	Since           string
	DeprecatedSince string
	Flags           []string
	Args            []Arg
}

// HasFlag reports whether the command has flag f.
func (c *Command) HasFlag(f string) bool {
	for _, x := range c.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// ArityOK reports whether n arguments (including the name) satisfy the arity.
func (c *Command) ArityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// Table is the command table. It is built once at start-up and read-only after.
type Table struct {
	cmds map[string]*Command
	// byName holds the commands again, open-addressed by foldHash of their
	// names, so that a name as sent is found in any case with one pass
	// over its bytes, rather than by a lookup in cmds as sent and another
	// lowered (clients send "GET"). Its length is a power of two, at
	// most half full.
	byName []*Command
}

// families lists every family's registration function, one per file.
var families = []func(*Table){
	registerConnection,
	registerServer,
	registerStrings,
	registerBitmaps,
	registerHyperLogLog,
	registerLCS,
	registerKeys,
	registerDump,
	registerHashes,
	registerSets,
	registerZsets,
	registerGeo,
	registerLists,
	registerSort,
	registerStreams,
	registerTransactions,
	registerLocks,
	registerLeaders,
	registerQueues,
	registerPubSub,
	registerThrottle,
}

// NewTable returns the table with every supported command registered.
func NewTable() *Table {
	t := &Table{}
	for _, reg := range families {
		reg(t)
	}
	return t
}

//go:generate go run ../scripts/gencmddocs -json=$REDIS_COMMANDS_JSON -pkg=.,../scripting -out redis_commands_gen.go

// Row registers one command: its name, lower case ("get"; "client|list"
// for a subcommand, whose container comes with it), and its handler.
// Everything COMMAND reports about the command is Redis 7.0.15's, from
// redisCommands (generated from Redis's own command table), or redamo's
// own for a command in redamoCommands.
//
// The other fields are what redamo knows of a command beyond what COMMAND
// reports, set in the rows of the few commands they apply to.
type Row struct {
	Name string
	Run  Handler

	// RunsInMulti: the command runs at once inside MULTI instead of being
	// queued (Redis's processCommand: EXEC, DISCARD, MULTI, WATCH, QUIT,
	// RESET; redamo's LOCK.GUARD and LEADER.GUARD, which fence the EXEC).
	RunsInMulti bool
	// InSubscribed: a RESP2 client with subscriptions may run it (Redis's
	// processCommand: the (P|S)(UN)SUBSCRIBE commands, PING, QUIT, RESET).
	InSubscribed bool
	// SeveralReplies: the command answers with one reply per argument
	// (the (P|S)(UN)SUBSCRIBE commands), not one in all.
	SeveralReplies bool
	// MayReplicate: Redis flags the command may_replicate, a flag COMMAND
	// INFO does not show; a read-only script refuses it as a write.
	MayReplicate bool
	// ReadsFirst: a write whose store request is decided on the item as
	// stored (INCR's update is conditioned on the value it adds to):
	// Prefetch hints its key as a read, so the embedded store reads the
	// item it then writes.
	ReadsFirst bool
	// Replaces: a write for which finding the item it replaces is all it
	// does with it (SET): Prefetch hints its key as replaced (hinted as a
	// read, the store would read an item nobody needs).
	Replaces bool
	// Keys finds the keys of a command whose key specs do not say where
	// all of them are (a spec of type unknown): Redis's getkeys_proc, which
	// COMMAND GETKEYS uses.
	Keys func(args [][]byte) []keyRef
}

// Register adds a family's commands. A name with no metadata, or
// registered twice, is a programming error and panics (in NewTable, at
// start-up).
func (t *Table) Register(rows []Row) {
	cmds := make([]*Command, len(rows))
	for i, r := range rows {
		c := *metadata(r.Name)
		c.Name, c.Run = r.Name, r.Run
		c.runsInMulti, c.MayReplicate, c.readsFirst, c.replaces = r.RunsInMulti, r.MayReplicate, r.ReadsFirst, r.Replaces
		c.keysProc = r.Keys
		c.subscribedOK, c.SeveralReplies = r.InSubscribed, r.SeveralReplies
		cmds[i] = &c
	}
	t.Add(cmds...)
}

// metadata returns the metadata of the command name ("get", "client|list").
func metadata(name string) *Command {
	if m := redamoCommands[name]; m != nil {
		return m
	}
	if m := redisCommands[name]; m != nil {
		return m
	}
	panic(fmt.Sprintf("commands: no metadata for %q: add it to the table with go generate (see scripts/gencmddocs), or to redamoCommands", name))
}

// Add adds commands that carry their own metadata: Register's, and test
// commands. A subcommand ("client|list") goes into its container, which
// the first of its subcommands adds from its metadata unless the container
// came first with a handler of its own (COMMAND). A duplicate name is a
// programming error and panics.
func (t *Table) Add(cmds ...*Command) {
	if t.cmds == nil {
		t.cmds = map[string]*Command{}
	}
	for _, c := range cmds {
		name := strings.ToLower(c.Name)
		c.Name = name
		c.hint = hintOf(c)
		parentName, sub, isSub := strings.Cut(name, "|")
		if !isSub {
			if _, dup := t.cmds[name]; dup {
				panic(fmt.Sprintf("commands: %q registered twice", name))
			}
			t.cmds[name] = c
			continue
		}
		parent := t.cmds[parentName]
		if parent == nil {
			p := *metadata(parentName)
			p.Name = parentName
			parent = &p
			t.cmds[parentName] = parent
		}
		if parent.Subcommand([]byte(sub)) != nil {
			panic(fmt.Sprintf("commands: %q registered twice", name))
		}
		parent.Subcommands = append(parent.Subcommands, c)
	}
	n := 64
	for n < 2*len(t.cmds) {
		n *= 2
	}
	t.byName = make([]*Command, n)
	for _, c := range t.cmds {
		i := foldHash(c.Name)
		for t.byName[i&uint32(n-1)] != nil {
			i++
		}
		t.byName[i&uint32(n-1)] = c
	}
}

// Lookup finds a command by name, case-insensitively.
func (t *Table) Lookup(name string) *Command { return lookup(t, name) }

// lookup is Lookup for a name as a string or as the bytes a client sent.
func lookup[T string | []byte](t *Table, name T) *Command {
	if len(t.byName) == 0 {
		return nil
	}
	mask := uint32(len(t.byName) - 1)
	for i := foldHash(name); ; i++ {
		c := t.byName[i&mask]
		if c == nil || equalFold(c.Name, name) {
			return c
		}
	}
}

// foldHash is the FNV-1a hash of s in lower case (ASCII).
func foldHash[T string | []byte](s T) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(lowerASCII(s[i]))) * 16777619
	}
	return h
}

// equalFold reports whether name, in any case (ASCII), is lower.
func equalFold[T string | []byte](lower string, name T) bool {
	if len(lower) != len(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if lowerASCII(name[i]) != lower[i] {
			return false
		}
	}
	return true
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// All returns every command sorted by name.
func (t *Table) All() []*Command {
	out := make([]*Command, 0, len(t.cmds))
	for _, c := range t.cmds {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Ctx is everything one command invocation sees.
type Ctx struct {
	context.Context
	// Args holds the command name (as sent) and its arguments.
	Args [][]byte
	W    Writer
	// Target is where the command's requests go: the server's store, or
	// the Txn of the unit of work it runs in. It gives Ctx model.Scope's
	// Data.
	model.Target
	Conn *Conn
	Srv  *Server
	// InTx is set for a command EXEC runs: it must not block (a blocking
	// command answers at once, as if its timeout had passed).
	InTx bool
	// InScript is set for a command a script runs (redis.call): Redis
	// flags its client CLIENT_SCRIPT, and SORT then orders what it would
	// otherwise return in a set's own order (sort.go).
	InScript bool
	// OnPark, when set, is what Park calls: the connection's cue that the
	// command is about to wait (resp sends the replies it holds for the
	// client, and watches the client while the command waits).
	OnPark func()
	// now is fixed per command, so all expiry checks in one command agree.
	now time.Time
	// local is the local clock's reading now derives from (zero on a test
	// clock, or until now is read).
	local time.Time
	// end is Server.Run's local clock reading as the command finished.
	end time.Time
	// events, when set, holds the events the command reports until the
	// unit of work it runs in commits (notify.go).
	events *eventBuf
	// notes are what the model told of the keys the command created or
	// emptied, for the events that follow from it (notify.go).
	notes keyNotes
}

// SetNow makes t, a reading of the local clock taken just before (End of
// the command before it in a pipeline), the one the command's clock
// reading derives from: Now adds the store's offset to it (Server.Now).
// One read of the clock fewer per command.
func (c *Ctx) SetNow(t time.Time) { c.now, c.local = time.Time{}, t }

// End returns the local clock reading Server.Run took as the command
// finished: the reading SetNow may give the command right after it. It is
// zero on a test clock (Server.Clock), or before the command ran.
func (c *Ctx) End() time.Time { return c.end }

// Now returns the command's clock reading (fixed for the whole command):
// Server.Now as the command was dispatched.
func (c *Ctx) Now() time.Time {
	if c.now.IsZero() {
		if c.local.IsZero() || c.Srv.Clock != nil {
			c.now, c.local = c.Srv.readClock()
		} else {
			c.now = c.local.Add(c.Srv.clockOffset())
		}
	}
	return c.now
}

// LostRace is model.Retry.Lost for an attempt of this command that lost a
// race: once it allows another attempt, the command reads the clock
// again, so that the next attempt decides expiry as of when it runs, not
// as of the first attempt (a command may keep losing for seconds).
func (c *Ctx) LostRace(r *model.Retry) error {
	if err := r.Lost(c); err != nil {
		return err
	}
	c.readClockAgain()
	return nil
}

// readClockAgain makes Now a fresh clock reading. A command that read an
// item takes one after the read when its reply depends on the time: a
// reading from before it could precede the time of a command that wrote
// the item meanwhile, deciding this one as of before that one although it
// is ordered after it.
func (c *Ctx) readClockAgain() { c.now, c.local = c.Srv.readClock() }

// Park tells the connection that the command is about to wait (a blocked
// pop, XREAD BLOCK, LOCK.ACQUIRE ... WAIT): as in Redis, the replies of
// the requests before it go out now rather than once it is over, and a
// client that leaves meanwhile ends the wait (the context is cancelled).
// Every wait calls it once it knows it must wait, never when it is served
// at once; calling it again is harmless. It implements wait.Parker.
func (c *Ctx) Park() {
	if c.OnPark != nil {
		c.OnPark()
	}
}

var _ wait.Parker = (*Ctx)(nil)

// NowMS returns Now in Unix milliseconds.
func (c *Ctx) NowMS() int64 { return c.Now().UnixMilli() }

// DB is the connection's selected database.
func (c *Ctx) DB() int { return c.Conn.DB }

// Process is the server's share of the data model (model.Scope).
func (c *Ctx) Process() *model.Process { return c.Srv.dataModel() }

// Conn is the per-connection state. Fields other connections may read (CLIENT
// LIST) are guarded by mu; the owning connection's goroutine is the only writer.
type Conn struct {
	mu sync.Mutex

	ID        int64
	Addr      string
	LocalAddr string
	// FD is the socket's file descriptor (CLIENT LIST), -1 if unknown.
	FD      int
	Created time.Time

	// DB is the selected database, 0..NumDBs-1.
	DB int
	// Proto is the RESP version, 2 or 3.
	Proto int
	// Authed is true once AUTH succeeded (or when no password is set).
	Authed bool
	// CloseAfterReply makes the server close the connection once the
	// current reply is flushed (QUIT).
	CloseAfterReply bool
	// NoReply tells the server that the command ran has no reply (a
	// second MONITOR, SHUTDOWN): it writes none, once.
	NoReply bool

	name, libName, libVer string
	lastCmd               string
	lastActive            time.Time
	// pubDB and pubProto are DB and Proto as last published for other
	// connections' CLIENT LIST (DB and Proto themselves are owner-only).
	pubDB, pubProto int
	// tally holds the connection's calls not yet in the command statistics
	// (owner-only).
	tally commandTally
	// Requests, when set, holds the store requests of the connection's
	// commands until FlushStats (the server puts it in their contexts,
	// where the store counts into it).
	Requests *model.Tally
	// prefetch is Server.Prefetch's reused memory (owner-only).
	prefetch prefetchScratch
	// scratch is memory its commands hand the store and reuse (owner-only).
	scratch requestScratch
	// tx is the MULTI and WATCH state (owner-only).
	tx txState
	// multiLen is 1 + the number of commands queued while in MULTI or
	// running EXEC, 0 otherwise: tx as CLIENT LIST shows it to others.
	multiLen atomic.Int64
	// Sub is the connection as a pub/sub subscriber (set by the server
	// that owns the socket; nil where nothing can be pushed).
	Sub pubsub.Subscriber
	// subscribed is set while the connection holds a subscription (Redis's
	// CLIENT_PUBSUB: flag P, and RESP2's subscribed mode); owner-only.
	subscribed bool
	// tracking is the CLIENT TRACKING mode, nil when off (tracking.go).
	tracking atomic.Pointer[trackingState]
}

// FlushStats adds the connection's calls and store requests counted so far
// to the command and request statistics. The server calls it before it
// writes replies.
func (c *Conn) FlushStats() {
	c.tally.flush()
	if c.Requests != nil {
		c.Requests.Flush()
	}
}

// Publish makes DB and Proto visible to other connections (CLIENT LIST); the
// server calls it after every command of this connection.
func (cn *Conn) Publish() {
	cn.mu.Lock()
	cn.pubDB, cn.pubProto = cn.DB, cn.Proto
	cn.mu.Unlock()
}

// Published returns DB and Proto as of the connection's last Publish.
func (cn *Conn) Published() (db, proto int) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.pubDB, cn.pubProto
}

// SetName sets the client name (CLIENT SETNAME, HELLO SETNAME).
func (cn *Conn) SetName(s string) {
	cn.mu.Lock()
	cn.name = s
	cn.mu.Unlock()
}

// Name returns the client name.
func (cn *Conn) Name() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.name
}

// SetLib records CLIENT SETINFO LIB-NAME / LIB-VER (empty leaves a field as is).
func (cn *Conn) SetLib(name, ver string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if name != "" {
		cn.libName = name
	}
	if ver != "" {
		cn.libVer = ver
	}
}

// Lib returns the library name and version.
func (cn *Conn) Lib() (name, ver string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.libName, cn.libVer
}

// Touch records the command being run and when.
func (cn *Conn) Touch(cmd string, at time.Time) {
	cn.mu.Lock()
	cn.lastCmd, cn.lastActive = cmd, at
	cn.mu.Unlock()
}

// Last returns the last command and when it ran.
func (cn *Conn) Last() (string, time.Time) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.lastCmd, cn.lastActive
}

// NumDBs is the number of databases SELECT accepts (Redis's default).
const NumDBs = 16
