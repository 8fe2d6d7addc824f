package dynastore

import (
	"bufio"
	"errors"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// numberCase is one line of testdata/numbers.txt.
type numberCase struct {
	line      int
	op        string
	a, b      string
	want      string
	wantError string
}

func readNumberCases(t *testing.T) []numberCase {
	t.Helper()
	f, err := os.Open("testdata/numbers.txt")
	require.NoError(t, err)
	defer f.Close()
	var out []numberCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, ok := strings.Cut(line, " ")
		require.True(t, ok, "line %d", n)
		args, want, ok := strings.Cut(rest, " => ")
		require.True(t, ok, "line %d: no =>", n)
		c := numberCase{line: n, op: op, want: want}
		if e, ok := strings.CutPrefix(want, "ERR "); ok {
			c.wantError, c.want = e, ""
		}
		if op == "canon" {
			c.a = args // may hold spaces on purpose
		} else {
			f := strings.Fields(args)
			require.Len(t, f, 2, "line %d", n)
			c.a, c.b = f[0], f[1]
		}
		out = append(out, c)
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

func TestNumberCases(t *testing.T) {
	for _, c := range readNumberCases(t) {
		t.Run(strconv.Itoa(c.line)+"_"+c.op, func(t *testing.T) {
			var got string
			var err error
			switch c.op {
			case "canon":
				var n N
				n, err = CanonicalNumber(c.a)
				got = string(n)
			case "add":
				var n N
				n, err = AddNumbers(N(c.a), N(c.b))
				got = string(n)
				// A store's sums, shared or not, are the same numbers.
				v, verr := sumValue(N(c.a), N(c.b))
				if err == nil {
					require.NoError(t, verr)
					require.Equal(t, Value(n), v)
				} else {
					require.Equal(t, err.Error(), verr.Error())
				}
			case "sub":
				var n N
				n, err = SubtractNumbers(N(c.a), N(c.b))
				got = string(n)
			case "cmp":
				var r int
				r, err = CompareNumbers(N(c.a), N(c.b))
				got = strconv.Itoa(r)
			default:
				t.Fatalf("unknown op %q", c.op)
			}
			if c.wantError != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.Contains(t, err.Error(), c.wantError)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// A sum below 10000 is a box made once, not an allocation.
func TestSumValueShared(t *testing.T) {
	for _, c := range []struct {
		a, b   N
		allocs float64
	}{
		{"41", "1", 0}, {"9998", "1", 0}, {"-1", "1", 0}, {"9999", "1", 2}, {"-2", "1", 2},
	} {
		got := testing.AllocsPerRun(10, func() {
			if _, err := sumValue(c.a, c.b); err != nil {
				t.Fatal(err)
			}
		})
		require.Equal(t, c.allocs, got, "%s + %s", c.a, c.b)
	}
}

func TestNumberSize(t *testing.T) {
	// Sizes measured on DynamoDB Local by bisecting the 400 KB limit.
	for _, c := range []struct {
		n    string
		size int
	}{
		{"0", 1}, {"1", 2}, {"12", 2}, {"123", 3}, {"-1", 3}, {"0.001", 2},
		{"1000", 2}, {"1.5", 3}, {"12.5", 3},
		{strings.Repeat("1", 38), 20}, {"-" + strings.Repeat("1", 38), 21},
	} {
		require.Equal(t, c.size, numberSize(N(c.n)), c.n)
	}
}

// ratOf parses a canonical number exactly.
func ratOf(t *testing.T, s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	require.True(t, ok, "big.Rat cannot parse %q", s)
	return r
}

// exactDigits returns the significant digits and the 0.ddd x 10^exp exponent
// of a finite decimal rational (every DynamoDB number is one).
func exactDigits(r *big.Rat) (string, int) {
	if r.Sign() == 0 {
		return "", 0
	}
	s := new(big.Rat).Abs(r).FloatString(200)
	intPart, frac, _ := strings.Cut(s, ".")
	all := strings.TrimLeft(intPart, "0")
	exp := len(all)
	if all == "" {
		trimmed := strings.TrimLeft(frac, "0")
		exp = -(len(frac) - len(trimmed))
		return strings.TrimRight(trimmed, "0"), exp
	}
	return strings.TrimRight(all+frac, "0"), exp
}

func smallExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	return i < 0 || len(s)-i <= 5
}

func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "007", "1.50", "-0", "1e2", ".5", "5.", "-1.2e-3", "1e126", "1e-131", "abc", "+", "1e+5", "12345678901234567890123456789012345678"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := CanonicalNumber(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		again, err := CanonicalNumber(string(n))
		require.NoError(t, err)
		require.Equal(t, n, again, "canonical form is a fixed point")
		require.NotContains(t, string(n), "e")
		if smallExponent(s) && len(s) < 200 {
			in, ok := new(big.Rat).SetString(s)
			if ok && !strings.ContainsAny(s, "xXoObB_/") {
				require.Zero(t, in.Cmp(ratOf(t, string(n))), "%q -> %q", s, n)
			}
		}
	})
}

func FuzzAddNumbers(f *testing.F) {
	f.Add("1", "2")
	f.Add("0.1", "0.2")
	f.Add("99999999999999999999999999999999999999", "1")
	f.Add("1e125", "9e125")
	f.Add("9223372036854775807", "1")
	f.Add("-1.5", "1.5")
	f.Add("1e-130", "-2e-130")
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, err := CanonicalNumber(a)
		if err != nil {
			return
		}
		cb, err := CanonicalNumber(b)
		if err != nil {
			return
		}
		sum := new(big.Rat).Add(ratOf(t, string(ca)), ratOf(t, string(cb)))
		got, err := AddNumbers(ca, cb)
		digits, exp := exactDigits(sum)
		fits := digits == "" || (len(digits) <= MaxNumberDigits && exp <= maxNumberExp && exp >= minNumberExp)
		if !fits {
			require.ErrorIs(t, err, ErrInvalid, "%s + %s = %s", ca, cb, sum.FloatString(20))
			return
		}
		require.NoError(t, err, "%s + %s", ca, cb)
		require.Zero(t, sum.Cmp(ratOf(t, string(got))), "%s + %s = %s", ca, cb, got)
		canon, err := CanonicalNumber(string(got))
		require.NoError(t, err)
		require.Equal(t, canon, got)

		diff, err := SubtractNumbers(got, cb)
		if err == nil {
			c, err := CompareNumbers(diff, ca)
			require.NoError(t, err)
			require.Zero(t, c, "(%s + %s) - %s = %s", ca, cb, cb, diff)
		} else {
			require.True(t, errors.Is(err, ErrInvalid))
		}
	})
}

// The integer fast paths must agree with the general decimal code.
func TestPlainIntFastPaths(t *testing.T) {
	for _, s := range []string{
		"0", "1", "-1", "9", "10", "-10", "100", "12", "120", "1200", "-1200",
		"123456789012345678", "-123456789012345678", "100000000000000000",
		"999999999999999999", "1234567890123456789", "-9223372036854775808",
		"9223372036854775807", "00", "-0", "+5", "05", "1e3", "1.0", "", "-", "1a",
		"18446744073709551615", strings.Repeat("9", 38), strings.Repeat("9", 39),
		"-" + strings.Repeat("9", 38), "1" + strings.Repeat("0", 125),
		"1" + strings.Repeat("0", 126), strings.Repeat("1", 38) + strings.Repeat("0", 80),
		strings.Repeat("1", 39) + strings.Repeat("0", 80),
	} {
		d, err := parseDecimal(s)
		if err != nil {
			_, cerr := CanonicalNumber(s)
			require.Error(t, cerr, s)
			continue
		}
		require.Equal(t, d.size(), numberSize(N(s)), s)
		c, err := CanonicalNumber(s)
		require.NoError(t, err, s)
		require.Equal(t, d.String(), string(c), s)
	}
}

func TestCompareNumbersFastPath(t *testing.T) {
	nums := []string{
		"0", "1", "-1", "9", "10", "-10", "99", "100", "-100", "123", "124", "-123", "-124",
		"9223372036854775807", "-9223372036854775808", "18446744073709551615",
		strings.Repeat("9", 38), "-" + strings.Repeat("9", 38), "1.5", "-0.5",
	}
	for _, a := range nums {
		for _, b := range nums {
			x, err := parseDecimal(a)
			require.NoError(t, err)
			y, err := parseDecimal(b)
			require.NoError(t, err)
			got, err := CompareNumbers(N(a), N(b))
			require.NoError(t, err)
			require.Equal(t, x.cmp(y), got, "%s vs %s", a, b)
		}
	}
}
