package model_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
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
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		sweep, _ := pastGrace(t, e.store, s)
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

// Big hash field names, with small and big values, and big sorted-set
// members in Redis's byte order where their sort keys cannot say it:
// members sharing a long prefix, big or not, by rank, in reverse and by
// lexicographic range. A new score keeps a member's chunks.
func TestBigMemberHashesAndZSets(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		sweep, _ := pastGrace(t, e.store, s)
		f, v := randomBytes(21, 2*bigChunkBytes+10), randomBytes(22, 2*bigChunkBytes)
		_, err := model.AddMembers(s, []byte("h"), model.TypeHash, [][]byte{f, []byte("g")}, [][]byte{[]byte("small"), []byte("1")})
		require.NoError(t, err)
		vals, present, err := model.HashGet(s, []byte("h"), [][]byte{f, append(bytes.Clone(f), 0)})
		require.NoError(t, err)
		require.Equal(t, []bool{true, false}, present)
		require.Equal(t, "small", string(vals[0]))
		_, err = model.AddMembers(s, []byte("h"), model.TypeHash, [][]byte{f}, [][]byte{v})
		require.NoError(t, err)
		fields, vs, err := model.HashAll(s, []byte("h"))
		require.NoError(t, err)
		require.Len(t, fields, 2)
		for i, x := range fields {
			if bytes.Equal(x, f) {
				require.True(t, bytes.Equal(v, vs[i]), "the big field's big value")
			} else {
				require.Equal(t, "g", string(x))
			}
		}
		sweep()
		require.Equal(t, 3+2, countChunks(t, e), "the field name's and its value's")
		_, err = model.RemoveMembers(s, []byte("h"), model.TypeHash, [][]byte{f})
		require.NoError(t, err)
		sweep()
		require.Zero(t, countChunks(t, e))

		base := randomBytes(23, 2*bigChunkBytes+30)
		next := bytes.Clone(base)
		next[1200]++
		ms := [][]byte{base, append(bytes.Clone(base), 0), base[:1500], base[:990], base[:500], next, []byte("a"), {0xff}}
		scores := make([]float64, len(ms))
		for i := range scores {
			scores[i] = 1
		}
		_, err = model.ZAdd(s, []byte("z"), model.ZAddFlags{}, ms, scores, 128, 64)
		require.NoError(t, err)
		want := inOrder(ms)
		members := func(q model.ZRangeQuery) [][]byte {
			t.Helper()
			es, err := model.ZRange(s, []byte("z"), q)
			require.NoError(t, err)
			out := make([][]byte, len(es))
			for i, e := range es {
				out[i] = e.Member
			}
			return out
		}
		require.Equal(t, want, members(model.ZRangeQuery{By: model.ZRangeRank, Start: 0, End: -1}))
		rev := slices.Clone(want)
		slices.Reverse(rev)
		require.Equal(t, rev, members(model.ZRangeQuery{By: model.ZRangeRank, Start: 0, End: -1, Rev: true}))
		for i, m := range want {
			r, found, err := model.ZRank(s, []byte("z"), m, false)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, int64(i), r)
			r, _, err = model.ZRank(s, []byte("z"), m, true)
			require.NoError(t, err)
			require.Equal(t, int64(len(want)-1-i), r)
		}
		lex := model.ZRangeQuery{By: model.ZRangeLex, Limit: -1, Lex: model.LexRange{Min: model.LexBound{V: base[:1500]}, Max: model.LexBound{V: base}}}
		require.Equal(t, [][]byte{base[:1500], base}, members(lex))
		lex.Lex.Min.Ex, lex.Lex.Max = true, model.LexBound{V: next, Ex: true}
		require.Equal(t, [][]byte{base, append(bytes.Clone(base), 0)}, members(lex))

		chunks := countChunks(t, e)
		require.Equal(t, 3*3, chunks, "three big members'")
		_, err = model.ZAdd(s, []byte("z"), model.ZAddFlags{Incr: true}, [][]byte{base}, []float64{-1}, 128, 64)
		require.NoError(t, err)
		require.Equal(t, base, members(model.ZRangeQuery{By: model.ZRangeRank, Start: 0, End: 0})[0])
		sweep()
		require.Equal(t, chunks, countChunks(t, e), "a new score keeps the chunks")
	})
}

