package lua51

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Dump is Lua 5.1's binary chunk of the function compiled as p (what
// string.dump returns; ldump.c), for x86-64 as Redis runs: little endian,
// 4-byte int, 8-byte size_t, double numbers. source is the chunk's source
// as Lua would have it ("@user_script").
//
// The code is gopher-lua's, in Lua 5.1's encoding: gopher-lua's own
// instructions become the Lua ones they stand for (MOVEN a MOVE,
// GETTABLEKS and SETTABLEKS the general forms, NOP an empty jump), and
// its table sizes Lua's floating-point bytes. Redis refuses to load any
// binary chunk, so a dump is only ever looked at, never run.
func Dump(p *lua.FunctionProto, source string) []byte {
	d := dumper{buf: []byte{
		0x1b, 'L', 'u', 'a', // LUA_SIGNATURE
		0x51, // version 5.1
		0,    // official format
		1,    // little endian
		4,    // sizeof(int)
		8,    // sizeof(size_t)
		4,    // sizeof(Instruction)
		8,    // sizeof(lua_Number)
		0,    // lua_Number is not integral
	}}
	d.function(p, source)
	return d.buf
}

type dumper struct{ buf []byte }

func (d *dumper) byte(b byte) { d.buf = append(d.buf, b) }
func (d *dumper) int(n int)   { d.buf = binary.LittleEndian.AppendUint32(d.buf, uint32(int32(n))) }

// string writes a string as size_t length+1, bytes and a NUL; an absent
// one (a nested function's source) as length 0.
func (d *dumper) string(s string, present bool) {
	if !present {
		d.buf = binary.LittleEndian.AppendUint64(d.buf, 0)
		return
	}
	d.buf = binary.LittleEndian.AppendUint64(d.buf, uint64(len(s)+1))
	d.buf = append(d.buf, s...)
	d.byte(0)
}

// Lua 5.1's type tags and opcodes (lua.h, lopcodes.h).
const (
	tagNil     = 0
	tagBoolean = 1
	tagNumber  = 3
	tagString  = 4
)

// luaOpcode maps gopher-lua's opcodes to Lua 5.1's.
var luaOpcode = map[int]int{
	lua.OP_MOVE: 0, lua.OP_MOVEN: 0, lua.OP_LOADK: 1, lua.OP_LOADBOOL: 2, lua.OP_LOADNIL: 3,
	lua.OP_GETUPVAL: 4, lua.OP_GETGLOBAL: 5, lua.OP_GETTABLE: 6, lua.OP_GETTABLEKS: 6,
	lua.OP_SETGLOBAL: 7, lua.OP_SETUPVAL: 8, lua.OP_SETTABLE: 9, lua.OP_SETTABLEKS: 9,
	lua.OP_NEWTABLE: 10, lua.OP_SELF: 11, lua.OP_ADD: 12, lua.OP_SUB: 13, lua.OP_MUL: 14,
	lua.OP_DIV: 15, lua.OP_MOD: 16, lua.OP_POW: 17, lua.OP_UNM: 18, lua.OP_NOT: 19,
	lua.OP_LEN: 20, lua.OP_CONCAT: 21, lua.OP_JMP: 22, lua.OP_EQ: 23, lua.OP_LT: 24,
	lua.OP_LE: 25, lua.OP_TEST: 26, lua.OP_TESTSET: 27, lua.OP_CALL: 28, lua.OP_TAILCALL: 29,
	lua.OP_RETURN: 30, lua.OP_FORLOOP: 31, lua.OP_FORPREP: 32, lua.OP_TFORLOOP: 33,
	lua.OP_SETLIST: 34, lua.OP_CLOSE: 35, lua.OP_CLOSURE: 36, lua.OP_VARARG: 37,
	lua.OP_NOP: 22,
}

