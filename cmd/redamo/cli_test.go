package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/internal/testserver"
)

// cliRun runs the CLI in-process as the binary would, with env as its
// whole environment (the AWS SDK still reads the process's own).
func cliRun(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = realMain(args, func(k string) string { return env[k] }, &out, &errb)
	return code, out.String(), errb.String()
}

// cliPath is one way of running the CLI: the flags that say where.
type cliPath struct {
	name  string
	flags []string
}

// cliPaths returns where a test runs the CLI, each on a fresh, empty
// store: through a running server on the memory store always; with
// DynamoDB Local, in-process on a table (no server at all) and through a
// server on a table. Every path must give the same output.
func cliPaths(t *testing.T) []cliPath {
	t.Helper()
	paths := []cliPath{{"server-memory", []string{"--server", testserver.Start(t, nil).Addr}}}
	ep := os.Getenv(testserver.EnvEndpoint)
	if ep == "" {
		if os.Getenv(testserver.EnvRequireDynamoDB) == "1" {
			t.Fatalf("%s=1 but %s is not set", testserver.EnvRequireDynamoDB, testserver.EnvEndpoint)
		}
		t.Logf("DynamoDB paths skipped: %s is not set", testserver.EnvEndpoint)
		return paths
	}
	// DynamoDB Local keeps tables per access key: the same one for the
	// tables made here, the CLI and the test servers.
	t.Setenv("AWS_ACCESS_KEY_ID", "redamotest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "redamotest")
	paths = append(paths, cliPath{"dynamodb", []string{"--endpoint", ep, "--region", "us-east-1", "--table", newTable(t, ep)}})
	b, _ := testserver.DynamoDB(t)
	paths = append(paths, cliPath{"server-dynamodb", []string{"--server", b.Start(t).Addr}})
	return paths
}

// newTable creates a fresh table on DynamoDB Local, deleted when the test
// ends: the CLI itself never creates one unless told to.
func newTable(t *testing.T, ep string) string {
	t.Helper()
	name := fmt.Sprintf("cli_%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dynamo.New(ctx, dynamo.Config{Table: name, Endpoint: ep, Region: "us-east-1", CreateTable: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.DeleteTable(ctx)
		_ = st.Close()
	})
	return name
}

// clockFields are the outputs that depend on the clock.
var (
	clockFields  = regexp.MustCompile(`"(pttl_ms|acquired_at_ms|elected_at_ms|heartbeat_at_ms|oldest_ready_ms|item_count|size_bytes)":\d+`)
	randomFields = regexp.MustCompile(`"(message_id|receipt)":"[A-Za-z0-9_-]+"`)
	receiptField = regexp.MustCompile(`"receipt":"([A-Za-z0-9_-]+)"`)
)

func normalize(s string) string {
	return randomFields.ReplaceAllString(clockFields.ReplaceAllString(s, `"$1":N`), `"$1":"N"`)
}

// The help's examples are a transcript: run in order on an empty store,
// each verb's example prints exactly its documented JSON and exits 0, on
// every path. This covers every verb's success.
func TestCLIHelpExamples(t *testing.T) {
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			env := map[string]string{"REDAMO_OWNER": exampleIdentity}
			// $receipt in an example is the receipt the last pop printed;
			// after a NACK spent it, the example's message is popped again.
			receipt := ""
			// The table verbs' examples make a table of their own, named
			// "redamo" in their output.
			fresh := ""
			for _, v := range verbs {
				if v.meanwhile != nil {
					continue // runs until interrupted: TestCLIWatchExample
				}
				if v.external {
					continue // needs a redis-server: TestCLIImportExport
				}
				flags := p.flags
				if v.table {
					if serverAddr(p) != "" {
						continue // refused: TestCLITableVerbs
					}
					if fresh == "" {
						fresh = freshTable(t)
					}
					flags = withTable(p.flags, fresh)
				}
				if strings.Contains(v.example, "$receipt") && receipt == "" {
					_, out, _ := cliRun(t, env, append([]string{"queue", "pop", "jobs"}, p.flags...)...)
					m := receiptField.FindStringSubmatch(out)
					require.NotNil(t, m, "no message to receive for %s: %s", v.example, out)
					receipt = m[1]
				}
				args := append(strings.Fields(strings.ReplaceAll(v.example, "$receipt", receipt)), flags...)
				cliStdin = strings.NewReader(v.stdin)
				code, out, errOut := cliRun(t, env, args...)
				if v.table {
					out = strings.ReplaceAll(out, `"table":"`+fresh+`"`, `"table":"redamo"`)
				}
				if m := receiptField.FindStringSubmatch(out); m != nil {
					receipt = m[1]
				}
				if v.name == "queue nack" || v.name == "queue ack" {
					receipt = ""
				}
				require.Equal(t, exitOK, code, "redamo %s: %s", v.example, errOut)
				require.Equal(t, normalize(v.output)+"\n", normalize(out), "redamo %s", v.example)
				require.Empty(t, errOut, "redamo %s", v.example)
			}
		})
	}
}

