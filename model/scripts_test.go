package model_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// counted is a store whose requests are counted, under the label the
// scope's context carries.
type counted struct {
	st    dynastore.Store
	stats *dynastore.Stats
}

// countedStores are the stores of stores(), each observed by a Stats.
func countedStores() map[string]func(t *testing.T) counted {
	return map[string]func(t *testing.T) counted{
		"memory": func(*testing.T) counted {
			s := dynastore.NewStats()
			return counted{memory.New(memory.Options{Observer: s}), s}
		},
		"dynamodb": func(t *testing.T) counted {
			s := dynastore.NewStats()
			return counted{dynamotest.NewStore(t, dynamo.Config{Observer: s}), s}
		},
	}
}

// labeled is a scope over st whose requests count under label.
func labeled(st dynastore.Store, label string) model.Scope {
	return model.StoreScope(dynastore.WithLabel(context.Background(), label), st)
}

// requests are the requests made under label, by operation.
func requests(s *dynastore.Stats, label string) map[string]int64 {
	out := map[string]int64{}
	for k, row := range s.Snapshot() {
		if k.Label == label && row.Requests > 0 {
			out[k.Op] = row.Requests
		}
	}
	return out
}

// TestScriptItems: script bodies are written, read, found and flushed in
// one request each (the flush: a scan and a delete per script), and go to
// the store at once even from inside a unit of work.
func TestScriptItems(t *testing.T) {
	for name, newStore := range countedStores() {
		t.Run(name, func(t *testing.T) {
			cs := newStore(t)
			const a, b = "0000000000000000000000000000000000000001", "0000000000000000000000000000000000000002"

			require.NoError(t, model.PutScript(labeled(cs.st, "put"), a, []byte("return 1")))
			require.Equal(t, map[string]int64{dynastore.OpPutItem: 1}, requests(cs.stats, "put"))
			body, found, err := model.GetScript(labeled(cs.st, "get"), a)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, "return 1", string(body))
			_, found, err = model.GetScript(labeled(cs.st, "get"), b)
			require.NoError(t, err)
			require.False(t, found)
			require.Equal(t, map[string]int64{dynastore.OpGetItem: 2}, requests(cs.stats, "get"))

			// Inside a unit the body is written at once, not with the
			// unit's commit.
			txn := model.NewTxn(cs.st, model.CoveredByKeyItem)
			require.NoError(t, model.PutScript(model.StoreScope(context.Background(), txn), b, []byte("")))
			body, found, err = model.GetScript(newScope(cs.st), b)
			require.NoError(t, err)
			require.True(t, found)
			require.Empty(t, body)

			exist, err := model.ScriptsExist(labeled(cs.st, "exists"), []string{a, "0000000000000000000000000000000000000003", b})
			require.NoError(t, err)
			require.Equal(t, []bool{true, false, true}, exist)
			require.Equal(t, map[string]int64{dynastore.OpBatchGetItem: 1}, requests(cs.stats, "exists"))

			require.NoError(t, model.FlushScripts(newScope(cs.st)))
			exist, err = model.ScriptsExist(newScope(cs.st), []string{a, b})
			require.NoError(t, err)
			require.Equal(t, []bool{false, false}, exist)
		})
	}
}

