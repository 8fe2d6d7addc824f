package model_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/model"
)

// rangeS is LRANGE key 0 -1, each element as a string.
func rangeS(key string) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		vs, err := model.ListRange(s, []byte(key), 0, -1)
		return strs(vs), err
	}
}

// A list's big elements through every list command: each is read whole,
// compared by content, counted, and survives RENAME, COPY and
// DUMP/RESTORE; the list stays a quicklist.
func TestBigListElements(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		n := 2*bigChunkBytes + 5
		a, b, c, d := randomBytes(11, n), randomBytes(12, n), randomBytes(13, n+1), randomBytes(14, n)
		push := func(key string, left, x bool, vals ...[]byte) func(s model.Scope) (any, error) {
			return func(s model.Scope) (any, error) {
				return model.ListPush(s, []byte(key), vals, left, x)
			}
		}
		pop := func(key string, left bool, count int64) func(s model.Scope) (any, error) {
			return func(s model.Scope) (any, error) {
				vs, _, err := model.ListPop(s, []byte(key), left, count)
				return strs(vs), err
			}
		}
		pos := func(key string, elem []byte, rank int64) func(s model.Scope) (any, error) {
			return func(s model.Scope) (any, error) {
				found, _, err := model.ListPos(s, []byte(key), model.ListPosQuery{Elem: elem, Rank: rank, Count: 0, HasCount: true})
				return found, err
			}
		}
		A, B, C, D := string(a), string(b), string(c), string(d)
		runSteps(t, e, []step{
			{name: "rpushx of no list", run: push("l", false, true, a), want: int64(0)},
			{name: "rpush big into a new list", run: push("l", false, false, a, []byte("x")), want: int64(2)},
			{name: "lpush big", run: push("l", true, false, b), want: int64(3)},
			{name: "rpushx big", run: push("l", false, true, a), want: int64(4)},
			{name: "lpushx small", run: push("l", true, true, []byte("y")), want: int64(5)},
			{name: "lrange", run: rangeS("l"), want: []string{"y", B, A, "x", A}},
			{name: "llen", run: func(s model.Scope) (any, error) { return model.ListLen(s, []byte("l")) }, want: int64(5)},
			{name: "lindex big", run: func(s model.Scope) (any, error) {
				v, err := model.ListIndex(s, []byte("l"), -1, true)
				return string(v), err
			}, want: A},
			{name: "lpos by content", run: pos("l", a, 1), want: []int64{2, 4}},
			{name: "lpos from the tail", run: pos("l", a, -1), want: []int64{4, 2}},
			{name: "lpos of a value of the same length", run: pos("l", d, 1), want: []int64(nil)},
			{name: "lset big", run: func(s model.Scope) (any, error) {
				return nil, model.ListSet(s, []byte("l"), 1, true, c)
			}},
			{name: "linsert big after a big pivot", run: func(s model.Scope) (any, error) {
				return model.ListInsert(s, []byte("l"), true, a, d)
			}, want: int64(6)},
			{name: "linsert of a missing pivot", run: func(s model.Scope) (any, error) {
				return model.ListInsert(s, []byte("l"), true, b, d)
			}, want: int64(-1)},
			{name: "lrange after", run: rangeS("l"), want: []string{"y", C, A, D, "x", A}},
			{name: "lrem big", run: func(s model.Scope) (any, error) {
				return model.ListRem(s, []byte("l"), -1, a)
			}, want: int64(1)},
			{name: "lrange after lrem", run: rangeS("l"), want: []string{"y", C, A, D, "x"}},
			{name: "lmove big to another list", run: func(s model.Scope) (any, error) {
				if _, _, err := model.ListPop(s, []byte("l"), true, 1); err != nil {
					return nil, err
				}
				v, err := model.ListMove(s, []byte("l"), []byte("m"), true, false, false)
				return string(v), err
			}, want: C},
			{name: "rpoplpush within the list", run: func(s model.Scope) (any, error) {
				v, err := model.ListMove(s, []byte("l"), []byte("l"), false, true, false)
				return string(v), err
			}, want: "x"},
			{name: "lrange of both", run: func(s model.Scope) (any, error) {
				l, err := model.ListRange(s, []byte("l"), 0, -1)
				if err != nil {
					return nil, err
				}
				m, err := model.ListRange(s, []byte("m"), 0, -1)
				return [][]string{strs(l), strs(m)}, err
			}, want: [][]string{{"x", A, D}, {C}}},
			{name: "rename", run: func(s model.Scope) (any, error) {
				_, err := model.MoveKey(s, []byte("l"), 0, []byte("l2"), false)
				return nil, err
			}},
			{name: "copy", run: func(s model.Scope) (any, error) {
				return model.CopyKey(s, []byte("l2"), 0, []byte("l3"), false)
			}, want: true},
			{name: "dump and restore", run: func(s model.Scope) (any, error) {
				p, err := model.Dump(s, []byte("l3"), model.DumpOptions{ListFill: -2})
				if err != nil {
					return nil, err
				}
				obj, err := rdb.Restore(p)
				if err != nil {
					return nil, err
				}
				_, err = model.Restore(s, []byte("l4"), model.RestoreArgs{Object: obj})
				return nil, err
			}},
			{name: "encoding", run: func(s model.Scope) (any, error) {
				return model.Encoding(s, []byte("l4"), model.TypeList, model.EncodingLimits{})
			}, want: "quicklist"},
			{name: "lmpop", run: func(s model.Scope) (any, error) {
				k, vs, err := model.ListMultiPop(s, [][]byte{[]byte("none"), []byte("l4")}, false, 2, false)
				return []string{string(k), strs(vs)[0], strs(vs)[1]}, err
			}, want: []string{"l4", D, A}},
			{name: "lrange l2", run: rangeS("l2"), want: []string{"x", A, D}},
			{name: "lrange l3", run: rangeS("l3"), want: []string{"x", A, D}},
			{name: "lrange l4", run: rangeS("l4"), want: []string{"x"}},
			{name: "ltrim and pops", run: func(s model.Scope) (any, error) {
				if _, err := model.ListTrim(s, []byte("l2"), 1, 1); err != nil {
					return nil, err
				}
				return model.ListLen(s, []byte("l2"))
			}, want: int64(1)},
			{name: "rpop", run: pop("l2", false, 1), want: []string{A}},
			{name: "lpop", run: pop("l3", true, 3), want: []string{"x", A, D}},
		})
	})
}

