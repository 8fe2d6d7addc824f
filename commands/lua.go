package commands

// The Lua side of scripting: one sandboxed gopher-lua state per run, the
// redis.* library, and Redis's conversions between replies and Lua values
// (Redis 7's script_lua.c semantics).

import (
	"bytes"
	"fmt"
	"log"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
	"github.com/redamo/redamo/internal/lualib"
)

// chunkName is the name Redis gives every script: errors read
// "user_script:LINE: ..." and sources "@user_script".
const chunkName = "user_script"

// Script-side errors, as Redis words them (the ERR code is added when the
// error reaches Lua, as Redis's luaPushError does).
const (
	msgLuaNoArgs      = "Please specify at least one argument for this redis lib call"
	msgLuaArgType     = "Lua redis lib command arguments must be strings or integers"
	msgLuaUnknownCmd  = "Unknown Redis command called from script"
	msgLuaArity       = "Wrong number of args calling Redis command from script"
	msgLuaNotAllowed  = "This Redis command is not allowed from script"
	msgLuaReadOnly    = "Write commands are not allowed from read-only scripts."
	msgLuaNoGlobal    = "Script attempted to access nonexistent global variable '%s'"
	msgLuaReadOnlyTbl = "Attempt to modify a readonly table"
	// msgLuaReaderType is load's refusal of a piece that is not a string.
	msgLuaReaderType = "reader function must return a string"
)

