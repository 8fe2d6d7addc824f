package commands

// The functions family (Redis 7): FUNCTION LOAD|LIST|DELETE|FLUSH|STATS|
// KILL|HELP, FCALL and FCALL_RO, on the scripting engine (scripting.go,
// lua.go).
//
// Libraries live in the table (model.LibrariesItem: one item for all of
// them, so a load checks its function names against every library and
// changes the set in one conditional write); each process keeps the
// compiled set and checks the table again once it has not for
// scriptRecheck. A library's code runs when it is loaded, with only
// redis.register_function, redis.log and redis.REDIS_VERSION at hand, as
// in Redis; FCALL runs it again in a fresh state to find the function,
// whose body then sees the whole scripting environment. FUNCTION DUMP and
// RESTORE are in functions_dump.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/lua51"
	"github.com/redamo/redamo/model"
)

// Function replies, as Redis 7 sends them.
const (
	MsgFunctionNotFound  = "ERR Function not found"
	MsgLibraryNotFound   = "ERR Library not found"
	MsgBadNumKeys        = "ERR Bad number of keys provided"
	MsgFunctionFlushOpts = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
	MsgFunctionNoCode    = "ERR Function code is missing"
	msgBadName           = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
)

// functionLoadTimeout is how long a library's code may run to register
// its functions, as in Redis (LOAD_TIMEOUT_MS): FUNCTION LOAD, and here
// FUNCTION RESTORE and the compiling of stored libraries too (Redis
// restores without a limit, and code that never returns would hold the
// instance).
const functionLoadTimeout = 500 * time.Millisecond

// msgFunctionLoadTimeout is the error of code that runs past it.
const msgFunctionLoadTimeout = "Error registering functions: ERR FUNCTION LOAD timeout"

// functionChunk is the chunk name of library code.
const functionChunk = "user_function"

// scriptFlagNames are the flags a function may declare, in Redis's order
// (FUNCTION LIST reports them so).
var scriptFlagNames = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

func registerFunctions(t *Table) {
	t.Register([]Row{
		{Name: "fcall", Run: func(c *Ctx) { fcallGeneric(c, false) }},
		{Name: "fcall_ro", Run: func(c *Ctx) { fcallGeneric(c, true) }},
		{Name: "function|load", Run: cmdFunctionLoad},
		{Name: "function|list", Run: cmdFunctionList},
		{Name: "function|delete", Run: cmdFunctionDelete},
		{Name: "function|flush", Run: cmdFunctionFlush},
		{Name: "function|stats", Run: cmdFunctionStats},
		{Name: "function|kill", Run: cmdFunctionKill},
		{Name: "function|help", Run: cmdFunctionHelp},
		{Name: "function|dump", Run: cmdFunctionDump},
		{Name: "function|restore", Run: cmdFunctionRestore},
	})
}

// library is a compiled library.
type library struct {
	name  string
	code  []byte // as loaded, shebang included
	proto *lua.FunctionProto
	funcs []*libFunction
}

// libFunction is one registered function.
type libFunction struct {
	lib     *library
	name    string
	desc    string
	hasDesc bool
	// flags are bits of scriptFlagNames.
	flags uint8
}

func (f *libFunction) noWrites() bool { return f.flags&1 != 0 }

// librarySet is the set of libraries a process knows, as of one version
// of the libraries item.
type librarySet struct {
	ver     string
	libs    map[string]*library
	byFunc  map[string]*libFunction // by lower-case name
	checked time.Time
}

// functionCache is a process's compiled library set.
type functionCache struct {
	mu  sync.Mutex
	set *librarySet
}

// validName reports whether a library or function name is letters,
// digits and underscores, at least one.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// compileLibrary reads a library's metadata, compiles its code and runs it
// to register its functions; msg is the error (without its ERR code).
func compileLibrary(code []byte) (lib *library, msg string) {
	name, body, msg := libraryMeta(code)
	if msg != "" {
		return nil, msg
	}
	return compileBody(code, name, body)
}

