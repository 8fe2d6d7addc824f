package fuzz

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
)

// The error-class oracle: the same commands go to a real Redis 7.0 and to
// redamo (memory store), from the same keys; where Redis answers an error,
// redamo must answer one of the same class (ERR, WRONGTYPE, NOSCRIPT, ...),
// also inside EXEC's and scripts' replies. Replies are compared byte for
// byte elsewhere (compat); here the arguments are hostile, and only the
// class counts. Once the two servers answer a command differently in any
// way, their states may differ: both start again from the setup keys.

// diffShortCases is the short run's number of cases.
const diffShortCases = 12

// diffRun drives one program on both servers.
type diffRun struct {
	redis, redamo string
	proto         int
	rc, dc        *conn
	findings      []finding
	// compared counts commands compared; resyncs the restarts from the
	// setup keys; extra the errors redamo alone answered, by class and
	// command (reported, not failed on: redamo refuses what DynamoDB
	// cannot hold, for one).
	compared, resyncs int
	extra             map[string]int
}

func (d *diffRun) open() error {
	var err error
	if d.rc, err = dial(d.redis, d.proto, replyTimeout); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if d.dc, err = dial(d.redamo, d.proto, replyTimeout); err != nil {
		return fmt.Errorf("redamo: %w", err)
	}
	return nil
}

func (d *diffRun) close() {
	if d.rc != nil {
		d.rc.close()
	}
	if d.dc != nil {
		d.dc.close()
	}
}

// restart puts both servers back at the setup keys on fresh connections.
func (d *diffRun) restart(setup write) error {
	d.close()
	if err := d.open(); err != nil {
		return err
	}
	cmds := append([]command{cmdOf("FLUSHALL"), cmdOf("FUNCTION", "FLUSH"), cmdOf("SCRIPT", "FLUSH")}, setup.cmds...)
	for _, c := range []*conn{d.rc, d.dc} {
		vs, err := c.pipeline(cmds)
		if err != nil {
			return err
		}
		for i, v := range vs {
			if v.isError() {
				return fmt.Errorf("setup %s: %s", formatCommand(cmds[i]), v.text())
			}
		}
	}
	return nil
}

// run plays p; a finding stops it.
func (d *diffRun) run(p *program) error {
	d.proto = p.proto
	setup := p.writes[0]
	if err := d.restart(setup); err != nil {
		return err
	}
	defer d.close()
	for _, w := range p.writes[1:] {
		want, err := d.rc.pipeline(w.cmds)
		if err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		got, err := d.dc.pipeline(w.cmds)
		if err != nil {
			d.findings = append(d.findings, finding{kind: "closed", detail: err.Error()})
			if strings.Contains(err.Error(), errMalformed.Error()) {
				d.findings[len(d.findings)-1].kind = "malformed"
			}
			return nil
		}
		differ := false
		for i, cmd := range w.cmds {
			d.findings = append(d.findings, inspect(cmd, got[i])...)
			if differ {
				// An earlier reply of this write differed: the states
				// may have too.
				continue
			}
			d.compared++
			if f, ok := d.compare(cmd, want[i], got[i]); !ok {
				d.findings = append(d.findings, f)
				return nil
			}
			differ = !bytes.Equal(encodeValue(want[i]), encodeValue(got[i]))
		}
		if differ || d.rc.closed || d.dc.closed {
			d.resyncs++
			if err := d.restart(setup); err != nil {
				return err
			}
		}
	}
	return nil
}

// compare checks redamo's reply against Redis's: an error of the same
// class where Redis errs, also in each reply of an EXEC. (Inside other
// aggregates the order may legitimately differ: a script's map follows
// its Lua table's order, which gopher-lua's and Lua's hashes keep apart.)
func (d *diffRun) compare(cmd command, want, got *value) (finding, bool) {
	if want.isError() {
		if got.class() != want.class() {
			return finding{kind: "errclass", cmd: cmd.fullName(),
				detail: fmt.Sprintf("Redis %s, redamo %s: %s", cut(want.text(), 300), cut(got.text(), 300), cut(formatCommand(cmd), 400)),
				sig:    fmt.Sprintf("%s/%s %s", want.class(), got.class(), errWords(want))}, false
		}
		return finding{}, true
	}
	if got.isError() {
		d.extra[got.class()+" "+cmd.fullName()]++
		return finding{}, true
	}
	if cmd.name() == "exec" && len(want.elems) == len(got.elems) {
		for i := range want.elems {
			if f, ok := d.compare(command{[]byte("EXEC")}, want.elems[i], got.elems[i]); !ok {
				return f, false
			}
		}
	}
	return finding{}, true
}

