package compat

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Expect is a hand-written expected reply, the `| expect` of a redamo-only
// case. Its notation is commands/script_test.go's render, extended: each
// form names what a handler writes through resp.Writer, and matches the
// way each protocol encodes it.
//
//	+OK               a simple string; -ERR message an error (see below)
//	:5                an integer; :30000~200 within ±200
//	:$nowms~2000      the current Unix time in ms (:$now in s) when the
//	                  command is sent, ±2000; :$nowms+5000~50 with an offset
//	"bulk"            a bulk string, Go-quoted
//	,1.5              a double (RESP2: the bulk string "1.5")
//	#t #f             a boolean (RESP2: :1 :0)
//	nil               the null bulk string (RESP2 $-1, RESP3 _)
//	nilarray          the null array (RESP2 *-1, RESP3 _)
//	[a, b]            an array, in order
//	~[a, b]           a set (RESP2: an array), in any order
//	{"k": v, ...}     a map (RESP2: the flat array k, v, ...), in any order
//	?                 any reply but an error
//
// A simple string or an error runs to the end of the line at the top, and
// to the next , ] or } inside brackets; -"..." and +"..." are Go-quoted
// forms for text that holds those characters or ends in a blank. Set
// elements and map keys are exact: no ?, ~ or $now.
type Expect struct {
	kind expectKind
	// text is the payload of a simple string, error, bulk string or double.
	text string
	// n is an integer, its offset from the clock, or a boolean's 0 or 1.
	n     int64
	clock clockUnit
	tol   int64
	// elems are an array's or set's elements; a map's key, value, key...
	elems []*Expect
}

type expectKind uint8

const (
	expSimple expectKind = iota + 1
	expError
	expInt
	expBulk
	expDouble
	expBool
	expNil
	expNilArray
	expArray
	expSet
	expMap
	expAny
)

// clockUnit says what an integer expectation counts from.
type clockUnit uint8

const (
	clockNone clockUnit = iota
	clockSec            // $now
	clockMS             // $nowms
)

// Replies every MULTI/EXEC variant expects while queueing.
var (
	expectOK     = &Expect{kind: expSimple, text: "OK"}
	expectQueued = &Expect{kind: expSimple, text: "QUEUED"}
)

// ParseExpect parses one expected reply that makes up all of s.
func ParseExpect(s string) (*Expect, error) {
	e, rest, err := parseExpectPrefix(s)
	if err != nil {
		return nil, err
	}
	if rest = strings.TrimLeft(rest, " \t"); rest != "" {
		return nil, fmt.Errorf("text after the expected reply: %q", rest)
	}
	return e, nil
}

// parseExpectPrefix parses the expected reply at the start of s (after
// blanks) and returns what follows it.
func parseExpectPrefix(s string) (*Expect, string, error) {
	p := &expectParser{s: s}
	e, err := p.value(false)
	if err != nil {
		return nil, "", err
	}
	return e, p.s[p.i:], nil
}

type expectParser struct {
	s string
	i int
}

func (p *expectParser) skipBlanks() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *expectParser) errf(format string, a ...any) error {
	return fmt.Errorf("expected reply, column %d: %s", p.i+1, fmt.Sprintf(format, a...))
}

// delim reports whether c ends a bare word or number.
func delim(c byte) bool {
	return c == ' ' || c == '\t' || c == ',' || c == ']' || c == '}' || c == ':'
}

