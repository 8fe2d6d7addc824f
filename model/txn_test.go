package model_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// counting is a store that counts its requests by operation.
type counting struct {
	dynastore.Store
	mu sync.Mutex
	n  map[string]int
	// snapshotErr, when set, is every GetSnapshot's answer.
	snapshotErr error
}

func newCounting() *counting {
	return &counting{Store: memory.New(memory.Options{}), n: map[string]int{}}
}

func (c *counting) count(op string) {
	c.mu.Lock()
	c.n[op]++
	c.mu.Unlock()
}

func (c *counting) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

func (c *counting) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	c.count(dynastore.OpGetItem)
	return c.Store.Get(ctx, k)
}

func (c *counting) BatchGet(ctx context.Context, ks []dynastore.Key) ([]dynastore.Item, error) {
	c.count(dynastore.OpBatchGetItem)
	return c.Store.BatchGet(ctx, ks)
}

func (c *counting) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	c.count(dynastore.OpPutItem)
	return c.Store.Put(ctx, it, o)
}

func (c *counting) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	c.count(dynastore.OpUpdateItem)
	return c.Store.Update(ctx, k, u, o)
}

func (c *counting) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	c.count(dynastore.OpDeleteItem)
	return c.Store.Delete(ctx, k, o)
}

func (c *counting) Transact(ctx context.Context, a []dynastore.TxAction) error {
	c.count(dynastore.OpTransactWriteItems)
	return c.Store.Transact(ctx, a)
}

func (c *counting) GetSnapshot(ctx context.Context, ks []dynastore.Key) ([]dynastore.Item, error) {
	c.count(dynastore.OpTransactGetItems)
	if c.snapshotErr != nil {
		return nil, c.snapshotErr
	}
	return c.Store.(dynastore.SnapshotReader).GetSnapshot(ctx, ks)
}

func (c *counting) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	c.count(dynastore.OpQuery)
	return c.Store.Query(ctx, q)
}

func key(pk, sk string) dynastore.Key { return dynastore.Key{PK: []byte(pk), SK: []byte(sk)} }

// item builds an item at pk/sk with a version and a value.
func item(pk, sk, ver, v string) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(pk)},
		{Name: dynastore.AttrSK, Value: dynastore.B(sk)},
		{Name: "v", Value: dynastore.S(v)},
	}
	if ver != "" {
		it = append(it, dynastore.Attr{Name: model.AttrVer, Value: dynastore.S(ver)})
	}
	return it
}

func value(t *testing.T, st dynastore.Store, k dynastore.Key) string {
	t.Helper()
	it, err := st.Get(context.Background(), k)
	require.NoError(t, err)
	if it == nil {
		return "<none>"
	}
	return string(it.Get("v").(dynastore.S))
}

func put(t *testing.T, st dynastore.Store, it dynastore.Item) {
	t.Helper()
	_, err := st.Put(context.Background(), it, dynastore.WriteOptions{})
	require.NoError(t, err)
}

