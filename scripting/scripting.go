package scripting

// The scripting family: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT.
//
// Script bodies live in the table (model.ScriptItem), so a script loaded
// or run through one instance runs by SHA1 through every other, after a
// restart too; each process keeps the scripts it compiled (scriptCache),
// checking again that a cached script is still in the table once it has
// not done so for scriptRecheck, so that SCRIPT FLUSH through another
// instance takes effect here within that time.
//
// A run is atomic as an EXEC is: it is one model.Unit, every redis.call
// reading and writing through its model.Txn, committed when the script
// returns (or fails: as in Redis, what a script wrote before an error
// stays); when another client got there first the script runs again from
// the start (model.Retry). A script that runs longer than
// busy-reply-threshold, or that SCRIPT KILL stops, ends with nothing it
// wrote kept.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/internal/lua51"
	"github.com/redamo/redamo/model"
)

// Scripting replies, as Redis 7 sends them (redamo's own where marked).
const (
	MsgNoScript          = "NOSCRIPT No matching script. Please use EVAL."
	MsgNumkeysNegative   = "ERR Number of keys can't be negative"
	MsgNumkeysTooMany    = "ERR Number of keys can't be greater than number of args"
	MsgScriptROWrite     = "ERR Can not execute a script with write flag using *_ro command."
	MsgScriptFlushOption = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	MsgNotBusy           = "NOTBUSY No scripts in execution right now."
	MsgBusyEval          = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	MsgBusyFunction      = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	msgScriptKilled      = "Script killed by user with SCRIPT KILL..."
	MsgScriptCompile     = "ERR Error compiling script (new function): %s"
	// MsgScriptTimeout is redamo's: a script is stopped rather than left
	// to run (outside MULTI nothing it wrote is kept).
	MsgScriptTimeout = "ERR Script killed after running longer than busy-reply-threshold (%d ms)"
)

// scriptRecheck is how long a process trusts its cached copy of a script
// before checking again that the table still holds it.
const scriptRecheck = 5 * time.Second

func (e *engine) registerScripting(t *commands.Table) {
	t.Register([]commands.Row{
		{Name: "eval", Run: func(c *commands.Ctx) { e.evalGeneric(c, false) }},
		{Name: "evalsha", Run: func(c *commands.Ctx) { e.evalSHAGeneric(c, false) }},
		{Name: "eval_ro", Run: func(c *commands.Ctx) { e.evalGeneric(c, true) }},
		{Name: "evalsha_ro", Run: func(c *commands.Ctx) { e.evalSHAGeneric(c, true) }},
		{Name: "script|load", Run: e.cmdScriptLoad},
		{Name: "script|exists", Run: e.cmdScriptExists},
		{Name: "script|flush", Run: e.cmdScriptFlush},
		{Name: "script|kill", Run: e.cmdScriptKill},
		{Name: "script|help", Run: cmdScriptHelp},
	})
}

// script is a compiled script.
type script struct {
	proto *lua.FunctionProto
	// compat: the script has no shebang (Redis's EVAL compatibility
	// mode); noWrites: its shebang says flags=no-writes.
	compat, noWrites bool
	// cas, when set, is the one conditional write the script comes down
	// to (scriptfast.go).
	cas *casScript
	// checked is when the table was last known to hold the script.
	checked time.Time
}

// scriptCache is a process's compiled scripts by SHA1.
type scriptCache struct {
	mu sync.Mutex
	m  map[string]*script
}

func (sc *scriptCache) get(sha string) *script {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.m[sha]
}

func (sc *scriptCache) put(sha string, s *script) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.m == nil {
		sc.m = map[string]*script{}
	}
	sc.m[sha] = s
}

