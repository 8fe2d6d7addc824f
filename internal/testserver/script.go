package testserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
)

// A script is a file of raw protocol exchanges, for byte-exact tests that
// can also run against a real redis-server (to prove the expectations are
// Redis's). Each case runs on a fresh connection:
//
//	=== case name
//	send "PING\r\n"             bytes to send (a Go string literal)
//	recv "+PONG\r\n"            the next complete reply, byte for byte
//	match "^:\d+\r\n$"          the next complete reply matches the regexp
//	closed                      the server closes the connection
//	redamo-only                 the case describes redamo-specific behaviour;
//	                            skipped against redis-server
//
// Blank lines and lines starting with # are ignored.
type scriptCase struct {
	name       string
	line       int
	steps      []scriptStep
	redamoOnly bool
}

type scriptStep struct {
	op, arg string
	line    int
}

// ParseScript reads a script file.
func ParseScript(t testing.TB, path string) []scriptCase {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var cases []scriptCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			cases = append(cases, scriptCase{name: name, line: n})
			continue
		}
		require.NotEmpty(t, cases, "%s:%d: step before the first case", path, n)
		c := &cases[len(cases)-1]
		op, rest, _ := strings.Cut(line, " ")
		switch op {
		case "closed":
			c.steps = append(c.steps, scriptStep{op: op, line: n})
		case "redamo-only":
			c.redamoOnly = true
		case "send", "recv", "match":
			s, err := strconv.Unquote(strings.TrimSpace(rest))
			require.NoError(t, err, "%s:%d: %s needs a Go string literal", path, n, op)
			if op == "match" {
				_, err := regexp.Compile(s)
				require.NoError(t, err, "%s:%d", path, n)
			}
			c.steps = append(c.steps, scriptStep{op: op, arg: s, line: n})
		default:
			t.Fatalf("%s:%d: unknown step %q", path, n, op)
		}
	}
	require.NoError(t, sc.Err())
	return cases
}

// RunScript runs every case of the script at path against addr, each as a
// subtest. forRedis skips the redamo-only cases.
func RunScript(t *testing.T, addr, path string, forRedis bool) {
	t.Helper()
	for _, c := range ParseScript(t, path) {
		t.Run(c.name, func(t *testing.T) {
			if forRedis && c.redamoOnly {
				t.Skip("redamo-only case")
			}
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			require.NoError(t, err)
			defer conn.Close()
			r := bufio.NewReader(conn)
			where := func(s scriptStep) string { return fmt.Sprintf("%s:%d", filepath.Base(path), s.line) }
			for _, s := range c.steps {
				require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
				switch s.op {
				case "send":
					_, err := conn.Write([]byte(s.arg))
					require.NoError(t, err, where(s))
				case "recv":
					got, err := ReadReply(r)
					require.NoError(t, err, where(s))
					require.Equal(t, s.arg, string(got), where(s))
				case "match":
					got, err := ReadReply(r)
					require.NoError(t, err, where(s))
					require.Regexp(t, s.arg, string(got), where(s))
				case "closed":
					b, err := r.ReadByte()
					require.ErrorIs(t, err, io.EOF, "%s: got %q instead of the connection closing", where(s), b)
				}
			}
		})
	}
}

// ReadReply reads one complete RESP2 or RESP3 reply and returns its raw
// bytes.
func ReadReply(r *bufio.Reader) ([]byte, error) {
	var out []byte
	err := readValue(r, &out)
	return out, err
}

func readValue(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	*out = append(*out, line...)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed reply line %q", line)
	}
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		*out = append(*out, buf...)
		return nil
	case '*', '~', '%', '>', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad count in %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readValue(r, out); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("unknown reply type in %q", line)
	}
}

// RedisServer starts a real redis-server on a free port for the test, with
// extra config directives (e.g. "requirepass", "x"), and returns its
// address. It skips the test when redis-server is not installed.
func RedisServer(t testing.TB, directives ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}
	for i := 0; i+1 < len(directives); i += 2 {
		args = append(args, "--"+directives[i], directives[i+1])
	}
	testproc.Start(t, exec.Command(bin, args...))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			return addr
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not start: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}
