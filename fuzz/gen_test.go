package fuzz

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/scripting"
)

// command is one request, its name first.
type command [][]byte

func cmdOf(args ...string) command {
	c := make(command, len(args))
	for i, a := range args {
		c[i] = []byte(a)
	}
	return c
}

func (c command) name() string {
	if len(c) == 0 {
		return ""
	}
	return strings.ToLower(string(c[0]))
}

// servedTable is the table a redamo server serves: commands' and
// scripting's.
func servedTable() *commands.Table {
	t := commands.NewTable()
	scripting.Register(t)
	return t
}

// containers are the commands that have subcommands.
var containers = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range servedTable().All() {
		if len(c.Subcommands) > 0 {
			m[c.Name] = true
		}
	}
	return m
}()

// fullName is the command's table name: "get", or "config|set" for a
// subcommand.
func (c command) fullName() string {
	n := c.name()
	if containers[n] && len(c) > 1 {
		return n + "|" + strings.ToLower(string(c[1]))
	}
	return n
}

// write is what is sent in one write on one connection: commands, or raw
// bytes (sent on a connection of their own, which the fuzzer then closes
// for writing and reads to the end).
type write struct {
	conn int
	cmds []command
	raw  []byte
}

// program is one case: the protocol its connections speak and its writes,
// the keys of every type it starts from first.
type program struct {
	proto  int
	writes []write
	// redis: an error-class case, replayed against Redis (oracle redis).
	redis bool
}

func (p *program) commands() int {
	n := 0
	for _, w := range p.writes {
		n += len(w.cmds)
	}
	return n
}

// genMode says what the generator may draw.
type genMode int

const (
	// modeSurface draws from every command, for the oracle that holds for
	// any input (no crash, no malformed reply, no hang, a consistent
	// keyspace).
	modeSurface genMode = iota
	// modeDiff draws from the commands and values whose outcome is
	// deterministic and the same on Redis, for comparing error classes:
	// no randomness, no redamo-only commands, no expiry that could
	// happen between the two servers' replies, no allocation Redis would
	// really make (a 500 MB SETRANGE).
	modeDiff
)

// generator draws programs from a seed.
type generator struct {
	r    *rand.Rand
	mode genMode
	// cmds are every command and subcommand of redamo's table, with
	// their weights (the chance of each is weight / total).
	cmds    []*commands.Command
	weights []float64
	total   float64
	// tokens are the tokens of each command's argument tree, for
	// mutations that add options.
	tokens map[string][]string
	// shas are the SHA1s of scripts drawn so far, for EVALSHA.
	shas []string
	// lua is the script being drawn, nil outside one.
	lua *luaState
}

// The keys every program starts from (setupWrite): one of each type,
// large collections past the inline layout, a key with a TTL.
var typedKeys = []string{"str", "int", "flt", "list", "hash", "set", "iset", "zset", "strm", "ttl", "geo", "blist", "bhash", "bset", "bzset"}

// bigN is the size of the large collections: past what a key item holds
// inline, so both layouts are exercised.
const bigN = 150

// weight changes how often a command is drawn (1 unless listed).
var weight = map[string]float64{
	"flushall": 0.15, "flushdb": 0.15, "function|flush": 0.3, "script|flush": 0.3,
	"quit": 0.1, "reset": 0.3, "client|kill": 0.3, "config|set": 0.5, "hello": 0.5,
	"eval": 4, "eval_ro": 1, "evalsha": 1, "fcall": 2, "fcall_ro": 1, "function|load": 2,
	"function|restore": 1, "multi": 0.5, "exec": 0.5, "discard": 0.3, "watch": 0.5,
	"keys": 0.5, "scan": 0.5, "sort": 1.5, "set": 2, "zadd": 1.5, "xadd": 1.5,
	"pfselftest": 0.05,
}

