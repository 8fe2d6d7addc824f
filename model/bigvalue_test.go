package model_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

const bw = dynastore.OpBatchWriteItem

// randomBytes is n bytes drawn from seed.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// bigChunkBytes is bigvalue.go's chunk size, as the request counts see it.
const bigChunkBytes = 384 << 10

// A big string's writes and reads, and the requests each makes: a write
// is the key item's read, the registry entry, BatchWriteItems of 8
// chunks and the publishing transaction; a read the key item and
// BatchGetItems of 8 of the chunks it needs; STRLEN the key item alone.
func TestBigStringRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		// 30 chunks: four BatchWriteItems, four BatchGetItems.
		n := 30*bigChunkBytes - 7
		a, b := randomBytes(1, n), randomBytes(2, n)
		write := map[string]int64{get: 1, putOp: 1, bw: 4, tx: 1}
		runSteps(t, e, []step{
			{name: "set big", run: func(s model.Scope) (any, error) {
				r, err := model.SetString(s, []byte("k"), a, model.SetOptions{})
				return r.Written, err
			}, want: true, ops: write},
			{name: "get big", run: getS("k"), want: string(a), ops: map[string]int64{get: 1, batch: 4}},
			{name: "strlen big", run: func(s model.Scope) (any, error) {
				ks, err := model.ReadKey(s, []byte("k"))
				return ks.StringLen(), err
			}, want: int64(n), ops: map[string]int64{get: 1}},
			{name: "range across two chunks", run: func(s model.Scope) (any, error) {
				ks, err := model.ReadKey(s, []byte("k"))
				if err != nil {
					return nil, err
				}
				return ks.StringRange(bigChunkBytes-2, bigChunkBytes+2)
			}, want: a[bigChunkBytes-2 : bigChunkBytes+2], ops: map[string]int64{get: 1, batch: 1}},
			{name: "set get big over big", run: set("k", string(b), model.SetOptions{Get: true}), want: "written " + string(a), ops: map[string]int64{get: 1, putOp: 1, bw: 4, tx: 1, batch: 4}},
			{name: "set nx big on a live key deletes its chunks", run: func(s model.Scope) (any, error) {
				r, err := model.SetString(s, []byte("k"), a, model.SetOptions{NX: true})
				return r.Written, err
			}, want: false, ops: map[string]int64{get: 1, putOp: 1, bw: 6, del: 1}},
			{name: "still b", run: getS("k"), want: string(b)},
			{name: "small keepttl over big", run: set("k", "kept", model.SetOptions{KeepTTL: true}), want: "written", ops: map[string]int64{upd: 1}},
			{name: "kept", run: getS("k"), want: "kept", ops: map[string]int64{get: 1}},
			{name: "big again", run: set("k", string(b), model.SetOptions{}), want: "written"},
			{name: "small over big", run: setS("k", "small"), want: true, ops: map[string]int64{putOp: 1}},
			{name: "small", run: getS("k"), want: "small", ops: map[string]int64{get: 1}},
			{name: "append past an item", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("k"), a, math.MaxInt64)
			}, want: int64(5 + n)},
			{name: "appended", run: getS("k"), want: "small" + string(a)},
			{name: "getdel big", run: func(s model.Scope) (any, error) {
				ks, err := model.GetDel(s, []byte("k"))
				return describe(ks), err
			}, want: "small" + string(a), ops: map[string]int64{del: 1, batch: 4}},
			{name: "gone", run: getS("k"), want: "<none>"},
		})
	})
}

// Overwritten and unpublished big values are garbage: the sweeper deletes
// their chunks once its grace has passed, and never a published value's.
func TestBigValueSweep(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		n := 3*bigChunkBytes + 1
		a, b := randomBytes(3, n), randomBytes(4, n)
		s := e.scope("test", 0)
		for _, v := range [][]byte{a, b} {
			_, err := model.SetString(s, []byte("k0"), v, model.SetOptions{})
			require.NoError(t, err)
		}
		// A SET NX that found the key deletes its own chunks at once.
		_, err := model.SetString(s, []byte("k0"), a, model.SetOptions{NX: true})
		require.NoError(t, err)
		// So does a SET ... GET that found another type.
		_, err = model.AddMembers(s, []byte("set"), model.TypeSet, [][]byte{[]byte("m")}, nil)
		require.NoError(t, err)
		_, err = model.SetString(s, []byte("set"), a, model.SetOptions{Get: true})
		require.ErrorIs(t, err, model.ErrWrongType)
		require.Equal(t, 8, countChunks(t, e), "two values' chunks")
		clock := time.Now()
		sw := &model.Sweeper{Store: e.store, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		require.NoError(t, sw.SweepOnce(s))
		require.Equal(t, 8, countChunks(t, e), "nothing goes before the grace")
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		require.Equal(t, 4, countChunks(t, e), "the overwritten value's chunks went")
		require.EqualValues(t, 1, sw.Gens)
		// RENAME hands the chunks to the new key: they are not swept.
		_, err = model.MoveKey(s, []byte("k0"), 0, []byte("k"), false)
		require.NoError(t, err)
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		require.Equal(t, 4, countChunks(t, e))
		ks, err := model.ReadKey(s, []byte("k"))
		require.NoError(t, err)
		got, err := ks.StringValue()
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, got))
		// Deleted: its chunks go too.
		_, err = model.DeleteKey(s, []byte("k"))
		require.NoError(t, err)
		require.NoError(t, sw.SweepOnce(s))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		require.Zero(t, countChunks(t, e))
		// A reader that read the key item before the delete and comes back
		// after the sweep is told so, not answered.
		_, err = ks.StringValue()
		require.ErrorIs(t, err, model.ErrBigValueGone)
		require.ErrorIs(t, err, dynastore.ErrTxConflict, "a lost race: TRYAGAIN to a client, a unit of work runs again")
	})
}