// newLuaState builds the sandbox a run executes in, and the read-only view
// of its globals the code runs in (a script adds KEYS and ARGV): Lua's base, table,
// string, math and coroutine libraries without the ones reaching outside
// (no os, io, loadfile, dofile), the libraries Redis adds (cjson,
// cmsgpack, bit, struct), the redis table bound to run, KEYS and ARGV, and
// globals that can be neither created nor read when missing.
func newLuaState(run *scriptRun) (L *lua.LState, env *lua.LTable) {
	// Lua 5.1 allows 8000 values on the stack (unpack of a long table);
	// gopher-lua's default registry holds fewer.
	L = lua.NewState(lua.Options{SkipOpenLibs: true, RegistryMaxSize: 1 << 16})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "_printregs", "newproxy", "setfenv", "getfenv"} {
		L.SetGlobal(name, lua.LNil)
	}
	// The functions replacing gopher-lua's run the one they replace in
	// their own call (GFunction), not through L.Call: errors are then
	// raised by the function the script called, which Lua's messages
	// name ("bad argument #1 to 'tostring'").
	tostring := L.GetGlobal("tostring").(*lua.LFunction)
	L.SetGlobal("tostring", L.NewFunction(func(L *lua.LState) int {
		// Lua 5.1 prints numbers with "%.14g" (gopher-lua as Go does).
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(luaNumberString(float64(n))))
			return 1
		}
		return tostring.GFunction(L)
	}))
	L.SetGlobal("tonumber", L.NewFunction(luaToNumber))
	strlib := L.GetGlobal("string").(*lua.LTable)
	format := strlib.RawGetString("format").(*lua.LFunction)
	strlib.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		// Lua 5.1 checks each argument against its conversion (gopher-lua
		// prints what it gets) and quotes %q its own way.
		top := L.GetTop()
		f := L.CheckString(1)
		spec, bad := formatSpecs(f, func(arg int, conv byte) byte {
			i := arg + 1
			if i > top {
				L.ArgError(i, "no value")
			}
			v := L.Get(i)
			switch {
			case strings.IndexByte("diouxXeEfgGc", conv) >= 0:
				if s, ok := v.(lua.LString); ok {
					if n, ok := luaStringNumber(string(s)); ok {
						L.Replace(i, n)
						v = n
					}
				}
				if _, ok := v.(lua.LNumber); !ok {
					L.ArgError(i, "number expected, got "+v.Type().String())
				}
				if conv == 'u' {
					// Go's fmt has no %u; %d prints a number that is not
					// negative as C's %u does.
					return 'd'
				}
			case conv == 's' || conv == 'q':
				switch v.(type) {
				case lua.LString, lua.LNumber:
				default:
					L.ArgError(i, "string expected, got "+v.Type().String())
				}
				if conv == 'q' {
					L.Replace(i, lua.LString(luaQuoted(v.String())))
					return 's'
				}
			}
			return conv
		})
		if bad != "" {
			L.RaiseError("%s", bad)
		}
		L.Replace(1, lua.LString(spec))
		return format.GFunction(L)
	}))
	char := strlib.RawGetString("char").(*lua.LFunction)
	strlib.RawSetString("char", L.NewFunction(func(L *lua.LState) int {
		// Lua 5.1 refuses a code outside 0..255 (gopher-lua wraps it
		// around); a code is truncated to an int first, as a C cast does.
		// A string that is a number is that number, as in Lua.
		for i := 1; i <= L.GetTop(); i++ {
			n, ok := L.Get(i).(lua.LNumber)
			if s, isStr := L.Get(i).(lua.LString); isStr {
				if n, ok = luaStringNumber(string(s)); ok {
					L.Replace(i, n)
				}
			}
			if ok && !(math.Trunc(float64(n)) >= 0 && math.Trunc(float64(n)) <= 255) {
				L.ArgError(i, "invalid value")
			}
		}
		return char.GFunction(L)
	}))
	// loadstring and load name a chunk as Lua does in runtime errors
	// (gopher-lua puts the name it is given before its messages as it
	// is) and word a syntax error as Lua does.
	loadstring := L.GetGlobal("loadstring").(*lua.LFunction)
	L.SetGlobal("loadstring", L.NewFunction(func(L *lua.LState) int {
		src := L.CheckString(1)
		source := L.OptString(2, src)
		L.SetTop(2)
		L.Replace(2, lua.LString(lua51.RuntimeChunkID(source)))
		n := loadstring.GFunction(L)
		if e, ok := L.Get(-1).(lua.LString); ok && n == 2 && L.Get(-2) == lua.LNil {
			L.Replace(-1, lua.LString(lua51.Syntax(src, source, string(e))))
		} else if fn, ok := L.Get(-1).(*lua.LFunction); ok && n == 1 {
			run.loaded(fn, source)
		}
		return n
	}))
	load := L.GetGlobal("load").(*lua.LFunction)
	L.SetGlobal("load", L.NewFunction(func(L *lua.LState) int {
		reader := L.CheckFunction(1)
		source := L.OptString(2, "=(load)")
		// The reader's pieces, recorded as load reads them, are the
		// source Syntax parses.
		var src strings.Builder
		L.SetTop(2)
		L.Replace(1, L.NewFunction(func(L *lua.LState) int {
			L.Push(reader)
			L.Call(0, 1)
			if s, ok := L.Get(-1).(lua.LString); ok {
				src.WriteString(string(s))
			} else if n, ok := L.Get(-1).(lua.LNumber); ok {
				src.WriteString(n.String())
			}
			return 1
		}))
		L.Replace(2, lua.LString(lua51.RuntimeChunkID(source)))
		n := load.GFunction(L)
		if e, ok := L.Get(-1).(lua.LString); ok && n == 2 && L.Get(-2) == lua.LNil && e != msgLuaReaderType {
			L.Replace(-1, lua.LString(lua51.Syntax(src.String(), source, string(e))))
		} else if fn, ok := L.Get(-1).(*lua.LFunction); ok && n == 1 {
			run.loaded(fn, source)
		}
		return n
	}))
	strlib.RawSetString("dump", L.NewFunction(run.dump))
	L.SetGlobal("unpack", L.NewFunction(luaUnpack))
	strByte := strlib.RawGetString("byte").(*lua.LFunction)
	strlib.RawSetString("byte", L.NewFunction(func(L *lua.LState) int {
		// Lua 5.1 checks the stack takes the bytes before it pushes them
		// (gopher-lua pushes until its registry overflows).
		s := L.CheckString(1)
		first := strPosition(L.OptInt64(2, 1), len(s))
		last := strPosition(L.OptInt64(3, first), len(s))
		first = max(first, 1)
		last = min(last, int64(len(s)))
		if n := last - first + 1; n > 0 && !lua51.CheckStack(L, int(n)) {
			luaRaise(L, "stack overflow (string slice too long)")
		}
		return strByte.GFunction(L)
	}))
	// math.huge is infinity in Lua 5.1 (gopher-lua has the largest float).
	L.GetGlobal("math").(*lua.LTable).RawSetString("huge", lua.LNumber(math.Inf(1)))
	lualib.Open(L)
	run.meterLibraries(L)
	L.SetGlobal("redis", run.redisLib(L))
	return L, protect(L)
}

