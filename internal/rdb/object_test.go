package rdb

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// ziplistOf builds a ziplist of already encoded entries (encoding and
// data), as Redis before 7.0 wrote one.
func ziplistOf(entries ...[]byte) []byte {
	b := make([]byte, 10)
	prev, last := 0, 10
	for _, e := range entries {
		last = len(b)
		b = append(b, byte(prev))
		b = append(b, e...)
		prev = 1 + len(e)
	}
	b = append(b, 0xff)
	putLE32(b, uint32(len(b)))
	putLE32(b[4:], uint32(last))
	b[8], b[9] = byte(len(entries)), 0
	return b
}

func putLE32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func payloadOf(typ byte, blob []byte) []byte { return AppendTrailer(AppendString([]byte{typ}, blob)) }

// TestRestoreOldEncodings reads the encodings Redis 7.0 reads but no
// longer writes.
func TestRestoreOldEncodings(t *testing.T) {
	zl := ziplistOf([]byte{0x01, 'a'}, []byte{0xfd}, []byte{0xc0, 0xe8, 0x03}, []byte{0xfe, 0x80}, []byte{0xf0, 0x01, 0x00, 0x80})
	o, err := Restore(payloadOf(TypeListZiplist, zl))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("a"), []byte("12"), []byte("1000"), []byte("-128"), []byte("-8388607")}, o.Elems)

	pairs := ziplistOf([]byte{0x01, 'f'}, []byte{0x02, '1', '.'}, []byte{0x01, 'g'}, []byte{0xf3})
	o, err = Restore(payloadOf(TypeZSetZiplist, pairs))
	require.NoError(t, err)
	require.Equal(t, []ZEntry{{[]byte("f"), 1}, {[]byte("g"), 2}}, o.ZSet)
	o, err = Restore(payloadOf(TypeHashZiplist, pairs))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("f"), []byte("1."), []byte("g"), []byte("2")}, o.Pairs)

	// A zipmap: count, then field length, field, value length, free, value.
	zm := []byte{2, 1, 'a', 2, 1, 'x', 'y', 0, 1, 'b', 0, 0, 0xff}
	o, err = Restore(payloadOf(TypeHashZipmap, zm))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("a"), []byte("xy"), []byte("b"), {}}, o.Pairs)

	// RDB_TYPE_LIST_QUICKLIST: nodes are ziplists; RDB_TYPE_LIST: plain strings.
	o, err = Restore(AppendTrailer(AppendString(AppendLen([]byte{TypeListQuicklist}, 1), zl)))
	require.NoError(t, err)
	require.Len(t, o.Elems, 5)
	o, err = Restore(AppendTrailer(AppendString(AppendString(AppendLen([]byte{TypeList}, 2), []byte("x")), []byte("300"))))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("x"), []byte("300")}, o.Elems)

	// RDB_TYPE_STREAM_LISTPACKS (RDB 9): no first id, max deleted id,
	// entries added, nor a group's entries read.
	s3 := Dump(&Object{Type: TypeStream3, Stream: &Stream{
		Entries: []StreamEntry{{ID: StreamID{5, 1}, Fields: [][]byte{[]byte("f"), []byte("v")}}},
		Length:  1, LastID: StreamID{5, 1}, FirstID: StreamID{5, 1}, EntriesAdded: 1,
	}}, DefaultOptions)
	r := NewReader(s3[1:])
	_, _, _ = r.ReadLen()   // nodes
	_, _ = r.ReadString()   // master id
	_, err = r.ReadString() // listpack
	require.NoError(t, err)
	head := s3[1 : 1+r.pos]
	old := append([]byte{TypeStream}, head...)
	old = AppendLen(AppendLen(AppendLen(old, 1), 5), 1) // length, last id
	old = AppendString(AppendLen(old, 1), []byte("g"))  // one group
	old = AppendLen(AppendLen(old, 5), 1)               // its last id
	old = AppendLen(AppendLen(old, 0), 0)               // no pending entries, no consumers
	o, err = Restore(AppendTrailer(old))
	require.NoError(t, err)
	require.Equal(t, uint64(1), o.Stream.EntriesAdded)
	require.Equal(t, StreamID{5, 1}, o.Stream.FirstID)
	require.Equal(t, []StreamGroup{{Name: []byte("g"), LastID: StreamID{5, 1}}}, o.Stream.Groups)

	// RDB_TYPE_ZSET: scores as text.
	p := AppendTrailer(append(AppendString(append(AppendString(AppendLen([]byte{TypeZSet}, 2), []byte("m")), 3, '1', '.', '5'), []byte("n")), 254))
	o, err = Restore(p)
	require.NoError(t, err)
	require.Equal(t, []ZEntry{{[]byte("m"), 1.5}, {[]byte("n"), math.Inf(1)}}, o.ZSet)
}

// TestRestoreReadsIntoTrailer: Redis reads the value from the whole
// payload, trailer included (redis-server 7.0.15 restores this one).
func TestRestoreReadsIntoTrailer(t *testing.T) {
	p := AppendTrailer([]byte{TypeString, 5, 'a'})
	o, err := Restore(p)
	require.NoError(t, err)
	require.Equal(t, append([]byte("a"), p[3:7]...), o.String)
}

