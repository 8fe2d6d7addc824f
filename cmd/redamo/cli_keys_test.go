package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// get --default, delete --if-value, inc/dec without and with --create,
// get-counter, list --limit and --format keys, expire, ttl and ltrim: their
// answers and exit codes, the same on every path.
func TestCLIKeyVerbs(t *testing.T) {
	steps := []cliStep{
		{a("get", "k", "--default", "none"), 0, `{"key":"k","value":"none","default":true}`, ""},
		{a("get", "k", "--default", "none", "--format", "value"), 0, "none", ""},
		{a("set", "k", "v"), 0, `{"key":"k","value":"v","set":true}`, ""},
		{a("get", "k", "--default", "none"), 0, `{"key":"k","value":"v"}`, ""},
		// Conditional delete: another value, no key, the value.
		{a("delete", "k", "--if-value", "w"), 1, `{"key":"k","deleted":false}`, `redamo: k holds another value than "w": nothing deleted`},
		{a("get", "k"), 0, `{"key":"k","value":"v"}`, ""},
		{a("delete", "nothing", "--if-value", "v"), 1, `{"key":"nothing","deleted":false}`, "redamo: no key nothing: nothing deleted"},
		{a("delete", "k", "--if-value", "v"), 0, `{"key":"k","deleted":true}`, ""},
		{a("exists", "k"), 1, `{"key":"k","exists":false}`, ""},
		{a("sadd", "s", "m"), 0, `{"key":"s","added":1}`, ""},
		{a("delete", "s", "--if-value", "m"), 2, "", "WRONGTYPE"},
		// Counters: a missing one is not created without --create.
		{a("inc", "c"), 1, `{"key":"c","value":null}`, "redamo: no counter c: nothing changed (--create starts it at 0)"},
		{a("dec", "c", "--by", "2"), 1, `{"key":"c","value":null}`, "no counter c"},
		{a("exists", "c"), 1, `{"key":"c","exists":false}`, ""},
		{a("get-counter", "c"), 1, `{"key":"c","value":null,"type":"counter"}`, ""},
		{a("inc", "c", "--create"), 0, `{"key":"c","value":1}`, ""},
		{a("inc", "c", "--by", "10"), 0, `{"key":"c","value":11}`, ""},
		{a("dec", "c", "--by", "2"), 0, `{"key":"c","value":9}`, ""},
		{a("dec", "c"), 0, `{"key":"c","value":8}`, ""},
		{a("dec", "d", "--create", "--by", "3"), 0, `{"key":"d","value":-3}`, ""},
		{a("get-counter", "c"), 0, `{"key":"c","value":8,"type":"counter"}`, ""},
		{a("get-counter", "c", "--format", "value"), 0, "8", ""},
		{a("set", "str", "abc"), 0, `{"key":"str","value":"abc","set":true}`, ""},
		{a("get-counter", "str"), 1, `{"key":"str","value":null,"type":"counter"}`, `redamo: str holds "abc", which is not an integer counter`},
		{a("inc", "str"), 2, "", "redamo: ERR value is not an integer or out of range"},
		{a("get-counter", "s"), 2, "", "WRONGTYPE"},
		// list --limit and --format keys.
		{a("list", "--limit", "2"), 0, `{"prefix":"","keys":["c","d"]}`, ""},
		{a("list", "s", "--limit", "5", "--format", "keys"), 0, "s\nstr", ""},
		{a("list", "--limit", "0"), 2, "", "--limit 0: must be positive"},
		{a("get", "c", "--format", "keys"), 2, "", "--format keys: only for list"},
		// Expiry.
		{a("ttl", "c"), 0, `{"key":"c","exists":true,"pttl_ms":null}`, ""},
		{a("ttl", "nothing"), 1, `{"key":"nothing","exists":false}`, ""},
		{a("expire", "nothing", "1m"), 1, `{"key":"nothing","expires":false}`, ""},
		{a("expire", "c", "1h"), 0, `{"key":"c","expires":true,"ttl_ms":3600000}`, ""},
		{a("ttl", "c"), 0, `{"key":"c","exists":true,"pttl_ms":N}`, ""},
		{a("expire", "c", "5"), 2, "", "redamo: expire 5: a duration needs a unit"},
		{a("expire", "c", "0s"), 2, "", "must be at least 1ms"},
		// ltrim.
		{a("rpush", "l", "a", "b", "c", "d"), 0, `{"key":"l","length":4}`, ""},
		{a("ltrim", "l", "1", "-2"), 0, `{"key":"l","start":1,"stop":-2}`, ""},
		{a("lrange", "l"), 0, `{"key":"l","values":["b","c"]}`, ""},
		{a("ltrim", "l", "5", "9"), 0, `{"key":"l","start":5,"stop":9}`, ""},
		{a("exists", "l"), 1, `{"key":"l","exists":false}`, ""},
		{a("ltrim", "l", "x", "1"), 2, "", `ltrim: "x" is not an index`},
		{a("ltrim", "str", "0", "1"), 2, "", "WRONGTYPE"},
	}
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) { runSteps(t, p, nil, steps) })
	}
}

