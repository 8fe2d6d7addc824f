package lua51

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tsvCase is a line of a case file: a Lua source and what Redis 7.0.15
// answered for it.
type tsvCase struct {
	line       int
	src, reply string
}

// readCases reads a case file: Go-quoted fields separated by a tab,
// lines starting with # ignored.
func readCases(t *testing.T, path string) []tsvCase {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var cases []tsvCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 2, "%s:%d", path, n)
		src, err := strconv.Unquote(fields[0])
		require.NoError(t, err, "%s:%d", path, n)
		reply, err := strconv.Unquote(fields[1])
		require.NoError(t, err, "%s:%d", path, n)
		cases = append(cases, tsvCase{n, src, reply})
	}
	require.NoError(t, sc.Err())
	return cases
}

// TestCheck: the first syntax error of each script in
// testdata/syntax.tsv, as redis-server 7.0.15 words it for SCRIPT LOAD
// (after "ERR Error compiling script (new function): "; OK when Redis
// compiles the script).
func TestCheck(t *testing.T) {
	for _, c := range readCases(t, "testdata/syntax.tsv") {
		got := "OK"
		if err := Check(c.src, "@user_script"); err != nil {
			got = err.Error()
		}
		require.Equal(t, c.reply, got, "syntax.tsv:%d: %q", c.line, c.src)
	}
}

// TestSyntaxFallback: when Check finds no error in code gopher-lua
// refused, Syntax rewords gopher-lua's message where the two agree.
func TestSyntaxFallback(t *testing.T) {
	// goto is Lua 5.2's: gopher-lua takes it, Lua 5.1 does not; the code
	// below is valid Lua 5.1, so these messages stand for any refusal
	// Check cannot explain.
	const valid = "local x = 1\nreturn x"
	for _, tc := range []struct{ msg, source, want string }{
		{"user_script line:1(column:8) near '+':   syntax error ", "@user_script", "user_script:1: unexpected symbol near '+'"},
		{"user_script at EOF:   syntax error ", "@user_script", "user_script:2: unexpected symbol near '<eof>'"},
		{"user_function at EOF:   unterminated string ", "@user_function", "user_function:2: unfinished string near '<eof>'"},
		{"[string \"local x = 1...\"] line:2(column:3) near 'x':   parse error ", valid, `[string "local x = 1..."]:2: unexpected symbol near 'x'`},
		{"something else", "@user_script", "something else"},
	} {
		require.Equal(t, tc.want, Syntax(valid, tc.source, tc.msg), tc.msg)
	}
	// Check's finding comes first.
	require.Equal(t, "user_script:1: '<name>' expected near '<eof>'", Syntax("for", "@user_script", "user_script at EOF:   syntax error "))
}

func TestChunkID(t *testing.T) {
	long := strings.Repeat("y", 100)
	for _, tc := range []struct{ source, syntax, runtime string }{
		{"@user_script", "user_script", "user_script"},
		{"=(load)", "(load)", "(load)"},
		{"return +", `[string "return +"]`, `[string "return +"]`},
		{"x = 1\nreturn x", `[string "x = 1..."]`, `[string "x = 1..."]`},
		{"\x1bLuaQ\x00\x01\x04", "[string \"\x1bLuaQ\"]", "[string \"\x1bLuaQ\"]"},
		{long, `[string "` + long[:63] + `..."]`, `[string "` + long[:43] + `..."]`},
		{"@" + long, "..." + long[len(long)-72:], "..." + long[len(long)-52:]},
		{"=" + long, long[:79], long[:59]},
	} {
		require.Equal(t, tc.syntax, SyntaxChunkID(tc.source), tc.source)
		require.Equal(t, tc.runtime, RuntimeChunkID(tc.source), tc.source)
	}
}
