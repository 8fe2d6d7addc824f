package lua51

import (
	lua "github.com/yuin/gopher-lua"
)

// An instruction of gopher-lua's bytecode: Lua 5.1's fields (opcode, A,
// B, C, Bx, sBx), laid out as gopher-lua lays them out (opcode.go).
type instruction uint32

func (i instruction) op() int  { return int(i >> 26) }
func (i instruction) a() int   { return int(i>>18) & 0xff }
func (i instruction) b() int   { return int(i & 0x1ff) }
func (i instruction) c() int   { return int(i>>9) & 0x1ff }
func (i instruction) bx() int  { return int(i & 0x3ffff) }
func (i instruction) sbx() int { return i.bx() - maxArgSbx }

const (
	maxArgSbx = (1<<18 - 1) >> 1
	// rkConstant marks an RK operand that is a constant, not a register.
	rkConstant = 1 << 8
)

// setsA reports whether op writes register A: Lua 5.1's testAMode
// (lopcodes.c), plus gopher-lua's own MOVEN and GETTABLEKS, which write
// A as MOVE and GETTABLE do.
func setsA(op int) bool {
	switch op {
	case lua.OP_MOVE, lua.OP_MOVEN, lua.OP_LOADK, lua.OP_LOADBOOL, lua.OP_LOADNIL,
		lua.OP_GETUPVAL, lua.OP_GETGLOBAL, lua.OP_GETTABLE, lua.OP_GETTABLEKS,
		lua.OP_NEWTABLE, lua.OP_SELF, lua.OP_ADD, lua.OP_SUB, lua.OP_MUL, lua.OP_DIV,
		lua.OP_MOD, lua.OP_POW, lua.OP_UNM, lua.OP_NOT, lua.OP_LEN, lua.OP_CONCAT,
		lua.OP_TEST, lua.OP_TESTSET, lua.OP_CALL, lua.OP_TAILCALL, lua.OP_FORLOOP,
		lua.OP_FORPREP, lua.OP_CLOSURE, lua.OP_VARARG:
		return true
	}
	return false
}

// lastSetter is the index of the last instruction before lastpc that
// wrote register reg, following forward jumps that do not pass lastpc:
// Lua 5.1's symbexec in tracing mode. -1 means none (Lua finds the
// function's final RETURN, which names nothing).
func lastSetter(p *lua.FunctionProto, lastpc, reg int) int {
	last := -1
	for pc := 0; pc < lastpc && pc < len(p.Code); pc++ {
		i := instruction(p.Code[pc])
		op, a := i.op(), i.a()
		if setsA(op) && a == reg {
			last = pc
		}
		switch op {
		case lua.OP_LOADNIL:
			if a <= reg && reg <= i.b() {
				last = pc
			}
		case lua.OP_SELF:
			if reg == a+1 {
				last = pc
			}
		case lua.OP_TFORLOOP:
			if reg >= a+2 {
				last = pc
			}
		case lua.OP_CALL, lua.OP_TAILCALL:
			if reg >= a {
				last = pc
			}
		case lua.OP_JMP, lua.OP_FORLOOP, lua.OP_FORPREP:
			if dest := pc + 1 + i.sbx(); pc < dest && dest <= lastpc {
				pc += i.sbx()
			}
		case lua.OP_SETLIST:
			if i.c() == 0 {
				pc++ // the next word is the block number, not code
			}
		case lua.OP_CLOSURE:
			// The closure's upvalues follow as pseudo-instructions.
			if bx := i.bx(); bx < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[bx].NumUpvalues)
			}
		}
	}
	return last
}

// localName is the name of the local variable in register reg at pc
// (luaF_getlocalname), "" if the register holds none. gopher-lua records
// a local's scope as Lua does, with two differences: its end is the last
// instruction in scope where Lua's is the first one out of it, and a for
// loop's hidden control variables start before the loop's expressions,
// where Lua starts them at the jump into the loop, one instruction before
// the loop's own variables.
func localName(p *lua.FunctionProto, reg, pc int) string {
	n := reg + 1
	for i, l := range p.DbgLocals {
		start := l.StartPc
		if isForControl(l.Name) {
			for _, next := range p.DbgLocals[i+1:] {
				if !isForControl(next.Name) {
					start = max(start, next.StartPc-1)
					break
				}
			}
		}
		if start > pc {
			break
		}
		if pc <= l.EndPc {
			n--
			if n == 0 {
				return l.Name
			}
		}
	}
	return ""
}

// isForControl reports whether name is one of the hidden variables of a
// for loop, named as Lua names them: "(for index)", "(for generator)"...
func isForControl(name string) bool {
	return len(name) > 5 && name[:5] == "(for "
}

// constantName is the string constant an RK operand names ("?" for a
// register or a constant of another type), Lua's kname.
func constantName(p *lua.FunctionProto, rk int) string {
	if rk&rkConstant != 0 {
		if k := rk &^ rkConstant; k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// Kinds of names, as Lua's messages give them.
const (
	kindLocal   = "local"
	kindGlobal  = "global"
	kindField   = "field"
	kindUpvalue = "upvalue"
	kindMethod  = "method"
)

// objectName says what register reg holds when the instruction at pc
// runs, as Lua 5.1's getobjname does: a local variable, or the global,
// field, upvalue or method its value was last loaded from. kind is ""
// when the value has no name (a constant, a call's result, ...).
func objectName(p *lua.FunctionProto, pc, reg int) (kind, name string) {
	for depth := 0; depth < 256; depth++ {
		if name := localName(p, reg, pc); name != "" {
			return kindLocal, name
		}
		last := lastSetter(p, pc, reg)
		if last < 0 {
			return "", ""
		}
		i := instruction(p.Code[last])
		switch i.op() {
		case lua.OP_GETGLOBAL:
			if bx := i.bx(); bx < len(p.Constants) {
				if s, ok := p.Constants[bx].(lua.LString); ok {
					return kindGlobal, string(s)
				}
			}
			return "", ""
		case lua.OP_MOVE, lua.OP_MOVEN:
			if b := i.b(); b < i.a() {
				reg = b // the name of the register it was copied from
				continue
			}
			return "", ""
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			return kindField, constantName(p, i.c())
		case lua.OP_GETUPVAL:
			if b := i.b(); b < len(p.DbgUpvalues) {
				return kindUpvalue, p.DbgUpvalues[b]
			}
			return kindUpvalue, "?"
		case lua.OP_SELF:
			return kindMethod, constantName(p, i.c())
		}
		return "", ""
	}
	return "", ""
}
