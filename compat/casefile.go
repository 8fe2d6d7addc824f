package compat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The case-file format (see testdata/README.md for the full description):
//
//	# a comment
//	case set-and-get                   starts a named case
//	with v "" abc "\x00\xff" [EX 10]   one case per value ([...] is a group of
//	                                   tokens, [] none); several with lines multiply
//	skip dynamodb <reason>             the case cannot run on that target
//	nomulti <reason>                   the case is not run inside MULTI/EXEC
//	redamo-only <reason>               not sent to Redis: every command has
//	                                   an expect directive instead
//	requires move                      a command the case is about but does not send
//	SET k $v                           a command; $v is the with value
//	TTL k | approx 1                   a command with a normalization
//	GET k | expect "v"                 a redamo-only command's reply (expect.go)
//	sleep 20                           pause 20 ms on every server
//
// Arguments are separated by blanks; "..." quotes with \x00 \n \r \t \\ \"
// escapes, '...' quotes literally. $now+N / $nowms-N are the current Unix time
// in s / ms plus an offset (the same value is sent to every server);
// $rep:N:text repeats text to N bytes; $bin:N is N bytes covering every byte
// value.

// Case is one named sequence of commands.
type Case struct {
	File string // base name without .txt, e.g. "strings"
	Name string
	Line int
	// Steps run in order on every server.
	Steps []*Step
	// Skip gives, per target name, why the case cannot run there.
	Skip map[string]string
	// NoMulti says why the case is not run inside MULTI/EXEC ("" if it is).
	NoMulti string
	// RedamoOnly says why the case is not sent to Redis ("" if it is): its
	// commands are checked against their expect directives instead.
	RedamoOnly string
	// Requires names commands the case is about without sending them (e.g.
	// COMMAND INFO move): a target lacking one does not run the case.
	Requires []string
}

// ID is the case's unique name, "file/name".
func (c *Case) ID() string { return c.File + "/" + c.Name }

// Step is one line of a case: a command or a sleep.
type Step struct {
	Line  int
	Text  string
	Sleep time.Duration
	Args  []Arg
	Norms []Norm
	// Expect is a redamo-only case's expected reply over RESP2 ([0]) and
	// RESP3 ([1]); nil in other cases.
	Expect [2]*Expect
}

// Expected is the step's expected reply under protocol proto.
func (s *Step) Expected(proto int) *Expect {
	if proto >= 3 {
		return s.Expect[1]
	}
	return s.Expect[0]
}

// Arg is one command argument: a literal, or a time computed when sent.
type Arg struct {
	Lit []byte
	// Time, when set, is the current time in seconds (or ms) plus Offset.
	Time   bool
	MS     bool
	Offset int64
	// Uniq, when set, is Lit after a prefix unique to each run of the case
	// ($uniq:name): for state FLUSHALL does not clear (locks, elections).
	Uniq bool
}

// Render computes the argument's bytes at time now, in the run whose
// unique prefix is uniq.
func (a Arg) Render(now time.Time, uniq string) []byte {
	if a.Uniq {
		return append([]byte(uniq), a.Lit...)
	}
	if !a.Time {
		return a.Lit
	}
	v := now.Unix()
	if a.MS {
		v = now.UnixMilli()
	}
	return []byte(strconv.FormatInt(v+a.Offset, 10))
}

// Render returns the step's command at time now, in the run whose unique
// prefix is uniq.
func (s *Step) Render(now time.Time, uniq string) [][]byte {
	out := make([][]byte, len(s.Args))
	for i, a := range s.Args {
		out[i] = a.Render(now, uniq)
	}
	return out
}

// Norm is one normalization directive on a reply.
type Norm struct {
	Op   string
	Args [][]byte
}

// Has reports whether the step carries directive op.
func (s *Step) Has(op string) bool {
	for _, n := range s.Norms {
		if n.Op == op {
			return true
		}
	}
	return false
}

