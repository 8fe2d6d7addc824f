package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStreamGroupsEncoding(t *testing.T) {
	groups := []*streamGroup{
		{name: "", last: StreamID{}, entriesRead: InvalidEntriesRead, gid: []byte{1, 2, 3, 4, 5, 6, 7, 8}, known: map[StreamID]*streamNACK{}},
		{
			name: "g\x00\xff", last: StreamID{1700000000000, 3}, entriesRead: 42, gid: []byte{0, 0, 0, 0, 0, 0, 0, 0},
			pending: 2, top: MaxStreamID, known: map[StreamID]*streamNACK{
				{1, 1}:      {id: StreamID{1, 1}, consumer: "b\r\n", delivered: 5, count: 1},
				MaxStreamID: {id: MaxStreamID, consumer: "a", delivered: 1700000000002, count: 1 << 40},
			},
			consumers: []*streamConsumer{{name: "a", seen: 1700000000001, pending: 1}, {name: "b\r\n", seen: 0, pending: 1}},
		},
	}
	got, err := decodeGroups(encodeGroups(groups, true))
	require.NoError(t, err)
	require.Equal(t, groups, got)
	// As items, the key item keeps none of them.
	got, err = decodeGroups(encodeGroups(groups, false))
	require.NoError(t, err)
	require.Empty(t, got[1].known)
	require.Equal(t, int64(2), got[1].pending)
	none, err := decodeGroups(encodeGroups(nil, true))
	require.NoError(t, err)
	require.Empty(t, none)
	for _, bad := range [][]byte{{3}, {1, 1}, {1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 9}, {2, 1, 0, 0, 0, 0}} {
		_, err := decodeGroups(bad)
		require.Error(t, err, "%x", bad)
	}
}

// TestStreamGroupsVersion1 reads groups as a release that kept no counts
// wrote them: every entry is known (inline) and counted.
func TestStreamGroupsVersion1(t *testing.T) {
	v1 := []byte{1, 1, 1, 'g', 9, 0, 0, 2, 1, 'a', 7, 1, 'b', 8, 2, 1, 1, 1, 5, 1, 3, 0, 1, 6, 2}
	got, err := decodeGroups(v1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	g := got[0]
	require.Equal(t, "g", g.name)
	require.Equal(t, StreamID{9, 0}, g.last)
	require.Equal(t, int64(2), g.pending)
	require.Equal(t, StreamID{3, 0}, g.top)
	require.Equal(t, []*streamConsumer{{name: "a", seen: 7, pending: 0}, {name: "b", seen: 8, pending: 2}}, g.consumers)
	require.Equal(t, &streamNACK{id: StreamID{1, 1}, consumer: "b", delivered: 5, count: 1}, g.known[StreamID{1, 1}])
	require.Equal(t, &streamNACK{id: StreamID{3, 0}, consumer: "b", delivered: 6, count: 2}, g.known[StreamID{3, 0}])
	require.Empty(t, g.dirty)
	require.Len(t, g.gid, 8)
}

func FuzzDecodeGroups(f *testing.F) {
	f.Add([]byte(encodeGroups([]*streamGroup{{name: "g", gid: []byte("12345678"), consumers: []*streamConsumer{{name: "c", pending: 1}}}}, true)))
	f.Fuzz(func(t *testing.T, b []byte) {
		groups, err := decodeGroups(b)
		if err == nil {
			again, err := decodeGroups(encodeGroups(groups, true))
			require.NoError(t, err)
			require.Equal(t, len(groups), len(again))
		}
	})
}

// TestStreamEstimate checks streamEstimateDistanceFromFirstEverEntry and
// the lag on the cases its comment in t_stream.c lists.
func TestStreamEstimate(t *testing.T) {
	node := func(live, total int64) []streamNode { return []streamNode{{live: live, total: total}} }
	id := func(ms uint64) StreamID { return StreamID{ms, 0} }
	cases := []struct {
		name      string
		st        streamState
		first, at StreamID
		want      int64
	}{
		{"never used", streamState{}, id(0), id(5), 0},
		{"empty, below last", streamState{added: 7, last: id(9)}, id(0), id(3), 7},
		{"the last id", streamState{added: 7, last: id(9), nodes: node(3, 7)}, id(5), id(9), 7},
		{"the future", streamState{added: 7, last: id(9), nodes: node(3, 7)}, id(5), id(10), InvalidEntriesRead},
		{"before the first", streamState{added: 7, last: id(9), nodes: node(3, 7)}, id(5), id(2), 4},
		{"the first", streamState{added: 7, last: id(9), nodes: node(3, 7)}, id(5), id(5), 5},
		{"inside", streamState{added: 7, last: id(9), nodes: node(3, 7)}, id(5), id(6), InvalidEntriesRead},
		{"a tombstone ahead", streamState{added: 7, last: id(9), maxDel: id(6), nodes: node(3, 7)}, id(5), id(5), InvalidEntriesRead},
		{"a tombstone behind", streamState{added: 7, last: id(9), maxDel: id(4), nodes: node(3, 7)}, id(5), id(2), 4},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.st.estimate(tc.first, tc.at), tc.name)
	}
}

// TestListpackSizes checks the element sizes of listpack.c.
func TestListpackSizes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"0", 2}, {"127", 2}, {"128", 3}, {"-1", 3}, {"4095", 3}, {"-4096", 3}, {"4096", 4}, {"32767", 4},
		{"32768", 5}, {"8388607", 5}, {"8388608", 6}, {"2147483647", 6}, {"2147483648", 10},
		{"-9223372036854775808", 10}, {"01", 4}, {"-0", 4}, {"+1", 4}, {"", 2}, {"abc", 5},
		{string(make([]byte, 63)), 65}, {string(make([]byte, 64)), 67}, {string(make([]byte, 125)), 128},
		{string(make([]byte, 126)), 130}, {string(make([]byte, 4095)), 4099}, {string(make([]byte, 4096)), 4103},
	} {
		require.Equal(t, tc.want, lpStringSize([]byte(tc.s)), "%q", tc.s)
	}
}
