package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The values CONFIG GET answers after CONFIG SET, as redis-server 7.0.15
// printed them.
func TestFlagsRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"KEA", "AKE"},
		{"Kgn", "gnK"},
		{"AKEmn", "AKEm"},
		{"gx$lshzetdK", "AK"},
		{"Emn", "nEm"},
		{"", ""},
		{"nm", "nm"},
	} {
		c, ok := ParseFlags(tc.in)
		require.True(t, ok, tc.in)
		require.Equal(t, tc.out, c.String(), tc.in)
	}
	_, ok := ParseFlags("KQ")
	require.False(t, ok)
}

func TestMessages(t *testing.T) {
	e := Event{DB: 3, Class: String, Name: "set", Key: []byte("k")}
	chs, ps := e.Messages(Keyspace | Keyevent | String)
	require.Equal(t, [][]byte{[]byte("__keyspace@3__:k"), []byte("__keyevent@3__:set")}, chs)
	require.Equal(t, [][]byte{[]byte("set"), []byte("k")}, ps)
	chs, _ = e.Messages(Keyspace | List)
	require.Empty(t, chs)
	chs, _ = e.Messages(String)
	require.Empty(t, chs, "neither K nor E")
}
