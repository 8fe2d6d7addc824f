package fuzz

import (
	"fmt"
	"strings"
)

// Scripts for EVAL and libraries for FUNCTION LOAD come from a small
// grammar: statements, expressions over Lua's and Redis's libraries,
// redis.call of a drawn command, replies of every shape. Everything is
// bounded (loops, string.rep, nesting): a script that runs long or
// allocates much is the business of the scripting limits' own tests, and
// a fuzzer case must finish well within the script time limit.

// luaState is what the script being drawn may refer to.
type luaState struct {
	// function: the body of a library function, whose keys and
	// arguments are its parameters keys and args (KEYS and ARGV are
	// not there).
	function bool
	locals   int
}

// luaQuote is s as a Lua string literal.
func luaQuote(s []byte) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// luaValue is a value for a script: short ones as literals, long ones
// built by string.rep.
func luaValue(v []byte) string {
	if len(v) > 200 {
		return fmt.Sprintf("string.rep(%s, %d)", luaQuote(v[:1]), len(v))
	}
	return luaQuote(v)
}

// script draws an EVAL script.
func (g *generator) script() string {
	if g.lua != nil {
		// A script inside a script's redis.call: EVAL is refused there.
		return "return 1"
	}
	g.lua = &luaState{}
	defer func() { g.lua = nil }()
	return g.chunk()
}

func (g *generator) chunk() string {
	var b strings.Builder
	for range g.r.IntN(4) {
		b.WriteString(g.luaStmt(0))
		b.WriteString("\n")
	}
	b.WriteString("return " + g.luaRet(0))
	s := b.String()
	if g.chance(0.04) {
		// Not Lua.
		i := g.r.IntN(len(s))
		s = s[:i] + g.pick("(", "end", "", "\"", "=", "[[") + s[i+1:]
	}
	return s
}

func (g *generator) keyRef() string {
	if g.lua.function {
		return g.pick("keys[1]", "keys[2]", luaQuote([]byte(g.key())))
	}
	return g.pick("KEYS[1]", "KEYS[2]", luaQuote([]byte(g.key())))
}

func (g *generator) argRef() string {
	if g.lua.function {
		return g.pick("args[1]", "args[2]", "#args")
	}
	return g.pick("ARGV[1]", "ARGV[2]", "ARGV[9]", "#KEYS", "#ARGV")
}

func (g *generator) luaStmt(depth int) string {
	n := g.r.IntN(12)
	if depth > 1 && n >= 4 {
		n %= 4
	}
	switch n {
	case 0, 1:
		g.lua.locals++
		return fmt.Sprintf("local v%d = %s", g.lua.locals, g.luaExpr(depth+1))
	case 2, 3:
		return g.luaCall()
	case 4:
		return fmt.Sprintf("for i = 1, %d do %s end", g.pick2(1, 3, 10, 50), g.luaStmt(depth+1))
	case 5:
		return fmt.Sprintf("if %s then %s else %s end", g.luaExpr(depth+1), g.luaStmt(depth+1), g.luaStmt(depth+1))
	case 6:
		return fmt.Sprintf("pcall(function() %s end)", g.luaStmt(depth+1))
	case 7:
		return fmt.Sprintf("redis.setresp(%s)", g.pick("2", "3", "3", "3", "2", "3", "4", "'x'"))
	case 8:
		return g.pick(`error("boom")`, `error({err="ERR custom"})`, `error()`, `error(nil)`, `x_global = 1`,
			`redis.log(redis.LOG_DEBUG, "fuzz")`, `redis.set_repl(redis.REPL_ALL)`, `redis.replicate_commands()`,
			`local t = {} for i = 1, 40 do t[i] = i end`, `local s = "" for i = 1, 30 do s = s .. i end`)
	case 9:
		return fmt.Sprintf("local ok, e = pcall(redis.call, %s)", g.luaCallArgs())
	case 10:
		return fmt.Sprintf("local c = {} local t = c for i = 1, %d do c[1] = {i} c = c[1] end", g.pick2(2, 10, 40))
	default:
		return fmt.Sprintf("local r = %s", g.luaLib(depth+1))
	}
}

// luaCall is redis.call or redis.pcall of a drawn command.
func (g *generator) luaCall() string {
	return fmt.Sprintf("%s(%s)", g.pick("redis.call", "redis.pcall", "redis.pcall"), g.luaCallArgs())
}

func (g *generator) luaCallArgs() string {
	c := g.command()
	parts := make([]string, 0, len(c))
	for i, a := range c {
		switch {
		case i > 0 && g.chance(0.1):
			parts = append(parts, g.keyRef())
		case i > 0 && g.chance(0.05):
			parts = append(parts, g.pick("1", "1.5", "-0", "nil", "{}", "true", "2^63"))
		default:
			parts = append(parts, luaValue(a))
		}
	}
	if g.chance(0.03) {
		return ""
	}
	return strings.Join(parts, ", ")
}