// meterLibraries makes the library functions that make strings, tables
// and coroutines count them against the run's memory (luamem.go): before
// they run where the size can be known from the arguments (by an upper
// bound), else the strings they return.
func (run *scriptRun) meterLibraries(L *lua.LState) {
	lib := func(name string) *lua.LTable { return L.GetGlobal(name).(*lua.LTable) }
	str, tbl := lib("string"), lib("table")
	for _, name := range []string{"upper", "lower", "reverse", "char", "format"} {
		run.meter(L, str, name, nil)
	}
	run.meter(L, str, "rep", func(L *lua.LState) int64 {
		return mulBytes(int64(len(L.CheckString(1))), L.CheckInt64(2))
	})
	run.meter(L, str, "gsub", run.gsubGrowth)
	run.meter(L, tbl, "concat", func(L *lua.LState) int64 {
		t := L.CheckTable(1)
		sep := int64(len(L.OptString(2, "")))
		var n int64
		for i := L.OptInt64(3, 1); i <= L.OptInt64(4, int64(t.Len())); i++ {
			switch v := t.RawGetInt(int(i)).(type) {
			case lua.LString:
				n += int64(len(v)) + sep
			case lua.LNumber:
				n += 24 + sep
			default:
				return n // concat refuses the value
			}
		}
		return n
	})
	run.meter(L, tbl, "insert", func(*lua.LState) int64 { return luaSlotBytes })
	decode := func(L *lua.LState) int64 { return mulBytes(int64(len(L.CheckString(1))), luaDecodeFactor) }
	run.meter(L, lib("cjson"), "decode", decode)
	run.meter(L, lib("cjson"), "encode", nil)
	for _, name := range []string{"unpack", "unpack_one", "unpack_limit"} {
		run.meter(L, lib("cmsgpack"), name, decode)
	}
	run.meter(L, lib("cmsgpack"), "pack", nil)
	run.meter(L, lib("struct"), "pack", nil)
	co := lib("coroutine")
	create := co.RawGetString("create").(*lua.LFunction)
	resume := co.RawGetString("resume").(*lua.LFunction)
	co.RawSetString("create", L.NewFunction(func(L *lua.LState) int {
		run.mem.charge(L, luaCoroutineBytes)
		n := create.GFunction(L)
		th, ok := L.Get(-1).(*lua.LState)
		if mc, isMem := L.Context().(*memoryContext); ok && isMem && n == 1 {
			// A coroutine runs in a context of its own (gopher-lua's,
			// made from its creator's), which would not count.
			setMemoryContext(th, mc.Context, run.mem)
		}
		return n
	}))
	createFn := co.RawGetString("create").(*lua.LFunction)
	co.RawSetString("wrap", L.NewFunction(func(L *lua.LState) int {
		// coroutine.wrap as Lua's (auxwrap), on the coroutines above.
		L.Push(createFn)
		L.Push(L.CheckFunction(1))
		L.Call(1, 1)
		th := L.Get(-1)
		L.Push(L.NewFunction(func(L *lua.LState) int {
			base := L.GetTop()
			L.Push(resume)
			L.Push(th)
			for i := 1; i <= base; i++ {
				L.Push(L.Get(i))
			}
			L.Call(base+1, lua.MultRet)
			if L.Get(base+1) != lua.LTrue {
				msg := L.Get(base + 2)
				if s, ok := msg.(lua.LString); ok {
					msg = lua.LString(luaWhere(L, 1) + string(s))
				}
				L.Error(msg, 0)
			}
			return L.GetTop() - base - 1
		}))
		return 1
	}))
}