// Popped, overwritten, trimmed and deleted big elements' chunks are
// garbage the sweeper deletes once its grace has passed; an element moved
// (LMOVE, RPOPLPUSH, a list LREM rewrote) or a list renamed keeps its
// chunks, which are not copied.
func TestBigListSweep(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		n := 3*bigChunkBytes + 1
		a, b, c, d := randomBytes(21, n), randomBytes(22, n), randomBytes(23, n), randomBytes(24, n)
		s := e.scope("test", 0)
		sweep, _ := pastGrace(t, e.store, s)
		list := func(key string, want ...[]byte) {
			t.Helper()
			vs, err := model.ListRange(s, []byte(key), 0, -1)
			require.NoError(t, err)
			require.Equal(t, strs(want), strs(vs))
		}
		ok := func(_ any, err error) {
			t.Helper()
			require.NoError(t, err)
		}
		ok(model.ListPush(s, []byte("l"), [][]byte{a, b, []byte("x")}, false, false))
		require.Equal(t, 8, countChunks(t, e))
		ok(model.ListMove(s, []byte("l"), []byte("l"), true, false, false)) // [b x a]
		ok(model.ListMove(s, []byte("l"), []byte("m"), true, false, false)) // b to m
		ok(model.ListRem(s, []byte("l"), 0, []byte("x")))                   // l rewritten: [a]
		require.Equal(t, 8, countChunks(t, e), "moved by reference")
		sweep()
		require.Equal(t, 8, countChunks(t, e), "nothing moved is swept")
		list("l", a)
		list("m", b)

		// LSET over a big element, a pop: their chunks go.
		require.NoError(t, model.ListSet(s, []byte("m"), 0, true, c))
		ok(model.ListPush(s, []byte("l"), [][]byte{[]byte("y")}, false, false))
		_, _, err := model.ListPop(s, []byte("l"), true, 1)
		require.NoError(t, err)
		sweep()
		require.Equal(t, 4, countChunks(t, e))
		list("m", c)
		list("l", []byte("y"))

		// LTRIM: the trimmed element's chunks go; RENAME keeps the rest.
		ok(model.ListPush(s, []byte("m"), [][]byte{d}, false, false))
		ok(model.ListTrim(s, []byte("m"), 0, 0))
		ok(model.MoveKey(s, []byte("m"), 0, []byte("m2"), false))
		sweep()
		require.Equal(t, 4, countChunks(t, e))
		list("m2", c)

		// A list deleted, another expired: their members go, then the
		// chunks they held.
		// An element pushed twice is two elements, each with its chunks.
		ok(model.ListPush(s, []byte("e"), [][]byte{a, a, []byte("z")}, true, false))
		require.Equal(t, 12, countChunks(t, e))
		list("e", []byte("z"), a, a)
		ok(model.Expire(s, []byte("e"), s.NowMS()+1000, 0))
		ok(model.DeleteKey(s, []byte("m2")))
		ok(model.DeleteKey(s, []byte("l")))
		sweep()
		sweep()
		require.Zero(t, countChunks(t, e))
		require.Zero(t, countPrefix(t, e, model.NsMembers))
	})
}