func (sc *scriptCache) flush() {
	sc.mu.Lock()
	sc.m = nil
	sc.mu.Unlock()
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// compileScript parses a body's shebang and compiles it; the error, when
// it cannot, is the reply (a commands.ErrorReply).
func compileScript(body []byte) (*script, error) {
	s := &script{compat: true}
	src := string(body)
	if strings.HasPrefix(src, "#!") {
		end := strings.IndexByte(src, '\n')
		if end < 0 {
			return nil, commands.ErrorReply("ERR Invalid script shebang")
		}
		parts := strings.Fields(src[:end])
		if len(parts) == 0 {
			return nil, commands.ErrorReply("ERR Invalid engine in script shebang")
		}
		if parts[0] != "#!lua" {
			return nil, commands.ErrorReply("ERR Unexpected engine in script shebang: " + parts[0])
		}
		s.compat = false
		for _, p := range parts[1:] {
			flags, ok := strings.CutPrefix(p, "flags=")
			if !ok {
				return nil, commands.ErrorReply("ERR Unknown lua shebang option: " + p)
			}
			if flags == "" {
				continue
			}
			for _, f := range strings.Split(flags, ",") {
				switch f {
				case "no-writes":
					s.noWrites = true
				case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
					// Conditions redamo never has (memory limits,
					// replicas, cluster slots): nothing to relax.
				default:
					return nil, commands.ErrorReply("ERR Unexpected flag in script shebang: " + f)
				}
			}
		}
		// The shebang line goes, its line feed stays: line numbers hold.
		src = src[end:]
	}
	chunk, err := parse.Parse(strings.NewReader(src), chunkName)
	if err != nil {
		return nil, commands.ErrorReply(fmt.Sprintf(MsgScriptCompile, oneLine(lua51.Syntax(src, "@"+chunkName, err.Error()))))
	}
	proto, err := lua.Compile(chunk, chunkName)
	if err != nil {
		// Some code gopher-lua parses its compiler refuses where Lua's
		// parser does (a break outside a loop): Syntax words those too.
		return nil, commands.ErrorReply(fmt.Sprintf(MsgScriptCompile, oneLine(lua51.Syntax(src, "@"+chunkName, err.Error()))))
	}
	s.proto = proto
	s.cas = recognizeCAS(chunk)
	return s, nil
}

// loadScript compiles body and stores it in the table under its SHA1 (once
// per process and script), returning the script and its SHA1.
func (e *engine) loadScript(c *commands.Ctx, body []byte) (*script, string, error) {
	sha := sha1Hex(body)
	if s := e.scripts.get(sha); s != nil {
		return s, sha, nil
	}
	s, err := compileScript(body)
	if err != nil {
		return nil, sha, err
	}
	// Content-addressed and idempotent: written at once, outside any
	// transaction the command runs in (a MULTI's or a script's).
	if err := model.PutScript(c, sha, body); err != nil {
		return nil, sha, err
	}
	s.checked = c.Srv.Now()
	e.scripts.put(sha, s)
	return s, sha, nil
}

// scriptBySHA returns the script with SHA1 sha (lower case), nil when the
// table holds none.
func (e *engine) scriptBySHA(c *commands.Ctx, sha string) (*script, error) {
	cached := e.scripts.get(sha)
	if cached != nil && c.Srv.Now().Sub(cached.checked) < scriptRecheck {
		return cached, nil
	}
	body, found, err := model.GetScript(c, sha)
	if err != nil || !found {
		return nil, err
	}
	s := cached
	if s == nil {
		if s, err = compileScript(body); err != nil {
			return nil, err
		}
	}
	s.checked = c.Srv.Now()
	e.scripts.put(sha, s)
	return s, nil
}

// parseNumkeys checks EVAL's numkeys; msg is the error reply.
func parseNumkeys(args [][]byte) (int, string) {
	n, ok := model.String2ll(args[2])
	switch {
	case !ok:
		return 0, commands.MsgNotInt
	case n > int64(len(args)-3):
		return 0, MsgNumkeysTooMany
	case n < 0:
		return 0, MsgNumkeysNegative
	}
	return int(n), ""
}

// evalGeneric is EVAL and EVAL_RO (ro).
func (e *engine) evalGeneric(c *commands.Ctx, ro bool) {
	numkeys, msg := parseNumkeys(c.Args)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	s, sha, err := e.loadScript(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	e.runScript(c, s, sha, numkeys, ro)
}

// evalSHAGeneric is EVALSHA and EVALSHA_RO (ro).
func (e *engine) evalSHAGeneric(c *commands.Ctx, ro bool) {
	if len(c.Args[1]) != 40 {
		c.W.Error(MsgNoScript)
		return
	}
	numkeys, msg := parseNumkeys(c.Args)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	sha := strings.ToLower(string(c.Args[1]))
	s, err := e.scriptBySHA(c, sha)
	switch {
	case err != nil:
		c.Fail(err)
	case s == nil:
		c.W.Error(MsgNoScript)
	default:
		e.runScript(c, s, sha, numkeys, ro)
	}
}

// scriptRun is one run of a script or function.
type scriptRun struct {
	// c is the EVAL command's context; st the store its redis.calls use.
	c  *commands.Ctx
	st model.Target
	// e is the engine the run belongs to (SCRIPT KILL finds it there).
	e *engine
	// name is what errors call the code (a script's SHA1, a function's
	// name), chunk the chunk name it was compiled under.
	name, chunk string
	readOnly    bool
	// env is the view of the globals the code runs in.
	env *lua.LTable
	// resp is the protocol of the script's redis.calls (redis.setresp).
	resp int
	// errAt is where the error the run ended with happened, as Redis's
	// error replies say it ("@user_script:3"; see handler); "" if unknown.
	errAt string
	// sources are the sources of the chunks the code loaded (loadstring,
	// load), for errAt: Lua names a chunk by its source.
	sources map[*lua.FunctionProto]string
	// mem is the run's memory budget; outOfMemory: the run ended for
	// want of it.
	mem         *luaMemory
	outOfMemory bool
}

// runScript runs s with the command's keys and arguments and replies.
func (e *engine) runScript(c *commands.Ctx, s *script, sha string, numkeys int, ro bool) {
	if !s.compat && !s.noWrites && ro {
		c.W.Error(MsgScriptROWrite)
		return
	}
	keys, argv := c.Args[3:3+numkeys], c.Args[3+numkeys:]
	if s.cas != nil && !ro && !s.noWrites && s.cas.run(c, keys, argv) {
		return
	}
	run := &scriptRun{e: e, c: c, name: sha, chunk: chunkName, readOnly: ro || s.noWrites}
	runLua(run, keys, func(L *lua.LState, env *lua.LTable) error {
		L.G.Global.RawSetString("KEYS", stringArray(L, keys))
		L.G.Global.RawSetString("ARGV", stringArray(L, argv))
		fn := L.NewFunctionFromProto(s.proto)
		fn.Env = env
		L.Push(fn)
		return lua51.PCall(L, 0, 1, run.handler(L))
	})
}

// runLua runs a script or function (start calls it in a fresh state,
// leaving its value on the stack) with keys declared, atomically, and
// replies.
func runLua(run *scriptRun, keys [][]byte, start func(L *lua.LState, env *lua.LTable) error) {
	c := run.c
	// A script's SELECT is the script's own, as in Redis: the client's
	// database is as it was once the script ends.
	defer func(db int) { c.Conn.DB = db }(c.Conn.DB)
	if c.InTx {
		// Inside EXEC (or another script): the enclosing transaction
		// commits.
		run.st, run.resp = c.Target, 2
		run.reply(run.exec(start))
		return
	}
	db := c.DB()
	var out scriptOutcome
	u := model.Unit{DB: db, Keys: keys, ReadOnly: run.readOnly}
	resetEvents, eventsDone := c.HoldEvents()
	u.Work = func(t *model.Txn) error {
		resetEvents()
		run.st, run.resp, run.errAt = t.Target(), 2, ""
		c.Conn.DB = db
		out = run.exec(start)
		// A script error is the script's reply: what it wrote before
		// stays, as in Redis. A stopped run (err) commits nothing.
		return out.err
	}
	u.Lost = func() {
		if out.L != nil {
			out.L.Close()
		}
		out = scriptOutcome{}
	}
	if _, err := u.Run(c); err != nil {
		// The run's own end (a time limit, SCRIPT KILL), the commit's
		// failure, or the retry policy giving up.
		out.err = err
	}
	eventsDone(out.err == nil)
	run.reply(out)
}

// scriptOutcome is what a run ended with: a value (a *lua.LState holds it
// on its stack until replied), a script error reply, or a failure.
type scriptOutcome struct {
	L      *lua.LState
	errMsg string
	err    error
	// timeout and killed: the run was stopped (err is set, so nothing it
	// wrote commits).
	timeout, killed bool
}

// exec runs the script once in a fresh state.
func (run *scriptRun) exec(start func(L *lua.LState, env *lua.LTable) error) scriptOutcome {
	run.mem, run.outOfMemory = newLuaMemory(run.c.Srv.LuaMemoryLimit()), false
	L, env := newLuaState(run)
	run.wrapErrorFunctions(L)
	// The run's context is not a child of the command's: the time
	// limit's timer, or a SCRIPT KILL from another client, may fire as
	// the command returns, and must not reach into its context, which
	// the connection then reuses. The command's cancellation (its client
	// gone) still reaches the run, through AfterFunc.
	ctx, kill := context.WithCancelCause(context.WithoutCancel(run.c))
	defer kill(nil)
	defer context.AfterFunc(run.c, func() { kill(context.Canceled) })()
	if limit := run.c.Srv.ScriptTimeLimit(); limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	defer run.e.running.add(run, kill)()
	setMemoryContext(L, ctx, run.mem)
	err := start(L, env)
	if err == nil {
		return scriptOutcome{L: L}
	}
	L.Close()
	switch {
	case context.Cause(ctx) == errScriptKilled:
		return scriptOutcome{killed: true, err: errScriptKilled, errMsg: run.errorReply(lua.LString(msgScriptKilled))}
	case ctx.Err() != nil && run.c.Err() == nil:
		return scriptOutcome{timeout: true, err: errScriptTimeout}
	}
	var ae *lua.ApiError
	if !errors.As(err, &ae) {
		return scriptOutcome{errMsg: "ERR " + oneLine(err.Error())}
	}
	return scriptOutcome{errMsg: run.errorReply(ae.Object)}
}

var (
	errScriptTimeout = errors.New("scripting: script time limit")
	errScriptKilled  = errors.New("scripting: script killed by SCRIPT KILL or FUNCTION KILL")
)

// runningScripts are the scripts and functions running in this process,
// for SCRIPT KILL and FUNCTION KILL. A running script has written nothing
// anyone sees (its writes wait for its commit), so every one can be
// killed, as Redis kills a script that has not written.
type runningScripts struct {
	mu sync.Mutex
	m  map[*scriptRun]context.CancelCauseFunc
}

// add registers run until the returned function is called.
func (r *runningScripts) add(run *scriptRun, kill context.CancelCauseFunc) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[*scriptRun]context.CancelCauseFunc{}
	}
	r.m[run] = kill
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.m, run)
	}
}

