package compat

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "regenerate docs/compat.md (TestReport)")

// reportPath is docs/compat.md at the repository root.
const reportPath = "../docs/compat.md"

// TestReport regenerates docs/compat.md with -update: it runs every case on
// redamo's backends, asks Redis for its command families and redamo for its
// commands, and sends every Redis command redamo lacks to record the reply.
// Without -update it checks that the checked-in report exists and was made
// from the current case files.
func TestReport(t *testing.T) {
	if !*update {
		data, err := os.ReadFile(reportPath)
		require.NoError(t, err, "docs/compat.md missing: run make compat")
		cases, err := LoadCases("testdata")
		require.NoError(t, err)
		if !strings.Contains(string(data), "\n"+strconv.Itoa(len(cases))+" cases.\n") {
			t.Logf("docs/compat.md was generated from a different set of cases (now %d): run make compat to refresh it", len(cases))
		}
		t.Skip("run with -update (make compat) to regenerate docs/compat.md")
	}
	ref, _ := redisServers(t)
	targets := redamoTargets(t)
	run := runSuite(t, targets)
	docs, err := FetchDocs(ref.Addr, replyTimeout)
	require.NoError(t, err)
	require.NotEmpty(t, docs)

	mem := targets[0]
	var unsupported []string
	for _, d := range docs {
		if !mem.Supports(d.Name) {
			unsupported = append(unsupported, d.Name)
		}
	}
	in := ReportInput{
		RedisVersion: redisVersion(t, ref),
		Docs:         docs,
		Supported:    mem.Commands,
		Unsupported:  ProbeUnsupported(mem.Addr, unsupported, replyTimeout),
		Cases:        run.cases,
		Required:     map[*Case][]string{},
		Results:      nil,
		Missing:      map[string]string{},
	}
	for _, c := range run.cases {
		in.Required[c] = run.runner.Required(c)
	}
	for _, r := range run.results {
		if r.Target != "redis2" {
			in.Results = append(in.Results, r)
		}
	}
	for _, tg := range targets {
		in.Targets = append(in.Targets, tg.Name)
	}
	if len(targets) == 1 {
		in.Targets = append(in.Targets, "dynamodb")
		in.Missing["dynamodb"] = "REDAMO_TEST_DYNAMODB_ENDPOINT not set"
	}
	for _, km := range loadKnownMismatches(t) {
		targets := "*"
		if km.targets != nil {
			var ts []string
			for tg := range km.targets {
				ts = append(ts, tg)
			}
			sort.Strings(ts)
			targets = strings.Join(ts, ",")
		}
		line := km.id + " (" + targets + "): " + km.reason
		if contains(run.stale, km.id) {
			line += " — STALE: now identical, remove the entry"
		}
		in.Known = append(in.Known, line)
	}
	sort.Strings(in.Known)
	require.NoError(t, os.MkdirAll(filepath.Dir(reportPath), 0o755))
	require.NoError(t, os.WriteFile(reportPath, []byte(RenderReport(in)), 0o644))
	t.Logf("wrote %s", reportPath)
}

// redisVersion asks the reference server for its version.
func redisVersion(t *testing.T, s *RedisServer) string {
	c, err := Dial(s.Addr, replyTimeout)
	require.NoError(t, err)
	defer c.Close()
	raw, err := c.DoStrings("INFO", "server")
	require.NoError(t, err)
	rep, err := Parse(raw)
	require.NoError(t, err)
	fs, err := fieldsOf(rep)
	require.NoError(t, err)
	return fs[0]["redis_version"]
}