func (g *generator) luaExpr(depth int) string {
	if depth > 3 {
		return g.luaAtom()
	}
	switch g.r.IntN(8) {
	case 0, 1, 2:
		return g.luaAtom()
	case 3:
		return g.luaCall()
	case 4:
		op := g.pick("..", "+", "-", "*", "/", "%", "^", "==", "<", "and", "or")
		return fmt.Sprintf("(%s %s %s)", g.luaExpr(depth+1), op, g.luaExpr(depth+1))
	case 5:
		return g.luaTable(depth + 1)
	case 6:
		return fmt.Sprintf("%s(%s)", g.pick("tostring", "tonumber", "type", "#", "not "), g.luaExpr(depth+1))
	default:
		return g.luaLib(depth + 1)
	}
}

func (g *generator) luaAtom() string {
	switch g.r.IntN(5) {
	case 0:
		return g.pick("1", "-1", "0", "1.5", "0/0", "1/0", "-1/0", "math.huge", "2^53", "2^63", "-2^63", "1e308", "0x10", "3")
	case 1:
		return luaValue(g.val())
	case 2:
		return g.keyRef()
	case 3:
		return g.argRef()
	default:
		if g.lua.locals > 0 && g.chance(0.6) {
			return fmt.Sprintf("v%d", 1+g.r.IntN(g.lua.locals))
		}
		return g.pick("nil", "true", "false", "{}", `""`)
	}
}

// luaLib calls a library function with plausible or odd arguments.
func (g *generator) luaLib(depth int) string {
	e := func() string { return g.luaExpr(depth + 1) }
	switch g.r.IntN(20) {
	case 0:
		return fmt.Sprintf("string.rep(%s, %s)", e(), g.pick("0", "1", "3", "-1", "100", "1000"))
	case 1:
		return fmt.Sprintf("string.format(%s, %s)", luaQuote([]byte(g.pick("%d", "%s", "%5.2f", "%x", "%c", "%q", "%%", "%10000d", "%", "%i %s", "%.99f", "%g"))), e())
	case 2:
		return fmt.Sprintf("string.sub(%s, %s, %s)", e(), g.pick("1", "-1", "0", "2^31", "-100"), g.pick("1", "-1", "100", "-2^31"))
	case 3:
		return fmt.Sprintf("string.%s(%s)", g.pick("byte", "len", "upper", "lower", "reverse"), e())
	case 4:
		return fmt.Sprintf("string.char(%s)", g.pick("65", "0", "255", "256", "-1", "65, 66"))
	case 5:
		return fmt.Sprintf("string.%s(%s, %s)", g.pick("find", "match", "gmatch", "gsub"), e(),
			luaQuote([]byte(g.pick("a", "(", "%", "[a-", "%d+", "(.)(.)", ".-", "%b()", "[%a]*")))) + g.pick("", ", 'x'")
	case 6:
		return fmt.Sprintf("cjson.encode(%s)", g.luaTable(depth+1))
	case 7:
		return fmt.Sprintf("cjson.decode(%s)", luaQuote([]byte(g.pick(`{"a":1}`, `[1,2,[3]]`, `[`, `{"a":}`, `"x"`, `1e400`, `null`,
			`[[[[[[[[[[1]]]]]]]]]]`, `{"a":{"b":{"c":[true,false,null]}}}`, `"\ud800"`, `-`, `[1,`, ``))))
	case 8:
		return fmt.Sprintf("cmsgpack.pack(%s)", g.luaTable(depth+1))
	case 9:
		return fmt.Sprintf("cmsgpack.unpack(%s)", luaQuote([]byte(g.pick("\x93\x01\x02\x03", "\xc1", "\xdd\xff\xff\xff\xff", "\x81\xa1a\x01", "", "\xdb\x00\x00\x00\x10ab"))))
	case 10:
		return fmt.Sprintf("struct.pack(%s, %s)", luaQuote([]byte(g.pick("<i4", ">Hb", "i99", "s", "c0", "!4i", "xxx", "<d", "<I8"))), e())
	case 11:
		return fmt.Sprintf("struct.unpack(%s, %s)", luaQuote([]byte(g.pick("<i4", "c2", "s", ">I2", "i17", "Bb"))), e())
	case 12:
		return fmt.Sprintf("bit.%s(%s, %s)", g.pick("band", "bor", "bxor", "lshift", "rshift", "arshift", "rol"), e(), g.pick("1", "31", "32", "-1", "2^40"))
	case 13:
		return fmt.Sprintf("bit.tohex(%s, %s)", e(), g.pick("8", "-8", "0", "100"))
	case 14:
		return fmt.Sprintf("redis.%s(%s)", g.pick("sha1hex", "status_reply", "error_reply"), e())
	case 15:
		return fmt.Sprintf("table.concat(%s, %s)", g.luaTable(depth+1), luaQuote([]byte(g.pick(",", ""))))
	case 16:
		return fmt.Sprintf("select(%s, 1, 2, 3)", g.pick("'#'", "1", "-1", "0", "4"))
	case 17:
		return fmt.Sprintf("math.%s(%s)", g.pick("floor", "ceil", "abs", "sqrt", "fmod", "max", "min", "log", "frexp"), e())
	case 18:
		return fmt.Sprintf("setmetatable({}, {__index = function(t, k) return %s end}).x", e())
	default:
		return fmt.Sprintf("unpack(%s)", g.luaTable(depth+1))
	}
}

