package compat

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The random workload: sequences of commands with random (and invalid)
// arguments over a few keys, sent to Redis and redamo in lockstep and
// compared reply by reply.

// genFunc makes one random command (name first).
type genFunc func(g *gen) []Arg

// gen draws random arguments.
type gen struct {
	r *rand.Rand
}

func lit(s string) Arg { return Arg{Lit: []byte(s)} }

func (g *gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *gen) key() Arg {
	return lit(g.pick("k0", "k1", "k2", "k3", "k4", "\x00b\xff"))
}

func (g *gen) keys(min int) []Arg {
	n := min + g.r.Intn(3)
	out := make([]Arg, n)
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func (g *gen) value() Arg {
	return lit(g.pick("", "v", "0", "1", "-1", "10", "42", "007", "9223372036854775807", "-9223372036854775808",
		"9223372036854775806", "3.5", "-0.25", "1e3", "abc", "\x00\xff", " 1", "hello world", "99999999999999999999", "1.5e-5"))
}

func (g *gen) integer() Arg {
	return lit(g.pick("0", "1", "-1", "2", "7", "-3", "100", "9223372036854775807", "-9223372036854775808", "x", "1.5", ""))
}

func (g *gen) float() Arg {
	return lit(g.pick("0", "1", "-1", "0.1", "2.5", "-3.75", "1e2", "5.0e3", "1e-3", "inf", "x", "", "1e308"))
}

func (g *gen) index() Arg {
	return lit(g.pick("0", "1", "2", "5", "-1", "-2", "-10", "100", "x"))
}

// ms is a relative expiry in ms: mostly a few ms (so keys really expire
// during the run), sometimes long, sometimes invalid.
func (g *gen) ms() Arg {
	switch g.r.Intn(10) {
	case 0, 1:
		return lit(g.pick("0", "-5", "x", ""))
	case 2, 3, 4, 5:
		return lit(strconv.Itoa(100000 + g.r.Intn(100000)))
	default:
		return lit(strconv.Itoa(1 + g.r.Intn(30)))
	}
}

func (g *gen) secs() Arg {
	return lit(g.pick("1", "100", "1000", "0", "-1", "x"))
}

// at is an absolute expiry: $nowms+N (or $now+N) evaluated when sent.
func (g *gen) at(ms bool) Arg {
	if g.r.Intn(8) == 0 {
		return lit(g.pick("1", "0", "x"))
	}
	if ms {
		off := int64(1 + g.r.Intn(30))
		if g.r.Intn(3) == 0 {
			off = 100000
		}
		return Arg{Time: true, MS: true, Offset: off}
	}
	return Arg{Time: true, Offset: int64(g.pick2(1, 100, 1000))}
}

func (g *gen) pick2(xs ...int) int { return xs[g.r.Intn(len(xs))] }

func (g *gen) setOptions() []Arg {
	var out []Arg
	for i, n := 0, g.r.Intn(3); i < n; i++ {
		switch g.r.Intn(9) {
		case 0:
			out = append(out, lit("EX"), g.secs())
		case 1:
			out = append(out, lit("PX"), g.ms())
		case 2:
			out = append(out, lit("EXAT"), g.at(false))
		case 3:
			out = append(out, lit("PXAT"), g.at(true))
		case 4:
			out = append(out, lit("NX"))
		case 5:
			out = append(out, lit("XX"))
		case 6:
			out = append(out, lit("KEEPTTL"))
		case 7:
			out = append(out, lit("GET"))
		case 8:
			out = append(out, lit(g.pick("FOO", "EX")))
		}
	}
	return out
}

func (g *gen) expireFlag() []Arg {
	if g.r.Intn(2) == 0 {
		return nil
	}
	return []Arg{lit(g.pick("NX", "XX", "GT", "LT", "nx", "FOO"))}
}

func cmd(name string, args ...Arg) []Arg { return append([]Arg{lit(name)}, args...) }

func join(parts ...[]Arg) []Arg {
	var out []Arg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// generators are the commands the workload knows, by name. A command joins
// the workload when every target supports it.
var generators = map[string]genFunc{
	"get":    func(g *gen) []Arg { return cmd("GET", g.key()) },
	"set":    func(g *gen) []Arg { return join(cmd("SET", g.key(), g.value()), g.setOptions()) },
	"setnx":  func(g *gen) []Arg { return cmd("SETNX", g.key(), g.value()) },
	"setex":  func(g *gen) []Arg { return cmd("SETEX", g.key(), g.secs(), g.value()) },
	"psetex": func(g *gen) []Arg { return cmd("PSETEX", g.key(), g.ms(), g.value()) },
	"getset": func(g *gen) []Arg { return cmd("GETSET", g.key(), g.value()) },
	"getdel": func(g *gen) []Arg { return cmd("GETDEL", g.key()) },
	"getex": func(g *gen) []Arg {
		var o []Arg
		switch g.r.Intn(6) {
		case 0:
			o = []Arg{lit("EX"), g.secs()}
		case 1:
			o = []Arg{lit("PX"), g.ms()}
		case 2:
			o = []Arg{lit("PXAT"), g.at(true)}
		case 3:
			o = []Arg{lit("PERSIST")}
		case 4:
			o = []Arg{lit("EXAT"), g.at(false)}
		}
		return join(cmd("GETEX", g.key()), o)
	},
	"mget": func(g *gen) []Arg { return join(cmd("MGET"), g.keys(1)) },
	"mset": func(g *gen) []Arg {
		out := cmd("MSET")
		for i, n := 0, 1+g.r.Intn(3); i < n; i++ {
			out = append(out, g.key(), g.value())
		}
		return out
	},
	"msetnx": func(g *gen) []Arg {
		out := cmd("MSETNX")
		for i, n := 0, 1+g.r.Intn(3); i < n; i++ {
			out = append(out, g.key(), g.value())
		}
		return out
	},
	"append":      func(g *gen) []Arg { return cmd("APPEND", g.key(), g.value()) },
	"strlen":      func(g *gen) []Arg { return cmd("STRLEN", g.key()) },
	"getrange":    func(g *gen) []Arg { return cmd("GETRANGE", g.key(), g.index(), g.index()) },
	"setrange":    func(g *gen) []Arg { return cmd("SETRANGE", g.key(), lit(g.pick("0", "1", "3", "10", "-1")), g.value()) },
	"incr":        func(g *gen) []Arg { return cmd("INCR", g.key()) },
	"decr":        func(g *gen) []Arg { return cmd("DECR", g.key()) },
	"incrby":      func(g *gen) []Arg { return cmd("INCRBY", g.key(), g.integer()) },
	"decrby":      func(g *gen) []Arg { return cmd("DECRBY", g.key(), g.integer()) },
	"incrbyfloat": func(g *gen) []Arg { return cmd("INCRBYFLOAT", g.key(), g.float()) },
	"del":         func(g *gen) []Arg { return join(cmd("DEL"), g.keys(1)) },
	"unlink":      func(g *gen) []Arg { return join(cmd("UNLINK"), g.keys(1)) },
	"exists":      func(g *gen) []Arg { return join(cmd("EXISTS"), g.keys(1)) },
	"touch":       func(g *gen) []Arg { return join(cmd("TOUCH"), g.keys(1)) },
	"type":        func(g *gen) []Arg { return cmd("TYPE", g.key()) },
	"expire":      func(g *gen) []Arg { return join(cmd("EXPIRE", g.key(), g.secs()), g.expireFlag()) },
	"pexpire":     func(g *gen) []Arg { return join(cmd("PEXPIRE", g.key(), g.ms()), g.expireFlag()) },
	"expireat":    func(g *gen) []Arg { return join(cmd("EXPIREAT", g.key(), g.at(false)), g.expireFlag()) },
	"pexpireat":   func(g *gen) []Arg { return join(cmd("PEXPIREAT", g.key(), g.at(true)), g.expireFlag()) },
	"ttl":         func(g *gen) []Arg { return cmd("TTL", g.key()) },
	"pttl":        func(g *gen) []Arg { return cmd("PTTL", g.key()) },
	"expiretime":  func(g *gen) []Arg { return cmd("EXPIRETIME", g.key()) },
	"pexpiretime": func(g *gen) []Arg { return cmd("PEXPIRETIME", g.key()) },
	"persist":     func(g *gen) []Arg { return cmd("PERSIST", g.key()) },
	"rename":      func(g *gen) []Arg { return cmd("RENAME", g.key(), g.key()) },
	"renamenx":    func(g *gen) []Arg { return cmd("RENAMENX", g.key(), g.key()) },
	"copy": func(g *gen) []Arg {
		var o []Arg
		if g.r.Intn(3) == 0 {
			o = append(o, lit("DB"), lit(g.pick("0", "1", "2", "16")))
		}
		if g.r.Intn(2) == 0 {
			o = append(o, lit("REPLACE"))
		}
		return join(cmd("COPY", g.key(), g.key()), o)
	},
	"move": func(g *gen) []Arg { return cmd("MOVE", g.key(), lit(g.pick("0", "1", "2"))) },
	"keys": func(g *gen) []Arg { return cmd("KEYS", lit(g.pick("*", "k*", "k[0-2]", "?1", "*b*", "x"))) },
	"scan": func(g *gen) []Arg {
		return cmd("SCAN", lit("0"), lit("MATCH"), lit(g.pick("*", "k*", "k?")), lit("COUNT"), lit(g.pick("1", "2", "10")))
	},
	"randomkey": func(g *gen) []Arg { return cmd("RANDOMKEY") },
	"select":    func(g *gen) []Arg { return cmd("SELECT", lit(g.pick("0", "1", "2", "0", "0"))) },
	"flushdb":   func(g *gen) []Arg { return cmd("FLUSHDB") },
	// Collections, used once redamo supports them.
	"hset":      func(g *gen) []Arg { return cmd("HSET", g.key(), lit(g.pick("f", "g")), g.value()) },
	"hget":      func(g *gen) []Arg { return cmd("HGET", g.key(), lit(g.pick("f", "g"))) },
	"hdel":      func(g *gen) []Arg { return cmd("HDEL", g.key(), lit(g.pick("f", "g"))) },
	"hincrby":   func(g *gen) []Arg { return cmd("HINCRBY", g.key(), lit(g.pick("f", "g")), g.integer()) },
	"hlen":      func(g *gen) []Arg { return cmd("HLEN", g.key()) },
	"hgetall":   func(g *gen) []Arg { return cmd("HGETALL", g.key()) },
	"sadd":      func(g *gen) []Arg { return cmd("SADD", g.key(), g.value()) },
	"srem":      func(g *gen) []Arg { return cmd("SREM", g.key(), g.value()) },
	"scard":     func(g *gen) []Arg { return cmd("SCARD", g.key()) },
	"sismember": func(g *gen) []Arg { return cmd("SISMEMBER", g.key(), g.value()) },
	"smembers":  func(g *gen) []Arg { return cmd("SMEMBERS", g.key()) },
	"lpush":     func(g *gen) []Arg { return cmd("LPUSH", g.key(), g.value()) },
	"rpush":     func(g *gen) []Arg { return cmd("RPUSH", g.key(), g.value()) },
	"lpop":      func(g *gen) []Arg { return cmd("LPOP", g.key()) },
	"rpop":      func(g *gen) []Arg { return cmd("RPOP", g.key()) },
	"llen":      func(g *gen) []Arg { return cmd("LLEN", g.key()) },
	"lrange":    func(g *gen) []Arg { return cmd("LRANGE", g.key(), g.index(), g.index()) },
}

// normsFor gives a random command's normalizations: replies that depend on
// timing or order are compared within a tolerance or sorted.
func normsFor(name string, marginMS int64) []Norm {
	n := func(op string, args ...string) []Norm {
		nm := Norm{Op: op}
		for _, a := range args {
			nm.Args = append(nm.Args, []byte(a))
		}
		return []Norm{nm}
	}
	switch name {
	case "keys", "smembers", "hgetall":
		return n("sort")
	case "scan":
		return n("scan")
	case "ttl", "expiretime":
		return n("approx", "1")
	case "pttl", "pexpiretime":
		return n("approx", strconv.FormatInt(marginMS, 10))
	case "randomkey":
		return n("shape")
	}
	return nil
}

// Workload generates and times random commands.
type Workload struct {
	r    *rand.Rand
	cmds []string
	// Margin is how far from a key's possible expiry the workload keeps its
	// commands, so no reply depends on which server saw the deadline first.
	Margin time.Duration
	// deadlines are possible expiry times (Unix ms) per key name, any db.
	deadlines map[string][]int64
}

// NewWorkload draws from the given commands (those with a generator).
func NewWorkload(seed int64, commands []string, margin time.Duration) *Workload {
	var cmds []string
	for _, c := range commands {
		if _, ok := generators[c]; ok {
			cmds = append(cmds, c)
		}
	}
	sort.Strings(cmds)
	return &Workload{r: rand.New(rand.NewSource(seed)), cmds: cmds, Margin: margin, deadlines: map[string][]int64{}}
}

// Commands lists the commands the workload draws from.
func (w *Workload) Commands() []string { return w.cmds }

// Next draws one command as a step.
func (w *Workload) Next() *Step {
	name := w.cmds[w.r.Intn(len(w.cmds))]
	args := generators[name](&gen{r: w.r})
	// Now and then an arity error: drop or add an argument.
	switch w.r.Intn(40) {
	case 0:
		if len(args) > 1 {
			args = args[:len(args)-1]
		}
	case 1:
		args = append(args, lit("extra"))
	}
	st := &Step{Args: args, Norms: normsFor(name, w.Margin.Milliseconds())}
	st.Text = FormatStep(st)
	return st
}

// Reset forgets every deadline (a fresh dataset).
func (w *Workload) Reset() { w.deadlines = map[string][]int64{} }

// touched returns the keys a command reads or writes; all is true when it
// looks at the whole keyspace.
func touched(args [][]byte) (keys []string, all bool) {
	name := strings.ToLower(string(args[0]))
	rest := args[1:]
	switch name {
	case "keys", "scan", "randomkey", "dbsize", "flushdb", "flushall":
		return nil, true
	case "select", "ping":
		return nil, false
	case "mget", "del", "unlink", "exists", "touch":
		for _, a := range rest {
			keys = append(keys, string(a))
		}
	case "mset", "msetnx":
		for i := 0; i < len(rest); i += 2 {
			keys = append(keys, string(rest[i]))
		}
	case "rename", "renamenx", "copy":
		for i := 0; i < len(rest) && i < 2; i++ {
			keys = append(keys, string(rest[i]))
		}
	default:
		if len(rest) > 0 {
			keys = append(keys, string(rest[0]))
		}
	}
	return keys, false
}

var expireCmds = map[string]bool{"expire": true, "pexpire": true, "expireat": true, "pexpireat": true}

// Before sleeps, if needed, so that no key the command touches is within
// Margin of a possible expiry.
func (w *Workload) Before(args [][]byte) {
	// EXPIRE ... GT/LT compares the new deadline with the old one: set in
	// the same millisecond from equal values they tie on one server and not
	// on another. A few ms after the previous command the tie cannot happen.
	if len(args) > 2 && expireCmds[strings.ToLower(string(args[0]))] {
		for _, a := range args[2:] {
			if f := strings.ToUpper(string(a)); f == "GT" || f == "LT" {
				time.Sleep(3 * time.Millisecond)
				break
			}
		}
	}
	for {
		wait := w.wait(args, time.Now().UnixMilli())
		if wait == 0 {
			return
		}
		time.Sleep(time.Duration(wait) * time.Millisecond)
	}
}

// wait is how many ms to wait at time now (Unix ms) before sending args.
func (w *Workload) wait(args [][]byte, now int64) int64 {
	keys, all := touched(args)
	if all {
		keys = keys[:0]
		for k := range w.deadlines {
			keys = append(keys, k)
		}
	}
	margin := w.Margin.Milliseconds()
	wait := int64(0)
	for _, k := range keys {
		for _, d := range w.deadlines[k] {
			if now >= d-margin && now <= d+margin && d+margin-now+1 > wait {
				wait = d + margin - now + 1
			}
		}
	}
	return wait
}

// After records the expiries a command may have set (whether or not it
// succeeded: the model is conservative) at send time sent.
func (w *Workload) After(args [][]byte, sent time.Time) {
	name := strings.ToLower(string(args[0]))
	now := sent.UnixMilli()
	// Drop deadlines long past.
	for k, ds := range w.deadlines {
		keep := ds[:0]
		for _, d := range ds {
			if d+w.Margin.Milliseconds() >= now {
				keep = append(keep, d)
			}
		}
		if len(keep) == 0 {
			delete(w.deadlines, k)
		} else {
			w.deadlines[k] = keep
		}
	}
	num := func(i int) (int64, bool) {
		if i >= len(args) {
			return 0, false
		}
		n, err := strconv.ParseInt(string(args[i]), 10, 64)
		return n, err == nil
	}
	add := func(key string, d int64) {
		w.deadlines[key] = append(w.deadlines[key], d)
	}
	unitDeadline := func(unit string, i int) {
		n, ok := num(i)
		// Bounds keep the arithmetic from overflowing; such deadlines are
		// centuries away anyway.
		if !ok || n > 1<<50 || n < -(1<<50) {
			return
		}
		switch strings.ToUpper(unit) {
		case "EX":
			add(string(args[1]), now+n*1000)
		case "PX":
			add(string(args[1]), now+n)
		case "EXAT":
			add(string(args[1]), n*1000)
		case "PXAT":
			add(string(args[1]), n)
		}
	}
	switch name {
	case "set", "getex":
		for i := 2; i < len(args); i++ {
			unitDeadline(string(args[i]), i+1)
		}
	case "setex":
		unitDeadline("EX", 2)
	case "psetex":
		unitDeadline("PX", 2)
	case "expire":
		unitDeadline("EX", 2)
	case "pexpire":
		unitDeadline("PX", 2)
	case "expireat":
		unitDeadline("EXAT", 2)
	case "pexpireat":
		unitDeadline("PXAT", 2)
	case "rename", "renamenx", "copy", "move":
		if len(args) >= 3 {
			src := string(args[1])
			dst := src
			if name != "move" {
				dst = string(args[2])
			}
			w.deadlines[dst] = append(w.deadlines[dst], w.deadlines[src]...)
		}
	}
}

// FormatStep writes a step in case-file syntax, so a reproducer can be pasted
// into a case file.
func FormatStep(st *Step) string {
	parts := make([]string, 0, len(st.Args))
	for _, a := range st.Args {
		if a.Time {
			unit := "$now"
			if a.MS {
				unit = "$nowms"
			}
			parts = append(parts, fmt.Sprintf("%s%+d", unit, a.Offset))
			continue
		}
		parts = append(parts, quoteArg(a.Lit))
	}
	for _, n := range st.Norms {
		parts = append(parts, "|", n.Op)
		for _, a := range n.Args {
			parts = append(parts, string(a))
		}
	}
	return strings.Join(parts, " ")
}

// quoteArg writes an argument bare when that reads back the same, else quoted.
func quoteArg(b []byte) string {
	s := string(b)
	bare := len(b) > 0 && !strings.ContainsAny(s, " \t\"'#|$[]\\") && s != "case" && s != "with" && s != "sleep"
	for _, c := range b {
		if c < 0x21 || c >= 0x7f {
			bare = false
		}
	}
	if bare {
		return s
	}
	return Escape(b, 0)
}
