package commands

// Script tests: testdata/scripts/*.txt hold command sequences with the
// replies redis-server 7.0.15 gave, recorded with
//
//	go test ./commands -run TestScripts -args -record-redis=127.0.0.1:6379
//
// (a throwaway server: every case starts with FLUSHALL). The test replays
// each case through the command table against the memory store, and against
// DynamoDB Local when REDAMO_TEST_DYNAMODB_ENDPOINT is set, and demands the
// same replies, compared as RESP2 bytes.
//
// Format: "@case name" starts a case on an empty store, in db 0, at a fixed
// clock. "> CMD args..." runs a command (arguments split on spaces, or
// Go-quoted); "sort> ..." sorts the reply's array before comparing (KEYS).
// "< reply" is the expected reply. "@sleep ms" advances the clock (the
// recorder really sleeps). "@select n" switches database. "#" lines are
// comments.

import (
	"bufio"
	"bytes"
	"context"

	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

var recordRedis = flag.String("record-redis", "", "host:port of a throwaway redis-server to record testdata/scripts replies from")

// ---- a Writer that records RESP2 bytes --------------------------------------------

type respRecorder struct {
	buf    bytes.Buffer
	errors int
}

func (r *respRecorder) Proto() int       { return 2 }
func (r *respRecorder) Simple(s string)  { fmt.Fprintf(&r.buf, "+%s\r\n", s) }
func (r *respRecorder) Error(msg string) { r.errors++; fmt.Fprintf(&r.buf, "-%s\r\n", msg) }
func (r *respRecorder) Int(n int64)      { fmt.Fprintf(&r.buf, ":%d\r\n", n) }
func (r *respRecorder) Bulk(b []byte) {
	fmt.Fprintf(&r.buf, "$%d\r\n", len(b))
	r.buf.Write(b)
	r.buf.WriteString("\r\n")
}
func (r *respRecorder) BulkString(s string)       { r.Bulk([]byte(s)) }
func (r *respRecorder) Nil()                      { r.buf.WriteString("$-1\r\n") }
func (r *respRecorder) NilArray()                 { r.buf.WriteString("*-1\r\n") }
func (r *respRecorder) Array(n int)               { fmt.Fprintf(&r.buf, "*%d\r\n", n) }
func (r *respRecorder) Map(n int)                 { fmt.Fprintf(&r.buf, "*%d\r\n", 2*n) }
func (r *respRecorder) Set(n int)                 { fmt.Fprintf(&r.buf, "*%d\r\n", n) }
func (r *respRecorder) Double(f float64)          { r.BulkString(strconv.FormatFloat(f, 'g', 17, 64)) }
func (r *respRecorder) Bool(b bool)               { r.Int(boolInt(b)) }
func (r *respRecorder) HumanDouble(f float64)     { r.Bulk(FormatHumanDouble(nil, f)) }
func (r *respRecorder) Verbatim(format, s string) { r.BulkString(s) }
func (r *respRecorder) BigNumber(digits string)   { r.BulkString(digits) }

// ---- RESP2 parsing and rendering ----------------------------------------------------

// respValue is a parsed RESP2 reply.
type respValue struct {
	kind  byte // + - : $ *
	str   string
	isNil bool
	elems []respValue
}

func readRESP(r *bufio.Reader) (respValue, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return respValue{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return respValue{}, fmt.Errorf("bad RESP line %q", line)
	}
	v := respValue{kind: line[0], str: line[1 : len(line)-2]}
	switch v.kind {
	case '+', '-', ':':
		return v, nil
	case '$':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.isNil = true
			return v, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return v, err
		}
		v.str = string(b[:n])
		return v, nil
	case '*':
		n, err := strconv.Atoi(v.str)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.isNil = true
			return v, nil
		}
		for i := 0; i < n; i++ {
			e, err := readRESP(r)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	}
	return v, fmt.Errorf("bad RESP type %q", line)
}

