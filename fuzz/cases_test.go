package fuzz

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redamo/redamo/compat"
)

// Regression files (testdata/regressions.txt) keep every case the fuzzer
// ever failed on, shrunk, replayed by every test run:
//
//	=== name                 a case; its lines follow until the next one
//	# text                   a comment (what it found, the fix)
//	known <reason>           the case still fails: it runs, its findings
//	                         are logged, the build does not fail (for
//	                         bugs another change fixes)
//	store memory             run on this store only (default: every one)
//	oracle redis             compare error classes with a real Redis (on
//	                         the memory store; the first write is the
//	                         setup both start from) instead of the rest of
//	                         the oracle
//	proto 3                  the connections speak RESP3 (default 2)
//	write 1                  the commands below are one write on
//	                         connection 1 (0 or 1)
//	SET k v                  a command, in compat's case-file syntax
//	                         (quoting, $rep:N:text, $bin:N)
//	raw "..."                bytes, a Go string literal, sent on a
//	                         connection of their own
//
// A command line before any write line starts a write on connection 0.

// regression is one case of a regression file.
type regression struct {
	name   string
	line   int
	known  string
	stores []string
	// redis: the case is about error classes, replayed against Redis.
	redis bool
	prog  *program
}

func (r *regression) runsOn(store string) bool {
	if len(r.stores) == 0 {
		return true
	}
	for _, s := range r.stores {
		if s == store {
			return true
		}
	}
	return false
}

// parseRegressions reads a regression file.
func parseRegressions(name string, data []byte) ([]*regression, error) {
	var out []*regression
	var cur *regression
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		if title, ok := strings.CutPrefix(line, "=== "); ok {
			cur = &regression{name: title, line: n, prog: &program{proto: 2}}
			out = append(out, cur)
			continue
		}
		if cur == nil {
			return nil, fail("%q before the first === line", line)
		}
		p := cur.prog
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "known":
			cur.known = rest
		case "store":
			cur.stores = append(cur.stores, strings.Fields(rest)...)
		case "oracle":
			if rest != "redis" {
				return nil, fail("oracle redis, not %q", rest)
			}
			cur.redis, p.redis = true, true
			cur.stores = []string{"memory"}
		case "proto":
			v, err := strconv.Atoi(rest)
			if err != nil || v != 2 && v != 3 {
				return nil, fail("proto 2 or 3, not %q", rest)
			}
			p.proto = v
		case "write":
			v, err := strconv.Atoi(rest)
			if err != nil || v != 0 && v != 1 {
				return nil, fail("write 0 or 1, not %q", rest)
			}
			p.writes = append(p.writes, write{conn: v})
		case "raw":
			b, err := strconv.Unquote(rest)
			if err != nil {
				return nil, fail("raw needs a Go string literal: %v", err)
			}
			p.writes = append(p.writes, write{raw: []byte(b)})
		default:
			args, err := compat.ParseCommand(line, time.Now())
			if err != nil {
				return nil, fail("%v", err)
			}
			if len(p.writes) == 0 || p.writes[len(p.writes)-1].raw != nil {
				p.writes = append(p.writes, write{})
			}
			w := &p.writes[len(p.writes)-1]
			w.cmds = append(w.cmds, command(args))
		}
	}
	return out, sc.Err()
}

// formatCommand is a command as a regression file holds it.
func formatCommand(c command) string { return compat.FormatCommand(c) }

// formatProgram writes a program as a regression case.
func formatProgram(name string, p *program, notes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "=== %s\n", name)
	for _, n := range notes {
		for _, l := range strings.Split(strings.TrimRight(n, "\n"), "\n") {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	if p.redis {
		b.WriteString("oracle redis\n")
	}
	if p.proto != 2 {
		fmt.Fprintf(&b, "proto %d\n", p.proto)
	}
	for _, w := range p.writes {
		if w.raw != nil {
			fmt.Fprintf(&b, "raw %s\n", strconv.Quote(string(w.raw)))
			continue
		}
		fmt.Fprintf(&b, "write %d\n", w.conn)
		for _, c := range w.cmds {
			b.WriteString(formatCommand(c) + "\n")
		}
	}
	return b.String()
}

// knownFailure is a line of testdata/known_failures.txt: findings of the
// generated runs that are bugs someone else is fixing. They are logged,
// not failed on.
//
//	KIND | COMMAND-REGEXP | DETAIL-REGEXP | REASON
type knownFailure struct {
	kind           string
	cmd, detail    *regexp.Regexp
	reason, source string
}

func loadKnownFailures(path string) ([]knownFailure, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []knownFailure
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, " | ")
		if len(parts) != 4 {
			return nil, fmt.Errorf("%s:%d: want KIND | COMMAND-REGEXP | DETAIL-REGEXP | REASON", path, i+1)
		}
		cmd, err := regexp.Compile("^(?:" + strings.TrimSpace(parts[1]) + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		detail, err := regexp.Compile(strings.TrimSpace(parts[2]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		out = append(out, knownFailure{kind: strings.TrimSpace(parts[0]), cmd: cmd, detail: detail,
			reason: strings.TrimSpace(parts[3]), source: fmt.Sprintf("%s:%d", path, i+1)})
	}
	return out, nil
}

// known returns the entry a finding matches, nil if none does.
func known(list []knownFailure, f finding) *knownFailure {
	for i := range list {
		k := &list[i]
		if k.kind == f.kind && k.cmd.MatchString(f.cmd) && k.detail.MatchString(f.detail) {
			return k
		}
	}
	return nil
}
