package dynamo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// checkAppendString compares appendString with encoding/json, which both
// sides of the wire read and which the SDK's encoder follows.
func checkAppendString(t *testing.T, s string) {
	t.Helper()
	got := appendString(nil, s)
	require.True(t, json.Valid(got), "%q -> %s", s, got)
	want, err := json.Marshal(s)
	require.NoError(t, err)
	var w, g string
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g))
	require.Equal(t, w, g, "%q", s)
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `quote" back\`, "nl\n cr\r tab\t", "\x00\x01\x1f\x7f", "é 😀 \u2028\u2029",
		"<script>&", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate half", strings.Repeat("x", 1000)} {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", `a"b\c`, "\x00\xff", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkAppendString(t, s) })
}

// Every value redamo writes reads back as itself (numbers canonical).
func TestValueJSONRoundTrip(t *testing.T) {
	values := []dynastore.Value{
		dynastore.B("\x00\xffk"), dynastore.B{}, dynastore.B(bytes.Repeat([]byte{7}, 5000)),
		dynastore.N("-12.5"), dynastore.N("0"), dynastore.N("123456789012345678901234567890"),
		dynastore.S(""), dynastore.S("héllo \"x\" \\ \n"),
		dynastore.BS{[]byte("a"), []byte{0}}, dynastore.BOOL(true), dynastore.BOOL(false), dynastore.NULL{},
		dynastore.L{}, dynastore.M{},
		dynastore.L{dynastore.M{"a": dynastore.N("1"), "b\"": dynastore.L{dynastore.S("x"), dynastore.B("y")}}, dynastore.B("z")},
	}
	for _, v := range values {
		b, err := appendAV(nil, v)
		require.NoError(t, err)
		require.True(t, json.Valid(b), "%s", b)
		d := newDecoder(b)
		got := d.value()
		require.NoError(t, d.err, "%s", b)
		require.Equal(t, v, got, "%s", b)
	}
	_, err := appendAV(nil, dynastore.L{nil})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = appendItem(nil, dynastore.Item{{Name: "x", Value: dynastore.M{"y": nil}}})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	require.ErrorContains(t, err, `attribute "x"`)
}

func TestDecodeItem(t *testing.T) {
	cases := []struct {
		name, in string
		want     dynastore.Item
		syntax   bool // a syntax error (else another error, or none)
		err      string
	}{
		{name: "empty is nil", in: `{}`},
		{name: "null is nil", in: `null`},
		{name: "spaces and escapes", in: " {\n\t\"a\\u00e9\" : { \"S\" : \"\\ud83d\\ude00\\/\\\"\" } } ",
			want: dynastore.Item{{Name: "aé", Value: dynastore.S("😀/\"")}}},
		{name: "invalid UTF-8", in: "{\"a\\n\xff\":{\"S\":\"x\xffy\\n\"}}", want: dynastore.Item{{Name: "a\n\ufffd", Value: dynastore.S("x\ufffdy\n")}}},
		{name: "lone surrogate", in: `{"a":{"S":"\ud83d!"}}`, want: dynastore.Item{{Name: "a", Value: dynastore.S("\ufffd!")}}},
		{name: "numbers canonical", in: `{"a":{"N":"3.0"},"b":{"N":"-0"},"c":{"N":"1E+2"}}`,
			want: dynastore.Item{{Name: "a", Value: dynastore.N("3")}, {Name: "b", Value: dynastore.N("0")}, {Name: "c", Value: dynastore.N("100")}}},
		{name: "escaped base64", in: `{"a":{"B":"YS9i\/w=="}}`, want: dynastore.Item{{Name: "a", Value: dynastore.B("a/b\xff")}}},
		{name: "unsupported type", in: `{"a":{"SS":["x"]}}`, err: `attribute "a": dynamo: unsupported attribute type "SS"`},
		{name: "nested unsupported type", in: `{"a":{"M":{"b":{"NS":["1"]}}}}`, err: `attribute "a"`},
		{name: "two types", in: `{"a":{"S":"x","N":"1"}}`, syntax: true},
		{name: "no type", in: `{"a":{}}`, syntax: true},
		{name: "truncated", in: `{"a":{"S":"x"`, syntax: true},
		{name: "unterminated string", in: `{"a":{"S":"x`, syntax: true},
		{name: "bad escape", in: `{"a":{"S":"\q"}}`, syntax: true},
		{name: "control character", in: "{\"a\":{\"S\":\"\x01\"}}", syntax: true},
		{name: "bad base64", in: `{"a":{"B":"!!"}}`, syntax: true},
		{name: "number not a string", in: `{"a":{"N":1}}`, syntax: true},
		{name: "bad bool", in: `{"a":{"BOOL":yes}}`, syntax: true},
		{name: "missing colon", in: `{"a" {"S":"x"}}`, syntax: true},
		{name: "missing comma", in: `{"a":{"S":"x"} "b":{"S":"y"}}`, syntax: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDecoder([]byte(c.in))
			got := d.item()
			var se *errSyntax
			switch {
			case c.syntax:
				require.True(t, errors.As(d.err, &se), "%v", d.err)
			case c.err != "":
				require.ErrorContains(t, d.err, c.err)
				require.False(t, errors.As(d.err, &se))
			default:
				require.NoError(t, d.err)
				require.Equal(t, c.want.Sorted(), got.Sorted())
			}
		})
	}
}

// Binaries decoded into a shared block are capped: appending to one never
// changes another.
func TestDecodedBinariesAreSeparate(t *testing.T) {
	d := newDecoder([]byte(`{"a":{"B":"YQ=="},"b":{"B":"Yg=="},"big":{"B":"` + strings.Repeat("QUFB", 2000) + `"}}`))
	d.str = string(d.b)
	it := d.item()
	require.NoError(t, d.err)
	a := it.Get("a").(dynastore.B)
	require.Equal(t, len(a), cap(a))
	_ = append(a, 'x')
	require.Equal(t, dynastore.B("b"), it.Get("b"))
	require.Len(t, it.Get("big"), 6000)
}

// An item of a Query page is read from its own copy of its text.
func TestOwnItem(t *testing.T) {
	in := []byte(`[{"a":{"S":"x"}},{"b":{"S":"` + strings.Repeat("y", 100) + `"}}]`)
	d := newDecoder(in)
	var items []dynastore.Item
	for more := d.open('['); more; more = d.more(']') {
		items = append(items, d.ownItem())
	}
	require.NoError(t, d.err)
	require.Equal(t, []dynastore.Item{{{Name: "a", Value: dynastore.S("x")}}, {{Name: "b", Value: dynastore.S(strings.Repeat("y", 100))}}}, items)
	for i := range in {
		in[i] = 0
	}
	require.Equal(t, dynastore.S("x"), items[0].Get("a"), "nothing aliases the input")
}

// The decoder never panics, accepts only valid JSON, and what it accepts
// encodes back to what it read.
func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":{"S":"x"}}`, `{"a":{"L":[{"N":"1"},{"M":{"b":{"B":"YQ=="}}}]}}`,
		`{"a":{"BS":["YQ==","Yg=="]},"b":{"BOOL":true},"c":{"NULL":true}}`, `{"a":{"S":"\u00e9\ud83d\ude00"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		d := newDecoder(in)
		it := d.item()
		if d.err != nil {
			return
		}
		require.True(t, json.Valid(in[:d.i]), "accepted %q", in[:d.i])
		if it == nil {
			return
		}
		out, err := appendItem(nil, it)
		require.NoError(t, err)
		d2 := newDecoder(out)
		require.Equal(t, it.Sorted(), d2.item().Sorted())
		require.NoError(t, d2.err)
	})
}