// A big element's push and reads, and the requests each makes: the
// registry entry and BatchWriteItems of 8 chunks, then the list's own
// requests; LINDEX the key item, the member item and BatchGetItems of 8
// chunks; LLEN the key item alone; LMOVE into a new list reads the
// chunks and writes none. The units per MB are logged beside a big hash
// field's.
func TestBigListRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		// A 10 MB element: 27 chunks, four BatchWriteItems and BatchGetItems.
		n := 10 << 20
		a := randomBytes(31, n)
		runSteps(t, e, []step{
			{name: "rpush big", run: func(s model.Scope) (any, error) {
				return model.ListPush(s, []byte("l"), [][]byte{a}, false, false)
			}, want: int64(1), ops: map[string]int64{get: 1, putOp: 2, bw: 4, tx: 2}},
			{name: "lindex big", run: func(s model.Scope) (any, error) {
				v, err := model.ListIndex(s, []byte("l"), 0, true)
				return string(v), err
			}, want: string(a), ops: map[string]int64{get: 2, batch: 4}},
			{name: "llen", run: func(s model.Scope) (any, error) { return model.ListLen(s, []byte("l")) }, want: int64(1), ops: map[string]int64{get: 1}},
			{name: "lpop big", run: func(s model.Scope) (any, error) {
				vs, _, err := model.ListPop(s, []byte("l"), true, 1)
				return string(vs[0]), err
			}, want: string(a), ops: map[string]int64{dynastore.OpQuery: 1, batch: 4, del: 1}},
			{name: "rpush big again", run: func(s model.Scope) (any, error) {
				return model.ListPush(s, []byte("l"), [][]byte{[]byte("x"), a}, false, false)
			}, want: int64(2)},
			{name: "lmove big", run: func(s model.Scope) (any, error) {
				v, err := model.ListMove(s, []byte("l"), []byte("d"), false, true, false)
				return string(v), err
			}, want: string(a), ops: map[string]int64{get: 1, putOp: 1, dynastore.OpQuery: 1, batch: 4, tx: 2}},
			{name: "hset big", run: hsetS("h", "f", a), want: int64(1)},
			{name: "hget big", run: hgetS("h", "f"), want: string(a)},
		})
		for _, name := range []string{"rpush big", "lindex big", "lpop big", "lmove big", "hset big", "hget big"} {
			var reqs int64
			var r, w float64
			for k, v := range e.stats.Snapshot() {
				if k.Label == name {
					reqs += v.Requests
					r += v.RCU
					w += v.WCU
				}
			}
			t.Logf("%s of 10 MB: %v; per MB: %.1f requests, %.0f read units, %.0f write units", name, e.ops(name), float64(reqs)/10, r/10, w/10)
		}
	})
}