// notInDiff are the commands modeDiff leaves out: their outcome is
// random, depends on time or on the connection, is redamo's own, or
// would change the reference server for the rest of the run.
var notInDiff = map[string]bool{
	"randomkey": true, "spop": true, "srandmember": true, "hrandfield": true, "zrandmember": true,
	"time": true, "info": true, "lastsave": true, "object|idletime": true, "object|freq": true,
	"client|kill": true, "client|list": true, "client|info": true, "client|id": true, "client|setinfo": true,
	"config|set": true, "config|resetstat": true, "config|rewrite": true, "memory|usage": true,
	"cl.throttle": true, "quit": true, "hello": true, "reset": true,
	"function|restore": true, "function|dump": true, "function|stats": true, "function|kill": true, "script|kill": true,
	"command|docs": true, "command|info": true, "command|list": true, "command|count": true, "command": true,
	"scan": true, "sscan": true, "hscan": true, "zscan": true, "keys": true, "dbsize": true,
	// Redis forks for these and answers "already in progress" while its
	// child runs; redamo refuses to swap databases (README).
	"save": true, "bgsave": true, "bgrewriteaof": true, "swapdb": true,
	// Timings.
	"slowlog|get": true, "slowlog|len": true, "latency|latest": true, "latency|history": true,
	"latency|graph": true, "latency|doctor": true, "latency|histogram": true, "latency|reset": true,
}

// notFuzzed are the commands no mode draws: the (P|S)(UN)SUBSCRIBE
// commands answer once per argument and put a RESP2 connection in
// subscribed mode, where the harness's one reply per command no longer
// holds (resp/pubsub_test.go compares them with Redis byte for byte);
// MONITOR sends a line for every command of every connection; SHUTDOWN
// stops the server under test (commands/servercmds_server_test.go and
// cmd/redamo/shutdown_test.go test them).
var notFuzzed = map[string]bool{
	"subscribe": true, "psubscribe": true, "ssubscribe": true,
	"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true,
	"monitor": true, "shutdown": true,
}

func newGenerator(seed uint64, mode genMode) *generator {
	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), mode: mode, tokens: map[string][]string{}}
	add := func(c *commands.Command) {
		if notFuzzed[c.Name] {
			return
		}
		if mode == modeDiff && (notInDiff[c.Name] || c.Since == "redamo" || c.Group == "module") {
			return
		}
		w, ok := weight[c.Name]
		if !ok {
			w = 1
		}
		g.cmds = append(g.cmds, c)
		g.weights = append(g.weights, w)
		g.total += w
		var toks []string
		var walk func([]commands.Arg)
		walk = func(as []commands.Arg) {
			for _, a := range as {
				if a.Token != "" {
					toks = append(toks, a.Token)
				}
				walk(a.Args)
			}
		}
		walk(c.Args)
		g.tokens[c.Name] = toks
	}
	for _, c := range servedTable().All() {
		if len(c.Subcommands) == 0 {
			add(c)
			continue
		}
		for _, s := range c.Subcommands {
			add(s)
		}
	}
	return g
}

func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

func (g *generator) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// setupWrite creates one key of each type (the large ones only when big),
// so that every command meets keys of the wrong type, and with fn a
// library of functions f1 and g1.
func setupWrite(big, fn bool, ttlMS int) write {
	w := write{cmds: []command{
		cmdOf("SET", "str", "hello"),
		cmdOf("SET", "int", "42"),
		cmdOf("SET", "flt", "3.25"),
		cmdOf("RPUSH", "list", "a", "b", "c", "1", "2"),
		cmdOf("HSET", "hash", "f1", "v1", "f2", "2", "f3", "3.5"),
		cmdOf("SADD", "set", "a", "b", "c"),
		cmdOf("SADD", "iset", "1", "2", "3"),
		cmdOf("ZADD", "zset", "1", "a", "2", "b", "2", "c", "3.5", "d"),
		cmdOf("XADD", "strm", "1-1", "f", "v"),
		cmdOf("XADD", "strm", "2-1", "f", "v", "g", "w"),
		cmdOf("SET", "ttl", "v", "PX", strconv.Itoa(ttlMS)),
		cmdOf("GEOADD", "geo", "13.361389", "38.115556", "a", "15.087269", "37.502669", "b"),
	}}
	if fn {
		w.cmds = append(w.cmds, cmdOf("FUNCTION", "LOAD", "#!lua name=lib0\n"+
			"redis.register_function('f1', function(keys, args) return redis.call('GET', keys[1]) end)\n"+
			"redis.register_function{function_name='g1', callback=function(keys, args) return args[1] end, flags={'no-writes'}}"))
	}
	if big {
		push := cmdOf("RPUSH", "blist")
		hset := cmdOf("HSET", "bhash")
		sadd := cmdOf("SADD", "bset")
		zadd := cmdOf("ZADD", "bzset")
		for i := range bigN {
			m := []byte("m" + strconv.Itoa(i))
			push = append(push, m)
			hset = append(hset, m, []byte(strconv.Itoa(i)))
			sadd = append(sadd, m)
			zadd = append(zadd, []byte(strconv.Itoa(i%40)), m)
		}
		w.cmds = append(w.cmds, push, hset, sadd, zadd)
	}
	return w
}