// value parses one expected reply; nested says it sits inside brackets.
func (p *expectParser) value(nested bool) (*Expect, error) {
	p.skipBlanks()
	if p.i >= len(p.s) {
		return nil, p.errf("missing")
	}
	switch c := p.s[p.i]; c {
	case '+', '-':
		p.i++
		text, err := p.text(nested)
		if err != nil {
			return nil, err
		}
		if c == '+' {
			return &Expect{kind: expSimple, text: text}, nil
		}
		return &Expect{kind: expError, text: text}, nil
	case '"':
		text, err := p.quoted()
		if err != nil {
			return nil, err
		}
		return &Expect{kind: expBulk, text: text}, nil
	case ':':
		p.i++
		return p.integer()
	case ',':
		p.i++
		w := p.word()
		if _, err := strconv.ParseFloat(w, 64); err != nil {
			return nil, p.errf("bad double %q", w)
		}
		return &Expect{kind: expDouble, text: w}, nil
	case '[':
		p.i++
		elems, err := p.list(']', false)
		return &Expect{kind: expArray, elems: elems}, err
	case '~':
		if !strings.HasPrefix(p.s[p.i:], "~[") {
			return nil, p.errf("want ~[ for a set")
		}
		p.i += 2
		elems, err := p.list(']', false)
		if err != nil {
			return nil, err
		}
		for _, e := range elems {
			if !e.exact() {
				return nil, p.errf("set elements are exact: no ?, ~ or $now")
			}
		}
		return &Expect{kind: expSet, elems: elems}, nil
	case '{':
		p.i++
		elems, err := p.list('}', true)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for i := 0; i < len(elems); i += 2 {
			k := elems[i]
			if k.kind != expBulk && !(k.kind == expInt && k.exact()) {
				return nil, p.errf("a map key is a \"bulk\" string or an exact :integer")
			}
			if seen[k.String()] {
				return nil, p.errf("map key %s twice", k)
			}
			seen[k.String()] = true
		}
		return &Expect{kind: expMap, elems: elems}, nil
	}
	start := p.i
	switch w := p.word(); w {
	case "nil":
		return &Expect{kind: expNil}, nil
	case "nilarray":
		return &Expect{kind: expNilArray}, nil
	case "?":
		return &Expect{kind: expAny}, nil
	case "#t", "#f":
		e := &Expect{kind: expBool}
		if w == "#t" {
			e.n = 1
		}
		return e, nil
	default:
		p.i = start
		return nil, p.errf("unknown reply %q (want +, -, :, \"bulk\", ',', #t, #f, nil, nilarray, [, ~[, { or ?)", w)
	}
}

// word reads up to the next delimiter.
func (p *expectParser) word() string {
	start := p.i
	for p.i < len(p.s) && !delim(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// text reads a simple string's or an error's text: Go-quoted, or the rest
// of the line at the top, or up to the next , ] or } when nested.
func (p *expectParser) text(nested bool) (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		return p.quoted()
	}
	start := p.i
	if !nested {
		p.i = len(p.s)
		return p.s[start:], nil
	}
	for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != ']' && p.s[p.i] != '}' {
		p.i++
	}
	return strings.TrimRight(p.s[start:p.i], " \t"), nil
}

func (p *expectParser) quoted() (string, error) {
	q, err := strconv.QuotedPrefix(p.s[p.i:])
	if err != nil || q[0] != '"' {
		return "", p.errf("bad Go-quoted string")
	}
	p.i += len(q)
	s, err := strconv.Unquote(q)
	if err != nil {
		return "", p.errf("bad Go-quoted string: %v", err)
	}
	return s, nil
}

// integer parses what follows ':': N, $now or $nowms with an optional
// offset, then an optional ~tolerance.
func (p *expectParser) integer() (*Expect, error) {
	e := &Expect{kind: expInt}
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "$nowms"):
		e.clock = clockMS
		p.i += len("$nowms")
	case strings.HasPrefix(rest, "$now"):
		e.clock = clockSec
		p.i += len("$now")
	}
	start := p.i
	for p.i < len(p.s) && !delim(p.s[p.i]) && p.s[p.i] != '~' {
		p.i++
	}
	num := p.s[start:p.i]
	if e.clock != clockNone && num == "" {
		num = "0"
	} else if e.clock != clockNone && num[0] != '+' && num[0] != '-' {
		return nil, p.errf("want $now+N or $now-N, got %q", p.s[start:p.i])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return nil, p.errf("bad integer %q", num)
	}
	e.n = n
	if p.i < len(p.s) && p.s[p.i] == '~' {
		p.i++
		w := p.word()
		tol, err := strconv.ParseInt(w, 10, 64)
		if err != nil || tol < 0 {
			return nil, p.errf("bad tolerance %q", w)
		}
		e.tol = tol
	}
	return e, nil
}

// list parses elements up to the closing byte; a map's come as key: value.
func (p *expectParser) list(closing byte, pairs bool) ([]*Expect, error) {
	var out []*Expect
	p.skipBlanks()
	if p.i < len(p.s) && p.s[p.i] == closing {
		p.i++
		return []*Expect{}, nil
	}
	for {
		e, err := p.value(true)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if pairs {
			p.skipBlanks()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errf("want : after a map key")
			}
			p.i++
			v, err := p.value(true)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		p.skipBlanks()
		if p.i >= len(p.s) {
			return nil, p.errf("unclosed %c", openerOf(closing))
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case closing:
			p.i++
			return out, nil
		default:
			return nil, p.errf("want , or %c", closing)
		}
	}
}

func openerOf(closing byte) byte {
	if closing == '}' {
		return '{'
	}
	return '['
}

// exact reports whether the expectation stands for one encoding per
// protocol (no ?, tolerance or clock), as set elements and map keys must.
func (e *Expect) exact() bool {
	switch e.kind {
	case expAny:
		return false
	case expInt:
		return e.clock == clockNone && e.tol == 0
	}
	for _, x := range e.elems {
		if !x.exact() {
			return false
		}
	}
	return true
}