// TestTxnCommit checks what a run sees, what its commit sends, and which
// outcome a write by someone else between the two gives.
func TestTxnCommit(t *testing.T) {
	ctx := context.Background()
	a, b := key("a", "0"), key("b", "0")
	cases := []struct {
		name string
		// run reads and writes through the Txn.
		run func(t *testing.T, txn *model.Txn)
		// meanwhile, when set, is another writer's change before Commit.
		meanwhile func(t *testing.T, st dynastore.Store)
		watchA    bool
		// snapshotErr is the store's answer to every GetSnapshot.
		snapshotErr error
		wantErr     error
		wantOps     map[string]int // the commit's requests
		wantA       string         // a's value after the commit
	}{
		{
			name: "one blind write is one put",
			run: func(t *testing.T, txn *model.Txn) {
				put(t, txn, item("a", "0", "v2", "new"))
			},
			wantOps: map[string]int{dynastore.OpPutItem: 1},
			wantA:   "new",
		},
		{
			name: "read then write is one conditional put",
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a))
				put(t, txn, item("a", "0", "v2", "new"))
				require.Equal(t, "new", value(t, txn, a), "a read sees the Txn's own write")
			},
			wantOps: map[string]int{dynastore.OpPutItem: 1},
			wantA:   "new",
		},
		{
			name: "a conflicting writer makes the commit fail, writing nothing",
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a))
				put(t, txn, item("a", "0", "v2", "new"))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("a", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpPutItem: 1},
			wantA:     "theirs",
		},
		{
			name: "two items are one transaction; a read-only item is checked",
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a))
				require.Equal(t, "<none>", value(t, txn, b))
				put(t, txn, item("b", "0", "v2", "copy"))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("a", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpTransactWriteItems: 1},
			wantA:     "theirs",
		},
		{
			name: "one read needs no commit",
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a))
			},
			wantOps: map[string]int{},
			wantA:   "old",
		},
		{
			name: "several reads are validated by one batch read",
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a))
				require.Equal(t, "<none>", value(t, txn, b))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("b", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "old",
		},
		{
			name: "reads from one snapshot need no second reading",
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadSnapshot(ctx, []dynastore.Key{a, b}))
				require.Equal(t, "old", value(t, txn, a))
				require.Equal(t, "<none>", value(t, txn, b))
			},
			// The run's replies are the state at the snapshot: a later
			// write orders after it.
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("b", "0", "v9", "theirs")) },
			wantOps:   map[string]int{},
			wantA:     "old",
		},
		{
			name: "a snapshot canceled by writes in flight falls back to reads the commit checks",
			snapshotErr: fmt.Errorf("retries ran out: %w", &dynastore.TxCanceledError{Reasons: []dynastore.TxReason{
				{Code: dynastore.ReasonConflict}, {Code: dynastore.ReasonNone}}}),
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadSnapshot(ctx, []dynastore.Key{a, b}))
				require.Equal(t, "old", value(t, txn, a))
				require.Equal(t, "<none>", value(t, txn, b))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("b", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "old",
		},
		{
			name: "the item read alone after the others needs no check",
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadAround(ctx, []dynastore.Key{a, b}, a))
				require.Equal(t, "old", value(t, txn, a))
				require.Equal(t, "<none>", value(t, txn, b))
			},
			// a changed after its reading, which orders the run before
			// that write: b alone is checked.
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("a", "0", "v9", "theirs")) },
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "theirs",
		},
		{
			name: "an item read before the one read alone is checked",
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadAround(ctx, []dynastore.Key{a, b}, a))
				require.Equal(t, "old", value(t, txn, a))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("b", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "old",
		},
		{
			name: "a read after the one read alone brings its check back",
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadAround(ctx, []dynastore.Key{a, b}, a))
				require.Equal(t, "<none>", value(t, txn, key("c", "0")))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("a", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "theirs",
		},
		{
			name: "a read after the snapshot brings the check back",
			run: func(t *testing.T, txn *model.Txn) {
				require.NoError(t, txn.LoadSnapshot(ctx, []dynastore.Key{a, b}))
				require.Equal(t, "<none>", value(t, txn, key("c", "0")))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("b", "0", "v9", "theirs")) },
			wantErr:   model.ErrConflict,
			wantOps:   map[string]int{dynastore.OpBatchGetItem: 1},
			wantA:     "old",
		},
		{
			name:   "a changed watched item refuses the commit",
			watchA: true,
			run: func(t *testing.T, txn *model.Txn) {
				put(t, txn, item("b", "0", "v2", "x"))
			},
			meanwhile: func(t *testing.T, st dynastore.Store) { put(t, st, item("a", "0", "v9", "theirs")) },
			wantErr:   model.ErrWatched,
			wantOps:   map[string]int{dynastore.OpTransactWriteItems: 1},
			wantA:     "theirs",
		},
		{
			name:   "an unchanged watched item lets it through",
			watchA: true,
			run: func(t *testing.T, txn *model.Txn) {
				require.Equal(t, "old", value(t, txn, a), "the Txn reads the watched item as watched")
				put(t, txn, item("a", "0", "v2", "new"))
			},
			wantOps: map[string]int{dynastore.OpPutItem: 1},
			wantA:   "new",
		},
		{
			name: "a delete of a read item",
			run: func(t *testing.T, txn *model.Txn) {
				_, err := txn.Delete(ctx, a, dynastore.WriteOptions{Cond: dynastore.Exists{Attr: dynastore.AttrPK}})
				require.NoError(t, err)
				require.Equal(t, "<none>", value(t, txn, a))
			},
			wantOps: map[string]int{dynastore.OpDeleteItem: 1},
			wantA:   "<none>",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newCounting()
			st.snapshotErr = tc.snapshotErr
			put(t, st, item("a", "0", "v1", "old"))
			txn := model.NewTxn(st, nil)
			if tc.watchA {
				seen, err := st.Get(ctx, a)
				require.NoError(t, err)
				txn.Watch(a, seen, dynastore.Compare{Attr: model.AttrVer, Op: dynastore.OpEQ, Val: dynastore.S("v1")})
			}
			tc.run(t, txn)
			st.take()
			require.Equal(t, "old", value(t, st, a), "nothing reaches the store before the commit")
			if tc.meanwhile != nil {
				tc.meanwhile(t, st)
			}
			st.take()
			err := txn.Commit(ctx)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantOps, st.take())
			require.Equal(t, tc.wantA, value(t, st, a))
		})
	}
}

