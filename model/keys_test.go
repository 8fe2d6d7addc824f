package model_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// keysEnv is one store under test: scope makes a scope whose requests
// count under label, ops reads those counts.
type keysEnv struct {
	store dynastore.Store
	stats *dynastore.Stats
	proc  *model.Process
	now   int64
	// exact: the store counts its keys exactly (KeyspaceCounts).
	exact bool
}

func (e *keysEnv) scope(label string, db int) *scope {
	now := &atomic.Int64{}
	now.Store(e.now)
	return &scope{Context: dynastore.WithLabel(context.Background(), label), st: e.store, db: db, now: now, proc: e.proc}
}

// ops returns the requests made under label, by operation.
func (e *keysEnv) ops(label string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range e.stats.Snapshot() {
		if k.Label == label {
			out[k.Op] = v.Requests
		}
	}
	return out
}

// forStores runs body on the memory store, and on a fresh DynamoDB Local
// table when REDAMO_TEST_DYNAMODB_ENDPOINT is set.
func forStores(t *testing.T, body func(t *testing.T, e *keysEnv)) {
	t.Run("memory", func(t *testing.T) {
		st := dynastore.NewStats()
		body(t, &keysEnv{store: memory.New(memory.Options{Observer: st}), stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli(), exact: true})
	})
	if os.Getenv(dynamotest.EnvEndpoint) != "" || os.Getenv(dynamotest.EnvRequire) == "1" {
		t.Run("dynamodb", func(t *testing.T) {
			st := dynastore.NewStats()
			body(t, &keysEnv{store: dynamotest.NewStore(t, dynamo.Config{Observer: st}), stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()})
		})
	}
}

// forAllStores is forStores and the faithful store (AWS's latencies and
// limits, its time compressed).
func forAllStores(t *testing.T, body func(t *testing.T, e *keysEnv)) {
	forStores(t, body)
	t.Run("faithful", func(t *testing.T) {
		st := dynastore.NewStats()
		body(t, &keysEnv{store: faithful.New(faithful.Options{Seed: 1, Scale: 0.05, Observer: st}), stats: st, proc: model.NewProcess(nil), now: time.Now().UnixMilli()})
	})
}

// step is one call into the model: its result (compared with want unless
// want is nil), its error (errors.Is wantErr) and the requests it made.
type step struct {
	name    string
	db      int
	run     func(s model.Scope) (any, error)
	want    any
	wantErr error
	ops     map[string]int64
}

// runSteps runs steps in order on one store, each labelled by its name.
func runSteps(t *testing.T, e *keysEnv, steps []step) {
	t.Helper()
	for _, st := range steps {
		got, err := st.run(e.scope(st.name, st.db))
		if st.wantErr != nil {
			require.ErrorIs(t, err, st.wantErr, st.name)
		} else {
			require.NoError(t, err, st.name)
			if st.want != nil {
				require.Equal(t, st.want, got, st.name)
			}
		}
		if st.ops != nil {
			require.Equal(t, st.ops, e.ops(st.name), "%s: requests", st.name)
		}
	}
}

const (
	get   = dynastore.OpGetItem
	batch = dynastore.OpBatchGetItem
	putOp = dynastore.OpPutItem
	upd   = dynastore.OpUpdateItem
	del   = dynastore.OpDeleteItem
	tx    = dynastore.OpTransactWriteItems
)

// setS sets key to val (a plain SET).
func setS(key, val string) func(model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		r, err := model.SetString(s, []byte(key), []byte(val), model.SetOptions{})
		return r.Written, err
	}
}

// getS is key's value as GET sees it ("<none>" when absent, "<type>" for
// another type).
func getS(key string) func(model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		ks, err := model.ReadKey(s, []byte(key))
		return describe(ks), err
	}
}

// describe is a key state as a test compares it.
func describe(ks model.KeyState) string {
	switch {
	case !ks.Live:
		return "<none>"
	case ks.Type != model.TypeString:
		return "<" + ks.Type + ">"
	}
	v, err := ks.StringValue()
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(v)
}

// ttl is key's deadline relative to the scope's now (-1: none, -2: no key).
func ttl(key string) func(model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		ks, err := model.ReadKey(s, []byte(key))
		switch {
		case !ks.Live:
			return int64(-2), err
		case !ks.HasExpiry:
			return int64(-1), err
		}
		return ks.Expiry - s.NowMS(), err
	}
}