// program draws one case of about n commands.
func (g *generator) program(n int) *program {
	p := &program{proto: 2 + g.r.IntN(2)}
	ttl := 100000
	if g.mode == modeSurface && g.chance(0.3) {
		// Expiring while the case runs.
		ttl = 1 + g.r.IntN(300)
	}
	p.writes = append(p.writes, setupWrite(g.chance(0.35), g.chance(0.5), ttl))
	conns := 1
	if g.mode == modeSurface && g.chance(0.4) {
		conns = 2
	}
	for p.commands() < n {
		w := write{conn: g.r.IntN(conns)}
		switch x := g.r.Float64(); {
		case x < 0.45:
			w.cmds = []command{g.command()}
		case x < 0.75:
			for range 2 + g.r.IntN(12) {
				w.cmds = append(w.cmds, g.command())
			}
		case x < 0.97 || g.mode == modeDiff:
			w.cmds = g.transaction()
		default:
			w.raw = g.raw()
		}
		p.writes = append(p.writes, w)
	}
	return p
}

// transaction is MULTI, a few commands and EXEC (or DISCARD), sometimes
// after a WATCH, sometimes with a command MULTI refuses.
func (g *generator) transaction() []command {
	var out []command
	if g.chance(0.2) {
		out = append(out, cmdOf("WATCH", g.key()))
	}
	out = append(out, cmdOf("MULTI"))
	for range 1 + g.r.IntN(6) {
		out = append(out, g.command())
	}
	switch x := g.r.Float64(); {
	case x < 0.85:
		out = append(out, cmdOf("EXEC"))
	case x < 0.95:
		out = append(out, cmdOf("DISCARD"))
	default:
		// Left open: the connection's next commands are queued.
	}
	return out
}

// raw is a request broken at the protocol level: lengths, terminators,
// inline quoting and sizes Redis refuses.
func (g *generator) raw() []byte {
	good := encode(g.command())
	switch g.r.IntN(8) {
	case 0:
		return good[:g.r.IntN(len(good))]
	case 1:
		b := append([]byte{}, good...)
		b[g.r.IntN(len(b))] = byte(g.r.IntN(256))
		return b
	case 2:
		return []byte(g.pick("*2147483648\r\n", "*-5\r\n", "*1\r\n$-2\r\n", "*1\r\n$536870913\r\n", "*1\r\n$2147483648\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab\r\n", "$3\r\nGET\r\n", "*1\r\n*1\r\n$4\r\nPING\r\n", "*0\r\n*1\r\n$4\r\nPING\r\n", "*\r\n", "*1x\r\n"))
	case 3:
		return []byte(g.pick("PING \"unterminated\r\n", "SET k \"a\"b\r\n", "ECHO '\\x'\r\n", "GET \"\\x4\"\r\n", "   \r\nPING\r\n", "\r\n\r\n", "SET \"\" \"\"\r\n", strings.Repeat("x", 70000)))
	case 4:
		return append(bytes.Repeat([]byte("*1\r\n$4\r\nPING\r\n"), 1+g.r.IntN(50)), good...)
	case 5:
		// Inline, as a terminal sends it.
		var parts []string
		for _, a := range g.command() {
			parts = append(parts, strconv.Quote(string(a)))
		}
		return []byte(strings.Join(parts, " ") + "\r\n")
	case 6:
		return append(good, good[:len(good)/2]...)
	default:
		b := make([]byte, 1+g.r.IntN(64))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	}
}

