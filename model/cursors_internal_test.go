package model

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// storeScope is a Scope over a store, for tests of the model's own helpers.
type storeScope struct {
	context.Context
	st dynastore.Store
}

func (s storeScope) Data() dynastore.Store   { return s.st }
func (s storeScope) DB() int                 { return 0 }
func (s storeScope) NowMS() int64            { return time.Now().UnixMilli() }
func (s storeScope) LostRace(r *Retry) error { return r.Lost(s) }
func (s storeScope) Process() *Process       { return NewProcess(nil) }

// TestCursors checks that cursors fit a double, that a position keeps its
// cursor, and that a position whose cursor number another position holds
// (a hash collision) gets another number instead of taking it over.
func TestCursors(t *testing.T) {
	c := storeScope{Context: context.Background(), st: memory.New(memory.Options{})}
	pos := func(i int) dynastore.Key {
		return dynastore.Key{PK: []byte("k\x00key:" + strconv.Itoa(i)), SK: KeyItemSK}
	}
	ids := map[uint64]int{}
	for i := range 200 {
		id, err := SaveScanCursor(c, pos(i))
		require.NoError(t, err)
		require.NotZero(t, id)
		require.LessOrEqual(t, id, uint64(MaxCursor))
		require.Equal(t, id, uint64(float64(id)), "a double holds the cursor exactly")
		ids[id] = i
	}
	require.Len(t, ids, 200)
	for id, i := range ids {
		again, err := SaveScanCursor(c, pos(i))
		require.NoError(t, err)
		require.Equal(t, id, again, "the same position keeps its cursor")
		got, ok, err := LoadScanCursor(c, id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, pos(i), got)
	}

	// Another position already holds the first candidates of this one.
	p := pos(1000)
	for i := range 2 {
		_, err := c.st.Put(c, dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(keysCursors.key(keysCursors.candidate(p.PK, p.SK, i)).PK)},
			{Name: dynastore.AttrSK, Value: dynastore.B(KeyItemSK)},
			{Name: keysCursors.a, Value: dynastore.B("k\x00other")},
			{Name: keysCursors.b, Value: dynastore.B(KeyItemSK)},
		}, dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	id, err := SaveScanCursor(c, p)
	require.NoError(t, err)
	require.Equal(t, keysCursors.candidate(p.PK, p.SK, 2), id)
	got, ok, err := LoadScanCursor(c, keysCursors.candidate(p.PK, p.SK, 0))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("k\x00other"), got.PK, "the other scan keeps its position")
	got, _, err = LoadScanCursor(c, id)
	require.NoError(t, err)
	require.Equal(t, p, got)

	_, ok, err = LoadScanCursor(c, 12345)
	require.NoError(t, err)
	require.False(t, ok, "a number never handed out")
}