// kill stops every running script (functions when function) of this
// process and replies as Redis does: OK, NOTBUSY when nothing runs, BUSY
// when only the other kind does.
func (r *runningScripts) kill(c *commands.Ctx, function bool) {
	r.mu.Lock()
	killed, other := 0, false
	for run, cancel := range r.m {
		if (run.chunk == functionChunk) != function {
			other = true
			continue
		}
		cancel(errScriptKilled)
		killed++
	}
	r.mu.Unlock()
	switch {
	case killed > 0:
		c.W.Simple("OK")
	case other && function:
		c.W.Error(MsgBusyEval)
	case other:
		c.W.Error(MsgBusyFunction)
	default:
		c.W.Error(MsgNotBusy)
	}
}

// errorReply is the reply to an error that ended a script, as Redis 7
// words it: the message, then which script and where.
func (run *scriptRun) errorReply(obj lua.LValue) string {
	if run.outOfMemory || run.mem.refused {
		return fmt.Sprintf(msgScriptMemory, run.name)
	}
	var msg string
	switch v := obj.(type) {
	case *lua.LTable:
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			msg = string(s)
		} else {
			msg = "ERR " + v.String()
		}
	default:
		msg = "ERR " + lua51.Text(obj.String())
	}
	msg = oneLine(msg)
	if s, ok := obj.(lua.LString); ok && run.errAt == "" {
		// An error raised where the handler could not be called (gopher-lua
		// out of call frames or registry: a stack overflow) happened where
		// its message says.
		if chunk, line, ok := lua51.Where(string(s)); ok {
			run.errAt = run.chunkSource(chunk) + ":" + line
		}
	}
	if run.errAt != "" {
		msg += fmt.Sprintf(" script: %s, on %s.", run.name, run.errAt)
	}
	return msg
}