// A big member written inside a transaction (MULTI/EXEC, a script) is
// invisible until its commit, and one whose transaction is dropped, or
// whose writer failed, is never visible: its chunks are swept.
func TestBigMemberUnpublished(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		sweep, _ := pastGrace(t, e.store, s)
		a, b := randomBytes(31, 2*bigChunkBytes+1), randomBytes(32, 2*bigChunkBytes+2)
		isMember := func(m []byte) bool {
			t.Helper()
			ok, err := model.SetIsMember(s, []byte("s"), [][]byte{m})
			require.NoError(t, err)
			return ok[0]
		}
		inTxn := func(txn *model.Txn) *scope {
			ts := e.scope("txn", 0)
			ts.st = txn
			return ts
		}
		_, err := model.AddMembers(s, []byte("s"), model.TypeSet, [][]byte{[]byte("x")}, nil)
		require.NoError(t, err)

		txn := model.NewTxn(e.store, nil)
		n, err := model.AddMembers(inTxn(txn), []byte("s"), model.TypeSet, [][]byte{a}, nil)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.False(t, isMember(a), "not before EXEC")
		require.NoError(t, txn.Commit(s))
		require.True(t, isMember(a))
		ms, err := model.SetMembers(s, []byte("s"))
		require.NoError(t, err)
		require.Equal(t, inOrder([][]byte{a, []byte("x")}), inOrder(ms))

		dropped := model.NewTxn(e.store, nil)
		_, err = model.AddMembers(inTxn(dropped), []byte("s"), model.TypeSet, [][]byte{b}, nil)
		require.NoError(t, err)
		for ok := 0; ok < 3; ok++ {
			// The writer dies after its registry entry, or its chunks.
			died := newScope(&putsFailing{Store: e.store, ok: ok})
			_, err = model.AddMembers(died, []byte("s"), model.TypeSet, [][]byte{b}, nil)
			require.ErrorIs(t, err, dynastore.ErrUnavailable)
		}
		require.False(t, isMember(b))
		sweep()
		require.Equal(t, 3, countChunks(t, e), "only the published member's")
		require.True(t, isMember(a))
	})
}

// Readers on other instances see a big member whole or not at all while a
// writer adds and removes it and its neighbours.
func TestBigMemberReaders(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		w := e.scope("writer", 0)
		ms := [][]byte{randomBytes(41, 2*bigChunkBytes+7), randomBytes(42, bigChunkBytes*3/2), []byte("small")}
		known := map[string]bool{}
		for _, m := range ms {
			known[string(m)] = true
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var mu sync.Mutex
		reads := 0
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs := &keysEnv{store: e.store, stats: e.stats, proc: model.NewProcess(nil), now: e.now}
				s := rs.scope("reader", 0)
				for read := false; ; read = true {
					select {
					case <-stop:
						if read {
							return
						}
					default:
					}
					got, err := model.SetMembers(s, []byte("s"))
					if err != nil {
						continue
					}
					for _, m := range got {
						if !known[string(m)] {
							t.Errorf("a member of %d bytes that was never written", len(m))
						}
					}
					mu.Lock()
					reads++
					mu.Unlock()
				}
			}()
		}
		for i := range 8 {
			m := ms[i%len(ms)]
			if i%2 == 0 {
				_, err := model.AddMembers(w, []byte("s"), model.TypeSet, [][]byte{m, ms[(i+1)%len(ms)]}, nil)
				require.NoError(t, err)
			} else {
				_, err := model.RemoveMembers(w, []byte("s"), model.TypeSet, [][]byte{m})
				require.NoError(t, err)
			}
		}
		close(stop)
		wg.Wait()
		require.Positive(t, reads)
	})
}

// One command writing 50 big values or members into a large collection:
// with their checks they do not fit the members' transaction, so they wait
// in pending items and the checks go with the commit that publishes them.
// RENAME hands all of them over.
func TestBigMemberMany(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		for _, typ := range []string{model.TypeHash, model.TypeSet} {
			key := []byte(typ)
			var small, vals [][]byte
			for i := range 200 {
				small = append(small, fmt.Append(nil, "s", i))
				vals = append(vals, []byte("v"))
			}
			if typ == model.TypeSet {
				vals = nil
			}
			_, err := model.AddMembers(s, key, typ, small, vals)
			require.NoError(t, err)
			var ms [][]byte
			vals = nil
			for i := range 50 {
				b := randomBytes(uint64(100+i), bigChunkBytes+20<<10)
				if typ == model.TypeHash {
					ms, vals = append(ms, fmt.Append(nil, "f", i)), append(vals, b)
				} else {
					ms = append(ms, b)
				}
			}
			n, err := model.AddMembers(s, key, typ, ms, vals)
			require.NoError(t, err, typ)
			require.Equal(t, int64(50), n, typ)
			_, err = model.MoveKey(s, key, 0, append(key, '2'), false)
			require.NoError(t, err, typ)
		}
		sweep, _ := pastGrace(t, e.store, s)
		sweep()
		require.Equal(t, 2*50*2, countChunks(t, e))
		vals, present, err := model.HashGet(s, []byte("hash2"), [][]byte{[]byte("f7")})
		require.NoError(t, err)
		require.True(t, present[0])
		require.True(t, bytes.Equal(randomBytes(107, bigChunkBytes+20<<10), vals[0]))
		ok, err := model.SetIsMember(s, []byte("set2"), [][]byte{randomBytes(149, bigChunkBytes+20<<10)})
		require.NoError(t, err)
		require.True(t, ok[0])
	})
}
