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
//	requires move                      a command the case is about but does not send
//	SET k $v                           a command; $v is the with value
//	TTL k | approx 1                   a command with a normalization
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
}

// Arg is one command argument: a literal, or a time computed when sent.
type Arg struct {
	Lit []byte
	// Time, when set, is the current time in seconds (or ms) plus Offset.
	Time   bool
	MS     bool
	Offset int64
}

// Render computes the argument's bytes at time now.
func (a Arg) Render(now time.Time) []byte {
	if !a.Time {
		return a.Lit
	}
	v := now.Unix()
	if a.MS {
		v = now.UnixMilli()
	}
	return []byte(strconv.FormatInt(v+a.Offset, 10))
}

// Render returns the step's command at time now.
func (s *Step) Render(now time.Time) [][]byte {
	out := make([][]byte, len(s.Args))
	for i, a := range s.Args {
		out[i] = a.Render(now)
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
	n    int
	text string
	toks []token
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
		toks, err := tokenize(text)
		if err != nil {
			return nil, errf("%v", err)
		}
		if len(toks) == 0 {
			continue
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
		cur.lines = append(cur.lines, rawLine{n: n, text: text, toks: toks})
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
	c.Steps = append(c.Steps, st)
	return nil
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
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i >= len(line) {
			return out, nil
		}
		switch line[i] {
		case '#':
			return out, nil
		case '"':
			b, next, err := unquoteDouble(line, i+1)
			if err != nil {
				return nil, err
			}
			out = append(out, token{text: b, quoted: true})
			i = next
		case '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated '")
			}
			out = append(out, token{text: []byte(line[i+1 : i+1+end]), quoted: true})
			i = i + 2 + end
		default:
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' {
				j++
			}
			out = append(out, token{text: []byte(line[i:j])})
			i = j
			continue
		}
		if i < len(line) && line[i] == ']' {
			// The end of a with-group right after a quoted value.
			out = append(out, token{text: []byte("]")})
			i++
		}
		if i < len(line) && line[i] != ' ' && line[i] != '\t' {
			return nil, fmt.Errorf("a quoted argument must be followed by a blank (column %d)", i+1)
		}
	}
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
