package compat

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The suite's servers live for the whole test binary: starting a
// redis-server per test would dominate the run time.
var servers struct {
	once       sync.Once
	ref, twin  *RedisServer
	err        error
	startedAll []*RedisServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, s := range servers.startedAll {
		s.Stop()
	}
	os.Exit(code)
}

// requireAll is true in make test: what would be skipped must fail instead.
func requireAll() bool { return os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" }

// skipOrFail skips the test, or fails it under make test.
func skipOrFail(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if requireAll() {
		t.Fatalf("%s (REDAMO_TEST_REQUIRE_DYNAMODB=1: this must run)", msg)
	}
	t.Skip(msg)
}

// redisServers returns the reference redis-server and a second one (the twin)
// that checks every case file is deterministic against Redis itself.
func redisServers(t testing.TB) (ref, twin *RedisServer) {
	t.Helper()
	if _, err := RedisServerPath(); err != nil {
		skipOrFail(t, "%v", err)
	}
	servers.once.Do(func() {
		for _, p := range []**RedisServer{&servers.ref, &servers.twin} {
			s, err := StartRedis()
			if err != nil {
				servers.err = err
				return
			}
			*p = s
			servers.startedAll = append(servers.startedAll, s)
		}
	})
	require.NoError(t, servers.err)
	return servers.ref, servers.twin
}

// replyTimeout bounds every reply; DynamoDB Local can be slow on a busy
// machine, and a hang must surface as a failure, not stall the run.
const replyTimeout = 15 * time.Second

func redisTarget(name string, s *RedisServer) *Target {
	return &Target{Name: name, Addr: s.Addr, Timeout: replyTimeout}
}

// redamoTarget describes a running redamo, with the commands its COMMAND
// reply lists.
func redamoTarget(t testing.TB, name, addr string) *Target {
	t.Helper()
	cmds, err := FetchCommands(addr, replyTimeout)
	if err != nil {
		// A redamo without a working COMMAND still gets a target: every case
		// is then reported as not run, and TestBaseline fails.
		t.Logf("%s: COMMAND failed: %v", name, err)
		cmds = map[string]bool{}
	}
	return &Target{Name: name, Addr: addr, Commands: cmds, Timeout: replyTimeout}
}

// knownMismatch is one allowed, reported mismatch.
type knownMismatch struct {
	id      string
	targets map[string]bool // nil: every target
	reason  string
	line    int
}

// loadKnownMismatches reads testdata/known_mismatches.txt: one line per
// entry, "file/case | TARGETS | reason", TARGETS a comma list or *.
func loadKnownMismatches(t testing.TB) map[string]*knownMismatch {
	t.Helper()
	out := map[string]*knownMismatch{}
	f, err := os.Open("testdata/known_mismatches.txt")
	if os.IsNotExist(err) {
		return out
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// " | " separates the fields: case ids may hold blanks.
		fields := strings.SplitN(line, " | ", 3)
		require.Len(t, fields, 3, "known_mismatches.txt:%d: want: file/case | TARGETS | reason", n)
		km := &knownMismatch{id: strings.TrimSpace(fields[0]), reason: strings.TrimSpace(fields[2]), line: n}
		if tgs := strings.TrimSpace(fields[1]); tgs != "*" {
			km.targets = map[string]bool{}
			for _, tg := range strings.Split(tgs, ",") {
				km.targets[strings.TrimSpace(tg)] = true
			}
		}
		out[km.id] = km
	}
	require.NoError(t, sc.Err())
	return out
}

func (km *knownMismatch) covers(target string) bool {
	return km != nil && (km.targets == nil || km.targets[target])
}
