package commands

import "slices"

// redamoCommands holds the metadata of the commands redamo reports other
// than redis-server 7.0.15 does (redisCommands): Register takes a
// command's metadata from here first.
//
// CLIENT SETINFO is Redis 7.2's, which clients (go-redis, redis-py) send
// as they connect; redamo answers it as Redis 7.2 does.
//
// CL.THROTTLE is redis-cell's (a module), reported as Redis 7.0 reports
// it with redis-cell loaded: arity -1 (redis-cell counts its arguments
// itself, with its own usage error), flags write and module, group
// "module", a key spec made from its key range (1, 1, 1), since the
// redis-cell release that named it. Redis gives a
// module command no ACL categories; redamo gives the ones Redis derives
// for any command flagged write and not fast, as clients expect some.
var redamoCommands = map[string]*Command{
	"cl.throttle": {
		Arity: -1, Flags: []string{FlagWrite, "module"}, Categories: []string{"write", "slow"},
		FirstKey: 1, LastKey: 1, Step: 1,
		KeySpecs: []KeySpec{{Flags: []string{"RW", "access", "update"}, Index: 1, KeyStep: 1}},
		Summary:  "Applies a quantity to a key's rate limit (redis-cell's generic cell rate algorithm)",
		Since:    "0.2.0", Group: "module", Complexity: "O(1)",
		Args: []Arg{
			{Name: "key", Type: "key"},
			{Name: "max_burst", Type: "integer"},
			{Name: "count_per_period", Type: "integer"},
			{Name: "period", Type: "integer"},
			{Name: "quantity", Type: "integer", Flags: []string{"optional"}},
		},
	},
	"client|setinfo": {
		Arity: 4, Flags: []string{FlagNoScript, FlagLoading, FlagStale}, Categories: []string{"slow", "connection"},
		Summary: "Set client or connection specific info", Since: "7.2.0", Group: "connection", Complexity: "O(1)",
		Args: []Arg{{Name: "attr", Type: "oneof", Args: []Arg{
			{Name: "libname", Type: "string", Token: "LIB-NAME"},
			{Name: "libver", Type: "string", Token: "LIB-VER"},
		}}},
	},

	// LOCK.* and LEADER.*: redamo's coordination commands (locks.go,
	// leaders.go). Lock and election names are not keys (their state lives
	// apart from the keyspace), so they declare no key positions.
	"lock.acquire": {
		Arity: -3, Flags: []string{FlagWrite, FlagBlocking}, Categories: []string{"write", "slow", "blocking"},
		Summary: "Acquire a lock for an owner with a TTL, returning its fencing token", Since: "redamo", Group: "lock", Complexity: "O(1)",
		Args: []Arg{{Name: "name", Type: "string"}, {Name: "owner", Type: "string"}, leaseTTLArg, leaseWaitArg("WAIT")},
	},
	"lock.release": {
		Arity: -3, Flags: []string{FlagWrite, "fast"}, Categories: []string{"write", "fast"},
		Summary: "Release a lock held by an owner", Since: "redamo", Group: "lock", Complexity: "O(1)",
		Args: []Arg{{Name: "name", Type: "string"}, {Name: "owner", Type: "string"}, leaseFenceArg},
	},
	"lock.extend": {
		Arity: -5, Flags: []string{FlagWrite, "fast"}, Categories: []string{"write", "fast"},
		Summary: "Reset the TTL of a lock its owner still holds", Since: "redamo", Group: "lock", Complexity: "O(1)",
		Args: []Arg{{Name: "name", Type: "string"}, {Name: "owner", Type: "string"}, leaseTTLRequiredArg, leaseFenceArg},
	},
	"lock.check": {
		Arity: 2, Flags: []string{FlagReadonly, "fast"}, Categories: []string{"read", "fast"},
		Summary: "Return a lock's owner, fencing token, TTL and acquisition time", Since: "redamo", Group: "lock", Complexity: "O(1)",
		Args: []Arg{{Name: "name", Type: "string"}},
	},
	"lock.guard": {
		Arity: 3, Flags: []string{"fast"}, Categories: []string{"fast", "transaction"},
		Summary: "Fence the next EXEC (or the running script) with a lock's fencing token", Since: "redamo", Group: "lock", Complexity: "O(1)",
		Args: []Arg{{Name: "name", Type: "string"}, {Name: "token", Type: "integer"}},
	},
	"leader.elect": {
		Arity: -3, Flags: []string{FlagWrite, FlagBlocking}, Categories: []string{"write", "slow", "blocking"},
		Summary: "Run for leader of an election, returning the term when elected", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}, {Name: "candidate", Type: "string"},
			{Name: "milliseconds", Type: "integer", Token: "PX", Flags: []string{"optional"}}, leaseWaitArg("WAIT"),
			{Name: "value", Type: "string", Token: "VALUE", Flags: []string{"optional"}}},
	},
	"leader.heartbeat": {
		Arity: -3, Flags: []string{FlagWrite, "fast"}, Categories: []string{"write", "fast"},
		Summary: "Extend the sitting leader's lease", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}, {Name: "candidate", Type: "string"},
			{Name: "milliseconds", Type: "integer", Token: "PX", Flags: []string{"optional"}}},
	},
	"leader.resign": {
		Arity: 3, Flags: []string{FlagWrite, "fast"}, Categories: []string{"write", "fast"},
		Summary: "Step down as leader", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}, {Name: "candidate", Type: "string"}},
	},
	"leader.check": {
		Arity: 2, Flags: []string{FlagReadonly, "fast"}, Categories: []string{"read", "fast"},
		Summary: "Return an election's leader, term, value, TTL, election and heartbeat times", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}},
	},
	"leader.watch": {
		Arity: -3, Flags: []string{FlagReadonly, FlagBlocking}, Categories: []string{"read", "slow", "blocking"},
		Summary: "Wait until an election is no longer led in a term", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}, {Name: "term", Type: "integer"}, leaseWaitArg("BLOCK")},
	},
	"leader.guard": {
		Arity: 3, Flags: []string{"fast"}, Categories: []string{"fast", "transaction"},
		Summary: "Fence the next EXEC (or the running script) with a leader's term", Since: "redamo", Group: "leader", Complexity: "O(1)",
		Args: []Arg{{Name: "election", Type: "string"}, {Name: "term", Type: "integer"}},
	},

	// QUEUE.*: redamo's work queues (queues.go). Queue names are not keys.
	"queue.push": queueCmd(-3, []string{FlagWrite, "denyoom", "fast"}, "Push a message onto a queue, returning its id",
		Arg{Name: "queue", Type: "string"}, Arg{Name: "payload", Type: "string"},
		optInt("priority", "PRIORITY"), optInt("milliseconds", "DELAY"), Arg{Name: "id", Type: "string", Token: "DEDUP", Flags: []string{"optional"}}),
	"queue.pop": queueCmd(-2, []string{FlagWrite, FlagBlocking}, "Receive messages from a queue, invisible to others for a visibility timeout",
		Arg{Name: "queue", Type: "string"}, optInt("count", "COUNT"), optInt("milliseconds", "VT"), optInt("timeout", "BLOCK")),
	"queue.ack": queueCmd(-3, []string{FlagWrite, "fast"}, "Acknowledge (delete) delivered messages by receipt",
		Arg{Name: "queue", Type: "string"}, Arg{Name: "receipt", Type: "string", Flags: []string{"multiple"}}),
	"queue.nack": queueCmd(-3, []string{FlagWrite, "fast"}, "Make a delivered message visible again",
		Arg{Name: "queue", Type: "string"}, Arg{Name: "receipt", Type: "string"}, optInt("milliseconds", "DELAY")),
	"queue.extend": queueCmd(5, []string{FlagWrite, "fast"}, "Keep a delivered message invisible for longer",
		Arg{Name: "queue", Type: "string"}, Arg{Name: "receipt", Type: "string"}, Arg{Name: "milliseconds", Type: "integer", Token: "VT"}),
	"queue.peek": queueCmd(-2, []string{FlagReadonly}, "Return the next ready messages without receiving them",
		Arg{Name: "queue", Type: "string"}, optInt("count", "COUNT")),
	"queue.len": queueCmd(2, []string{FlagReadonly}, "Return the number of ready messages",
		Arg{Name: "queue", Type: "string"}),
	"queue.stats": queueCmd(2, []string{FlagReadonly}, "Return a queue's message counts and counters",
		Arg{Name: "queue", Type: "string"}),
	"queue.config": queueCmd(-3, []string{FlagWrite}, "Get or set a queue's visibility timeout, receive limit, dead-letter queue, dedup window and shards",
		Arg{Name: "queue", Type: "string"}, Arg{Name: "operation", Type: "oneof", Args: []Arg{
			{Name: "get", Type: "pure-token", Token: "GET"},
			{Name: "set", Type: "block", Token: "SET", Args: []Arg{
				optInt("milliseconds", "VT"), optInt("count", "MAXRECEIVES"), {Name: "queue", Type: "string", Token: "DLQ", Flags: []string{"optional"}},
				optInt("milliseconds", "DEDUPWINDOW"), optInt("shards", "SHARDS")}},
		}}),
	"queue.redrive": queueCmd(-3, []string{FlagWrite}, "Move dead (or dead-lettered) messages back to a queue",
		Arg{Name: "source", Type: "string"}, Arg{Name: "destination", Type: "string"}, optInt("count", "COUNT")),
	"queue.purge": queueCmd(2, []string{FlagWrite}, "Delete every message of a queue",
		Arg{Name: "queue", Type: "string"}),
}

