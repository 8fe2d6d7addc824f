package lualib

import (
	"math"
	"strconv"
	"strings"
)

// Number conversions as the C code behind Redis's Lua does them on x86-64
// Linux with glibc: printf's %g, strtod, and the CPU's float-to-integer
// truncation (out of range gives the "integer indefinite" value).

// formatG is C's printf("%.<prec>g", f).
func formatG(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// truncInt64 is C's (int64_t)f.
func truncInt64(f float64) int64 {
	if f != f || f >= 0x1p63 || f < -0x1p63 {
		return math.MinInt64
	}
	return int64(f)
}

// truncInt32 is C's (int)f.
func truncInt32(f float64) int32 {
	if f != f || f >= 0x1p31 || f < -0x1p31 {
		return math.MinInt32
	}
	return int32(f)
}

// truncUint64 is C's (uint64_t)f as gcc compiles it: values from 2^63 go
// through a subtraction of 2^63, and whatever is out of range on either
// path (NaN takes the first) comes out as the CPU's overflow value.
func truncUint64(f float64) uint64 {
	if !(f >= 0x1p63) {
		return uint64(truncInt64(f))
	}
	return uint64(truncInt64(f-0x1p63)) ^ (1 << 63)
}

func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool { return hexValue(c) >= 0 }

// hexValue is the value of the hex digit c, -1 if c is none.
func hexValue(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

// hasPrefixFold reports whether s starts with the lower-case ASCII word w,
// in any case.
func hasPrefixFold(s, w string) bool {
	return len(s) >= len(w) && strings.EqualFold(s[:len(w)], w)
}

// strtod is glibc's strtod in the C locale: the value of the longest
// prefix of s that reads as a number, and that prefix's length (0 when
// there is none). Like the C function, it stops at a zero byte.
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := s[i:]
	switch {
	case hasPrefixFold(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case hasPrefixFold(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case hasPrefixFold(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '_' || (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z')) {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		// glibc's NaN is the quiet one with no payload; the sign is kept.
		return sign(math.Float64frombits(0x7FF8000000000000)), n
	case len(rest) >= 2 && rest[0] == '0' && rest[1]|0x20 == 'x':
		if f, n := strtodHex(rest[2:]); n > 0 {
			return sign(f), i + 2 + n
		}
		return sign(0), i + 1 // "0x" without digits reads as the "0"
	}
	j, digits := scanMantissa(s, i, isDigit)
	if digits == 0 {
		return 0, 0
	}
	j = scanExponent(s, j, 'e')
	// ParseFloat rounds as strtod does; out of range it returns ±Inf or 0
	// with an error, which is strtod's value too.
	f, _ := strconv.ParseFloat(s[i:j], 64)
	return sign(f), j
}

// strtodHex reads the hexadecimal mantissa and optional binary exponent
// that follow "0x".
func strtodHex(s string) (float64, int) {
	j, digits := scanMantissa(s, 0, isHexDigit)
	if digits == 0 {
		return 0, 0
	}
	mantissa := s[:j]
	k := scanExponent(s, j, 'p')
	exp := s[j:k]
	if k == j {
		exp = "p0" // ParseFloat wants the exponent strtod does without
	}
	f, _ := strconv.ParseFloat("0x"+mantissa+exp, 64)
	return f, k
}

// scanMantissa reads digits, a point and more digits from s[j:], and
// returns where they end and how many digits there were.
func scanMantissa(s string, j int, digit func(byte) bool) (int, int) {
	digits := 0
	for j < len(s) && digit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && digit(s[j]) {
			j++
			digits++
		}
	}
	return j, digits
}

// scanExponent reads at s[j:] an exponent introduced by marker (in either
// case), a sign and decimal digits, and returns where it ends: j when
// there is no complete exponent there.
func scanExponent(s string, j int, marker byte) int {
	if j >= len(s) || s[j]|0x20 != marker {
		return j
	}
	k := j + 1
	if k < len(s) && (s[k] == '+' || s[k] == '-') {
		k++
	}
	if k >= len(s) || !isDigit(s[k]) {
		return j
	}
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	return k
}

// stringToNumber is Lua 5.1's luaO_str2d, which lua_tonumber applies to
// strings: strtod, then nothing but white space may follow. The string
// ends at its first zero byte, as a C string does.
func stringToNumber(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	for ; n < len(s); n++ {
		if !isSpace(s[n]) {
			return 0, false
		}
	}
	return f, true
}

// Strtod is glibc's strtod in the C locale (see strtod): the value of the
// longest prefix of s that reads as a number, and that prefix's length (0
// when there is none).
func Strtod(s string) (float64, int) { return strtod(s) }
