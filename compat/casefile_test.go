package compat

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseCases(t *testing.T) {
	src := `
# a comment
case plain
SET k "a b\x00\xff" 'lit\x'   # trailing comment
GET k | oneof x nil
sleep 15

case opts
with o [] [EX 10] ["PX" 5]
with v 1 "two"
skip dynamodb too big for an item
nomulti uses a sleep-free path
SET k $v $o
TTL k | approx 1 | sort 0
`
	cases, err := ParseCases("f", []byte(src))
	require.NoError(t, err)
	var names []string
	for _, c := range cases {
		names = append(names, c.ID())
	}
	require.Equal(t, []string{
		"f/plain",
		`f/opts[o=,v=1]`, `f/opts[o=,v="two"]`,
		`f/opts[o=EX 10,v=1]`, `f/opts[o=EX 10,v="two"]`,
		`f/opts[o="PX" 5,v=1]`, `f/opts[o="PX" 5,v="two"]`,
	}, names)

	plain := cases[0]
	require.Len(t, plain.Steps, 3)
	require.Equal(t, [][]byte{[]byte("SET"), []byte("k"), []byte("a b\x00\xff"), []byte(`lit\x`)}, plain.Steps[0].Render(time.Now(), ""))
	require.Equal(t, []Norm{{Op: "oneof", Args: [][]byte{[]byte("x"), []byte("nil")}}}, plain.Steps[1].Norms)
	require.Equal(t, 15*time.Millisecond, plain.Steps[2].Sleep)

	ex := cases[3]
	require.Equal(t, "too big for an item", ex.Skip["dynamodb"])
	require.Equal(t, "uses a sleep-free path", ex.NoMulti)
	require.Equal(t, [][]byte{[]byte("SET"), []byte("k"), []byte("1"), []byte("EX"), []byte("10")}, ex.Steps[0].Render(time.Now(), ""))
	require.Len(t, ex.Steps[1].Norms, 2)
	require.Equal(t, [][]byte{[]byte("SET"), []byte("k"), []byte("1")}, cases[1].Steps[0].Render(time.Now(), ""))
}

func TestParseArgExpressions(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	tests := []struct {
		in   string
		want string
	}{
		{"$now", "1700000000"},
		{"$now+100", "1700000100"},
		{"$now-5", "1699999995"},
		{"$nowms+1000", "1700000001123"},
		{"$rep:5:ab", "ababa"},
		{"$rep:0:x", ""},
		{`"$now"`, "$now"},
		{"plain$", "plain$"},
		{"$uniq:lock", "run7:lock"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			cases, err := ParseCases("f", []byte("case c\nECHO "+tc.in+"\n"))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(cases[0].Steps[0].Render(now, "run7:")[1]))
		})
	}
	cases, err := ParseCases("f", []byte("case c\nECHO $bin:512\n"))
	require.NoError(t, err)
	seen := map[byte]bool{}
	for _, b := range cases[0].Steps[0].Render(now, "")[1] {
		seen[b] = true
	}
	require.Len(t, seen, 256, "$bin must cover every byte value")
}

// Every command FormatCommand writes reads back unchanged, long arguments
// included (written as $rep and $bin).
func TestFormatCommandRoundTrip(t *testing.T) {
	bin, err := ParseCommand("$bin:300", time.Now())
	require.NoError(t, err)
	cases := []struct {
		args [][]byte
		line string
	}{
		{[][]byte{[]byte("SET"), []byte("k"), []byte("v")}, "SET k v"},
		{[][]byte{[]byte(""), []byte("a b"), []byte("\x00\r\n\"'"), []byte("$now"), []byte("#x")}, `"" "a b" "\x00\r\n\"'" "$now" "#x"`},
		{[][]byte{bytes.Repeat([]byte("ab:"), 100)}, "$rep:300:ab:"},
		{[][]byte{bytes.Repeat([]byte(" "), 100)}, `"` + strings.Repeat(" ", 100) + `"`},
		{bin, "$bin:300"},
	}
	for _, tc := range cases {
		line := FormatCommand(tc.args)
		require.Equal(t, tc.line, line)
		back, err := ParseCommand(line, time.Now())
		require.NoError(t, err, line)
		require.Equal(t, tc.args, back, line)
	}
}

func TestParseCasesErrors(t *testing.T) {
	tests := []struct{ name, src string }{
		{"command before case", "GET k\n"},
		{"case without name", "case\nGET k\n"},
		{"empty case", "case a\ncase b\nGET k\n"},
		{"with after command", "case a\nGET k\nwith v 1\n"},
		{"unterminated quote", "case a\nGET \"k\n"},
		{"bad escape", "case a\nGET \"\\q\"\n"},
		{"bad hex escape", "case a\nGET \"\\xzz\"\n"},
		{"quote glued to text", "case a\nGET \"k\"x\n"},
		{"unknown directive", "case a\nGET k | frobnicate\n"},
		{"directive arity", "case a\nGET k | approx\n"},
		{"bad approx", "case a\nGET k | approx x\n"},
		{"bad fields", "case a\nINFO | fields foo\n"},
		{"empty directive", "case a\nGET k |\n"},
		{"bad sleep", "case a\nsleep 0\n"},
		{"huge sleep", "case a\nsleep 60000\n"},
		{"unknown expression", "case a\nGET $later\n"},
		{"bad time offset", "case a\nEXPIREAT k $now*2\n"},
		{"unclosed group", "case a\nwith o [EX 10\nGET k\n"},
		{"skip without reason", "case a\nskip memory\nGET k\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCases("f", []byte(tc.src))
			require.Error(t, err)
		})
	}
}

