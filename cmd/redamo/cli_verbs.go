package main

// The CLI's verbs: each becomes one redamo command (two where it says so),
// and reads its reply into a result. The examples run in order on an
// empty store, with REDAMO_OWNER=alice@build-1:4242, give exactly the
// outputs shown (TestCLIHelpExamples checks them), so `redamo help` is a
// transcript.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redamo/redamo/commands"
)

// verb is one CLI operation.
type verb struct {
	// name is "get", or "lock acquire" for a category's operation.
	name string
	// group is the help section.
	group string
	// args is the usage of the positional arguments.
	args             string
	minArgs, maxArgs int // maxArgs -1: any number
	flags            []string
	// flagHelp replaces a flag's usage for this verb.
	flagHelp map[string]string
	// runs is the redamo command the verb becomes.
	runs    string
	summary string
	// example is a command line (after "redamo ") and output its JSON.
	example, output string
	// meanwhile, for a verb that runs until interrupted (watch): the
	// commands (after "redamo ") another shell runs while the example
	// runs, which make its output; note is its line on stderr, if any.
	meanwhile []string
	note      string
	// stdin is what the example reads on standard input ("": nothing).
	stdin string
	// external: the example copies from or to a redis-server of its own
	// (TestCLIImportExport runs it), so the examples' run leaves it out.
	external bool
	// table: the verb acts on the DynamoDB table itself (create-table),
	// opening it on its own, rather than through a redamo command.
	table bool
	// value is the field --format value prints ("": none).
	value string
	// build checks the arguments and flags (usage errors, before
	// anything is opened) and returns what runs the verb.
	build func(x *invocation) (func() result, error)
}

// category is the first word of a two-word verb ("lock"), "" otherwise.
func (v *verb) category() string {
	c, _, ok := strings.Cut(v.name, " ")
	if !ok {
		return ""
	}
	return c
}

// result is what a verb printed and how it exits.
type result struct {
	obj  object
	code int
	// note is one line on stderr: why the answer is no, who holds it.
	note string
	err  error
}

// answer is a result whose exit code says yes (0) or no (1).
func answer(o object, yes bool) result {
	if yes {
		return result{obj: o}
	}
	return result{obj: o, code: exitNo}
}

func failed(err error) result { return result{err: err} }

// verbFlags are the verbs' own flags; verb.flags names which apply.
var verbFlags = map[string]flagDef{
	"ttl":       {name: "ttl", arg: "D", usage: "the lease: how long it lasts unless extended (default 30s)"},
	"if-absent": {name: "if-absent", isBool: true, usage: "set only if KEY does not exist (SET ... NX); exit 1 when it does"},
	"by":        {name: "by", arg: "N", usage: "step, an integer (default 1)"},
	"count":     {name: "count", arg: "N", usage: "pop up to N values (a list in the output)"},
	"owner":     {name: "owner", arg: "ID", usage: "lock owner (default: $REDAMO_OWNER, else user@host:PID of the calling shell)"},
	"id":        {name: "id", arg: "ID", usage: "candidate id (default: $REDAMO_OWNER, else user@host:PID of the calling shell)"},
	"wait":      {name: "wait", arg: "D", usage: "how long to wait for the holder to let go (default: one try, no wait)"},
	"fence":     {name: "fence", arg: "N", usage: "act only if the lock is held with this fencing token"},
	"value":     {name: "value", arg: "V", usage: "the leader's value, for others to read (e.g. its address)"},
	"term":      {name: "term", arg: "N", usage: "wait until this term is over (default: the current term; 0: until anyone leads)"},
	// queues (cli_queue.go)
	"priority":           {name: "priority", arg: "N", usage: "lower is served first (default 0)"},
	"delay":              {name: "delay", arg: "D", usage: "keep the message invisible for D first (default: none)"},
	"dedup-id":           {name: "dedup-id", arg: "ID", usage: "push nothing if ID was pushed within the queue's dedup window; print the first message's id"},
	"visibility-timeout": {name: "visibility-timeout", arg: "D", usage: "how long a received message stays invisible to others (default: the queue's, 30s)"},
	"max-receives":       {name: "max-receives", arg: "N", usage: "deliveries after which a message goes to the dead-letter queue (0: no limit)"},
	"dlq":                {name: "dlq", arg: "QUEUE", usage: "the dead-letter queue (\"\": none: dead messages stay, as dead, in the queue)"},
	"dedup-window":       {name: "dedup-window", arg: "D", usage: "how long a --dedup-id is remembered (default 5m)"},
	"shards":             {name: "shards", arg: "N", usage: "partitions the queue spreads over (default 4)"},
	// keys (cli_keys.go)
	"default":  {name: "default", arg: "V", usage: "print V (and exit 0) when there is no KEY"},
	"if-value": {name: "if-value", arg: "V", usage: "delete only if KEY holds V; exit 1 (nothing deleted) when it holds another value"},
	"create":   {name: "create", isBool: true, usage: "create a missing counter (at 0, then the step); without it a missing counter exits 1"},
	"limit":    {name: "limit", arg: "N", usage: "at most N keys (the scan stops once it has found N)"},
}