// libraryMeta reads a library's shebang: its name and where the code after
// the shebang starts; msg is the error. Redis checks this much before it
// looks for a library of that name, and compiles the code after.
func libraryMeta(code []byte) (name string, body int, msg string) {
	src := string(code)
	if !strings.HasPrefix(src, "#!") {
		return "", 0, "Missing library metadata"
	}
	end := strings.IndexByte(src, '\n')
	if end < 0 {
		return "", 0, "Invalid library metadata"
	}
	parts := strings.Fields(src[:end])
	if len(parts) == 0 {
		return "", 0, "Invalid library metadata"
	}
	engine, named := parts[0][2:], false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if named {
				return "", 0, "Invalid metadata value, name argument was given multiple times"
			}
			name, named = p[5:], true
			continue
		}
		return "", 0, "Invalid metadata value given: " + p
	}
	switch {
	case !named:
		return "", 0, "Library name was not given"
	case !validName(name):
		return "", 0, msgBadName
	case !strings.EqualFold(engine, "lua"):
		return "", 0, "Engine '" + engine + "' not found"
	}
	return name, end, ""
}

// compileBody compiles the code of library name after its shebang (from
// body on) and runs it to register its functions; msg is the error.
func compileBody(code []byte, name string, body int) (lib *library, msg string) {
	chunk, err := parse.Parse(bytes.NewReader(code[body:]), functionChunk)
	if err == nil {
		var proto *lua.FunctionProto
		if proto, err = lua.Compile(chunk, functionChunk); err == nil {
			lib = &library{name: name, code: append([]byte(nil), code...), proto: proto}
		}
	}
	if err != nil {
		return nil, "Error compiling function: " + oneLine(lua51.Syntax(string(code[body:]), "@"+functionChunk, err.Error()))
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	// Library code may concatenate and build tables: the default budget
	// bounds it (the instance's CONFIG is out of reach here).
	setMemoryContext(L, ctx, newLuaMemory(DefaultLuaMemoryLimit))
	if msg := lib.register(L, nil, nil); msg != "" {
		if ctx.Err() != nil {
			return nil, msgFunctionLoadTimeout
		}
		return nil, msg
	}
	if len(lib.funcs) == 0 {
		return nil, "No functions registered"
	}
	return lib, ""
}

// register runs the library's code in L with the API Redis gives library
// code (redis.register_function, redis.log, redis.REDIS_VERSION) and
// records its functions; when run is set (FCALL), callbacks collects
// their Lua functions by name and the code's globals become run's
// environment once it is done. msg is the error, if any.
func (lib *library) register(L *lua.LState, run *scriptRun, callbacks map[string]*lua.LFunction) (msg string) {
	missing := func(L *lua.LState) int {
		L.RaiseError(msgLuaNoGlobal, L.CheckAny(2).String())
		return 0
	}
	api := L.NewTable()
	redisAPI := L.NewTable()
	redisAPI.RawSetString("register_function", L.NewFunction(func(L *lua.LState) int {
		f, cb, msg := readRegistration(L)
		if msg == "" && callbacks == nil {
			for _, g := range lib.funcs {
				if g.name == f.name {
					msg = "Function already exists in the library"
				}
			}
		}
		if msg != "" {
			return luaError(L, msg, true)
		}
		f.lib = lib
		if callbacks == nil {
			lib.funcs = append(lib.funcs, f)
		} else {
			callbacks[f.name] = cb
		}
		return 0
	}))
	redisAPI.RawSetString("log", L.NewFunction(luaLog))
	redisAPI.RawSetString("REDIS_VERSION", lua.LString(Version))
	for i, level := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		redisAPI.RawSetString(level, lua.LNumber(i))
	}
	api.RawSetString("redis", readOnlyView(L, redisAPI, missing))
	// The code's globals: the load API while it registers, then (FCALL)
	// the scripting environment its functions run in.
	target := readOnlyView(L, api, missing)
	env := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.Push(L.GetField(target, L.CheckString(2)))
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(msgLuaReadOnlyTbl)
		return 0
	}))
	L.SetMetatable(env, mt)
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = env
	L.Push(fn)
	err := lua51.PCall(L, 0, 0, lua51.Handler(L))
	if err != nil {
		var ae *lua.ApiError
		text := err.Error()
		if errors.As(err, &ae) {
			text = ae.Object.String()
			if t, ok := ae.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					return "Error registering functions: " + oneLine(string(s))
				}
			}
		}
		return "Error registering functions: ERR " + oneLine(lua51.Text(text))
	}
	if run != nil {
		target = run.env
	}
	return ""
}

