package model_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// hsetS is HSET of one field of key.
func hsetS(key, f string, v []byte) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		return model.AddMembers(s, []byte(key), model.TypeHash, [][]byte{[]byte(f)}, [][]byte{v})
	}
}

// hgetS is HGET of one field of key, "<none>" when absent.
func hgetS(key, f string) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		vals, present, err := model.HashGet(s, []byte(key), [][]byte{[]byte(f)})
		if err != nil || !present[0] {
			return "<none>", err
		}
		return string(vals[0]), nil
	}
}

// A big hash field's writes and reads, and the requests each makes: the
// registry entry and BatchWriteItems of 8 chunks, then the hash's own
// requests; a read the field's member item and BatchGetItems of 8 chunks;
// HSTRLEN the member item alone.
func TestBigFieldRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		// A 10 MB value: 27 chunks, four BatchWriteItems and BatchGetItems.
		n := 10 << 20
		a, b := randomBytes(5, n), randomBytes(6, n)
		runSteps(t, e, []step{
			{name: "hset big into a new hash", run: hsetS("h", "f", a), want: int64(1), ops: map[string]int64{get: 1, putOp: 2, bw: 4, tx: 2}},
			{name: "hget big", run: hgetS("h", "f"), want: string(a), ops: map[string]int64{get: 1, batch: 5}},
			{name: "hstrlen big", run: func(s model.Scope) (any, error) {
				lens, _, err := model.HashLens(s, []byte("h"), [][]byte{[]byte("f")})
				return lens[0], err
			}, want: int64(n), ops: map[string]int64{get: 1, batch: 1}},
			{name: "hkeys reads no chunk", run: func(s model.Scope) (any, error) {
				fs, err := model.HashFields(s, []byte("h"))
				return len(fs), err
			}, want: 1, ops: map[string]int64{get: 1, dynastore.OpQuery: 1}},
			{name: "hset big over big", run: hsetS("h", "f", b), want: int64(0), ops: map[string]int64{get: 1, batch: 1, putOp: 1, bw: 4, tx: 1}},
			{name: "hget the new value", run: hgetS("h", "f"), want: string(b)},
			{name: "hset small over big", run: hsetS("h", "f", []byte("small")), want: int64(0)},
			{name: "hget small", run: hgetS("h", "f"), want: "small", ops: map[string]int64{get: 1, batch: 1}},
		})
	})
}

// Overwritten, deleted and unpublished big field values are garbage the
// sweeper deletes once its grace has passed, never a published value's,
// whether the hash was renamed or rebuilt.
func TestBigFieldSweep(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		n := 3*bigChunkBytes + 1
		a, b := randomBytes(7, n), randomBytes(8, n)
		s := e.scope("test", 0)
		hset := func(key, f string, v []byte) {
			t.Helper()
			_, err := model.AddMembers(s, []byte(key), model.TypeHash, [][]byte{[]byte(f)}, [][]byte{v})
			require.NoError(t, err)
		}
		hget := func(key, f string) []byte {
			t.Helper()
			vals, present, err := model.HashGet(s, []byte(key), [][]byte{[]byte(f)})
			require.NoError(t, err)
			require.True(t, present[0])
			return vals[0]
		}
		sweep, sw := pastGrace(t, e.store, s)
		hset("h", "f", a)
		hset("h", "f", b)
		hset("h", "g", a)
		// HSETNX that found the field deletes its own chunks at once.
		set, err := model.HashSetNX(s, []byte("h"), []byte("g"), b)
		require.NoError(t, err)
		require.False(t, set)
		require.Equal(t, 12, countChunks(t, e), "three values' chunks")
		require.NoError(t, sw.SweepOnce(s))
		require.Equal(t, 12, countChunks(t, e), "nothing goes before the grace")
		sweep()
		require.Equal(t, 8, countChunks(t, e), "the overwritten value's chunks went")

		// RENAME hands the chunks to the new key: they are not swept.
		_, err = model.MoveKey(s, []byte("h"), 0, []byte("h2"), false)
		require.NoError(t, err)
		sweep()
		require.Equal(t, 8, countChunks(t, e))
		require.True(t, bytes.Equal(b, hget("h2", "f")))
		require.True(t, bytes.Equal(a, hget("h2", "g")))

		// HDEL: that field's chunks go.
		_, err = model.RemoveMembers(s, []byte("h2"), model.TypeHash, [][]byte{[]byte("f")})
		require.NoError(t, err)
		sweep()
		require.Equal(t, 4, countChunks(t, e))
		require.True(t, bytes.Equal(a, hget("h2", "g")))

		// A hash deleted, another expired: their members go, then the
		// chunks they held.
		hset("e", "f", b)
		require.Equal(t, 8, countChunks(t, e))
		ok, err := model.Expire(s, []byte("e"), s.NowMS()+1000, 0)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = model.DeleteKey(s, []byte("h2"))
		require.NoError(t, err)
		sweep()
		sweep()
		require.Zero(t, countChunks(t, e))
		require.Zero(t, countPrefix(t, e, model.NsMembers))
	})
}

// countPrefix is how many items the store holds under pks starting with p.
func countPrefix(t *testing.T, e *keysEnv, p byte) int {
	t.Helper()
	n := 0
	err := model.ScanAll(e.scope("scan", 0), e.store, dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte{p}}, func(dynastore.Item) error {
		n++
		return nil
	})
	require.NoError(t, err)
	return n
}
