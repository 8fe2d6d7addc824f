package memory

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
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

// A write decided on an item that another write replaced in the meantime
// decides again on the current item, under the lock, and stores that.
func TestWriteRedecidesAfterConflict(t *testing.T) {
	s := New(Options{})
	k := dynastore.Key{PK: []byte("k"), SK: []byte{0}}
	stored := func() dynastore.Item {
		id := appendID(nil, k.PK, k.SK)
		return itemOf(s.shard(s.shardOf(k.PK)).get(id, idHash(id)))
	}
	put := func(v string) func(dynastore.Item) (dynastore.Item, int, error) {
		return func(dynastore.Item) (dynastore.Item, int, error) {
			return dynastore.Item{{Name: "v", Value: dynastore.S(v)}}, 1, nil
		}
	}
	for _, tc := range []struct {
		name  string
		start bool   // whether the item exists before
		other string // what the interleaved write leaves ("": deletes it)
	}{
		{"replaced", true, "other"},
		{"created", false, "other"},
		{"deleted", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.start {
				_, err := s.write(k, false, put("start"))
				require.NoError(t, err)
			}
			var seen []dynastore.Item
			o, err := s.write(k, true, func(old dynastore.Item) (dynastore.Item, int, error) {
				seen = append(seen, old)
				if len(seen) == 1 { // the first decision, outside the lock
					interleaved := put(tc.other)
					if tc.other == "" {
						interleaved = func(dynastore.Item) (dynastore.Item, int, error) { return nil, 0, nil }
					}
					_, err := s.write(k, false, interleaved)
					require.NoError(t, err)
				}
				return dynastore.Item{{Name: "v", Value: dynastore.S("mine")}, {Name: "saw", Value: dynastore.BOOL(old != nil)}}, 2, nil
			})
			require.NoError(t, err)
			require.Len(t, seen, 2, "decided again")
			var now dynastore.Item
			if tc.other != "" {
				now = dynastore.Item{{Name: "v", Value: dynastore.S(tc.other)}}
			}
			require.Equal(t, now, seen[1])
			require.Equal(t, now, o.old)
			require.Equal(t, dynastore.Item{{Name: "v", Value: dynastore.S("mine")}, {Name: "saw", Value: dynastore.BOOL(now != nil)}}, stored())
			_, err = s.write(k, false, onCond(nil, nil, 0))
			require.NoError(t, err)
		})
	}
}