// readRegistration reads redis.register_function's arguments: (name,
// callback) or one table of named arguments.
func readRegistration(L *lua.LState) (f *libFunction, cb *lua.LFunction, msg string) {
	f = &libFunction{}
	switch L.GetTop() {
	case 2:
		name, ok := luaStringArg(L.Get(1))
		if !ok {
			return nil, nil, "first argument to redis.register_function must be a string"
		}
		if cb, ok = L.Get(2).(*lua.LFunction); !ok {
			return nil, nil, "second argument to redis.register_function must be a function"
		}
		f.name = name
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return nil, nil, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
		}
		named := false
		t.ForEach(func(k, v lua.LValue) {
			if msg != "" {
				return
			}
			key, ok := luaStringArg(k)
			if !ok {
				msg = "named argument key given to redis.register_function is not a string"
				return
			}
			switch strings.ToLower(key) {
			case "function_name":
				if f.name, ok = luaStringArg(v); !ok {
					msg = "function_name argument given to redis.register_function must be a string"
				}
				named = ok
			case "description":
				if f.desc, ok = luaStringArg(v); !ok {
					msg = "description argument given to redis.register_function must be a string"
				}
				f.hasDesc = ok
			case "callback":
				if cb, ok = v.(*lua.LFunction); !ok {
					msg = "callback argument given to redis.register_function must be a function"
				}
			case "flags":
				flags, ok := v.(*lua.LTable)
				if !ok {
					msg = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				if f.flags, ok = readFlags(flags); !ok {
					msg = "unknown flag given"
				}
			default:
				msg = "unknown argument given to redis.register_function"
			}
		})
		switch {
		case msg != "":
			return nil, nil, msg
		case !named:
			return nil, nil, "redis.register_function must get a function name argument"
		case cb == nil:
			return nil, nil, "redis.register_function must get a callback argument"
		}
	default:
		return nil, nil, "wrong number of arguments to redis.register_function"
	}
	if !validName(f.name) {
		return nil, nil, msgBadName
	}
	return f, cb, ""
}

// luaStringArg is a string or number argument as Lua's lua_tostring reads it.
func luaStringArg(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumberString(float64(v)), true
	}
	return "", false
}

// readFlags reads a table of flag names (any case).
func readFlags(t *lua.LTable) (uint8, bool) {
	var flags uint8
	ok := true
	t.ForEach(func(_, v lua.LValue) {
		s, isStr := luaStringArg(v)
		found := false
		for i, name := range scriptFlagNames {
			if isStr && strings.EqualFold(s, name) {
				flags |= 1 << i
				found = true
			}
		}
		ok = ok && found
	})
	return flags, ok
}

// libraries returns the library set the table holds, from the process's
// cache while it is recent.
func libraries(c *Ctx) (*librarySet, error) {
	fc := &c.Srv.functions
	fc.mu.Lock()
	set := fc.set
	fc.mu.Unlock()
	if set != nil && c.Srv.Now().Sub(set.checked) < scriptRecheck {
		return set, nil
	}
	it, err := c.Srv.Store.Get(c, model.LibrariesKey())
	if err != nil {
		return nil, err
	}
	return setOf(c, it)
}

// setOf returns the compiled library set of the libraries item it (the
// cached one when it is of the same version), and caches it as checked now.
func setOf(c *Ctx, it dynastore.Item) (*librarySet, error) {
	fc := &c.Srv.functions
	fc.mu.Lock()
	set := fc.set
	fc.mu.Unlock()
	ver, _ := it.Get(model.AttrVer).(dynastore.S)
	if set == nil || set.ver != string(ver) {
		var err error
		if set, err = compileSet(it); err != nil {
			return nil, err
		}
	}
	set = &librarySet{ver: string(ver), libs: set.libs, byFunc: set.byFunc, checked: c.Srv.Now()}
	fc.mu.Lock()
	fc.set = set
	fc.mu.Unlock()
	return set, nil
}