// handler is the error function the run's code runs under: it words the
// error as Lua does (lua51.Reword) and notes in errAt where it happened,
// as Redis's __redis__err__handler does: the function the error happened
// in, or the Lua code that called it when it is a Go function (a
// redis.call, an error). Redis looks one C function up; redamo looks
// past every Go function, since some of its functions are two where
// Redis has one C function (a function's globals, say).
func (run *scriptRun) handler(L *lua.LState) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		if run.mem.refused {
			// Lua calls no handler for its memory error.
			run.outOfMemory = true
			L.Push(run.mem.errorValue(L.Get(1)))
			return 1
		}
		run.errAt = "=[C]:-1" // what Lua's debug.getinfo says of a C function
		for level := 1; level < 64; level++ {
			dbg, ok := L.GetStack(level)
			if !ok {
				break
			}
			fn, err := L.GetInfo("Slf", dbg, lua.LNil)
			if err != nil {
				break
			}
			if f, ok := fn.(*lua.LFunction); ok && !f.IsG {
				run.errAt = fmt.Sprintf("%s:%d", run.source(f.Proto), dbg.CurrentLine)
				break
			}
		}
		L.Push(lua51.Reword(L, L.Get(1)))
		return 1
	})
}

// source is the source of the chunk p is part of, as Lua names it.
func (run *scriptRun) source(p *lua.FunctionProto) string {
	if s, ok := run.sources[p]; ok {
		return s
	}
	return "@" + p.SourceName // the script's or library's own code
}