// directives and their argument counts (-1: any number, at least one).
var directives = map[string]struct{ min, max int }{
	"sort":   {0, 1},  // sort the reply's elements (or those of the element at a path like 1 or 0.2)
	"only":   {1, -1}, // compare only the elements at these paths
	"approx": {1, 1},  // numbers within ±N of Redis's
	"shape":  {0, 0},  // same types and lengths, contents ignored
	"fields": {1, -1}, // [at=PATH] [row=k:v] eq=a,b has=c,d: named fields of a map, INFO or CLIENT LIST text
	"oneof":  {1, -1}, // the reply is one of these bulk strings (nil: a null)
	"subset": {1, -1}, // an array of these bulk strings; "distinct" as the first arg forbids repeats
	"scan":   {0, 0},  // iterate a SCAN-family cursor to the end and compare the union
}

// token is one lexical item of a line.
type token struct {
	text   []byte
	quoted bool
}

func (t token) is(s string) bool { return !t.quoted && string(t.text) == s }

// LoadCases reads every *.txt case file in dir, sorted by name.
func LoadCases(dir string) ([]*Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	sort.Strings(paths)
	var all []*Case
	seen := map[string]bool{}
	for _, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".txt")
		if base == "known_mismatches" || base == "baseline_commands" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("compat: %w", err)
		}
		cases, err := ParseCases(base, data)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			if seen[c.ID()] {
				return nil, fmt.Errorf("compat: %s.txt:%d: case %q defined twice", base, c.Line, c.Name)
			}
			seen[c.ID()] = true
			all = append(all, c)
		}
	}
	return all, nil
}

// rawCase is a case block before its with-values are expanded.
type rawCase struct {
	name  string
	line  int
	withs []withVar
	lines []rawLine
}

type withVar struct {
	name   string
	values [][]token // each value is zero or more tokens
	src    []string  // each value as written, for case names
}

type rawLine struct {
	n       int
	text    string
	toks    []token
	expects []lineExpect
}

// lineExpect is one expect directive: expect (proto 0, both), expect2 or
// expect3.
type lineExpect struct {
	proto int
	want  *Expect
}

// ParseCases parses one case file; file names the cases.
func ParseCases(file string, data []byte) ([]*Case, error) {
	var raws []*rawCase
	var cur *rawCase
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		errf := func(format string, a ...any) error {
			return fmt.Errorf("compat: %s.txt:%d: %s", file, n, fmt.Sprintf(format, a...))
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// The expected reply is not made of tokens (an error message may
		// hold a lone quote): cut it off first.
		head, expects, err := cutExpect(text)
		if err != nil {
			return nil, errf("%v", err)
		}
		toks, err := tokenize(head)
		if err != nil {
			return nil, errf("%v", err)
		}
		if len(toks) == 0 {
			if len(expects) > 0 {
				return nil, errf("expect without a command")
			}
			continue
		}
		if len(expects) > 0 && (toks[0].is("case") || toks[0].is("with")) {
			return nil, errf("expect goes on a command line")
		}
		switch {
		case toks[0].is("case"):
			if len(toks) != 2 || toks[1].quoted {
				return nil, errf("want: case NAME")
			}
			cur = &rawCase{name: string(toks[1].text), line: n}
			raws = append(raws, cur)
			continue
		case cur == nil:
			return nil, errf("a command before the first case line")
		case toks[0].is("with"):
			if len(cur.lines) > 0 {
				return nil, errf("with must come before the case's commands")
			}
			w, err := parseWith(toks[1:])
			if err != nil {
				return nil, errf("%v", err)
			}
			cur.withs = append(cur.withs, w)
			continue
		}
		cur.lines = append(cur.lines, rawLine{n: n, text: text, toks: toks, expects: expects})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("compat: %s.txt: %w", file, err)
	}
	var out []*Case
	for _, rc := range raws {
		cases, err := expand(file, rc)
		if err != nil {
			return nil, err
		}
		out = append(out, cases...)
	}
	return out, nil
}

