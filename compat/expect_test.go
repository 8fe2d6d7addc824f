package compat

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mustParse parses a raw reply written with \r\n line ends.
func mustParse(t *testing.T, raw string) *Reply {
	t.Helper()
	rep, err := Parse([]byte(raw))
	require.NoError(t, err, "reply %q", raw)
	return rep
}

// TestParseExpect parses each form, renders it back, and matches it
// against how each protocol encodes it.
func TestParseExpect(t *testing.T) {
	tests := []struct {
		in     string
		canon  string // String(); "" means in
		r2, r3 string // a matching RESP2 and RESP3 reply
	}{
		{in: "+OK", r2: "+OK\r\n", r3: "+OK\r\n"},
		{in: "+", r2: "+\r\n", r3: "+\r\n"},
		{in: "-ERR wrong number of arguments for 'get' command", r2: "-ERR wrong number of arguments for 'get' command\r\n", r3: "-ERR wrong number of arguments for 'get' command\r\n"},
		{in: "-ERR a, b] # not a comment", r2: "-ERR a, b] # not a comment\r\n", r3: "-ERR a, b] # not a comment\r\n"},
		{in: `-"ERR unknown command 'x', with args beginning with: "`, r2: "-ERR unknown command 'x', with args beginning with: \r\n", r3: "-ERR unknown command 'x', with args beginning with: \r\n"},
		{in: `+"OK"`, canon: "+OK", r2: "+OK\r\n", r3: "+OK\r\n"},
		{in: ":5", r2: ":5\r\n", r3: ":5\r\n"},
		{in: ":-2", r2: ":-2\r\n", r3: ":-2\r\n"},
		{in: ":+7", canon: ":7", r2: ":7\r\n", r3: ":7\r\n"},
		{in: ":30000~200", r2: ":29800\r\n", r3: ":30200\r\n"},
		{in: `"v"`, r2: "$1\r\nv\r\n", r3: "$1\r\nv\r\n"},
		{in: `""`, r2: "$0\r\n\r\n", r3: "$0\r\n\r\n"},
		{in: `"a b\x00\xff\n"`, r2: "$6\r\na b\x00\xff\n\r\n", r3: "$6\r\na b\x00\xff\n\r\n"},
		{in: `"é"`, r2: "$2\r\né\r\n", r3: "$2\r\né\r\n"},
		{in: ",1.5", r2: "$3\r\n1.5\r\n", r3: ",1.5\r\n"},
		{in: ",inf", r2: "$3\r\ninf\r\n", r3: ",inf\r\n"},
		{in: "#t", r2: ":1\r\n", r3: "#t\r\n"},
		{in: "#f", r2: ":0\r\n", r3: "#f\r\n"},
		{in: "nil", r2: "$-1\r\n", r3: "_\r\n"},
		{in: "nilarray", r2: "*-1\r\n", r3: "_\r\n"},
		{in: "?", r2: ":1\r\n", r3: "%0\r\n"},
		{in: "[]", r2: "*0\r\n", r3: "*0\r\n"},
		{in: `[ "a" ,:1,nil ]`, canon: `["a", :1, nil]`, r2: "*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", r3: "*3\r\n$1\r\na\r\n:1\r\n_\r\n"},
		{in: `[+OK, -ERR x, [:1~1, ?], "]"]`, r2: "*4\r\n+OK\r\n-ERR x\r\n*2\r\n:2\r\n+any\r\n$1\r\n]\r\n", r3: "*4\r\n+OK\r\n-ERR x\r\n*2\r\n:0\r\n*0\r\n$1\r\n]\r\n"},
		{in: `[-"ERR a, b", +" x"]`, r2: "*2\r\n-ERR a, b\r\n+ x\r\n", r3: "*2\r\n-ERR a, b\r\n+ x\r\n"},
		{in: `~["a", "b"]`, r2: "*2\r\n$1\r\nb\r\n$1\r\na\r\n", r3: "~2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{in: "~[]", r2: "*0\r\n", r3: "~0\r\n"},
		{in: `{"a": "1", "b": [:1]}`, r2: "*4\r\n$1\r\nb\r\n*1\r\n:1\r\n$1\r\na\r\n$1\r\n1\r\n", r3: "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n*1\r\n:1\r\n"},
		{in: `{:1: nilarray}`, r2: "*2\r\n:1\r\n*-1\r\n", r3: "%1\r\n:1\r\n_\r\n"},
		{in: "{}", r2: "*0\r\n", r3: "%0\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			e, err := ParseExpect(tc.in)
			require.NoError(t, err)
			canon := tc.canon
			if canon == "" {
				canon = tc.in
			}
			require.Equal(t, canon, e.String())
			again, err := ParseExpect(e.String())
			require.NoError(t, err)
			require.Equal(t, e, again, "String must read back the same")
			now := time.Now()
			require.NoError(t, e.Match(mustParse(t, tc.r2), 2, now), "RESP2")
			require.NoError(t, e.Match(mustParse(t, tc.r3), 3, now), "RESP3")
		})
	}
}

