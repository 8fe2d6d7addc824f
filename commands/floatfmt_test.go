package commands

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// incrByFloat runs the arithmetic of INCRBYFLOAT on a stored value and an
// increment, returning the reply text or the error reply.
func incrByFloat(value, incr string) string {
	v, ok := ldParse([]byte(value))
	if !ok {
		return "-" + MsgNotFloat
	}
	d, ok := ldParse([]byte(incr))
	if !ok {
		return "-" + MsgNotFloat
	}
	sum, ok := ldAdd(v, d)
	if !ok {
		return "-" + MsgIncrFloatNaN
	}
	return ldFormatHuman(sum)
}

func TestIncrByFloatMatchesRedis(t *testing.T) {
	f, err := os.Open("testdata/incrbyfloat.tsv")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 3, line)
		var s [3]string
		for i, fld := range fields {
			s[i], err = strconv.Unquote(fld)
			require.NoError(t, err, fld)
		}
		require.Equal(t, s[2], incrByFloat(s[0], s[1]), "INCRBYFLOAT on %q by %q", s[0], s[1])
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 300)
}

func TestLdParseSyntax(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"1", true}, {"-1", true}, {"+1", true}, {".5", true}, {"5.", true}, {"1e5", true},
		{"1E-5", true}, {"0x1p3", true}, {"0X1.8P1", true}, {"0x.8", true}, {"inf", true},
		{"-Infinity", true}, {"00012", true},
		{"", false}, {" 1", false}, {"1 ", false}, {".", false}, {"-", false}, {"1e", false},
		{"1e+", false}, {"0x", false}, {"0x1p", false}, {"nan", false}, {"infin", false},
		{"1\x00", false}, {"1_0", false}, {"0b1", false}, {"1e99999", false}, {"1e-99999", false},
		{"0e99999", true}, {strings.Repeat("1", maxLongDoubleChars), false},
	} {
		_, ok := ldParse([]byte(tc.in))
		require.Equal(t, tc.ok, ok, "%q", tc.in)
	}
}

func TestFormatDouble(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{3.14159, "3.1415899999999999"},
		{100, "100"},
		{1e16, "10000000000000000"},
		{-0.5, "-0.5"},
		{math.Copysign(0, -1), "-0"},
		{5e-324, "4.9406564584124654e-324"},
		{1e300, "1.0000000000000001e+300"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(FormatDouble(nil, tc.in)), "%v", tc.in)
	}
}