// cliStep is one CLI run of a scenario: its exit code, its exact stdout
// (normalized) and a part of its stderr ("": nothing on stderr).
type cliStep struct {
	args   []string
	code   int
	out    string
	errHas string
}

func runSteps(t *testing.T, p cliPath, env map[string]string, steps []cliStep) {
	t.Helper()
	for _, s := range steps {
		code, out, errOut := cliRun(t, env, withFlags(s.args, p.flags)...)
		checkStep(t, s, code, out, errOut)
	}
}

// checkStep checks what one run of the CLI gave against its step.
func checkStep(t *testing.T, s cliStep, code int, out, errOut string) {
	t.Helper()
	line := "redamo " + strings.Join(s.args, " ")
	require.Equal(t, s.code, code, "%s: stdout %q stderr %q", line, out, errOut)
	want := ""
	if s.out != "" {
		want = s.out + "\n"
	}
	require.Equal(t, want, normalize(out), "%s", line)
	if s.errHas == "" {
		require.Empty(t, errOut, "%s", line)
	} else {
		require.Contains(t, errOut, s.errHas, "%s", line)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%s: one line on stderr: %q", line, errOut)
	}
}

// withFlags puts flags after args, or before a "--" in them (after which
// everything is an argument).
func withFlags(args, flags []string) []string {
	out := append([]string(nil), args...)
	for i, x := range out {
		if x == "--" {
			return append(append(out[:i:i], flags...), args[i:]...)
		}
	}
	return append(out, flags...)
}

func a(s ...string) []string { return s }

