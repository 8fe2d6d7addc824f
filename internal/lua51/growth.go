package lua51

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Growth is what the instruction the running Lua function of L is about
// to run adds to memory, for a hook between two instructions (gopher-lua
// calls its context's Done before each): the bytes of the string a
// concatenation makes, and slotBytes for each table slot a store or a
// constructor may add. It is an upper bound, 0 for the instructions that
// make nothing of a size the code controls.
//
// gopher-lua concatenates, and grows tables, inside its VM, out of reach
// of the functions a script calls: a hook is the only place to see a
// string before it is made. The instruction is read from gopher-lua's
// private call frame (LState.currentFrame, a *callFrame with Fn and Pc),
// whose layout is checked once: should it ever not be the expected one,
// Growth is 0 (FrameLayoutKnown reports it).
func Growth(L *lua.LState, slotBytes int64) int64 {
	inst, ok := running(L)
	if !ok {
		return 0
	}
	switch inst.op() {
	case lua.OP_CONCAT:
		var n int64
		for r := inst.b(); r <= inst.c(); r++ {
			switch v := L.Get(r + 1).(type) {
			case lua.LString:
				n += int64(len(v))
			case lua.LNumber:
				n += 24 // the longest number Lua prints
			}
		}
		return n
	case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
		return slotBytes
	case lua.OP_SETLIST:
		n := inst.b()
		if n == 0 {
			n = max(L.GetTop()-inst.a()-1, 0)
		}
		return int64(n) * slotBytes
	case lua.OP_NEWTABLE:
		return int64(inst.b()+inst.c()+1) * slotBytes
	}
	return 0
}

// The offsets of what running reads, when gopher-lua's layout is the one
// expected.
var frameLayout = func() (l struct {
	ok              bool
	current, fn, pc uintptr
}) {
	cur, ok := reflect.TypeOf(lua.LState{}).FieldByName("currentFrame")
	if !ok || cur.Type.Kind() != reflect.Pointer || cur.Type.Elem().Kind() != reflect.Struct {
		return l
	}
	fn, okFn := cur.Type.Elem().FieldByName("Fn")
	pc, okPc := cur.Type.Elem().FieldByName("Pc")
	if !okFn || !okPc || fn.Type != reflect.TypeOf((*lua.LFunction)(nil)) || pc.Type.Kind() != reflect.Int || pc.Type.Size() != unsafe.Sizeof(int(0)) {
		return l
	}
	l.ok, l.current, l.fn, l.pc = true, cur.Offset, fn.Offset, pc.Offset
	return l
}()

// FrameLayoutKnown reports whether Growth can read gopher-lua's frames.
func FrameLayoutKnown() bool { return frameLayout.ok }

// running is the instruction the running Lua function of L runs next
// (gopher-lua moves Pc past an instruction before it runs it).
func running(L *lua.LState) (instruction, bool) {
	if !frameLayout.ok {
		return 0, false
	}
	cf := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(L), frameLayout.current))
	if cf == nil {
		return 0, false
	}
	fn := *(**lua.LFunction)(unsafe.Add(cf, frameLayout.fn))
	if fn == nil || fn.IsG || fn.Proto == nil {
		return 0, false
	}
	pc := *(*int)(unsafe.Add(cf, frameLayout.pc))
	if pc < 1 || pc > len(fn.Proto.Code) {
		return 0, false
	}
	return instruction(fn.Proto.Code[pc-1]), true
}
