package fuzz

import (
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"time"
)

// finding is one thing the oracle caught.
type finding struct {
	// kind: crash, panic, malformed, hang, closed, internal,
	// inconsistent, errclass; transient (the store failing, not redamo)
	// is only logged.
	kind string
	// cmd is the command it is about ("config|set"), "" for none.
	cmd    string
	detail string
	// sig, when set, is what tells this bug from others of its kind and
	// command (see signature).
	sig string
}

func (f finding) String() string {
	if f.cmd == "" {
		return f.kind + ": " + f.detail
	}
	return fmt.Sprintf("%s in %s: %s", f.kind, f.cmd, f.detail)
}

var digits = regexp.MustCompile(`[0-9]+|"[^"]*"`)

// signature groups findings that are the same bug: its kind, command and
// the start of its detail without numbers or quoted values.
func (f finding) signature() string {
	if f.sig != "" {
		return f.kind + " " + f.cmd + " " + f.sig
	}
	return f.kind + " " + f.cmd + " " + cut(digits.ReplaceAllString(f.detail, "#"), 60)
}

// goPanic matches error replies that carry a Go panic's message: a panic
// recovered somewhere (a script's protected call) that should never have
// happened.
var goPanic = regexp.MustCompile(`internal error|runtime error|nil pointer|index out of range \[|slice bounds out of range|interface conversion|invalid memory address|goroutine \d`)

// transient matches the errors of a store that is slow or failing (a
// DynamoDB Local starved of CPU, say): redamo's answer to them is right,
// and the fuzzer retries what it needs (its reset, its keyspace check).
var transient = regexp.MustCompile(`DynamoDB is unavailable|DynamoDB is throttling|concurrent update conflict`)

// inspect reports error replies, at any depth (EXEC's, a script's), that
// betray a bug.
func inspect(cmd command, v *value) []finding {
	var out []finding
	var walk func(v *value)
	walk = func(v *value) {
		if v.isError() && goPanic.Match(v.str) {
			out = append(out, finding{kind: "internal", cmd: cmd.fullName(), detail: v.text()})
		}
		for _, e := range v.elems {
			walk(e)
		}
	}
	walk(v)
	return out
}

// caseRun is one program's run on one server.
type caseRun struct {
	s     *server
	p     *program
	conns map[int]*conn
	// killed: a CLIENT KILL was sent, so any connection may be closed.
	killed   bool
	findings []finding
	// fatal: the run cannot go on (the server died, a connection is in an
	// unknown state).
	fatal bool
	sent  int
}

const (
	replyTimeout = 20 * time.Second
	// rawTimeout bounds how long the server may take to close a
	// connection whose client has sent everything.
	rawTimeout = 20 * time.Second
)

// runProgram runs p on s from an empty keyspace and applies the whole
// oracle. It restarts s first if an earlier case killed it.
func runProgram(s *server, p *program) ([]finding, int) {
	if !s.alive() {
		if err := s.start(); err != nil {
			return []finding{{kind: "crash", detail: "restart: " + err.Error()}}, 0
		}
	}
	r := &caseRun{s: s, p: p, conns: map[int]*conn{}}
	defer r.closeAll()
	admin, err := dial(s.addr, 2, replyTimeout)
	if err == nil {
		err = s.reset(admin)
		for try := 1; err != nil && transient.MatchString(err.Error()) && try < 5; try++ {
			time.Sleep(time.Duration(try) * time.Second)
			err = s.reset(admin)
		}
		admin.close()
	}
	if err != nil {
		r.broken("", err)
		return r.findings, 0
	}
	for _, w := range p.writes {
		if r.fatal {
			break
		}
		if w.raw != nil {
			r.raw(w.raw)
			continue
		}
		r.write(w)
	}
	if !r.fatal {
		r.finish()
	}
	if !r.fatal {
		r.check()
	}
	r.postmortem()
	return r.findings, r.sent
}

func (r *caseRun) add(f finding) { r.findings = append(r.findings, f) }

