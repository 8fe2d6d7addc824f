package model

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzStreamID: an id that parses prints as ms-seq and parses back to
// itself; strict parsing accepts a subset of the lenient one.
func FuzzStreamID(f *testing.F) {
	for _, s := range []string{"0-1", "-", "+", "5", "1-*", "18446744073709551615-18446744073709551615", "18446744073709551616", "1-", "-1", "(1-1", "1\x00-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, xadd := range []bool{false, true} {
			strictID, _, strictOK := ParseStreamID([]byte(s), 7, true, xadd)
			id, seqGiven, ok := ParseStreamID([]byte(s), 7, false, xadd)
			if strictOK {
				require.True(t, ok, s)
				require.Equal(t, strictID, id, s)
			}
			if !ok || !seqGiven {
				continue
			}
			text := strconv.FormatUint(id.Ms, 10) + "-" + strconv.FormatUint(id.Seq, 10)
			back, _, ok := ParseStreamID([]byte(text), 0, true, false)
			require.True(t, ok, "%q printed as %q", s, text)
			require.Equal(t, id, back, s)
		}
		ParseIntervalID([]byte(s), 0)
	})
}