// Every verb's answers other than yes, and every exit code, the same on
// every path.
func TestCLIAnswers(t *testing.T) {
	steps := []cliStep{
		// Keys: no answers exit 1 with the result still on stdout.
		{a("get", "nothing"), 1, `{"key":"nothing","value":null}`, ""},
		{a("set", "k", "v"), 0, `{"key":"k","value":"v","set":true}`, ""},
		{a("set", "k", "w", "--if-absent"), 1, `{"key":"k","value":"w","set":false}`, ""},
		{a("get", "k"), 0, `{"key":"k","value":"v"}`, ""},
		{a("set", "--if-absent", "fresh", "1"), 0, `{"key":"fresh","value":"1","set":true}`, ""},
		{a("exists", "nothing"), 1, `{"key":"nothing","exists":false}`, ""},
		{a("delete", "nothing"), 1, `{"key":"nothing","deleted":false}`, ""},
		{a("delete", "fresh"), 0, `{"key":"fresh","deleted":true}`, ""},
		{a("list"), 0, `{"prefix":"","keys":["k"]}`, ""},
		{a("list", "x*"), 0, `{"prefix":"x*","keys":[]}`, ""},
		{a("inc", "n", "--by", "-3", "--create"), 0, `{"key":"n","value":-3}`, ""},
		{a("dec", "n", "--by", "2"), 0, `{"key":"n","value":-5}`, ""},
		{a("inc", "n"), 0, `{"key":"n","value":-4}`, ""},
		// Sets and lists.
		{a("srem", "s", "x"), 1, `{"key":"s","removed":0}`, ""},
		{a("sismember", "s", "x"), 1, `{"key":"s","member":"x","is_member":false}`, ""},
		{a("smembers", "s"), 0, `{"key":"s","members":[]}`, ""},
		{a("scard", "s"), 0, `{"key":"s","count":0}`, ""},
		{a("sadd", "s", "b", "a", "b"), 0, `{"key":"s","added":2}`, ""},
		{a("sadd", "s", "a"), 0, `{"key":"s","added":0}`, ""},
		{a("smembers", "s"), 0, `{"key":"s","members":["a","b"]}`, ""},
		{a("lrange", "l"), 0, `{"key":"l","values":[]}`, ""},
		{a("lpop", "l"), 1, `{"key":"l","value":null}`, ""},
		{a("rpop", "l", "--count", "2"), 1, `{"key":"l","values":[]}`, ""},
		{a("rpush", "l", "a", "b", "c"), 0, `{"key":"l","length":3}`, ""},
		{a("lrange", "l", "-1", "-1"), 0, `{"key":"l","values":["c"]}`, ""},
		{a("lrange", "l", "0", "1"), 0, `{"key":"l","values":["a","b"]}`, ""},
		{a("lpop", "l", "--count", "5"), 0, `{"key":"l","values":["a","b","c"]}`, ""},
		{a("rpush", "l", "--", "-x"), 0, `{"key":"l","length":1}`, ""},
		{a("rpop", "l"), 0, `{"key":"l","value":"-x"}`, ""},
		// Refused by redamo: exit 2.
		{a("inc", "k"), 2, "", "redamo: ERR value is not an integer or out of range"},
		{a("sadd", "k", "m"), 2, "", "redamo: WRONGTYPE Operation against a key holding the wrong kind of value"},
		{a("exec", "NOPE", "x"), 2, "", "redamo: ERR unknown command 'NOPE'"},
		{a("exec", "GET"), 2, "", "wrong number of arguments for 'get' command"},
		{a("exec", "GET", "nothing"), 0, `{"reply":null}`, ""},
		{a("exec", "HSET", "h", "b", "2", "a", "1"), 0, `{"reply":2}`, ""},
		{a("exec", "HGETALL", "h"), 0, `{"reply":{"a":"1","b":"2"}}`, ""},
		{a("exec", "SMEMBERS", "s"), 0, `{"reply":["a","b"]}`, ""},
		{a("exec", "INCRBYFLOAT", "f", "1.5"), 0, `{"reply":"1.5"}`, ""},
		{a("exec", "PING"), 0, `{"reply":"PONG"}`, ""},
		// Locks: held by someone else exits 4, not yours exits 1.
		{a("lock", "acquire", "L", "--owner", "a", "--ttl", "10s"), 0, `{"lock":"L","owner":"a","acquired":true,"fence":1,"ttl_ms":10000}`, ""},
		{a("lock", "acquire", "L", "--owner", "a"), 0, `{"lock":"L","owner":"a","acquired":true,"fence":1,"ttl_ms":30000}`, ""},
		{a("lock", "acquire", "L", "--owner", "b", "--wait", "200ms"), 4, `{"lock":"L","owner":"b","acquired":false}`,
			`redamo: lock L is held by "a" after waiting 200ms`},
		{a("lock", "acquire", "L", "--owner", "b"), 4, `{"lock":"L","owner":"b","acquired":false}`, `lock L is held by "a";`},
		{a("lock", "release", "L", "--owner", "b"), 1, `{"lock":"L","owner":"b","released":false}`, "held by another owner"},
		{a("lock", "extend", "L", "--owner", "b"), 1, `{"lock":"L","owner":"b","extended":false}`, "held by another owner"},
		{a("lock", "release", "L", "--owner", "a", "--fence", "7"), 1, `{"lock":"L","owner":"a","released":false}`, "another fencing token"},
		{a("lock", "check", "L"), 0, `{"lock":"L","held":true,"owner":"a","fence":1,"pttl_ms":N,"acquired_at_ms":N}`, ""},
		{a("lock", "extend", "L", "--owner", "a", "--fence", "1", "--ttl", "20s"), 0, `{"lock":"L","owner":"a","extended":true,"ttl_ms":20000}`, ""},
		{a("lock", "release", "L", "--owner", "a"), 0, `{"lock":"L","owner":"a","released":true}`, ""},
		{a("lock", "release", "L", "--owner", "a"), 1, `{"lock":"L","owner":"a","released":false}`, ""},
		{a("lock", "extend", "L", "--owner", "a"), 1, `{"lock":"L","owner":"a","extended":false}`, ""},
		{a("lock", "check", "L"), 1, `{"lock":"L","held":false}`, ""},
		{a("lock", "acquire", "L", "--owner", "b"), 0, `{"lock":"L","owner":"b","acquired":true,"fence":2,"ttl_ms":30000}`, ""},
		// Leader election.
		{a("leader", "elect", "P", "--id", "n1", "--ttl", "10s"), 0, `{"pool":"P","id":"n1","elected":true,"term":1,"ttl_ms":10000}`, ""},
		{a("leader", "elect", "P", "--id", "n2", "--wait", "100ms"), 4, `{"pool":"P","id":"n2","elected":false}`,
			`redamo: pool P is led by "n1" after waiting 100ms`},
		{a("leader", "heartbeat", "P", "--id", "n2"), 1, `{"pool":"P","id":"n2","leader":false}`, ""},
		{a("leader", "resign", "P", "--id", "n2"), 1, `{"pool":"P","id":"n2","resigned":false}`, ""},
		{a("leader", "watch", "P", "--wait", "100ms"), 1, `{"pool":"P","changed":false,"term":1}`, ""},
		{a("leader", "check", "P"), 0, `{"pool":"P","led":true,"leader":"n1","term":1,"value":null,"pttl_ms":N,"elected_at_ms":N,"heartbeat_at_ms":N}`, ""},
		{a("leader", "resign", "P", "--id", "n1"), 0, `{"pool":"P","id":"n1","resigned":true}`, ""},
		{a("leader", "check", "P"), 1, `{"pool":"P","led":false}`, ""},
		{a("leader", "watch", "P", "--wait", "100ms"), 1, `{"pool":"P","changed":false,"term":0}`, ""},
		{a("leader", "heartbeat", "P", "--id", "n1"), 1, `{"pool":"P","id":"n1","leader":false}`, ""},
		{a("leader", "elect", "P", "--id", "n2", "--value", "v2"), 0, `{"pool":"P","id":"n2","elected":true,"term":2,"ttl_ms":30000}`, ""},
		{a("leader", "watch", "P", "--term", "1"), 0, `{"pool":"P","changed":true,"leader":"n2","term":2,"value":"v2","pttl_ms":N}`, ""},
		// Queues: an empty queue, a stale receipt, a receipt that is none.
		{a("queue", "pop", "Q"), 1, `{"queue":"Q","message_id":null}`, ""},
		{a("queue", "pop", "Q", "--count", "3", "--wait", "50ms"), 1, `{"queue":"Q","messages":[]}`, ""},
		{a("queue", "size", "Q"), 1, `{"queue":"Q","ready":0}`, ""},
		{a("queue", "peek", "Q"), 1, `{"queue":"Q","messages":[]}`, ""},
		{a("queue", "push", "Q", "m", "--dedup-id", "d"), 0, `{"queue":"Q","message_id":"N"}`, ""},
		{a("queue", "push", "Q", "m2", "--dedup-id", "d"), 0, `{"queue":"Q","message_id":"N"}`, ""},
		{a("queue", "pop", "Q", "--count", "3", "--visibility-timeout", "0s"), 0, `{"queue":"Q","messages":[{"message_id":"N","receipt":null,"payload":"m","deliveries":1}]}`, ""},
		{a("queue", "ack", "Q", "AAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAHN0YWxl"), 1, `{"queue":"Q","acked":false}`, "the receipt is stale"},
		{a("queue", "nack", "Q", "AAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAHN0YWxl"), 1, `{"queue":"Q","nacked":false}`, "the receipt is stale"},
		{a("queue", "ack", "Q", "not-a-receipt"), 2, "", "ERR invalid receipt"},
		{a("queue", "extend", "Q", "r"), 2, "", "queue extend needs --visibility-timeout"},
		{a("queue", "config", "Q", "--shards", "0"), 2, "", "--shards 0: must be positive"},
		{a("queue", "config", "Q", "--shards", "65"), 2, "", "ERR SHARDS must be between 1 and 64"},
		{a("queue", "stats", "Q"), 0, `{"queue":"Q","ready":0,"delayed":0,"inflight":0,"dead":0,"pushed":1,"acked":0,"nacked":0,"deadlettered":0,"deduplicated":1,"oldest_ready_ms":N}`, ""},
		// Invalid arguments: exit 2 before anything runs.
		{a("get"), 2, "", "redamo: usage: redamo get KEY"},
		{a("set", "k"), 2, "", "usage: redamo set KEY VALUE"},
		{a("inc", "k", "--by", "x"), 2, "", `--by "x": not an integer`},
		{a("lock", "acquire", "L", "--ttl", "5"), 2, "", "--ttl 5: a duration needs a unit"},
		{a("lock", "acquire", "L", "--wait", "-1s"), 2, "", "--wait -1s: must not be negative"},
		{a("lock", "acquire", "L", "--owner", ""), 2, "", "--owner must not be empty"},
		{a("lock", "release", "L", "--fence", "0"), 2, "", "--fence 0: must be positive"},
		{a("lock", "frob", "L"), 2, "", `lock has no operation "frob": it has acquire, check, extend, release`},
		{a("lock"), 2, "", "lock needs an operation"},
		{a("get", "k", "--nope"), 2, "", "unknown flag --nope"},
		{a("get", "k", "--ttl", "1s"), 2, "", "unknown flag --ttl"},
		{a("get", "k", "--format", "xml"), 2, "", `--format "xml": must be json, text, value or keys`},
		{a("get", "k", "--quiet=maybe"), 2, "", "--quiet=maybe: must be true or false"},
		{a("get", "k", "--format"), 2, "", "--format needs a value"},
		{a("lpop", "l", "--count", "0"), 2, "", "--count 0: must be positive"},
		{a("lrange", "l", "1"), 2, "", "lrange takes START and STOP together"},
		{a("lrange", "l", "a", "b"), 2, "", `lrange: "a" is not an index`},
		{a("leader", "watch", "P", "--term", "-1"), 2, "", "--term -1: must not be negative"},
		{a("set", "k", "v", "--ttl", "1us"), 2, "", "must be at least 1ms"},
		{a("set", "k", "v", "--ttl", "1500us"), 2, "", "must be whole milliseconds"},
	}
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) { runSteps(t, p, nil, steps) })
	}
}

