package model_test

import (
	"math"
	"testing"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// set is a SET with options, giving what it did as "written" or "held",
// and the old value with Get.
func set(key, val string, o model.SetOptions) func(model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		r, err := model.SetString(s, []byte(key), []byte(val), o)
		out := "held"
		if r.Written {
			out = "written"
		}
		if o.Get {
			out += " " + describe(r.Old)
		}
		return out, err
	}
}

func incr(key string, d int64) func(model.Scope) (any, error) {
	return func(s model.Scope) (any, error) { return model.IncrBy(s, []byte(key), d) }
}

func TestStringOperations(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		later := e.now + 60_000
		runSteps(t, e, []step{
			{name: "set", run: set("s", "v1", model.SetOptions{}), want: "written", ops: map[string]int64{putOp: 1}},
			{name: "set nx on a live key", run: set("s", "v2", model.SetOptions{NX: true}), want: "held", ops: map[string]int64{putOp: 1}},
			{name: "set xx on a missing key", run: set("missing", "v", model.SetOptions{XX: true}), want: "held"},
			{name: "set get", run: set("s", "v2", model.SetOptions{Get: true}), want: "written v1", ops: map[string]int64{putOp: 1}},
			{name: "set get of a missing key", run: set("new", "n", model.SetOptions{Get: true}), want: "written <none>"},
			{name: "set nx get on a live key", run: set("s", "v3", model.SetOptions{NX: true, Get: true}), want: "held v2"},
			{name: "set with expiry", run: set("s", "v3", model.SetOptions{ExpireAt: later}), want: "written"},
			{name: "ttl of set", run: ttl("s"), want: int64(60_000)},
			{name: "set keepttl", run: set("s", "v4", model.SetOptions{KeepTTL: true}), want: "written", ops: map[string]int64{upd: 1}},
			{name: "keepttl kept it", run: ttl("s"), want: int64(60_000)},
			{name: "get after keepttl", run: getS("s"), want: "v4", ops: map[string]int64{get: 1}},
			{name: "set of an impossible key", run: set(string(make([]byte, model.MaxKeyLen+1)), "v", model.SetOptions{}), wantErr: model.ErrKeyTooLarge, ops: map[string]int64{}},
			{name: "mset", run: func(s model.Scope) (any, error) {
				return model.SetStrings(s, [][]byte{[]byte("m1"), []byte("m2")}, [][]byte{[]byte("1"), []byte("2")}, false)
			}, want: true, ops: map[string]int64{tx: 1}},
			{name: "msetnx with a live key", run: func(s model.Scope) (any, error) {
				return model.SetStrings(s, [][]byte{[]byte("m2"), []byte("m3")}, [][]byte{[]byte("x"), []byte("x")}, true)
			}, want: false, ops: map[string]int64{tx: 1}},
			{name: "m3 not written", run: getS("m3"), want: "<none>"},
			{name: "msetnx of one key", run: func(s model.Scope) (any, error) {
				return model.SetStrings(s, [][]byte{[]byte("m3")}, [][]byte{[]byte("3")}, true)
			}, want: true, ops: map[string]int64{putOp: 1}},
			{name: "mset past a transaction", run: func(s model.Scope) (any, error) {
				keys := make([][]byte, 101)
				for i := range keys {
					keys[i] = []byte{byte(i)}
				}
				return model.SetStrings(s, keys, keys, false)
			}, wantErr: model.ErrTxTooLarge, ops: map[string]int64{}},
			{name: "getdel", run: func(s model.Scope) (any, error) {
				ks, err := model.GetDel(s, []byte("m1"))
				return describe(ks), err
			}, want: "1", ops: map[string]int64{del: 1}},
			{name: "getdel again", run: func(s model.Scope) (any, error) {
				ks, err := model.GetDel(s, []byte("m1"))
				return describe(ks), err
			}, want: "<none>", ops: map[string]int64{del: 1}},
			{name: "getex sets a deadline", run: func(s model.Scope) (any, error) {
				ks, err := model.GetExpire(s, []byte("m2"), later, false)
				return describe(ks), err
			}, want: "2", ops: map[string]int64{upd: 1}},
			{name: "ttl after getex", run: ttl("m2"), want: int64(60_000)},
			{name: "getex persist", run: func(s model.Scope) (any, error) {
				ks, err := model.GetExpire(s, []byte("m2"), 0, true)
				return describe(ks), err
			}, want: "2", ops: map[string]int64{upd: 1}},
			{name: "ttl after persist", run: ttl("m2"), want: int64(-1)},
			{name: "getex in the past deletes", run: func(s model.Scope) (any, error) {
				ks, err := model.GetExpire(s, []byte("m2"), e.now-1, false)
				return describe(ks), err
			}, want: "2", ops: map[string]int64{del: 1}},
			{name: "m2 gone", run: getS("m2"), want: "<none>"},
			{name: "append to a new key", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("ap"), []byte("ab"), math.MaxInt32)
			}, want: int64(2), ops: map[string]int64{upd: 1}},
			{name: "append to a chunked value", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("ap"), []byte("cd"), math.MaxInt32)
			}, want: int64(4), ops: map[string]int64{upd: 1}},
			{name: "append to a plain value", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("m3"), []byte("4"), math.MaxInt32)
			}, want: int64(2), ops: map[string]int64{upd: 1, putOp: 1}},
			{name: "append past the limit", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("s"), []byte("5"), 2)
			}, wantErr: model.ErrStringTooLong},
			{name: "appended value", run: getS("ap"), want: "abcd"},
			{name: "setrange", run: func(s model.Scope) (any, error) {
				return model.SetRange(s, []byte("ap"), 6, []byte("xy"), math.MaxInt32)
			}, want: int64(8), ops: map[string]int64{get: 1, putOp: 1}},
			{name: "value after setrange", run: getS("ap"), want: "abcd\x00\x00xy"},
			{name: "setrange with nothing to write", run: func(s model.Scope) (any, error) {
				return model.SetRange(s, []byte("ap"), 100, nil, math.MaxInt32)
			}, want: int64(8), ops: map[string]int64{get: 1}},
			{name: "setrange past an item", run: func(s model.Scope) (any, error) {
				return model.SetRange(s, []byte("ap"), 400*1024, []byte("x"), math.MaxInt64)
			}, want: int64(400*1024 + 1)},
			{name: "setrange made a big value", run: func(s model.Scope) (any, error) {
				ks, err := model.ReadKey(s, []byte("ap"))
				if err != nil {
					return nil, err
				}
				return ks.StringRange(400*1024-2, 400*1024+1)
			}, want: []byte("\x00\x00x")},
			{name: "incr of a new key", run: incr("n", 5), want: int64(5), ops: map[string]int64{upd: 1}},
			{name: "incr", run: incr("n", -7), want: int64(-2), ops: map[string]int64{upd: 1}},
			{name: "incr overflow", run: incr("n", math.MinInt64), wantErr: model.ErrOverflow, ops: map[string]int64{upd: 1}},
			{name: "incr of text", run: incr("s", 1), wantErr: model.ErrNotInteger, ops: map[string]int64{upd: 1}},
			{name: "seed an expired counter", run: set("x", "41", model.SetOptions{ExpireAt: e.now - 1}), want: "written"},
			{name: "incr of an expired counter", run: incr("x", 1), want: int64(1), ops: map[string]int64{upd: 1, putOp: 1}},
			{name: "edit", run: func(s model.Scope) (any, error) {
				out, err := model.EditString(s, []byte("n"), model.OriginFloat, func(old []byte, live bool) ([]byte, error) {
					return append([]byte("was "), old...), nil
				})
				return string(out), err
			}, want: "was -2", ops: map[string]int64{get: 1, putOp: 1}},
			{name: "edit of a missing key", run: func(s model.Scope) (any, error) {
				var wasLive bool
				_, err := model.EditString(s, []byte("fresh"), model.OriginFloat, func(old []byte, live bool) ([]byte, error) {
					wasLive = live
					return []byte("1.5"), nil
				})
				return wasLive, err
			}, want: false},
			{name: "fresh value", run: getS("fresh"), want: "1.5"},
		})
	})
}