func parseWith(toks []token) (withVar, error) {
	if len(toks) < 2 || toks[0].quoted {
		return withVar{}, fmt.Errorf("want: with NAME VALUE...")
	}
	w := withVar{name: string(toks[0].text)}
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		if t.quoted || !bytes.HasPrefix(t.text, []byte("[")) {
			w.values = append(w.values, []token{t})
			w.src = append(w.src, srcOf(t))
			continue
		}
		// A group: [a b c], possibly written [] or [a] or [a b].
		var group []token
		var src []string
		first := token{text: t.text[1:]}
		for j := i; ; j++ {
			if j >= len(toks) {
				return withVar{}, fmt.Errorf("unclosed [ in with values")
			}
			tj := toks[j]
			if j == i {
				tj = first
			}
			closed := !tj.quoted && bytes.HasSuffix(tj.text, []byte("]"))
			if closed {
				tj.text = tj.text[:len(tj.text)-1]
			}
			if len(tj.text) > 0 || tj.quoted {
				group = append(group, tj)
				src = append(src, srcOf(tj))
			}
			if closed {
				i = j
				break
			}
		}
		w.values = append(w.values, group)
		w.src = append(w.src, strings.Join(src, " "))
	}
	return w, nil
}

func srcOf(t token) string {
	if t.quoted {
		return Escape(t.text, 40)
	}
	return string(t.text)
}

