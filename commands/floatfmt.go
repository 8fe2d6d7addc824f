package commands

// INCRBYFLOAT arithmetic. Redis does it in C long double, which on x86-64 is
// the x87 80-bit format: a 64-bit significand and a 15-bit exponent. A
// float64 would round differently (and overflow far sooner), so values are
// carried as math/big floats rounded to that format after every operation.

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

const (
	ldMantBits = 64
	// In math/big's form x = m × 2^exp with 0.5 <= |m| < 1:
	ldMaxExp    = 16384  // largest finite: (1-2^-64) × 2^16384
	ldMinExp    = -16381 // smallest normal: 0.5 × 2^-16381 = 2^-16382
	ldSubnormal = -16445 // the least subnormal is 2^-16445
	// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: longer text is
	// never parsed as a number.
	maxLongDoubleChars = 5 * 1024
)

// ldParse parses s as Redis's string2ld does (strtold on the whole string,
// which must not start with a space; an overflow or an underflow to zero is
// rejected, as is NaN). Infinities are accepted, as strtold accepts them.
func ldParse(s []byte) (*big.Float, bool) {
	if len(s) == 0 || len(s) >= maxLongDoubleChars {
		return nil, false
	}
	text, ok := strtoldSyntax(string(s))
	if !ok {
		return nil, false
	}
	switch strings.TrimLeft(text, "+-") {
	case "inf":
		return new(big.Float).SetInf(text[0] == '-'), true
	}
	x, zeroInput, ok := parseRounded(text)
	if !ok {
		return nil, false
	}
	if x.IsInf() {
		return nil, false // ERANGE overflow
	}
	if x.Sign() == 0 && !zeroInput {
		return nil, false // ERANGE underflow to zero
	}
	return x, true
}

// strtoldSyntax checks that s is entirely one number as strtold reads it and
// returns it in a form math/big parses: "inf" for the infinities, the
// exponent clamped where it no longer changes the outcome.
func strtoldSyntax(s string) (string, bool) {
	i := 0
	sign := ""
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		if s[i] == '-' {
			sign = "-"
		}
		i++
	}
	rest := strings.ToLower(s[i:])
	if rest == "inf" || rest == "infinity" {
		return sign + "inf", true
	}
	hex := len(rest) > 2 && rest[0] == '0' && rest[1] == 'x'
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isMant := isDigit
	if hex {
		i += 2
		isMant = func(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
	}
	start := i
	digits := 0
	for i < len(s) && isMant(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isMant(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return "", false
	}
	mant := s[start:i]
	if i == len(s) {
		if hex {
			return sign + "0x" + mant + "p0", true
		}
		return sign + mant, true
	}
	expChar := byte('e')
	if hex {
		expChar = 'p'
	}
	if s[i]|0x20 != expChar {
		return "", false
	}
	i++
	expNeg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		expNeg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return "", false
	}
	// The mantissa has fewer than 5120 digits, so beyond ±100000 (decimal
	// or binary) the result is an overflow or an underflow either way.
	exp := 0
	for ; i < len(s); i++ {
		if !isDigit(s[i]) {
			return "", false
		}
		if exp < 100000 {
			exp = exp*10 + int(s[i]-'0')
		}
	}
	if exp > 100000 {
		exp = 100000
	}
	if expNeg {
		exp = -exp
	}
	if hex {
		return sign + "0x" + mant + "p" + itoa(exp), true
	}
	return sign + mant + "e" + itoa(exp), true
}

func itoa(n int) string {
	return big.NewInt(int64(n)).String()
}