// TestStringOperationsOnAnotherType: a string operation on a key of
// another type fails with ErrWrongType and leaves it alone, except SET,
// which replaces it.
func TestStringOperationsOnAnotherType(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		// A key item of another type, as a collection writes it.
		setType := func(s model.Scope) (any, error) {
			it := model.StringItem(s.DB(), []byte("h"), []byte("x"), model.OriginArg, 0)
			it.Set(model.AttrType, dynastore.S(model.TypeHash))
			_, err := s.Data().Put(s, it, dynastore.WriteOptions{})
			return nil, err
		}
		runSteps(t, e, []step{
			{name: "seed", run: setType},
			{name: "incr", run: incr("h", 1), wantErr: model.ErrWrongType},
			{name: "append", run: func(s model.Scope) (any, error) {
				return model.Append(s, []byte("h"), []byte("x"), math.MaxInt32)
			}, wantErr: model.ErrWrongType},
			{name: "setrange", run: func(s model.Scope) (any, error) {
				return model.SetRange(s, []byte("h"), 0, []byte("x"), math.MaxInt32)
			}, wantErr: model.ErrWrongType},
			{name: "edit", run: func(s model.Scope) (any, error) {
				return model.EditString(s, []byte("h"), model.OriginArg, func(old []byte, live bool) ([]byte, error) { return old, nil })
			}, wantErr: model.ErrWrongType},
			{name: "getdel", run: func(s model.Scope) (any, error) {
				ks, err := model.GetDel(s, []byte("h"))
				return describe(ks), err
			}, want: "<hash>"},
			{name: "set keepttl get", run: set("h", "v", model.SetOptions{KeepTTL: true, Get: true}), wantErr: model.ErrWrongType},
			{name: "still a hash", run: getS("h"), want: "<hash>"},
			{name: "set get", run: set("h", "v", model.SetOptions{Get: true}), want: "held <hash>"},
			{name: "set keepttl replaces it", run: set("h", "v", model.SetOptions{KeepTTL: true}), want: "written", ops: map[string]int64{upd: 1, putOp: 1}},
			{name: "a string now", run: getS("h"), want: "v"},
		})
	})
}
