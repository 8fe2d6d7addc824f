package lua51

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// runChunk runs src in a fresh state with Lua's libraries, under
// Handler when reword, and returns the error message it ends with, or
// the string it returns, or "OK".
func runChunk(t *testing.T, src string, reword bool) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	fn, err := L.Load(strings.NewReader(src), "user_script")
	require.NoError(t, err, src)
	L.Push(fn)
	var handler *lua.LFunction
	if reword {
		handler = Handler(L)
	}
	if err := L.PCall(0, 1, handler); err != nil {
		var ae *lua.ApiError
		require.True(t, errors.As(err, &ae), src)
		return ae.Object.String()
	}
	if s, ok := L.Get(-1).(lua.LString); ok {
		return string(s)
	}
	return "OK"
}

// TestHandler: each script of testdata/runtime.tsv fails as it fails in
// redis-server 7.0.15 (EVAL's error, from "ERR " to " script: ..."; the
// string the script returns when it catches the error itself).
func TestHandler(t *testing.T) {
	for _, c := range readCases(t, "testdata/runtime.tsv") {
		assert.Equal(t, c.reply, runChunk(t, c.src, true), "runtime.tsv:%d: %q", c.line, c.src)
	}
}

// TestPrivateFrame: the frames of this gopher-lua hold what frameAt reads
// from them. Should an upgrade change them, this fails, and the wording
// falls back to one instruction per line (TestHandlerByLine).
func TestPrivateFrame(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	fn, err := L.Load(strings.NewReader("local t = {}\nlocal a, b = 1, t.x.y"), "user_script")
	require.NoError(t, err)
	var got frame
	L.Push(fn)
	err = L.PCall(0, 0, L.NewFunction(func(L *lua.LState) int {
		got, _ = frameAt(L, 1)
		return 0
	}))
	require.Error(t, err)
	require.Equal(t, 2, got.line)
	require.GreaterOrEqual(t, got.pc, 0, "gopher-lua's call frames are not as frame.go expects")
	i := instruction(got.fn.Proto.Code[got.pc])
	require.Equal(t, lua.OP_GETTABLEKS, i.op())
	require.Equal(t, "y", constantName(got.fn.Proto, i.c()))
	require.Equal(t, 0, got.nargs)
}

// TestHandlerByLine: without the frames' program counters, the wording
// names a variable only when one instruction of its line can have
// failed; it never names the wrong one (each script ends with Redis's
// error or with what gopher-lua's text alone gives).
func TestHandlerByLine(t *testing.T) {
	saved := readPrivateFrame
	readPrivateFrame = func(*lua.Debug) (int, int, bool) { return 0, 0, false }
	defer func() { readPrivateFrame = saved }()
	exact := 0
	cases := readCases(t, "testdata/runtime.tsv")
	for _, c := range cases {
		got := runChunk(t, c.src, true)
		if got == c.reply {
			exact++
			continue
		}
		assert.Equal(t, Text(runChunk(t, c.src, false)), got, "runtime.tsv:%d: %q", c.line, c.src)
	}
	t.Logf("%d of %d worded as Redis does by line alone", exact, len(cases))
}

// TestArgError: luaL_argerror raised from a Go function, named as the
// calling code refers to it (the same rules as the cases of
// runtime.tsv on Lua 5.1's own functions).
func TestArgError(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"f()", "user_script:1: bad argument #2 to 'f' (x expected)"},
		{"local g = f\ng()", "user_script:2: bad argument #2 to 'g' (x expected)"},
		{"local t = {m = f} t.m()", "user_script:1: bad argument #2 to 'm' (x expected)"},
		{"local t = {m = f} t:m()", "user_script:1: bad argument #1 to 'm' (x expected)"},
		{"local ok, e = pcall(f) return e", "bad argument #2 to '?' (x expected)"},
		{"local t = {f} t[1]()", "user_script:1: bad argument #2 to '?' (x expected)"},
	} {
		L := lua.NewState()
		L.SetGlobal("f", L.NewFunction(func(L *lua.LState) int {
			ArgError(L, 2, "x expected")
			return 0
		}))
		fn, err := L.Load(strings.NewReader(tc.src), "user_script")
		require.NoError(t, err)
		L.Push(fn)
		got := ""
		if err := L.PCall(0, 1, nil); err != nil {
			got = err.(*lua.ApiError).Object.String()
		} else {
			got = L.Get(-1).String()
		}
		require.Equal(t, tc.want, got, tc.src)
		L.Close()
	}
}
