// Package lualib provides, for gopher-lua, the Lua libraries that Redis
// 7.0.15 loads into its scripting environment besides Lua's standard ones:
// cjson (lua-cjson 2.1.0), cmsgpack (lua-cmsgpack 0.4.0), bit (LuaBitOp)
// and struct (Roberto Ierusalimschy's struct library).
//
// They are written to behave as the C libraries do inside Redis on x86-64
// Linux, down to number formatting, binary layouts and error messages, so a
// script gets the same results from redamo as from Redis. The package tests
// hold, for each case, the value a real Redis 7.0.15 returned.
//
// One difference cannot be avoided: Lua 5.1 walks a table's hash part in
// an order set by its internal hashing, gopher-lua in insertion order. A
// table with several non-array keys is therefore encoded (cjson object,
// msgpack map) with the same members as in Redis but possibly in another
// order.
package lualib

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
)

// Open registers the libraries as the globals cjson, cmsgpack, bit and
// struct in L.
func Open(L *lua.LState) {
	L.SetGlobal("cjson", newCJSON(L, newJSONNull(L)))
	L.SetGlobal("cmsgpack", newCMsgpack(L))
	L.SetGlobal("bit", newBit(L))
	L.SetGlobal("struct", newStruct(L))
}

// newModule builds a library table from its functions.
func newModule(L *lua.LState, funcs map[string]lua.LGFunction) *lua.LTable {
	t := L.CreateTable(0, len(funcs))
	for name, fn := range funcs {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// raise is luaL_error: the message gets the position of the calling Lua
// code, none when the caller is not Lua (pcall(f, ...), say).
func raise(L *lua.LState, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			msg = fmt.Sprintf("%s:%d: %s", dbg.Source, dbg.CurrentLine, msg)
		}
	}
	L.Error(lua.LString(msg), 0)
}

// argError is luaL_argerror.
func argError(L *lua.LState, n int, msg string) { lua51.ArgError(L, n, msg) }

// typeName is luaL_typename: "no value" past the last argument.
func typeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

// typeError is luaL_typerror.
func typeError(L *lua.LState, n int, want string) {
	argError(L, n, fmt.Sprintf("%s expected, got %s", want, typeName(L, n)))
}

// toNumber is lua_tonumber: numbers, and strings that read as one.
func toNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		return stringToNumber(string(v))
	}
	return 0, false
}

// checkNumber is luaL_checknumber.
func checkNumber(L *lua.LState, n int) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		typeError(L, n, "number")
	}
	return f
}

// checkInteger is luaL_checkinteger: the number truncated to lua_Integer.
func checkInteger(L *lua.LState, n int) int64 {
	return truncInt64(checkNumber(L, n))
}

// optInteger is luaL_optinteger.
func optInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInteger(L, n)
}

// checkString is luaL_checklstring: strings, and numbers as Lua prints
// them.
func checkString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return formatG(float64(v), 14)
	}
	typeError(L, n, "string")
	return ""
}

// checkCString is checkString for arguments the C code reads as a C
// string: they end at the first zero byte.
func checkCString(L *lua.LState, n int) string {
	s := checkString(L, n)
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i]
		}
	}
	return s
}
