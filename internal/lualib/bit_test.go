package lualib

import "testing"

var bitCases = []luaCase{
	{"tobit", `return show(bit.tobit(0), bit.tobit(1), bit.tobit(-1), bit.tobit(0xffffffff), bit.tobit(2^31), bit.tobit(2^32 + 5), bit.tobit(-2^31 - 1))`, "0 1 -1 -1 -2147483648 5 2147483647"},
	{"tobit rounding", `return show(bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(0.49999), bit.tobit(-0.5), bit.tobit(3.7))`, "2 2 -2 0 0 4"},
	{"tobit large", `return show(bit.tobit(2^52), bit.tobit(2^52 + 3), bit.tobit(2^53 + 2), bit.tobit(1e20), bit.tobit(-1e20), bit.tobit(2^63))`, "0 2 1 2025163840 2025163840 0"},
	{"tobit special", `return show(bit.tobit((1/0)), bit.tobit(-(1/0)), bit.tobit(0/0))`, "0 0 0"},
	{"tobit strings", `return show(bit.tobit('12'), bit.tobit(' 0x10 '), bit.tobit('1e3'), bit.tobit('-7'))`, "12 16 1000 -7"},
	{"tobit bad string", `return show(pcall(bit.tobit, 'abc'))`, "false \"bad argument #1 to '?' (number expected, got string)\""},
	{"tobit no argument", `local ok, e = pcall(function() return bit.tobit() end) return e`, "user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"},
	{"tobit tail call", `local ok, e = pcall(function() return bit.tobit() end) return e`, "user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"},
	{"tobit from nested function", `local function f() local x = bit.tobit(nil) return x end local ok, e = pcall(f) return e`, "user_script:1: bad argument #1 to 'tobit' (number expected, got nil)"},
	{"tobit via local", `local f = bit.tobit local ok, e = pcall(function() local x = f({}) return x end) return e`, "user_script:1: bad argument #1 to 'f' (number expected, got table)"},
	{"tobit nil", `return show(pcall(bit.tobit, nil))`, "false \"bad argument #1 to '?' (number expected, got nil)\""},
	{"bnot", `return show(bit.bnot(0), bit.bnot(-1), bit.bnot(0x12345678), bit.bnot(2^32))`, "-1 0 -305419897 -1"},
	{"band", `return show(bit.band(12, 10), bit.band(0xff00ff, 0x0ff0f0, 0xffff), bit.band(-1, 2^31), bit.band(7))`, "8 240 -2147483648 7"},
	{"bor", `return show(bit.bor(12, 10), bit.bor(1, 2, 4, 8, 16), bit.bor(2^31, 1), bit.bor(-8))`, "14 31 -2147483647 -8"},
	{"bxor", `return show(bit.bxor(12, 10), bit.bxor(-1, 0x0f0f0f0f), bit.bxor(1, 1, 1))`, "6 -252645136 1"},
	{"band no arguments", `return show(pcall(bit.band))`, "false \"bad argument #1 to '?' (number expected, got no value)\""},
	{"bor bad argument", `return show(pcall(bit.bor, 1, {}))`, "false \"bad argument #2 to '?' (number expected, got table)\""},
	{"bxor bad third argument", `local ok, e = pcall(function() return bit.bxor(1, 2, 'x') end) return e`, "user_script:1: bad argument #3 to 'bxor' (number expected, got string)"},
	{"lshift", `return show(bit.lshift(1, 0), bit.lshift(1, 4), bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(-1, 8), bit.lshift(1, -1))`, "1 16 -2147483648 1 2 -256 -2147483648"},
	{"rshift", `return show(bit.rshift(256, 4), bit.rshift(-1, 28), bit.rshift(-256, 4), bit.rshift(1, 32), bit.rshift(2^31, 31))`, "16 15 268435440 1 1"},
	{"arshift", `return show(bit.arshift(256, 4), bit.arshift(-256, 4), bit.arshift(-1, 31), bit.arshift(2^31, 1), bit.arshift(-256, 36))`, "16 -16 -1 -1073741824 -16"},
	{"rol", `return show(bit.rol(0x12345678, 8), bit.rol(1, 31), bit.rol(2^31, 1), bit.rol(5, 0), bit.rol(1, 33))`, "878082066 -2147483648 1 5 2"},
	{"ror", `return show(bit.ror(0x12345678, 8), bit.ror(1, 1), bit.ror(5, 0), bit.ror(1, 32), bit.ror(-2, 1))`, "2014458966 -2147483648 5 1 2147483647"},
	{"shift missing count", `return show(pcall(bit.lshift, 1))`, "false \"bad argument #2 to '?' (number expected, got no value)\""},
	{"bswap", `return show(bit.bswap(0x12345678), bit.bswap(1), bit.bswap(-1), bit.bswap(0xff000000))`, "2018915346 16777216 -1 255"},
	{"tohex", `return show(bit.tohex(255), bit.tohex(-1), bit.tohex(0x12345678), bit.tohex(2^32 + 1))`, "\"000000ff\" \"ffffffff\" \"12345678\" \"00000001\""},
	{"tohex width", `return show(bit.tohex(255, 2), bit.tohex(255, 1), bit.tohex(255, 0), bit.tohex(255, 12), bit.tohex(0x12345678, 4))`, "\"ff\" \"f\" \"\" \"000000ff\" \"5678\""},
	{"tohex upper", `return show(bit.tohex(255, -4), bit.tohex(-1, -8), bit.tohex(0xabcdef, -20), bit.tohex(255, -1))`, "\"00FF\" \"FFFFFFFF\" \"00ABCDEF\" \"F\""},
	{"tohex nil width", `return show(pcall(bit.tohex, 1, nil))`, "false \"bad argument #2 to '?' (number expected, got nil)\""},
	{"tohex string width", `return show(bit.tohex(255, '3'))`, "\"0ff\""},
	{"results are signed", `return show(bit.bor(0x80000000, 0), bit.band(0xffffffff, 0xffffffff), bit.bxor(0, 0xfffffffe))`, "-2147483648 -1 -2"},
}

func TestBit(t *testing.T) { runCases(t, bitCases) }
