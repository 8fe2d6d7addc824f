package scripting_test

// The package's own harness: commands run straight through a table with
// the scripting commands (no network), on the stores of testserver.Stores
// (the memory store, and DynamoDB Local when
// REDAMO_TEST_DYNAMODB_ENDPOINT is set), with their
// replies as a RESP2 client reads them, rendered on one line as the
// command scripts of commands/ render them: +simple, -error, :int, "bulk"
// (Go quoted), nil, nilarray, [a, b] for arrays.

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/scripting"
)

// forBackends runs body on each backend (testserver.Stores) with a fresh
// harness.
func forBackends(t *testing.T, body func(t *testing.T, b testserver.Backend, h *harness)) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			body(t, b, newHarness(b.Store))
		})
	}
}

// harness runs commands on one connection of a server of its own.
type harness struct {
	srv  *commands.Server
	conn *commands.Conn
}

func newHarness(st dynastore.Store) *harness {
	table := commands.NewTable()
	scripting.Register(table)
	return &harness{srv: &commands.Server{Store: model.On(st), Table: table}, conn: &commands.Conn{Proto: 2, Authed: true}}
}

// do runs one command and returns its reply.
func (h *harness) do(args ...string) reply {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	w := &replyTree{}
	cmd, msg := h.srv.Table.Resolve(b)
	if msg != "" {
		w.Error(msg)
		return w.top
	}
	c := &commands.Ctx{Context: dynastore.WithLabel(context.Background(), cmd.Name), Args: b, W: w, Target: h.srv.Store, Conn: h.conn, Srv: h.srv}
	cmd.Run(c)
	return w.top
}

// requireReply runs a command and checks its rendered reply.
func requireReply(t *testing.T, h *harness, want string, args ...string) {
	t.Helper()
	require.Equal(t, want, h.do(args...).String(), "%q", args)
}

// reply is a reply as a RESP2 client reads it.
type reply struct {
	kind  byte // + - : $ *
	str   string
	isNil bool
	elems []reply
}

func (r reply) String() string {
	switch {
	case r.kind == '$' && r.isNil:
		return "nil"
	case r.kind == '$':
		return strconv.Quote(r.str)
	case r.kind == '*' && r.isNil:
		return "nilarray"
	case r.kind == '*':
		parts := make([]string, len(r.elems))
		for i, e := range r.elems {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return string(r.kind) + r.str
}

// replyTree is a commands.Writer that builds the reply a RESP2 client
// reads (a map as a flat array, a double as a bulk string, ...).
type replyTree struct {
	top reply
	// open are the arrays being filled, each with the count of elements
	// it still lacks.
	open []*reply
	left []int
}

func (w *replyTree) add(r reply) {
	for {
		if len(w.open) == 0 {
			w.top = r
			return
		}
		i := len(w.open) - 1
		w.open[i].elems = append(w.open[i].elems, r)
		if w.left[i]--; w.left[i] > 0 {
			return
		}
		r = *w.open[i]
		w.open, w.left = w.open[:i], w.left[:i]
	}
}

func (w *replyTree) Proto() int                { return 2 }
func (w *replyTree) Simple(s string)           { w.add(reply{kind: '+', str: s}) }
func (w *replyTree) Error(msg string)          { w.add(reply{kind: '-', str: msg}) }
func (w *replyTree) Int(n int64)               { w.add(reply{kind: ':', str: strconv.FormatInt(n, 10)}) }
func (w *replyTree) Bulk(b []byte)             { w.BulkString(string(b)) }
func (w *replyTree) BulkString(s string)       { w.add(reply{kind: '$', str: s}) }
func (w *replyTree) Nil()                      { w.add(reply{kind: '$', isNil: true}) }
func (w *replyTree) NilArray()                 { w.add(reply{kind: '*', isNil: true}) }
func (w *replyTree) Map(n int)                 { w.Array(2 * n) }
func (w *replyTree) Set(n int)                 { w.Array(n) }
func (w *replyTree) Double(f float64)          { w.Bulk(commands.FormatDouble(nil, f)) }
func (w *replyTree) HumanDouble(f float64)     { w.Bulk(commands.FormatHumanDouble(nil, f)) }
func (w *replyTree) Bool(b bool)               { w.Int(commands.BoolInt(b)) }
func (w *replyTree) Verbatim(format, s string) { w.BulkString(s) }
func (w *replyTree) BigNumber(digits string)   { w.BulkString(digits) }

func (w *replyTree) Array(n int) {
	if n <= 0 {
		w.add(reply{kind: '*'})
		return
	}
	w.open, w.left = append(w.open, &reply{kind: '*'}), append(w.left, n)
}

// TestLuaErrors replays testdata/lua-errors.txt: "@case name" starts a
// case on an empty store, "> CMD args..." runs a command (arguments
// split on spaces, or Go-quoted), "< reply" is the reply redis-server
// 7.0.15 gave; "#" lines are comments.
func TestLuaErrors(t *testing.T) {
	const path = "testdata/lua-errors.txt"
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	type step struct {
		line int
		args []string
		want string
	}
	var names []string
	var cases [][]step
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "@case "):
			names, cases = append(names, strings.TrimSpace(line[6:])), append(cases, nil)
		case strings.HasPrefix(line, "> ") && len(cases) > 0:
			args, err := splitArgs(line[2:])
			require.NoError(t, err, "%s:%d", path, n)
			cases[len(cases)-1] = append(cases[len(cases)-1], step{line: n, args: args})
		case strings.HasPrefix(line, "< ") && len(cases) > 0 && len(cases[len(cases)-1]) > 0:
			cases[len(cases)-1][len(cases[len(cases)-1])-1].want = line[2:]
		default:
			t.Fatalf("%s:%d: cannot parse %q", path, n, line)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, cases)
	for _, b := range testserver.Stores(t) {
		for i, steps := range cases {
			t.Run(names[i]+"/"+b.Name, func(t *testing.T) {
				h := newHarness(b.Store)
				requireReply(t, h, "+OK", "FLUSHALL")
				for _, st := range steps {
					require.Equal(t, st.want, h.do(st.args...).String(), "%s:%d: %s", path, st.line, strings.Join(st.args, " "))
				}
			})
		}
	}
}

// splitArgs splits a command line on spaces; an argument may be Go-quoted.
func splitArgs(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return out, nil
		}
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			u, _ := strconv.Unquote(q)
			out, s = append(out, u), s[len(q):]
			continue
		}
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		out, s = append(out, s[:i]), s[i:]
	}
}