func TestKeyOperations(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		later := e.now + 60_000
		runSteps(t, e, []step{
			{name: "seed a", run: setS("a", "1"), want: true},
			{name: "seed b", run: setS("b", "2"), want: true},
			{name: "seed c", run: setS("c", "3"), want: true},
			{name: "read several", run: func(s model.Scope) (any, error) {
				states, err := model.ReadKeys(s, [][]byte{[]byte("a"), []byte("x"), []byte("a"), make([]byte, model.MaxKeyLen+1)})
				var out []string
				for _, ks := range states {
					out = append(out, describe(ks))
				}
				return out, err
			}, want: []string{"1", "<none>", "1", "<none>"}, ops: map[string]int64{batch: 1}},
			{name: "expire later", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("a"), later, 0)
			}, want: true, ops: map[string]int64{upd: 1}},
			{name: "ttl after expire", run: ttl("a"), want: int64(60_000)},
			{name: "expire NX on a key with expiry", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("a"), later+1, model.ExpireNX)
			}, want: false, ops: map[string]int64{upd: 1}},
			{name: "expire GT earlier", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("a"), later-1, model.ExpireGT)
			}, want: false},
			{name: "expire LT earlier", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("a"), later-1, model.ExpireLT)
			}, want: true},
			{name: "expire of a missing key", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("missing"), later, 0)
			}, want: false, ops: map[string]int64{upd: 1}},
			{name: "expire of an impossible key", run: func(s model.Scope) (any, error) {
				return model.Expire(s, make([]byte, model.MaxKeyLen+1), later, 0)
			}, want: false, ops: map[string]int64{}},
			{name: "persist", run: func(s model.Scope) (any, error) {
				return model.Persist(s, []byte("a"))
			}, want: true, ops: map[string]int64{upd: 1}},
			{name: "persist again", run: func(s model.Scope) (any, error) {
				return model.Persist(s, []byte("a"))
			}, want: false},
			{name: "ttl after persist", run: ttl("a"), want: int64(-1)},
			{name: "expire in the past deletes", run: func(s model.Scope) (any, error) {
				return model.Expire(s, []byte("c"), e.now-1, 0)
			}, want: true, ops: map[string]int64{del: 1}},
			{name: "c is gone", run: getS("c"), want: "<none>"},
			{name: "rename a to d", run: func(s model.Scope) (any, error) {
				return model.MoveKey(s, []byte("a"), s.DB(), []byte("d"), false)
			}, want: model.MoveDone, ops: map[string]int64{batch: 1, tx: 1}},
			{name: "a is gone", run: getS("a"), want: "<none>"},
			{name: "d holds a's value", run: getS("d"), want: "1"},
			{name: "renamenx onto a live key", run: func(s model.Scope) (any, error) {
				return model.MoveKey(s, []byte("d"), s.DB(), []byte("b"), true)
			}, want: model.MoveTargetExists, ops: map[string]int64{batch: 1}},
			{name: "rename of a missing key", run: func(s model.Scope) (any, error) {
				return model.MoveKey(s, []byte("missing"), s.DB(), []byte("b"), false)
			}, want: model.MoveNoSource},
			{name: "move d to db 1", run: func(s model.Scope) (any, error) {
				return model.MoveKey(s, []byte("d"), 1, []byte("d"), true)
			}, want: model.MoveDone},
			{name: "d in db 1", db: 1, run: getS("d"), want: "1"},
			{name: "copy b to e", run: func(s model.Scope) (any, error) {
				return model.CopyKey(s, []byte("b"), s.DB(), []byte("e"), false)
			}, want: true, ops: map[string]int64{batch: 1, tx: 1}},
			{name: "copy onto a live key without replace", run: func(s model.Scope) (any, error) {
				return model.CopyKey(s, []byte("b"), s.DB(), []byte("e"), false)
			}, want: false, ops: map[string]int64{batch: 1}},
			{name: "e holds b's value", run: getS("e"), want: "2"},
			{name: "keys", run: func(s model.Scope) (any, error) {
				var keys []string
				err := model.Keys(s, nil, func(k []byte) { keys = append(keys, string(k)) })
				return len(keys), err
			}, want: 2},
			{name: "count keys", run: func(s model.Scope) (any, error) {
				return model.CountKeys(s)
			}, want: int64(2)},
			{name: "scan to the end", run: func(s model.Scope) (any, error) {
				var keys []string
				var cursor uint64
				for {
					next, ok, err := model.ScanKeys(s, cursor, model.ScanOptions{Count: 1}, func(k []byte) { keys = append(keys, string(k)) })
					if err != nil || !ok {
						return nil, err
					}
					if next == 0 {
						return len(keys), nil
					}
					cursor = next
				}
			}, want: 2},
			{name: "scan of an unknown cursor", run: func(s model.Scope) (any, error) {
				_, ok, err := model.ScanKeys(s, 12345, model.ScanOptions{Count: 10}, func([]byte) {})
				return ok, err
			}, want: false},
			{name: "scan of another type", run: func(s model.Scope) (any, error) {
				n := 0
				_, _, err := model.ScanKeys(s, 0, model.ScanOptions{Count: 1000, Type: model.TypeHash, HasType: true}, func([]byte) { n++ })
				return n, err
			}, want: 0},
			{name: "random key", run: func(s model.Scope) (any, error) {
				k, err := model.RandomKey(s)
				return string(k) == "b" || string(k) == "e", err
			}, want: true},
			{name: "usage of a string", run: func(s model.Scope) (any, error) {
				n, found, err := model.KeyUsage(s, []byte("b"), 5)
				return found && n > 0, err
			}, want: true, ops: map[string]int64{get: 1}},
			{name: "usage of a missing key", run: func(s model.Scope) (any, error) {
				_, found, err := model.KeyUsage(s, []byte("missing"), 5)
				return found, err
			}, want: false},
			{name: "delete one", run: func(s model.Scope) (any, error) {
				return model.DeleteKey(s, []byte("b"))
			}, want: true, ops: map[string]int64{del: 1}},
			{name: "delete one again", run: func(s model.Scope) (any, error) {
				return model.DeleteKey(s, []byte("b"))
			}, want: false, ops: map[string]int64{del: 1}},
			{name: "seed f", run: setS("f", "6"), want: true},
			{name: "delete several", run: func(s model.Scope) (any, error) {
				return model.DeleteKeys(s, [][]byte{[]byte("e"), []byte("f"), []byte("e"), []byte("missing")})
			}, want: int64(2), ops: map[string]int64{batch: 1, tx: 1}},
			{name: "delete several, one live", run: func(s model.Scope) (any, error) {
				return model.DeleteKeys(s, [][]byte{[]byte("d"), []byte("missing")})
			}, want: int64(1), db: 1, ops: map[string]int64{batch: 1, del: 1}},
			{name: "count keys after deletes", run: func(s model.Scope) (any, error) {
				return model.CountKeys(s)
			}, want: int64(0)},
		})
	})
}

