// Package glob is Redis's glob (stringmatchlen), shared by KEYS, SCAN MATCH,
// CONFIG GET, COMMAND LIST and pub/sub patterns.
package glob

// Match reports whether s matches the Redis glob pattern p, exactly as
// Redis's stringmatchlen does (case-sensitive): '*', '?', '[...]' with ranges
// and '^' negation, '\' escapes. Redis's quirks are kept on purpose, since
// KEYS and SCAN MATCH must select the same keys: bytes compare as signed C
// chars in ranges, "[a-]" is the range a..']', an unterminated '[' matches
// like a closed one, and a pattern is read as a C string (a byte past its end
// reads as NUL).
func Match(p, s []byte) bool {
	g := globber{p: p}
	return g.match(0, s, 0)
}

type globber struct {
	p []byte
	// skipLonger is Redis's skipLongerMatches: once the rest of a pattern
	// after a '*' matched nowhere in the remaining string, no earlier '*'
	// can help, which keeps matching linear-ish instead of exponential.
	skipLonger bool
}

// globMaxNesting is the recursion depth (one level per '*') past which a
// pattern does not match, as in Redis.
const globMaxNesting = 1000

// at reads the pattern like a NUL-terminated C string.
func (g *globber) at(i int) byte {
	if i < len(g.p) {
		return g.p[i]
	}
	return 0
}

func (g *globber) match(pi int, s []byte, nesting int) bool {
	if nesting > globMaxNesting {
		return false
	}
	plen := len(g.p) - pi
	for plen > 0 && len(s) > 0 {
		switch g.at(pi) {
		case '*':
			for plen > 0 && g.at(pi+1) == '*' {
				pi++
				plen--
			}
			if plen == 1 {
				return true
			}
			for len(s) > 0 {
				if g.match(pi+1, s, nesting+1) {
					return true
				}
				if g.skipLonger {
					return false
				}
				s = s[1:]
			}
			g.skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			pi++
			plen--
			not := g.at(pi) == '^'
			if not {
				pi++
				plen--
			}
			matched := false
			for {
				if g.at(pi) == '\\' && plen >= 2 {
					pi++
					plen--
					if g.at(pi) == s[0] {
						matched = true
					}
				} else if g.at(pi) == ']' {
					break
				} else if plen == 0 {
					pi--
					plen++
					break
				} else if plen >= 3 && g.at(pi+1) == '-' {
					lo, hi := int(int8(g.at(pi))), int(int8(g.at(pi+2)))
					c := int(int8(s[0]))
					if lo > hi {
						lo, hi = hi, lo
					}
					pi += 2
					plen -= 2
					if c >= lo && c <= hi {
						matched = true
					}
				} else if g.at(pi) == s[0] {
					matched = true
				}
				pi++
				plen--
			}
			if not {
				matched = !matched
			}
			if !matched {
				return false
			}
			s = s[1:]
		case '\\':
			if plen >= 2 {
				pi++
				plen--
			}
			fallthrough
		default:
			if g.at(pi) != s[0] {
				return false
			}
			s = s[1:]
		}
		pi++
		plen--
		if len(s) == 0 {
			for g.at(pi) == '*' {
				pi++
				plen--
			}
			break
		}
	}
	return plen == 0 && len(s) == 0
}

// Prefix is the literal prefix every key matching p starts with (up to
// the first special character), so a scan can skip keys that cannot match.
func Prefix(p []byte) []byte {
	for i, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return p[:i]
		}
	}
	return p
}
