package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// transaction --file: all operations apply or none does; a failed
// condition exits 1 naming the operation, a wrong type 2, a file that is
// not a list of valid operations 2 before anything runs. On every path.
func TestCLITransaction(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	var many strings.Builder
	many.WriteString("[")
	for i := range txMaxOps + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"op":"inc","key":"n%d"}`, i)
	}
	many.WriteString("]")
	setup := file("setup.json", `[
		{"op":"set","key":"a","value":"1"},
		{"op":"set","key":"b","value":"x","ttl":"1h"},
		{"op":"rpush","key":"l","members":["p","q"]},
		{"op":"sadd","key":"s","members":["m"]},
		{"op":"inc","key":"n","by":5},
		{"op":"dec","key":"n","by":2}
	]`)
	// The third operation's condition fails: the first two must not apply.
	thirdFails := file("third.json", `[
		{"op":"set","key":"a","value":"2","condition":{"equals":"1"}},
		{"op":"delete","key":"b","condition":"exists"},
		{"op":"set","key":"c","value":"3","condition":"exists"}
	]`)
	steps := []cliStep{
		{a("transaction", "--file", setup), 0, `{"applied":true,"results":[` +
			`{"op":"set","key":"a","result":"OK"},{"op":"set","key":"b","result":"OK"},{"op":"rpush","key":"l","result":2},` +
			`{"op":"sadd","key":"s","result":1},{"op":"inc","key":"n","result":5},{"op":"dec","key":"n","result":3}]}`, ""},
		{a("ttl", "b"), 0, `{"key":"b","exists":true,"pttl_ms":N}`, ""},
		{a("transaction", "--file", thirdFails), 1, `{"applied":false,"failed":3,"op":"set","key":"c"}`,
			"redamo: operation 3 (set c): condition exists failed: there is no c; nothing applied"},
		{a("get", "a"), 0, `{"key":"a","value":"1"}`, ""},
		{a("get", "b"), 0, `{"key":"b","value":"x"}`, ""},
		{a("exists", "c"), 1, `{"key":"c","exists":false}`, ""},
		{a("transaction", "--file", file("absent.json", `[{"op":"delete","key":"a"},{"op":"set","key":"b","value":"y","condition":"absent"}]`)), 1,
			`{"applied":false,"failed":2,"op":"set","key":"b"}`, "operation 2 (set b): condition absent failed: b exists; nothing applied"},
		{a("transaction", "--file", file("equals.json", `[{"op":"srem","key":"s","members":["m"]},{"op":"delete","key":"a","condition":{"equals":2}}]`)), 1,
			`{"applied":false,"failed":2,"op":"delete","key":"a"}`, `operation 2 (delete a): condition equals "2" failed: a holds another value; nothing applied`},
		{a("transaction", "--file", file("eqlist.json", `[{"op":"delete","key":"l","condition":{"equals":"p"}}]`)), 1,
			`{"applied":false,"failed":1,"op":"delete","key":"l"}`, `condition equals "p" failed: l holds a list`},
		{a("smembers", "s"), 0, `{"key":"s","members":["m"]}`, ""},
		// Types are checked before anything is written.
		{a("transaction", "--file", file("wrongtype.json", `[{"op":"set","key":"z","value":"1"},{"op":"sadd","key":"l","members":["x"]}]`)), 2,
			`{"applied":false,"failed":2,"op":"sadd","key":"l"}`, "operation 2 (sadd l): WRONGTYPE"},
		{a("transaction", "--file", file("notint.json", `[{"op":"set","key":"z","value":"1"},{"op":"inc","key":"b"}]`)), 2,
			`{"applied":false,"failed":2,"op":"inc","key":"b"}`, "operation 2 (inc b): b is not an integer"},
		{a("exists", "z"), 1, `{"key":"z","exists":false}`, ""},
		// Everything else in one: a condition that holds, expire, delete.
		{a("transaction", "--file", file("ok.json", `[{"op":"set","key":"a","value":"2","condition":{"equals":1}},`+
			`{"op":"expire","key":"a","ttl":60000},{"op":"lpush","key":"l","members":["o"]},{"op":"delete","key":"s","condition":"exists"}]`)), 0,
			`{"applied":true,"results":[{"op":"set","key":"a","result":"OK"},{"op":"expire","key":"a","result":1},` +
				`{"op":"lpush","key":"l","result":3},{"op":"delete","key":"s","result":1}]}`, ""},
		{a("lrange", "l"), 0, `{"key":"l","values":["o","p","q"]}`, ""},
		// Usage errors: nothing runs.
		{a("transaction"), 2, "", "transaction needs --file F"},
		{a("transaction", "--file", filepath.Join(dir, "none.json")), 2, "", "no such file"},
		{a("transaction", "--file", file("obj.json", `{"op":"set"}`)), 2, "", "not a JSON array of operations"},
		{a("transaction", "--file", file("empty.json", `[]`)), 2, "", "no operations"},
		{a("transaction", "--file", file("many.json", many.String())), 2, "", "101 operations, but one transaction holds at most 100"},
		{a("transaction", "--file", file("op.json", `[{"op":"frob","key":"k"}]`)), 2, "", `operation 1: op "frob": must be one of`},
		{a("transaction", "--file", file("nokey.json", `[{"op":"set","value":"v"}]`)), 2, "", `operation 1: no "key"`},
		{a("transaction", "--file", file("field.json", `[{"op":"delete","key":"k","value":"v"}]`)), 2, "", `operation 1: delete takes no "value"`},
		{a("transaction", "--file", file("cond.json", `[{"op":"delete","key":"k","condition":"maybe"}]`)), 2, "", `condition "maybe": must be`},
		{a("transaction", "--file", file("ttl.json", `[{"op":"expire","key":"k","ttl":"5"}]`)), 2, "", "a duration needs a unit"},
		{a("transaction", "--file", file("unknown.json", `[{"op":"set","key":"k","value":"v","nope":1}]`)), 2, "", `unknown field "nope"`},
	}
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			runSteps(t, p, nil, steps)
			cliStdin = strings.NewReader(`[{"op":"inc","key":"n","by":10}]`)
			code, out, errOut := cliRun(t, nil, withFlags(a("transaction", "--file", "-"), p.flags)...)
			require.Equal(t, exitOK, code, errOut)
			require.Equal(t, `{"applied":true,"results":[{"op":"inc","key":"n","result":13}]}`+"\n", out)
		})
	}
}