// A key set with --ttl expires to the millisecond, on every path.
func TestCLITTL(t *testing.T) {
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			// A busy machine may take longer than the TTL over the
			// steps that find the key alive: a key found gone only
			// after its TTL passed is tried again, under a new name
			// with a longer TTL; found gone earlier, it fails.
			var key string
			var ttl time.Duration
			for try, ms := 0, 600; ; try, ms = try+1, ms*2 {
				require.Less(t, try, 8, "the steps never ran within the TTL")
				key, ttl = fmt.Sprint("t", try), time.Duration(ms)*time.Millisecond
				set := time.Now()
				runSteps(t, p, nil, []cliStep{
					{a("set", key, "v", "--ttl", fmt.Sprint(ms, "ms")), 0, fmt.Sprintf(`{"key":%q,"value":"v","set":true,"ttl_ms":%d}`, key, ms), ""},
				})
				alive := []cliStep{
					{a("get", key), 0, fmt.Sprintf(`{"key":%q,"value":"v"}`, key), ""},
					{a("set", key, "w", "--if-absent"), 1, fmt.Sprintf(`{"key":%q,"value":"w","set":false}`, key), ""},
				}
				expired := false
				for _, st := range alive {
					code, out, errOut := cliRun(t, nil, withFlags(st.args, p.flags)...)
					if expired = code != st.code && time.Since(set) >= ttl; expired {
						break
					}
					checkStep(t, st, code, out, errOut)
				}
				if !expired {
					break
				}
			}
			time.Sleep(ttl + 100*time.Millisecond)
			runSteps(t, p, nil, []cliStep{
				{a("get", key), 1, fmt.Sprintf(`{"key":%q,"value":null}`, key), ""},
				{a("set", key, "w", "--if-absent"), 0, fmt.Sprintf(`{"key":%q,"value":"w","set":true}`, key), ""},
			})
		})
	}
}

