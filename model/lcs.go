package model

// LCSMatch is one common run LCS IDX reports: the inclusive ranges it
// covers in each string, and its length.
type LCSMatch struct {
	AStart, AEnd, BStart, BEnd int64
	Len                        int64
}

// LCSTableBytes is the size of the table LCS needs for strings of these
// lengths, as Redis reckons it (4 bytes a cell) to refuse what exceeds
// proto-max-bulk-len.
func LCSTableBytes(alen, blen int) uint64 {
	return uint64(alen+1) * uint64(blen+1) * 4
}

// LCS is the longest common subsequence of a and b by Redis's dynamic
// programme, walked back from the end as Redis walks it (so that ties
// pick the same subsequence): the subsequence itself, its length and,
// with wantMatches, its contiguous runs from the last to the first, those
// shorter than minLen left out.
func LCS(a, b []byte, wantMatches bool, minLen int64) (seq []byte, n int64, matches []LCSMatch) {
	w := len(b) + 1
	tab := make([]uint32, (len(a)+1)*w)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				tab[i*w+j] = tab[(i-1)*w+j-1] + 1
			default:
				tab[i*w+j] = max(tab[(i-1)*w+j], tab[i*w+j-1])
			}
		}
	}
	n = int64(tab[len(a)*w+len(b)])
	seq = make([]byte, n)
	idx := n
	const unset = -1
	as, ae, bs, be := int64(unset), int64(0), int64(0), int64(0)
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			seq[idx-1] = a[i-1]
			switch {
			case as == unset:
				as, ae, bs, be = int64(i-1), int64(i-1), int64(j-1), int64(j-1)
			case as == int64(i) && bs == int64(j):
				as--
				bs--
			default:
				emit = true
			}
			if as == 0 || bs == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if tab[(i-1)*w+j] > tab[i*w+j-1] {
				i--
			} else {
				j--
			}
			emit = as != unset
		}
		if emit {
			if l := ae - as + 1; wantMatches && (minLen == 0 || l >= minLen) {
				matches = append(matches, LCSMatch{AStart: as, AEnd: ae, BStart: bs, BEnd: be, Len: l})
			}
			as = unset
		}
	}
	return seq, n, matches
}
