package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/bus"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/pubsub"
)

// watchProc is a running `redamo watch`: its stdout line by line.
type watchProc struct {
	p      *testproc.Proc
	lines  chan string
	stderr *strings.Builder
}

// startWatch starts the redamo binary with args, and returns once the
// server at addr counts its pattern subscription (PUBSUB NUMPAT), so that
// a write made after it is seen.
func startWatch(t *testing.T, addr string, args ...string) *watchProc {
	t.Helper()
	bin := buildCLI(t)
	cmd := exec.Command(filepath.Join(bin, "redamo"), args...)
	cmd.Env = shellEnv(bin)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &watchProc{lines: make(chan string, 100), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	testproc.Prepare(cmd)
	w.p = testproc.Start(t, cmd)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	require.Eventually(t, func() bool {
		n, err := rdb.PubSubNumPat(context.Background()).Result()
		return err == nil && n == 1
	}, 20*time.Second, 10*time.Millisecond, "watch never subscribed: %s", w.stderr)
	return w
}

// next returns the next n lines the watch printed.
func (w *watchProc) next(t *testing.T, n int) []string {
	t.Helper()
	if n == 0 {
		return nil
	}
	var got []string
	for len(got) < n {
		select {
		case l, ok := <-w.lines:
			require.True(t, ok, "watch ended after %q: %s", got, w.stderr)
			got = append(got, l)
		case <-time.After(20 * time.Second):
			t.Fatalf("watch printed %q, not %d lines: %s", got, n, w.stderr)
		}
	}
	return got
}

// stop signals the watch and returns its exit code.
func (w *watchProc) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	err := w.p.Stop(sig, 20*time.Second)
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// serverAddr is the --server of a path ("" for in-process).
func serverAddr(p cliPath) string {
	for i, f := range p.flags {
		if f == "--server" {
			return p.flags[i+1]
		}
	}
	return ""
}

// watch's help example is a transcript: its meanwhile commands, run while
// it watches, make exactly its output and note, and SIGINT ends it with
// exit 0. In-process --enable is refused: that mode needs no setting.
func TestCLIWatchExample(t *testing.T) {
	v := watchVerb
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			addr := serverAddr(p)
			args := append(strings.Fields(v.example), p.flags...)
			if addr == "" {
				code, out, errOut := cliRun(t, nil, args...)
				require.Equal(t, exitUsage, code)
				require.Empty(t, out)
				require.Contains(t, errOut, "--enable is for watch --server: in-process, watch needs no notify-keyspace-events")
				return // in-process: TestCLIWatchInProcess
			}
			w := startWatch(t, addr, args...)
			// One line per command, read before the next command: the
			// value is read after the event, and would show a later write.
			want := strings.Split(v.output, "\n")
			require.Len(t, want, len(v.meanwhile))
			for i, m := range v.meanwhile {
				code, _, errOut := cliRun(t, nil, withFlags(strings.Fields(m), p.flags)...)
				require.Equal(t, exitOK, code, "redamo %s: %s", m, errOut)
				require.Equal(t, want[i:i+1], w.next(t, 1), "redamo %s", m)
			}
			require.Equal(t, exitOK, w.stop(t, syscall.SIGINT))
			require.Equal(t, "redamo: "+strings.ReplaceAll(v.note, "ADDR", addr)+"\n", w.stderr.String())
		})
	}
}

// watch refuses while notifications are off, names the setting, and
// changes nothing; it reports only its database and pattern, reads the
// value after each event, ends with exit 0 on SIGTERM and with exit 3 when
// its server goes away.
func TestCLIWatch(t *testing.T) {
	for _, p := range cliPaths(t) {
		addr := serverAddr(p)
		if addr == "" {
			continue // TestCLIWatchExample
		}
		t.Run(p.name, func(t *testing.T) {
			runSteps(t, p, nil, []cliStep{
				{a("watch", "k*"), 2, "", "keyspace notifications are off on redamo at " + addr + ` (notify-keyspace-events is ""): ` +
					"enable them for the table with `redamo exec CONFIG SET notify-keyspace-events KA`"},
				{a("exec", "CONFIG", "GET", "notify-keyspace-events"), 0, `{"reply":{"notify-keyspace-events":""}}`, ""},
				{a("watch", "k*", "--db", "-1"), 2, "", "--db -1: must not be negative"},
				{a("watch"), 2, "", "usage: redamo watch PATTERN"},
				// Only some classes: watch runs, and says which.
				{a("exec", "CONFIG", "SET", "notify-keyspace-events", "K$"), 0, `{"reply":"OK"}`, ""},
			})
			w := startWatch(t, addr, "watch", "k*", "--server", addr)
			require.Equal(t, exitOK, w.stop(t, syscall.SIGTERM))
			require.Equal(t, `redamo: notify-keyspace-events is "$K" on redamo at `+addr+": only those classes' events come (--enable adds K and A)\n",
				w.stderr.String())

			runSteps(t, p, nil, []cliStep{{a("exec", "CONFIG", "SET", "notify-keyspace-events", "KA"), 0, `{"reply":"OK"}`, ""}})
			db1 := []string{"--server", "redis://" + addr + "/1"}
			w = startWatch(t, addr, "watch", "k*", "--values", "--db", "1", "--server", addr)
			// Each write's lines are read before the next write: the value
			// is read after the event, and would show a later write.
			for _, s := range []struct {
				step  cliStep
				lines []string
			}{
				{cliStep{args: a("set", "k0", "in db 0", "--server", addr), out: `{"key":"k0","value":"in db 0","set":true}`}, nil},
				{cliStep{args: a("set", "other", "x", db1[0], db1[1]), out: `{"key":"other","value":"x","set":true}`}, nil},
				{cliStep{args: a("set", "k1", "v", "--ttl", "1h", db1[0], db1[1]), out: `{"key":"k1","value":"v","set":true,"ttl_ms":3600000}`}, []string{
					`{"key":"k1","event":"set","db":1,"value":"v"}`,
					`{"key":"k1","event":"expire","db":1,"value":"v"}`}},
				{cliStep{args: a("exec", "APPEND", "k1", "w", db1[0], db1[1]), out: `{"reply":2}`}, []string{
					`{"key":"k1","event":"append","db":1,"value":"vw"}`}},
				{cliStep{args: a("exec", "GETDEL", "k1", db1[0], db1[1]), out: `{"reply":"vw"}`}, []string{
					`{"key":"k1","event":"del","db":1,"value":null}`}},
			} {
				code, out, errOut := cliRun(t, nil, s.step.args...)
				require.Equal(t, exitOK, code, "%q: %s", s.step.args, errOut)
				require.Equal(t, s.step.out+"\n", out, "%q", s.step.args)
				// Writes that print nothing are followed by one that does:
				// a line of theirs would come first.
				require.Equal(t, s.lines, w.next(t, len(s.lines)), "%q", s.step.args)
			}
			require.Equal(t, exitOK, w.stop(t, syscall.SIGTERM))
			require.Empty(t, w.stderr.String())
		})
	}
}

