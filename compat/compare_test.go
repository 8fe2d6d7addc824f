package compat

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func norms(t *testing.T, directive string) []Norm {
	t.Helper()
	if directive == "" {
		return nil
	}
	cases, err := ParseCases("f", []byte("case c\nX | "+directive+"\n"))
	require.NoError(t, err)
	return cases[0].Steps[0].Norms
}

func TestCompare(t *testing.T) {
	info := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	tests := []struct {
		name      string
		directive string
		ref, got  string
		ok        bool
	}{
		{"identical", "", "+OK\r\n", "+OK\r\n", true},
		{"differ", "", "+OK\r\n", "+Ok\r\n", false},
		{"null encodings differ", "", "$-1\r\n", "*-1\r\n", false},
		{"sort", "sort", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", true},
		{"sort keeps contents", "sort", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\nc\r\n", false},
		{"only", "only 0 2.1", "*3\r\n:1\r\n:2\r\n*2\r\n:0\r\n:5\r\n", "*3\r\n:1\r\n:9\r\n*2\r\n:7\r\n:5\r\n", true},
		{"only differs", "only 0 2.1", "*3\r\n:1\r\n:2\r\n*2\r\n:0\r\n:5\r\n", "*3\r\n:1\r\n:9\r\n*2\r\n:7\r\n:6\r\n", false},
		{"only missing", "only 3", "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", "*3\r\n:1\r\n:2\r\n:3\r\n", false},
		{"sort path", "sort 0.1", "*1\r\n*2\r\n:0\r\n*2\r\n:2\r\n:1\r\n", "*1\r\n*2\r\n:0\r\n*2\r\n:1\r\n:2\r\n", true},
		{"fields at", "fields at=1 eq=a", "*2\r\n$1\r\nx\r\n%1\r\n+a\r\n:1\r\n", "*2\r\n$1\r\ny\r\n%1\r\n+a\r\n:1\r\n", true},
		{"sort nested", "sort 1", "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\na\r\n", "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n", true},
		{"sort map by key", "sort", "%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", true},
		{"sort map keeps pairs", "sort", "%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n", "%2\r\n+a\r\n:2\r\n+b\r\n:1\r\n", false},
		{"approx within", "approx 2", ":100\r\n", ":98\r\n", true},
		{"approx outside", "approx 2", ":100\r\n", ":97\r\n", false},
		{"approx sentinel exact", "approx 5", ":-1\r\n", ":-2\r\n", false},
		{"approx type differs", "approx 5", ":1\r\n", "$1\r\n1\r\n", false},
		{"approx bulk float", "approx 0.01", "$4\r\n1.50\r\n", "$5\r\n1.505\r\n", true},
		{"approx non-numbers differ", "approx 1", "+a\r\n", "+b\r\n", false},
		{"shape", "shape", "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n", "*2\r\n$10\r\n1700000001\r\n$1\r\n5\r\n", true},
		{"shape length", "shape", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*1\r\n$1\r\na\r\n", false},
		{"shape kind", "shape", ":1\r\n", "+1\r\n", false},
		{"oneof both allowed", "oneof a b", "$1\r\na\r\n", "$1\r\nb\r\n", true},
		{"oneof not allowed", "oneof a b", "$1\r\na\r\n", "$1\r\nc\r\n", false},
		{"oneof nil", "oneof a nil", "$-1\r\n", "$-1\r\n", true},
		{"oneof null vs value", "oneof a nil", "$-1\r\n", "$1\r\na\r\n", false},
		{"subset", "subset distinct a b c", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\na\r\n", true},
		{"subset repeats", "subset distinct a b c", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nc\r\n", false},
		{"subset repeats allowed", "subset a b c", "*2\r\n$1\r\na\r\n$1\r\na\r\n", "*2\r\n$1\r\nc\r\n$1\r\nc\r\n", true},
		{"subset length", "subset a b c", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*1\r\n$1\r\nc\r\n", false},
		{"fields info eq", "fields eq=loading has=uptime",
			info("# Server\r\nloading:0\r\nuptime:5\r\n"), info("# Server\r\nuptime:9\r\nloading:0\r\nextra:1\r\n"), true},
		{"fields info eq differs", "fields eq=loading",
			info("loading:0\r\n"), info("loading:1\r\n"), false},
		{"fields info missing", "fields has=uptime",
			info("uptime:5\r\n"), info("loading:0\r\n"), false},
		{"fields kv line", "fields eq=db,name has=id",
			info("id=3 addr=127.0.0.1:1 name= db=0\n"), info("id=9 addr=x name= db=0 extra=1\n"), true},
		{"fields row", "fields row=cmd:client|list eq=name",
			info("id=3 name=a cmd=client|list\nid=4 name=b cmd=get\n"), info("id=7 name=a cmd=client|list\n"), true},
		{"fields row missing", "fields row=cmd:client|list eq=name",
			info("id=3 name=a cmd=client|list\n"), info("id=7 name=a cmd=get\n"), false},
		{"fields kv line count", "fields has=id",
			info("id=3\nid=4\n"), info("id=3\n"), false},
		{"fields map", "fields eq=proto has=id",
			"%2\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:5\r\n", "%2\r\n$2\r\nid\r\n:6\r\n$5\r\nproto\r\n:3\r\n", true},
		{"fields map value differs", "fields eq=proto",
			"%1\r\n$5\r\nproto\r\n:3\r\n", "%1\r\n$5\r\nproto\r\n:2\r\n", false},
		{"fields flat array", "fields eq=proto",
			"*2\r\n$5\r\nproto\r\n:2\r\n", "*2\r\n$5\r\nproto\r\n:2\r\n", true},
		{"fields kinds differ", "fields has=proto",
			"*2\r\n$5\r\nproto\r\n:2\r\n", "%1\r\n$5\r\nproto\r\n:2\r\n", false},
		{"fields verbatim", "fields eq=a",
			"=9\r\ntxt:a:1\r\n\r\n", "=9\r\ntxt:a:1\r\n\r\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Compare([]byte(tc.ref), []byte(tc.got), norms(t, tc.directive))
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
