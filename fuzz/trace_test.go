package fuzz

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
)

// envTrace names a file of regression cases (a reproducer a run printed)
// for TestTrace.
const envTrace = "REDAMO_FUZZ_TRACE"

// TestTrace replays the first case of the file REDAMO_FUZZ_TRACE names on
// the memory store and prints every command with its reply (and Redis's,
// marked where they differ, for an oracle redis case): what to look at
// while fixing a finding.
//
//	REDAMO_FUZZ_TRACE=.cache/fuzz/x.txt go test ./fuzz -run TestTrace -v
func TestTrace(t *testing.T) {
	path := os.Getenv(envTrace)
	if path == "" {
		t.Skip(envTrace + " is not set")
	}
	data, err := os.ReadFile(path)
	if err != nil && !filepath.IsAbs(path) {
		// Relative to the repository, not to this package.
		data, err = os.ReadFile(filepath.Join("..", path))
	}
	require.NoError(t, err)
	cases, err := parseRegressions(path, data)
	require.NoError(t, err)
	require.NotEmpty(t, cases, path)
	p := cases[0].prog
	srv := startServer(t, "memory")
	// Without Redis, the reference side is redamo itself, on a second
	// server: both sides run the same commands from the same start.
	ref := startServer(t, "memory").addr
	if p.redis {
		ref = compat.ReferenceRedis(t, "REDAMO_FUZZ_REDIS_ADDR")
	}
	d := &diffRun{redis: ref, redamo: srv.addr, proto: p.proto}
	require.NoError(t, d.restart(p.writes[0]))
	defer d.close()
	for _, w := range p.writes[1:] {
		if w.raw != nil {
			t.Logf("raw %q (not traced)", cut(string(w.raw), 200))
			continue
		}
		want, errRef := d.rc.pipeline(w.cmds)
		got, errGot := d.dc.pipeline(w.cmds)
		for i, c := range w.cmds {
			var a, b string
			if i < len(want) {
				a = want[i].text()
			}
			if i < len(got) {
				b = got[i].text()
			}
			switch {
			case !p.redis:
				t.Logf("   %s\n      %s", cut(formatCommand(c), 300), cut(b, 300))
			case a == b:
				t.Logf("   %s\n      both   %s", cut(formatCommand(c), 300), cut(b, 300))
			default:
				t.Logf("!! %s\n      redis  %s\n      redamo %s", cut(formatCommand(c), 300), cut(a, 300), cut(b, 300))
			}
		}
		require.NoError(t, errGot, "redamo")
		require.NoError(t, errRef, "reference")
	}
}