func TestFlushAndKeyspaceCounts(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		for db, keys := range [][]string{{"a", "b"}, {"c"}} {
			for _, k := range keys {
				_, err := model.SetString(e.scope("seed", db), []byte(k), []byte("v"), model.SetOptions{})
				require.NoError(t, err)
			}
		}
		ok, err := model.Expire(e.scope("seed", 0), []byte("a"), e.now+60_000, 0)
		require.NoError(t, err)
		require.True(t, ok)
		counts, err := model.KeyspaceCounts(e.scope("count", 0), 16)
		require.NoError(t, err)
		if e.exact {
			require.Equal(t, []model.DBKeys{{DB: 0, Keys: 2, Expires: 1}, {DB: 1, Keys: 1}}, counts)
		}
		require.Zero(t, e.ops("count")[dynastore.OpScan], "INFO keyspace never scans")

		require.NoError(t, model.FlushDB(e.scope("flushdb", 0), 0))
		n, err := model.CountKeys(e.scope("after", 0))
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = model.CountKeys(e.scope("after", 1))
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "FLUSHDB leaves other databases")
		require.NoError(t, model.FlushAll(e.scope("flushall", 0)))
		n, err = model.CountKeys(e.scope("after", 1))
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// TestEditStringRetriesOnConflict: a read-modify-write whose key changes between its
// read and its write decides again on what the failed write found.
func TestEditStringRetriesOnConflict(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		_, err := model.SetString(e.scope("seed", 0), []byte("k"), []byte("a"), model.SetOptions{})
		require.NoError(t, err)
		var seen []string
		out, err := model.EditString(e.scope("edit", 0), []byte("k"), model.OriginEdited, func(old []byte, live bool) ([]byte, error) {
			seen = append(seen, string(old))
			if len(seen) == 1 {
				// Someone else writes between the read and the write.
				_, err := model.SetString(e.scope("other", 0), []byte("k"), []byte("b"), model.SetOptions{})
				require.NoError(t, err)
			}
			return append(old, 'x'), nil
		})
		require.NoError(t, err)
		require.Equal(t, "bx", string(out))
		require.Equal(t, []string{"a", "b"}, seen)
		require.Equal(t, map[string]int64{get: 1, putOp: 2}, e.ops("edit"), "one read; the failed write hands back the item")
	})
}

// TestReads: what several reads saw holds only while none of the keys
// changed; one key read in one request needs no second look.
func TestReads(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		for _, k := range []string{"a", "b"} {
			_, err := model.SetString(e.scope("seed", 0), []byte(k), []byte(k), model.SetOptions{})
			require.NoError(t, err)
		}
		one := model.NewReads()
		require.NoError(t, one.Load(e.scope("load one", 0), [][]byte{[]byte("a"), []byte("a")}))
		require.Equal(t, map[string]int64{get: 1}, e.ops("load one"))
		require.Equal(t, "a", describe(one.State([]byte("a"))))
		require.NoError(t, one.Validate(e.scope("validate one", 0)))
		require.Empty(t, e.ops("validate one"), "one request of one key is one state")

		r := model.NewReads()
		require.NoError(t, r.Load(e.scope("load", 0), [][]byte{[]byte("a"), []byte("b"), make([]byte, model.MaxKeyLen+1)}))
		require.Equal(t, map[string]int64{batch: 1}, e.ops("load"))
		require.NoError(t, r.Load(e.scope("load again", 0), [][]byte{[]byte("b")}))
		require.Empty(t, e.ops("load again"), "b was read")
		require.NoError(t, r.Validate(e.scope("validate", 0)))
		require.Equal(t, map[string]int64{batch: 1}, e.ops("validate"))

		_, err := model.SetString(e.scope("other", 0), []byte("b"), []byte("changed"), model.SetOptions{})
		require.NoError(t, err)
		require.ErrorIs(t, r.Validate(e.scope("validate", 0)), model.ErrConflict)
	})
}