func (g *generator) luaTable(depth int) string {
	if depth > 4 {
		return "{1}"
	}
	e := func() string { return g.luaExpr(depth + 1) }
	switch g.r.IntN(10) {
	case 0:
		return fmt.Sprintf("{%s, %s, %s}", e(), e(), e())
	case 1:
		return fmt.Sprintf("{1, nil, %s}", e())
	case 2:
		return fmt.Sprintf("{ok = %s}", e())
	case 3:
		return fmt.Sprintf("{err = %s}", e())
	case 4:
		return fmt.Sprintf("{double = %s}", e())
	case 5:
		return fmt.Sprintf("{map = {a = %s, [1] = %s}}", e(), e())
	case 6:
		return fmt.Sprintf("{set = {a = true, b = %s}}", e())
	case 7:
		return fmt.Sprintf("{big_number = %s}", e())
	case 8:
		return fmt.Sprintf("{%s, {%s, {%s}}}", e(), e(), e())
	default:
		return fmt.Sprintf("{a = 1, %s}", e())
	}
}

// luaRet is what a script returns: every reply shape.
func (g *generator) luaRet(depth int) string {
	switch g.r.IntN(5) {
	case 0:
		return g.luaCall()
	case 1:
		return g.luaTable(depth + 1)
	case 2:
		return fmt.Sprintf("%s, %s", g.luaExpr(depth+1), g.luaExpr(depth+1))
	default:
		return g.luaExpr(depth + 1)
	}
}

// library draws FUNCTION LOAD's code: a library registering f1, f2 or g1,
// or one broken in its header, its registrations or its Lua.
func (g *generator) library() string {
	if g.lua != nil {
		return "#!lua name=inner\nredis.register_function('inner', function() return 1 end)"
	}
	g.lua = &luaState{function: true}
	defer func() { g.lua = nil }()
	lib := g.pick("lib1", "lib1", "lib2", "lib3")
	header := "#!lua name=" + lib
	if g.chance(0.08) {
		header = g.pick("#!lua", "#!js name=x", "#!lua name=", "#!lua name=a-b!", "#!lua name=x foo=bar", "lua name=x", "#!lua name=x name=y")
	}
	var b strings.Builder
	b.WriteString(header + "\n")
	fn := g.pick("f1", "f1", "f2")
	if lib != "lib1" {
		fn = g.pick("f2", "h"+lib[3:])
	}
	body := g.chunk()
	switch g.r.IntN(10) {
	case 0:
		fmt.Fprintf(&b, "redis.register_function{function_name=%q, callback=function(keys, args) %s end, flags={%s}}\n",
			fn, body, g.pick("'no-writes'", "'allow-oom'", "'bogus'", "", "'no-writes', 'allow-stale', 'no-cluster'"))
	case 1:
		fmt.Fprintf(&b, "redis.register_function(%q, function(keys, args) %s end)\nredis.register_function(%q, function() return 2 end)\n", fn, body, fn)
	case 2:
		b.WriteString(g.pick("redis.call('set', 'k', 'v')\n", "return 1\n", "redis.register_function('x')\n",
			"redis.register_function('f1', 'notafunction')\n", "redis.register_function{function_name='f1'}\n",
			"redis.register_function('f 1', function() return 1 end)\n", "local x = redis.setresp\n", "for i = 1, 100 do end\n"))
	default:
		fmt.Fprintf(&b, "redis.register_function(%q, function(keys, args) %s end)\n", fn, body)
	}
	if g.chance(0.5) {
		fmt.Fprintf(&b, "redis.register_function{function_name='g1', callback=function(keys, args) return %s end, flags={'no-writes'}}\n", g.luaRet(1))
	}
	return b.String()
}
