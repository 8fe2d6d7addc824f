package lua51

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// MaxCStack is Lua 5.1's LUAI_MAXCSTACK: the most values a C function may
// hold on its stack. Functions that push many results (unpack,
// string.byte, cmsgpack.unpack) check it first and fail with their own
// error, before pushing anything.
const MaxCStack = 8000

// CheckStack is lua_checkstack for the Go function running in L: whether
// it may push n more values.
func CheckStack(L *lua.LState, n int) bool {
	return n <= MaxCStack && L.GetTop()+n <= MaxCStack
}

// PCall is L.PCall(nargs, nret, handler), but returns an error where
// gopher-lua lets one escape: when the registry (its stack) is full, the
// error handler cannot be pushed, and the error gopher-lua raises then
// leaves PCall. A protected call without a handler around it, which needs
// no room for one, stops it there, and the registry is reset to where it
// was. The error is then the one the handler could not be pushed for.
func PCall(L *lua.LState, nargs, nret int, handler *lua.LFunction) error {
	var inner error
	call := L.NewFunction(func(L *lua.LState) int {
		if inner = L.PCall(nargs, nret, handler); inner != nil {
			return 0
		}
		return L.GetTop()
	})
	L.Insert(call, L.GetTop()-nargs)
	if err := L.PCall(nargs+1, lua.MultRet, nil); err != nil {
		return err
	}
	return inner
}

// Where splits the position gopher-lua puts before an error message
// ("user_script:3: ...") into the chunk's name and the line; ok is false
// when msg has none.
func Where(msg string) (chunk, line string, ok bool) {
	m := reWhere.FindStringSubmatch(msg)
	if m == nil {
		return "", "", false
	}
	pos := strings.TrimSuffix(m[1], ": ")
	i := strings.LastIndexByte(pos, ':')
	return pos[:i], pos[i+1:], true
}