// broken handles a failed exchange: the server died, hung, sent bad
// bytes or closed the connection.
func (r *caseRun) broken(cmd string, err error) {
	r.fatal = true
	switch {
	case errors.Is(err, errMalformed):
		r.add(finding{kind: "malformed", cmd: cmd, detail: err.Error()})
	case errors.Is(err, errHang):
		r.add(finding{kind: "hang", cmd: cmd, detail: err.Error()})
	default:
		if dead, out := r.s.died(time.Second); dead {
			r.add(finding{kind: "crash", cmd: cmd, detail: out})
			return
		}
		r.add(finding{kind: "closed", cmd: cmd, detail: err.Error()})
	}
}

func (r *caseRun) conn(i int) *conn {
	c := r.conns[i]
	if c != nil && !c.closed {
		return c
	}
	c, err := dial(r.s.addr, r.p.proto, replyTimeout)
	if err != nil {
		r.broken("", err)
		return nil
	}
	r.conns[i] = c
	return c
}

func (r *caseRun) write(w write) {
	c := r.conn(w.conn)
	if c == nil {
		return
	}
	if !r.collect(c) {
		return
	}
	if c = r.conn(w.conn); c == nil {
		return
	}
	async := false
	for _, cmd := range w.cmds {
		switch cmd.fullName() {
		case "client|kill":
			r.killed = true
		}
		if blocking[cmd.name()] != nil {
			async = true
		}
	}
	r.sent += len(w.cmds)
	if err := c.send(w.cmds); err != nil {
		if r.killed || c.closed {
			c.closed = true
			return
		}
		r.broken(w.cmds[0].fullName(), err)
		return
	}
	if !async {
		r.collect(c)
	}
}

// collect reads every pending reply of c; false when the case cannot go on.
func (r *caseRun) collect(c *conn) bool {
	for len(c.pending) > 0 {
		cmd, v, err := c.next()
		if err != nil {
			if r.killed && (errors.Is(err, io.EOF) || isReset(err)) {
				c.closed, c.pending = true, nil
				return true
			}
			r.broken(cmd.fullName(), fmt.Errorf("reply to %s: %w", cut(formatCommand(cmd), 300), err))
			return false
		}
		r.findings = append(r.findings, inspect(cmd, v)...)
		tally(cmd, v)
		if c.closed {
			// QUIT: the connection ends here, with nothing more.
			if err := c.expectEOF(); err != nil {
				r.broken("quit", err)
				return false
			}
		}
	}
	return true
}

// raw sends bytes on a connection of their own, ends it and reads every
// reply to the end: each well-formed, and the connection closed.
func (r *caseRun) raw(b []byte) {
	r.sent++
	nc, err := net.DialTimeout("tcp", r.s.addr, replyTimeout)
	if err != nil {
		r.broken("", err)
		return
	}
	defer nc.Close()
	rr := newReplyReader(nc)
	// An inline HELLO 3 may switch the protocol on the way.
	rr.proto = 0
	_ = nc.SetDeadline(time.Now().Add(rawTimeout))
	if _, err := nc.Write(b); err != nil && !isReset(err) {
		r.broken("", err)
		return
	}
	_ = nc.(*net.TCPConn).CloseWrite()
	for {
		v, err := rr.read()
		if errors.Is(err, io.EOF) || err != nil && isReset(err) {
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("connection not closed after the client's end: %w", errHang)
		}
		if err != nil {
			r.broken("", fmt.Errorf("raw request %q: %w", cut(string(b), 200), err))
			return
		}
		r.findings = append(r.findings, inspect(command{[]byte("raw")}, v)...)
	}
}