// raceDeleteScript deletes each of n keys with --if-value and records the
// ones it deleted; any other exit than 0 or 1 is a failure.
const raceDeleteScript = `set -u
id=$1 n=$2 out=$3
shift 3
for i in $(seq 1 "$n"); do
	redamo delete "tok-$i" --if-value x --quiet "$@"
	case $? in
	0) echo "$i $id" >>"$out" ;;
	1) ;;
	*) echo "failed $i $id" >>"$out" ;;
	esac
done
`

// Two scripts race to delete the same keys with delete --if-value: each
// key is deleted by exactly one of them, on every path.
func TestCLIShellConditionalDeleteRace(t *testing.T) {
	bin := buildCLI(t)
	const n = 15
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			for i := 1; i <= n; i++ {
				runSteps(t, p, nil, []cliStep{{a("set", fmt.Sprint("tok-", i), "x", "--quiet"), 0, "", ""}})
			}
			dir := t.TempDir()
			script := filepath.Join(dir, "race.sh")
			require.NoError(t, os.WriteFile(script, []byte(raceDeleteScript), 0o755))
			out := filepath.Join(dir, "deleted.log")
			var wg sync.WaitGroup
			logs := make([][]byte, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command("bash", append([]string{script, strconv.Itoa(i), strconv.Itoa(n), out}, p.flags...)...)
					cmd.Env = shellEnv(bin)
					testproc.Prepare(cmd)
					logs[i], errs[i] = cmd.CombinedOutput()
				}()
			}
			wg.Wait()
			for i := range 2 {
				require.NoError(t, errs[i], "script %d: %s", i, logs[i])
				require.Empty(t, string(logs[i]), "script %d printed", i)
			}
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			deleted := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.Fields(line)
				require.Len(t, f, 2, "%s", b)
				deleted[f[0]]++
			}
			require.Len(t, deleted, n, "every key deleted:\n%s", b)
			for k, c := range deleted {
				require.Equal(t, 1, c, "key tok-%s deleted by both:\n%s", k, b)
			}
			runSteps(t, p, nil, []cliStep{{a("list", "tok-"), 0, `{"prefix":"tok-","keys":[]}`, ""}})
		})
	}
}

// In-process, delete --if-value is one conditional DeleteItem: the
// compare-and-delete script's fast path.
func TestCLIDeleteIfValueRequests(t *testing.T) {
	for _, p := range cliPaths(t) {
		if serverAddr(p) != "" {
			continue
		}
		runSteps(t, p, nil, []cliStep{{a("set", "k", "v", "--quiet"), 0, "", ""}})
		code, _, errOut := cliRun(t, nil, withFlags(a("delete", "k", "--if-value", "v", "--verbose"), p.flags)...)
		require.Equal(t, exitOK, code, errOut)
		require.Regexp(t, `redamo: -> 1 in .*; DynamoDB requests so far: \d+ \(.*DeleteItem 1[,)]`, errOut)
		require.NotContains(t, errOut, "TransactWriteItems")
	}
}

