package testserver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// SkipOrFail skips the test, or fails it when REDAMO_TEST_REQUIRE_DYNAMODB=1
// (make test), where everything must run.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvRequireDynamoDB) == "1" {
		t.Fatalf("%s (%s=1: this must run)", msg, EnvRequireDynamoDB)
	}
	t.Skip(msg)
}

// NodeModules returns the node binary for the npm project in dir (e.g.
// compat/clients/node), after making sure that dir/node_modules holds every
// dependency of dir/package.json at its pinned version: when one is missing
// or differs it runs `npm ci` (package-lock.json). Without node or npm the
// test is skipped (failed under make test).
//
// Test packages run in parallel and several drive the same directory, so
// the check and the install happen under an exclusive lock on dir: one
// installs, the others then find everything in place (npm ci removes
// node_modules first, which must not happen under a running script).
func NodeModules(t testing.TB, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		SkipOrFail(t, "node not installed: %v", err)
	}
	f, err := os.Open(dir)
	require.NoError(t, err)
	defer f.Close()
	unlock, err := lockFile(f)
	require.NoError(t, err, "lock %s", dir)
	defer unlock()

	missing := missingNodeModules(t, dir)
	if len(missing) == 0 {
		return node
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		SkipOrFail(t, "npm not installed (needed for %s): %v", strings.Join(missing, ", "), err)
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm ci in %s (for %s):\n%s", dir, strings.Join(missing, ", "), out)
	missing = missingNodeModules(t, dir)
	require.Empty(t, missing, "still missing after npm ci in %s", dir)
	return node
}

// missingNodeModules lists the dependencies of dir/package.json that
// dir/node_modules lacks or holds at another version.
func missingNodeModules(t testing.TB, dir string) []string {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &pkg), "%s/package.json", dir)
	var missing []string
	for name, want := range pkg.Dependencies {
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		// Some packages (redlock 5's betas) write "v" before the version.
		if err != nil || strings.TrimPrefix(got.Version, "v") != strings.TrimPrefix(want, "v") {
			missing = append(missing, name+"@"+want)
		}
	}
	sort.Strings(missing)
	return missing
}
