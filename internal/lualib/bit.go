package lualib

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// bit: LuaBitOp 1.0.2 as Redis vendors it. Operands are numbers taken
// modulo 2^32; results are signed 32-bit numbers.

func newBit(L *lua.LState) *lua.LTable {
	return newModule(L, map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return bitReturn(L, bitArg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return bitReturn(L, ^bitArg(L, 1)) },
		"band":    bitFold(func(a, b uint32) uint32 { return a & b }),
		"bor":     bitFold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    bitFold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  bitShift(func(b, n uint32) uint32 { return b << n }),
		"rshift":  bitShift(func(b, n uint32) uint32 { return b >> n }),
		"arshift": bitShift(func(b, n uint32) uint32 { return uint32(int32(b) >> n) }),
		"rol":     bitShift(func(b, n uint32) uint32 { return b<<n | b>>(32-n) }),
		"ror":     bitShift(func(b, n uint32) uint32 { return b<<(32-n) | b>>n }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			return bitReturn(L, (b>>24)|((b>>8)&0xff00)|((b&0xff00)<<8)|(b<<24))
		},
		"tohex": bitToHex,
	})
}

// bitArg reads argument i as LuaBitOp does: adding 2^52+2^51 puts the
// number, rounded to an integer, in the low 32 bits of the double. What
// is not a number reads as 0, an error unless 0 came from a number.
func bitArg(L *lua.LState, i int) uint32 {
	f, ok := toNumber(L.Get(i))
	b := uint32(math.Float64bits(f + 6755399441055744.0))
	if b == 0 && !ok {
		typeError(L, i, "number")
	}
	return b
}

func bitReturn(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

// bitFold applies op across all the arguments.
func bitFold(op func(a, b uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		for i := L.GetTop(); i > 1; i-- {
			b = op(b, bitArg(L, i))
		}
		return bitReturn(L, b)
	}
}

// bitShift applies op to the first argument and the second modulo 32.
func bitShift(op func(b, n uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := bitArg(L, 1)
		n := bitArg(L, 2) & 31
		return bitReturn(L, op(b, n))
	}
}

// bitToHex formats the first argument in hex, with as many digits as the
// second (8 by default, at most 8), upper case when it is negative.
func bitToHex(L *lua.LState) int {
	b := bitArg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(bitArg(L, 2))
	}
	digits := "0123456789abcdef"
	if n < 0 {
		// In Redis 7.0.15 the C code overflows negating -2^31 and asks for
		// a string of 2^64-2^31 bytes; this takes it as -(2^31-1), as later
		// LuaBitOp versions do.
		n = -max(n, -math.MaxInt32)
		digits = strings.ToUpper(digits)
	}
	n = min(n, 8)
	buf := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