// A watch whose server goes away exits 3, saying so.
func TestCLIWatchServerLost(t *testing.T) {
	s := testserver.Start(t, nil)
	c := s.Client(t)
	require.NoError(t, c.ConfigSet(context.Background(), "notify-keyspace-events", "KA").Err())
	w := startWatch(t, s.Addr, "watch", "*", "--server", s.Addr)
	s.Kill()
	select {
	case <-w.p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not end when its server went away")
	}
	var ee *exec.ExitError
	require.ErrorAs(t, w.p.Err(), &ee)
	require.Equal(t, exitStore, ee.ExitCode())
	require.Contains(t, w.stderr.String(), "redamo: cannot reach redamo at "+s.Addr)
}

// In-process, watch joins the table's bus as a member that wants every key
// event: an instance on the bus (here one made by the test, with a short
// heartbeat so that it soon links to the watch) sends it the events of
// its writes, whatever notify-keyspace-events says, and watch prints
// those of its database and pattern.
func TestCLIWatchInProcess(t *testing.T) {
	var p cliPath
	for _, q := range cliPaths(t) {
		if serverAddr(q) == "" {
			p = q
		}
	}
	if p.name == "" {
		t.Skip("no DynamoDB Local")
	}
	ctx := context.Background()
	ep := os.Getenv(testserver.EnvEndpoint)
	table := p.flags[len(p.flags)-1]
	store, err := dynamo.New(ctx, dynamo.Config{Table: table, Endpoint: ep, Region: "us-east-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	d := &events.Dispatcher{}
	// The secret of instances without a password, as the watch derives it.
	secret := bus.SecretFromPassword("")
	b, err := bus.New(bus.Config{Listen: "127.0.0.1:0", Heartbeat: 100 * time.Millisecond, Secret: secret, Events: d}, store, pubsub.NewHub())
	require.NoError(t, err)
	d.SetPeers(b)
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() { _ = b.Close() })

	bin := buildCLI(t)
	cmd := exec.Command(filepath.Join(bin, "redamo"), append([]string{"watch", "w:*", "--values"}, p.flags...)...)
	cmd.Env = shellEnv(bin)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &watchProc{lines: make(chan string, 100), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	testproc.Prepare(cmd)
	w.p = testproc.Start(t, cmd)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	emit := func(db int, name, key string) {
		d.Emit(events.Event{DB: db, Class: events.Generic, Name: name, Key: []byte(key)})
	}
	// Until the instance has linked to the watch, its events go nowhere.
	require.Eventually(t, func() bool { return b.Anyone() }, 30*time.Second, 10*time.Millisecond,
		"the watch never declared its interest: %s", w.stderr)
	require.Equal(t, events.Class(0), d.Flags(), "keyspace notifications stay off")

	runSteps(t, p, nil, []cliStep{{a("set", "w:k", "v1"), 0, `{"key":"w:k","value":"v1","set":true}`, ""}})
	emit(1, "set", "w:k")   // another database
	emit(0, "set", "other") // another pattern
	emit(0, "set", "w:k")
	require.Equal(t, `{"key":"w:k","event":"set","db":0,"value":"v1"}`, w.next(t, 1)[0])
	emit(0, "del", "w:gone") // a removal: null, nothing read
	require.Equal(t, `{"key":"w:gone","event":"del","db":0,"value":null}`, w.next(t, 1)[0])
	require.Equal(t, exitOK, w.stop(t, syscall.SIGTERM))
	require.Empty(t, w.stderr.String())
}