// function writes one function (DumpFunction); source is written only
// for the function dumped, not the ones it contains, as Lua does.
func (d *dumper) function(p *lua.FunctionProto, source string) {
	d.string(source, source != "")
	d.int(p.LineDefined)
	d.int(p.LastLineDefined)
	d.byte(p.NumUpvalues)
	d.byte(p.NumParameters)
	d.byte(p.IsVarArg)
	d.byte(max(p.NumUsedRegisters, 2)) // Lua's functions have at least 2
	d.int(len(p.Code))
	for pc := 0; pc < len(p.Code); pc++ {
		d.buf = binary.LittleEndian.AppendUint32(d.buf, luaInstruction(p, pc))
		if i := instruction(p.Code[pc]); i.op() == lua.OP_SETLIST && i.c() == 0 && pc+1 < len(p.Code) {
			pc++ // the block number, a plain word
			d.buf = binary.LittleEndian.AppendUint32(d.buf, p.Code[pc])
		}
	}
	d.int(len(p.Constants))
	for _, k := range p.Constants {
		switch k := k.(type) {
		case lua.LBool:
			d.byte(tagBoolean)
			if k {
				d.byte(1)
			} else {
				d.byte(0)
			}
		case lua.LNumber:
			d.byte(tagNumber)
			d.buf = binary.LittleEndian.AppendUint64(d.buf, math.Float64bits(float64(k)))
		case lua.LString:
			d.byte(tagString)
			d.string(string(k), true)
		default:
			d.byte(tagNil)
		}
	}
	d.int(len(p.FunctionPrototypes))
	for _, f := range p.FunctionPrototypes {
		d.function(f, "")
	}
	d.int(len(p.DbgSourcePositions))
	for _, line := range p.DbgSourcePositions {
		d.int(line)
	}
	d.int(len(p.DbgLocals))
	for _, l := range p.DbgLocals {
		d.string(l.Name, true)
		d.int(l.StartPc)
		// Lua's end is the first instruction out of scope; gopher-lua's
		// the last one in, except for the function's own locals, whose
		// scope it closes after the final return, as Lua closes it at it.
		end := l.EndPc + 1
		if l.EndPc == len(p.Code)-1 {
			end = l.EndPc
		}
		d.int(end)
	}
	d.int(len(p.DbgUpvalues))
	for _, name := range p.DbgUpvalues {
		d.string(name, true)
	}
}

// luaInstruction is the instruction at pc in Lua 5.1's encoding: opcode
// in bits 0-5, A in 6-13, C in 14-22, B in 23-31 (Bx in 14-31).
func luaInstruction(p *lua.FunctionProto, pc int) uint32 {
	i := instruction(p.Code[pc])
	op, a, b, c := i.op(), i.a(), i.b(), i.c()
	switch op {
	case lua.OP_MOVEN:
		c = 0 // the moves it stands for follow as MOVEs
	case lua.OP_NEWTABLE:
		b, c = int2fb(b), int2fb(c)
	case lua.OP_NOP:
		return uint32(luaOpcode[op]) | uint32(maxArgSbx)<<14
	}
	switch op {
	case lua.OP_LOADK, lua.OP_GETGLOBAL, lua.OP_SETGLOBAL, lua.OP_CLOSURE, lua.OP_JMP, lua.OP_FORLOOP, lua.OP_FORPREP:
		return uint32(luaOpcode[op]) | uint32(a)<<6 | uint32(i.bx())<<14
	}
	return uint32(luaOpcode[op]) | uint32(a)<<6 | uint32(c)<<14 | uint32(b)<<23
}

// int2fb is luaO_int2fb: x as a "floating point byte", eeeeexxx, worth
// (1xxx) * 2^(eeeee-1) (xxx when eeeee is 0), rounded up.
func int2fb(x int) int {
	e := 0
	for x >= 16 {
		x = (x + 1) >> 1
		e++
	}
	if x < 8 {
		return x
	}
	return (e+1)<<3 | (x - 8)
}