func TestRestoreRefuses(t *testing.T) {
	for name, p := range map[string][]byte{
		"unknown type":       payloadOf(30, []byte("x")),
		"module":             payloadOf(TypeModule2, []byte("x")),
		"empty list":         AppendTrailer(AppendLen([]byte{TypeListQuicklist2}, 0)),
		"empty set":          AppendTrailer(AppendLen([]byte{TypeSet}, 0)),
		"duplicate member":   AppendTrailer(AppendString(AppendString(AppendLen([]byte{TypeSet}, 2), []byte("a")), []byte("a"))),
		"intset not sorted":  payloadOf(TypeSetIntset, []byte{2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 1, 0}),
		"bad listpack":       payloadOf(TypeHashListpack, []byte{7, 0, 0, 0, 0, 0, 0xfe}),
		"odd hash listpack":  payloadOf(TypeHashListpack, func() []byte { w := newLPWriter(); w.appendString([]byte("f")); return w.finish() }()),
		"NaN score":          AppendTrailer(binaryScore(math.NaN())),
		"truncated":          AppendTrailer([]byte{TypeString, 30, 'a'}),
		"stream bad node id": AppendTrailer(AppendString(AppendLen([]byte{TypeStream3}, 1), []byte("short"))),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Restore(p)
			require.Error(t, err)
		})
	}
}

func binaryScore(f float64) []byte {
	b := AppendString(AppendLen([]byte{TypeZSet2}, 1), []byte("m"))
	var s [8]byte
	u := math.Float64bits(f)
	for i := range s {
		s[i] = byte(u >> (8 * i))
	}
	return append(b, s[:]...)
}

// writable is the type Redis 7.0 would write an object of o's kind in.
func writable(o *Object) byte {
	switch o.Kind() {
	case KindList:
		return TypeListQuicklist2
	case KindSet:
		return TypeSet
	case KindZSet:
		return TypeZSet2
	case KindHash:
		return TypeHash
	case KindStream:
		return TypeStream3
	}
	return TypeString
}

// FuzzRestore: no payload makes Restore panic, and whatever it accepts
// dumps to a payload that restores to the same content.
func FuzzRestore(f *testing.F) {
	for _, o := range []*Object{
		{Type: TypeString, String: []byte("hello world, hello world, hello world")},
		{Type: TypeListQuicklist2, Elems: [][]byte{[]byte("a"), []byte("123"), bytes.Repeat([]byte("z"), 70)}},
		{Type: TypeSetIntset, Elems: [][]byte{[]byte("1"), []byte("-70000")}},
		{Type: TypeSet, Elems: [][]byte{[]byte("x"), []byte("y")}},
		{Type: TypeHashListpack, Pairs: [][]byte{[]byte("f"), []byte("v"), []byte("n"), []byte("5")}},
		{Type: TypeHash, Pairs: [][]byte{[]byte("f"), []byte("v")}},
		{Type: TypeZSetListpack, ZSet: []ZEntry{{[]byte("a"), 1.5}, {[]byte("b"), math.Inf(-1)}}},
		{Type: TypeZSet2, ZSet: []ZEntry{{[]byte("a"), 2}}},
		{Type: TypeStream3, Stream: &Stream{
			Entries: []StreamEntry{{ID: StreamID{1, 1}, Fields: [][]byte{[]byte("f"), []byte("v")}}, {ID: StreamID{2, 0}, Fields: [][]byte{[]byte("g"), []byte("w")}}},
			Length:  2, LastID: StreamID{2, 0}, FirstID: StreamID{1, 1}, EntriesAdded: 2,
			Groups: []StreamGroup{{Name: []byte("g"), LastID: StreamID{1, 1}, EntriesRead: 1,
				PEL:       []StreamPending{{ID: StreamID{1, 1}, DeliveryTime: 5, DeliveryCount: 1}},
				Consumers: []StreamConsumer{{Name: []byte("c"), SeenTime: 5, PEL: []StreamID{{1, 1}}}}}},
		}},
	} {
		f.Add(Dump(o, DefaultOptions))
	}
	f.Add(payloadOf(TypeListZiplist, ziplistOf([]byte{0x01, 'a'}, []byte{0xfd})))
	f.Fuzz(func(t *testing.T, p []byte) {
		o, err := Restore(p)
		if err != nil {
			return
		}
		o.Type = writable(o)
		again, err := Restore(Dump(o, DefaultOptions))
		if err != nil {
			t.Fatalf("Restore of Dump: %v", err)
		}
		again.Type = o.Type
		if o.ZSet != nil {
			o.ZSet, again.ZSet = sortedZSet(o.ZSet), sortedZSet(again.ZSet)
		}
		if o.Stream != nil {
			o.Stream.Nodes, again.Stream.Nodes = nil, nil
		}
		require.Equal(t, o, again)
	})
}
