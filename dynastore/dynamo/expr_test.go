package dynamo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

type exprCase struct {
	name  string
	cond  dynastore.Cond
	upd   *dynastore.Update
	query *dynastore.Query
	// err is the sentinel rendering must fail with (nil: it renders).
	err error
}

var exprCases = []exprCase{
	{name: "nil condition", cond: nil},
	{name: "exists", cond: dynastore.Exists{Attr: "pk"}},
	{name: "not exists", cond: dynastore.NotExists{Attr: "pk"}},
	{name: "compare eq number", cond: dynastore.Compare{Attr: "version", Op: dynastore.OpEQ, Val: dynastore.N("42")}},
	{name: "compare ne string", cond: dynastore.Compare{Attr: "type", Op: dynastore.OpNE, Val: dynastore.S("string")}},
	{name: "compare lt binary", cond: dynastore.Compare{Attr: "v", Op: dynastore.OpLT, Val: dynastore.B("\x00\xff")}},
	{name: "compare le", cond: dynastore.Compare{Attr: "expiry", Op: dynastore.OpLE, Val: dynastore.N("1700000000000")}},
	{name: "compare gt", cond: dynastore.Compare{Attr: "n", Op: dynastore.OpGT, Val: dynastore.N("-1.5")}},
	{name: "compare ge", cond: dynastore.Compare{Attr: "n", Op: dynastore.OpGE, Val: dynastore.N("0")}},
	{name: "compare eq list", cond: dynastore.Compare{Attr: "l", Op: dynastore.OpEQ, Val: dynastore.L{dynastore.S("a"), dynastore.BOOL(true), dynastore.NULL{}}}},
	{name: "is type", cond: dynastore.IsType{Attr: "v", Type: dynastore.KindN}},
	{name: "is type bool", cond: dynastore.IsType{Attr: "v", Type: dynastore.KindBOOL}},
	{name: "size compare", cond: dynastore.SizeCompare{Attr: "v", Op: dynastore.OpLE, Size: 1024}},
	{name: "begins with", cond: dynastore.BeginsWith{Attr: "v", Prefix: []byte("pre")}},
	{name: "contains set member", cond: dynastore.Contains{Attr: "members", Val: dynastore.B("m")}},
	{name: "and", cond: dynastore.And{dynastore.Exists{Attr: "pk"}, dynastore.Compare{Attr: "type", Op: dynastore.OpEQ, Val: dynastore.S("string")}}},
	{name: "or of three", cond: dynastore.Or{
		dynastore.NotExists{Attr: "pk"},
		dynastore.Compare{Attr: "expiry", Op: dynastore.OpLE, Val: dynastore.N("100")},
		dynastore.IsType{Attr: "v", Type: dynastore.KindN},
	}},
	{name: "not", cond: dynastore.Not{C: dynastore.Exists{Attr: "expiry"}}},
	{name: "nested", cond: dynastore.And{
		dynastore.Or{dynastore.NotExists{Attr: "pk"}, dynastore.Compare{Attr: "expiry", Op: dynastore.OpLE, Val: dynastore.N("5")}},
		dynastore.Not{C: dynastore.Or{dynastore.IsType{Attr: "v", Type: dynastore.KindL}, dynastore.IsType{Attr: "v", Type: dynastore.KindM}}},
	}},
	{name: "checked condition inside another", cond: dynastore.And{
		dynastore.MustCheck(dynastore.Or{dynastore.NotExists{Attr: "pk"}, dynastore.Compare{Attr: "expiry", Op: dynastore.OpLE, Val: dynastore.N("5")}}),
		dynastore.MustCheck(dynastore.And{dynastore.Exists{Attr: "v"}, dynastore.IsType{Attr: "v", Type: dynastore.KindN}}),
	}},
	{name: "same attribute reuses its placeholder", cond: dynastore.Or{
		dynastore.NotExists{Attr: "expiry"},
		dynastore.Compare{Attr: "expiry", Op: dynastore.OpGT, Val: dynastore.N("5")},
	}},
	{name: "reserved words and odd names", cond: dynastore.And{
		dynastore.Exists{Attr: "size"}, dynastore.Exists{Attr: "a.b"}, dynastore.Exists{Attr: "#x :y"},
	}},
	{name: "empty and is true", cond: dynastore.And{}},
	{name: "empty or is false", cond: dynastore.Or{}},
	{name: "not true is false", cond: dynastore.Not{C: dynastore.And{}}},
	{name: "false in and", cond: dynastore.And{dynastore.Exists{Attr: "a"}, dynastore.Or{}}},
	{name: "true in or", cond: dynastore.Or{dynastore.Exists{Attr: "a"}, dynastore.And{}}},
	{name: "true dropped from and", cond: dynastore.And{dynastore.And{}, dynastore.Exists{Attr: "a"}, nil}},
	{name: "false dropped from or", cond: dynastore.Or{dynastore.Or{}, dynastore.Exists{Attr: "a"}, dynastore.Exists{Attr: "b"}}},
	{name: "nested and and or flatten", cond: dynastore.Or{
		dynastore.Or{dynastore.Exists{Attr: "a"}, dynastore.Exists{Attr: "b"}},
		dynastore.And{dynastore.And{dynastore.Exists{Attr: "c"}, dynastore.Exists{Attr: "d"}}, dynastore.Exists{Attr: "e"}},
	}},
	{name: "absent or live: existence implied", cond: dynastore.Or{
		dynastore.NotExists{Attr: "pk"},
		dynastore.And{
			dynastore.And{dynastore.Exists{Attr: "pk"}, dynastore.Or{dynastore.NotExists{Attr: "x"}, dynastore.Compare{Attr: "x", Op: dynastore.OpGT, Val: dynastore.N("5")}}},
			dynastore.Compare{Attr: "t", Op: dynastore.OpEQ, Val: dynastore.S("string")},
		},
	}},
	{name: "exists then not exists is true", cond: dynastore.Or{dynastore.Exists{Attr: "a"}, dynastore.NotExists{Attr: "a"}}},
	{name: "not exists then exists is true", cond: dynastore.Or{dynastore.NotExists{Attr: "a"}, dynastore.And{dynastore.Exists{Attr: "a"}}}},
	{name: "comparison implies existence and type", cond: dynastore.And{
		dynastore.Exists{Attr: "v"}, dynastore.IsType{Attr: "v", Type: dynastore.KindN},
		dynastore.Compare{Attr: "v", Op: dynastore.OpLE, Val: dynastore.N("9")},
	}},
	{name: "not-equal implies nothing", cond: dynastore.And{
		dynastore.Exists{Attr: "v"}, dynastore.IsType{Attr: "v", Type: dynastore.KindN},
		dynastore.Compare{Attr: "v", Op: dynastore.OpNE, Val: dynastore.N("9")},
	}},
	{name: "comparison keeps another type check", cond: dynastore.And{
		dynastore.IsType{Attr: "v", Type: dynastore.KindB}, dynastore.Compare{Attr: "v", Op: dynastore.OpGT, Val: dynastore.N("9")},
	}},
	{name: "size comparison implies existence", cond: dynastore.And{
		dynastore.Exists{Attr: "v"}, dynastore.SizeCompare{Attr: "v", Op: dynastore.OpLE, Size: 127},
	}},

	{name: "update empty", upd: &dynastore.Update{}},
	{name: "update set literal", upd: &dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "v", Val: dynastore.B("hello")},
		{Attr: "type", Val: dynastore.S("string")},
	}}},
	{name: "update set operands", upd: &dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "copy", Val: dynastore.Ref{Attr: "v"}},
		{Attr: "n", Val: dynastore.IfNotExists{Attr: "n", Default: dynastore.N("0")}},
		{Attr: "version", Val: dynastore.Plus{A: dynastore.IfNotExists{Attr: "version", Default: dynastore.N("0")}, B: dynastore.N("1")}},
		{Attr: "left", Val: dynastore.Minus{A: dynastore.Ref{Attr: "left"}, B: dynastore.N("2")}},
		{Attr: "l", Val: dynastore.ListAppend{A: dynastore.IfNotExists{Attr: "l", Default: dynastore.L{}}, B: dynastore.L{dynastore.B("x")}}},
	}}},
	{name: "update remove", upd: &dynastore.Update{Remove: []string{"expiry", "ttl"}}},
	{name: "update add and delete", upd: &dynastore.Update{
		Add:    []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}, {Attr: "s", Val: dynastore.BS{[]byte("a"), []byte("b")}}},
		Delete: []dynastore.AttrValue{{Attr: "t", Val: dynastore.BS{[]byte("c")}}},
	}},
	{name: "update every clause with condition", upd: &dynastore.Update{
		Set:    []dynastore.SetAction{{Attr: "v", Val: dynastore.N("1")}},
		Remove: []string{"expiry"},
		Add:    []dynastore.AttrValue{{Attr: "version", Val: dynastore.N("1")}},
		Delete: []dynastore.AttrValue{{Attr: "s", Val: dynastore.BS{[]byte("z")}}},
	}, cond: dynastore.Or{dynastore.NotExists{Attr: "pk"}, dynastore.Compare{Attr: "version", Op: dynastore.OpEQ, Val: dynastore.N("3")}}},
	{name: "update nested arithmetic", err: dynastore.ErrInvalid, upd: &dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "n", Val: dynastore.Plus{A: dynastore.Plus{A: dynastore.Ref{Attr: "n"}, B: dynastore.N("1")}, B: dynastore.N("1")}},
	}}},
	{name: "update nested list_append", err: dynastore.ErrInvalid, upd: &dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "l", Val: dynastore.ListAppend{A: dynastore.ListAppend{A: dynastore.Ref{Attr: "l"}, B: dynastore.Ref{Attr: "l"}}, B: dynastore.Ref{Attr: "l"}}},
	}}},
	{name: "update nil operand", err: dynastore.ErrInvalid, upd: &dynastore.Update{Set: []dynastore.SetAction{{Attr: "v"}}}},

	{name: "query partition", query: &dynastore.Query{PK: []byte("k\x00key")}},
	{name: "query eq", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKEq, A: []byte("a")}},
	{name: "query lt", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKLT, A: []byte("a")}},
	{name: "query le", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKLE, A: []byte("a")}},
	{name: "query gt", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKGT, A: []byte("a")}},
	{name: "query ge", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKGE, A: []byte("a")}},
	{name: "query between", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKBetween, A: []byte("a"), B: []byte("z")}},
	{name: "query begins with", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKBeginsWith, A: []byte("\x01g")}},
	{name: "query with filter", query: &dynastore.Query{PK: []byte("p"), Op: dynastore.SKGE, A: []byte("a"),
		Filter: dynastore.Compare{Attr: "expiry", Op: dynastore.OpGT, Val: dynastore.N("9")}}},
	{name: "query with false filter", query: &dynastore.Query{PK: []byte("p"), Filter: dynastore.Or{}}},
	{name: "query unknown op", query: &dynastore.Query{PK: []byte("p"), Op: 99}, err: dynastore.ErrInvalid},
}