// encode renders a command as a RESP array of bulk strings.
func encode(c command) []byte {
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(len(c)) + "\r\n")
	for _, a := range c {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		b.Write(a)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// command draws one command with its arguments, mutated now and then.
func (g *generator) command() command {
	x := g.r.Float64() * g.total
	i := 0
	for ; i < len(g.cmds)-1 && x >= g.weights[i]; i++ {
		x -= g.weights[i]
	}
	c := g.cmds[i]
	var out command
	if parent, sub, ok := strings.Cut(c.Name, "|"); ok {
		out = cmdOf(strings.ToUpper(parent), strings.ToUpper(sub))
	} else {
		out = cmdOf(strings.ToUpper(c.Name))
	}
	if special, ok := g.special(c.Name); ok {
		out = append(out, special...)
	} else {
		a := &argGen{g: g, cmd: c}
		a.args(c.Args)
		a.finish()
		out = append(out, a.out...)
	}
	if g.chance(0.2) {
		for range 1 + g.r.IntN(2) {
			out = g.mutate(out, c)
		}
	}
	return g.sanitize(out)
}

// argGen builds one command's arguments from its argument tree.
type argGen struct {
	g   *generator
	cmd *commands.Command
	out [][]byte
	// numkeys is where the last numkeys argument is, until the keys it
	// counts are drawn (-1: none pending); keys counts those.
	numkeys, keys int
	pending       bool
}

func (a *argGen) emit(b []byte) { a.out = append(a.out, b) }

func (a *argGen) args(specs []commands.Arg) {
	for _, s := range specs {
		if hasFlag(s, "optional") && a.g.chance(0.55) {
			continue
		}
		reps := 1
		if hasFlag(s, "multiple") {
			reps = 1 + a.g.r.IntN(3)
			if a.g.chance(0.05) {
				reps = 5 + a.g.r.IntN(20)
			}
		}
		if s.Name == "streams" && s.Type == "block" {
			a.streams(s)
			continue
		}
		for i := range reps {
			if s.Token != "" && (i == 0 || hasFlag(s, "multiple_token")) {
				a.emit([]byte(a.g.token(s.Token)))
			}
			a.one(s)
		}
		if s.Type == "key" && a.pending {
			a.out[a.numkeys] = []byte(strconv.Itoa(a.keys))
			a.pending = false
		}
	}
}

// finish fills a numkeys no key followed (EVAL with no keys).
func (a *argGen) finish() {
	if a.pending {
		a.out[a.numkeys] = []byte(strconv.Itoa(a.keys))
	}
}

func hasFlag(s commands.Arg, f string) bool {
	for _, x := range s.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// token is an option's token, in another case now and then (Redis reads
// them case-insensitively).
func (g *generator) token(t string) string {
	if g.chance(0.1) {
		return strings.ToLower(t)
	}
	return t
}

func (a *argGen) one(s commands.Arg) {
	g := a.g
	switch s.Type {
	case "pure-token":
	case "oneof":
		if len(s.Args) == 0 {
			return
		}
		c := s.Args[g.r.IntN(len(s.Args))]
		c.Flags = nil
		a.args([]commands.Arg{c})
	case "block":
		a.args(s.Args)
	case "key":
		a.emit([]byte(g.keyFor(a.cmd.Group)))
		a.keys++
	case "pattern":
		a.emit([]byte(g.pattern()))
	case "integer":
		if s.Name == "numkeys" {
			a.numkeys, a.keys, a.pending = len(a.out), 0, true
			a.emit([]byte("0"))
			return
		}
		a.emit([]byte(g.integer(a.cmd, s.Name)))
	case "double":
		a.emit([]byte(g.double(a.cmd, s.Name)))
	case "unix-time":
		a.emit([]byte(g.unixTime()))
	default:
		a.emit(g.str(a.cmd, s.Name))
	}
}

// streams is XREAD's STREAMS key... id...: as many ids as keys.
func (a *argGen) streams(s commands.Arg) {
	g := a.g
	a.emit([]byte(g.token("STREAMS")))
	n := 1 + g.r.IntN(3)
	for range n {
		a.emit([]byte(g.keyFor("stream")))
	}
	for range n {
		a.emit([]byte(g.pick("0", "0-0", "$", ">", "1-1", "+", "18446744073709551615-18446744073709551615", "-1", "x")))
	}
}

// key is one of the typed keys mostly, a missing one sometimes, and now
// and then one that is empty, binary or too long for DynamoDB.
func (g *generator) key() string {
	switch x := g.r.Float64(); {
	case x < 0.75:
		return typedKeys[g.r.IntN(len(typedKeys))]
	case x < 0.95:
		return g.pick("new", "new2", "none")
	default:
		if g.mode == modeDiff {
			return g.pick("", "\x00\xff", "k e y")
		}
		return g.pick("", "\x00\xff", "k e y", strings.Repeat("k", 1000), strings.Repeat("k", 2100))
	}
}

// keysOfGroup are the typed keys a command of a group works on.
var keysOfGroup = map[string][]string{
	"string": {"str", "int", "flt", "ttl", "new"}, "list": {"list", "blist", "new"}, "hash": {"hash", "bhash", "new"},
	"set": {"set", "iset", "bset", "new"}, "sorted-set": {"zset", "bzset", "geo", "new"}, "geo": {"geo", "zset", "new"},
	"stream": {"strm", "new"},
}

// keyFor is a key of the type a command of group works on more often
// than not, so that its paths past the type check run.
func (g *generator) keyFor(group string) string {
	if ks := keysOfGroup[group]; ks != nil && g.chance(0.6) {
		return ks[g.r.IntN(len(ks))]
	}
	return g.key()
}

func (g *generator) pattern() string {
	return g.pick("*", "*", "s*", "*s*", "?", "[a-z]*", "[", "[^a]*", "\\", "*\\", "[]", "[a-", "str",
		"*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*b", strings.Repeat("*a", 40)+"b", "", "[[:alpha:]]", "\\*")
}

var (
	edgeInts = []string{"0", "1", "-1", "2", "3", "-2", "10", "100", "-100", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "4294967296", "2147483647", "-2147483648",
		"1.5", "0x10", " 1", "1 ", "+1", "-0", "00", "01", "", "abc", "inf", "nan", "1e3", "99999999999999999999999"}
	edgeDoubles = []string{"0", "1", "-1", "1.5", "-2.5", "1e308", "-1e308", "1e309", "inf", "-inf", "+inf", "nan", "-nan",
		"0.0", "-0.0", "1e-320", "3.14159", "9223372036854775807", "-9223372036854775808", "", "abc", "1e", ".", "0x1p3", " 1", "(1"}
)

// integer draws an integer argument: small and valid mostly, an edge
// value sometimes; blocking timeouts are short (sanitize makes sure).
func (g *generator) integer(c *commands.Command, name string) string {
	// An edge offset would have Redis really allocate (SETBIT at bit
	// 2^31-1 is 256 MB) where redamo refuses past an item.
	if g.chance(0.15) && (g.mode != modeDiff || name != "offset") {
		return g.pick(edgeInts...)
	}
	switch name {
	case "db", "destination-db":
		return g.pick("0", "1", "1", "0", "15", "16", "-1")
	case "protover":
		return g.pick("2", "3", "3", "1", "4")
	case "cursor":
		return g.pick("0", "0", "1", "7", "18446744073709551615")
	case "milliseconds", "seconds":
		if g.mode == modeDiff {
			return g.pick("100000", "1000000", "0", "-1")
		}
		return g.pick("100000", "100000", "1", "20", "0", "-1", "5000")
	case "timeout":
		return g.pick("1", "20", "50")
	case "count", "limit", "num-matches", "len":
		return g.pick("0", "1", "2", "3", "5", "10", "100", "-1", "-5")
	case "offset", "start", "stop", "end", "index", "rank":
		if g.mode == modeDiff && name == "offset" {
			return g.pick("0", "1", "2", "5", "-1", "-5")
		}
		return g.pick("0", "1", "2", "-1", "-2", "5", "-100", "100", "3")
	}
	return strconv.Itoa(g.r.IntN(21) - 5)
}

func (g *generator) double(c *commands.Command, name string) string {
	if g.chance(0.15) {
		return g.pick(edgeDoubles...)
	}
	switch name {
	case "timeout":
		return g.pick("0.01", "0.05", "0.1")
	case "min", "max":
		return g.pick("-inf", "+inf", "0", "1", "(1", "2", "(2.5", "3.5", "(inf", "-1")
	case "longitude":
		return g.pick("13.36", "-180", "180", "0", "15.08", "180.0001")
	case "latitude":
		return g.pick("38.11", "85.05112878", "-85.05112878", "0", "37.5", "85.06")
	case "radius", "width", "height":
		return g.pick("100", "1000", "200000", "0", "1", "-1")
	}
	return g.pick("0", "1", "-1", "1.5", "2", "3.5", "10", "-0.5", "1e3")
}

func (g *generator) unixTime() string {
	// Far in the past (the key goes at once) or far in the future: never
	// close to now, which two servers would see differently.
	return g.pick("1", "4102444800", "4102444800000", "0", "-1", "9223372036854775807", "1700000000")
}

// str draws a string argument by what it names.
func (g *generator) str(c *commands.Command, name string) []byte {
	switch name {
	case "min", "max":
		if strings.Contains(c.Name, "lex") {
			return []byte(g.pick("-", "+", "[a", "(a", "[b", "(c", "[", "(", "a", "", "[\xff"))
		}
		return []byte(g.double(c, name))
	case "start", "end", "stop":
		return []byte(g.pick("-", "+", "0", "0-1", "(0-1", "1-1", "(2-1", "18446744073709551615-18446744073709551615", "1-x", "(+", "(-"))
	case "id":
		if g.mode == modeDiff {
			return []byte(g.pick("0-1", "1-2", "3-0", "3-5", "0-0", "18446744073709551615-18446744073709551615", "-1", "abc", "5"))
		}
		return []byte(g.pick("*", "*", "0-1", "1-*", "1-2", "3-0", "0-0", "18446744073709551615-18446744073709551615", "-1", "abc", "5"))
	case "threshold":
		return []byte(g.pick("0", "1", "2", "1-1", "-1", "abc", "100"))
	case "sha1":
		if len(g.shas) > 0 && g.chance(0.7) {
			return []byte(g.shas[g.r.IntN(len(g.shas))])
		}
		return []byte(g.pick("ffffffffffffffffffffffffffffffffffffffff", "", "abc", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"))
	case "script":
		return []byte(g.script())
	case "function-code":
		return []byte(g.library())
	case "function", "library-name":
		return []byte(g.pick("f1", "f2", "g1", "nope", "lib1", ""))
	case "library-name-pattern":
		return []byte(g.pick("*", "lib*", "", "["))
	case "serialized-value":
		return g.dump()
	case "parameter":
		return []byte(g.configParam())
	case "section":
		return []byte(g.pick("all", "everything", "default", "server", "redamo", "keyspace", "commandstats", "bogus", "stats"))
	case "type":
		return []byte(g.pick("string", "list", "hash", "set", "zset", "stream", "none", "bogus"))
	case "yes/no":
		return []byte(g.pick("yes", "no", "maybe"))
	case "command-name":
		return []byte(g.pick("get", "set", "client", "config|get", "nope", "", "eval"))
	case "ip:port":
		return []byte(g.pick("127.0.0.1:1", "garbage", "", "[::1]:2"))
	case "username":
		return []byte(g.pick("default", "nobody", ""))
	}
	return g.val()
}

// val draws a value: short words and numbers mostly (members of the
// typed keys among them), binary, empty or large now and then.
func (g *generator) val() []byte {
	switch x := g.r.Float64(); {
	case x < 0.6:
		return []byte(g.pick("a", "b", "c", "d", "v", "f1", "f2", "m1", "m7", "x"))
	case x < 0.8:
		return []byte(g.pick("1", "2", "-1", "0", "3.5", "10", "9223372036854775807", "-9223372036854775808", "1e400", "nan"))
	case x < 0.93:
		return []byte(g.pick("", "\x00\xff\r\n", "\r\n", "é", "*", " ", "a b"))
	case g.mode == modeDiff:
		// Any argument may become a key, and redamo refuses a key past
		// DynamoDB's 2048-byte partition key before Redis would answer.
		return bytes.Repeat([]byte("x"), 1000+g.r.IntN(1000))
	case x < 0.985:
		return bytes.Repeat([]byte("x"), 1000+g.r.IntN(3000))
	default:
		// Past DynamoDB's 400 KB item now and then.
		return bytes.Repeat([]byte("y"), g.pick2(100000, 450000))
	}
}

func (g *generator) pick2(xs ...int) int { return xs[g.r.IntN(len(xs))] }

// special draws the arguments of the commands whose argument tree says
// too little: scripts, functions, configuration, the connection's state.
func (g *generator) special(name string) ([][]byte, bool) {
	switch name {
	case "eval", "eval_ro", "fcall", "fcall_ro", "evalsha", "evalsha_ro":
		var head []byte
		switch name {
		case "eval", "eval_ro":
			s := g.script()
			sum := sha1.Sum([]byte(s))
			g.shas = append(g.shas, hex.EncodeToString(sum[:]))
			head = []byte(s)
		case "fcall", "fcall_ro":
			head = []byte(g.pick("f1", "f2", "g1", "nope", "F1"))
		default:
			head = g.str(nil, "sha1")
		}
		out := [][]byte{head}
		nk := g.r.IntN(3)
		keys := [][]byte{}
		for range nk {
			keys = append(keys, []byte(g.key()))
		}
		num := strconv.Itoa(nk)
		if g.chance(0.1) {
			num = g.pick("-1", "5", "abc", "9223372036854775807")
		}
		out = append(out, []byte(num))
		out = append(out, keys...)
		for range g.r.IntN(3) {
			out = append(out, g.val())
		}
		return out, true
	case "script|load":
		s := g.script()
		sum := sha1.Sum([]byte(s))
		g.shas = append(g.shas, hex.EncodeToString(sum[:]))
		return [][]byte{[]byte(s)}, true
	case "function|load":
		if g.chance(0.5) {
			return [][]byte{[]byte("REPLACE"), []byte(g.library())}, true
		}
		return [][]byte{[]byte(g.library())}, true
	case "function|restore":
		out := [][]byte{g.dump()}
		if g.chance(0.5) {
			out = append(out, []byte(g.pick("FLUSH", "APPEND", "REPLACE", "bogus")))
		}
		return out, true
	case "config|set":
		var out [][]byte
		for range 1 + g.r.IntN(2) {
			p := g.configParam()
			out = append(out, []byte(p), []byte(g.configValue(p)))
		}
		return out, true
	case "hello":
		var out [][]byte
		if g.chance(0.9) {
			out = append(out, []byte(g.pick("3", "2", "3", "1", "4", "x")))
			if g.chance(0.2) {
				out = append(out, []byte("AUTH"), []byte("default"), []byte(g.pick("", "pw")))
			}
			if g.chance(0.2) {
				out = append(out, []byte("SETNAME"), []byte(g.pick("n", "a b", "")))
			}
		}
		return out, true
	}
	return nil, false
}

// configParams are what CONFIG SET may change under the fuzzer: not the
// password, the client limit or the script time limit, which would stop
// the fuzzer itself.
var configParams = []string{"hash-max-listpack-entries", "hash-max-ziplist-value", "list-max-listpack-size",
	"set-max-intset-entries", "zset-max-listpack-entries", "zset-max-listpack-value", "maxmemory",
	"notify-keyspace-events", "loglevel", "appendonly", "save", "bogus-param", "protected-mode", "proto-max-bulk-len"}

func (g *generator) configParam() string {
	if g.chance(0.2) {
		return g.pick("*", "*max*", "port", "Hash-Max-Listpack-Entries", "")
	}
	return g.pick(configParams...)
}

func (g *generator) configValue(p string) string {
	switch p {
	case "proto-max-bulk-len":
		return g.pick("1mb", "512mb", "100", "-1", "1gb", "abc")
	case "protected-mode", "appendonly":
		return g.pick("yes", "no", "maybe")
	}
	return g.pick("0", "1", "128", "-1", "64", "abc", "", "9223372036854775807", "1kb")
}

// dumpPayload is FUNCTION DUMP of a small library on Redis 7.0.15.
var dumpPayload, _ = hex.DecodeString("f5c3405140561f23216c7561206e616d653d726c69620a72656469732e72656769737465725f660d756e6374696f6e28277266272c20e0000e116b6579732c2061726773292072657475726e600c075b315d20656e64290a0030bfe22b4103a305")

// dump is the payload of FUNCTION RESTORE: Redis's own, or broken.
func (g *generator) dump() []byte {
	b := append([]byte{}, dumpPayload...)
	switch g.r.IntN(5) {
	case 0:
		return b
	case 1:
		return b[:g.r.IntN(len(b))]
	case 2:
		for range 1 + g.r.IntN(3) {
			b[g.r.IntN(len(b))] ^= byte(1 + g.r.IntN(255))
		}
		return b
	case 3:
		return []byte(g.pick("", "x", "\xf5\xc3"))
	default:
		// A valid frame whose library is broken: the checksum is not
		// checked by everyone before the content.
		b[10] = 'X'
		return b
	}
}

// mutate breaks a command: an argument dropped, repeated, replaced, an
// option added, arguments swapped or appended, the name changed.
func (g *generator) mutate(c command, spec *commands.Command) command {
	c = append(command{}, c...)
	first := 1
	if strings.Contains(spec.Name, "|") {
		first = 2
	}
	has := len(c) > first
	switch g.r.IntN(9) {
	case 0:
		if has {
			i := first + g.r.IntN(len(c)-first)
			c = append(c[:i], c[i+1:]...)
		}
	case 1:
		if has {
			i := first + g.r.IntN(len(c)-first)
			n := 1 + g.r.IntN(2)
			if i+n > len(c) {
				n = len(c) - i
			}
			dup := append(command{}, c[i:i+n]...)
			c = append(c[:i+n], append(dup, c[i+n:]...)...)
		}
	case 2:
		if toks := g.tokens[spec.Name]; len(toks) > 0 {
			i := first + g.r.IntN(len(c)-first+1)
			ins := command{[]byte(toks[g.r.IntN(len(toks))])}
			if g.chance(0.6) {
				ins = append(ins, []byte(g.pick(edgeInts...)))
			}
			c = append(c[:i], append(ins, c[i:]...)...)
		}
	case 3:
		if has {
			i := first + g.r.IntN(len(c)-first)
			if g.chance(0.5) {
				c[i] = []byte(g.pick(edgeInts...))
			} else {
				c[i] = g.val()
			}
		}
	case 4:
		if len(c) > first+1 {
			i, j := first+g.r.IntN(len(c)-first), first+g.r.IntN(len(c)-first)
			c[i], c[j] = c[j], c[i]
		}
	case 5:
		for range 1 + g.r.IntN(3) {
			c = append(c, g.val())
		}
	case 6:
		c = c[:first+g.r.IntN(min(2, len(c)-first+1))]
	case 7:
		c[0] = []byte(strings.ToLower(string(c[0])))
	default:
		c[0] = []byte(g.pick("GETT", "", "get\x00", "EVAL ", "client", "config", "x"+string(c[0])))
	}
	return c
}

// blockingAt says where a command's timeout is: the argument at index
// pos (negative: from the end), or the one after the token tok; seconds
// or milliseconds.
type blockingAt struct {
	pos  int
	tok  string
	secs bool
}

var blocking = map[string][]blockingAt{
	"blpop": {{pos: -1, secs: true}}, "brpop": {{pos: -1, secs: true}}, "brpoplpush": {{pos: -1, secs: true}},
	"blmove": {{pos: -1, secs: true}}, "bzpopmin": {{pos: -1, secs: true}}, "bzpopmax": {{pos: -1, secs: true}},
	"blmpop": {{pos: 1, secs: true}}, "bzmpop": {{pos: 1, secs: true}},
	"wait": {{pos: 2}}, "xread": {{tok: "block"}}, "xreadgroup": {{tok: "block"}},
	"queue.pop": {{tok: "block"}}, "lock.acquire": {{tok: "wait"}}, "leader.elect": {{tok: "wait"}},
	"leader.watch": {{tok: "block"}},
}

// sanitize keeps a command from blocking for long: a timeout Redis would
// take as "forever" (0, or below a millisecond) or as more than a second
// becomes a short one. Timeouts Redis refuses stay: they must be refused.
// In modeDiff it also keeps expiries away from now.
func (g *generator) sanitize(c command) command {
	for _, at := range blocking[c.name()] {
		fix := func(i int) {
			if i <= 0 || i >= len(c) {
				return
			}
			s := string(c[i])
			var ms float64
			if at.secs {
				if t := strings.TrimLeft(s, "+-"); strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
					c[i] = []byte("0.05")
					return
				}
				f, err := strconv.ParseFloat(s, 64)
				if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
					return
				}
				ms = f * 1000
			} else {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || n < 0 {
					return
				}
				ms = float64(n)
			}
			if ms < 1 || ms > 1000 {
				if at.secs {
					c[i] = []byte("0.05")
				} else {
					c[i] = []byte("50")
				}
			}
		}
		switch {
		case at.tok != "":
			for i := 1; i < len(c)-1; i++ {
				if strings.EqualFold(string(c[i]), at.tok) {
					fix(i + 1)
				}
			}
		case at.pos < 0:
			fix(len(c) + at.pos)
		default:
			fix(at.pos)
		}
	}
	if c.name() == "leader.watch" && !hasToken(c, "block") {
		// Without BLOCK it waits for as long as the term lasts.
		c = append(c, []byte("BLOCK"), []byte("50"))
	}
	if g.mode == modeDiff {
		g.farExpiry(c)
	}
	return c
}

func hasToken(c command, tok string) bool {
	for _, a := range c[1:] {
		if strings.EqualFold(string(a), tok) {
			return true
		}
	}
	return false
}

// relativeExpiry are the commands whose argument 2 is a TTL.
var relativeExpiry = map[string]bool{"expire": true, "pexpire": true, "setex": true, "psetex": true}

// farExpiry makes a TTL that would end while Redis and redamo run the
// same commands a long one, so that both see the key alike.
func (g *generator) farExpiry(c command) {
	fix := func(i int) {
		if i >= len(c) {
			return
		}
		if n, err := strconv.ParseInt(string(c[i]), 10, 64); err == nil && n > 0 && n < 100000 {
			c[i] = []byte("100000")
		}
	}
	if relativeExpiry[c.name()] {
		fix(2)
	}
	for i := 1; i < len(c)-1; i++ {
		switch strings.ToUpper(string(c[i])) {
		case "EX", "PX":
			fix(i + 1)
		}
	}
}
