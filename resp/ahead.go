package resp

import "github.com/redamo/redamo/commands"

// maxAhead bounds the requests scanAhead looks at (twice redis-benchmark's
// usual -P 16 and more than memory can overlap usefully).
const maxAhead = 32

// scanAhead appends to out, up to its capacity, the name and first argument
// of each complete multibulk request at the start of in, for
// commands.Server.Prefetch. It only looks: it stops at the first request
// that is incomplete, inline or anything but plainly well formed, which
// the parser then deals with as it always does. The arguments are slices
// of in.
func scanAhead(in []byte, out []commands.Upcoming) []commands.Upcoming {
	for len(out) < cap(out) && len(in) > 0 && in[0] == '*' {
		n, rest, ok := aheadNumber(in[1:])
		if !ok {
			break
		}
		in = rest
		var r commands.Upcoming
		for i := range n {
			if len(in) == 0 || in[0] != '$' {
				return out
			}
			l, rest, ok := aheadNumber(in[1:])
			if !ok || len(rest) < l+2 {
				return out
			}
			switch i {
			case 0:
				r.Name = rest[:l]
			case 1:
				r.Arg = rest[:l]
			}
			in = rest[l+2:]
		}
		if n > 0 {
			out = append(out, r)
		}
	}
	return out
}

// aheadNumber reads the decimal count or length that starts in and its
// "\r\n"; ok is false for anything else, and for more digits than a
// request in a read buffer could need.
func aheadNumber(in []byte) (n int, rest []byte, ok bool) {
	const maxDigits = 9
	for i, c := range in {
		switch {
		case c == '\r':
			if i == 0 || i+1 >= len(in) || in[i+1] != '\n' {
				return 0, nil, false
			}
			return n, in[i+2:], true
		case c < '0' || c > '9' || i == maxDigits:
			return 0, nil, false
		}
		n = n*10 + int(c-'0')
	}
	return 0, nil, false
}