// compileSet compiles the libraries an item holds.
func compileSet(it dynastore.Item) (*librarySet, error) {
	ver, _ := it.Get(model.AttrVer).(dynastore.S)
	set := &librarySet{ver: string(ver), libs: map[string]*library{}, byFunc: map[string]*libFunction{}}
	for name, code := range model.Libraries(it) {
		lib, msg := compileLibrary(code)
		if msg != "" {
			return nil, fmt.Errorf("commands: stored library %q: %s: %w", name, msg, dynastore.ErrInvalid)
		}
		set.libs[name] = lib
		for _, f := range lib.funcs {
			set.byFunc[strings.ToLower(f.name)] = f
		}
	}
	return set, nil
}

// clash is the refusal of lib when one of its functions belongs to a
// library of the set that stays (kept reports which do), nil if none does.
func (set *librarySet) clash(lib *library, kept func(name string) bool) error {
	for _, f := range lib.funcs {
		if g := set.byFunc[strings.ToLower(f.name)]; g != nil && kept(g.lib.name) {
			return redisError("ERR Function " + f.name + " already exists")
		}
	}
	return nil
}

// changeLibraries applies change to the stored libraries (name -> code,
// with set their compiled form as read) in one write conditioned on the
// item as read, again on a lost race. An error change returns (a
// redisError: the refusal to reply) ends it without writing.
func changeLibraries(c *Ctx, change func(set *librarySet, libs map[string][]byte) error) error {
	return model.RetryConflicts(c, func(int) error {
		it, err := c.Srv.Store.Get(c, model.LibrariesKey())
		if err != nil {
			return err
		}
		set, err := setOf(c, it)
		if err != nil {
			return err
		}
		libs := model.Libraries(it)
		if err := change(set, libs); err != nil {
			return err
		}
		cond := dynastore.Cond(dynastore.NotExists{Attr: dynastore.AttrPK})
		if v := it.Get(model.AttrVer); v != nil {
			cond = dynastore.Compare{Attr: model.AttrVer, Op: dynastore.OpEQ, Val: v}
		}
		wo := dynastore.WriteOptions{Cond: cond}
		if len(libs) == 0 {
			_, err = c.Srv.Store.Delete(c, model.LibrariesKey(), wo)
		} else {
			_, err = c.Srv.Store.Put(c, model.LibrariesItem(libs), wo)
		}
		if _, failed := model.CondFailed(err); failed {
			return model.ErrConflict
		}
		c.Srv.functions.mu.Lock()
		c.Srv.functions.set = nil
		c.Srv.functions.mu.Unlock()
		return err
	})
}