// errWords are an error's first words, past a script's location: what
// tells one error from another.
func errWords(v *value) string {
	s := string(v.str)
	if i := strings.Index(s, "user_script:"); i >= 0 {
		if j := strings.Index(s[i:], " "); j >= 0 {
			s = s[i+j:]
		}
	}
	w := strings.Fields(s)
	if len(w) > 5 {
		w = w[:5]
	}
	return strings.Join(w, " ")
}

// encodeValue renders a reply for comparison.
func encodeValue(v *value) []byte {
	var b bytes.Buffer
	var enc func(v *value)
	enc = func(v *value) {
		fmt.Fprintf(&b, "%c%t%d:", v.kind, v.null, len(v.elems))
		b.Write(v.str)
		for _, e := range v.elems {
			enc(e)
		}
	}
	enc(v)
	return b.Bytes()
}

// TestErrorClasses compares error classes with Redis on generated cases
// (fixed seeds; REDAMO_FUZZ_DURATION and REDAMO_FUZZ_SEED as TestSurface).
func TestErrorClasses(t *testing.T) {
	cfg := loadSettings(t)
	rep := newReport(t, cfg.out)
	defer rep.summary()
	ref := compat.ReferenceRedis(t, "REDAMO_FUZZ_REDIS_ADDR")
	srv := startServer(t, "memory")
	d := &diffRun{redis: ref, redamo: srv.addr, extra: map[string]int{}}
	shrink := func(p *program, f finding) *program {
		deadline := time.Now().Add(60 * time.Second)
		// The setup write stays: both servers start from it.
		return shrinkProgram(p, 1, deadline, func(q *program) bool {
			if time.Now().After(deadline) {
				return false
			}
			e := &diffRun{redis: ref, redamo: srv.addr, extra: map[string]int{}}
			return e.run(q) == nil && hasFinding(e.findings, f)
		})
	}
	n := cfg.cases
	if n == 0 && cfg.duration == 0 {
		n = diffShortCases
	}
	end := time.Now().Add(cfg.duration / 4)
	start, cases := time.Now(), 0
	for i := 0; n == 0 && time.Now().Before(end) || i < n; i++ {
		seed := cfg.seed + uint64(i)
		g := newGenerator(seed, modeDiff)
		p := g.program(minCommands + g.r.IntN(maxCommands-minCommands))
		d.findings = nil
		require.NoError(t, d.run(p), "seed %d", seed)
		cases++
		rep.add("memory", seed, p, d.findings, shrink)
	}
	var extra []string
	for k, v := range d.extra {
		extra = append(extra, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(extra)
	t.Logf("%d cases, %d commands compared with Redis, %d restarts from the setup keys in %v",
		cases, d.compared, d.resyncs, time.Since(start).Round(time.Millisecond))
	if testing.Verbose() && os.Getenv(envDuration) != "" {
		t.Logf("errors redamo alone answered (class command=count): %s", strings.Join(extra, " "))
	}
}

// TestErrorClassesFindAndShrink proves the comparison finds and shrinks a
// difference: with a reference Redis that has no LTRIM (an unknown command
// there, an ERR) against a real one as the server under test, the first
// LTRIM drawn is a finding, and shrinking leaves the LTRIM alone.
func TestErrorClassesFindAndShrink(t *testing.T) {
	if _, err := compat.RedisServerPath(); err != nil {
		t.Skip(err)
	}
	broken, err := compat.StartRedis(`rename-command LTRIM ""`)
	require.NoError(t, err)
	defer broken.Stop()
	good, err := compat.StartRedis()
	require.NoError(t, err)
	defer good.Stop()
	var p *program
	var f finding
	for seed := uint64(1); seed < 50 && p == nil; seed++ {
		g := newGenerator(seed, modeDiff)
		q := g.program(maxCommands)
		d := &diffRun{redis: broken.Addr, redamo: good.Addr, extra: map[string]int{}}
		require.NoError(t, d.run(q))
		for _, g := range d.findings {
			if g.kind == "errclass" && g.cmd == "ltrim" {
				p, f = q, g
			}
		}
	}
	require.NotNil(t, p, "no LTRIM drawn in 50 cases")
	small := shrinkProgram(p, 1, time.Now().Add(time.Minute), func(q *program) bool {
		d := &diffRun{redis: broken.Addr, redamo: good.Addr, extra: map[string]int{}}
		return d.run(q) == nil && hasFinding(d.findings, f)
	})
	var left []string
	for _, w := range small.writes[1:] {
		for _, c := range w.cmds {
			left = append(left, c.name())
		}
	}
	// The LTRIM alone, or queued after a MULTI when its arguments are bad:
	// then only queueing it (+QUEUED where the broken Redis errs) tells the
	// servers apart, and the MULTI is part of the finding.
	if len(left) == 2 {
		require.Equal(t, "multi", left[0], formatProgram("shrunk", small))
		left = left[1:]
	}
	require.Equal(t, []string{"ltrim"}, left, formatProgram("shrunk", small))
}
