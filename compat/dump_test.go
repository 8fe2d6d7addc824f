package compat

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDumpTranscript is a tool for writing cases: with
// REDAMO_COMPAT_DUMP=out.txt (and optionally REDAMO_COMPAT_DUMP_MATCH=regexp
// on case ids) it writes Redis's reply to every command of every case, so a
// case author can read what a case really exercises.
func TestDumpTranscript(t *testing.T) {
	out := os.Getenv("REDAMO_COMPAT_DUMP")
	if out == "" {
		t.Skip("set REDAMO_COMPAT_DUMP=file to write a transcript of Redis's replies")
	}
	ref, _ := redisServers(t)
	cases, err := LoadCases("testdata")
	require.NoError(t, err)
	match := regexp.MustCompile(os.Getenv("REDAMO_COMPAT_DUMP_MATCH"))
	var b strings.Builder
	for _, c := range cases {
		if !match.MatchString(c.ID()) {
			continue
		}
		s := &session{t: redisTarget("redis", ref)}
		require.NoError(t, s.setup(2))
		fmt.Fprintf(&b, "== %s\n", c.ID())
		for _, st := range c.Steps {
			if st.Sleep > 0 {
				time.Sleep(st.Sleep)
				fmt.Fprintf(&b, "   sleep %v\n", st.Sleep)
				continue
			}
			args := st.Render(time.Now(), "")
			rep := s.run(st, args)
			fmt.Fprintf(&b, "   %s\n      -> %s\n", formatArgs(args), strings.ReplaceAll(describe(rep), "\n", " "))
		}
		s.close()
	}
	require.NoError(t, os.WriteFile(out, []byte(b.String()), 0o644))
}