func queueCmd(arity int, flags []string, summary string, args ...Arg) *Command {
	cats := []string{"slow"}
	if slices.Contains(flags, "fast") {
		cats = []string{"fast"}
	}
	if slices.Contains(flags, FlagWrite) {
		cats = append([]string{"write"}, cats...)
	} else {
		cats = append([]string{"read"}, cats...)
	}
	if slices.Contains(flags, FlagBlocking) {
		cats = append(cats, "blocking")
	}
	return &Command{Arity: arity, Flags: flags, Categories: cats, Summary: summary, Since: "redamo", Group: "queue", Complexity: "O(1)", Args: args}
}

func optInt(name, token string) Arg {
	return Arg{Name: name, Type: "integer", Token: token, Flags: []string{"optional"}}
}

// Argument trees shared by the coordination commands' metadata.
var (
	leaseTTLArg = Arg{Name: "expiration", Type: "oneof", Flags: []string{"optional"}, Args: []Arg{
		{Name: "milliseconds", Type: "integer", Token: "PX"},
		{Name: "seconds", Type: "integer", Token: "EX"},
	}}
	leaseTTLRequiredArg = Arg{Name: "expiration", Type: "oneof", Args: leaseTTLArg.Args}
	leaseFenceArg       = Arg{Name: "token", Type: "integer", Token: "FENCE", Flags: []string{"optional"}}
)

func leaseWaitArg(token string) Arg {
	return Arg{Name: "milliseconds", Type: "integer", Token: token, Flags: []string{"optional"}}
}