// meter replaces the function name of lib by one that counts, against
// the run's memory, what pre says it will make, or (pre nil) the strings
// it returns.
func (run *scriptRun) meter(L *lua.LState, lib *lua.LTable, name string, pre func(L *lua.LState) int64) {
	fn := lib.RawGetString(name).(*lua.LFunction)
	lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
		if pre != nil {
			run.mem.charge(L, pre(L))
			return fn.GFunction(L)
		}
		n := fn.GFunction(L)
		var size int64
		for i := L.GetTop() - n + 1; i <= L.GetTop(); i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				size += int64(len(s))
			}
		}
		run.mem.charge(L, size)
		return n
	}))
}

// gsubGrowth bounds what string.gsub makes: with a replacement string,
// each match (at most one per byte, and one more) makes the replacement,
// whose captures hold at most the subject; a function's or a table's
// replacements are counted as they come.
func (run *scriptRun) gsubGrowth(L *lua.LState) int64 {
	s := int64(len(L.CheckString(1)))
	switch repl := L.Get(3).(type) {
	case lua.LString:
		return s + mulBytes(2*s+1, int64(len(repl)))
	case *lua.LFunction, *lua.LTable:
		L.Replace(3, L.NewFunction(func(L *lua.LState) int {
			if t, ok := repl.(*lua.LTable); ok {
				L.Push(L.GetTable(t, L.Get(1)))
			} else {
				top := L.GetTop()
				L.Push(repl)
				for i := 1; i <= top; i++ {
					L.Push(L.Get(i))
				}
				L.Call(top, 1)
			}
			if v, ok := L.Get(-1).(lua.LString); ok {
				run.mem.charge(L, int64(len(v)))
			}
			return 1
		}))
	}
	return s
}

// mulBytes is a*b, or more than any limit when that overflows.
func mulBytes(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// luaUnpack is Lua 5.1's unpack, which refuses more results than the
// stack takes before it pushes any (gopher-lua's pushes until its
// registry overflows).
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	first := L.OptInt64(2, 1)
	last := L.OptInt64(3, int64(t.Len()))
	if first > last {
		return 0
	}
	n := last - first + 1
	if n <= 0 || n > lua51.MaxCStack || !lua51.CheckStack(L, int(n)) {
		luaRaise(L, "too many results to unpack")
	}
	for i := first; i <= last; i++ {
		L.Push(t.RawGetInt(int(i)))
	}
	return int(n)
}

// luaRaise is luaL_error: the message after the position of the Lua code
// that called the Go function running, none when that is not Lua code
// (pcall(unpack, ...)).
func luaRaise(L *lua.LState, msg string) {
	L.Error(lua.LString(luaWhere(L, 1)+msg), 0)
}

// strPosition is a string position as Lua 5.1's string functions read
// it (posrelat): negative counts from the end, and 0 is before the
// start.
func strPosition(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	return max(pos, 0)
}

func stringArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// readOnlyView returns a table that reads as t and refuses every write,
// as Redis's read-only tables do (a Lua 5.1 patch of Redis's; here an
// empty table whose metatable reads through to t). missing, when set,
// answers a read of a key t lacks.
func readOnlyView(L *lua.LState, t *lua.LTable, missing lua.LGFunction) *lua.LTable {
	view, mt := L.NewTable(), L.NewTable()
	var index lua.LValue = t
	if missing != nil {
		index = L.NewFunction(func(L *lua.LState) int {
			if v := t.RawGet(L.Get(2)); v != lua.LNil {
				L.Push(v)
				return 1
			}
			return missing(L)
		})
	}
	mt.RawSetString("__index", index)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(msgLuaReadOnlyTbl)
		return 0
	}))
	mt.RawSetString(readOnlyMark, lua.LTrue)
	L.SetMetatable(view, mt)
	return view
}

// readOnlyMark marks the metatable of a read-only view, for rawset, which
// bypasses the metatable a view refuses writes with.
const readOnlyMark = "__redamo_readonly"