// exampleIdentity is the owner the examples were run with.
const exampleIdentity = "alice@build-1:4242"

// verbs are every verb, in the order help shows them and their examples run.
var verbs = slices.Concat(keyVerbs, queueVerbs, []verb{txVerb, watchVerb}, migrateVerbs, tableVerbs, []verb{execVerb})

var keyVerbs = []verb{
	// ---- keys and counters
	{name: "set", group: "keys", args: "KEY VALUE", minArgs: 2, maxArgs: 2, flags: []string{"ttl", "if-absent"},
		flagHelp: map[string]string{"ttl": "expire the key after D (default: never)"},
		runs:     "SET KEY VALUE [PX ms] [NX]", summary: "Set KEY to VALUE; with --if-absent exit 1 (and set nothing) when KEY exists.",
		example: "set greeting hello --ttl 1h", output: `{"key":"greeting","value":"hello","set":true,"ttl_ms":3600000}`,
		value: "set", build: buildSet},
	{name: "get", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"default"},
		runs: "GET KEY", summary: "The value of KEY; exit 1 (value null) when there is none, unless --default gives one.",
		example: "get greeting", output: `{"key":"greeting","value":"hello"}`,
		value: "value", build: buildGet},
	{name: "exists", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1,
		runs: "EXISTS KEY", summary: "Whether KEY exists; exit 1 when it does not.",
		example: "exists greeting", output: `{"key":"greeting","exists":true}`,
		value: "exists", build: keyInt("EXISTS", "exists", true)},
	{name: "expire", group: "keys", args: "KEY D", minArgs: 2, maxArgs: 2,
		runs: "PEXPIRE KEY ms", summary: "Make KEY expire D from now (30s, 5m, 1500ms); exit 1 when there is no KEY.",
		example: "expire greeting 10m", output: `{"key":"greeting","expires":true,"ttl_ms":600000}`,
		value: "expires", build: buildExpire},
	{name: "ttl", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1,
		runs: "PTTL KEY", summary: "How long KEY has left (pttl_ms null: it never expires); exit 1 when there is no KEY.",
		example: "ttl greeting", output: `{"key":"greeting","exists":true,"pttl_ms":599998}`,
		value: "pttl_ms", build: buildTTL},
	{name: "list", group: "keys", args: "[PREFIX]", minArgs: 0, maxArgs: 1, flags: []string{"limit"},
		runs:    "SCAN cursor MATCH PREFIX* COUNT 1000, until the cursor is 0 (or --limit keys were found)",
		summary: "The keys that start with PREFIX (all keys without it), sorted. --format keys prints one key a line.",
		example: "list gr", output: `{"prefix":"gr","keys":["greeting"]}`,
		value: "keys", build: buildList},
	{name: "delete", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"if-value"},
		runs:    "DEL KEY (with --if-value, a script that deletes KEY only if it holds V: one conditional request)",
		summary: "Delete KEY; exit 1 when there was none, or with --if-value when it holds another value (nothing deleted).",
		example: "delete greeting", output: `{"key":"greeting","deleted":true}`,
		value: "deleted", build: buildDelete},
	{name: "inc", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"by", "create"},
		runs: "INCRBY KEY N if KEY exists (a script), or with --create INCR KEY / INCRBY KEY N",
		summary: "Add 1 (or N) to the integer at KEY; the new value. A missing counter exits 1 and is not created, " +
			"unless --create (which starts it at 0).",
		example: "inc visits --by 5 --create", output: `{"key":"visits","value":5}`,
		value: "value", build: counter("INCR", "INCRBY")},
	{name: "dec", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"by", "create"},
		runs: "DECRBY KEY N if KEY exists (a script), or with --create DECR KEY / DECRBY KEY N",
		summary: "Subtract 1 (or N) from the integer at KEY; the new value. A missing counter exits 1 and is not created, " +
			"unless --create.",
		example: "dec visits", output: `{"key":"visits","value":4}`,
		value: "value", build: counter("DECR", "DECRBY")},
	{name: "get-counter", group: "keys", args: "KEY", minArgs: 1, maxArgs: 1,
		runs: "GET KEY", summary: "The integer at KEY; exit 1 when there is none or it is not an integer.",
		example: "get-counter visits", output: `{"key":"visits","value":4,"type":"counter"}`,
		value: "value", build: buildGetCounter},

	// ---- sets
	{name: "sadd", group: "sets", args: "KEY MEMBER...", minArgs: 2, maxArgs: -1,
		runs: "SADD KEY MEMBER...", summary: "Add members to the set at KEY; how many were new.",
		example: "sadd team alice bob", output: `{"key":"team","added":2}`,
		value: "added", build: keyMembers("SADD", "added", false)},
	{name: "srem", group: "sets", args: "KEY MEMBER...", minArgs: 2, maxArgs: -1,
		runs: "SREM KEY MEMBER...", summary: "Remove members from the set at KEY; exit 1 when none was there.",
		example: "srem team bob", output: `{"key":"team","removed":1}`,
		value: "removed", build: keyMembers("SREM", "removed", true)},
	{name: "sismember", group: "sets", args: "KEY MEMBER", minArgs: 2, maxArgs: 2,
		runs: "SISMEMBER KEY MEMBER", summary: "Whether MEMBER is in the set at KEY; exit 1 when it is not.",
		example: "sismember team alice", output: `{"key":"team","member":"alice","is_member":true}`,
		value: "is_member", build: buildSismember},
	{name: "smembers", group: "sets", args: "KEY", minArgs: 1, maxArgs: 1,
		runs: "SMEMBERS KEY", summary: "The members of the set at KEY, sorted.",
		example: "smembers team", output: `{"key":"team","members":["alice"]}`,
		value: "members", build: buildSmembers},
	{name: "scard", group: "sets", args: "KEY", minArgs: 1, maxArgs: 1,
		runs: "SCARD KEY", summary: "The number of members of the set at KEY.",
		example: "scard team", output: `{"key":"team","count":1}`,
		value: "count", build: keyInt("SCARD", "count", false)},

	// ---- lists
	{name: "rpush", group: "lists", args: "KEY VALUE...", minArgs: 2, maxArgs: -1,
		runs: "RPUSH KEY VALUE...", summary: "Append values to the list at KEY; its new length.",
		example: "rpush jobs build test", output: `{"key":"jobs","length":2}`,
		value: "length", build: keyMembers("RPUSH", "length", false)},
	{name: "lpush", group: "lists", args: "KEY VALUE...", minArgs: 2, maxArgs: -1,
		runs: "LPUSH KEY VALUE...", summary: "Prepend values to the list at KEY (the last given ends up first); its new length.",
		example: "lpush jobs lint", output: `{"key":"jobs","length":3}`,
		value: "length", build: keyMembers("LPUSH", "length", false)},
	{name: "lrange", group: "lists", args: "KEY [START STOP]", minArgs: 1, maxArgs: 3,
		runs: "LRANGE KEY START STOP (default 0 -1: the whole list)", summary: "The values of the list at KEY from START to STOP (negative: from the end).",
		example: "lrange jobs", output: `{"key":"jobs","values":["lint","build","test"]}`,
		value: "values", build: buildLrange},
	{name: "ltrim", group: "lists", args: "KEY START STOP", minArgs: 3, maxArgs: 3,
		runs: "LTRIM KEY START STOP", summary: "Keep only the values of the list at KEY from START to STOP (negative: from the end).",
		example: "ltrim jobs 0 1", output: `{"key":"jobs","start":0,"stop":1}`,
		build: buildLtrim},
	{name: "lpop", group: "lists", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"count"},
		runs: "LPOP KEY [N]", summary: "Remove and return the first value (up to N with --count); exit 1 when the list is empty.",
		example: "lpop jobs", output: `{"key":"jobs","value":"lint"}`,
		value: "value", build: pop("LPOP")},
	{name: "rpop", group: "lists", args: "KEY", minArgs: 1, maxArgs: 1, flags: []string{"count"},
		runs: "RPOP KEY [N]", summary: "Remove and return the last value (up to N with --count); exit 1 when the list is empty.",
		example: "rpop jobs --count 2", output: `{"key":"jobs","values":["build"]}`,
		value: "values", build: pop("RPOP")},

	// ---- locks
	{name: "lock acquire", group: "lock", args: "NAME", minArgs: 1, maxArgs: 1, flags: []string{"owner", "ttl", "wait"},
		runs: "LOCK.ACQUIRE NAME OWNER PX ttl [WAIT ms]",
		summary: "Take the lock for --ttl (default 30s), waiting up to --wait for its holder; prints the fencing token. " +
			"Exit 4 when someone else holds it. Taking a lock the owner holds keeps its token.",
		example: "lock acquire deploy --ttl 5m --wait 1m", output: `{"lock":"deploy","owner":"alice@build-1:4242","acquired":true,"fence":1,"ttl_ms":300000}`,
		value: "fence", build: buildLockAcquire},
	{name: "lock check", group: "lock", args: "NAME", minArgs: 1, maxArgs: 1,
		runs: "LOCK.CHECK NAME", summary: "Who holds the lock, with which token and for how long; exit 1 when it is free.",
		example: "lock check deploy", output: `{"lock":"deploy","held":true,"owner":"alice@build-1:4242","fence":1,"pttl_ms":299998,"acquired_at_ms":1767225600000}`,
		value: "owner", build: buildLockCheck},
	{name: "lock extend", group: "lock", args: "NAME", minArgs: 1, maxArgs: 1, flags: []string{"owner", "ttl", "fence"},
		runs:    "LOCK.EXTEND NAME OWNER PX ttl [FENCE token]",
		summary: "Extend the owner's lease to --ttl (default 30s) from now; exit 1 when the lease had ended or another owner holds it.",
		example: "lock extend deploy --ttl 10m", output: `{"lock":"deploy","owner":"alice@build-1:4242","extended":true,"ttl_ms":600000}`,
		value: "extended", build: buildLockExtend},
	{name: "lock release", group: "lock", args: "NAME", minArgs: 1, maxArgs: 1, flags: []string{"owner", "fence"},
		runs:    "LOCK.RELEASE NAME OWNER [FENCE token]",
		summary: "Release the owner's lock; exit 1 when it was not held any more or another owner holds it.",
		example: "lock release deploy", output: `{"lock":"deploy","owner":"alice@build-1:4242","released":true}`,
		value: "released", build: buildLockRelease},

	// ---- leader election
	{name: "leader elect", group: "leader", args: "POOL", minArgs: 1, maxArgs: 1, flags: []string{"id", "ttl", "wait", "value"},
		runs: "LEADER.ELECT POOL ID PX ttl [WAIT ms] [VALUE v]",
		summary: "Become the pool's leader for --ttl (default 30s), waiting up to --wait; prints the term. " +
			"Exit 4 when another leads. The sitting leader keeps its term (and may change its value).",
		example: "leader elect scheduler --ttl 10s --value 10.0.0.1:8080", output: `{"pool":"scheduler","id":"alice@build-1:4242","elected":true,"term":1,"ttl_ms":10000}`,
		value: "term", build: buildLeaderElect},
	{name: "leader heartbeat", group: "leader", args: "POOL", minArgs: 1, maxArgs: 1, flags: []string{"id", "ttl"},
		runs: "LEADER.HEARTBEAT POOL ID PX ttl", summary: "Extend the leader's reign to --ttl (default 30s) from now; exit 1 when ID no longer leads.",
		example: "leader heartbeat scheduler --ttl 10s", output: `{"pool":"scheduler","id":"alice@build-1:4242","leader":true,"ttl_ms":10000}`,
		value: "leader", build: buildLeaderHeartbeat},
	{name: "leader check", group: "leader", args: "POOL", minArgs: 1, maxArgs: 1,
		runs: "LEADER.CHECK POOL", summary: "Who leads the pool, in which term, with which value; exit 1 when nobody does.",
		example: "leader check scheduler",
		output:  `{"pool":"scheduler","led":true,"leader":"alice@build-1:4242","term":1,"value":"10.0.0.1:8080","pttl_ms":9998,"elected_at_ms":1767225600000,"heartbeat_at_ms":1767225600001}`,
		value:   "leader", build: buildLeaderCheck},
	{name: "leader resign", group: "leader", args: "POOL", minArgs: 1, maxArgs: 1, flags: []string{"id"},
		runs: "LEADER.RESIGN POOL ID", summary: "Step down; exit 1 when ID did not lead.",
		example: "leader resign scheduler", output: `{"pool":"scheduler","id":"alice@build-1:4242","resigned":true}`,
		value: "resigned", build: buildLeaderResign},
	{name: "leader watch", group: "leader", args: "POOL", minArgs: 1, maxArgs: 1, flags: []string{"term", "wait"},
		flagHelp: map[string]string{"wait": "how long to wait for the change (default: without limit)"},
		runs:     "LEADER.WATCH POOL TERM BLOCK ms (without --term, LEADER.CHECK first for the current term)",
		summary:  "Wait until the pool is no longer led in TERM (a new leader, or nobody); then who leads. Exit 1 when --wait ran out first.",
		example:  "leader watch scheduler --term 1", output: `{"pool":"scheduler","changed":true,"leader":null,"term":1,"value":null,"pttl_ms":-2}`,
		value: "leader", build: buildLeaderWatch},
}

