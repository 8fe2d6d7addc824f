package dynastore

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// DynamoDB's Number range: magnitudes from 1e-130 up to (but excluding) 1e126,
// with at most MaxNumberDigits significant digits. In the 0.ddd x 10^exp form
// used below that is -129 <= exp <= 126.
const (
	minNumberExp = -129
	maxNumberExp = 126
)

// Messages of DynamoDB's ValidationException for numbers, as the service words them.
const (
	msgNotNumber      = "A value provided cannot be converted into a number"
	msgNumberDigits   = "DynamoDB only supports precision up to 38 digits"
	msgNumberOverflow = "Number overflow. Attempting to store a number with magnitude larger than supported range"
	msgNumberUnder    = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
)

// decimal is an exact DynamoDB number: 0.<digits> x 10^exp, negated when neg.
// digits has no leading or trailing zeros; zero is the empty digits string
// (and never negative), so every value has exactly one representation.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// parseDecimal reads DynamoDB's number syntax: an optional sign, digits with
// an optional decimal point (".5" and "5." are numbers), an optional exponent.
func parseDecimal(s string) (decimal, error) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	var buf []byte
	point, seenPoint, nDigits := 0, false, 0
mantissa:
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			nDigits++
			// Leading zeros carry no information but the point position.
			if len(buf) == 0 && c == '0' {
				if seenPoint {
					point--
				}
				continue
			}
			buf = append(buf, c)
			if !seenPoint {
				point++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		default:
			break mantissa
		}
	}
	if nDigits == 0 {
		return decimal{}, invalidf("%s", msgNotNumber)
	}
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return decimal{}, invalidf("%s", msgNotNumber)
		}
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return decimal{}, invalidf("%s", msgNotNumber)
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return decimal{}, invalidf("%s", msgNotNumber)
			}
			// Saturate: anything this large is out of range unless the
			// mantissa is zero, and then the exponent does not matter.
			if exp < 1_000_000 {
				exp = exp*10 + int(c-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	d.digits = strings.TrimRight(string(buf), "0")
	if d.digits == "" {
		return decimal{}, nil
	}
	d.exp = point + exp
	return d, d.check()
}

// check enforces DynamoDB's precision and range.
func (d decimal) check() error {
	switch {
	case d.digits == "":
		return nil
	case len(d.digits) > MaxNumberDigits:
		return invalidf("%s", msgNumberDigits)
	case d.exp > maxNumberExp:
		return invalidf("%s", msgNumberOverflow)
	case d.exp < minNumberExp:
		return invalidf("%s", msgNumberUnder)
	}
	return nil
}

// String is the canonical form: plain positional notation, no exponent, no
// superfluous zeros ("7", "1.5", "-0.0012", "0").
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	n := len(d.digits)
	switch {
	case d.exp <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -d.exp))
		b.WriteString(d.digits)
	case d.exp >= n:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp-n))
	default:
		b.WriteString(d.digits[:d.exp])
		b.WriteByte('.')
		b.WriteString(d.digits[d.exp:])
	}
	return b.String()
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

func (d decimal) cmp(o decimal) int {
	ds, os := d.sign(), o.sign()
	if ds != os {
		if ds < os {
			return -1
		}
		return 1
	}
	if ds == 0 {
		return 0
	}
	// Same sign: compare magnitudes, then flip for negatives.
	m := 0
	switch {
	case d.exp != o.exp:
		m = 1
		if d.exp < o.exp {
			m = -1
		}
	default:
		m = strings.Compare(d.digits, o.digits)
	}
	if ds < 0 {
		return -m
	}
	return m
}

// coef returns the signed integer c and the exponent e with d = c x 10^e.
func (d decimal) coef() (*big.Int, int) {
	c := new(big.Int)
	if d.digits == "" {
		return c, 0
	}
	c.SetString(d.digits, 10)
	if d.neg {
		c.Neg(c)
	}
	return c, d.exp - len(d.digits)
}

// add returns d + o exactly, or ErrInvalid when the exact result does not fit
// DynamoDB's precision or range (DynamoDB never rounds).
func (d decimal) add(o decimal) (decimal, error) {
	a, ea := d.coef()
	b, eb := o.coef()
	e := min(ea, eb)
	ten := big.NewInt(10)
	if ea > e {
		a.Mul(a, new(big.Int).Exp(ten, big.NewInt(int64(ea-e)), nil))
	}
	if eb > e {
		b.Mul(b, new(big.Int).Exp(ten, big.NewInt(int64(eb-e)), nil))
	}
	a.Add(a, b)
	var r decimal
	if a.Sign() == 0 {
		return r, nil
	}
	r.neg = a.Sign() < 0
	s := a.Abs(a).String()
	r.exp = len(s) + e
	r.digits = strings.TrimRight(s, "0")
	return r, r.check()
}

func (d decimal) negate() decimal {
	if d.digits != "" {
		d.neg = !d.neg
	}
	return d
}

// size is the number's storage size as DynamoDB counts it: one byte per pair
// of significant digits (pairs aligned on the decimal point), one more byte,
// and one for a negative sign. Measured against DynamoDB Local's 400 KB check.
func (d decimal) size() int {
	if d.digits == "" {
		return 1
	}
	pad := ((d.exp % 2) + 2) % 2
	n := (len(d.digits)+pad+1)/2 + 1
	if d.neg {
		n++
	}
	return n
}