// render writes a reply on one line: +simple, -error, :int, "bulk" (Go
// quoted), nil, nilarray, [a, b] arrays.
func render(v respValue, sorted bool) string {
	switch v.kind {
	case '+', '-', ':':
		return string(v.kind) + v.str
	case '$':
		if v.isNil {
			return "nil"
		}
		return strconv.Quote(v.str)
	}
	if v.isNil {
		return "nilarray"
	}
	parts := make([]string, len(v.elems))
	for i, e := range v.elems {
		parts[i] = render(e, sorted)
	}
	if sorted {
		sort.Strings(parts)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ---- script files ---------------------------------------------------------------------

type scriptStep struct {
	line   int
	args   [][]byte // a command
	sorted bool
	want   string
	sleep  time.Duration // a @sleep
	db     int           // a @select (-1: none)
}

type scriptCase struct {
	name  string
	steps []scriptStep
}

// splitArgs splits a command line on spaces; an argument may be Go-quoted.
func splitArgs(s string) ([][]byte, error) {
	var out [][]byte
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return out, nil
		}
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted argument in %q: %w", s, err)
			}
			u, _ := strconv.Unquote(q)
			out = append(out, []byte(u))
			s = s[len(q):]
			continue
		}
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		out = append(out, []byte(s[:i]))
		s = s[i:]
	}
}

func parseScript(path string) ([]scriptCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []scriptCase
	for n, line := range strings.Split(string(data), "\n") {
		n++
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "@case ") {
			cases = append(cases, scriptCase{name: strings.TrimSpace(line[6:])})
			continue
		}
		if len(cases) == 0 {
			return nil, fmt.Errorf("%s:%d: step before @case", path, n)
		}
		cs := &cases[len(cases)-1]
		switch {
		case strings.HasPrefix(line, "@sleep "):
			ms, err := strconv.Atoi(strings.TrimSpace(line[7:]))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			cs.steps = append(cs.steps, scriptStep{line: n, sleep: time.Duration(ms) * time.Millisecond, db: -1})
		case strings.HasPrefix(line, "@select "):
			db, err := strconv.Atoi(strings.TrimSpace(line[8:]))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			cs.steps = append(cs.steps, scriptStep{line: n, db: db})
		case strings.HasPrefix(line, "> "), strings.HasPrefix(line, "sort> "):
			sorted := strings.HasPrefix(line, "sort> ")
			args, err := splitArgs(line[strings.IndexByte(line, '>')+2:])
			if err != nil || len(args) == 0 {
				return nil, fmt.Errorf("%s:%d: bad command: %v", path, n, err)
			}
			cs.steps = append(cs.steps, scriptStep{line: n, args: args, sorted: sorted, db: -1})
		case strings.HasPrefix(line, "< "):
			if len(cs.steps) == 0 || cs.steps[len(cs.steps)-1].args == nil {
				return nil, fmt.Errorf("%s:%d: reply without a command", path, n)
			}
			cs.steps[len(cs.steps)-1].want = line[2:]
		default:
			return nil, fmt.Errorf("%s:%d: cannot parse %q", path, n, line)
		}
	}
	return cases, nil
}

