package lua51

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// TestDump: for functions both compilers translate alike, the chunk is
// byte for byte what string.dump returned in redis-server 7.0.15 (EVAL
// "return string.dump(...)" 0).
func TestDump(t *testing.T) {
	for _, tc := range []struct{ fn, want string }{
		{"function() end", "\x1bLuaQ\x00\x01\x04\b\x04\b\x00\r\x00\x00\x00\x00\x00\x00\x00@user_script\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x02\x01\x00\x00\x00\x1e\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"function(a) return a end", "\x1bLuaQ\x00\x01\x04\b\x04\b\x00\r\x00\x00\x00\x00\x00\x00\x00@user_script\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x01\x00\x02\x02\x00\x00\x00\x1e\x00\x00\x01\x1e\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00a\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"},
		{"function(a, ...) local x = a + 1 return x end", "\x1bLuaQ\x00\x01\x04\b\x04\b\x00\r\x00\x00\x00\x00\x00\x00\x00@user_script\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x01\a\x03\x03\x00\x00\x00\x8c\x00@\x00\x9e\x00\x00\x01\x1e\x00\x80\x00\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00a\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00arg\x00\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00x\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"},
		{"function() return u, \"s\", 2.5, nil, true end", "\x1bLuaQ\x00\x01\x04\b\x04\b\x00\r\x00\x00\x00\x00\x00\x00\x00@user_script\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x05\a\x00\x00\x00\x04\x00\x00\x00A\x00\x00\x00\x81@\x00\x00\xc3\x00\x80\x01\x02\x01\x80\x00\x1e\x00\x00\x03\x1e\x00\x80\x00\x02\x00\x00\x00\x04\x02\x00\x00\x00\x00\x00\x00\x00s\x00\x03\x00\x00\x00\x00\x00\x00\x04@\x00\x00\x00\x00\a\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00u\x00"},
	} {
		L := lua.NewState()
		fn, err := L.Load(strings.NewReader("local u = 1 return "+tc.fn), "user_script")
		require.NoError(t, err)
		L.Push(fn)
		require.NoError(t, L.PCall(0, 1, nil))
		require.Equal(t, tc.want, string(Dump(L.Get(-1).(*lua.LFunction).Proto, "@user_script")), tc.fn)
		L.Close()
	}
}

// TestDumpEncoding: gopher-lua's own instructions become Lua 5.1's.
func TestDumpEncoding(t *testing.T) {
	p := &lua.FunctionProto{
		Code: []uint32{
			uint32(lua.OP_MOVEN)<<26 | 1<<18 | 2<<9 | 0,            // MOVEN 1 0 (2 moves follow)
			uint32(lua.OP_GETTABLEKS)<<26 | 3<<18 | (256|1)<<9 | 2, // GETTABLEKS 3 2 K1
			uint32(lua.OP_NOP) << 26,                               // NOP
			uint32(lua.OP_NEWTABLE)<<26 | 4<<18 | 100<<9 | 20,      // NEWTABLE 4 20 100
			uint32(lua.OP_JMP)<<26 | uint32(maxArgSbx-3),           // JMP -3
			uint32(lua.OP_SETLIST)<<26 | 4<<18 | 0<<9 | 1, 600,     // SETLIST 4 1 0, block 600
			uint32(lua.OP_RETURN)<<26 | 0<<18 | 1, // RETURN 0 1
		},
		DbgSourcePositions: []int{1, 1, 1, 1, 1, 1, 1, 1},
	}
	for pc, want := range map[int]uint32{
		0: 0 | 1<<6 | 0<<23,                // MOVE 1 0
		1: 6 | 3<<6 | (256|1)<<14 | 2<<23,  // GETTABLE 3 2 K1
		2: 22 | uint32(maxArgSbx)<<14,      // JMP 0
		3: 10 | 4<<6 | 0x25<<14 | 0x12<<23, // NEWTABLE with sizes as floating-point bytes
		4: 22 | uint32(maxArgSbx-3)<<14,    // JMP -3
		5: 34 | 4<<6 | 0<<14 | 1<<23,       // SETLIST 4 1 0
		7: 30 | 0<<6 | 1<<23,               // RETURN 0 1
	} {
		require.Equal(t, want, luaInstruction(p, pc), "pc %d", pc)
	}
	require.Equal(t, 0x12, int2fb(20))  // 20 = 1010b * 2^1: exponent field 2, mantissa 010b
	require.Equal(t, 0x25, int2fb(100)) // rounded up to 104 = 1101b * 2^3: field 4, 101b
	require.Equal(t, 7, int2fb(7))
}
