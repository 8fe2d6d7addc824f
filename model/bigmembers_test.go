package model_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/model"
)

// saddS is SADD of members to key.
func saddS(key string, ms ...[]byte) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		return model.AddMembers(s, []byte(key), model.TypeSet, ms, nil)
	}
}

// A big set member's writes and reads, and the requests each makes: SADD
// stages its chunks (the registry entry and BatchWriteItems of 8 chunks)
// before its commit; SISMEMBER reads the member item alone; SMEMBERS the
// partition and BatchGetItems of 8 chunks.
func TestBigMemberRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		for _, tc := range []struct {
			name    string
			n       int
			batches int64
		}{
			{"1 MB", 1 << 20, 1},
			{"10 MB", 10 << 20, 4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				key := "s" + tc.name
				m := randomBytes(9, tc.n)
				runSteps(t, e, []step{
					{name: tc.name + " sadd big", run: saddS(key, m, []byte("small")), want: int64(2), ops: map[string]int64{get: 1, putOp: 2, dynastore.OpBatchWriteItem: tc.batches, tx: 2}},
					{name: tc.name + " sadd big again", run: saddS(key, m), want: int64(0), ops: map[string]int64{get: 1, batch: 1}},
					{name: tc.name + " sismember big", run: func(s model.Scope) (any, error) {
						return model.SetIsMember(s, []byte(key), [][]byte{m, append(bytes.Clone(m[:len(m)-1]), m[len(m)-1]+1)})
					}, want: []bool{true, false}, ops: map[string]int64{get: 1, batch: 1}},
					{name: tc.name + " smembers big", run: func(s model.Scope) (any, error) {
						ms, err := model.SetMembers(s, []byte(key))
						n := 0
						for _, x := range ms {
							if bytes.Equal(x, m) {
								n++
							}
						}
						return []int{len(ms), n}, err
					}, want: []int{2, 1}, ops: map[string]int64{get: 1, dynastore.OpQuery: 1, batch: tc.batches}},
				})
				for _, label := range []string{"sadd big", "sismember big", "smembers big"} {
					var r, w float64
					for k, v := range e.stats.Snapshot() {
						if k.Label == tc.name+" "+label {
							r += v.RCU
							w += v.WCU
						}
					}
					t.Logf("%s of a %s member: %.0f read units, %.0f write units", label, tc.name, r, w)
				}
			})
		}
	})
}

// forBigStores is forStores with the faithful store too.
func forBigStores(t *testing.T, body func(t *testing.T, e *keysEnv)) {
	forStores(t, body)
	t.Run("faithful", func(t *testing.T) {
		st := dynastore.NewStats()
		store := faithful.New(faithful.Options{Seed: 1, Scale: 0.01, Observer: st})
		body(t, &keysEnv{store: store, stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()})
	})
}

// sweeper returns a sweep that passes the grace on a sweeper of e.
func sweeper(t *testing.T, e *keysEnv, s model.Scope) func() {
	clock := time.Now()
	sw := &model.Sweeper{Store: e.store, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
	return func() {
		t.Helper()
		for range 2 {
			require.NoError(t, sw.SweepOnce(s))
			clock = clock.Add(2 * time.Minute)
		}
		require.NoError(t, sw.SweepOnce(s))
	}
}

// inOrder is a copy of ms in byte order.
func inOrder(ms [][]byte) [][]byte {
	out := slices.Clone(ms)
	slices.SortFunc(out, bytes.Compare)
	return out
}

// Big set members from SADD to the sweep: the chunks of a member removed
// (SREM, SMOVE away, DEL, EXPIRE) are swept after the grace, those of a
// member the set holds never, whether the set was renamed, copied, dumped
// and restored or written to by SINTERSTORE and SMOVE.
func TestBigMemberSets(t *testing.T) {
	forBigStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		sweep := sweeper(t, e, s)
		a, b := randomBytes(11, 3*bigChunkBytes+5), randomBytes(12, 2*bigChunkBytes)
		members := func(key string) [][]byte {
			t.Helper()
			ms, err := model.SetMembers(s, []byte(key))
			require.NoError(t, err)
			return inOrder(ms)
		}
		n, err := model.AddMembers(s, []byte("s"), model.TypeSet, [][]byte{a, []byte("x"), b}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		require.Equal(t, inOrder([][]byte{a, b, []byte("x")}), members("s"))
		require.Equal(t, 4+2, countChunks(t, e))

		n, err = model.RemoveMembers(s, []byte("s"), model.TypeSet, [][]byte{b})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		sweep()
		require.Equal(t, 4, countChunks(t, e), "the removed member's chunks went")

		// SMOVE stages the member again for its new key.
		moved, added, err := model.SetMove(s, []byte("s"), []byte("t"), a)
		require.NoError(t, err)
		require.True(t, moved)
		require.True(t, added)
		require.Equal(t, [][]byte{[]byte("x")}, members("s"))
		require.Equal(t, [][]byte{a}, members("t"))
		sweep()
		require.Equal(t, 4, countChunks(t, e))

		// RENAME hands the chunks over, COPY copies them.
		_, err = model.MoveKey(s, []byte("t"), 0, []byte("t2"), false)
		require.NoError(t, err)
		ok, err := model.CopyKey(s, []byte("t2"), 0, []byte("t3"), false)
		require.NoError(t, err)
		require.True(t, ok)
		sweep()
		require.Equal(t, 8, countChunks(t, e))
		require.Equal(t, [][]byte{a}, members("t2"))

		// DUMP and RESTORE; SINTERSTORE.
		payload, err := model.Dump(s, []byte("t2"), model.DumpOptions{})
		require.NoError(t, err)
		obj, err := rdb.Restore(payload)
		require.NoError(t, err)
		_, err = model.Restore(s, []byte("t4"), model.RestoreArgs{Object: obj})
		require.NoError(t, err)
		_, _, err = model.SetStore(s, model.SetInter, []byte("t5"), [][]byte{[]byte("t2"), []byte("t3")})
		require.NoError(t, err)
		_, err = model.DeleteKey(s, []byte("t2"))
		require.NoError(t, err)
		sweep()
		require.Equal(t, 12, countChunks(t, e), "t3, t4 and t5 each hold the member")
		for _, k := range []string{"t3", "t4", "t5"} {
			require.Equal(t, [][]byte{a}, members(k), k)
		}

		// Expired, deleted or popped: nothing is left.
		ok, err = model.Expire(s, []byte("t3"), s.NowMS()+1000, 0)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = model.DeleteKey(s, []byte("t4"))
		require.NoError(t, err)
		popped, err := model.SetPop(s, []byte("t5"), 1)
		require.NoError(t, err)
		require.Equal(t, [][]byte{a}, popped)
		sweep()
		sweep()
		require.Zero(t, countChunks(t, e))
	})
}
