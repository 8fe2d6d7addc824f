package compat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Target is one server the suite talks to.
type Target struct {
	// Name identifies the target in results: "redis", "memory", "dynamodb".
	Name string
	Addr string
	// Commands is what the target supports, as its COMMAND reply lists them
	// ("get", "client|list"); nil means everything (a real Redis).
	Commands map[string]bool
	// Timeout bounds every reply.
	Timeout time.Duration
	// Clean, when set, runs after FLUSHALL before each case: what else
	// the target needs to start the case from an empty table.
	Clean func(c *Case) error
}

// Supports reports whether the target supports a command ("name" or
// "parent|sub", lower case).
func (t *Target) Supports(name string) bool {
	return t.Commands == nil || t.Commands[name]
}

// Variant is one way of running every case.
type Variant struct {
	Name  string
	Proto int
	// Multi runs the case inside MULTI/EXEC and compares EXEC's reply.
	Multi bool
}

// Variants are every way a case runs.
var Variants = []Variant{
	{Name: "resp2", Proto: 2},
	{Name: "resp3", Proto: 3},
	{Name: "multi-resp2", Proto: 2, Multi: true},
	{Name: "multi-resp3", Proto: 3, Multi: true},
}

// Outcome is how one case went on one target in one variant.
type Outcome uint8

// Outcomes.
const (
	Identical Outcome = iota + 1
	Mismatch
	NotRun
	// AsExpected is a redamo-only case whose replies matched its expect
	// directives (a mismatch there is a Mismatch too).
	AsExpected
)

func (o Outcome) String() string {
	switch o {
	case Identical:
		return "identical"
	case Mismatch:
		return "mismatch"
	case NotRun:
		return "not run"
	case AsExpected:
		return "as expected"
	}
	return "?"
}

// Result is one case on one target in one variant.
type Result struct {
	Case    *Case
	Target  string
	Variant string
	Outcome Outcome
	// Detail is the mismatch report or why the case did not run.
	Detail string
}

// Runner runs cases on a reference Redis and on other targets in lockstep:
// each command goes to every server before the next one is sent, so $now
// arguments and sleeps are shared.
type Runner struct {
	Ref    *Target
	Others []*Target
	// Known is every command and subcommand the reference Redis has.
	Known map[string]bool
}

// NewRunner asks the reference for its commands.
func NewRunner(ref *Target, others ...*Target) (*Runner, error) {
	known, err := FetchCommands(ref.Addr, ref.Timeout)
	if err != nil {
		return nil, err
	}
	return &Runner{Ref: ref, Others: others, Known: known}, nil
}

// FetchCommands returns the commands a server's COMMAND reply lists,
// subcommands included ("client|list").
func FetchCommands(addr string, timeout time.Duration) (map[string]bool, error) {
	c, err := Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	raw, err := c.DoStrings("COMMAND")
	if err != nil {
		return nil, err
	}
	rep, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if !rep.IsAggregate() {
		return nil, fmt.Errorf("compat: COMMAND on %s: %s", addr, rep)
	}
	out := map[string]bool{}
	var add func(entries []*Reply)
	add = func(entries []*Reply) {
		for _, e := range entries {
			if !e.IsAggregate() || len(e.Elems) == 0 {
				continue
			}
			out[strings.ToLower(e.Elems[0].Text())] = true
			if len(e.Elems) > 9 && e.Elems[9].IsAggregate() {
				add(e.Elems[9].Elems)
			}
		}
	}
	add(rep.Elems)
	return out, nil
}