// execVerb runs anything else.
var execVerb = verb{name: "exec", group: "exec", args: "COMMAND [ARG...]", minArgs: 1, maxArgs: -1,
	runs: "COMMAND ARG... as given", summary: "Run any redamo command; its reply as JSON (maps with sorted keys). An error reply exits 2 (3 when the store failed).",
	example: "exec HSET user:1 name Ada", output: `{"reply":1}`,
	value: "reply", build: buildExec}

// ---- invocation ----------------------------------------------------------------------

// invocation is one verb's arguments, flags and connection to redamo.
type invocation struct {
	ctx   context.Context
	cli   *cli
	verb  *verb
	pos   []string
	flags map[string]string
	// forever: the command may block without limit (leader watch without
	// --wait, exec); otherwise a call gets a deadline after waitMS.
	forever bool
	waitMS  int64
	// untilSignal: the verb runs until SIGINT or SIGTERM, which end it
	// with exit 0 (watch).
	untilSignal bool
}

// callMargin is how long past its own wait a call may take before the
// CLI gives up on it: the store's bounded retries, the network.
const callMargin = time.Minute

// do runs one redamo command; an error reply comes back as a *replyError.
func (x *invocation) do(args ...string) (commands.Reply, error) {
	c := x.cli
	ctx := x.ctx
	if !x.forever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(x.waitMS)*time.Millisecond+callMargin)
		defer cancel()
	}
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if c.g.verbose {
		fmt.Fprintf(c.errOut, "redamo: %s (%s)\n", quoteArgs(args), c.be.Where())
	}
	start := time.Now()
	r, err := c.be.Do(ctx, b)
	if c.g.verbose {
		var rb bytes.Buffer
		if err != nil {
			rb.WriteString(err.Error())
		} else {
			writeJSON(&rb, replyValue(r))
		}
		fmt.Fprintf(c.errOut, "redamo: -> %s in %s%s\n", rb.String(), time.Since(start).Round(10*time.Microsecond), c.be.Requests())
	}
	if err != nil {
		return r, err
	}
	if r.IsError() {
		return r, &replyError{msg: r.Str}
	}
	return r, nil
}

