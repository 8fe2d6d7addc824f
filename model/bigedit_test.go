package model_test

import (
	"bytes"
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// bigValue is key's whole value, read through s.
func bigValue(t *testing.T, s model.Scope, key string) []byte {
	t.Helper()
	ks, err := model.ReadKey(s, []byte(key))
	require.NoError(t, err)
	v, err := ks.StringValue()
	require.NoError(t, err)
	return v
}

// setRangeLocal is SETRANGE on a local copy.
func setRangeLocal(v []byte, off int, val []byte) []byte {
	if len(v) < off+len(val) {
		v = append(v, make([]byte, off+len(val)-len(v))...)
	}
	copy(v[off:], val)
	return v
}

// Edits of a big value give the value Redis would, wherever they fall
// against chunk boundaries, and each reads and writes only the chunks it
// changes: an edit inside one chunk is one BatchGetItem of that chunk and
// one BatchWriteItem of its new version, besides the key item's read, the
// journal entry and the publishing transaction.
func TestBigEdits(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		c := bigChunkBytes
		want := randomBytes(7, 3*c+100)
		key := []byte("k")
		setup := e.scope("setup", 0)
		_, err := model.SetString(setup, key, want, model.SetOptions{})
		require.NoError(t, err)
		one := map[string]int64{get: 1, putOp: 1, batch: 1, bw: 1, tx: 1}
		steps := []struct {
			name string
			run  func(s model.Scope) (int64, error)
			edit func(v []byte) []byte
			ops  map[string]int64
		}{
			{"setrange inside a chunk", func(s model.Scope) (int64, error) {
				return model.SetRange(s, key, int64(c+5), []byte("xyz"), math.MaxInt64)
			}, func(v []byte) []byte { return setRangeLocal(v, c+5, []byte("xyz")) }, one},
			{"setrange over a chunk boundary", func(s model.Scope) (int64, error) {
				return model.SetRange(s, key, int64(2*c-2), []byte("abcd"), math.MaxInt64)
			}, func(v []byte) []byte { return setRangeLocal(v, 2*c-2, []byte("abcd")) }, map[string]int64{get: 1, putOp: 1, batch: 2, bw: 1, tx: 1}},
			{"setrange of whole chunks reads none", func(s model.Scope) (int64, error) {
				return model.SetRange(s, key, 0, want[:c], math.MaxInt64)
			}, func(v []byte) []byte { return setRangeLocal(v, 0, want[:c]) }, map[string]int64{get: 1, putOp: 1, bw: 1, tx: 1}},
			{"append to the partial last chunk", func(s model.Scope) (int64, error) {
				return model.Append(s, key, []byte("tail"), math.MaxInt64)
			}, func(v []byte) []byte { return append(v, "tail"...) }, map[string]int64{upd: 1, putOp: 1, batch: 1, bw: 1, tx: 1}},
			{"append filling it and growing", func(s model.Scope) (int64, error) {
				return model.Append(s, key, bytes.Repeat([]byte("a"), c), math.MaxInt64)
			}, func(v []byte) []byte { return append(v, bytes.Repeat([]byte("a"), c)...) }, map[string]int64{upd: 1, putOp: 1, batch: 1, bw: 1, tx: 1}},
			{"setrange past the end", func(s model.Scope) (int64, error) {
				return model.SetRange(s, key, int64(6*c+3), []byte("far"), math.MaxInt64)
			}, func(v []byte) []byte { return setRangeLocal(v, 6*c+3, []byte("far")) }, nil},
			{"append at a chunk boundary reads nothing", func(s model.Scope) (int64, error) {
				n := 7*c - (6*c + 6)
				return model.Append(s, key, bytes.Repeat([]byte("b"), n), math.MaxInt64)
			}, func(v []byte) []byte { return append(v, bytes.Repeat([]byte("b"), 7*c-(6*c+6))...) }, nil},
			{"append a new chunk", func(s model.Scope) (int64, error) {
				return model.Append(s, key, []byte("new"), math.MaxInt64)
			}, func(v []byte) []byte { return append(v, "new"...) }, map[string]int64{upd: 1, putOp: 1, bw: 1, tx: 1}},
			{"setbit", func(s model.Scope) (int64, error) {
				old, _, err := model.SetBit(s, key, uint64(3*c)*8+1, true)
				if old {
					return 1, err
				}
				return 0, err
			}, func(v []byte) []byte { v[3*c] |= 0x40; return v }, one},
			{"setbit past the end grows", func(s model.Scope) (int64, error) {
				_, _, err := model.SetBit(s, key, uint64(8*c+10)*8+7, true)
				return 0, err
			}, func(v []byte) []byte { v = setRangeLocal(v, 8*c+10, []byte{0}); v[8*c+10] = 1; return v }, nil},
			{"bitfield", func(s model.Scope) (int64, error) {
				_, _, err := model.Bitfield(s, key, []model.BitfieldOp{
					{Kind: model.FieldIncrBy, Bits: 8, Offset: uint64(2*c) * 8, Value: 1},
					{Kind: model.FieldGet, Bits: 16, Offset: uint64(2*c+1) * 8},
				})
				return 0, err
			}, func(v []byte) []byte { v[2*c]++; return v }, one},
		}
		for _, st := range steps {
			s := e.scope(st.name, 0)
			_, err := st.run(s)
			require.NoError(t, err, st.name)
			want = st.edit(want)
			if st.ops != nil {
				require.Equal(t, st.ops, e.ops(st.name), "%s: requests", st.name)
			}
			require.True(t, bytes.Equal(want, bigValue(t, s, "k")), st.name)
		}
		// A setbit that changes nothing writes nothing.
		s := e.scope("setbit unchanged", 0)
		old, changed, err := model.SetBit(s, key, uint64(3*c)*8+1, true)
		require.NoError(t, err)
		require.True(t, old)
		require.False(t, changed)
		require.Equal(t, map[string]int64{get: 1, batch: 1}, e.ops("setbit unchanged"))
	})
}

