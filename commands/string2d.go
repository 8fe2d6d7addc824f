package commands

import "strconv"

// string2d parses s as Redis's string2d (getDoubleFromObject): all of s is
// one number as strtod reads it, no leading space, no NaN, and neither an
// overflow nor an underflow to zero.
func string2d(s []byte) (float64, bool) {
	text, ok := strtoldSyntax(string(s))
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false // out of range: an overflow
	}
	if f == 0 {
		// strtod reports an underflow to zero of a nonzero mantissa.
		for _, c := range mantissa(text) {
			if c != '0' && c != '.' {
				return 0, false
			}
		}
	}
	return f, true
}

// mantissa is the digits of text as strtoldSyntax returns it: no sign, no
// hex prefix, no exponent.
func mantissa(text string) string {
	if len(text) > 0 && (text[0] == '-' || text[0] == '+') {
		text = text[1:]
	}
	exp := byte('e')
	if len(text) > 1 && text[0] == '0' && text[1]|0x20 == 'x' {
		text, exp = text[2:], 'p'
	}
	for i := 0; i < len(text); i++ {
		if text[i]|0x20 == exp {
			return text[:i]
		}
	}
	return text
}