// Required lists the commands a case uses that the reference knows (a
// command Redis does not know is there on purpose, to test the error),
// and in a redamo-only case every command it sends.
func (r *Runner) Required(c *Case) []string {
	set := map[string]bool{}
	for _, name := range c.Requires {
		set[name] = true
	}
	for _, s := range c.Steps {
		if len(s.Args) == 0 {
			continue
		}
		name := strings.ToLower(string(s.Args[0].Lit))
		if r.Known[name] || c.RedamoOnly != "" {
			set[name] = true
		}
		if len(s.Args) > 1 {
			sub := name + "|" + strings.ToLower(string(s.Args[1].Lit))
			if r.Known[sub] {
				set[sub] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// transactional commands make a case unfit for the MULTI/EXEC variant.
var transactional = map[string]bool{"multi": true, "exec": true, "discard": true, "watch": true, "unwatch": true}

// multiReason says why a case cannot run inside MULTI/EXEC, "" if it can.
func (r *Runner) multiReason(c *Case) string {
	if c.NoMulti != "" {
		return c.NoMulti
	}
	for _, s := range c.Steps {
		if s.Has("scan") {
			return "iterates a cursor"
		}
		if len(s.Args) > 0 && transactional[strings.ToLower(string(s.Args[0].Lit))] {
			return "uses transactions itself"
		}
	}
	return ""
}

// NotForRedis is why a redamo-only case does not run on a Redis target.
const NotForRedis = "redamo-only case"

// notRunReason says why case c cannot run on t in variant v, "" if it can.
func (r *Runner) notRunReason(c *Case, v Variant, t *Target) string {
	if c.RedamoOnly != "" && t.Commands == nil {
		return NotForRedis
	}
	if why, ok := c.Skip[t.Name]; ok {
		return why
	}
	if why, ok := c.Skip["redamo"]; ok && t.Commands != nil {
		return why
	}
	if v.Multi {
		if why := r.multiReason(c); why != "" {
			return why
		}
		if !t.Supports("multi") || !t.Supports("exec") {
			return "MULTI unsupported"
		}
	}
	var missing []string
	for _, name := range r.Required(c) {
		if !t.Supports(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "unsupported: " + strings.Join(missing, " ")
	}
	return ""
}

// session is one connection to one target during a case.
type session struct {
	t     *Target
	conn  *Conn
	proto int
}

// reply is what one command got: the raw reply, or the I/O error instead.
type reply struct {
	raw []byte
	err error
}

func (s *session) dial() error {
	c, err := Dial(s.t.Addr, s.t.Timeout)
	if err != nil {
		return err
	}
	s.conn = c
	return nil
}

func (s *session) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// do sends one command; after an I/O error (QUIT, a server closing the
// connection) the next command goes over a fresh connection.
func (s *session) do(args [][]byte) reply {
	if s.conn == nil {
		if err := s.dial(); err != nil {
			return reply{err: err}
		}
	}
	raw, err := s.conn.Do(args...)
	// A pub/sub message the connection subscribed to itself (RESP3) goes
	// out before the reply of the command that raised it (a keyspace
	// notification): it joins that reply, so that a case compares which
	// messages each server sent, and where.
	for last := raw; err == nil && isMessagePush(last); {
		if last, err = s.conn.ReadRaw(); err == nil {
			raw = append(raw, last...)
		}
	}
	if err != nil {
		s.close()
		return reply{err: err}
	}
	return reply{raw: raw}
}

// isMessagePush reports whether raw is a RESP3 push of a pub/sub message
// (not a reply to a command, as SUBSCRIBE's is).
func isMessagePush(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '>' {
		return false
	}
	p, err := Parse(raw)
	if err != nil || len(p.Elems) == 0 {
		return false
	}
	switch string(p.Elems[0].Str) {
	case "message", "pmessage", "smessage":
		return true
	}
	return false
}

// setup opens a fresh connection in a clean state: protocol, empty
// dataset, db 0.
func (s *session) setup(proto int) error {
	s.close()
	if err := s.dial(); err != nil {
		return err
	}
	var cmds [][]string
	if proto == 3 {
		cmds = append(cmds, []string{"HELLO", "3"})
	}
	cmds = append(cmds, []string{"FLUSHALL"}, []string{"SELECT", "0"})
	for _, cmd := range cmds {
		raw, err := s.conn.DoStrings(cmd...)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd[0], err)
		}
		if len(raw) > 0 && (raw[0] == '-' || raw[0] == '!') {
			return fmt.Errorf("%s: %s", cmd[0], Escape(raw, 200))
		}
	}
	return nil
}

// scanCursorArg is where the cursor sits in each SCAN-family command.
var scanCursorArg = map[string]int{"scan": 1, "sscan": 2, "hscan": 2, "zscan": 2}

// scanAll iterates a SCAN-family command from its cursor to the end and
// returns one synthetic reply: every element seen, deduplicated and sorted
// (field/value pairs for HSCAN and ZSCAN). An error or malformed page is
// returned as the server sent it.
func (s *session) scanAll(args [][]byte) reply {
	name := strings.ToLower(string(args[0]))
	pos, ok := scanCursorArg[name]
	if !ok || pos >= len(args) {
		return s.do(args)
	}
	paired := name == "hscan" || name == "zscan"
	seen := map[string]*Reply{}
	var order []string
	args = append([][]byte(nil), args...)
	for pages := 0; ; pages++ {
		if pages > 100000 {
			return reply{err: errors.New("scan did not finish after 100000 pages")}
		}
		rep := s.do(args)
		if rep.err != nil {
			return rep
		}
		p, err := Parse(rep.raw)
		if err != nil || !p.IsAggregate() || len(p.Elems) != 2 || !p.Elems[1].IsAggregate() || p.Elems[0].Kind != '$' {
			return rep
		}
		elems := p.Elems[1].Elems
		step := 1
		if paired {
			step = 2
			if len(elems)%2 != 0 {
				return rep
			}
		}
		for i := 0; i < len(elems); i += step {
			k := string(elems[i].Encode())
			if _, dup := seen[k]; !dup {
				order = append(order, k)
			}
			if paired {
				seen[k] = elems[i+1]
			} else {
				seen[k] = nil
			}
		}
		if string(p.Elems[0].Str) == "0" {
			break
		}
		args[pos] = p.Elems[0].Str
	}
	sort.Strings(order)
	out := &Reply{Kind: '*', Elems: []*Reply{}}
	for _, k := range order {
		kr, _ := Parse([]byte(k))
		out.Elems = append(out.Elems, kr)
		if paired {
			out.Elems = append(out.Elems, seen[k])
		}
	}
	return reply{raw: out.Encode()}
}

func (s *session) run(st *Step, args [][]byte) reply {
	if st.Has("scan") {
		return s.scanAll(args)
	}
	return s.do(args)
}

// compareReplies checks one target's reply against the reference's.
func compareReplies(ref, got reply, norms []Norm) error {
	if ref.err != nil || got.err != nil {
		if ref.err != nil && got.err != nil {
			return nil
		}
		if ref.err != nil {
			return fmt.Errorf("Redis failed (%v) but this target replied", ref.err)
		}
		return got.err
	}
	return Compare(ref.raw, got.raw, norms)
}

func describe(rep reply) string {
	if rep.err != nil {
		return "<" + rep.err.Error() + ">"
	}
	s := Escape(rep.raw, 300)
	if p, err := Parse(rep.raw); err == nil && (p.IsAggregate() || p.Attrs != nil) {
		pretty := p.String()
		if len(pretty) > 400 {
			pretty = pretty[:400] + "..."
		}
		s += "\n             = " + pretty
	}
	return s
}

// mismatch formats a failed comparison with Redis's reply.
func mismatch(c *Case, v Variant, t *Target, st *Step, what string, ref, got reply, why error) string {
	return mismatchText(c, v, t, st, what, "redis:", describe(ref), describe(got), why)
}

// mismatchExpected formats a reply that does not match its expect
// directive; the reply is shown in the notation too, to paste in the case.
func mismatchExpected(c *Case, v Variant, t *Target, st *Step, what string, want *Expect, got reply, why error) string {
	g := describe(got)
	if got.err == nil {
		if p, err := Parse(got.raw); err == nil {
			g += "\n             = " + Notation(p)
		}
	}
	return mismatchText(c, v, t, st, what, "expected:", want.String(), g, why)
}

func mismatchText(c *Case, v Variant, t *Target, st *Step, what, wantLabel, want, got string, why error) string {
	return fmt.Sprintf("%s.txt:%d: case %s [%s, %s]\n  %-10s %s\n  %-10s %s\n  %-10s %s\n  why:       %v",
		c.File, st.Line, c.Name, t.Name, v.Name,
		"command:", what,
		wantLabel, want,
		t.Name+":", got,
		why)
}

// matchExpected checks a reply against an expected one, after the step's
// sort directives; now is when the command was sent.
func matchExpected(want *Expect, got reply, norms []Norm, proto int, now time.Time) error {
	if got.err != nil {
		return got.err
	}
	rep, err := Parse(got.raw)
	if err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	return matchParsed(want, rep, norms, proto, now)
}

func matchParsed(want *Expect, rep *Reply, norms []Norm, proto int, now time.Time) error {
	for _, n := range norms {
		if n.Op == "sort" {
			path := ""
			if len(n.Args) == 1 {
				path = string(n.Args[0])
			}
			sortReply(rep.At(path))
		}
	}
	return want.Match(rep, proto, now)
}

func formatArgs(args [][]byte) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = Escape(a, 60)
	}
	return strings.Join(parts, " ")
}

// RunCase runs one case in one variant on the reference and every target
// that can run it, and returns one result per other target.
func (r *Runner) RunCase(c *Case, v Variant) ([]Result, error) {
	results := make([]Result, len(r.Others))
	var live []int
	for i, t := range r.Others {
		results[i] = Result{Case: c, Target: t.Name, Variant: v.Name}
		if why := r.notRunReason(c, v, t); why != "" {
			results[i].Outcome, results[i].Detail = NotRun, why
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return results, nil
	}
	// A redamo-only case has no reference: its steps carry the replies.
	var ref *session
	if c.RedamoOnly == "" {
		ref = &session{t: r.Ref}
		defer ref.close()
		if err := ref.setup(v.Proto); err != nil {
			return nil, fmt.Errorf("compat: reference redis: %w", err)
		}
	}
	sessions := map[int]*session{}
	for _, i := range live {
		s := &session{t: r.Others[i]}
		defer s.close()
		err := s.setup(v.Proto)
		if err == nil && s.t.Clean != nil {
			err = s.t.Clean(c)
		}
		if err != nil {
			results[i].Outcome = Mismatch
			results[i].Detail = fmt.Sprintf("%s.txt:%d: case %s [%s, %s]: setup failed: %v", c.File, c.Line, c.Name, r.Others[i].Name, v.Name, err)
			continue
		}
		sessions[i] = s
	}
	fail := func(i int, detail string) {
		if results[i].Outcome != Mismatch {
			results[i].Outcome, results[i].Detail = Mismatch, detail
		}
	}
	if v.Multi {
		r.runMulti(c, v, ref, sessions, fail)
	} else {
		r.runPlain(c, v, ref, sessions, fail)
	}
	for i := range sessions {
		switch {
		case results[i].Outcome != 0:
		case ref == nil:
			results[i].Outcome = AsExpected
		default:
			results[i].Outcome = Identical
		}
	}
	return results, nil
}

// runUniq is the prefix of a run's $uniq: arguments: unique to the run.
func runUniq() string { return fmt.Sprintf("%016x:", rand.Uint64()) }

func (r *Runner) runPlain(c *Case, v Variant, ref *session, sessions map[int]*session, fail func(int, string)) {
	uniq := runUniq()
	for _, st := range c.Steps {
		if st.Sleep > 0 {
			time.Sleep(st.Sleep)
			continue
		}
		now := time.Now()
		args := st.Render(now, uniq)
		if ref == nil {
			exp := st.Expected(v.Proto)
			for _, i := range sortedKeys(sessions) {
				s := sessions[i]
				got := s.run(st, args)
				if err := matchExpected(exp, got, st.Norms, v.Proto, now); err != nil {
					fail(i, mismatchExpected(c, v, s.t, st, formatArgs(args), exp, got, err))
				}
			}
			continue
		}
		want := ref.run(st, args)
		for _, i := range sortedKeys(sessions) {
			s := sessions[i]
			got := s.run(st, args)
			if err := compareReplies(want, got, st.Norms); err != nil {
				fail(i, mismatch(c, v, s.t, st, formatArgs(args), want, got, err))
			}
		}
	}
}

// runMulti runs each stretch of commands between sleeps as one MULTI/EXEC,
// comparing MULTI's, every QUEUED and EXEC's reply; the step's directives
// apply to its element of EXEC's reply. In a redamo-only case MULTI must
// answer +OK, every command +QUEUED, and EXEC the array of the steps'
// expected replies: a command refused while queued (unknown, wrong
// arity) makes the case unfit for this variant (nomulti).
func (r *Runner) runMulti(c *Case, v Variant, ref *session, sessions map[int]*session, fail func(int, string)) {
	uniq := runUniq()
	var segment []*Step
	var sent []time.Time
	flush := func() {
		if len(segment) == 0 {
			return
		}
		// A queued command's reply is +QUEUED or an error, compared exactly;
		// when a command runs at once instead (MULTI refused, RESET), its
		// directives apply.
		send := func(st *Step, args [][]byte, norms []Norm, queued *Expect) {
			if ref == nil {
				for _, i := range sortedKeys(sessions) {
					s := sessions[i]
					got := s.do(args)
					if err := matchExpected(queued, got, nil, v.Proto, time.Now()); err != nil {
						if queued == expectQueued {
							err = fmt.Errorf("%w (a case whose command is refused while queued needs nomulti)", err)
						}
						fail(i, mismatchExpected(c, v, s.t, st, formatArgs(args), queued, got, err))
					}
				}
				return
			}
			want := ref.do(args)
			for _, i := range sortedKeys(sessions) {
				s := sessions[i]
				got := s.do(args)
				if compareReplies(want, got, nil) == nil {
					continue
				}
				if err := compareReplies(want, got, norms); err != nil {
					fail(i, mismatch(c, v, s.t, st, formatArgs(args), want, got, err))
				}
			}
		}
		send(segment[0], [][]byte{[]byte("MULTI")}, nil, expectOK)
		for _, st := range segment {
			now := time.Now()
			sent = append(sent, now)
			send(st, st.Render(now, uniq), st.Norms, expectQueued)
		}
		exec := [][]byte{[]byte("EXEC")}
		what := "EXEC (after " + fmt.Sprint(len(segment)) + " queued commands)"
		last := segment[len(segment)-1]
		if ref == nil {
			want := &Expect{kind: expArray}
			for _, st := range segment {
				want.elems = append(want.elems, st.Expected(v.Proto))
			}
			for _, i := range sortedKeys(sessions) {
				s := sessions[i]
				got := s.do(exec)
				if err := matchExec(got, segment, sent, v.Proto); err != nil {
					fail(i, mismatchExpected(c, v, s.t, last, what, want, got, err))
				}
			}
		} else {
			want := ref.do(exec)
			for _, i := range sortedKeys(sessions) {
				s := sessions[i]
				got := s.do(exec)
				if err := compareExec(want, got, segment); err != nil {
					fail(i, mismatch(c, v, s.t, last, what, want, got, err))
				}
			}
		}
		segment, sent = nil, nil
	}
	for _, st := range c.Steps {
		if st.Sleep > 0 {
			flush()
			time.Sleep(st.Sleep)
			continue
		}
		segment = append(segment, st)
	}
	flush()
}

// compareExec compares EXEC replies element by element with each queued
// step's directives; anything but two arrays of the expected length is
// compared byte for byte.
func compareExec(want, got reply, segment []*Step) error {
	if want.err != nil || got.err != nil {
		return compareReplies(want, got, nil)
	}
	w, errW := Parse(want.raw)
	g, errG := Parse(got.raw)
	if errW != nil || errG != nil || !w.IsAggregate() || !g.IsAggregate() ||
		w.Kind != g.Kind || len(w.Elems) != len(segment) || len(g.Elems) != len(segment) {
		return compareReplies(want, got, nil)
	}
	for i, st := range segment {
		if err := CompareParsed(w.Elems[i], g.Elems[i], st.Norms); err != nil {
			return fmt.Errorf("element %d (%s): %w", i+1, st.Text, err)
		}
	}
	return nil
}

// matchExec checks EXEC's reply in a redamo-only case: an array with each
// queued step's expected reply (under its directives), sent is when each
// step was queued.
func matchExec(got reply, segment []*Step, sent []time.Time, proto int) error {
	if got.err != nil {
		return got.err
	}
	g, err := Parse(got.raw)
	if err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	if g.Kind != '*' || g.Null || len(g.Elems) != len(segment) {
		return fmt.Errorf("want an array of %d replies, got %s", len(segment), Notation(g))
	}
	for i, st := range segment {
		if err := matchParsed(st.Expected(proto), g.Elems[i], st.Norms, proto, sent[i]); err != nil {
			return fmt.Errorf("element %d (%s): %w", i+1, st.Text, err)
		}
	}
	return nil
}

func sortedKeys(m map[int]*session) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
