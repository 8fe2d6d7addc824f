package coord

import (
	"bytes"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// TestMessageOrder: a shard's sort keys order its messages by state, then
// priority (negative first), then visible time, then id.
func TestMessageOrder(t *testing.T) {
	id := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	want := [][]byte{
		messageSK(stateLive, math.MinInt64, 5, id(1)),
		messageSK(stateLive, -1, 9, id(1)),
		messageSK(stateLive, 0, 0, id(9)),
		messageSK(stateLive, 0, 1, id(1)),
		messageSK(stateLive, 0, 1, id(2)),
		messageSK(stateLive, 1, 0, id(1)),
		messageSK(stateLive, math.MaxInt64, 0, id(1)),
		messageSK(stateDead, math.MinInt64, 0, id(1)),
	}
	got := append([][]byte(nil), want...)
	sort.Slice(got, func(i, j int) bool { return bytes.Compare(got[i], got[j]) > 0 })
	sort.Slice(got, func(i, j int) bool { return bytes.Compare(got[i], got[j]) < 0 })
	require.Equal(t, want, got)
	for _, sk := range want {
		require.Len(t, sk, 33)
	}
	require.Equal(t, int64(-1), skPriority(want[1]))
	require.Equal(t, int64(math.MaxInt64), skPriority(want[6]))
}

func TestReceipt(t *testing.T) {
	sk := messageSK(stateLive, 3, 1234, bytes.Repeat([]byte{7}, 16))
	r := encodeReceipt(5, sk, dynastore.S("nonce"))
	k, nonce, err := decodeReceipt([]byte("q"), []byte(r))
	require.NoError(t, err)
	require.Equal(t, dynastore.Key{PK: shardPK([]byte("q"), 5), SK: sk}, k)
	require.Equal(t, dynastore.S("nonce"), nonce)
	for _, bad := range []string{"", "!!", encodeReceipt(0, messageSK(stateDead, 0, 0, make([]byte, 16)), "n"), r[:20]} {
		_, _, err := decodeReceipt([]byte("q"), []byte(bad))
		require.ErrorIs(t, err, ErrBadReceipt, "%q", bad)
	}
}

// TestMessageIDs: ids given at one instant keep their order.
func TestMessageIDs(t *testing.T) {
	var q Queues
	now := time.Unix(1700000000, 0)
	prev := q.newMessageID(now)
	for range 100 {
		id := q.newMessageID(now)
		require.Positive(t, bytes.Compare(id[:8], prev[:8]))
		prev = id
	}
}
