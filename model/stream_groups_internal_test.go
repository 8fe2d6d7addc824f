package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStreamGroupsEncoding(t *testing.T) {
	groups := []*streamGroup{
		{name: "", last: StreamID{}, entriesRead: InvalidEntriesRead},
		{
			name: "g\x00\xff", last: StreamID{1700000000000, 3}, entriesRead: 42,
			consumers: []*streamConsumer{{name: "a", seen: 1700000000001}, {name: "b\r\n", seen: 0}},
			pel: []*streamNACK{
				{id: StreamID{1, 1}, consumer: "b\r\n", delivered: 5, count: 1},
				{id: MaxStreamID, consumer: "a", delivered: 1700000000002, count: 1 << 40},
			},
		},
	}
	got, err := decodeGroups(encodeGroups(groups))
	require.NoError(t, err)
	require.Equal(t, groups, got)
	none, err := decodeGroups(encodeGroups(nil))
	require.NoError(t, err)
	require.Empty(t, none)
	for _, bad := range [][]byte{{2}, {1, 1}, {1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 9}} {
		_, err := decodeGroups(bad)
		require.Error(t, err, "%x", bad)
	}
}

func FuzzDecodeGroups(f *testing.F) {
	f.Add([]byte(encodeGroups([]*streamGroup{{name: "g", consumers: []*streamConsumer{{name: "c"}}, pel: []*streamNACK{{consumer: "c"}}}})))
	f.Fuzz(func(t *testing.T, b []byte) {
		groups, err := decodeGroups(b)
		if err == nil {
			again, err := decodeGroups(encodeGroups(groups))
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