// protect makes the global table and the library tables read-only, as
// Redis does: reading a missing global is an error too. It returns the
// view of the globals the script runs in.
func protect(L *lua.LState) *lua.LTable {
	g := L.G.Global
	for _, name := range []string{"string", "math", "table", "coroutine", "cjson", "cmsgpack", "bit", "struct", "redis"} {
		if lib, ok := g.RawGetString(name).(*lua.LTable); ok {
			g.RawSetString(name, readOnlyView(L, lib, nil))
		}
	}
	view := readOnlyView(L, g, func(L *lua.LState) int {
		L.RaiseError(msgLuaNoGlobal, L.CheckAny(2).String())
		return 0
	})
	g.RawSetString("_G", view)
	rawset := g.RawGetString("rawset").(*lua.LFunction)
	g.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		if mt, ok := L.GetMetatable(L.Get(1)).(*lua.LTable); ok && mt.RawGetString(readOnlyMark) == lua.LTrue {
			return luaError(L, msgLuaReadOnlyTbl, true)
		}
		L.Push(rawset)
		for i := 1; i <= 3; i++ {
			L.Push(L.Get(i))
		}
		L.Call(3, 1)
		return 1
	}))
	return view
}

// redisLib is the redis table of one run.
func (run *scriptRun) redisLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return run.call(L, true) },
		"pcall":              func(L *lua.LState) int { return run.call(L, false) },
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"sha1hex":            luaSHA1Hex,
		"log":                luaLog,
		"setresp":            run.setResp,
		"set_repl":           luaSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	return t
}

// versionNum is Version as Redis's 0x00MMmmpp number.
func versionNum(v string) int {
	var maj, min, patch int
	fmt.Sscanf(v, "%d.%d.%d", &maj, &min, &patch)
	return maj<<16 | min<<8 | patch
}

// errTable is the {err=...} table redis.pcall returns and redis.call
// raises, made as Redis's luaPushErrorBuff makes it: from "-CODE msg" (an
// error reply) the code is the first word; a text without the leading
// dash gets the code ERR; line breaks at either end go.
func errTable(L *lua.LState, text string) *lua.LTable {
	code, msg := "ERR", text
	if rest, ok := strings.CutPrefix(text, "-"); ok {
		msg = rest
		if c, m, found := strings.Cut(rest, " "); found {
			code, msg = c, m
		}
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(code+" "+strings.Trim(msg, "\r\n")))
	return t
}

// luaError raises (redis.call) or returns (redis.pcall) the error text
// (an error reply with its leading dash, or a message ERR is added to).
func luaError(L *lua.LState, text string, raise bool) int {
	t := errTable(L, text)
	if raise {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}

// msgLuaBadReplyArgs is what redis.error_reply and redis.status_reply
// return (not raise) for anything but one string.
const msgLuaBadReplyArgs = "wrong number or type of arguments"

func luaErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		return luaError(L, msgLuaBadReplyArgs, false)
	}
	text := string(s)
	if !strings.HasPrefix(text, "-") {
		text = "-" + text
	}
	L.Push(errTable(L, text))
	return 1
}

func luaStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		return luaError(L, msgLuaBadReplyArgs, false)
	}
	t := L.NewTable()
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, "wrong number of arguments", true)
	}
	L.Push(lua.LString(sha1Hex([]byte(L.ToString(1)))))
	return 1
}

func luaLog(L *lua.LState) int {
	if L.GetTop() < 2 {
		return luaError(L, "redis.log() requires two arguments or more.", true)
	}
	level, ok := L.Get(1).(lua.LNumber)
	if !ok {
		return luaError(L, "First argument must be a number (log level).", true)
	}
	if level < 0 || level > 3 {
		return luaError(L, "Invalid debug level.", true)
	}
	parts := make([]string, 0, L.GetTop()-1)
	for i := 2; i <= L.GetTop(); i++ {
		parts = append(parts, L.ToString(i))
	}
	log.Printf("redamo: script: %s", strings.Join(parts, " "))
	return 0
}

// luaSetRepl accepts redis.set_repl as Redis does; redamo has no
// replication to steer (DynamoDB replicates every write).
func luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, "redis.set_repl() requires two arguments.", true)
	}
	if n, ok := L.Get(1).(lua.LNumber); !ok || n < 0 || n > 3 {
		return luaError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.", true)
	}
	return 0
}

