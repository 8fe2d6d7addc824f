package lua51

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Handler returns an error function for L.PCall that rewords the
// runtime errors gopher-lua raises as Lua 5.1 words them (Reword).
func Handler(L *lua.LState) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		L.Push(Reword(L, L.Get(1)))
		return 1
	})
}

// Reword is the error value v as Lua 5.1 would have raised it, naming
// the variable involved where Lua does. It is for error functions (see
// Handler; xpcall's, before the script's own): level 1 of L's stack must
// be the function the error happened in, as it is while an error
// function runs. Values other than gopher-lua's messages (the tables of
// redis.call, say) are returned as they are.
func Reword(L *lua.LState, v lua.LValue) lua.LValue {
	if s, ok := v.(lua.LString); ok {
		return lua.LString(reword(L, string(s)))
	}
	return v
}

// gopher-lua's runtime errors (vm.go, auxlib.go), after the position.
var (
	reIndex  = regexp.MustCompile(`^attempt to index a non-table object\((\w+)\) with key '(?s:(.*))'$`)
	reArith  = regexp.MustCompile(`^cannot perform (add|sub|mul|div|mod|pow) operation between (\w+) and (\w+)$`)
	reConcat = regexp.MustCompile(`^cannot perform concat operation between (\w+) and (\w+)$`)
	// reBadArg is gopher-lua's ArgError: the name is not quoted (the
	// messages of ArgError here, Lua's, have it quoted).
	reBadArg = regexp.MustCompile(`^bad argument #(\d+) to (\S+) \((?s:(.*))\)$`)
	// reWhere is the position gopher-lua puts before a message
	// ("user_script:3: "), as Lua does.
	reWhere = regexp.MustCompile(`^(?s:(.*?:\d+: ))`)
)

const (
	msgCall = "attempt to call a non-function object"
	msgUnm  = "__unm undefined"
	msgLen  = "__len undefined"
)

var arithOps = map[string]int{"add": lua.OP_ADD, "sub": lua.OP_SUB, "mul": lua.OP_MUL, "div": lua.OP_DIV, "mod": lua.OP_MOD, "pow": lua.OP_POW}

// reword is msg, an error raised in L, as Lua 5.1 words it. It runs in
// an error function: level 1 of the stack is the function the error
// happened in.
func reword(L *lua.LState, msg string) (out string) {
	defer func() {
		// The frames are gopher-lua's private state, read by reflection:
		// should they ever not be what is expected, the error keeps
		// the wording its text alone gives.
		if recover() != nil {
			out = Text(msg)
		}
	}()
	where, body := "", msg
	if m := reWhere.FindStringSubmatch(msg); m != nil {
		where, body = m[1], msg[len(m[1]):]
	}
	f, ok := frameAt(L, 1)
	if !ok {
		return Text(msg)
	}
	var s string
	if f.fn.IsG {
		var fromLua bool
		s, fromLua, ok = argError(L, f, body)
		if !fromLua {
			// Lua gives the position of the function's caller (luaL_where),
			// none when that is not Lua code; gopher-lua the position of
			// the nearest Lua code.
			where = ""
		}
	} else {
		s, ok = vmError(L, f, body)
	}
	if !ok {
		return Text(msg)
	}
	return where + s
}