// quoteArgs writes a command line for the verbose log.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\r\n\"'\\") || !strconv.CanBackquote(a) {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// flag returns a verb flag's value and whether it was given.
func (x *invocation) flag(name string) (string, bool) {
	v, ok := x.flags[name]
	return v, ok
}

func (x *invocation) boolFlag(name string) bool {
	v, ok := x.flags[name]
	if !ok {
		return false
	}
	on, _ := strconv.ParseBool(v) // parseArgs checked it
	return on
}

// Environment variables that give a duration flag its default.
const (
	envDefaultTTL      = "REDAMO_DEFAULT_TTL"      // set --ttl
	envLockTTL         = "REDAMO_LOCK_TTL"         // lock acquire/extend --ttl
	envQueueVisibility = "REDAMO_QUEUE_VISIBILITY" // queue pop --visibility-timeout
)

// msEnv reads a duration flag in milliseconds: the flag, else the
// environment variable env, else def (given reports whether either was).
func (x *invocation) msEnv(name, env string, def int64, allowZero bool) (ms int64, given bool, err error) {
	if _, ok := x.flags[name]; ok {
		return x.ms(name, def, allowZero)
	}
	v := ""
	if env != "" {
		v = x.cli.getenv(env)
	}
	if v == "" {
		return def, false, nil
	}
	ms, err = parseDuration(name, v, allowZero)
	if err != nil {
		// The message names the variable, not the flag.
		return 0, false, usageErr("%s=%s", env, strings.TrimPrefix(err.Error(), "--"+name+" "))
	}
	return ms, true, nil
}