// expand makes one Case per combination of with-values.
func expand(file string, rc *rawCase) ([]*Case, error) {
	combos := [][]int{{}}
	for _, w := range rc.withs {
		var next [][]int
		for _, c := range combos {
			for vi := range w.values {
				next = append(next, append(append([]int(nil), c...), vi))
			}
		}
		combos = next
	}
	var out []*Case
	for _, combo := range combos {
		c := &Case{File: file, Name: rc.name, Line: rc.line, Skip: map[string]string{}}
		vars := map[string][]token{}
		var label []string
		for i, w := range rc.withs {
			vars[w.name] = w.values[combo[i]]
			label = append(label, w.name+"="+w.src[combo[i]])
		}
		if len(label) > 0 {
			c.Name += "[" + strings.Join(label, ",") + "]"
		}
		for _, l := range rc.lines {
			if err := c.addLine(file, l, vars); err != nil {
				return nil, err
			}
		}
		if len(c.Steps) == 0 {
			return nil, fmt.Errorf("compat: %s.txt:%d: case %q has no commands", file, rc.line, rc.name)
		}
		if err := c.checkExpects(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (c *Case) addLine(file string, l rawLine, vars map[string][]token) error {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("compat: %s.txt:%d: %s", file, l.n, fmt.Sprintf(format, a...))
	}
	// Substitute with-variables.
	var toks []token
	for _, t := range l.toks {
		if !t.quoted && len(t.text) > 1 && t.text[0] == '$' {
			if v, ok := vars[string(t.text[1:])]; ok {
				toks = append(toks, v...)
				continue
			}
		}
		toks = append(toks, t)
	}
	head := toks[0]
	if len(l.expects) > 0 && (head.is("skip") || head.is("nomulti") || head.is("requires") || head.is("sleep") || head.is("redamo-only")) {
		return errf("expect goes on a command line")
	}
	switch {
	case head.is("skip"):
		if len(toks) < 3 {
			return errf("want: skip TARGET REASON")
		}
		c.Skip[string(toks[1].text)] = joinTokens(toks[2:])
		return nil
	case head.is("nomulti"):
		if len(toks) < 2 {
			return errf("want: nomulti REASON")
		}
		c.NoMulti = joinTokens(toks[1:])
		return nil
	case head.is("redamo-only"):
		if len(toks) < 2 {
			return errf("want: redamo-only REASON")
		}
		c.RedamoOnly = joinTokens(toks[1:])
		return nil
	case head.is("requires"):
		if len(toks) < 2 {
			return errf("want: requires COMMAND...")
		}
		for _, t := range toks[1:] {
			c.Requires = append(c.Requires, strings.ToLower(string(t.text)))
		}
		return nil
	case head.is("sleep"):
		if len(toks) != 2 {
			return errf("want: sleep MILLISECONDS")
		}
		ms, err := strconv.Atoi(string(toks[1].text))
		if err != nil || ms <= 0 || ms > 5000 {
			return errf("bad sleep %q (1..5000 ms)", toks[1].text)
		}
		c.Steps = append(c.Steps, &Step{Line: l.n, Text: l.text, Sleep: time.Duration(ms) * time.Millisecond})
		return nil
	}
	st := &Step{Line: l.n, Text: l.text}
	i := 0
	for ; i < len(toks) && !toks[i].is("|"); i++ {
		a, err := parseArg(toks[i])
		if err != nil {
			return errf("%v", err)
		}
		st.Args = append(st.Args, a)
	}
	if len(st.Args) == 0 {
		return errf("empty command")
	}
	for i < len(toks) {
		// toks[i] is "|": a directive follows.
		j := i + 1
		for j < len(toks) && !toks[j].is("|") {
			j++
		}
		if j == i+1 {
			return errf("empty directive after |")
		}
		nm := Norm{Op: string(toks[i+1].text)}
		for _, t := range toks[i+2 : j] {
			nm.Args = append(nm.Args, t.text)
		}
		spec, ok := directives[nm.Op]
		if !ok || toks[i+1].quoted {
			return errf("unknown directive %q", nm.Op)
		}
		if len(nm.Args) < spec.min || (spec.max >= 0 && len(nm.Args) > spec.max) {
			return errf("directive %s: wrong number of arguments", nm.Op)
		}
		if err := checkNorm(nm); err != nil {
			return errf("directive %s: %v", nm.Op, err)
		}
		st.Norms = append(st.Norms, nm)
		i = j
	}
	for _, e := range l.expects {
		if e.proto != 3 {
			st.Expect[0] = e.want
		}
		if e.proto != 2 {
			st.Expect[1] = e.want
		}
	}
	c.Steps = append(c.Steps, st)
	return nil
}

// expectNorms are the directives a redamo-only step may carry: they
// rework the reply before it is matched. The others compare with Redis's
// reply, which such a case has not.
var expectNorms = map[string]bool{"sort": true, "scan": true}

// checkExpects checks that a redamo-only case expects a reply of every
// command, and that no other case expects any.
func (c *Case) checkExpects() error {
	for _, st := range c.Steps {
		errf := func(format string, a ...any) error {
			return fmt.Errorf("compat: %s.txt:%d: %s", c.File, st.Line, fmt.Sprintf(format, a...))
		}
		if st.Sleep > 0 {
			continue
		}
		if c.RedamoOnly == "" {
			if st.Expect[0] != nil {
				return errf("expect is for redamo-only cases: this case compares with Redis")
			}
			continue
		}
		if st.Expect[0] == nil {
			return errf("case %s is redamo-only: every command needs | expect REPLY", c.Name)
		}
		for _, n := range st.Norms {
			if !expectNorms[n.Op] {
				return errf("directive %s compares with Redis's reply, which a redamo-only case has not (see expect's ? and ~N)", n.Op)
			}
		}
	}
	return nil
}

// cutExpect splits a line at its first "| expect" (or expect2, expect3)
// directive, which must come after the others, and parses the expected
// replies: "| expect R" for both protocols, or "| expect2 R2 | expect3 R3".
func cutExpect(line string) (string, []lineExpect, error) {
	pipe := -1 // where the previous token began, if it was an unquoted |
	for i := 0; ; {
		start := skipBlanks(line, i)
		toks, next, err := nextToken(line, i)
		if err != nil || len(toks) == 0 {
			// Errors are tokenize's to report.
			return line, nil, nil
		}
		if pipe >= 0 && len(toks) == 1 && expectProto(toks[0]) >= 0 {
			exps, err := parseExpects(line[start:])
			return line[:pipe], exps, err
		}
		pipe = -1
		if len(toks) == 1 && toks[0].is("|") {
			pipe = start
		}
		i = next
	}
}

// expectProto is the protocol an expect directive is for (0: both), -1 if
// t is no expect directive.
func expectProto(t token) int {
	switch {
	case t.is("expect"):
		return 0
	case t.is("expect2"):
		return 2
	case t.is("expect3"):
		return 3
	}
	return -1
}

// parseExpects parses "expect R", or "expect2 R | expect3 R" in either
// order: each protocol gets exactly one expected reply.
func parseExpects(s string) ([]lineExpect, error) {
	var out []lineExpect
	covered := map[int]bool{}
	for {
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		word, rest := s[:end], s[end:]
		proto := expectProto(token{text: []byte(word)})
		if proto < 0 {
			return nil, fmt.Errorf("after an expected reply, want | expect2 or | expect3 (other directives come before expect), got %q", word)
		}
		want, after, err := parseExpectPrefix(rest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", word, err)
		}
		for _, p := range []int{2, 3} {
			if proto == 0 || proto == p {
				if covered[p] {
					return nil, fmt.Errorf("%s: RESP%d has an expected reply already", word, p)
				}
				covered[p] = true
			}
		}
		out = append(out, lineExpect{proto: proto, want: want})
		after = strings.TrimLeft(after, " \t")
		if after == "" {
			break
		}
		if after[0] != '|' {
			return nil, fmt.Errorf("%s: text after the expected reply: %q", word, after)
		}
		s = strings.TrimLeft(after[1:], " \t")
	}
	if !covered[2] || !covered[3] {
		return nil, fmt.Errorf("expect2 and expect3 come together (a bare +simple string or -error runs to the end of the line: write it last, or Go-quoted)")
	}
	return out, nil
}

func checkNorm(n Norm) error {
	switch n.Op {
	case "sort", "only":
		for _, a := range n.Args {
			for _, part := range strings.Split(string(a), ".") {
				if _, err := strconv.Atoi(part); err != nil {
					return fmt.Errorf("path %q", a)
				}
			}
		}
	case "approx":
		if _, err := strconv.ParseFloat(string(n.Args[0]), 64); err != nil {
			return fmt.Errorf("tolerance %q", n.Args[0])
		}
	case "fields":
		for _, a := range n.Args {
			if !bytes.HasPrefix(a, []byte("eq=")) && !bytes.HasPrefix(a, []byte("has=")) && !bytes.HasPrefix(a, []byte("at=")) && !bytes.HasPrefix(a, []byte("row=")) {
				return fmt.Errorf("want at=PATH, row=k:v, eq=a,b or has=c,d, got %q", a)
			}
		}
	}
	return nil
}

func joinTokens(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = string(t.text)
	}
	return strings.Join(parts, " ")
}

// parseArg turns a token into an argument, evaluating $-expressions.
func parseArg(t token) (Arg, error) {
	if t.quoted || len(t.text) < 2 || t.text[0] != '$' {
		return Arg{Lit: t.text}, nil
	}
	s := string(t.text[1:])
	switch {
	case strings.HasPrefix(s, "nowms"):
		off, err := parseOffset(s[len("nowms"):])
		return Arg{Time: true, MS: true, Offset: off}, err
	case strings.HasPrefix(s, "now"):
		off, err := parseOffset(s[len("now"):])
		return Arg{Time: true, Offset: off}, err
	case strings.HasPrefix(s, "uniq:"):
		return Arg{Uniq: true, Lit: []byte(s[len("uniq:"):])}, nil
	case strings.HasPrefix(s, "rep:"):
		parts := strings.SplitN(s[len("rep:"):], ":", 2)
		n, err := strconv.Atoi(parts[0])
		if err != nil || len(parts) != 2 || parts[1] == "" || n < 0 || n > 64<<20 {
			return Arg{}, fmt.Errorf("want $rep:N:text, got %q", t.text)
		}
		out := bytes.Repeat([]byte(parts[1]), n/len(parts[1])+1)[:n]
		return Arg{Lit: out}, nil
	case strings.HasPrefix(s, "bin:"):
		n, err := strconv.Atoi(s[len("bin:"):])
		if err != nil || n < 0 || n > 64<<20 {
			return Arg{}, fmt.Errorf("want $bin:N, got %q", t.text)
		}
		out := make([]byte, n)
		for i := range out {
			// Every byte value, in an order that is not a plain ramp.
			out[i] = byte(i*167 + i/256)
		}
		return Arg{Lit: out}, nil
	}
	return Arg{}, fmt.Errorf("unknown $-expression %q (quote it to send it literally)", t.text)
}

// ParseCommand reads one command line of case-file syntax (blanks between
// arguments, quoting, $rep, $bin, $now) into the arguments it sends at now:
// the fuzzer's regression files hold their commands in it.
func ParseCommand(line string, now time.Time) ([][]byte, error) {
	toks, err := tokenize(line)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(toks))
	for i, t := range toks {
		a, err := parseArg(t)
		if err != nil {
			return nil, err
		}
		out[i] = append([]byte{}, a.Render(now, "")...)
	}
	return out, nil
}