// TestExpectMismatch proves each form fails on what it must not accept,
// with a message naming the difference.
func TestExpectMismatch(t *testing.T) {
	tests := []struct {
		want  string
		proto int
		got   string
		why   string
	}{
		{"+OK", 2, "+QUEUED\r\n", "want +OK, got +QUEUED"},
		{"+OK", 2, "$2\r\nOK\r\n", `want +OK, got "OK"`},
		{"-ERR x", 2, "-ERR y\r\n", "want -ERR x, got -ERR y"},
		{"-ERR x", 3, "-ERR x \r\n", `got -"ERR x "`},
		{"-ERR x", 2, "+ERR x\r\n", "got +ERR x"},
		{":5", 2, ":6\r\n", "want :5, got :6"},
		{":5", 2, "$1\r\n5\r\n", `want :5, got "5"`},
		{":30000~200", 2, ":29799\r\n", "want :30000~200 (30000±200), got 29799 (off by -201)"},
		{":30000~200", 3, ":30201\r\n", "off by 201"},
		{`"v"`, 2, "$1\r\nw\r\n", `want "v", got "w"`},
		{`"v"`, 2, "$-1\r\n", `want "v", got nil`},
		{",1.5", 3, "$3\r\n1.5\r\n", `want ,1.5, got "1.5"`},
		{",1.5", 2, ",1.5\r\n", "got ,1.5"},
		{"#t", 3, ":1\r\n", "want #t, got :1"},
		{"#t", 2, ":0\r\n", "got :0"},
		{"nil", 2, "_\r\n", "want nil"},
		{"nil", 3, "$-1\r\n", "want nil"},
		{"nil", 2, "*-1\r\n", "want nil, got nilarray"},
		{"nilarray", 2, "$-1\r\n", "want nilarray, got nil"},
		{"nilarray", 3, "*0\r\n", "want nilarray, got []"},
		{"?", 2, "-ERR x\r\n", "want ?, got -ERR x"},
		{`["a", "b"]`, 2, "*2\r\n$1\r\nb\r\n$1\r\na\r\n", `[0]: want "a", got "b"`},
		{`["a"]`, 2, "*2\r\n$1\r\na\r\n$1\r\na\r\n", "want 1 elements, got 2"},
		{`["a"]`, 3, "~1\r\n$1\r\na\r\n", `want ["a"], got ~["a"]`},
		{`[[:1, :2]]`, 2, "*1\r\n*2\r\n:1\r\n:3\r\n", "[0][1]: want :2, got :3"},
		{`~["a", "b"]`, 3, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", `want ~["a", "b"], got ["a", "b"]`},
		{`~["a", "b"]`, 2, "*2\r\n$1\r\na\r\n$1\r\nc\r\n", `got ["a", "c"]`},
		{`~["a", "a"]`, 2, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", `got ["a", "b"]`},
		{`{"a": "1"}`, 3, "*2\r\n$1\r\na\r\n$1\r\n1\r\n", `want {"a": "1"}, got ["a", "1"]`},
		{`{"a": "1"}`, 2, "%1\r\n$1\r\na\r\n$1\r\n1\r\n", `got {"a": "1"}`},
		{`{"a": "1"}`, 2, "*2\r\n$1\r\na\r\n$1\r\n2\r\n", `{"a"}: want "1", got "2"`},
		{`{"a": "1"}`, 3, "%1\r\n$1\r\nb\r\n$1\r\n1\r\n", `unexpected key "b"`},
		{`{"a": "1", "b": "2"}`, 3, "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n1\r\n", `unexpected key "a"`},
		{`{"a": "1"}`, 2, "*1\r\n$1\r\na\r\n", "want 2 elements, got 1"},
		{"+OK", 3, "|1\r\n+k\r\n+v\r\n+OK\r\n", "unexpected attributes"},
	}
	for _, tc := range tests {
		t.Run(tc.want+" "+tc.got, func(t *testing.T) {
			e, err := ParseExpect(tc.want)
			require.NoError(t, err)
			err = e.Match(mustParse(t, tc.got), tc.proto, time.Now())
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.why)
		})
	}
}

// TestExpectClock checks :$now and :$nowms against the time the command
// was sent.
func TestExpectClock(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		want  string
		got   int64
		match bool
	}{
		{":$nowms~2000", 1_700_000_000_123, true},
		{":$nowms~2000", 1_700_000_002_123, true},
		{":$nowms~2000", 1_699_999_998_123, true},
		{":$nowms~2000", 1_700_000_002_124, false},
		{":$nowms~2000", 1_699_999_998_122, false},
		{":$nowms+30000~50", 1_700_000_030_150, true},
		{":$nowms+30000~50", 1_700_000_030_174, false},
		{":$nowms-500", 1_699_999_999_623, true},
		{":$nowms", 1_700_000_000_124, false},
		{":$now", 1_700_000_000, true},
		{":$now+100~1", 1_700_000_101, true},
		{":$now+100~1", 1_700_000_102, false},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			e, err := ParseExpect(tc.want)
			require.NoError(t, err)
			require.Equal(t, tc.want, e.String())
			rep := &Reply{Kind: ':', Str: strconv.AppendInt(nil, tc.got, 10)}
			err = e.Match(rep, 2, now)
			if tc.match {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Contains(t, err.Error(), "off by")
			}
		})
	}
}

func TestParseExpectErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"   ",
		"OK",
		"1",
		"nul",
		"#x",
		":",
		":x",
		":5~",
		":5~-1",
		":5~x",
		":$nowx",
		":$now5",
		":$nowms~",
		`"unterminated`,
		`"bad \q escape"`,
		"`raw`",
		`-"unterminated`,
		",abc",
		",",
		"[",
		`["a"`,
		`["a" "b"]`,
		`["a",]`,
		"~",
		`~("a")`,
		"~[?]",
		`~[:1~1]`,
		`~[:$now]`,
		`{"a"}`,
		`{"a": 1}`,
		`{"a" "1"}`,
		`{?: "1"}`,
		`{+k: "1"}`,
		`{:1~2: "1"}`,
		`{"a": :1, "a": :2}`,
		`{"a": :1`,
		`"a" "b"`,
		`nil nil`,
	} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseExpect(in)
			require.Error(t, err)
		})
	}
}

// TestNotation renders replies in the notation and reads them back as
// expectations that match them, over both protocols.
func TestNotation(t *testing.T) {
	tests := []struct {
		proto int
		raw   string
		want  string
	}{
		{2, "+OK\r\n", "+OK"},
		{2, "-ERR x, y\r\n", "-ERR x, y"},
		{2, "*1\r\n-ERR x, y\r\n", `[-"ERR x, y"]`},
		{2, "-ERR trailing \r\n", `-"ERR trailing "`},
		{2, ":-3\r\n", ":-3"},
		{2, "$3\r\na\x00\"\r\n", `"a\x00\""`},
		{2, "$-1\r\n", "nil"},
		{2, "*-1\r\n", "nilarray"},
		{3, "_\r\n", "nil"},
		{3, ",2.5\r\n", ",2.5"},
		{3, "#f\r\n", "#f"},
		{2, "*2\r\n$1\r\na\r\n*0\r\n", `["a", []]`},
		{3, "~1\r\n:1\r\n", "~[:1]"},
		{3, "%1\r\n$1\r\nk\r\n+v\r\n", `{"k": +v}`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			rep := mustParse(t, tc.raw)
			require.Equal(t, tc.want, Notation(rep))
			e, err := ParseExpect(Notation(rep))
			require.NoError(t, err)
			require.NoError(t, e.Match(rep, tc.proto, time.Now()))
		})
	}
}