// ms reads a duration flag in milliseconds, def when it is not given.
func (x *invocation) ms(name string, def int64, allowZero bool) (int64, bool, error) {
	v, ok := x.flags[name]
	if !ok {
		return def, false, nil
	}
	n, err := parseDuration(name, v, allowZero)
	return n, true, err
}

// intFlag reads an integer flag.
func (x *invocation) intFlag(name string, def int64, positive bool) (int64, error) {
	v, ok := x.flags[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, usageErr("--%s %q: not an integer", name, v)
	}
	if positive && n <= 0 {
		return 0, usageErr("--%s %d: must be positive", name, n)
	}
	return n, nil
}

// identity is --owner or --id, else the default identity.
func (x *invocation) identity(name string) (string, error) {
	if v, ok := x.flags[name]; ok {
		if v == "" {
			return "", usageErr("--%s must not be empty", name)
		}
		return v, nil
	}
	return defaultIdentity(x.cli.getenv), nil
}

// defaultLeaseMS is a lock's and a leader's lease when --ttl is not given
// (the commands' own default, coord.DefaultTTL, passed explicitly so that
// the output can say it).
const defaultLeaseMS = 30_000

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ---- keys and counters -----------------------------------------------------------------

func buildSet(x *invocation) (func() result, error) {
	key, val := x.pos[0], x.pos[1]
	ttl, hasTTL, err := x.msEnv("ttl", envDefaultTTL, 0, false)
	if err != nil {
		return nil, err
	}
	nx := x.boolFlag("if-absent")
	return func() result {
		args := []string{"SET", key, val}
		if hasTTL {
			args = append(args, "PX", itoa(ttl))
		}
		if nx {
			args = append(args, "NX")
		}
		r, err := x.do(args...)
		if err != nil {
			return failed(err)
		}
		set := !r.IsNull()
		o := object{{"key", key}, {"value", val}, {"set", set}}
		if hasTTL {
			o = append(o, field{"ttl_ms", ttl})
		}
		return answer(o, set)
	}, nil
}

