package compat

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redamo/redamo/internal/testproc"
)

// RedisServer is a throwaway real redis-server: no persistence, loopback
// only, on a free port, with its configuration given on stdin.
type RedisServer struct {
	Addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// RedisServerPath finds the redis-server binary: $REDAMO_COMPAT_REDIS_SERVER,
// else redis-server on PATH, else Debian's /usr/bin/redis-server.
func RedisServerPath() (string, error) {
	if p := os.Getenv("REDAMO_COMPAT_REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("compat: redis-server not found (apt-get install redis-server, or set REDAMO_COMPAT_REDIS_SERVER)")
}

// FreePort returns a loopback TCP port nothing listens on right now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("compat: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartRedis starts a redis-server with the given extra configuration lines
// (e.g. "requirepass secret") and waits until it answers PING.
func StartRedis(extraConfig ...string) (*RedisServer, error) {
	bin, err := RedisServerPath()
	if err != nil {
		return nil, err
	}
	var lastErr error
	// A free port can be taken between FreePort and the server's bind: retry.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s, err := startRedisOn(bin, port, extraConfig)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startRedisOn(bin string, port int, extra []string) (*RedisServer, error) {
	conf := []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		`save ""`,
		"appendonly no",
		"daemonize no",
		`logfile ""`,
		"loglevel warning",
		// The suite's cases touch a handful of keys; no eviction surprises.
		"maxmemory 0",
	}
	conf = append(conf, extra...)
	cmd := exec.Command(bin, "-")
	cmd.Stdin = strings.NewReader(strings.Join(conf, "\n") + "\n")
	log := &syncBuffer{}
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Dir = os.TempDir()
	// Its own process group, killed with the process that started it:
	// a test binary ended by go test's -timeout runs no clean-up.
	testproc.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("compat: start redis-server: %w", err)
	}
	s := &RedisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("compat: redis-server exited: %s", log.String())
		default:
		}
		if c, err := Dial(s.Addr, time.Second); err == nil {
			raw, err := c.DoStrings("PING")
			c.Close()
			if err == nil && string(raw) == "+PONG\r\n" {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("compat: redis-server on port %d did not answer PING: %s", port, log.String())
}

// Stop kills the server and waits for it to exit.
func (s *RedisServer) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// syncBuffer collects a child's output; the child's copier goroutine and the
// start-up check read and write it concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ReferenceRedis is the address of the redis-server 7.0.15 a test checks
// recorded replies against: the one $envVar names, else a throwaway one
// stopped when the test ends. Without redis-server the test is skipped,
// or fails under make test (REDAMO_TEST_REQUIRE_DYNAMODB=1), which
// installs it.
func ReferenceRedis(t testing.TB, envVar string) string {
	t.Helper()
	if addr := os.Getenv(envVar); addr != "" {
		return addr
	}
	if _, err := RedisServerPath(); err != nil {
		if os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" {
			t.Fatalf("%v (REDAMO_TEST_REQUIRE_DYNAMODB=1: this must run)", err)
		}
		t.Skip(err)
	}
	s, err := StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.Addr
}
