package commands

import (
	"bufio"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func unquoteFields(t *testing.T, line string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range strings.Split(line, "\t") {
		s, err := strconv.Unquote(f)
		require.NoError(t, err, f)
		out = append(out, []byte(s))
	}
	return out
}

// TestGlobMatchesRedisKeys replays KEYS results recorded from redis-server
// 7.0.15 over a set of awkward keys (binary, brackets, escapes).
func TestGlobMatchesRedisKeys(t *testing.T) {
	f, err := os.Open("testdata/glob.tsv")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var keys [][]byte
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := unquoteFields(t, line)
		if keys == nil {
			keys = fields
			continue
		}
		pat, want := fields[0], fields[1:]
		var got []string
		for _, k := range keys {
			if globMatch(pat, k) {
				got = append(got, string(k))
			}
		}
		sort.Strings(got)
		wantS := make([]string, len(want))
		for i, w := range want {
			wantS[i] = string(w)
		}
		if len(wantS) == 0 {
			wantS = nil
		}
		require.Equal(t, wantS, got, "pattern %q", pat)
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 300)
}

func TestGlobNesting(t *testing.T) {
	key := []byte(strings.Repeat("a", 3000))
	for _, tc := range []struct {
		pattern string
		match   bool
	}{
		// Measured on redis-server 7.0.15: one nesting level per '*' that
		// recurses, more than 1000 never match.
		{strings.Repeat("*a", 1000) + "*", true},
		{strings.Repeat("*a", 1001) + "*", false},
		{strings.Repeat("a*", 1001), true},
		{strings.Repeat("a*", 1500), false},
	} {
		require.Equal(t, tc.match, globMatch([]byte(tc.pattern), key), "%d bytes", len(tc.pattern))
	}
}

func TestGlobPrefix(t *testing.T) {
	for _, tc := range []struct{ pattern, prefix string }{
		{"*", ""}, {"user:*", "user:"}, {"a?b", "a"}, {"ab[c]", "ab"}, {`a\*`, "a"}, {"abc", "abc"},
	} {
		require.Equal(t, tc.prefix, string(globPrefix([]byte(tc.pattern))), tc.pattern)
	}
}

// A pattern that is exponential for naive backtracking must finish quickly.
func BenchmarkGlobPathological(b *testing.B) {
	b.ReportAllocs()
	pat := []byte(strings.Repeat("a*", 40) + "b")
	key := []byte(strings.Repeat("a", 200))
	for i := 0; i < b.N; i++ {
		globMatch(pat, key)
	}
}