// keyInt is a verb of one key whose integer reply is the result: as a
// boolean (the answer: 0 is no) or as a count.
func keyInt(cmd, name string, asBool bool) func(x *invocation) (func() result, error) {
	return func(x *invocation) (func() result, error) {
		key := x.pos[0]
		return func() result {
			r, err := x.do(cmd, key)
			if err != nil {
				return failed(err)
			}
			if asBool {
				return answer(object{{"key", key}, {name, r.Int > 0}}, r.Int > 0)
			}
			return answer(object{{"key", key}, {name, r.Int}}, true)
		}, nil
	}
}

// keyMembers is a verb of a key and values whose reply is a count; with
// noWhenZero a count of 0 is the answer no.
func keyMembers(cmd, name string, noWhenZero bool) func(x *invocation) (func() result, error) {
	return func(x *invocation) (func() result, error) {
		key := x.pos[0]
		return func() result {
			r, err := x.do(append([]string{cmd}, x.pos...)...)
			if err != nil {
				return failed(err)
			}
			return answer(object{{"key", key}, {name, r.Int}}, !noWhenZero || r.Int > 0)
		}, nil
	}
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ---- sets and lists ---------------------------------------------------------------------

func buildSismember(x *invocation) (func() result, error) {
	key, member := x.pos[0], x.pos[1]
	return func() result {
		r, err := x.do("SISMEMBER", key, member)
		if err != nil {
			return failed(err)
		}
		in := r.Int != 0
		return answer(object{{"key", key}, {"member", member}, {"is_member", in}}, in)
	}, nil
}

// replyStrings returns the elements of an aggregate reply as strings.
func replyStrings(r commands.Reply) []string {
	out := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		out[i] = replyString(e)
	}
	return out
}

func buildSmembers(x *invocation) (func() result, error) {
	key := x.pos[0]
	return func() result {
		r, err := x.do("SMEMBERS", key)
		if err != nil {
			return failed(err)
		}
		members := replyStrings(r)
		sort.Strings(members)
		return answer(object{{"key", key}, {"members", members}}, true)
	}, nil
}

func buildLrange(x *invocation) (func() result, error) {
	key := x.pos[0]
	start, stop := "0", "-1"
	switch len(x.pos) {
	case 2:
		return nil, usageErr("lrange takes START and STOP together (e.g. lrange %s 0 9)", key)
	case 3:
		start, stop = x.pos[1], x.pos[2]
		for _, s := range []string{start, stop} {
			if _, err := strconv.ParseInt(s, 10, 64); err != nil {
				return nil, usageErr("lrange: %q is not an index (an integer; negative counts from the end)", s)
			}
		}
	}
	return func() result {
		r, err := x.do("LRANGE", key, start, stop)
		if err != nil {
			return failed(err)
		}
		return answer(object{{"key", key}, {"values", replyStrings(r)}}, true)
	}, nil
}

func pop(cmd string) func(x *invocation) (func() result, error) {
	return func(x *invocation) (func() result, error) {
		key := x.pos[0]
		n, err := x.intFlag("count", 0, true)
		if err != nil {
			return nil, err
		}
		_, many := x.flag("count")
		return func() result {
			args := []string{cmd, key}
			if many {
				args = append(args, itoa(n))
			}
			r, err := x.do(args...)
			if err != nil {
				return failed(err)
			}
			switch {
			case many:
				return answer(object{{"key", key}, {"values", replyStrings(r)}}, !r.IsNull())
			case r.IsNull():
				return answer(object{{"key", key}, {"value", nil}}, false)
			}
			return answer(object{{"key", key}, {"value", r.Str}}, true)
		}, nil
	}
}

// ---- locks ------------------------------------------------------------------------------

// leaseFlags reads the holder (--owner or --id), --ttl and --wait.
func (x *invocation) leaseFlags(holderFlag string, wait bool) (holder string, ttl int64, waitMS int64, hasWait bool, err error) {
	if holder, err = x.identity(holderFlag); err != nil {
		return
	}
	env := envLockTTL
	if holderFlag != "owner" {
		env = "" // a leader's reign has no variable
	}
	if ttl, _, err = x.msEnv("ttl", env, defaultLeaseMS, false); err != nil {
		return
	}
	if wait {
		waitMS, hasWait, err = x.ms("wait", 0, true)
		x.waitMS = waitMS
	}
	return
}

