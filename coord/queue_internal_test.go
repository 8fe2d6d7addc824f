package coord

import (
	"bytes"
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
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

// TestQueueCounters: the table's counters are written apart from the
// operations they count. An instance's QUEUE.STATS counts its own at
// once, another's once they are flushed; a failed flush keeps its counts
// for the next; inside a transaction buffer the counter is written with
// the operation.
func TestQueueCounters(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(memory.Options{})
	var a, b Queues
	name := []byte("q")
	now := time.Now()
	counters := func(q *Queues) map[string]int64 {
		s, err := q.State(in(ctx, mem), name, now)
		require.NoError(t, err)
		return s.Counters
	}
	_, _, err := a.Push(in(ctx, mem), name, []byte("m"), PushOptions{}, now)
	require.NoError(t, err)
	msgs, err := a.Pop(in(ctx, mem), name, 1, time.Minute, time.Now)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	n, err := a.Ack(in(ctx, mem), name, [][]byte{[]byte(msgs[0].Receipt)})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)

	require.Zero(t, counters(&b)["pushed"], "not flushed yet")
	mem.FailNext(dynastore.OpUpdateItem, dynastore.ErrUnavailable)
	require.ErrorIs(t, a.FlushCounters(ctx, mem, nil), dynastore.ErrUnavailable)
	require.Zero(t, counters(&b)["pushed"])
	require.NoError(t, a.FlushCounters(ctx, mem, nil))
	require.Equal(t, map[string]int64{"pushed": 1, "acked": 1, "nacked": 0, "deadlettered": 0, "deduplicated": 0}, counters(&b))

	// The instance that pushed counts it at once.
	_, _, err = a.Push(in(ctx, mem), name, []byte("m"), PushOptions{}, now)
	require.NoError(t, err)
	require.Equal(t, int64(2), counters(&a)["pushed"])
	id, dup, err := a.Push(in(ctx, mem), name, []byte("d"), PushOptions{Dedup: []byte("d")}, now)
	require.NoError(t, err)
	require.False(t, dup)
	again, dup, err := a.Push(in(ctx, mem), name, []byte("d"), PushOptions{Dedup: []byte("d")}, now)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, id, again)
	c := counters(&a)
	require.Equal(t, []int64{3, 1}, []int64{c["pushed"], c["deduplicated"]})

	// In a transaction buffer, nothing is tallied: the counter commits
	// with the push, or not at all.
	tx := model.NewTxn(mem, nil)
	_, _, err = b.Push(in(ctx, tx), name, []byte("m"), PushOptions{}, now)
	require.NoError(t, err)
	require.Equal(t, int64(3), counters(&a)["pushed"])
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, int64(4), counters(&a)["pushed"])
	require.Empty(t, b.takeTallies(nil), "tallied in a transaction")
}