// The units of one-byte edits of a 50 MB value: each writes one chunk
// (with APPEND, only what the last chunk holds) and the key item, never
// the value.
func TestBigEditUnits(t *testing.T) {
	st := dynastore.NewStats()
	e := &keysEnv{store: memory.New(memory.Options{Observer: st}), stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()}
	key := []byte("k")
	val := randomBytes(8, 50<<20)
	_, err := model.SetString(e.scope("set", 0), key, val, model.SetOptions{})
	require.NoError(t, err)
	units := func(label string) (r, w float64) {
		for k, v := range st.Snapshot() {
			if k.Label == label {
				r += v.RCU
				w += v.WCU
			}
		}
		return r, w
	}
	_, setW := units("set")
	edits := []struct {
		name string
		run  func(s model.Scope) error
	}{
		{"setrange", func(s model.Scope) error {
			_, err := model.SetRange(s, key, 25<<20, []byte("x"), math.MaxInt64)
			return err
		}},
		{"append", func(s model.Scope) error {
			_, err := model.Append(s, key, []byte("y"), math.MaxInt64)
			return err
		}},
		{"setbit", func(s model.Scope) error {
			_, _, err := model.SetBit(s, key, 10<<23, !model.GetBit(val, 10<<23))
			return err
		}},
	}
	for _, ed := range edits {
		require.NoError(t, ed.run(e.scope(ed.name, 0)), ed.name)
		r, w := units(ed.name)
		t.Logf("%s of one byte on a 50 MB value: %.0f read units, %.0f write units (SET: %.0f write units)", ed.name, r, w, setW)
		require.Less(t, w, float64(bigChunkBytes>>10)+40, "%s: one chunk and the key item", ed.name)
		require.Less(t, r, float64(bigChunkBytes>>12)+10, "%s: one chunk and the key item", ed.name)
	}
}