func buildLockAcquire(x *invocation) (func() result, error) {
	name := x.pos[0]
	owner, ttl, wait, hasWait, err := x.leaseFlags("owner", true)
	if err != nil {
		return nil, err
	}
	return func() result {
		args := []string{"LOCK.ACQUIRE", name, owner, "PX", itoa(ttl)}
		if hasWait {
			args = append(args, "WAIT", itoa(wait))
		}
		r, err := x.do(args...)
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return result{obj: object{{"lock", name}, {"owner", owner}, {"acquired", false}}, code: exitHeld,
				note: fmt.Sprintf("lock %s is held by %s%s; wait for it with --wait, or see `redamo lock check %s`",
					name, x.holderNow("LOCK.CHECK", name, "owner"), waitedFor(hasWait, wait), name)}
		}
		return answer(object{{"lock", name}, {"owner", owner}, {"acquired", true}, {"fence", r.Int}, {"ttl_ms", ttl}}, true)
	}, nil
}

// holderNow names who holds a lease now (a second command, for the note
// of a refusal: the lease may have changed hands since).
func (x *invocation) holderNow(cmd, name, field string) string {
	r, err := x.do(cmd, name)
	if err != nil || r.IsNull() {
		return "another owner"
	}
	h, ok := r.Field(field)
	if !ok {
		return "another owner"
	}
	return strconv.Quote(h.Str)
}

func waitedFor(hasWait bool, ms int64) string {
	if !hasWait || ms == 0 {
		return ""
	}
	return " after waiting " + (time.Duration(ms) * time.Millisecond).String()
}

func buildLockCheck(x *invocation) (func() result, error) {
	name := x.pos[0]
	return func() result {
		r, err := x.do("LOCK.CHECK", name)
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return answer(object{{"lock", name}, {"held", false}}, false)
		}
		return answer(object{{"lock", name}, {"held", true},
			{"owner", fieldValue(r, "owner")}, {"fence", fieldValue(r, "token")},
			{"pttl_ms", fieldValue(r, "pttl")}, {"acquired_at_ms", fieldValue(r, "acquired_at")}}, true)
	}, nil
}

// fieldValue is a map reply's field as a result value (null when absent).
func fieldValue(r commands.Reply, name string) any {
	v, ok := r.Field(name)
	if !ok {
		return nil
	}
	return replyValue(v)
}

// fenceArgs appends FENCE token when --fence is given.
func (x *invocation) fenceArgs(args []string) ([]string, error) {
	if _, ok := x.flag("fence"); !ok {
		return args, nil
	}
	n, err := x.intFlag("fence", 0, true)
	if err != nil {
		return nil, err
	}
	return append(args, "FENCE", itoa(n)), nil
}

// notOwnerNote explains a NOTOWNER refusal.
func notOwnerNote(what, name, holderFlag, holder string) string {
	return fmt.Sprintf("%s %s is held by another %s (or with another fencing token) than %s: pass the holder's --%s (and --fence)",
		what, name, holderFlag, holder, holderFlag)
}

func buildLockExtend(x *invocation) (func() result, error) {
	name := x.pos[0]
	owner, ttl, _, _, err := x.leaseFlags("owner", false)
	if err != nil {
		return nil, err
	}
	args, err := x.fenceArgs([]string{"LOCK.EXTEND", name, owner, "PX", itoa(ttl)})
	if err != nil {
		return nil, err
	}
	return func() result {
		r, err := x.do(args...)
		o := object{{"lock", name}, {"owner", owner}, {"extended", false}}
		switch {
		case isNotOwner(err):
			return result{obj: o, code: exitNo, note: notOwnerNote("lock", name, "owner", owner)}
		case err != nil:
			return failed(err)
		case r.Int == 0:
			return answer(o, false)
		}
		return answer(object{{"lock", name}, {"owner", owner}, {"extended", true}, {"ttl_ms", ttl}}, true)
	}, nil
}

func buildLockRelease(x *invocation) (func() result, error) {
	name := x.pos[0]
	owner, err := x.identity("owner")
	if err != nil {
		return nil, err
	}
	args, err := x.fenceArgs([]string{"LOCK.RELEASE", name, owner})
	if err != nil {
		return nil, err
	}
	return func() result {
		r, err := x.do(args...)
		switch {
		case isNotOwner(err):
			return result{obj: object{{"lock", name}, {"owner", owner}, {"released", false}}, code: exitNo,
				note: notOwnerNote("lock", name, "owner", owner)}
		case err != nil:
			return failed(err)
		}
		return answer(object{{"lock", name}, {"owner", owner}, {"released", r.Int != 0}}, r.Int != 0)
	}, nil
}

