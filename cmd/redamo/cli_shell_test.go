package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
)

// cliBinary is the redamo binary the shell scenarios run, built once.
var cliBinary struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	// A scenario that leaves a process running fails the run.
	os.Exit(testproc.Main(m, func() {
		if cliBinary.dir != "" {
			os.RemoveAll(cliBinary.dir)
		}
	}))
}

// buildCLI builds redamo and returns the directory holding it, for PATH.
func buildCLI(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the shell scenarios need bash")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the shell scenarios need bash")
	}
	cliBinary.once.Do(func() {
		if cliBinary.dir, cliBinary.err = os.MkdirTemp("", "redamo-cli"); cliBinary.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(cliBinary.dir, "redamo"), ".").CombinedOutput()
		if err != nil {
			cliBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, cliBinary.err)
	return cliBinary.dir
}

// shellEnv is the environment of a scenario's scripts: redamo on PATH, no
// REDAMO_* settings but the test's (each script's default owner is its own
// shell's).
func shellEnv(binDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDAMO_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// raceScript takes the lock n times with the README's pattern, and inside
// the critical section appends two lines with its fencing token to a
// shared file, slowly: two holders at once would interleave them.
const raceScript = `set -u
id=$1 n=$2 out=$3
shift 3
for i in $(seq 1 "$n"); do
	if fence=$(redamo lock acquire race --ttl 20s --wait 60s --format value "$@"); then
		echo "enter $id $fence" >>"$out"
		sleep 0.05
		echo "leave $id $fence" >>"$out"
		redamo lock release race --quiet "$@" || echo "release-failed $id $i $?" >>"$out"
	else
		echo "acquire-failed $id $i $?" >>"$out"
	fi
done
`

// Two scripts race for one lock with redamo lock acquire --wait: exactly
// one runs the critical section at a time, every turn gets a larger
// fencing token, and neither ever fails to acquire or release. On every
// path: in-process on the table (no server anywhere), and through servers.
func TestCLIShellLockRace(t *testing.T) {
	bin := buildCLI(t)
	const rounds = 6
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "race.sh")
			require.NoError(t, os.WriteFile(script, []byte(raceScript), 0o755))
			out := filepath.Join(dir, "section.log")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			logs := make([][]byte, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					args := append([]string{script, strconv.Itoa(i), strconv.Itoa(rounds), out}, p.flags...)
					cmd := exec.Command("bash", args...)
					cmd.Env = shellEnv(bin)
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
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			require.Len(t, lines, 2*2*rounds, "%s", b)
			turns := map[string]int{}
			last := int64(0)
			for j := 0; j < len(lines); j += 2 {
				enter, leave := strings.Fields(lines[j]), strings.Fields(lines[j+1])
				require.Len(t, enter, 3, "%s", b)
				require.Equal(t, "enter", enter[0], "line %d: %s", j, b)
				require.Equal(t, []string{"leave", enter[1], enter[2]}, leave, "line %d: the section was entered twice at once:\n%s", j, b)
				fence, err := strconv.ParseInt(enter[2], 10, 64)
				require.NoError(t, err, "%s", b)
				require.Greater(t, fence, last, "fencing tokens grow with every turn:\n%s", b)
				last = fence
				turns[enter[1]]++
			}
			require.Equal(t, map[string]int{"0": rounds, "1": rounds}, turns)
		})
	}
}

// A producer and a consumer script over a list, and over a queue (where
// the consumer acknowledges each message with its receipt): the consumer
// takes every item, in order, while the producer pushes them.
func TestCLIShellProducerConsumer(t *testing.T) {
	bin := buildCLI(t)
	const items = 20
	scripts := []struct {
		name, setup, push, consume string
	}{
		{"list", "", `redamo rpush jobs "job-$i" --quiet "$@"`,
			`if job=$(redamo lpop jobs --format value "$@"); then
		echo "$job"
		got=$((got + 1))`},
		// One shard: the queue's order holds per shard.
		{"queue", `redamo queue config jobs --shards 1 --quiet "$@"`, `redamo queue push jobs "job-$i" --quiet "$@"`,
			`if out=$(redamo queue pop jobs --wait 200ms --format text "$@"); then
		[[ $out =~ receipt=([^ ]+)\ payload=([^ ]+) ]] || { echo "cannot read $out" >&2; exit 1; }
		redamo queue ack jobs "${BASH_REMATCH[1]}" --quiet "$@" || { echo "ack failed" >&2; exit 1; }
		echo "${BASH_REMATCH[2]}"
		got=$((got + 1))`},
	}
	for _, sc := range scripts {
		producer := `set -eu
` + sc.setup + `
for i in $(seq 1 ` + strconv.Itoa(items) + `); do
	` + sc.push + `
	sleep 0.01
done
`
		consumer := `set -u
got=0 tries=0
while [ "$got" -lt ` + strconv.Itoa(items) + ` ] && [ "$tries" -lt 2000 ]; do
	tries=$((tries + 1))
	` + sc.consume + `
	elif [ $? -ne 1 ]; then
		echo "pop failed" >&2
		exit 1
	else
		sleep 0.01
	fi
done
`
		t.Run(sc.name, func(t *testing.T) { shellProducerConsumer(t, bin, producer, consumer, items) })
	}
}

func shellProducerConsumer(t *testing.T, bin, producer, consumer string, items int) {
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			run := func(name, body string) *exec.Cmd {
				path := filepath.Join(dir, name)
				require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
				cmd := exec.Command("bash", append([]string{path}, p.flags...)...)
				cmd.Env = shellEnv(bin)
				return cmd
			}
			cons := run("consumer.sh", consumer)
			var consOut strings.Builder
			var consErr strings.Builder
			cons.Stdout, cons.Stderr = &consOut, &consErr
			// The consumer's group (the CLI processes its script runs)
			// is killed when the test ends, however it ends.
			cp := testproc.Start(t, cons)
			prod := run("producer.sh", producer)
			testproc.Prepare(prod)
			prodOut, err := prod.CombinedOutput()
			require.NoError(t, err, "%s", prodOut)
			select {
			case <-cp.Done():
				require.NoError(t, cp.Err(), "%s", consErr.String())
			case <-time.After(60 * time.Second):
				t.Fatalf("the consumer did not finish: %s", consOut.String())
			}
			var want strings.Builder
			for i := 1; i <= items; i++ {
				fmt.Fprintf(&want, "job-%d\n", i)
			}
			require.Equal(t, want.String(), consOut.String())
		})
	}
}
