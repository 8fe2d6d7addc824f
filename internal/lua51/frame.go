package lua51

import (
	"reflect"

	lua "github.com/yuin/gopher-lua"
)

// frame is a function running on an LState's call stack, with what
// Lua's error messages need of it.
type frame struct {
	dbg *lua.Debug
	fn  *lua.LFunction
	// line is the line of the instruction running (Lua functions).
	line int
	// pc is the index of the instruction running, -1 when unknown.
	pc int
	// nargs is the number of arguments it was called with, -1 when
	// unknown.
	nargs int
}

// frameAt is the function running level levels below the one running
// now (0), as LState.GetStack counts.
func frameAt(L *lua.LState, level int) (frame, bool) {
	dbg, ok := L.GetStack(level)
	if !ok {
		return frame{}, false
	}
	v, err := L.GetInfo("fl", dbg, lua.LNil)
	if err != nil {
		return frame{}, false
	}
	fn, ok := v.(*lua.LFunction)
	if !ok {
		return frame{}, false
	}
	f := frame{dbg: dbg, fn: fn, line: dbg.CurrentLine, pc: -1, nargs: -1}
	if pc, nargs, ok := readPrivateFrame(dbg); ok {
		f.nargs = nargs
		if !fn.IsG && pc >= 1 && pc <= len(fn.Proto.Code) && fn.Proto.DbgSourcePositions[pc-1] == f.line {
			f.pc = pc - 1
		}
	}
	return f, true
}

// readPrivateFrame is privateFrame; tests replace it to exercise what
// happens without it.
var readPrivateFrame = privateFrame

// privateFrame reads, from the call frame a lua.Debug refers to, its
// program counter (one past the running instruction) and its number of
// arguments. gopher-lua keeps both private (Debug.frame, a *callFrame
// with Pc and NArgs), and nothing in its API gives the instruction an
// error happened at; reading them is what makes a name certain where the
// line alone may hold several candidates. ok is false if gopher-lua's
// layout is not the one expected (then callers look at the line).
func privateFrame(dbg *lua.Debug) (pc, nargs int, ok bool) {
	v := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, 0, false
	}
	pcField, nargsField := v.Elem().FieldByName("Pc"), v.Elem().FieldByName("NArgs")
	if pcField.Kind() != reflect.Int || nargsField.Kind() != reflect.Int {
		return 0, 0, false
	}
	return int(pcField.Int()), int(nargsField.Int()), true
}

// instructionAt is the index of the instruction f runs: its pc when
// known, else the only instruction on its line that wanted accepts; -1 if
// there is none or more than one.
func (f frame) instructionAt(wanted func(instruction) bool) int {
	if f.fn == nil || f.fn.IsG {
		return -1
	}
	p := f.fn.Proto
	if f.pc >= 0 {
		if wanted(instruction(p.Code[f.pc])) {
			return f.pc
		}
		return -1
	}
	found := -1
	for pc, code := range p.Code {
		if p.DbgSourcePositions[pc] != f.line || !wanted(instruction(code)) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = pc
	}
	return found
}