// vmError words an error the VM raised running the instruction f is at.
func vmError(L *lua.LState, f frame, body string) (string, bool) {
	p := f.fn.Proto
	if m := reIndex.FindStringSubmatch(body); m != nil {
		pc := f.instructionAt(func(i instruction) bool {
			var key int
			switch i.op() {
			case lua.OP_GETTABLE, lua.OP_GETTABLEKS, lua.OP_SELF:
				key = i.c()
			case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
				key = i.b()
			default:
				return false
			}
			k, ok := f.operand(L, key)
			return !ok || k.String() == m[2]
		})
		if pc < 0 {
			return "", false
		}
		i := instruction(p.Code[pc])
		reg := i.b()
		if op := i.op(); op == lua.OP_SETTABLE || op == lua.OP_SETTABLEKS {
			reg = i.a()
		}
		v, ok := f.register(L, reg)
		if !ok {
			return "", false
		}
		if v.Type().String() != m[1] {
			// The value indexed is one met through __index metamethods:
			// Lua does not name it.
			return "attempt to index a " + m[1] + " value", true
		}
		return f.typeError(pc, reg, "index", m[1]), true
	}
	if body == msgCall {
		pc := f.instructionAt(func(i instruction) bool {
			op := i.op()
			return op == lua.OP_CALL || op == lua.OP_TAILCALL || op == lua.OP_TFORLOOP
		})
		if pc < 0 {
			return "", false
		}
		i := instruction(p.Code[pc])
		v, ok := f.register(L, i.a())
		if !ok {
			return "", false
		}
		reg := i.a()
		if i.op() == lua.OP_TFORLOOP {
			// Lua calls a copy of the generator, made above the loop's
			// variables.
			reg += 3
		}
		return f.typeError(pc, reg, "call", v.Type().String()), true
	}
	if m := reArith.FindStringSubmatch(body); m != nil {
		op := arithOps[m[1]]
		pc := f.instructionAt(func(i instruction) bool { return i.op() == op })
		if pc < 0 {
			return "", false
		}
		i := instruction(p.Code[pc])
		lhs, ok1 := f.operand(L, i.b())
		rhs, ok2 := f.operand(L, i.c())
		if !ok1 || !ok2 || arithType(lhs) != m[2] || arithType(rhs) != m[3] {
			return "", false
		}
		// Lua blames the first operand unless it converts to a number.
		bad, v := i.c(), rhs
		if !convertsToNumber(lhs) {
			bad, v = i.b(), lhs
		}
		if bad&rkConstant != 0 {
			return "attempt to perform arithmetic on a " + v.Type().String() + " value", true
		}
		return f.typeError(pc, bad, "perform arithmetic on", v.Type().String()), true
	}
	if body == msgUnm || body == msgLen {
		op, what := lua.OP_UNM, "perform arithmetic on"
		if body == msgLen {
			op, what = lua.OP_LEN, "get length of"
		}
		pc := f.instructionAt(func(i instruction) bool { return i.op() == op })
		if pc < 0 {
			return "", false
		}
		reg := instruction(p.Code[pc]).b()
		v, ok := f.register(L, reg)
		if !ok {
			return "", false
		}
		return f.typeError(pc, reg, what, v.Type().String()), true
	}
	if m := reConcat.FindStringSubmatch(body); m != nil {
		pc := f.instructionAt(func(i instruction) bool { return i.op() == lua.OP_CONCAT })
		if pc < 0 {
			return "", false
		}
		i := instruction(p.Code[pc])
		bad, ok := f.concatCulprit(L, i.b(), i.c())
		if !ok {
			return "", false
		}
		v, _ := f.register(L, bad)
		if t := v.Type().String(); t != m[1] && t != m[2] {
			return "", false
		}
		return f.typeError(pc, bad, "concatenate", v.Type().String()), true
	}
	return "", false
}

// concatCulprit is the register Lua 5.1 blames when concatenating
// registers first to last fails (luaV_concat works from the right, so
// the rightmost value that is neither a string nor a number is the one,
// unless it is the last and the one before it is not either).
func (f frame) concatCulprit(L *lua.LState, first, last int) (int, bool) {
	if first >= last {
		return 0, false
	}
	vals := make([]lua.LValue, 0, last-first+1)
	for r := first; r <= last; r++ {
		v, ok := f.register(L, r)
		if !ok {
			return 0, false
		}
		if !isStringOrNumber(v) && L.GetMetatable(v) != lua.LNil {
			// A __concat metamethod may have taken part.
			return 0, false
		}
		vals = append(vals, v)
	}
	for r := last; r >= first; r-- {
		if isStringOrNumber(vals[r-first]) {
			continue
		}
		if r == last && !isStringOrNumber(vals[r-1-first]) {
			return r - 1, true
		}
		return r, true
	}
	return 0, false
}

// argError words a "bad argument" error of the Go function f as Lua's
// luaL_argerror would have (argumentError). fromLua says whether f was
// called from Lua code.
func argError(L *lua.LState, f frame, body string) (msg string, fromLua, ok bool) {
	m := reBadArg.FindStringSubmatch(body)
	if m == nil || isScriptError(L, f.fn) {
		return "", false, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return "", false, false
	}
	call, ok := callerOf(L, 2)
	if !ok {
		return "", false, false
	}
	if f.nargs < 0 {
		f.nargs = call.nargs
	}
	detail := m[3]
	if rest, ok := strings.CutSuffix(detail, " expected, got nil"); ok && f.nargs >= 0 && n > f.nargs {
		detail = rest + " expected, got no value"
	}
	return call.argumentError(n, detail), call.fromLua, true
}

// call is how a Go function was called, as Lua's getfuncname sees it.
type call struct {
	fromLua bool
	// kind and name are how the calling code refers to the function
	// (kind "" and name "?" when it has no name).
	kind, name string
	// nargs is the number of arguments of the call, -1 when unknown.
	nargs int
	// where is the position of the calling code ("user_script:1: ").
	where string
}

