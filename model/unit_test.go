package model_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

func keyItem(k string) dynastore.Key           { return model.ItemKey(0, []byte(k)) }
func keyValue(k, ver, v string) dynastore.Item { return withKey(item("", "", ver, v), keyItem(k)) }
func withKey(it dynastore.Item, k dynastore.Key) dynastore.Item {
	it.Set(dynastore.AttrPK, dynastore.B(k.PK))
	it.Set(dynastore.AttrSK, dynastore.B(k.SK))
	it.Set(model.AttrType, dynastore.S(model.TypeString))
	return it
}

// stores are the stores the model's tests run on: the memory store, and
// DynamoDB Local when REDAMO_TEST_DYNAMODB_ENDPOINT is set.
func stores() map[string]func(t *testing.T) dynastore.Store {
	return map[string]func(t *testing.T) dynastore.Store{
		"memory": func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) },
		"dynamodb": func(t *testing.T) dynastore.Store {
			return dynamotest.NewStore(t, dynamo.Config{})
		},
	}
}

// TestUnitRun checks the runner: one commit of what the work wrote, a
// re-run after a lost race (a conflicting writer, a canceled transaction
// whose reasons say so), and no re-run after a throttled transaction, a
// watched key's change or the work's own error.
func TestUnitRun(t *testing.T) {
	canceled := func(codes ...string) error {
		tc := &dynastore.TxCanceledError{}
		for _, c := range codes {
			tc.Reasons = append(tc.Reasons, dynastore.TxReason{Code: c})
		}
		return tc
	}
	errWork := errors.New("the work's own error")
	cases := []struct {
		name string
		// before is what the store holds before the unit (keys a and b).
		before []dynastore.Item
		// watch: the unit watches a as it is before.
		watch bool
		// fail is injected into the unit's first TransactWriteItems.
		fail error
		// meanwhile runs once, in the first attempt after its work: another
		// writer.
		meanwhile func(t *testing.T, st dynastore.Store)
		workErr   error
		wantErr   error
		// notErr must not match the error (a throttle is no conflict).
		notErr       error
		wantAttempts int
		wantA        string
		wantWritten  []string
	}{
		{
			name:         "commits both writes at once",
			before:       []dynastore.Item{keyValue("a", "v1", "1")},
			wantAttempts: 1,
			wantA:        "2",
			wantWritten:  []string{"a", "b"},
		},
		{
			name:   "a writer in between makes it run again",
			before: []dynastore.Item{keyValue("a", "v1", "1")},
			meanwhile: func(t *testing.T, st dynastore.Store) {
				put(t, st, keyValue("a", "v9", "10"))
			},
			wantAttempts: 2,
			wantA:        "11",
			wantWritten:  []string{"a", "b"},
		},
		{
			name:         "a transaction canceled by a failed condition runs it again",
			before:       []dynastore.Item{keyValue("a", "v1", "1")},
			fail:         canceled(dynastore.ReasonNone, dynastore.ReasonConditionalFailed),
			wantAttempts: 2,
			wantA:        "2",
			wantWritten:  []string{"a", "b"},
		},
		{
			name:         "a transaction canceled by a conflict runs it again",
			before:       []dynastore.Item{keyValue("a", "v1", "1")},
			fail:         canceled(dynastore.ReasonConflict, dynastore.ReasonNone),
			wantAttempts: 2,
			wantA:        "2",
			wantWritten:  []string{"a", "b"},
		},
		{
			name:         "a throttled transaction is no conflict",
			before:       []dynastore.Item{keyValue("a", "v1", "1")},
			fail:         canceled(dynastore.ReasonThrottled, dynastore.ReasonConflict),
			wantErr:      dynastore.ErrThrottled,
			notErr:       model.ErrConflict,
			wantAttempts: 1,
			wantA:        "1",
		},
		{
			name:   "a watched key's change refuses the commit",
			before: []dynastore.Item{keyValue("a", "v1", "1")},
			watch:  true,
			meanwhile: func(t *testing.T, st dynastore.Store) {
				put(t, st, keyValue("a", "v9", "10"))
			},
			wantErr:      model.ErrWatched,
			wantAttempts: 1,
			wantA:        "10",
		},
		{
			name:         "the work's error ends it uncommitted",
			before:       []dynastore.Item{keyValue("a", "v1", "1")},
			workErr:      errWork,
			wantErr:      errWork,
			wantAttempts: 1,
			wantA:        "1",
		},
	}
	for sname, newStore := range stores() {
		t.Run(sname, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					base := newStore(t)
					for _, it := range tc.before {
						put(t, base, it)
					}
					st := faults.New(base, 1)
					if tc.fail != nil {
						st.FailNext(dynastore.OpTransactWriteItems, 1, tc.fail)
					}
					c := newScope(st)
					u := model.Unit{Keys: [][]byte{[]byte("a"), []byte("b")}}
					if tc.watch {
						ws, err := model.Watch(c, 0, [][]byte{[]byte("a")})
						require.NoError(t, err)
						u.Watched = ws
					}
					attempts, lost := 0, 0
					u.Work = func(txn *model.Txn) error {
						attempts++
						// a += 1; b = a, in one unit.
						it, err := txn.Get(c, keyItem("a"))
						require.NoError(t, err)
						n := string(it.Get("v").(dynastore.S))
						next := map[string]string{"1": "2", "10": "11"}[n]
						put(t, txn, keyValue("a", "v-"+next, next))
						put(t, txn, keyValue("b", "v-"+next, next))
						if tc.meanwhile != nil && attempts == 1 {
							tc.meanwhile(t, base)
						}
						return tc.workErr
					}
					u.Lost = func() { lost++ }
					txn, err := u.Run(c)
					if tc.wantErr != nil {
						require.ErrorIs(t, err, tc.wantErr)
						require.Nil(t, txn)
					} else {
						require.NoError(t, err)
						var written []string
						txn.WrittenKeys(func(db int, key []byte) { written = append(written, string(key)) })
						require.Equal(t, tc.wantWritten, written)
						require.Equal(t, tc.wantA, value(t, base, keyItem("b")), "b is written with a")
					}
					if tc.notErr != nil {
						require.NotErrorIs(t, err, tc.notErr)
					}
					require.Equal(t, tc.wantAttempts, attempts)
					require.Equal(t, tc.wantAttempts-1, lost, "Lost is told of every lost race")
					require.Equal(t, tc.wantA, value(t, base, keyItem("a")))
				})
			}
		})
	}
}