// TestLibrariesItem: the libraries change in one write conditioned on the
// version read; a write from an older read is ErrConflict and changes
// nothing.
func TestLibrariesItem(t *testing.T) {
	for name, newStore := range countedStores() {
		t.Run(name, func(t *testing.T) {
			cs := newStore(t)
			c := newScope(cs.st)
			none, err := model.ReadLibraries(c)
			require.NoError(t, err)
			require.Empty(t, none.Ver)
			require.Empty(t, none.Code)

			require.NoError(t, model.WriteLibraries(labeled(cs.st, "write"), "", map[string][]byte{"a": []byte("code a")}))
			require.Equal(t, map[string]int64{dynastore.OpPutItem: 1}, requests(cs.stats, "write"))
			one, err := model.ReadLibraries(c)
			require.NoError(t, err)
			require.NotEmpty(t, one.Ver)
			require.Equal(t, map[string][]byte{"a": []byte("code a")}, one.Code)

			require.ErrorIs(t, model.WriteLibraries(c, "", map[string][]byte{"b": []byte("b")}), model.ErrConflict)
			require.NoError(t, model.WriteLibraries(c, one.Ver, map[string][]byte{"a": []byte("a2"), "b": []byte("b")}))
			require.ErrorIs(t, model.WriteLibraries(c, one.Ver, nil), model.ErrConflict)
			two, err := model.ReadLibraries(c)
			require.NoError(t, err)
			require.Equal(t, map[string][]byte{"a": []byte("a2"), "b": []byte("b")}, two.Code)

			// No libraries left: the item goes.
			require.NoError(t, model.WriteLibraries(c, two.Ver, map[string][]byte{}))
			gone, err := model.ReadLibraries(c)
			require.NoError(t, err)
			require.Empty(t, gone.Ver)

			require.NoError(t, model.WriteLibraries(c, "", map[string][]byte{"a": []byte("a")}))
			require.NoError(t, model.FlushLibraries(c))
			gone, err = model.ReadLibraries(c)
			require.NoError(t, err)
			require.Empty(t, gone.Code)
		})
	}
}

// TestCompareAndAct: each compare-and-act write is one request; when it is
// refused the item it found decides the outcome, and what only the script
// can decide (another type, an expiry it would refuse) is left to it,
// with nothing written.
func TestCompareAndAct(t *testing.T) {
	putString := func(t *testing.T, st dynastore.Store, key, val string) {
		_, err := st.Put(context.Background(), model.StringItem(0, []byte(key), []byte(val), model.OriginArg, 0), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	cases := []struct {
		name  string
		setup string // the key's string value; "" for no key
		hash  bool   // the key is a hash instead (holding field "tok")
		act   model.CASAct
		token string
		ms    int64
		want  model.CASOutcome
		// reqs are the requests the act made; after: the key's string
		// value after ("" when the key is gone or not a string).
		reqs  map[string]int64
		after string
	}{
		{"delete mine", "tok", false, model.CASDelete, "tok", 0, model.CASDone, map[string]int64{dynastore.OpDeleteItem: 1}, ""},
		{"delete other", "x", false, model.CASDelete, "tok", 0, model.CASOther, map[string]int64{dynastore.OpDeleteItem: 1}, "x"},
		{"delete missing", "", false, model.CASDelete, "tok", 0, model.CASMissing, map[string]int64{dynastore.OpDeleteItem: 1}, ""},
		{"delete a hash", "", true, model.CASDelete, "tok", 0, model.CASUndecided, map[string]int64{dynastore.OpDeleteItem: 1}, ""},
		{"pexpire mine", "tok", false, model.CASPExpire, "tok", 1000, model.CASDone, map[string]int64{dynastore.OpUpdateItem: 1}, "tok"},
		{"pexpire refused ttl", "tok", false, model.CASPExpire, "tok", 0, model.CASUndecided, map[string]int64{}, "tok"},
		{"set px mine", "tok", false, model.CASSetPX, "tok", 1000, model.CASDone, map[string]int64{dynastore.OpPutItem: 1}, "tok"},
		{"set px other", "x", false, model.CASSetPX, "tok", 1000, model.CASOther, map[string]int64{dynastore.OpPutItem: 1}, "x"},
		{"set nx px free", "", false, model.CASSetNXPX, "tok", 1000, model.CASDone, map[string]int64{dynastore.OpPutItem: 1}, "tok"},
		{"set nx px taken", "x", false, model.CASSetNXPX, "tok", 1000, model.CASOther, map[string]int64{dynastore.OpPutItem: 1}, "x"},
		{"hash pexpire field", "", true, model.CASHashPExpire, "tok", 1000, model.CASDone, map[string]int64{dynastore.OpUpdateItem: 1}, ""},
		{"hash pexpire no field", "", true, model.CASHashPExpire, "nope", 1000, model.CASMissing, map[string]int64{dynastore.OpUpdateItem: 1}, ""},
		{"hash pexpire a string", "tok", false, model.CASHashPExpire, "tok", 1000, model.CASUndecided, map[string]int64{dynastore.OpUpdateItem: 1}, "tok"},
	}
	for name, newStore := range countedStores() {
		t.Run(name, func(t *testing.T) {
			cs := newStore(t)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					key := []byte("k:" + tc.name)
					switch {
					case tc.setup != "":
						putString(t, cs.st, string(key), tc.setup)
					case tc.hash:
						out, _, err := model.HashLock(newScope(cs.st), model.InlineLimits{Entries: 128, Bytes: 64}, key, []byte("tok"), 60000)
						require.NoError(t, err)
						require.Equal(t, model.CASDone, out)
					}
					label := "cas " + tc.name
					out, err := model.CompareAndAct(labeled(cs.st, label), tc.act, key, []byte(tc.token), tc.ms)
					require.NoError(t, err)
					require.Equal(t, tc.want, out)
					require.Equal(t, tc.reqs, requests(cs.stats, label))
					it, err := cs.st.Get(context.Background(), model.ItemKey(0, key))
					require.NoError(t, err)
					ks, err := model.DecodeKey(it, time.Now().UnixMilli())
					require.NoError(t, err)
					if ks.Live && ks.Type == model.TypeString {
						v, err := ks.StringValue()
						require.NoError(t, err)
						require.Equal(t, tc.after, string(v))
						require.Equal(t, tc.ms > 0 && tc.want == model.CASDone, ks.HasExpiry)
					} else {
						require.Empty(t, tc.after)
					}
				})
			}
		})
	}
}