// callerOf is how the Go function one level below level (as
// LState.GetStack counts) was called by the function at level; ok is
// false when that is Lua code but the call instruction is not known.
func callerOf(L *lua.LState, level int) (c call, ok bool) {
	c = call{name: "?", nargs: -1}
	caller, found := frameAt(L, level)
	if !found || caller.fn.IsG {
		return c, true
	}
	c.fromLua = true
	c.where = fmt.Sprintf("%s:%d: ", caller.fn.Proto.SourceName, caller.line)
	pc := caller.instructionAt(func(i instruction) bool {
		op := i.op()
		return op == lua.OP_CALL || op == lua.OP_TAILCALL || op == lua.OP_TFORLOOP
	})
	if pc < 0 {
		return c, false
	}
	i := instruction(caller.fn.Proto.Code[pc])
	reg := i.a()
	if i.op() == lua.OP_TFORLOOP {
		reg += 3
	} else if i.b() != 0 {
		c.nargs = i.b() - 1
	}
	if c.kind, c.name = objectName(caller.fn.Proto, pc, reg); c.kind == "" {
		c.name = "?"
	}
	return c, true
}

// argumentError is luaL_argerror's message for argument n: self does not
// count in a method call.
func (c call) argumentError(n int, detail string) string {
	if c.kind == kindMethod {
		n--
		if n == 0 {
			return fmt.Sprintf("calling '%s' on bad self (%s)", c.name, detail)
		}
	}
	return fmt.Sprintf("bad argument #%d to '%s' (%s)", n, c.name, detail)
}

// ArgError raises, from the Go function running in L, Lua 5.1's error
// for its argument n (luaL_argerror): "bad argument #n to 'NAME' (msg)",
// NAME being how the calling Lua code refers to the function ("?" if
// it is not Lua code), self not counted in a method call, after the
// position of the calling code.
func ArgError(L *lua.LState, n int, msg string) {
	c, ok := callerOf(L, 1)
	if !ok {
		// The call is not known: the name gopher-lua gives the function.
		if self, found := L.GetStack(0); found {
			if _, err := L.GetInfo("n", self, lua.LNil); err == nil && self.Name != "" {
				c.name = self.Name
			}
		}
	}
	L.Error(lua.LString(c.where+c.argumentError(n, msg)), 0)
}

// isScriptError reports whether fn is how a script raises its own errors
// (error, assert), whose text is the script's, whatever it says.
func isScriptError(L *lua.LState, fn *lua.LFunction) bool {
	for _, name := range []string{"error", "assert"} {
		if g, ok := L.G.Global.RawGetString(name).(*lua.LFunction); ok && g == fn {
			return true
		}
	}
	return false
}

// register is the value in register reg of f (false when gopher-lua
// cannot tell).
func (f frame) register(L *lua.LState, reg int) (lua.LValue, bool) {
	name, v := L.GetLocal(f.dbg, reg+1)
	return v, name != ""
}

// operand is the value of an RK operand of f's instruction: a constant
// or a register.
func (f frame) operand(L *lua.LState, rk int) (lua.LValue, bool) {
	if rk&rkConstant != 0 {
		k := rk &^ rkConstant
		if k >= len(f.fn.Proto.Constants) {
			return nil, false
		}
		return f.fn.Proto.Constants[k], true
	}
	return f.register(L, rk)
}

// typeError is Lua 5.1's luaG_typeerror for the value in register reg at
// pc: "attempt to OP KIND 'NAME' (a TYPE value)" when it has a name.
func (f frame) typeError(pc, reg int, op, typ string) string {
	if kind, name := objectName(f.fn.Proto, pc, reg); kind != "" {
		return fmt.Sprintf("attempt to %s %s '%s' (a %s value)", op, kind, name, typ)
	}
	return fmt.Sprintf("attempt to %s a %s value", op, typ)
}

func isStringOrNumber(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// arithType is the type gopher-lua gives an operand of arithmetic in its
// message: a string that reads as a number has been converted.
func arithType(v lua.LValue) string {
	if convertsToNumber(v) {
		return "number"
	}
	return v.Type().String()
}

// convertsToNumber is Lua 5.1's tonumber test in arithmetic: a number,
// or a string that reads as one.
func convertsToNumber(v lua.LValue) bool {
	switch v := v.(type) {
	case lua.LNumber:
		return true
	case lua.LString:
		_, ok := str2d(string(v))
		return ok
	}
	return false
}
