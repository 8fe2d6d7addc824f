package fuzz

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// binary is redamo, built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redamo-fuzz")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redamo")
	args := []string{"build", "-o", binary}
	if os.Getenv(envRace) == "1" {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "../cmd/redamo")...)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building redamo:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// logBuffer collects a process's output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// from returns the output after offset, and the offset of its end.
func (l *logBuffer) from(off int) (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off > l.b.Len() {
		off = l.b.Len()
	}
	return string(l.b.Bytes()[off:]), l.b.Len()
}

// server is one redamo process under the fuzzer: a separate process, so
// that even a Go fatal error (a stack overflow, a concurrent map write)
// shows as its death instead of the test's.
type server struct {
	store string // "memory" or "dynamodb"
	args  []string
	addr  string
	cmd   *exec.Cmd
	log   *logBuffer
	// logged is how far the log has been looked at.
	logged int
	exited chan struct{}
	// panics is INFO redamo's recovered_panics when last read.
	panics int64
	// config is each CONFIG SET parameter's value at start, restored
	// before every case.
	config map[string]string
}

// startServer starts redamo on store: memory, or a fresh DynamoDB Local
// table (deleted when the test ends).
func startServer(t testing.TB, store string) *server {
	t.Helper()
	s := &server{store: store}
	s.fresh(t)
	t.Cleanup(s.stop)
	return s
}

// fresh replaces the process by one on an empty store: a memory store
// that FLUSHALL after FLUSHALL filled with dead collection members (the
// sweeper takes them only after its grace period), and every scan of the
// keyspace reads through them, slows a long run down.
func (s *server) fresh(t testing.TB) {
	t.Helper()
	s.stop()
	s.args = []string{"--store", s.store}
	if s.store == "dynamodb" {
		ep := os.Getenv(testserver.EnvEndpoint)
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		table := "redamo_fuzz_" + hex.EncodeToString(rnd[:])
		s.args = append(s.args, "--endpoint", ep, "--table", table, "--create-table")
		t.Cleanup(func() { deleteTable(t, ep, table) })
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

func deleteTable(t testing.TB, endpoint, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := dynamo.New(ctx, dynamo.Config{Table: table, Endpoint: endpoint})
	if err == nil {
		err = st.DeleteTable(ctx)
		_ = st.Close()
	}
	if err != nil {
		t.Logf("fuzz: delete table %s: %v", table, err)
	}
}

// start starts (or restarts) the process on a free port and waits until
// it answers PING.
func (s *server) start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	ln.Close()
	s.log = &logBuffer{}
	s.logged = 0
	s.panics = 0
	s.cmd = exec.Command(binary, append(s.args, "--addr", s.addr)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if os.Getenv(envRace) == "1" {
		s.cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	}
	// Killed with the test binary, should go test's -timeout end it.
	testproc.Prepare(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if !s.alive() {
			out, _ := s.log.from(0)
			return fmt.Errorf("redamo exited at start: %s", out)
		}
		if c, err := dial(s.addr, 2, 5*time.Second); err == nil {
			_, err := c.do(cmdOf("PING"))
			c.close()
			if err == nil {
				return s.snapshotConfig()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("redamo on %s did not answer PING", s.addr)
}

func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop ends the process: SIGTERM, then SIGKILL.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil || !s.alive() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// died reports whether the process has exited, waiting up to wait for it
// (a connection that just broke may be a process dying), and its last
// output.
func (s *server) died(wait time.Duration) (bool, string) {
	if s.alive() {
		select {
		case <-s.exited:
		case <-time.After(wait):
			return false, ""
		}
	}
	out, _ := s.log.from(0)
	if len(out) > 6000 {
		out = "..." + out[len(out)-6000:]
	}
	return true, fmt.Sprintf("%v\n%s", s.cmd.ProcessState, out)
}

// badLog matches log lines that are bugs: a recovered panic, a handler
// that broke the one-reply rule, the race detector.
var badLog = regexp.MustCompile(`(?i)panic|incomplete or extra reply|DATA RACE|fatal error`)

// newLogProblems returns the log lines written since the last call that
// are bugs.
func (s *server) newLogProblems() []string {
	out, end := s.log.from(s.logged)
	s.logged = end
	var bad []string
	for _, line := range strings.Split(out, "\n") {
		if badLog.MatchString(line) {
			bad = append(bad, cut(line, 600))
		}
	}
	return bad
}

var recoveredPanics = regexp.MustCompile(`recovered_panics:(\d+)`)

// recoveredPanics reads INFO redamo's recovered_panics.
func (s *server) readPanics(c *conn) (int64, error) {
	v, err := c.do(cmdOf("INFO", "redamo"))
	if err != nil {
		return 0, err
	}
	m := recoveredPanics.FindSubmatch(v.str)
	if m == nil {
		return 0, fmt.Errorf("INFO redamo has no recovered_panics: %s", v.text())
	}
	var n int64
	_, err = fmt.Sscan(string(m[1]), &n)
	return n, err
}

// snapshotConfig records the values of the parameters the fuzzer sets.
func (s *server) snapshotConfig() error {
	c, err := dial(s.addr, 2, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	s.config = map[string]string{}
	for _, p := range configParams {
		v, err := c.do(cmdOf("CONFIG", "GET", p))
		if err != nil {
			return err
		}
		if len(v.elems) == 2 {
			s.config[p] = string(v.elems[1].str)
		}
	}
	return nil
}

// reset readies the server for a case: no keys, no functions or cached
// scripts, the configuration it started with.
func (s *server) reset(c *conn) error {
	cmds := []command{cmdOf("FLUSHALL"), cmdOf("FUNCTION", "FLUSH"), cmdOf("SCRIPT", "FLUSH")}
	for p, v := range s.config {
		cmds = append(cmds, cmdOf("CONFIG", "SET", p, v))
	}
	vs, err := c.pipeline(cmds)
	if err != nil {
		return err
	}
	for i, v := range vs {
		if v.isError() {
			return fmt.Errorf("%s: %s", cmds[i].fullName(), v.text())
		}
	}
	return nil
}