// FormatCommand writes args as a command line ParseCommand reads back:
// FormatStep's quoting, and a long argument that repeats a short text as
// $rep (or is $bin's bytes) in a few characters.
func FormatCommand(args [][]byte) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = quoteLong(a)
	}
	return strings.Join(parts, " ")
}

func quoteLong(a []byte) string {
	if len(a) < 64 {
		return quoteArg(a)
	}
	if bin, _ := parseArg(token{text: []byte("$bin:" + strconv.Itoa(len(a)))}); bytes.Equal(bin.Lit, a) {
		return "$bin:" + strconv.Itoa(len(a))
	}
	for n := 1; n <= 16; n++ {
		unit := a[:n]
		if quoteArg(unit) != string(unit) {
			continue
		}
		if bytes.Equal(bytes.Repeat(unit, len(a)/n+1)[:len(a)], a) {
			return fmt.Sprintf("$rep:%d:%s", len(a), unit)
		}
	}
	return quoteArg(a)
}

func parseOffset(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if s[0] != '+' && s[0] != '-' {
		return 0, fmt.Errorf("bad time offset %q", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad time offset %q", s)
	}
	return n, nil
}

// tokenize splits a line into tokens; an unquoted token starting with #
// begins a comment.
func tokenize(line string) ([]token, error) {
	var out []token
	for i := 0; ; {
		toks, next, err := nextToken(line, i)
		if err != nil {
			return nil, err
		}
		if len(toks) == 0 {
			return out, nil
		}
		out = append(out, toks...)
		i = next
	}
}

func skipBlanks(line string, i int) int {
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return i
}

// nextToken reads the token after blanks at i and returns where the scan
// goes on; no token at the end of the line or at a comment. A quoted token
// closing a with-group comes with its "]" token.
func nextToken(line string, i int) ([]token, int, error) {
	i = skipBlanks(line, i)
	if i >= len(line) || line[i] == '#' {
		return nil, len(line), nil
	}
	var out []token
	switch line[i] {
	case '"':
		b, next, err := unquoteDouble(line, i+1)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, token{text: b, quoted: true})
		i = next
	case '\'':
		end := strings.IndexByte(line[i+1:], '\'')
		if end < 0 {
			return nil, 0, fmt.Errorf("unterminated '")
		}
		out = append(out, token{text: []byte(line[i+1 : i+1+end]), quoted: true})
		i = i + 2 + end
	default:
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		return []token{{text: []byte(line[i:j])}}, j, nil
	}
	if i < len(line) && line[i] == ']' {
		// The end of a with-group right after a quoted value.
		out = append(out, token{text: []byte("]")})
		i++
	}
	if i < len(line) && line[i] != ' ' && line[i] != '\t' {
		return nil, 0, fmt.Errorf("a quoted argument must be followed by a blank (column %d)", i+1)
	}
	return out, i, nil
}

func unquoteDouble(line string, i int) ([]byte, int, error) {
	var b []byte
	for i < len(line) {
		c := line[i]
		switch c {
		case '"':
			return b, i + 1, nil
		case '\\':
			if i+1 >= len(line) {
				return nil, 0, fmt.Errorf("dangling \\")
			}
			e := line[i+1]
			i += 2
			switch e {
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'a':
				b = append(b, 7)
			case 'b':
				b = append(b, 8)
			case '0':
				b = append(b, 0)
			case '\\', '"', '\'':
				b = append(b, e)
			case 'x':
				if i+2 > len(line) {
					return nil, 0, fmt.Errorf("short \\x escape")
				}
				v, err := strconv.ParseUint(line[i:i+2], 16, 8)
				if err != nil {
					return nil, 0, fmt.Errorf("bad \\x escape %q", line[i:i+2])
				}
				b = append(b, byte(v))
				i += 2
			default:
				return nil, 0, fmt.Errorf("unknown escape \\%c", e)
			}
		default:
			b = append(b, c)
			i++
		}
	}
	return nil, 0, fmt.Errorf("unterminated \"")
}