func (run *scriptRun) setResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, "redis.setresp() requires one argument.", true)
	}
	n, ok := L.Get(1).(lua.LNumber)
	if !ok || (n != 2 && n != 3) {
		return luaError(L, "RESP version must be 2 or 3.", true)
	}
	run.resp = int(n)
	return 0
}

// call is redis.call (raise) and redis.pcall: it runs one command against
// the run's transaction and converts its reply.
func (run *scriptRun) call(L *lua.LState, raise bool) int {
	n := L.GetTop()
	if n == 0 {
		return luaError(L, msgLuaNoArgs, raise)
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			// "%.17g", as Redis formats a number argument.
			args[i-1] = FormatDouble(nil, float64(v))
		default:
			return luaError(L, msgLuaArgType, raise)
		}
	}
	cmd := lookup(run.c.Srv.Table, args[0])
	if cmd != nil && len(cmd.Subcommands) > 0 && len(args) >= 2 {
		cmd = cmd.Subcommand(args[1])
	}
	if cmd == nil {
		arity, ok := redisNoScript(args)
		switch {
		case !ok:
			return luaError(L, msgLuaUnknownCmd, raise)
		case !(&Command{Arity: arity}).ArityOK(len(args)):
			return luaError(L, msgLuaArity, raise)
		}
		// A command redamo lacks, which Redis refuses in scripts anyway.
		return luaError(L, msgLuaNotAllowed, raise)
	}
	switch {
	case !cmd.ArityOK(len(args)):
		return luaError(L, msgLuaArity, raise)
	case cmd.HasFlag(FlagNoScript):
		return luaError(L, msgLuaNotAllowed, raise)
	case run.readOnly && (cmd.HasFlag(FlagWrite) || cmd.MayReplicate):
		return luaError(L, msgLuaReadOnly, raise)
	}
	rec := &replyRecorder{proto: run.resp}
	cc := run.c.sub(queuedCmd{cmd: cmd, args: args}, rec, run.st)
	cc.InScript = true
	run.c.Srv.runCounted(cc, cmd)
	if len(rec.top) == 0 {
		return luaError(L, fmt.Sprintf(MsgMalformedReply, cmd.Name)[4:], raise)
	}
	r := rec.top[len(rec.top)-1]
	if r.Kind == ReplyError {
		return luaError(L, "-"+r.Str, raise)
	}
	run.mem.charge(L, replyBytes(r))
	L.Push(run.toLua(L, r))
	return 1
}

// replyBytes bounds the memory a reply takes as Lua values.
func replyBytes(r Reply) int64 {
	n := int64(len(r.Str)) + luaSlotBytes
	if len(r.Elems) > 0 {
		n += luaTableBytes
	}
	for _, e := range r.Elems {
		n += replyBytes(e)
	}
	return n
}

// runCounted is Run for a command a script calls. gopher-lua turns a Go
// panic under a protected call into a script error, which would hide the
// bug from everyone but the client: it is counted (Server.Panics) on its
// way there.
func (s *Server) runCounted(c *Ctx, cmd *Command) {
	defer func() {
		if p := recover(); p != nil {
			s.Panics.Add(1)
			panic(p)
		}
	}()
	s.Run(c, cmd)
}

// dump is string.dump: the function as a Lua 5.1 binary chunk (which
// load and loadstring refuse, as Redis's do).
func (run *scriptRun) dump(L *lua.LState) int {
	fn := L.CheckFunction(1)
	if fn.IsG {
		L.RaiseError("unable to dump given function")
	}
	L.Push(lua.LString(lua51.Dump(fn.Proto, run.source(fn.Proto))))
	return 1
}

//go:generate go run ../scripts/gencmddocs -json=$REDIS_COMMANDS_JSON -noscript -out redis_noscript_gen.go