// chunkSource is the source of the chunk gopher-lua names chunk in its
// messages.
func (run *scriptRun) chunkSource(chunk string) string {
	for _, source := range run.sources {
		if lua51.RuntimeChunkID(source) == chunk {
			return source
		}
	}
	return "@" + chunk
}

// loaded notes source as the source of fn, a chunk the code loaded, and
// of the functions in it.
func (run *scriptRun) loaded(fn *lua.LFunction, source string) {
	if run.sources == nil {
		run.sources = map[*lua.FunctionProto]string{}
	}
	var note func(p *lua.FunctionProto)
	note = func(p *lua.FunctionProto) {
		run.sources[p] = source
		for _, q := range p.FunctionPrototypes {
			note(q)
		}
	}
	note(fn.Proto)
}

// wrapErrorFunctions replaces error, which puts a position before a
// message as Lua's does (none for a level that is not Lua code), and pcall
// and xpcall, which word errors as Lua does (lua51.Reword) and, as in
// Redis, hand the script the message of an error reply rather than its
// table.
func (run *scriptRun) wrapErrorFunctions(L *lua.LState) {
	L.G.Global.RawSetString("error", L.NewFunction(func(L *lua.LState) int {
		msg, level := L.Get(1), L.OptInt(2, 1)
		switch v := msg.(type) {
		case lua.LString, lua.LNumber:
			if level > 0 {
				msg = lua.LString(luaWhere(L, level) + v.String())
			}
		}
		L.Error(msg, 0)
		return 0
	}))
	handler := L.NewFunction(func(L *lua.LState) int {
		reraise(L, lua51.Reword(L, run.mem.errorValue(L.Get(1))))
		return 0
	})
	L.G.Global.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		// Redis's pcall calls a placeholder true when given nothing.
		var fn lua.LValue = lua.LTrue
		if L.GetTop() > 0 {
			fn = L.Get(1)
		}
		if !callable(L, fn) {
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a " + fn.Type().String() + " value"))
			return 2
		}
		ok, n := protectedCall(L, L.GetTop()-1, handler)
		if !ok {
			if t, isTable := L.Get(-1).(*lua.LTable); isTable {
				if s, isString := t.RawGetString("err").(lua.LString); isString {
					L.Replace(-1, s)
				}
			}
		}
		return n
	}))
	L.G.Global.RawSetString("xpcall", L.NewFunction(func(L *lua.LState) int {
		L.CheckAny(2)
		fn, h := L.Get(1), L.Get(2)
		L.SetTop(0)
		// handle is what the script's handler makes of the error v.
		handle := func(v lua.LValue) lua.LValue {
			hf, ok := h.(*lua.LFunction)
			if !ok {
				return lua.LString("error in error handling")
			}
			L.Push(hf)
			L.Push(v)
			L.Call(1, 1)
			v = L.Get(-1)
			L.Pop(1)
			return v
		}
		if !callable(L, fn) {
			// The call fails before it starts: the handler gets Lua's
			// error.
			v := handle(lua.LString("attempt to call a " + fn.Type().String() + " value"))
			L.Push(lua.LFalse)
			L.Push(v)
			return 2
		}
		L.Push(fn)
		_, n := protectedCall(L, 0, L.NewFunction(func(L *lua.LState) int {
			reraise(L, handle(lua51.Reword(L, run.mem.errorValue(L.Get(1)))))
			return 0
		}))
		return n
	}))
}