// --format text and value, --quiet and --verbose, flags anywhere, and the
// environment variables.
func TestCLIFormats(t *testing.T) {
	addr := testserver.Start(t, nil).Addr
	env := map[string]string{"REDAMO_SERVER": addr, "REDAMO_OWNER": "me"}
	for _, tc := range []struct {
		args     []string
		env      map[string]string
		code     int
		out      string
		errMatch string
	}{
		{a("set", "k", "a b"), nil, 0, `{"key":"k","value":"a b","set":true}` + "\n", ""},
		{a("get", "k", "--format", "value"), nil, 0, "a b\n", ""},
		{a("get", "--format=text", "k"), nil, 0, `key=k value="a b"` + "\n", ""},
		{a("get", "nothing", "--format", "value"), nil, 1, "", ""},
		{a("get", "nothing", "--format", "text"), nil, 1, "key=nothing value=null\n", ""},
		{a("get", "k"), map[string]string{"REDAMO_FORMAT": "value"}, 0, "a b\n", ""},
		{a("get", "k", "--format", "json"), map[string]string{"REDAMO_FORMAT": "value"}, 0, `{"key":"k","value":"a b"}` + "\n", ""},
		{a("sadd", "s", "x", "y"), nil, 0, `{"key":"s","added":2}` + "\n", ""},
		{a("smembers", "s", "--format", "value"), nil, 0, "x\ny\n", ""},
		{a("smembers", "s", "--format", "text"), nil, 0, `key=s members=["x","y"]` + "\n", ""},
		{a("list", "--format", "value"), nil, 0, "k\ns\n", ""},
		{a("exists", "s", "--format", "value"), nil, 0, "true\n", ""},
		{a("inc", "n", "--create", "--format", "value"), nil, 0, "1\n", ""},
		{a("lock", "acquire", "L", "--format", "value"), nil, 0, "1\n", ""},
		{a("lock", "acquire", "L", "--format", "text"), nil, 0, "lock=L owner=me acquired=true fence=1 ttl_ms=30000\n", ""},
		{a("lock", "acquire", "L", "--owner", "x", "--quiet"), nil, 4, "", ""},
		{a("lock", "acquire", "L", "--owner", "x"), map[string]string{"REDAMO_QUIET": "1"}, 4, "", ""},
		{a("lock", "release", "L", "--quiet"), nil, 0, "", ""},
		{a("get", "k", "--quiet", "--format", "nope"), nil, 2, "", `--format "nope"`},
		{a("exec", "HSET", "h", "f", "<&>"), nil, 0, `{"reply":1}` + "\n", ""},
		{a("exec", "HGETALL", "h", "--format", "value"), nil, 0, `{"f":"<&>"}` + "\n", ""},
		{a("exec", "LRANGE", "none", "0", "-1", "--format", "value"), nil, 0, "", ""},
		{a("get", "k", "--verbose"), nil, 0, `{"key":"k","value":"a b"}` + "\n",
			`(?s)^redamo: GET k \(redamo at 127\.0\.0\.1:\d+\)\nredamo: -> "a b" in .*\n$`},
		{a("set", "k", "v", "--server", "127.0.0.1:1"), nil, 3, "", `cannot reach redamo at 127\.0\.0\.1:1 \(--server, REDAMO_SERVER\)`},
		{a("get", "k", "--server", "nohost"), nil, 2, "", `--server "nohost": not host:port`},
		{a("get", "k", "--endpoint", "http://127.0.0.1:1"), nil, 2, "", `--endpoint applies to the DynamoDB table, but REDAMO_SERVER names a running redamo`},
		{a("get", "k", "--server", "redis://"+addr+"/0"), nil, 0, `{"key":"k","value":"a b"}` + "\n", ""},
	} {
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		for k, v := range tc.env {
			e[k] = v
		}
		code, out, errOut := cliRun(t, e, tc.args...)
		require.Equal(t, tc.code, code, "%q: %s", tc.args, errOut)
		require.Equal(t, tc.out, out, "%q", tc.args)
		if tc.errMatch == "" {
			require.Empty(t, errOut, "%q", tc.args)
		} else {
			require.Regexp(t, tc.errMatch, errOut, "%q", tc.args)
		}
	}
}