// String renders the expectation back in its notation.
func (e *Expect) String() string { return e.render(false) }

func (e *Expect) render(nested bool) string {
	switch e.kind {
	case expSimple:
		return "+" + textNotation(e.text, nested)
	case expError:
		return "-" + textNotation(e.text, nested)
	case expInt:
		var b strings.Builder
		b.WriteByte(':')
		switch e.clock {
		case clockSec:
			b.WriteString("$now")
		case clockMS:
			b.WriteString("$nowms")
		}
		if e.clock == clockNone || e.n != 0 {
			if e.clock != clockNone && e.n > 0 {
				b.WriteByte('+')
			}
			b.WriteString(strconv.FormatInt(e.n, 10))
		}
		if e.tol != 0 {
			fmt.Fprintf(&b, "~%d", e.tol)
		}
		return b.String()
	case expBulk:
		return strconv.Quote(e.text)
	case expDouble:
		return "," + e.text
	case expBool:
		if e.n == 1 {
			return "#t"
		}
		return "#f"
	case expNil:
		return "nil"
	case expNilArray:
		return "nilarray"
	case expAny:
		return "?"
	}
	parts := make([]string, 0, len(e.elems))
	if e.kind == expMap {
		for i := 0; i+1 < len(e.elems); i += 2 {
			parts = append(parts, e.elems[i].render(true)+": "+e.elems[i+1].render(true))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	for _, x := range e.elems {
		parts = append(parts, x.render(true))
	}
	if e.kind == expSet {
		return "~[" + strings.Join(parts, ", ") + "]"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// textNotation writes a simple string's or an error's text bare when it
// would read back the same, else Go-quoted.
func textNotation(s string, nested bool) string {
	plain := s == strings.TrimRight(s, " \t") && !strings.HasPrefix(s, `"`) && strconv.Quote(s) == `"`+s+`"`
	if plain && nested && strings.ContainsAny(s, ",]}") {
		plain = false
	}
	if nested && s != strings.TrimLeft(s, " \t") {
		plain = false
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}

// Match checks a reply against the expectation under protocol proto (2 or
// 3); now is when the command was sent, for $now and $nowms.
func (e *Expect) Match(rep *Reply, proto int, now time.Time) error {
	if rep.Attrs != nil {
		return fmt.Errorf("unexpected attributes before %s", Notation(rep))
	}
	return e.match(rep, proto, now, "")
}

// failAt is a mismatch at a path into the reply ("" is the reply itself).
func failAt(at, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if at != "" {
		msg = at + ": " + msg
	}
	return errors.New(msg)
}

func (e *Expect) match(rep *Reply, proto int, now time.Time, at string) error {
	differ := func() error {
		return failAt(at, "want %s, got %s", e.render(at != ""), renderReply(rep, at != ""))
	}
	switch e.kind {
	case expAny:
		if rep.IsError() {
			return differ()
		}
		return nil
	case expInt:
		if rep.Kind != ':' {
			return differ()
		}
		got, err := strconv.ParseInt(string(rep.Str), 10, 64)
		if err != nil {
			return differ()
		}
		want := e.n
		switch e.clock {
		case clockSec:
			want += now.Unix()
		case clockMS:
			want += now.UnixMilli()
		}
		if got < want-e.tol || got > want+e.tol {
			if e.clock != clockNone || e.tol != 0 {
				return failAt(at, "want %s (%d±%d), got %d (off by %d)", e.render(at != ""), want, e.tol, got, got-want)
			}
			return differ()
		}
		return nil
	case expArray, expSet, expMap:
		return e.matchAggregate(rep, proto, now, at)
	}
	// Every other form is exactly one encoding per protocol.
	if !bytes.Equal(e.encode(proto), rep.Encode()) {
		return differ()
	}
	return nil
}

func (e *Expect) matchAggregate(rep *Reply, proto int, now time.Time, at string) error {
	fail := func(format string, a ...any) error { return failAt(at, format, a...) }
	kind := byte('*')
	switch {
	case e.kind == expSet && proto >= 3:
		kind = '~'
	case e.kind == expMap && proto >= 3:
		kind = '%'
	}
	if rep.Kind != kind || rep.Null {
		return fail("want %s, got %s", e.render(at != ""), renderReply(rep, at != ""))
	}
	if len(rep.Elems) != len(e.elems) {
		return fail("want %d elements, got %d: %s", len(e.elems), len(rep.Elems), renderReply(rep, at != ""))
	}
	switch e.kind {
	case expArray:
		for i, x := range e.elems {
			if err := x.match(rep.Elems[i], proto, now, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case expSet:
		// Elements are exact: compare the sorted encodings.
		want := make([]string, len(e.elems))
		got := make([]string, len(rep.Elems))
		for i := range e.elems {
			want[i] = string(e.elems[i].encode(proto))
			got[i] = string(rep.Elems[i].Encode())
		}
		sort.Strings(want)
		sort.Strings(got)
		for i := range want {
			if want[i] != got[i] {
				return fail("want %s, got %s", e.render(at != ""), renderReply(rep, at != ""))
			}
		}
	case expMap:
		// Keys are exact: find each reply key's expected value.
		byKey := map[string]*Expect{}
		for i := 0; i+1 < len(e.elems); i += 2 {
			byKey[string(e.elems[i].encode(proto))] = e.elems[i+1]
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(rep.Elems); i += 2 {
			k := string(rep.Elems[i].Encode())
			v, ok := byKey[k]
			if !ok || seen[k] {
				return fail("unexpected key %s in %s", renderReply(rep.Elems[i], true), renderReply(rep, at != ""))
			}
			seen[k] = true
			if err := v.match(rep.Elems[i+1], proto, now, at+"{"+renderReply(rep.Elems[i], true)+"}"); err != nil {
				return err
			}
		}
	}
	return nil
}

// encode is the bytes an exact expectation stands for under proto.
func (e *Expect) encode(proto int) []byte {
	r3 := proto >= 3
	var rep *Reply
	switch e.kind {
	case expSimple:
		rep = &Reply{Kind: '+', Str: []byte(e.text)}
	case expError:
		rep = &Reply{Kind: '-', Str: []byte(e.text)}
	case expInt:
		rep = &Reply{Kind: ':', Str: []byte(strconv.FormatInt(e.n, 10))}
	case expBulk:
		rep = &Reply{Kind: '$', Str: []byte(e.text)}
	case expDouble:
		rep = &Reply{Kind: '$', Str: []byte(e.text)}
		if r3 {
			rep.Kind = ','
		}
	case expBool:
		switch {
		case r3 && e.n == 1:
			rep = &Reply{Kind: '#', Str: []byte("t")}
		case r3:
			rep = &Reply{Kind: '#', Str: []byte("f")}
		default:
			rep = &Reply{Kind: ':', Str: []byte(strconv.FormatInt(e.n, 10))}
		}
	case expNil, expNilArray:
		switch {
		case r3:
			rep = &Reply{Kind: '_'}
		case e.kind == expNil:
			rep = &Reply{Kind: '$', Null: true}
		default:
			rep = &Reply{Kind: '*', Null: true}
		}
	default:
		rep = &Reply{Kind: '*'}
		if r3 && e.kind == expSet {
			rep.Kind = '~'
		}
		if r3 && e.kind == expMap {
			rep.Kind = '%'
		}
		n := len(e.elems)
		if rep.Kind == '%' {
			n /= 2
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "%c%d\r\n", rep.Kind, n)
		for _, x := range e.elems {
			b.Write(x.encode(proto))
		}
		return b.Bytes()
	}
	return rep.Encode()
}

// Notation renders a reply in the expectation notation, so a reply can be
// pasted into a case as its expectation. RESP3 types without a form of
// their own (verbatim strings, big numbers, pushes) are shown as the
// reply's String.
func Notation(rep *Reply) string { return renderReply(rep, false) }

func renderReply(rep *Reply, nested bool) string {
	switch {
	case rep.Kind == '_':
		return "nil"
	case rep.Kind == '$' && rep.Null:
		return "nil"
	case rep.Kind == '*' && rep.Null:
		return "nilarray"
	}
	switch rep.Kind {
	case '+':
		return "+" + textNotation(string(rep.Str), nested)
	case '-':
		return "-" + textNotation(string(rep.Str), nested)
	case ':':
		return ":" + string(rep.Str)
	case '$':
		return strconv.Quote(string(rep.Str))
	case ',':
		return "," + string(rep.Str)
	case '#':
		return "#" + string(rep.Str)
	case '*', '~':
		parts := make([]string, len(rep.Elems))
		for i, x := range rep.Elems {
			parts[i] = renderReply(x, true)
		}
		open := "["
		if rep.Kind == '~' {
			open = "~["
		}
		return open + strings.Join(parts, ", ") + "]"
	case '%':
		var parts []string
		for i := 0; i+1 < len(rep.Elems); i += 2 {
			parts = append(parts, renderReply(rep.Elems[i], true)+": "+renderReply(rep.Elems[i+1], true))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return rep.String()
}