// Big elements inside a unit of work (MULTI/EXEC, a script): pushed,
// moved and read inside it, published by its commit; a unit that fails
// leaves nothing visible, and its staged chunks are swept.
func TestBigListUnit(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		a, b := randomBytes(41, 2*bigChunkBytes+3), randomBytes(42, 2*bigChunkBytes+3)
		s := e.scope("test", 0)
		in := func(txn *model.Txn) *scope {
			return &scope{Context: s.Context, st: txn, db: s.db, now: s.now, proc: s.proc}
		}
		_, err := model.ListPush(s, []byte("src"), [][]byte{[]byte("x")}, false, false)
		require.NoError(t, err)
		var inside []string
		_, err = model.Unit{Keys: [][]byte{[]byte("src"), []byte("dst")}, Work: func(txn *model.Txn) error {
			ts := in(txn)
			if _, err := model.ListPush(ts, []byte("src"), [][]byte{a}, false, false); err != nil {
				return err
			}
			for range 2 {
				if _, err := model.ListMove(ts, []byte("src"), []byte("dst"), true, false, false); err != nil {
					return err
				}
			}
			vs, err := model.ListRange(ts, []byte("dst"), 0, -1)
			inside = strs(vs)
			return err
		}}.Run(s)
		require.NoError(t, err)
		require.Equal(t, []string{"x", string(a)}, inside)
		vs, err := model.ListRange(s, []byte("dst"), 0, -1)
		require.NoError(t, err)
		require.Equal(t, []string{"x", string(a)}, strs(vs))
		n, err := model.ListLen(s, []byte("src"))
		require.NoError(t, err)
		require.Zero(t, n)

		abort := errors.New("test: the unit fails")
		_, err = model.Unit{Keys: [][]byte{[]byte("dst")}, Work: func(txn *model.Txn) error {
			if _, err := model.ListPush(in(txn), []byte("dst"), [][]byte{b}, true, false); err != nil {
				return err
			}
			return abort
		}}.Run(s)
		require.ErrorIs(t, err, abort)
		vs, err = model.ListRange(s, []byte("dst"), 0, -1)
		require.NoError(t, err)
		require.Equal(t, []string{"x", string(a)}, strs(vs))

		sweep, _ := pastGrace(t, e.store, s)
		sweep()
		require.Equal(t, 3, countChunks(t, e), "only the published element's chunks")
		vs, err = model.ListRange(s, []byte("dst"), 0, -1)
		require.NoError(t, err)
		require.Equal(t, []string{"x", string(a)}, strs(vs))
	})
}

// A push whose chunks could not all be written fails and leaves the list
// as it was; the sweeper deletes the chunks it wrote.
func TestBigListPushFails(t *testing.T) {
	st := dynastore.NewStats()
	mem := memory.New(memory.Options{Observer: st})
	e := &keysEnv{store: mem, stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()}
	s := e.scope("test", 0)
	_, err := model.ListPush(s, []byte("l"), [][]byte{[]byte("x")}, false, false)
	require.NoError(t, err)
	dying := &scope{Context: s.Context, st: &putsFailing{Store: mem, ok: 2}, db: s.db, now: s.now, proc: s.proc}
	_, err = model.ListPush(dying, []byte("l"), [][]byte{randomBytes(51, 3*bigChunkBytes)}, true, false)
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	vs, err := model.ListRange(s, []byte("l"), 0, -1)
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, strs(vs))
	require.Positive(t, countChunks(t, e))
	sweep, _ := pastGrace(t, e.store, s)
	sweep()
	require.Zero(t, countChunks(t, e))
}