// TestHashLockUnlock: Redisson's acquire is one request, taken again by
// its holder (the count goes up) and refused to another with the
// holder's PTTL; its release is one request for the last count, two
// (a refused delete, a decrement) otherwise.
func TestHashLockUnlock(t *testing.T) {
	lim := model.InlineLimits{Entries: 128, Bytes: 64}
	for name, newStore := range countedStores() {
		t.Run(name, func(t *testing.T) {
			cs := newStore(t)
			key, me, other := []byte("lock"), []byte("me"), []byte("other")
			lock := func(who []byte) (model.CASOutcome, int64) {
				out, pttl, err := model.HashLock(labeled(cs.st, "lock"), lim, key, who, 30000)
				require.NoError(t, err)
				return out, pttl
			}
			out, _ := lock(me)
			require.Equal(t, model.CASDone, out)
			out, _ = lock(me)
			require.Equal(t, model.CASDone, out)
			out, pttl := lock(other)
			require.Equal(t, model.CASOther, out)
			require.InDelta(t, 30000, pttl, 5000)
			require.Equal(t, map[string]int64{dynastore.OpUpdateItem: 3}, requests(cs.stats, "lock"))

			unlock := func(who []byte, label string) model.CASOutcome {
				out, err := model.HashUnlock(labeled(cs.st, label), key, who, 30000)
				require.NoError(t, err)
				return out
			}
			require.Equal(t, model.CASMissing, unlock(other, "unlock other"))
			require.Equal(t, map[string]int64{dynastore.OpDeleteItem: 1}, requests(cs.stats, "unlock other"))
			require.Equal(t, model.CASKept, unlock(me, "unlock kept"))
			require.Equal(t, map[string]int64{dynastore.OpDeleteItem: 1, dynastore.OpUpdateItem: 1}, requests(cs.stats, "unlock kept"))
			require.Equal(t, model.CASDone, unlock(me, "unlock last"))
			require.Equal(t, map[string]int64{dynastore.OpDeleteItem: 1}, requests(cs.stats, "unlock last"))
			it, err := cs.st.Get(context.Background(), model.ItemKey(0, key))
			require.NoError(t, err)
			require.Nil(t, it)

			// A key of another type is the script's to decide.
			_, err = cs.st.Put(context.Background(), model.StringItem(0, key, []byte("v"), model.OriginArg, 0), dynastore.WriteOptions{})
			require.NoError(t, err)
			out, _ = lock(me)
			require.Equal(t, model.CASUndecided, out)
			require.Equal(t, model.CASUndecided, unlock(me, "unlock string"))
		})
	}
}