// Without --owner the owner is REDAMO_OWNER, else user@host:PID of the
// calling process's parent (the script's shell).
func TestCLIDefaultOwner(t *testing.T) {
	addr := testserver.Start(t, nil).Addr
	host, err := os.Hostname()
	require.NoError(t, err)
	want := fmt.Sprintf("tester@%s:%d", host, os.Getppid())
	code, out, errOut := cliRun(t, map[string]string{"USER": "tester"}, "lock", "acquire", "d", "--server", addr)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, fmt.Sprintf(`{"lock":"d","owner":%q,"acquired":true,"fence":1,"ttl_ms":30000}`+"\n", want), out)
	// The same caller releases it without naming the owner.
	code, out, _ = cliRun(t, map[string]string{"USER": "tester"}, "lock", "release", "d", "--server", addr)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, `"released":true`)
	code, out, _ = cliRun(t, map[string]string{"USER": "tester"}, "leader", "elect", "p", "--server", addr)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, fmt.Sprintf(`"id":%q`, want))
}

// Store failures exit 3 with a line saying what to set.
func TestCLIStoreErrors(t *testing.T) {
	// No region anywhere: nothing to reach.
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	code, out, errOut := cliRun(t, nil, "get", "k")
	require.Equal(t, exitStore, code)
	require.Empty(t, out)
	require.Equal(t, "redamo: no AWS region configured, so there is no DynamoDB to reach: "+
		"set --region (REDAMO_REGION or AWS_REGION) and AWS credentials, --endpoint (REDAMO_ENDPOINT) for DynamoDB Local, "+
		"or --server (REDAMO_SERVER) to use a running redamo\n", errOut)

	// An endpoint nobody listens on: the table check at start fails, 3.
	start := time.Now()
	code, _, errOut = cliRun(t, nil, "get", "k", "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, exitStore, code)
	require.Contains(t, errOut, `redamo: opening DynamoDB table redamo: dynamo: describing table "redamo": `)
	require.Contains(t, errOut, "connection refused: check --table (redamo), --region, --endpoint")
	require.Less(t, time.Since(start), 15*time.Second)

	code, _, errOut = cliRun(t, nil, "get", "k", "--table", "x")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `--table "x": not a DynamoDB table name`)

	ep := os.Getenv(testserver.EnvEndpoint)
	if ep == "" {
		return
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "redamotest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "redamotest")
	code, _, errOut = cliRun(t, nil, "lock", "acquire", "x", "--endpoint", ep, "--table", "no_such_table")
	require.Equal(t, exitStore, code)
	require.Equal(t, `redamo: table "no_such_table" does not exist in region (SDK default), endpoint `+ep+
		": create it with --create-table, pick another with --table (REDAMO_TABLE), or use a running redamo with --server (REDAMO_SERVER)\n", errOut)

	// --create-table creates it (and the next run finds it).
	table := fmt.Sprintf("cli_create_%d", time.Now().UnixNano())
	code, out, errOut = cliRun(t, nil, "set", "k", "v", "--endpoint", ep, "--region", "us-east-1", "--table", table, "--create-table")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, `{"key":"k","value":"v","set":true}`+"\n", out)
	code, out, _ = cliRun(t, map[string]string{"REDAMO_ENDPOINT": ep, "REDAMO_REGION": "us-east-1", "REDAMO_TABLE": table}, "get", "k")
	require.Equal(t, exitOK, code)
	require.Equal(t, `{"key":"k","value":"v"}`+"\n", out)
	ctx := context.Background()
	st, err := dynamo.New(ctx, dynamo.Config{Table: table, Endpoint: ep, Region: "us-east-1"})
	require.NoError(t, err)
	require.NoError(t, st.DeleteTable(ctx))
}

