package integration

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
)

// watcher is a running `redamo watch`.
type watcher struct {
	p      *testproc.Proc
	lines  chan string
	stderr *strings.Builder
}

func startWatcher(t *testing.T, args ...string) *watcher {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"watch"}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=redamotest", "AWS_SECRET_ACCESS_KEY=redamotest")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &watcher{lines: make(chan string, 1000), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	w.p = testproc.Start(t, cmd)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	return w
}

// line returns the next line, failing after a bound.
func (w *watcher) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-w.lines:
		require.True(t, ok, "watch ended: %s", w.stderr)
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("watch printed nothing: %s", w.stderr)
	}
	return ""
}

// reaches writes key through c until the watch prints its event: the
// instance behind c sends its key events to the watch from then on.
// Lines of earlier probes are skipped.
func (w *watcher) reaches(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	want := fmt.Sprintf(`{"key":%q,"event":"set"`, key)
	for time.Now().Before(deadline) {
		require.NoError(t, c.Set(context.Background(), key, "probe", 0).Err())
		select {
		case l := <-w.lines:
			if strings.HasPrefix(l, want) {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("the events of writes through %s never reached the watch: %s", c.Options().Addr, w.stderr)
}

// drain skips the lines already printed (late probes).
func (w *watcher) drain() {
	for {
		select {
		case <-w.lines:
		default:
			return
		}
	}
}

func (w *watcher) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, w.p.Stop(syscall.SIGINT, 20*time.Second), "watch exits 0 on SIGINT: %s", w.stderr)
}

// TestClusterWatch: redamo watch prints the key events of writes made
// through every instance on the table, through --server (a keyspace
// notification subscriber on one instance, whose --enable sets the
// table's notify-keyspace-events) and in-process (the CLI joins the
// instances' bus, with notifications off).
func TestClusterWatch(t *testing.T) {
	ep := endpoint(t)
	table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	tableFlags := []string{"--store", "dynamodb", "--endpoint", ep, "--region", "us-east-1", "--table", table}
	nodes := []*instance{
		{t: t, args: append(append([]string(nil), tableFlags...), "--create-table")},
		{t: t, args: tableFlags},
	}
	cs := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		cs[i] = n.start()
	}
	ctx := context.Background()
	// expect writes through each instance in turn and reads each line
	// before the next write (--values reads the key after the event).
	expect := func(w *watcher) {
		t.Helper()
		steps := []struct {
			via  int
			do   func(c *redis.Client) error
			want []string
		}{
			{0, func(c *redis.Client) error { return c.Set(ctx, "w:k", "one", 0).Err() },
				[]string{`{"key":"w:k","event":"set","db":0,"value":"one"}`}},
			{1, func(c *redis.Client) error { return c.Set(ctx, "other", "x", 0).Err() }, nil},
			{1, func(c *redis.Client) error { return c.RPush(ctx, "w:l", "a", "b").Err() },
				[]string{`{"key":"w:l","event":"rpush","db":0,"value":["a","b"]}`}},
			{0, func(c *redis.Client) error { return c.HSet(ctx, "w:h", "f", "v").Err() },
				[]string{`{"key":"w:h","event":"hset","db":0,"value":{"f":"v"}}`}},
			{1, func(c *redis.Client) error { return c.Del(ctx, "w:k", "w:l").Err() },
				[]string{`{"key":"w:k","event":"del","db":0,"value":null}`, `{"key":"w:l","event":"del","db":0,"value":null}`}},
		}
		for i, s := range steps {
			require.NoError(t, s.do(cs[s.via]), "step %d", i)
			for _, want := range s.want {
				require.Equal(t, want, w.line(t), "step %d through instance %d", i, s.via)
			}
		}
	}

	t.Run("server", func(t *testing.T) {
		// --enable sets the table's notify-keyspace-events through one
		// instance: the other publishes its writes' events from then on.
		w := startWatcher(t, "w:*", "--values", "--enable", "--server", nodes[1].addr)
		for i, c := range cs {
			w.reaches(t, c, fmt.Sprint("w:probe-server-", i))
		}
		w.drain()
		expect(w)
		w.stop(t)
		require.Equal(t, `redamo: notify-keyspace-events was "" on redamo at `+nodes[1].addr+": set to \"AK\" (--enable)\n", w.stderr.String())
		require.Equal(t, "AK", cs[0].ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"])
	})
	// In-process, watch needs no keyspace notifications.
	require.NoError(t, cs[0].ConfigSet(ctx, "notify-keyspace-events", "").Err())

	t.Run("in-process", func(t *testing.T) {
		w := startWatcher(t, append([]string{"w:*", "--values"}, tableFlags[2:]...)...)
		for i, c := range cs {
			w.reaches(t, c, fmt.Sprint("w:probe-local-", i))
		}
		w.drain()
		expect(w)
		w.stop(t)
		require.Empty(t, w.stderr.String())
	})
}