// reraise ends the error function of a protected call the code goes on
// after (pcall, xpcall) by raising v, the error the call returns: with an
// error function set, gopher-lua leaves open the upvalues of the frames
// the error unwinds, which a closure made there and kept would go on
// sharing with registers used again; raised from the error function (none
// is set then), the error closes them as it does without one.
func reraise(L *lua.LState, v lua.LValue) {
	L.Error(v, 0)
}

// callable reports whether v can be called: a function, or a value with
// a __call metamethod.
func callable(L *lua.LState, v lua.LValue) bool {
	return v.Type() == lua.LTFunction || L.GetMetaField(v, "__call").Type() == lua.LTFunction
}

// protectedCall calls the function under its nargs arguments on top of
// L's stack with handler as error function, leaving what pcall returns:
// true and the function's results, or false and the error. n is their
// number.
func protectedCall(L *lua.LState, nargs int, handler *lua.LFunction) (ok bool, n int) {
	base := L.GetTop() - nargs - 1
	if err := lua51.PCall(L, nargs, lua.MultRet, handler); err != nil {
		var v lua.LValue = lua.LString(err.Error())
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			v = ae.Object
		}
		L.Push(lua.LFalse)
		L.Push(v)
		return false, 2
	}
	L.Insert(lua.LTrue, base+1)
	return true, L.GetTop() - base
}

// luaWhere is where the function level levels up the stack runs, as
// error() puts it before a message (luaL_where): "CHUNK:LINE: " in Lua
// code, nothing elsewhere.
func luaWhere(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
}

// reply answers the command with a run's outcome.
func (run *scriptRun) reply(out scriptOutcome) {
	c := run.c
	switch {
	case out.timeout:
		c.W.Error(fmt.Sprintf(MsgScriptTimeout, c.Srv.ScriptTimeLimit().Milliseconds()))
	case out.killed:
		c.W.Error(out.errMsg)
	case out.err != nil:
		c.Fail(out.err)
	case out.errMsg != "":
		c.W.Error(out.errMsg)
	default:
		run.writeLua(c.W, out.L.Get(-1))
	}
	if out.L != nil {
		out.L.Close()
	}
}

func (e *engine) cmdScriptLoad(c *commands.Ctx) {
	_, sha, err := e.loadScript(c, c.Args[2])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(sha)
}

func (e *engine) cmdScriptExists(c *commands.Ctx) {
	shas := c.Args[2:]
	known := make([]bool, len(shas))
	var ask []string
	var at []int
	for i, a := range shas {
		sha := strings.ToLower(string(a))
		if len(sha) != 40 {
			continue
		}
		if s := e.scripts.get(sha); s != nil && c.Srv.Now().Sub(s.checked) < scriptRecheck {
			known[i] = true
			continue
		}
		ask, at = append(ask, sha), append(at, i)
	}
	found, err := model.ScriptsExist(c, ask)
	if err != nil {
		c.Fail(err)
		return
	}
	for j, ok := range found {
		known[at[j]] = ok
	}
	c.W.Array(len(known))
	for _, k := range known {
		c.W.Int(commands.BoolInt(k))
	}
}

// cmdScriptFlush deletes every script item (SYNC and ASYNC alike: the
// deletes are done when it replies).
func (e *engine) cmdScriptFlush(c *commands.Ctx) {
	if len(c.Args) > 3 || (len(c.Args) == 3 && !commands.ArgIs(c.Args[2], "sync") && !commands.ArgIs(c.Args[2], "async")) {
		c.W.Error(MsgScriptFlushOption)
		return
	}
	err := model.FlushScripts(c)
	e.scripts.flush()
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

// cmdScriptKill stops the scripts running in this instance (a script of
// another instance is that instance's to kill).
func (e *engine) cmdScriptKill(c *commands.Ctx) { e.running.kill(c, false) }

func cmdScriptHelp(c *commands.Ctx) {
	commands.WriteHelp(c, "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
	)
}