// TestUnitReadOnly checks that a unit that only reads its keys reads them
// in one request and commits nothing.
func TestUnitReadOnly(t *testing.T) {
	st := newCounting()
	c := newScope(st)
	put(t, st.Store, keyValue("a", "v1", "1"))
	put(t, st.Store, keyValue("b", "v1", "2"))
	u := model.Unit{Keys: [][]byte{[]byte("a"), []byte("b")}, ReadOnly: true}
	var got []string
	u.Work = func(txn *model.Txn) error {
		got = []string{value(t, txn, keyItem("a")), value(t, txn, keyItem("b"))}
		return nil
	}
	_, err := u.Run(c)
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2"}, got)
	require.Equal(t, map[string]int{dynastore.OpTransactGetItems: 1}, st.take())
}

// TestRefused checks how a refused write's error reads for a unit of work.
func TestRefused(t *testing.T) {
	reasons := func(codes ...string) *dynastore.TxCanceledError {
		tc := &dynastore.TxCanceledError{}
		for _, c := range codes {
			tc.Reasons = append(tc.Reasons, dynastore.TxReason{Code: c})
		}
		return tc
	}
	watchedFirst := func(i int) bool { return i == 0 }
	other := errors.New("something else")
	cases := []struct {
		name    string
		err     error
		watched func(int) bool
		want    error
	}{
		{"nil", nil, nil, nil},
		{"a single write's failed condition", &dynastore.ConditionFailedError{}, nil, model.ErrConflict},
		{"a watched single write's failed condition", &dynastore.ConditionFailedError{}, watchedFirst, model.ErrWatched},
		{"a failed condition in a transaction", reasons(dynastore.ReasonNone, dynastore.ReasonConditionalFailed), watchedFirst, model.ErrConflict},
		{"a watched failed condition", reasons(dynastore.ReasonConditionalFailed, dynastore.ReasonNone), watchedFirst, model.ErrWatched},
		{"a conflict", reasons(dynastore.ReasonConflict, dynastore.ReasonNone), nil, model.ErrConflict},
		{"a conflict the store gave up on", fmtWrap(reasons(dynastore.ReasonConflict)), nil, model.ErrConflict},
		{"throttled", reasons(dynastore.ReasonThrottled, dynastore.ReasonConflict), nil, dynastore.ErrThrottled},
		{"a validation error", reasons(dynastore.ReasonValidation), nil, dynastore.ErrTxCanceled},
		{"an unknown outcome", errors.Join(dynastore.ErrOutcomeUnknown, dynastore.ErrTxConflict), nil, dynastore.ErrOutcomeUnknown},
		{"anything else", other, nil, other},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := model.Refused(tc.err, tc.watched)
			if tc.want == nil {
				require.NoError(t, got)
				return
			}
			require.ErrorIs(t, got, tc.want)
			if tc.want != model.ErrConflict {
				require.NotErrorIs(t, got, model.ErrConflict)
			}
		})
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("after 6 attempts"), err) }

// TestConditionsFailed checks the reading of a write refused by its
// conditions: which actions' conditions failed, the items they found, and
// whether nothing else refused it.
func TestConditionsFailed(t *testing.T) {
	found := keyValue("a", "v1", "1")
	tx := func(rs ...dynastore.TxReason) error { return &dynastore.TxCanceledError{Reasons: rs} }
	none := dynastore.TxReason{Code: dynastore.ReasonNone}
	failed := dynastore.TxReason{Code: dynastore.ReasonConditionalFailed, Old: found}
	cases := []struct {
		name    string
		err     error
		ok      bool
		actions int
		failed  []int // the actions whose conditions failed
		only    bool
	}{
		{name: "nil", err: nil},
		{name: "a single write", err: &dynastore.ConditionFailedError{Old: found}, ok: true, actions: 1, failed: []int{0}, only: true},
		{name: "one action of a transaction", err: tx(none, failed), ok: true, actions: 2, failed: []int{1}, only: true},
		{name: "with another reason", err: tx(failed, dynastore.TxReason{Code: dynastore.ReasonValidation}), ok: true, actions: 2, failed: []int{0}},
		{name: "with a conflict: a lost race", err: tx(failed, dynastore.TxReason{Code: dynastore.ReasonConflict})},
		{name: "throttled", err: tx(none, dynastore.TxReason{Code: dynastore.ReasonThrottled})},
		{name: "anything else", err: dynastore.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := model.ConditionsFailed(tc.err)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			require.Equal(t, tc.actions, r.Actions())
			var got []int
			for i := range r.Actions() {
				if old, f := r.Failed(i); f {
					got = append(got, i)
					require.Equal(t, found, old, "the item action %d found", i)
				}
			}
			require.Equal(t, tc.failed, got)
			require.Equal(t, tc.only, r.Only())
		})
	}
}
