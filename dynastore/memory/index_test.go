package memory

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Ids must sort exactly as DynamoDB orders items: by pk, then by sk, both as
// unsigned bytes, whatever bytes the keys hold (0x00 is escaped).
func TestIDOrder(t *testing.T) {
	keys := []struct{ pk, sk string }{
		{"a", "\x00"},
		{"a", "\x00\x00"},
		{"a", "\x01"},
		{"a", "\xff"},
		{"a", "\xff\xff"},
		{"a\x00", "\x00"},
		{"a\x00", "\xff"},
		{"a\x00\x00", "\x00"},
		{"a\x00\x01", "\x00"},
		{"a\x00\xff", "\x00"},
		{"a\x01", "\x00"},
		{"ab", "\x00"},
		{"a\xff", "\x00"},
		{"b", "\x00"},
	}
	for i, x := range keys {
		for j, y := range keys {
			a := appendID(nil, []byte(x.pk), []byte(x.sk))
			b := appendID(nil, []byte(y.pk), []byte(y.sk))
			require.Equal(t, i < j, bytes.Compare(a, b) < 0, "%q/%q < %q/%q", x.pk, x.sk, y.pk, y.sk)
			inPartition := bytes.HasPrefix(b, appendPartition(nil, []byte(x.pk)))
			require.Equal(t, x.pk == y.pk, inPartition, "%q/%q in partition %q", y.pk, y.sk, x.pk)
			end := partitionEnd(appendPartition(nil, []byte(x.pk)))
			require.Equal(t, x.pk >= y.pk, bytes.Compare(b, end) < 0, "%q/%q before the end of %q", y.pk, y.sk, x.pk)
		}
	}
}

// refs order exactly as their ids do, whether they differ within the
// inline prefix, past it, or one is a prefix of the other.
func TestRefOrder(t *testing.T) {
	long := strings.Repeat("x", 23)
	ids := []string{
		"a", "a\x00", "a\x00\x00", "a\x00b", "ab", "b", "\xff",
		long, long + "\x00", long + "a", long + "a\x00", long + "a\x01", long + "aa", long + "b",
		long + "\xff" + strings.Repeat("z", 30), long + "\xff" + strings.Repeat("z", 31),
	}
	for _, a := range ids {
		for _, b := range ids {
			ra, rb := pivot(a), pivot(b)
			require.Equal(t, a < b, refLess(ra, rb), "%q < %q", a, b)
			require.Equal(t, b < a, refLess(rb, ra), "%q < %q", b, a)
		}
	}
}