func TestCLIHelp(t *testing.T) {
	code, out, errOut := cliRun(t, nil, "help")
	require.Equal(t, exitOK, code)
	require.Empty(t, errOut)
	for _, v := range verbs {
		require.Contains(t, out, strings.TrimSpace("redamo "+v.name+" "+v.args), v.name)
		if v.meanwhile == nil {
			require.Contains(t, out, "redamo "+v.example+"\n      "+v.output+"\n", v.name)
		}
		for _, line := range strings.Split(v.output, "\n") {
			require.Contains(t, out, "\n      "+line+"\n", v.name)
			require.True(t, json.Valid([]byte(line)), "%s: %s", v.name, line)
		}
		require.NotEmpty(t, v.summary, v.name)
		require.NotEmpty(t, v.runs, v.name)
	}
	for _, s := range []string{"Exit codes:", "REDAMO_SERVER", "REDAMO_TABLE", "AWS_PROFILE", "REDAMO_ENDPOINT", "Work queues"} {
		require.Contains(t, out, s)
	}

	for _, args := range [][]string{{"lock", "--help"}, {"help", "lock"}, {"lock", "-h"}} {
		code, out, _ := cliRun(t, nil, args...)
		require.Equal(t, exitOK, code, "%q", args)
		require.Contains(t, out, "Locks: redamo lock OPERATION NAME")
		for _, op := range []string{"acquire", "release", "extend", "check"} {
			require.Contains(t, out, "$ redamo lock "+op, "%q", args)
		}
		require.NotContains(t, out, "redamo get KEY", "%q: only the category", args)
	}
	for _, tc := range []struct {
		args []string
		verb string
	}{
		{a("get", "--help"), "get"}, {a("help", "get"), "get"},
		{a("lock", "acquire", "--help"), "lock acquire"}, {a("lock", "acquire", "k", "-h"), "lock acquire"},
		{a("help", "lock", "acquire"), "lock acquire"},
	} {
		code, out, _ := cliRun(t, nil, tc.args...)
		require.Equal(t, exitOK, code, "%q", tc.args)
		require.Contains(t, out, "$ redamo "+tc.verb+" ", "%q", tc.args)
		require.Equal(t, 1, strings.Count(out, "$ redamo "), "%q: one verb", tc.args)
		require.Contains(t, out, "Exit codes:")
	}
	code, _, errOut = cliRun(t, nil, "help", "nope")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `no help on "nope"`)
}

// The first argument decides: a verb runs the CLI, anything else (flags)
// the server as before.
func TestIsCLI(t *testing.T) {
	for arg, want := range map[string]bool{
		"get": true, "lock": true, "leader": true, "exec": true, "help": true, "queue": true, "lrange": true,
		"--addr": false, "-help": false, "--version": false, "acquire": false, "bogus": false, "": false,
	} {
		require.Equal(t, want, isCLI(arg), arg)
	}
}