// TestTxnConditions checks single writes and transactions against the
// Txn's own view, as a store would check them.
func TestTxnConditions(t *testing.T) {
	ctx := context.Background()
	st := newCounting()
	put(t, st, item("a", "0", "v1", "old"))
	txn := model.NewTxn(st, nil)
	absent := dynastore.NotExists{Attr: dynastore.AttrPK}

	_, err := txn.Put(ctx, item("a", "0", "v2", "x"), dynastore.WriteOptions{Cond: absent, OldOnFailure: true})
	var cf *dynastore.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	require.Equal(t, "old", string(cf.Old.Get("v").(dynastore.S)))

	err = txn.Transact(ctx, []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: item("b", "0", "v1", "b"), Cond: absent},
		{Op: dynastore.TxCheck, Key: key("a", "0"), Cond: absent},
	})
	var tc *dynastore.TxCanceledError
	require.ErrorAs(t, err, &tc)
	require.Equal(t, []string{dynastore.ReasonNone, dynastore.ReasonConditionalFailed}, []string{tc.Reasons[0].Code, tc.Reasons[1].Code})
	require.Equal(t, "<none>", value(t, txn, key("b", "0")), "a canceled transaction applies nothing")

	old, err := txn.Update(ctx, key("a", "0"), dynastore.Update{Set: []dynastore.SetAction{{Attr: "v", Val: dynastore.S("upd")}}},
		dynastore.WriteOptions{Cond: dynastore.Exists{Attr: dynastore.AttrPK}, Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	require.Equal(t, "old", string(old.Get("v").(dynastore.S)))
	require.Equal(t, "upd", value(t, txn, key("a", "0")))
	require.NoError(t, txn.Commit(ctx))
	require.Equal(t, "upd", value(t, st, key("a", "0")))
}

// TestTxnQueryOverlay checks that a query sees the Txn's writes to the
// partition, in order, and pages as the store would.
func TestTxnQueryOverlay(t *testing.T) {
	ctx := context.Background()
	st := newCounting()
	for _, sk := range []string{"b", "d", "f"} {
		put(t, st, item("p", sk, "", sk))
	}
	txn := model.NewTxn(st, nil)
	put(t, txn, item("p", "c", "", "c"))
	put(t, txn, item("p", "g", "", "g"))
	_, err := txn.Delete(ctx, key("p", "d"), dynastore.WriteOptions{})
	require.NoError(t, err)

	sks := func(q dynastore.Query) (out []string) {
		for {
			page, err := txn.Query(ctx, q)
			require.NoError(t, err)
			for _, it := range page.Items {
				out = append(out, string(it.Key().SK))
			}
			if page.Next == nil {
				return out
			}
			q.After = page.Next
		}
	}
	require.Equal(t, []string{"b", "c", "f", "g"}, sks(dynastore.Query{PK: []byte("p")}))
	require.Equal(t, []string{"g", "f", "c", "b"}, sks(dynastore.Query{PK: []byte("p"), Reverse: true}))
	require.Equal(t, []string{"b", "c", "f", "g"}, sks(dynastore.Query{PK: []byte("p"), Limit: 1}))
	require.Equal(t, []string{"c", "f"}, sks(dynastore.Query{PK: []byte("p"), Op: dynastore.SKBetween, A: []byte("c"), B: []byte("f")}))
	require.Equal(t, "d", value(t, st, key("p", "d")), "the store is untouched before the commit")
}

// TestTxnHint checks that hinted items cost nothing until something is
// read, and are then read along with it in one request.
func TestTxnHint(t *testing.T) {
	ctx := context.Background()
	a, b, c := key("a", "0"), key("b", "0"), key("c", "0")
	st := newCounting()
	put(t, st, item("a", "0", "v1", "old"))
	put(t, st, item("b", "0", "v1", "old"))
	st.take()

	txn := model.NewTxn(st, nil)
	txn.Hint([]dynastore.Key{a, b, c})
	put(t, txn, item("c", "0", "v2", "new"))
	require.Empty(t, st.take(), "a blind write reads nothing")
	require.Equal(t, "old", value(t, txn, a))
	require.Equal(t, map[string]int{dynastore.OpBatchGetItem: 1}, st.take(), "the first read brings every hinted item not known yet")
	require.Equal(t, "old", value(t, txn, b))
	require.Equal(t, "<none>", value(t, txn, key("d", "0")))
	require.Equal(t, map[string]int{dynastore.OpGetItem: 1}, st.take(), "hinted items are read once; others alone")
	require.NoError(t, txn.Commit(ctx))
	require.Equal(t, "new", value(t, st, c))
}

// TestTxnReadError checks that a run whose read failed cannot commit.
func TestTxnReadError(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(memory.Options{})
	txn := model.NewTxn(mem, nil)
	boom := errors.New("boom")
	mem.FailNext(dynastore.OpGetItem, boom)
	_, err := txn.Get(ctx, key("a", "0"))
	require.ErrorIs(t, err, boom)
	put(t, txn, item("b", "0", "v1", "x"))
	require.ErrorIs(t, txn.Commit(ctx), boom)
	require.Equal(t, "<none>", value(t, mem, key("b", "0")))
}

// TestRetry checks the retry policy: lost races are retried until the
// budget is spent, and a pause ends with the context.
func TestRetry(t *testing.T) {
	defer model.SetRetryBudget(model.SetRetryBudget(50 * time.Millisecond))
	ctx := context.Background()
	var r model.Retry
	start := time.Now()
	require.NoError(t, r.Lost(ctx))
	lost := 1
	var err error
	for err == nil {
		err = r.Lost(ctx)
		lost++
	}
	require.ErrorIs(t, err, model.ErrGaveUp)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "gave up before the budget was spent")
	require.Greater(t, lost, 2)
	require.ErrorIs(t, model.ErrGaveUp, dynastore.ErrTxConflict)
	require.False(t, model.Retryable(model.ErrGaveUp))
	require.True(t, model.Retryable(model.ErrConflict))

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	var r2 model.Retry
	require.NoError(t, r2.Lost(canceled))
	require.ErrorIs(t, r2.Lost(canceled), context.Canceled, "a pause ends with the context")
}