// redisNoScript reports whether args call a command of Redis that
// scripts may not call and redamo does not have, and its arity (or, alone,
// the container of such subcommands).
func redisNoScript(args [][]byte) (arity int, ok bool) {
	name := strings.ToLower(string(args[0]))
	if len(args) >= 2 {
		if arity, ok := redisNoScriptArity[name+"|"+strings.ToLower(string(args[1]))]; ok {
			return arity, true
		}
	}
	if arity, ok = redisNoScriptArity[name]; ok {
		return arity, true
	}
	if arity, ok := redisNoScriptContainerArity[name]; ok && len(args) == 1 {
		// A container alone fails its arity check; with a subcommand
		// that is not among those, it is unknown.
		return arity, true
	}
	return 0, false
}

// luaToNumber is Lua 5.1's tonumber: decimal text as C's strtod reads it
// (exponents, hexadecimal, surrounding spaces), or digits in a base from 2
// to 36; nil for anything else.
func luaToNumber(L *lua.LState) int {
	v := L.CheckAny(1)
	base := L.OptInt(2, 10)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	var out lua.LValue = lua.LNil
	switch v := v.(type) {
	case lua.LNumber:
		if base == 10 {
			out = v
		}
	case lua.LString:
		if base == 10 {
			if n, ok := luaStringNumber(string(v)); ok {
				out = n
			}
		} else if n, err := strconv.ParseUint(strings.ToLower(strings.TrimSpace(string(v))), base, 64); err == nil {
			out = lua.LNumber(n)
		}
	}
	L.Push(out)
	return 1
}

// luaStringNumber converts a string to a number as Lua 5.1 does where it
// expects one (surrounding blanks allowed, decimal or hexadecimal).
func luaStringNumber(s string) (lua.LNumber, bool) {
	text := strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(text, 64); err == nil {
		return lua.LNumber(f), true
	}
	if n, err := strconv.ParseInt(text, 0, 64); err == nil {
		return lua.LNumber(n), true
	}
	return 0, false
}

// luaNumberString is a number as Lua 5.1's tostring prints it.
func luaNumberString(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// toLua converts a command's reply to a Lua value as Redis does for the
// script's protocol (redis.setresp).
func (run *scriptRun) toLua(L *lua.LState, r Reply) lua.LValue {
	switch r.Kind {
	case ReplyInt:
		return lua.LNumber(r.Int)
	case ReplyBulk:
		return lua.LString(r.Str)
	case ReplySimple:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(r.Str))
		return t
	case ReplyError:
		return errTable(L, "-"+r.Str)
	case ReplyNil, ReplyNilArray:
		if run.resp == 3 {
			return lua.LNil
		}
		return lua.LFalse
	case ReplyArray:
		t := L.CreateTable(len(r.Elems), 0)
		for i, e := range r.Elems {
			t.RawSetInt(i+1, run.toLua(L, e))
		}
		return t
	case ReplyMap:
		m := L.NewTable()
		for i := 0; i+1 < len(r.Elems); i += 2 {
			m.RawSet(run.toLua(L, r.Elems[i]), run.toLua(L, r.Elems[i+1]))
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t
	case ReplySet:
		s := L.NewTable()
		for _, e := range r.Elems {
			s.RawSet(run.toLua(L, e), lua.LTrue)
		}
		t := L.NewTable()
		t.RawSetString("set", s)
		return t
	case ReplyDouble:
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(r.Float))
		return t
	case ReplyBool:
		return lua.LBool(r.Int != 0)
	case ReplyBigNumber:
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(r.Str))
		return t
	case ReplyVerbatim:
		v := L.NewTable()
		v.RawSetString("format", lua.LString(r.Format))
		v.RawSetString("string", lua.LString(r.Str))
		t := L.NewTable()
		t.RawSetString("verbatim_string", v)
		return t
	}
	return lua.LNil
}

// Redis converts a script's value to a reply on Lua's stack, which holds
// at most lua51.MaxCStack values for C code: each level of nesting takes
// slots, and a value reached past the limit is replied as the error
// msgLuaStackLimit in its place (the reply goes on), whatever it is. So
// a table that holds itself is not followed forever.
const (
	msgLuaStackLimit = "ERR reached lua stack limit"
	// replyStackBase is what the stack holds when the conversion starts:
	// the error handler and the value.
	replyStackBase = 2
	// replyStackRoom is the room a conversion asks for (lua_checkstack):
	// a map's entry takes four slots.
	replyStackRoom = 4
)