// render renders a case the way the requests do: for a query the key
// condition then the filter, for an update the update then the condition.
func (c exprCase) render() (string, error) {
	e := newExprs()
	var b strings.Builder
	switch {
	case c.query != nil:
		kc, err := e.KeyCond(*c.query)
		if err != nil {
			return "", err
		}
		f, err := e.Cond(c.query.Filter)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "key: %s\nfilter: %s\n", kc, f)
	case c.upd != nil:
		u, err := e.Update(*c.upd)
		if err != nil {
			return "", err
		}
		cond, err := e.Cond(c.cond)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "update: %s\ncond: %s\n", u, cond)
	default:
		cond, err := e.Cond(c.cond)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "cond: %s\n", cond)
	}
	names := make([]string, 0, len(e.Names()))
	for p, n := range e.Names() {
		names = append(names, fmt.Sprintf("%s=%q", p, n))
	}
	sort.Strings(names)
	values := make([]string, 0, len(e.Values()))
	for p, v := range e.Values() {
		values = append(values, p+"="+fmtAV(v))
	}
	sort.Strings(values)
	fmt.Fprintf(&b, "names: %s\nvalues: %s\n", strings.Join(names, " "), strings.Join(values, " "))
	return b.String(), nil
}

func fmtAV(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("B%q", v.Value)
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S%q", v.Value)
	case *types.AttributeValueMemberBS:
		parts := make([]string, len(v.Value))
		for i, m := range v.Value {
			parts[i] = fmt.Sprintf("%q", m)
		}
		return "BS[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = fmtAV(e)
		}
		return "L[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%q:%s", k, fmtAV(v.Value[k]))
		}
		return "M{" + strings.Join(parts, ",") + "}"
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL(%t)", v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	}
	return fmt.Sprintf("?%T", av)
}