// REDAMO_DEFAULT_TTL, REDAMO_LOCK_TTL and REDAMO_QUEUE_VISIBILITY give
// set's, lock's and queue pop's durations their defaults; a flag wins; a
// bad value exits 2 naming the variable. On every path.
func TestCLIEnvDefaults(t *testing.T) {
	env := map[string]string{
		"REDAMO_DEFAULT_TTL": "1h", "REDAMO_LOCK_TTL": "2m", "REDAMO_QUEUE_VISIBILITY": "0s", "REDAMO_OWNER": "me",
	}
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			runSteps(t, p, env, []cliStep{
				{a("set", "k", "v"), 0, `{"key":"k","value":"v","set":true,"ttl_ms":3600000}`, ""},
				{a("ttl", "k"), 0, `{"key":"k","exists":true,"pttl_ms":N}`, ""},
				{a("set", "k2", "v", "--ttl", "1m"), 0, `{"key":"k2","value":"v","set":true,"ttl_ms":60000}`, ""},
				{a("lock", "acquire", "L"), 0, `{"lock":"L","owner":"me","acquired":true,"fence":1,"ttl_ms":120000}`, ""},
				{a("lock", "extend", "L"), 0, `{"lock":"L","owner":"me","extended":true,"ttl_ms":120000}`, ""},
				{a("lock", "extend", "L", "--ttl", "10s"), 0, `{"lock":"L","owner":"me","extended":true,"ttl_ms":10000}`, ""},
				{a("leader", "elect", "P", "--id", "n"), 0, `{"pool":"P","id":"n","elected":true,"term":1,"ttl_ms":30000}`, ""},
				// A visibility timeout of 0 takes the message for good (no receipt).
				{a("queue", "push", "Q", "m"), 0, `{"queue":"Q","message_id":"N"}`, ""},
				{a("queue", "pop", "Q"), 0, `{"queue":"Q","message_id":"N","receipt":null,"payload":"m","deliveries":1}`, ""},
				{a("queue", "pop", "Q"), 1, `{"queue":"Q","message_id":null}`, ""},
				{a("queue", "push", "Q", "m2"), 0, `{"queue":"Q","message_id":"N"}`, ""},
				{a("queue", "pop", "Q", "--visibility-timeout", "1m"), 0, `{"queue":"Q","message_id":"N","receipt":"N","payload":"m2","deliveries":1}`, ""},
			})
			runSteps(t, p, map[string]string{"REDAMO_DEFAULT_TTL": "5"}, []cliStep{
				{a("set", "k", "v"), 2, "", "redamo: REDAMO_DEFAULT_TTL=5: a duration needs a unit"},
				{a("set", "k", "v", "--ttl", "1s"), 0, `{"key":"k","value":"v","set":true,"ttl_ms":1000}`, ""},
			})
			runSteps(t, p, map[string]string{"REDAMO_LOCK_TTL": "x"}, []cliStep{
				{a("lock", "acquire", "L2", "--owner", "o"), 2, "", `redamo: REDAMO_LOCK_TTL="x": not a duration`},
			})
		})
	}
}

// --quiet and --verbose on every path; --profile picks the credentials
// of the table's AWS profile (DynamoDB Local keeps tables per access key).
func TestCLIGlobalFlags(t *testing.T) {
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			runSteps(t, p, nil, []cliStep{
				{a("set", "k", "v", "--quiet"), 0, "", ""},
				{a("get", "nothing", "--quiet"), 1, "", ""},
				{a("delete", "k", "--if-value", "w", "--quiet"), 1, "", ""},
				{a("inc", "k", "--quiet"), 2, "", "redamo: ERR value is not an integer or out of range"},
			})
			code, out, errOut := cliRun(t, map[string]string{"REDAMO_VERBOSE": "1"}, withFlags(a("get", "k"), p.flags)...)
			require.Equal(t, exitOK, code, errOut)
			require.Equal(t, `{"key":"k","value":"v"}`+"\n", out)
			require.Regexp(t, `^redamo: GET k \((redamo at|table) .*\)\nredamo: -> "v" in `, errOut)
			if serverAddr(p) == "" {
				require.Regexp(t, `DynamoDB requests so far: \d+ \(.*GetItem 1`, errOut)
			}
		})
	}
	ep := os.Getenv(testserver.EnvEndpoint)
	if ep == "" {
		return
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	creds := filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(config, []byte("[profile tables]\nregion = us-east-1\n"), 0o600))
	require.NoError(t, os.WriteFile(creds, []byte("[tables]\naws_access_key_id = redamotest\naws_secret_access_key = redamotest\n"), 0o600))
	t.Setenv("AWS_CONFIG_FILE", config)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "redamotest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "redamotest")
	table := newTable(t, ep)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	p := cliPath{"profile", []string{"--endpoint", ep, "--table", table}}
	runSteps(t, p, nil, []cliStep{
		{a("set", "k", "v", "--profile", "tables"), 0, `{"key":"k","value":"v","set":true}`, ""},
		{a("get", "k", "--profile", "tables"), 0, `{"key":"k","value":"v"}`, ""},
	})
	runSteps(t, p, map[string]string{"AWS_PROFILE": "tables"}, []cliStep{{a("get", "k"), 0, `{"key":"k","value":"v"}`, ""}})
	runSteps(t, p, nil, []cliStep{
		{a("get", "k", "--profile", "nope"), 3, "", "failed to get shared config profile, nope"},
	})
}