// writeLua replies with a script's return value, converted as Redis does.
func (run *scriptRun) writeLua(w Writer, v lua.LValue) {
	run.writeValue(w, v, replyStackBase)
}

// writeValue replies with v, the top of a Lua stack of depth values.
func (run *scriptRun) writeValue(w Writer, v lua.LValue, depth int) {
	if depth+replyStackRoom > lua51.MaxCStack {
		w.Error(msgLuaStackLimit)
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.BulkString(string(v))
	case lua.LNumber:
		w.Int(luaInt(float64(v)))
	case lua.LBool:
		switch {
		case run.resp == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Nil()
		}
	case *lua.LTable:
		run.writeTable(w, v, depth)
	default:
		w.Nil()
	}
}

// luaInt truncates a Lua number to an integer reply, as Redis's cast does.
func luaInt(f float64) int64 {
	if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// writeTable replies with the table t at depth on the stack; the stack
// slots each kind of element is converted at are Redis's
// (luaReplyToRedisReply): an array's element one above the table, a map's
// key four and its value three, a set's member three.
func (run *scriptRun) writeTable(w Writer, t *lua.LTable, depth int) {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error(oneLine(string(s)))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.Simple(oneLine(string(s)))
		return
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(d))
		return
	}
	if b, ok := t.RawGetString("big_number").(lua.LString); ok {
		// Unchecked, as in Redis, but on one line: a CR or LF would end
		// the reply in RESP3.
		w.BigNumber(oneLine(string(b)))
		return
	}
	if v, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		format, _ := v.RawGetString("format").(lua.LString)
		text, _ := v.RawGetString("string").(lua.LString)
		w.Verbatim(string(format), string(text))
		return
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var keys, vals []lua.LValue
		m.ForEach(func(k, v lua.LValue) {
			keys, vals = append(keys, k), append(vals, v)
		})
		w.Map(len(keys))
		for i := range keys {
			run.writeValue(w, keys[i], depth+4)
			run.writeValue(w, vals[i], depth+3)
		}
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		var keys []lua.LValue
		s.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		w.Set(len(keys))
		for _, k := range keys {
			run.writeValue(w, k, depth+3)
		}
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		run.writeValue(w, t.RawGetInt(i), depth+1)
	}
}

// oneLine is an error or status text as Redis sends it: newlines become
// spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return string(bytes.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, []byte(s)))
}

// formatSpecs returns format with each conversion replaced by what
// check, told the (1-based) index of the argument it formats and the
// conversion, returns (which may raise the argument's error); check is
// first told the index alone (conversion 0), so that a missing argument
// is refused before anything else, as Lua does. bad is the error Lua 5.1
// raises for the format itself (more than five flags, three digits of
// width or precision, a conversion it does not know), "" if none.
func formatSpecs(format string, check func(arg int, conv byte) byte) (spec, bad string) {
	out := []byte(format)
	arg := 0
	digits := func(i, most int) int {
		for n := 0; n < most && i < len(out) && out[i] >= '0' && out[i] <= '9'; n++ {
			i++
		}
		return i
	}
	for i := 0; i < len(out); i++ {
		if out[i] != '%' {
			continue
		}
		i++
		if i < len(out) && out[i] == '%' {
			continue
		}
		arg++
		check(arg, 0)
		start := i
		for i < len(out) && strings.IndexByte("-+ #0", out[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			return "", "invalid format (repeated flags)"
		}
		i = digits(i, 2)
		if i < len(out) && out[i] == '.' {
			i = digits(i+1, 2)
		}
		if i < len(out) && out[i] >= '0' && out[i] <= '9' {
			return "", "invalid format (width or precision too long)"
		}
		if i == len(out) || strings.IndexByte("cdiouxXeEfgGqs", out[i]) < 0 {
			// At the end Lua prints the NUL it finds there: nothing.
			conv := ""
			if i < len(out) {
				conv = string(out[i])
			}
			return "", "invalid option '%" + conv + "' to 'format'"
		}
		out[i] = check(arg, out[i])
	}
	return string(out), ""
}

// luaQuoted is s as Lua 5.1's %q writes it.
func luaQuoted(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