// ---- leader election ----------------------------------------------------------------------

func buildLeaderElect(x *invocation) (func() result, error) {
	pool := x.pos[0]
	id, ttl, wait, hasWait, err := x.leaseFlags("id", true)
	if err != nil {
		return nil, err
	}
	value, hasValue := x.flag("value")
	return func() result {
		args := []string{"LEADER.ELECT", pool, id, "PX", itoa(ttl)}
		if hasWait {
			args = append(args, "WAIT", itoa(wait))
		}
		if hasValue {
			args = append(args, "VALUE", value)
		}
		r, err := x.do(args...)
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return result{obj: object{{"pool", pool}, {"id", id}, {"elected", false}}, code: exitHeld,
				note: fmt.Sprintf("pool %s is led by %s%s; wait with --wait, or see `redamo leader check %s`",
					pool, x.holderNow("LEADER.CHECK", pool, "leader"), waitedFor(hasWait, wait), pool)}
		}
		return answer(object{{"pool", pool}, {"id", id}, {"elected", true}, {"term", r.Int}, {"ttl_ms", ttl}}, true)
	}, nil
}

func buildLeaderHeartbeat(x *invocation) (func() result, error) {
	pool := x.pos[0]
	id, ttl, _, _, err := x.leaseFlags("id", false)
	if err != nil {
		return nil, err
	}
	return func() result {
		r, err := x.do("LEADER.HEARTBEAT", pool, id, "PX", itoa(ttl))
		o := object{{"pool", pool}, {"id", id}, {"leader", false}}
		switch {
		case isNotOwner(err):
			return answer(o, false)
		case err != nil:
			return failed(err)
		case r.Int == 0:
			return answer(o, false)
		}
		return answer(object{{"pool", pool}, {"id", id}, {"leader", true}, {"ttl_ms", ttl}}, true)
	}, nil
}

func buildLeaderResign(x *invocation) (func() result, error) {
	pool := x.pos[0]
	id, err := x.identity("id")
	if err != nil {
		return nil, err
	}
	return func() result {
		r, err := x.do("LEADER.RESIGN", pool, id)
		switch {
		case isNotOwner(err):
			return answer(object{{"pool", pool}, {"id", id}, {"resigned", false}}, false)
		case err != nil:
			return failed(err)
		}
		return answer(object{{"pool", pool}, {"id", id}, {"resigned", r.Int != 0}}, r.Int != 0)
	}, nil
}

func buildLeaderCheck(x *invocation) (func() result, error) {
	pool := x.pos[0]
	return func() result {
		r, err := x.do("LEADER.CHECK", pool)
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return answer(object{{"pool", pool}, {"led", false}}, false)
		}
		return answer(object{{"pool", pool}, {"led", true},
			{"leader", fieldValue(r, "leader")}, {"term", fieldValue(r, "term")}, {"value", fieldValue(r, "value")},
			{"pttl_ms", fieldValue(r, "pttl")}, {"elected_at_ms", fieldValue(r, "elected_at")},
			{"heartbeat_at_ms", fieldValue(r, "heartbeat_at")}}, true)
	}, nil
}

func buildLeaderWatch(x *invocation) (func() result, error) {
	pool := x.pos[0]
	wait, hasWait, err := x.ms("wait", 0, true)
	if err != nil {
		return nil, err
	}
	x.waitMS, x.forever = wait, !hasWait || wait == 0
	_, hasTerm := x.flag("term")
	term, err := x.intFlag("term", 0, false)
	if err != nil {
		return nil, err
	}
	if term < 0 {
		return nil, usageErr("--term %d: must not be negative", term)
	}
	return func() result {
		if !hasTerm {
			r, err := x.do("LEADER.CHECK", pool)
			if err != nil {
				return failed(err)
			}
			if t, ok := r.Field("term"); ok {
				term = t.Int
			}
		}
		r, err := x.do("LEADER.WATCH", pool, itoa(term), "BLOCK", itoa(wait))
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return answer(object{{"pool", pool}, {"changed", false}, {"term", term}}, false)
		}
		return answer(object{{"pool", pool}, {"changed", true},
			{"leader", fieldValue(r, "leader")}, {"term", fieldValue(r, "term")},
			{"value", fieldValue(r, "value")}, {"pttl_ms", fieldValue(r, "pttl")}}, true)
	}, nil
}

// ---- exec ---------------------------------------------------------------------------------

func buildExec(x *invocation) (func() result, error) {
	// Any command may block for as long as it asks (BLPOP q 0).
	x.forever = true
	return func() result {
		r, err := x.do(x.pos...)
		if err != nil {
			return failed(err)
		}
		return answer(object{{"reply", replyValue(r)}}, true)
	}, nil
}