// TestTxnRequire: a watched requirement holds on the item as it is before
// the commit (ErrWatched when it does not), even when the Txn writes that
// item; one checked on the Txn's view conditions the commit while the Txn
// leaves the item alone (a conflict when it no longer holds).
func TestTxnRequire(t *testing.T) {
	ctx := context.Background()
	lease := dynastore.Key{PK: []byte("lease"), SK: []byte{0}}
	data := dynastore.Key{PK: []byte("data"), SK: []byte{0}}
	item := func(k dynastore.Key, v string) dynastore.Item {
		return dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
			{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
			{Name: "v", Value: dynastore.S(v)},
		}
	}
	is := func(v string) dynastore.Cond {
		return dynastore.Compare{Attr: "v", Op: dynastore.OpEQ, Val: dynastore.S(v)}
	}
	for _, tc := range []struct {
		name       string
		watched    bool
		cond       string // what the requirement asks of the lease
		writeLease bool   // the Txn also writes the lease
		want       error
	}{
		{"watched, holds", true, "held", false, nil},
		{"watched, lost", true, "other", false, model.ErrWatched},
		{"watched, the Txn writes the item", true, "other", true, model.ErrWatched},
		{"on the view, holds", false, "held", false, nil},
		{"on the view, lost since", false, "other", false, model.ErrConflict},
		{"on the view, the Txn writes the item", false, "other", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newCounting()
			_, err := st.Put(ctx, item(lease, "held"), dynastore.WriteOptions{})
			require.NoError(t, err)
			txn := model.NewTxn(st, nil)
			txn.Require(lease, is(tc.cond), tc.watched)
			_, err = txn.Put(ctx, item(data, "x"), dynastore.WriteOptions{})
			require.NoError(t, err)
			if tc.writeLease {
				_, err = txn.Put(ctx, item(lease, "mine"), dynastore.WriteOptions{})
				require.NoError(t, err)
			}
			require.ErrorIs(t, txn.Commit(ctx), tc.want)
			got, err := st.Get(ctx, data)
			require.NoError(t, err)
			require.Equal(t, tc.want == nil, got != nil, "the write lands only with the commit")
		})
	}
}

// TestTxnPeek: Peek sees the Txn's own writes and the store's item, and
// makes the commit depend on nothing: the peeked item changing before the
// commit is no conflict, and a single write stays one request.
func TestTxnPeek(t *testing.T) {
	ctx := context.Background()
	st := newCounting()
	lease := dynastore.Key{PK: []byte("lease"), SK: []byte{0}}
	data := dynastore.Key{PK: []byte("data"), SK: []byte{0}}
	item := func(k dynastore.Key, v string) dynastore.Item {
		return dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
			{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
			{Name: "v", Value: dynastore.S(v)},
		}
	}
	_, err := st.Put(ctx, item(lease, "held"), dynastore.WriteOptions{})
	require.NoError(t, err)
	txn := model.NewTxn(st, nil)
	st.take()
	got, err := txn.Peek(ctx, lease)
	require.NoError(t, err)
	require.Equal(t, dynastore.S("held"), got.Get("v"))
	_, err = txn.Put(ctx, item(data, "x"), dynastore.WriteOptions{})
	require.NoError(t, err)
	got, err = txn.Peek(ctx, data)
	require.NoError(t, err)
	require.Equal(t, dynastore.S("x"), got.Get("v"), "Peek sees the Txn's own write")
	_, err = st.Put(ctx, item(lease, "extended"), dynastore.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, txn.Commit(ctx))
	require.Equal(t, map[string]int{dynastore.OpGetItem: 1, dynastore.OpPutItem: 2}, st.take())
}
