package lualib

import (
	"context"
	"strings"
	"testing"

	"github.com/redamo/redamo/compat"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// luaCase is a one-line Lua snippet, run after prelude, and the string
// Redis 7.0.15 returned for it (EVAL prelude+script 0).
type luaCase struct {
	name   string
	script string
	want   string
}

// prelude defines show(...), which turns any values into one string the
// same way in gopher-lua and in Redis's Lua: numbers with %.17g, strings
// in double quotes (raw), tables as sorted key=value lists, cjson.null as
// null. It is one line, so errors in a snippet are on line 1 in both.
const prelude = `local function less(a, b) for i = 1, math.min(#a, #b) do local x, y = a:byte(i), b:byte(i) if x ~= y then return x < y end end return #a < #b end ` +
	`local showv showv = function(v) local t = type(v) ` +
	`if t == 'number' then if v ~= v then return 'nan' elseif v == 1/0 then return 'inf' elseif v == -1/0 then return '-inf' end return string.format('%.17g', v) ` +
	`elseif t == 'string' then return '"' .. v .. '"' ` +
	`elseif t == 'table' then local items = {} for k, x in pairs(v) do items[#items + 1] = showv(k) .. '=' .. showv(x) end table.sort(items, less) return '{' .. table.concat(items, ',') .. '}' ` +
	`elseif v == cjson.null then return 'null' end return tostring(v) end ` +
	`local function show(...) local out = {} for i = 1, select('#', ...) do out[i] = showv((select(i, ...))) end return table.concat(out, ' ') end `

// runLua runs prelude+script in a fresh state with the libraries open and
// returns the string it returns.
func runLua(t *testing.T, script string) string {
	t.Helper()
	// Room past the default registry so the libraries reach Lua 5.1's own
	// stack limit (8000 values) as in Redis.
	L := lua.NewState(lua.Options{RegistryMaxSize: 64 * 1024})
	defer L.Close()
	Open(L)
	fn, err := L.Load(strings.NewReader(prelude+script), "user_script")
	require.NoError(t, err)
	L.Push(fn)
	require.NoError(t, L.PCall(0, 1, nil))
	s, ok := L.Get(-1).(lua.LString)
	require.True(t, ok, "the script returns %s, not a string", L.Get(-1).Type())
	return string(s)
}

func runCases(t *testing.T, cases []luaCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, runLua(t, c.script), c.script)
		})
	}
}

// TestCasesAgainstRedis checks the expected values against a real
// redis-server 7.0.15: a throwaway one, or the one REDAMO_LUALIB_REDIS
// names (host:port).
func TestCasesAgainstRedis(t *testing.T) {
	addr := compat.ReferenceRedis(t, "REDAMO_LUALIB_REDIS")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for lib, cases := range map[string][]luaCase{
		"open":     openCases,
		"cjson":    cjsonCases,
		"cmsgpack": cmsgpackCases,
		"bit":      bitCases,
		"struct":   structCases,
	} {
		for _, c := range cases {
			t.Run(lib+"/"+c.name, func(t *testing.T) {
				got, err := rdb.Eval(ctx, prelude+c.script, nil).Text()
				require.NoError(t, err, c.script)
				assert.Equal(t, c.want, got, "%s\nRedis returned %q", c.script, got)
			})
		}
	}
}

var openCases = []luaCase{
	{"globals", `return show(type(cjson), type(cmsgpack), type(bit), type(struct))`, "\"table\" \"table\" \"table\" \"table\""},
	{"cjson functions", `local r = {} for k, v in pairs(cjson) do r[#r + 1] = k .. ':' .. type(v) end table.sort(r, less) return table.concat(r, ' ')`, "_NAME:string _VERSION:string decode:function decode_invalid_numbers:function decode_max_depth:function encode:function encode_invalid_numbers:function encode_keep_buffer:function encode_max_depth:function encode_number_precision:function encode_sparse_array:function new:function null:userdata"},
	{"cmsgpack functions", `local r = {} for k, v in pairs(cmsgpack) do r[#r + 1] = k .. ':' .. type(v) end table.sort(r, less) return table.concat(r, ' ')`, "_COPYRIGHT:string _DESCRIPTION:string _NAME:string _VERSION:string pack:function unpack:function unpack_limit:function unpack_one:function"},
	{"bit functions", `local r = {} for k, v in pairs(bit) do r[#r + 1] = k .. ':' .. type(v) end table.sort(r, less) return table.concat(r, ' ')`, "arshift:function band:function bnot:function bor:function bswap:function bxor:function lshift:function rol:function ror:function rshift:function tobit:function tohex:function"},
	{"struct functions", `local r = {} for k, v in pairs(struct) do r[#r + 1] = k .. ':' .. type(v) end table.sort(r, less) return table.concat(r, ' ')`, "pack:function size:function unpack:function"},
	{"cmsgpack metadata", `return show(cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION)`, "\"cmsgpack\" \"lua-cmsgpack 0.4.0\" \"Copyright (C) 2012, Salvatore Sanfilippo\" \"MessagePack C implementation for Lua\""},
}

func TestOpen(t *testing.T) { runCases(t, openCases) }