// Readers on other instances never see a torn or mixed value while edits
// land, and the sweeper deletes exactly the chunks no published value
// uses: the chunks edits replaced, and those of an edit that lost its race
// or whose writer died, once the grace has passed.
func TestBigEditReadersAndSweep(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		c := bigChunkBytes
		key := []byte("k")
		v0 := randomBytes(9, 2*c+10)
		w := e.scope("writer", 0)
		_, err := model.SetString(w, key, v0, model.SetOptions{})
		require.NoError(t, err)
		// Every version the writer publishes, by content.
		versions := map[string]bool{string(v0): true}
		var mu sync.Mutex
		cur := bytes.Clone(v0)
		const edits = 12
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var reads [][]byte
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Another instance: its own process.
				rs := &keysEnv{store: e.store, stats: e.stats, proc: model.NewProcess(nil), now: e.now}
				s := rs.scope("reader", 0)
				for {
					select {
					case <-stop:
						return
					default:
					}
					ks, err := model.ReadKey(s, key)
					if err != nil {
						continue
					}
					v, err := ks.StringValue()
					if err == nil {
						mu.Lock()
						reads = append(reads, v)
						mu.Unlock()
					}
				}
			}()
		}
		for i := range edits {
			var err error
			switch i % 3 {
			case 0:
				_, err = model.SetRange(w, key, int64(c-1), []byte{byte(i), byte(i)}, math.MaxInt64)
				cur = setRangeLocal(cur, c-1, []byte{byte(i), byte(i)})
			case 1:
				_, err = model.Append(w, key, []byte{byte(i)}, math.MaxInt64)
				cur = append(cur, byte(i))
			case 2:
				// A flip, so that it always writes.
				bit := uint64(i % 8)
				_, _, err = model.SetBit(w, key, bit, !model.GetBit(cur, bit))
				cur[0] ^= 0x80 >> bit
			}
			require.NoError(t, err)
			mu.Lock()
			versions[string(cur)] = true
			mu.Unlock()
		}
		close(stop)
		wg.Wait()
		for _, v := range reads {
			require.True(t, versions[string(v)], "a read that is no published version")
		}
		require.True(t, bytes.Equal(cur, bigValue(t, w, "k")))

		// An edit that lost its race deletes what it staged; one whose
		// writer died leaves it to the sweeper.
		ks, err := model.ReadKey(w, key)
		require.NoError(t, err)
		// It wrote its journal entry and one of its two chunks.
		died := newScope(&putsFailing{Store: e.store, ok: 2})
		_, err = model.SetRange(died, key, int64(c-2), []byte("lost"), math.MaxInt64)
		require.ErrorIs(t, err, dynastore.ErrUnavailable)
		live := 3 // the value's chunks
		require.Equal(t, live+edits/3*(2+1+1)+1, countChunks(t, e), "replaced chunks wait for the sweeper")
		clock := time.Now()
		sw := &model.Sweeper{Store: e.store, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		require.NoError(t, sw.SweepOnce(w))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(w))
		require.Equal(t, live, countChunks(t, e), "only the published value's chunks")
		require.True(t, bytes.Equal(cur, bigValue(t, w, "k")))
		// A reader that read the key item before the edits replaced the
		// chunks it needs, and comes back after the sweep, is told so.
		_, err = model.SetRange(w, key, 0, []byte("z"), math.MaxInt64)
		require.NoError(t, err)
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(w))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(w))
		_, err = ks.StringValue()
		require.ErrorIs(t, err, model.ErrBigValueGone)
		// Deleted: every chunk goes.
		_, err = model.DeleteKey(w, key)
		require.NoError(t, err)
		require.NoError(t, sw.SweepOnce(w))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(w))
		require.Zero(t, countChunks(t, e))
	})
}

// raceOnce runs race before its first transaction: another writer's
// command landing between a command's read and its publication.
type raceOnce struct {
	dynastore.Store
	once sync.Once
	race func()
}

func (r *raceOnce) Transact(ctx context.Context, acts []dynastore.TxAction) error {
	r.once.Do(r.race)
	return r.Store.Transact(ctx, acts)
}

func (r *raceOnce) BatchWrite(ctx context.Context, puts []dynastore.Item, dels []dynastore.Key) error {
	return dynastore.BatchWrite(ctx, r.Store, puts, dels)
}

// An edit whose publication lost to another writer's deletes the chunks
// it staged and its journal at once, and runs again on the value the
// other writer published: both edits land, and no chunk is left that only
// the sweeper would find.
func TestBigEditLostRace(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		c := bigChunkBytes
		key := []byte("k")
		want := randomBytes(10, 2*c+10)
		s := e.scope("setup", 0)
		_, err := model.SetString(s, key, want, model.SetOptions{})
		require.NoError(t, err)
		racing := &raceOnce{Store: e.store, race: func() {
			_, err := model.SetRange(s, key, int64(c+5), []byte("BBB"), math.MaxInt64)
			require.NoError(t, err)
		}}
		_, err = model.SetRange(newScope(racing), key, 5, []byte("AAA"), math.MaxInt64)
		require.NoError(t, err)
		copy(want[5:], "AAA")
		copy(want[c+5:], "BBB")
		require.True(t, bytes.Equal(want, bigValue(t, s, "k")))
		require.Equal(t, 3+2, countChunks(t, e), "the value's chunks and the two the edits replaced")
	})
}