func writeScript(path string, cases []scriptCase, header string) error {
	var b strings.Builder
	b.WriteString(header)
	for _, cs := range cases {
		fmt.Fprintf(&b, "\n@case %s\n", cs.name)
		for _, st := range cs.steps {
			switch {
			case st.args == nil && st.db >= 0:
				fmt.Fprintf(&b, "@select %d\n", st.db)
			case st.args == nil:
				fmt.Fprintf(&b, "@sleep %d\n", st.sleep.Milliseconds())
			default:
				prefix := "> "
				if st.sorted {
					prefix = "sort> "
				}
				parts := make([]string, len(st.args))
				for i, a := range st.args {
					parts[i] = quoteArg(a)
				}
				fmt.Fprintf(&b, "%s%s\n< %s\n", prefix, strings.Join(parts, " "), st.want)
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func quoteArg(a []byte) string {
	s := string(a)
	if s == "" || strings.ContainsAny(s, " \"\\") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}

// scriptHeader returns the comment lines at the top of a script file.
func scriptHeader(path string) string {
	data, _ := os.ReadFile(path)
	var b strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// ---- running ---------------------------------------------------------------------------

// harness runs commands straight through the command table.
type harness struct {
	srv  *Server
	conn *Conn
	now  time.Time
}

func newHarness(st dynastore.Store) *harness {
	// The clock only moves when a test moves it, but starts at the real time:
	// DynamoDB Local garbage-collects items whose ttl attribute is in the
	// real past, as the service does.
	h := &harness{conn: &Conn{Proto: 2, Authed: true}, now: time.UnixMilli(time.Now().UnixMilli())}
	h.srv = &Server{Store: model.On(st), Table: NewTable(), Clock: func() time.Time { return h.now }}
	return h
}

// client returns another connection to h's server (same store and clock):
// a Conn belongs to one goroutine, so concurrent clients each need one.
func (h *harness) client() *harness {
	return &harness{srv: h.srv, conn: &Conn{Proto: 2, Authed: true}}
}

// do runs one command and returns its reply as RESP2 bytes.
func (h *harness) do(args ...[]byte) []byte {
	rec := &respRecorder{}
	cmd, msg := h.srv.Table.Resolve(args)
	if msg != "" {
		rec.Error(msg)
		return rec.buf.Bytes()
	}
	c := &Ctx{
		Context: dynastore.WithLabel(context.Background(), cmd.Name),
		Args:    args,
		W:       rec,
		Target:  h.srv.Store,
		Conn:    h.conn,
		Srv:     h.srv,
	}
	cmd.Run(c)
	return rec.buf.Bytes()
}

// doS runs a command given as strings.
func (h *harness) doS(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return h.do(b...)
}

func renderBytes(t testing.TB, b []byte, sorted bool) string {
	t.Helper()
	v, err := readRESP(bufio.NewReader(bytes.NewReader(b)))
	require.NoError(t, err, "reply %q", b)
	return render(v, sorted)
}

// scriptStores returns the stores a script case runs on, each with a reset
// function giving an empty keyspace.
func scriptStores(t *testing.T) map[string]func() dynastore.Store {
	stores := map[string]func() dynastore.Store{
		"memory": func() dynastore.Store { return memory.New(memory.Options{}) },
	}
	if os.Getenv(dynamotest.EnvEndpoint) != "" || os.Getenv(dynamotest.EnvRequire) == "1" {
		st := dynamotest.NewStore(t, dynamo.Config{})
		stores["dynamodb"] = func() dynastore.Store {
			h := newHarness(st)
			require.Equal(t, "+OK\r\n", string(h.doS("FLUSHALL")))
			return st
		}
	}
	return stores
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	if *recordRedis != "" {
		for _, f := range files {
			recordScript(t, f, *recordRedis)
		}
		return
	}
	stores := scriptStores(t)
	for _, f := range files {
		cases, err := parseScript(f)
		require.NoError(t, err)
		for _, cs := range cases {
			for name, newStore := range stores {
				t.Run(filepath.Base(f)+"/"+cs.name+"/"+name, func(t *testing.T) {
					h := newHarness(newStore())
					for _, st := range cs.steps {
						switch {
						case st.args == nil && st.db >= 0:
							h.conn.DB = st.db
						case st.args == nil:
							h.now = h.now.Add(st.sleep)
						default:
							got := renderBytes(t, h.do(st.args...), st.sorted)
							require.Equal(t, st.want, got, "%s:%d: %s", f, st.line, bytes.Join(st.args, []byte(" ")))
						}
					}
				})
			}
		}
	}
}

// recordScript runs every case of a script on a real Redis and rewrites the
// expected replies.
func recordScript(t *testing.T, path, addr string) {
	cases, err := parseScript(path)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	send := func(args ...[]byte) respValue {
		var b bytes.Buffer
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		_, err := conn.Write(b.Bytes())
		require.NoError(t, err)
		v, err := readRESP(r)
		require.NoError(t, err)
		return v
	}
	for i := range cases {
		send([]byte("SELECT"), []byte("0"))
		send([]byte("FLUSHALL"))
		for j := range cases[i].steps {
			st := &cases[i].steps[j]
			switch {
			case st.args == nil && st.db >= 0:
				send([]byte("SELECT"), []byte(strconv.Itoa(st.db)))
			case st.args == nil:
				time.Sleep(st.sleep)
			default:
				st.want = render(send(st.args...), st.sorted)
			}
		}
	}
	require.NoError(t, writeScript(path, cases, scriptHeader(path)))
}