// finish collects every connection's replies, then checks that each
// connection has exactly as many replies as commands: after RESET and
// an ECHO nothing but their replies may come.
func (r *caseRun) finish() {
	for i := range 2 {
		c := r.conns[i]
		if c == nil || c.closed {
			continue
		}
		if !r.collect(c) || c.closed {
			continue
		}
		marker := fmt.Sprintf("end-of-case-%d", i)
		if err := c.send([]command{cmdOf("RESET"), cmdOf("ECHO", marker)}); err != nil {
			if r.killed {
				continue
			}
			r.broken("reset", err)
			return
		}
		var got []string
		for len(c.pending) > 0 {
			_, v, err := c.next()
			if err != nil {
				if r.killed && (errors.Is(err, io.EOF) || isReset(err)) {
					break
				}
				r.broken("reset", err)
				return
			}
			got = append(got, v.text())
		}
		if len(got) == 2 && (got[0] != `+"RESET"` || got[1] != fmt.Sprintf("$%q", marker)) {
			r.add(finding{kind: "malformed", cmd: "reset", detail: fmt.Sprintf("the connection's replies are out of step: RESET and ECHO answered %v", got)})
			r.fatal = true
		}
	}
}

func (r *caseRun) closeAll() {
	for _, c := range r.conns {
		c.close()
	}
}

// check reads the keyspace back.
func (r *caseRun) check() {
	c, err := dial(r.s.addr, r.p.proto, replyTimeout)
	if err != nil {
		r.broken("", err)
		return
	}
	defer c.close()
	problems, err := checkKeyspace(c, r.p.databases())
	for try := 1; err == nil && try < 4 && transient.MatchString(strings.Join(problems, "\n")); try++ {
		time.Sleep(time.Duration(try) * time.Second)
		problems, err = checkKeyspace(c, r.p.databases())
	}
	for _, p := range problems {
		kind := "inconsistent"
		if transient.MatchString(p) {
			kind = "transient"
		}
		r.add(finding{kind: kind, detail: p})
	}
	if err != nil {
		r.broken("", fmt.Errorf("reading the keyspace back: %w", err))
	}
}

// postmortem: is the process alive, did it recover a panic or log a bug?
func (r *caseRun) postmortem() {
	if dead, out := r.s.died(0); dead {
		if len(r.findings) == 0 || r.findings[len(r.findings)-1].kind != "crash" {
			r.add(finding{kind: "crash", detail: out})
		}
		return
	}
	for _, line := range r.s.newLogProblems() {
		r.add(finding{kind: "panic", detail: "logged: " + line})
	}
	c, err := dial(r.s.addr, 2, replyTimeout)
	if err != nil {
		r.add(finding{kind: "closed", detail: "connecting after the case: " + err.Error()})
		return
	}
	defer c.close()
	n, err := r.s.readPanics(c)
	if err != nil {
		r.add(finding{kind: "malformed", cmd: "info", detail: err.Error()})
		return
	}
	if n > r.s.panics {
		r.add(finding{kind: "panic", detail: fmt.Sprintf("INFO redamo recovered_panics went from %d to %d", r.s.panics, n)})
		r.s.panics = n
	}
}

// replyStats counts replies per command and outcome, for a long run's
// coverage report (REDAMO_FUZZ_STATS=1).
var replyStats = map[string]int{}

func tally(cmd command, v *value) {
	key := cmd.fullName() + " ok"
	if v.isError() {
		msg := string(v.str)
		if i := strings.IndexAny(msg, "'\"0123456789"); i > 0 {
			msg = msg[:i]
		}
		key = cmd.fullName() + " " + cut(msg, 50)
	}
	replyStats[key]++
}

// databases are the databases a program may have written to: 0, and
// those its SELECT, MOVE, COPY or a script name; every one when a script
// could reach another in a way not worth following.
func (p *program) databases() []int {
	seen := map[int]bool{0: true}
	all := false
	for _, w := range p.writes {
		cmds := w.cmds
		if w.raw != nil {
			all = true
		}
		for _, c := range cmds {
			switch c.name() {
			case "select", "move", "copy", "swapdb":
				for _, a := range c[1:] {
					if n, ok := strictInt(a); ok && n >= 0 && n < numDBs {
						seen[int(n)] = true
					}
				}
			case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro":
				all = true
			}
		}
	}
	var out []int
	for db := range numDBs {
		if all || seen[db] {
			out = append(out, db)
		}
	}
	return out
}