// countChunks is how many big value chunks the store holds.
func countChunks(t *testing.T, e *keysEnv) int {
	t.Helper()
	n := 0
	s := e.scope("scan", 0)
	err := model.ScanAll(s, e.store, dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte{model.NsChunks}}, func(dynastore.Item) error {
		n++
		return nil
	})
	require.NoError(t, err)
	return n
}

// putsFailing fails every Put after the first ok ones, as a writer that
// died midway through a big value's chunks (it has no BatchWriteItem, so
// every chunk is a Put).
type putsFailing struct {
	dynastore.Store
	ok   int
	puts int
}

func (p *putsFailing) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if p.puts++; p.puts > p.ok {
		return nil, fmt.Errorf("test: the writer died: %w", dynastore.ErrUnavailable)
	}
	return p.Store.Put(ctx, it, o)
}

// A big write that fails before it is published leaves the value as it
// was, whether its chunks stopped midway or its publication was refused;
// one whose publication was applied but not acknowledged answers the new
// value whole. What was never published is swept.
func TestBigWriteFailures(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		n := 4*bigChunkBytes + 3
		a, b := randomBytes(5, n), randomBytes(6, n)
		s := e.scope("test", 0)
		value := func() []byte {
			ks, err := model.ReadKey(s, []byte("k"))
			require.NoError(t, err)
			v, err := ks.StringValue()
			require.NoError(t, err)
			return v
		}
		_, err := model.SetString(s, []byte("k"), a, model.SetOptions{})
		require.NoError(t, err)

		// Chunks stopped midway: the registry entry and two chunks written.
		died := newScope(&putsFailing{Store: e.store, ok: 3})
		_, err = model.SetString(died, []byte("k"), b, model.SetOptions{})
		require.ErrorIs(t, err, dynastore.ErrUnavailable)
		require.True(t, bytes.Equal(a, value()))

		// The publication refused, then applied with its answer lost.
		fs := faults.New(e.store, 1)
		fs.FailNext(dynastore.OpTransactWriteItems, 1, dynastore.ErrUnavailable)
		_, err = model.SetString(newScope(fs), []byte("k"), b, model.SetOptions{})
		require.ErrorIs(t, err, dynastore.ErrUnavailable)
		require.True(t, bytes.Equal(a, value()))
		fs.FailNextAfter(dynastore.OpTransactWriteItems, 1, dynastore.ErrUnavailable)
		_, err = model.SetString(newScope(fs), []byte("k"), b, model.SetOptions{})
		require.ErrorIs(t, err, dynastore.ErrUnavailable)
		require.True(t, bytes.Equal(b, value()))

		clock := time.Now()
		sw := &model.Sweeper{Store: e.store, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		require.NoError(t, sw.SweepOnce(s))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		require.Equal(t, 5, countChunks(t, e), "only the published value's chunks")
		require.True(t, bytes.Equal(b, value()))
	})
}

// Appends whose value still fits one item but whose chunks' list no longer
// does are joined into one value instead of being refused.
func TestAppendListOverhead(t *testing.T) {
	st := dynastore.NewStats()
	e := &keysEnv{store: memory.New(memory.Options{Observer: st}), stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()}
	s := e.scope("append", 0)
	piece := bytes.Repeat([]byte("a"), 409)
	var want []byte
	for range 1000 {
		n, err := model.Append(s, []byte("k"), piece, math.MaxInt64)
		require.NoError(t, err)
		want = append(want, piece...)
		require.EqualValues(t, len(want), n)
	}
	require.Equal(t, string(want), describe(must(model.ReadKey(s, []byte("k")))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