// TestExpressions renders every case and compares the whole output with
// testdata/expressions.golden (go test -run TestExpressions -update rewrites it).
func TestExpressions(t *testing.T) {
	var out strings.Builder
	seen := map[string]bool{}
	for _, c := range exprCases {
		require.False(t, seen[c.name], "duplicate case name %q", c.name)
		seen[c.name] = true
		got, err := c.render()
		if c.err != nil {
			require.ErrorIs(t, err, c.err, c.name)
			fmt.Fprintf(&out, "== %s\nerror: %v\n\n", c.name, err)
			continue
		}
		require.NoError(t, err, c.name)
		fmt.Fprintf(&out, "== %s\n%s\n", c.name, got)
	}
	path := filepath.Join("testdata", "expressions.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestExpressions -update to create it")
	require.Equal(t, string(want), out.String())
}

// Every placeholder a rendering produces is defined, and every definition is
// used: DynamoDB rejects both an undefined and an unused placeholder.
func TestPlaceholdersUsedExactlyOnce(t *testing.T) {
	for _, c := range exprCases {
		if c.err != nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			e := newExprs()
			var text []string
			switch {
			case c.query != nil:
				kc, err := e.KeyCond(*c.query)
				require.NoError(t, err)
				f, err := e.Cond(c.query.Filter)
				require.NoError(t, err)
				text = append(text, kc, f)
			case c.upd != nil:
				u, err := e.Update(*c.upd)
				require.NoError(t, err)
				cond, err := e.Cond(c.cond)
				require.NoError(t, err)
				text = append(text, u, cond)
			default:
				cond, err := e.Cond(c.cond)
				require.NoError(t, err)
				text = append(text, cond)
			}
			all := strings.Join(text, " ")
			for p := range e.Names() {
				require.Contains(t, all, p)
			}
			for p := range e.Values() {
				require.Contains(t, all, p)
			}
			for _, tok := range strings.FieldsFunc(all, func(r rune) bool { return strings.ContainsRune(" (),", r) }) {
				if strings.HasPrefix(tok, "#") {
					require.Contains(t, e.Names(), tok)
				}
				if strings.HasPrefix(tok, ":") {
					require.Contains(t, e.Values(), tok)
				}
			}
		})
	}
}

// The expressions of the hot commands: SET k v NX PX (a conditional put) and
// INCR (an ADD guarded by type and overflow conditions).
func BenchmarkRender(b *testing.B) {
	setNX := dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.Compare{Attr: "expiry", Op: dynastore.OpLE, Val: dynastore.N("1700000000000")},
	}
	incr := dynastore.Update{
		Add: []dynastore.AttrValue{{Attr: "v", Val: dynastore.N("1")}, {Attr: "version", Val: dynastore.N("1")}},
	}
	incrCond := dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.And{
			dynastore.IsType{Attr: "v", Type: dynastore.KindN},
			dynastore.Compare{Attr: "v", Op: dynastore.OpLE, Val: dynastore.N("9223372036854775806")},
		},
	}
	b.Run("set-nx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := newExprs().Cond(setNX); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("incr", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e := newExprs()
			if _, err := e.Update(incr); err != nil {
				b.Fatal(err)
			}
			if _, err := e.Cond(incrCond); err != nil {
				b.Fatal(err)
			}
		}
	})
}