// TestLoadCases parses the real case files: a syntax error in one fails here
// with its line number, before any server is involved.
func TestLoadCases(t *testing.T) {
	cases, err := LoadCases("testdata")
	require.NoError(t, err)
	require.NotEmpty(t, cases)
}

func TestParseRedamoOnly(t *testing.T) {
	src := `
case own
with v 1 2
redamo-only LOCK.* are redamo's own
SET k $v | expect +OK
SET k "a|b" | expect +OK
GET k | expect "a|b"
GET | expect -ERR wrong number of arguments for 'get' command
sleep 5
SMEMBERS s | sort | expect ~["x", "y"]
HGETALL h | expect2 ["a", "1"] | expect3 {"a": "1"}
EXISTS k	|	expect3 :1 | expect2 ?
ECHO "| expect :1" | expect "| expect :1"
PTTL k | expect :30000~200   
ECHO x | expect -ERR # part of the message
`
	cases, err := ParseCases("f", []byte(src))
	require.NoError(t, err)
	require.Len(t, cases, 2)
	c := cases[1]
	require.Equal(t, "LOCK.* are redamo's own", c.RedamoOnly)
	var got []string
	for _, st := range c.Steps {
		if st.Sleep > 0 {
			got = append(got, "sleep")
			continue
		}
		got = append(got, fmt.Sprintf("%s => %v / %v", bytes.Join(st.Render(time.Now(), ""), []byte(" ")), st.Expected(2), st.Expected(3)))
	}
	require.Equal(t, []string{
		`SET k 2 => +OK / +OK`,
		`SET k a|b => +OK / +OK`,
		`GET k => "a|b" / "a|b"`,
		`GET => -ERR wrong number of arguments for 'get' command / -ERR wrong number of arguments for 'get' command`,
		`sleep`,
		`SMEMBERS s => ~["x", "y"] / ~["x", "y"]`,
		`HGETALL h => ["a", "1"] / {"a": "1"}`,
		`EXISTS k => ? / :1`,
		`ECHO | expect :1 => "| expect :1" / "| expect :1"`,
		`PTTL k => :30000~200 / :30000~200`,
		`ECHO x => -ERR # part of the message / -ERR # part of the message`,
	}, got)
	require.Equal(t, []Norm{{Op: "sort"}}, c.Steps[5].Norms)
}

func TestParseRedamoOnlyErrors(t *testing.T) {
	tests := []struct{ name, src, why string }{
		{"no reason", "case a\nredamo-only\nGET k | expect nil\n", "want: redamo-only REASON"},
		{"command without expect", "case a\nredamo-only r\nSET k v | expect +OK\nGET k\n", "every command needs | expect"},
		{"expect hidden by a comment", "case a\nredamo-only r\nGET k # | expect nil\n", "every command needs | expect"},
		{"expect in a case against Redis", "case a\nGET k | expect nil\n", "expect is for redamo-only cases"},
		{"a directive comparing with Redis", "case a\nredamo-only r\nTTL k | approx 1 | expect :5\n", "directive approx compares with Redis"},
		{"a directive after expect", "case a\nredamo-only r\nKEYS * | expect [] | sort\n", "other directives come before expect"},
		{"expect2 alone", "case a\nredamo-only r\nGET k | expect2 nil\n", "expect2 and expect3 come together"},
		{"expect2 after an error", "case a\nredamo-only r\nGET k | expect2 -ERR x | expect3 nil\n", "expect2 and expect3 come together"},
		{"expect twice", "case a\nredamo-only r\nGET k | expect nil | expect nil\n", "RESP2 has an expected reply already"},
		{"expect and expect3", "case a\nredamo-only r\nGET k | expect nil | expect3 nil\n", "RESP3 has an expected reply already"},
		{"bad notation", "case a\nredamo-only r\nGET k | expect [nil\n", "unclosed ["},
		{"empty expect", "case a\nredamo-only r\nGET k | expect\n", "missing"},
		{"text after", "case a\nredamo-only r\nGET k | expect nil x\n", "text after the expected reply"},
		{"expect on a skip line", "case a\nredamo-only r\nskip memory why | expect nil\nGET k | expect nil\n", "expect goes on a command line"},
		{"expect on a case line", "case a | expect nil\nGET k\n", "expect goes on a command line"},
		{"expect without a command", "case a\nredamo-only r\n| expect nil\n", "expect without a command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCases("f", []byte(tc.src))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.why)
			require.Contains(t, err.Error(), "f.txt:")
		})
	}
}