func TestParseArgs(t *testing.T) {
	allowed := map[string]flagDef{
		"ttl": {name: "ttl", arg: "D"}, "quiet": {name: "quiet", isBool: true}, "by": {name: "by", arg: "N"},
	}
	for _, tc := range []struct {
		args  []string
		pos   []string
		set   map[string]string
		help  bool
		error string
	}{
		{args: a("k", "v"), pos: a("k", "v"), set: map[string]string{}},
		{args: a("--ttl", "5s", "k"), pos: a("k"), set: map[string]string{"ttl": "5s"}},
		{args: a("k", "-ttl=5s", "--quiet"), pos: a("k"), set: map[string]string{"ttl": "5s", "quiet": "true"}},
		{args: a("k", "--quiet=false"), pos: a("k"), set: map[string]string{"quiet": "false"}},
		{args: a("l", "-1", "-2"), pos: a("l", "-1", "-2"), set: map[string]string{}},
		{args: a("k", "--by", "-3"), pos: a("k"), set: map[string]string{"by": "-3"}},
		{args: a("k", "-", "--", "--ttl", "x"), pos: a("k", "-", "--ttl", "x"), set: map[string]string{}},
		{args: a("k", "--help"), pos: a("k"), set: map[string]string{}, help: true},
		{args: a("k", "--nope"), error: "unknown flag --nope"},
		{args: a("k", "--ttl"), error: "--ttl needs a value (--ttl D"},
		{args: a("k", "--ttl", "--quiet"), error: "--ttl needs a value"},
		{args: a("k", "--ttl=-x"), pos: a("k"), set: map[string]string{"ttl": "-x"}},
		{args: a("--ttl", "1s", "--ttl", "2s"), error: "--ttl given twice"},
		{args: a("--quiet=yes"), error: "--quiet=yes: must be true or false"},
	} {
		pos, set, help, err := parseArgs(tc.args, allowed)
		if tc.error != "" {
			require.ErrorContains(t, err, tc.error, "%q", tc.args)
			continue
		}
		require.NoError(t, err, "%q", tc.args)
		require.Equal(t, tc.pos, pos, "%q", tc.args)
		require.Equal(t, tc.set, set, "%q", tc.args)
		require.Equal(t, tc.help, help, "%q", tc.args)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in        string
		allowZero bool
		ms        int64
		error     string
	}{
		{in: "30s", ms: 30000},
		{in: "5m", ms: 300000},
		{in: "1500ms", ms: 1500},
		{in: "1h30m", ms: 5400000},
		{in: "0", allowZero: true, ms: 0},
		{in: "0s", allowZero: true, ms: 0},
		{in: "0s", error: "must be at least 1ms"},
		{in: "100us", allowZero: true, error: "must be 0 or at least 1ms"},
		{in: "1.5ms", error: "must be whole milliseconds"},
		{in: "30", error: "a duration needs a unit"},
		{in: "-1s", error: "must not be negative"},
		{in: "soon", error: `not a duration`},
	} {
		ms, err := parseDuration("ttl", tc.in, tc.allowZero)
		if tc.error != "" {
			require.ErrorContains(t, err, tc.error, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.ms, ms, tc.in)
	}
}

func TestGlobEscape(t *testing.T) {
	require.Equal(t, `a\*b\?c\[d\]e\\f`, globEscape(`a*b?c[d]e\f`))
	require.Equal(t, "user:", globEscape("user:"))
}

// A reply becomes the same JSON whichever path it came by: go-redis's
// RESP3 values convert to the reply tree Server.Do gives.
func TestReplyJSON(t *testing.T) {
	for _, tc := range []struct {
		goRedis any
		want    string
	}{
		{"x", `"x"`},
		{int64(-3), `-3`},
		{1.5, `1.5`},
		{math.Inf(1), `"inf"`},
		{true, `true`},
		{nil, `null`},
		{[]any{"a", int64(1), nil}, `["a",1,null]`},
		{map[any]any{"b": int64(2), "a": "1"}, `{"a":"1","b":2}`},
		{map[any]any{int64(2): "x", int64(10): "y"}, `{"10":"y","2":"x"}`},
		{new(big.Int).Lsh(big.NewInt(1), 70), `"1180591620717411303424"`},
		{[]any{redis.Nil}, `[{"error":"redis: nil"}]`},
		{"<\u00e9>", `"<é>"`},
	} {
		var b bytes.Buffer
		writeJSON(&b, replyValue(fromGoRedis(tc.goRedis)))
		require.Equal(t, tc.want, b.String(), "%#v", tc.goRedis)
	}
	// The same map from Server.Do, in its own order, sorts the same way.
	r := commands.Reply{Kind: commands.ReplyMap, Elems: []commands.Reply{
		{Kind: commands.ReplyBulk, Str: "b"}, {Kind: commands.ReplyInt, Int: 2},
		{Kind: commands.ReplyBulk, Str: "a"}, {Kind: commands.ReplyBulk, Str: "1"},
	}}
	var b bytes.Buffer
	writeJSON(&b, replyValue(r))
	require.Equal(t, `{"a":"1","b":2}`, b.String())
}