// parseRounded converts checked number text to the nearest long double,
// rounding once (subnormals included). zeroInput reports an exact zero.
func parseRounded(text string) (x *big.Float, zeroInput bool, ok bool) {
	parse := func(prec uint) (*big.Float, bool) {
		f, _, err := big.ParseFloat(text, 0, prec, big.ToNearestEven)
		return f, err == nil
	}
	x, ok = parse(ldMantBits)
	if !ok {
		return nil, false, false
	}
	if x.Sign() == 0 {
		return x, true, true
	}
	exp := x.MantExp(nil)
	switch {
	case exp > ldMaxExp:
		return new(big.Float).SetInf(x.Sign() < 0), false, true
	case exp >= ldMinExp:
		return x, false, true
	}
	// Subnormal: fewer significant bits; round the text again at that
	// precision so the result is rounded only once.
	if prec := exp - ldSubnormal; prec >= 1 {
		x, ok = parse(uint(prec))
		return x, false, ok
	}
	wide, ok := parse(256)
	if !ok {
		return nil, false, false
	}
	return roundBelowSubnormal(wide), false, true
}

// roundBelowSubnormal rounds a value smaller than the least subnormal: to it
// when above half of it, else to zero (a tie goes to the even zero).
func roundBelowSubnormal(x *big.Float) *big.Float {
	least := new(big.Float).SetMantExp(big.NewFloat(1), ldSubnormal)
	half := new(big.Float).SetMantExp(big.NewFloat(1), ldSubnormal-1)
	abs := new(big.Float).Abs(x)
	out := new(big.Float).SetPrec(ldMantBits)
	if abs.Cmp(half) > 0 {
		out.Set(least)
	}
	if x.Signbit() {
		out.Neg(out)
	}
	return out
}

// ldRound rounds an exact value to the long double format: 64-bit
// significand, subnormals, ±Inf on overflow.
func ldRound(exact *big.Float) *big.Float {
	if exact.IsInf() || exact.Sign() == 0 {
		return new(big.Float).SetPrec(ldMantBits).Set(exact)
	}
	exp := exact.MantExp(nil)
	prec := ldMantBits
	if exp < ldMinExp {
		prec = exp - ldSubnormal
		if prec < 1 {
			return roundBelowSubnormal(exact)
		}
	}
	x := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(prec)).Set(exact)
	if x.MantExp(nil) > ldMaxExp {
		return new(big.Float).SetInf(x.Sign() < 0)
	}
	return x.SetPrec(ldMantBits)
}

// ldAdd returns a + b as long double addition does; ok is false when the
// result is NaN or infinite (Redis refuses both).
func ldAdd(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	// Exact sum first, then one rounding.
	sum := new(big.Float).SetPrec(0)
	if a.Sign() != 0 && b.Sign() != 0 {
		ea, eb := a.MantExp(nil), b.MantExp(nil)
		span := ea - eb
		if span < 0 {
			span = -span
		}
		sum.SetPrec(uint(span + 2*ldMantBits + 2))
	} else {
		sum.SetPrec(ldMantBits)
	}
	sum.Add(a, b)
	r := ldRound(sum)
	if r.IsInf() {
		return nil, false
	}
	return r, true
}

// ldFormatHuman formats as Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf",
// trailing zeros (and a trailing '.') removed, "-0" written as "0".
func ldFormatHuman(x *big.Float) string {
	s := x.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// FormatHumanDouble appends f as Redis's addReplyHumanLongDouble prints a
// double (GEOPOS coordinates): ldFormatHuman of its exact value.
func FormatHumanDouble(dst []byte, f float64) []byte {
	if special, ok := formatSpecial(dst, f); ok {
		return special
	}
	return append(dst, ldFormatHuman(new(big.Float).SetFloat64(f))...)
}

// formatSpecial appends Redis's spelling of an infinity or NaN (ok false
// for any other value).
func formatSpecial(dst []byte, f float64) ([]byte, bool) {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...), true
	case math.IsInf(f, -1):
		return append(dst, "-inf"...), true
	case math.IsNaN(f):
		return append(dst, "nan"...), true
	}
	return dst, false
}

// FormatDouble appends f as Redis 7.0 prints a double reply: C's "%.17g", with
// "inf", "-inf" and "nan".
func FormatDouble(dst []byte, f float64) []byte {
	if special, ok := formatSpecial(dst, f); ok {
		return special
	}
	// Go's 'g' with precision 17 matches C's %.17g: trailing zeros dropped,
	// exponent with a sign and at least two digits.
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
