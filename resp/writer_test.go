package resp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
)

var _ commands.Writer = (*Writer)(nil)

// The expected bytes were taken from redis-server 7.0.15 (raw socket) for
// the replies that commands produce in both protocols.
func TestWriterEncoding(t *testing.T) {
	cases := []struct {
		name       string
		write      func(w *Writer)
		resp2      string
		resp3      string
		incomplete bool
	}{
		{"simple", func(w *Writer) { w.Simple("OK") }, "+OK\r\n", "+OK\r\n", false},
		{"simple newline sanitized", func(w *Writer) { w.Simple("a\r\nb") }, "+a  b\r\n", "+a  b\r\n", false},
		{"error", func(w *Writer) { w.Error("ERR syntax error") }, "-ERR syntax error\r\n", "-ERR syntax error\r\n", false},
		{"error newline sanitized", func(w *Writer) { w.Error("ERR a\nb") }, "-ERR a b\r\n", "-ERR a b\r\n", false},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n", false},
		{"int min", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n", false},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\x00b")) }, "$3\r\na\x00b\r\n", "$3\r\na\x00b\r\n", false},
		{"bulk empty", func(w *Writer) { w.Bulk(nil) }, "$0\r\n\r\n", "$0\r\n\r\n", false},
		{"bulk string", func(w *Writer) { w.BulkString("hi") }, "$2\r\nhi\r\n", "$2\r\nhi\r\n", false},
		{"nil", func(w *Writer) { w.Nil() }, "$-1\r\n", "_\r\n", false},
		{"nil array", func(w *Writer) { w.NilArray() }, "*-1\r\n", "_\r\n", false},
		{"array", func(w *Writer) { w.Array(2); w.Int(1); w.Nil() }, "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n_\r\n", false},
		{"empty array", func(w *Writer) { w.Array(0) }, "*0\r\n", "*0\r\n", false},
		{"map", func(w *Writer) { w.Map(1); w.BulkString("port"); w.BulkString("6379") },
			"*2\r\n$4\r\nport\r\n$4\r\n6379\r\n", "%1\r\n$4\r\nport\r\n$4\r\n6379\r\n", false},
		{"empty map", func(w *Writer) { w.Map(0) }, "*0\r\n", "%0\r\n", false},
		{"set", func(w *Writer) { w.Set(2); w.Simple("fast"); w.Simple("readonly") },
			"*2\r\n+fast\r\n+readonly\r\n", "~2\r\n+fast\r\n+readonly\r\n", false},
		{"double", func(w *Writer) { w.Double(1.1) }, "$18\r\n1.1000000000000001\r\n", ",1.1000000000000001\r\n", false},
		{"double integral", func(w *Writer) { w.Double(0) }, "$1\r\n0\r\n", ",0\r\n", false},
		{"double exponent", func(w *Writer) { w.Double(1e-5) }, "$22\r\n1.0000000000000001e-05\r\n", ",1.0000000000000001e-05\r\n", false},
		{"double big", func(w *Writer) { w.Double(1e17) }, "$5\r\n1e+17\r\n", ",1e+17\r\n", false},
		{"double inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n", false},
		{"double -inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n", false},
		{"double nan", func(w *Writer) { w.Double(math.NaN()) }, "$3\r\nnan\r\n", ",nan\r\n", false},
		{"bool true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n", false},
		{"bool false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n", false},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", "a\r\nb") }, "$4\r\na\r\nb\r\n", "=8\r\ntxt:a\r\nb\r\n", false},
		{"nested", func(w *Writer) {
			w.Array(2)
			w.Map(1)
			w.BulkString("k")
			w.Set(0)
			w.Array(1)
			w.Int(7)
		}, "*2\r\n*2\r\n$1\r\nk\r\n*0\r\n*1\r\n:7\r\n", "*2\r\n%1\r\n$1\r\nk\r\n~0\r\n*1\r\n:7\r\n", false},
		{"nothing written", func(w *Writer) {}, "", "", true},
		{"two replies", func(w *Writer) { w.Int(1); w.Int(2) }, ":1\r\n:2\r\n", ":1\r\n:2\r\n", true},
		{"short array", func(w *Writer) { w.Array(2); w.Int(1) }, "*2\r\n:1\r\n", "*2\r\n:1\r\n", true},
	}
	for _, tc := range cases {
		for _, proto := range []int{2, 3} {
			want := tc.resp2
			if proto == 3 {
				want = tc.resp3
			}
			w := NewWriter(proto)
			tc.write(w)
			require.Equal(t, want, string(w.Bytes()), "%s RESP%d", tc.name, proto)
			require.Equal(t, !tc.incomplete, w.Complete(), "%s RESP%d complete", tc.name, proto)
			w.Reset()
			require.Empty(t, w.Bytes())
		}
	}
}

func TestWriterCountsErrors(t *testing.T) {
	w := NewWriter(2)
	w.Array(2)
	w.Error("ERR a")
	w.Int(1)
	require.Equal(t, 1, w.Errors())
	require.True(t, w.Complete())
	w.Reset()
	require.Equal(t, 0, w.Errors())
}