// CanonicalNumber validates a number in DynamoDB's syntax and returns it in
// the canonical form DynamoDB stores and returns ("007" -> "7", "1.50" ->
// "1.5", "-0" -> "0", "1e2" -> "100"). Malformed, over-precise or
// out-of-range numbers are ErrInvalid, with DynamoDB's message.
func CanonicalNumber(s string) (N, error) {
	// A plain int64 is already canonical: no copy needed.
	if _, _, ok := plainInt(s); ok {
		return N(s), nil
	}
	d, err := parseDecimal(s)
	if err != nil {
		return "", err
	}
	return N(d.String()), nil
}

// isPlainInt reports whether s is already a canonical int64 rendering, the
// common case worth a fast path.
func isPlainInt(s string) bool {
	if s == "0" {
		return true
	}
	if strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	return s != "" && s[0] != '0' && s[0] != '+'
}

// comparePlain compares two plainInt results: sign first, then magnitude
// (more digits is larger, equal lengths compare as text).
func comparePlain(an bool, ad string, bn bool, bd string) int {
	sign := func(neg bool, d string) int {
		switch {
		case d == "":
			return 0
		case neg:
			return -1
		}
		return 1
	}
	sa, sb := sign(an, ad), sign(bn, bd)
	if sa != sb || sa == 0 {
		return cmpInt(int64(sa), int64(sb))
	}
	c := cmpInt(int64(len(ad)), int64(len(bd)))
	if c == 0 {
		c = strings.Compare(ad, bd)
	}
	return sa * c
}

// CompareNumbers compares two numbers numerically: -1, 0 or +1.
func CompareNumbers(a, b N) (int, error) {
	if an, ad, ok := plainInt(string(a)); ok {
		if bn, bd, ok := plainInt(string(b)); ok {
			return comparePlain(an, ad, bn, bd), nil
		}
	}
	x, err := parseDecimal(string(a))
	if err != nil {
		return 0, err
	}
	y, err := parseDecimal(string(b))
	if err != nil {
		return 0, err
	}
	return x.cmp(y), nil
}

// AddNumbers returns a + b exactly, in canonical form; a result DynamoDB
// cannot store (more than 38 significant digits, out of range) is ErrInvalid.
func AddNumbers(a, b N) (N, error) {
	if s, ok := addInts(a, b); ok {
		return N(strconv.FormatInt(s, 10)), nil
	}
	return addDecimals(a, b)
}

// sumValue is AddNumbers's sum as a Value, for a store to keep: a sum in
// the range of sharedInts is its shared box.
func sumValue(a, b N) (Value, error) {
	if s, ok := addInts(a, b); ok {
		if 0 <= s && s < int64(len(sharedInts)) {
			return sharedInts[s], nil
		}
		return N(strconv.FormatInt(s, 10)), nil
	}
	return addDecimals(a, b)
}

// sharedInts holds the numbers 0 to 9999 boxed once, as Redis shares its
// integer objects below 10000: the counters an embedded store's updates
// ADD to are mostly small, and each sum then costs no allocation and its
// item one object fewer for the collector to mark.
var sharedInts = func() (vs [10000]Value) {
	for i := range vs {
		vs[i] = N(strconv.Itoa(i))
	}
	return vs
}()

// addInts is a + b when both are integers and so is their sum, in int64.
func addInts(a, b N) (int64, bool) {
	x, ok := fastInt(a)
	if !ok {
		return 0, false
	}
	y, ok := fastInt(b)
	if !ok {
		return 0, false
	}
	s := x + y
	return s, (s > x) == (y > 0)
}

// addDecimals is AddNumbers in decimal arithmetic.
func addDecimals(a, b N) (N, error) {
	x, err := parseDecimal(string(a))
	if err != nil {
		return "", err
	}
	y, err := parseDecimal(string(b))
	if err != nil {
		return "", err
	}
	r, err := x.add(y)
	if err != nil {
		return "", err
	}
	return N(r.String()), nil
}

// SubtractNumbers returns a - b exactly, as AddNumbers.
func SubtractNumbers(a, b N) (N, error) {
	y, err := parseDecimal(string(b))
	if err != nil {
		return "", err
	}
	return AddNumbers(a, N(y.negate().String()))
}

// fastInt parses a canonical int64 without allocating; INCR lives here.
func fastInt(n N) (int64, bool) {
	if !isPlainInt(string(n)) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

// plainInt splits an integer already in canonical form and within DynamoDB's
// precision and range (the common case: counters, versions) into its sign
// and its digits; "0" has no digits.
func plainInt(s string) (neg bool, digits string, ok bool) {
	if s == "0" {
		return false, "", true
	}
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if s == "" || len(s) > maxNumberExp || s[0] == '0' {
		return false, "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false, "", false
		}
	}
	if len(s) > MaxNumberDigits && len(strings.TrimRight(s, "0")) > MaxNumberDigits {
		return false, "", false
	}
	return neg, s, true
}

func numberSize(n N) int {
	if neg, digits, ok := plainInt(string(n)); ok {
		// As decimal.size for 0.<digits> x 10^len(digits), without parsing.
		if digits == "" {
			return 1
		}
		exp := len(digits)
		sz := (len(strings.TrimRight(digits, "0"))+exp%2+1)/2 + 1
		if neg {
			sz++
		}
		return sz
	}
	d, err := parseDecimal(string(n))
	if err != nil {
		return len(n)
	}
	return d.size()
}