func cmdFunctionLoad(c *Ctx) {
	replace, i := false, 2
	for ; i < len(c.Args)-1; i++ {
		if !argIs(c.Args[i], "replace") {
			c.W.Error("ERR Unknown option given: " + oneLine(string(c.Args[i])))
			return
		}
		replace = true
	}
	if i >= len(c.Args) {
		c.W.Error(MsgFunctionNoCode)
		return
	}
	name, body, msg := libraryMeta(c.Args[i])
	if msg != "" {
		c.W.Error("ERR " + msg)
		return
	}
	// Compiled before the write, whose retries need not compile again; a
	// library that exists is refused before its code's errors are told.
	lib, compileMsg := compileBody(c.Args[i], name, body)
	err := changeLibraries(c, func(set *librarySet, libs map[string][]byte) error {
		if _, ok := libs[name]; ok && !replace {
			return redisError("ERR Library '" + name + "' already exists")
		}
		if compileMsg != "" {
			return redisError("ERR " + compileMsg)
		}
		if err := set.clash(lib, func(owner string) bool { return owner != lib.name }); err != nil {
			return err
		}
		libs[lib.name] = lib.code
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(lib.name)
}

func cmdFunctionDelete(c *Ctx) {
	name := string(c.Args[2])
	err := changeLibraries(c, func(_ *librarySet, libs map[string][]byte) error {
		if _, ok := libs[name]; !ok {
			return redisError(MsgLibraryNotFound)
		}
		delete(libs, name)
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

func cmdFunctionFlush(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.Error(ErrSubcommandSyntax("function", string(c.Args[1])))
		return
	}
	if len(c.Args) == 3 && !argIs(c.Args[2], "sync") && !argIs(c.Args[2], "async") {
		c.W.Error(MsgFunctionFlushOpts)
		return
	}
	if _, err := c.Srv.Store.Delete(c, model.LibrariesKey(), dynastore.WriteOptions{}); err != nil {
		c.Fail(err)
		return
	}
	c.Srv.functions.mu.Lock()
	c.Srv.functions.set = nil
	c.Srv.functions.mu.Unlock()
	c.W.Simple("OK")
}

func cmdFunctionList(c *Ctx) {
	withCode, pattern := false, []byte(nil)
	for i := 2; i < len(c.Args); i++ {
		switch {
		case !withCode && argIs(c.Args[i], "withcode"):
			withCode = true
		case pattern == nil && argIs(c.Args[i], "libraryname"):
			if i >= len(c.Args)-1 {
				c.W.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern = []byte(strings.ToLower(string(c.Args[i])))
		default:
			c.W.Error("ERR Unknown argument " + string(c.Args[i]))
			return
		}
	}
	set, err := libraries(c)
	if err != nil {
		c.Fail(err)
		return
	}
	var libs []*library
	for _, lib := range set.libs {
		if pattern == nil || globMatch(pattern, []byte(strings.ToLower(lib.name))) {
			libs = append(libs, lib)
		}
	}
	c.W.Array(len(libs))
	for _, lib := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.W.Map(n)
		c.W.BulkString("library_name")
		c.W.BulkString(lib.name)
		c.W.BulkString("engine")
		c.W.BulkString("LUA")
		c.W.BulkString("functions")
		c.W.Array(len(lib.funcs))
		for _, f := range lib.funcs {
			c.W.Map(3)
			c.W.BulkString("name")
			c.W.BulkString(f.name)
			c.W.BulkString("description")
			if f.hasDesc {
				c.W.BulkString(f.desc)
			} else {
				c.W.Nil()
			}
			c.W.BulkString("flags")
			var flags []string
			for i, name := range scriptFlagNames {
				if f.flags&(1<<i) != 0 {
					flags = append(flags, name)
				}
			}
			c.W.Set(len(flags))
			for _, fl := range flags {
				c.W.Simple(fl)
			}
		}
		if withCode {
			c.W.BulkString("library_code")
			c.W.Bulk(lib.code)
		}
	}
}

func cmdFunctionStats(c *Ctx) {
	set, err := libraries(c)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Map(2)
	c.W.BulkString("running_script")
	c.W.Nil()
	c.W.BulkString("engines")
	c.W.Map(1)
	c.W.BulkString("LUA")
	c.W.Map(2)
	c.W.BulkString("libraries_count")
	c.W.Int(int64(len(set.libs)))
	c.W.BulkString("functions_count")
	c.W.Int(int64(len(set.byFunc)))
}

// cmdFunctionKill stops the functions running in this instance.
func cmdFunctionKill(c *Ctx) { c.Srv.running.kill(c, true) }

func cmdFunctionHelp(c *Ctx) {
	writeHelp(c, "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
	)
}

// fcallGeneric is FCALL and FCALL_RO (ro).
func fcallGeneric(c *Ctx, ro bool) {
	set, err := libraries(c)
	if err != nil {
		c.Fail(err)
		return
	}
	f := set.byFunc[strings.ToLower(string(c.Args[1]))]
	if f == nil {
		c.W.Error(MsgFunctionNotFound)
		return
	}
	n, ok := model.String2ll(c.Args[2])
	switch {
	case !ok:
		c.W.Error(MsgBadNumKeys)
		return
	case n > int64(len(c.Args)-3):
		c.W.Error(MsgNumkeysTooMany)
		return
	case n < 0:
		c.W.Error(MsgNumkeysNegative)
		return
	}
	if !f.noWrites() && ro {
		c.W.Error(MsgScriptROWrite)
		return
	}
	keys, args := c.Args[3:3+n], c.Args[3+n:]
	run := &scriptRun{c: c, name: f.name, chunk: functionChunk, readOnly: ro || f.noWrites()}
	runLua(run, keys, func(L *lua.LState, env *lua.LTable) error {
		run.env = env
		callbacks := map[string]*lua.LFunction{}
		if msg := f.lib.register(L, run, callbacks); msg != "" {
			return errors.New(msg)
		}
		L.Push(callbacks[f.name])
		L.Push(stringArray(L, keys))
		L.Push(stringArray(L, args))
		return lua51.PCall(L, 2, 1, run.handler(L))
	})
}
