package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// memberScope is a command's scope in the coalescing tests: it shares
// its process with the others and records the keys reported created to
// it.
type memberScope struct {
	procScope
	data    dynastore.Store
	created *[]string
}

func (s memberScope) Data() dynastore.Store {
	if s.data != nil {
		return s.data
	}
	return s.procScope.Data()
}
func (s memberScope) KeyCreated(key []byte) { *s.created = append(*s.created, string(key)) }
func (s memberScope) KeyEmptied([]byte)     {}
func (s memberScope) WantsCreated() bool    { return true }

// hotFixture is a store, a process, and scopes of commands on them.
type hotFixture struct {
	st    dynastore.Store
	stats *dynastore.Stats
	p     *Process
}

func newHotFixture() *hotFixture {
	stats := dynastore.NewStats()
	return &hotFixture{st: memory.New(memory.Options{Observer: stats}), stats: stats, p: NewProcess(nil)}
}

func (f *hotFixture) scope() memberScope {
	return memberScope{procScope: procScope{storeScope{context.Background(), f.st}, f.p}, created: new([]string)}
}

// requests is how many requests the store has served.
func (f *hotFixture) requests() int64 {
	var n int64
	for _, r := range f.stats.Snapshot() {
		n += r.Requests
	}
	return n
}

// batched runs one command per scope on a key whose lane is held busy
// until all of them wait in it, in order, and returns once all are
// answered: so they are one batch, in that order. waiting is the lane's
// count of waiting operations; occupy holds the lane until release is
// closed.
func batched(t *testing.T, n int, occupy func(release <-chan struct{}) <-chan struct{}, waiting func() int, cmd func(i int)) {
	t.Helper()
	release := make(chan struct{})
	held := make(chan struct{})
	started := occupy(release)
	go func() { defer close(held); <-release }()
	<-started
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); cmd(i) }()
		require.Eventually(t, func() bool { return waiting() == i+1 }, 5*time.Second, time.Millisecond)
	}
	close(release)
	wg.Wait()
	<-held
}

// holdLane returns what occupies c's lane of key (as a request in flight
// would) until release is closed; what it returns is closed once the lane
// is busy.
func holdLane[Op, Res any](c *Coalescer[Op, Res], s Scope, key []byte, op Op) func(<-chan struct{}) <-chan struct{} {
	return holdLaneAt(c, s, string(KeyPK(0, key)), op)
}

// holdLaneAt is holdLane of the lane key lane.
func holdLaneAt[Op, Res any](c *Coalescer[Op, Res], s Scope, lane string, op Op) func(<-chan struct{}) <-chan struct{} {
	return func(release <-chan struct{}) <-chan struct{} {
		started := make(chan struct{})
		go func() {
			_, _ = c.DoAlone(s, lane, op, func(Op) (Res, error) {
				close(started)
				<-release
				var r Res
				return r, nil
			}, nil)
		}()
		return started
	}
}

// TestIncrBatch checks a batch of INCRBYs: one ADD of their sum when it
// fits, each member answered its own partial sum in batch order; else
// each answered as alone in that order (an overflow answers only the one
// that would overflow), from the failed update's item and one write.
// A key the batch creates is reported new to its first member that
// takes effect.
func TestIncrBatch(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	type setup func(s Scope, key []byte)
	value := func(v string, exp int64) setup {
		return func(s Scope, key []byte) {
			_, err := setString(s, key, []byte(v), SetOptions{ExpireAt: exp})
			require.NoError(t, err)
		}
	}
	for _, tc := range []struct {
		name     string
		setup    setup
		deltas   []int64
		want     []int64
		errs     []error
		requests int64
		creator  int // -1: none
		final    string
	}{
		{"absent", nil, []int64{1, 1, 1, 1, 1}, []int64{1, 2, 3, 4, 5}, nil, 1, 0, "5"},
		{"partial sums in range", value("9223372036854775805", 0), []int64{2, -5, 4}, []int64{maxI, maxI - 5, maxI - 1}, nil, 1, -1, "9223372036854775806"},
		{"one overflows", value("9223372036854775797", 0), []int64{1, 5, 100, 3}, []int64{maxI - 9, maxI - 4, 0, maxI - 1},
			[]error{nil, nil, ErrOverflow, nil}, 2, -1, "9223372036854775806"},
		{"first overflows", value("9223372036854775805", 0), []int64{3, -5}, []int64{0, maxI - 7},
			[]error{ErrOverflow, nil}, 2, -1, "9223372036854775800"},
		{"sum overflows int64", value("-5", 0), []int64{maxI, maxI, minI}, []int64{maxI - 5, 0, -6},
			[]error{nil, ErrOverflow, nil}, 2, -1, "-6"},
		{"expired", value("5", 1), []int64{1, 2}, []int64{1, 3}, nil, 2, 0, "3"},
		{"not an integer", value("abc", 0), []int64{1, 2}, nil, []error{ErrNotInteger, ErrNotInteger}, 1, -1, "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHotFixture()
			key := []byte("counter")
			if tc.setup != nil {
				tc.setup(f.scope(), key)
			}
			before := f.requests()
			scopes := make([]memberScope, len(tc.deltas))
			got := make([]int64, len(tc.deltas))
			errs := make([]error, len(tc.deltas))
			lead := f.scope()
			batched(t, len(tc.deltas), holdLane(&f.p.hotStrings.incr, lead, key, incrOp{memberOf(lead), 0}),
				func() int { return f.p.hotStrings.incr.waitingOps(string(KeyPK(0, key))) },
				func(i int) {
					scopes[i] = f.scope()
					got[i], errs[i] = IncrBy(scopes[i], key, tc.deltas[i])
				})
			for i := range tc.deltas {
				var want error
				if tc.errs != nil {
					want = tc.errs[i]
				}
				require.ErrorIs(t, errs[i], want, "member %d", i)
				if want == nil && tc.want != nil {
					require.Equal(t, tc.want[i], got[i], "member %d", i)
				}
				var created []string
				if i == tc.creator {
					created = []string{"counter"}
				}
				require.Equal(t, created, *scopes[i].created, "member %d", i)
			}
			require.Equal(t, tc.requests, f.requests()-before)
			batches, commands := f.p.Coalesced()
			require.Equal(t, [2]int64{1, int64(len(tc.deltas))}, [2]int64{batches, commands})
			ks, err := ReadKey(f.scope(), key)
			require.NoError(t, err)
			v, err := ks.StringValue()
			require.NoError(t, err)
			require.Equal(t, tc.final, string(v))
		})
	}
	t.Run("wrong type", func(t *testing.T) {
		f := newHotFixture()
		key := []byte("counter")
		_, err := HashSetNX(f.scope(), key, []byte("f"), []byte("v"))
		require.NoError(t, err)
		lead := f.scope()
		errs := make([]error, 3)
		batched(t, 3, holdLane(&f.p.hotStrings.incr, lead, key, incrOp{memberOf(lead), 0}),
			func() int { return f.p.hotStrings.incr.waitingOps(string(KeyPK(0, key))) },
			func(i int) { _, errs[i] = IncrBy(f.scope(), key, 1) })
		for _, err := range errs {
			require.ErrorIs(t, err, ErrWrongType)
		}
	})
}

// TestReadBatch checks that reads of a key that wait for a read in flight
// share one request, each deciding expiry at its own clock.
func TestReadBatch(t *testing.T) {
	f := newHotFixture()
	key := []byte("k")
	_, err := setString(f.scope(), key, []byte("v"), SetOptions{})
	require.NoError(t, err)
	before := f.requests()
	lead := f.scope()
	states := make([]KeyState, 4)
	batched(t, len(states), holdLane(&f.p.hotStrings.read, lead, key, memberOf(lead)),
		func() int { return f.p.hotStrings.read.waitingOps(string(KeyPK(0, key))) },
		func(i int) {
			var err error
			states[i], err = ReadKey(f.scope(), key)
			require.NoError(t, err)
		})
	require.Equal(t, int64(1), f.requests()-before)
	for _, ks := range states {
		require.True(t, ks.Live)
		v, err := ks.StringValue()
		require.NoError(t, err)
		require.Equal(t, "v", string(v))
	}

	// MGETs of one list of keys share their read likewise.
	keys := [][]byte{key, []byte("missing"), key}
	lane := hotKeys(lead, keys)
	before = f.requests()
	lists := make([][]KeyState, 3)
	batched(t, len(lists), holdLaneAt(&f.p.hotStrings.readMany, lead, lane, memberOf(lead)),
		func() int { return f.p.hotStrings.readMany.waitingOps(lane) },
		func(i int) {
			var err error
			lists[i], err = ReadKeys(f.scope(), keys)
			require.NoError(t, err)
		})
	require.Equal(t, int64(1), f.requests()-before)
	for _, l := range lists {
		require.Equal(t, []bool{true, false, true}, []bool{l[0].Live, l[1].Live, l[2].Live})
	}
}

// TestSetBatch checks that blind SETs waiting for a SET in flight are one
// write, of the last value (and its expiry), the key reported new to the
// first; a SET that reads (NX, GET, ...) is never in a batch.
func TestSetBatch(t *testing.T) {
	f := newHotFixture()
	key := []byte("k")
	before := f.requests()
	lead := f.scope()
	vals := []string{"a", "b", "c"}
	scopes := make([]memberScope, len(vals))
	exp := time.Now().Add(time.Hour).UnixMilli()
	batched(t, len(vals), holdLane(&f.p.hotStrings.set, lead, key, setOp{member: memberOf(lead)}),
		func() int { return f.p.hotStrings.set.waitingOps(string(KeyPK(0, key))) },
		func(i int) {
			scopes[i] = f.scope()
			o := SetOptions{}
			if i == len(vals)-1 {
				o.ExpireAt = exp
			}
			res, err := SetString(scopes[i], key, []byte(vals[i]), o)
			require.NoError(t, err)
			require.True(t, res.Written)
		})
	require.Equal(t, int64(1), f.requests()-before)
	require.Equal(t, []string{"k"}, *scopes[0].created)
	require.Empty(t, *scopes[1].created)
	ks, err := ReadKey(f.scope(), key)
	require.NoError(t, err)
	v, err := ks.StringValue()
	require.NoError(t, err)
	require.Equal(t, "c", string(v))
	require.Equal(t, exp, ks.Expiry)

	// NX and GET go on their own, past the lane held busy.
	release := make(chan struct{})
	<-holdLane(&f.p.hotStrings.set, lead, key, setOp{member: memberOf(lead)})(release)
	res, err := SetString(f.scope(), key, []byte("d"), SetOptions{NX: true})
	require.NoError(t, err)
	require.False(t, res.Written)
	res, err = SetString(f.scope(), key, []byte("e"), SetOptions{Get: true})
	require.NoError(t, err)
	require.True(t, res.Written)
	close(release)
}

// TestNoCoalescingInUnit checks that a command inside a unit of work
// (EXEC, a script) never waits in a lane: its requests are its unit's.
func TestNoCoalescingInUnit(t *testing.T) {
	f := newHotFixture()
	key := []byte("counter")
	lead := f.scope()
	release := make(chan struct{})
	<-holdLane(&f.p.hotStrings.incr, lead, key, incrOp{memberOf(lead), 0})(release)
	in := f.scope()
	in.data = NewTxn(f.st, nil)
	n, err := IncrBy(in, key, 3)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	_, err = ReadKey(in, key)
	require.NoError(t, err)
	close(release)
	require.Zero(t, f.p.hotStrings.incr.waitingOps(string(KeyPK(0, key))))
}

// TestHashBatch checks batches of HINCRBYs and of HGETs of one field:
// one request each when the fast path allows, each HINCRBY answered its
// partial sum, an overflow answering only the member it concerns.
func TestHashBatch(t *testing.T) {
	const maxI = math.MaxInt64
	for _, tc := range []struct {
		name     string
		initial  int64 // 0: no hash
		deltas   []int64
		want     []int64
		errs     []error
		requests int64
		creator  int
	}{
		{"absent", 0, []int64{1, 2, 3}, []int64{1, 3, 6}, nil, 1, 0},
		{"one overflows", maxI - 2, []int64{1, 5, 1}, []int64{maxI - 1, 0, maxI}, []error{nil, ErrIncrOverflow, nil}, 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHotFixture()
			key, field := []byte("h"), []byte("f")
			if tc.initial != 0 {
				_, err := HashIncrBy(f.scope(), key, field, tc.initial)
				require.NoError(t, err)
			}
			before := f.requests()
			lane := string(append(append([]byte{1}, KeyPK(0, key)...), field...))
			lead := f.scope()
			scopes := make([]memberScope, len(tc.deltas))
			got := make([]int64, len(tc.deltas))
			errs := make([]error, len(tc.deltas))
			batched(t, len(tc.deltas), holdLaneAt(&f.p.hotStrings.hincr, lead, lane, incrOp{memberOf(lead), 0}),
				func() int { return f.p.hotStrings.hincr.waitingOps(lane) },
				func(i int) {
					scopes[i] = f.scope()
					got[i], errs[i] = HashIncrBy(scopes[i], key, field, tc.deltas[i])
				})
			for i := range tc.deltas {
				var want error
				if tc.errs != nil {
					want = tc.errs[i]
				}
				require.ErrorIs(t, errs[i], want, "member %d", i)
				if want == nil {
					require.Equal(t, tc.want[i], got[i], "member %d", i)
				}
				var created []string
				if i == tc.creator {
					created = []string{"h"}
				}
				require.Equal(t, created, *scopes[i].created, "member %d", i)
			}
			require.Equal(t, tc.requests, f.requests()-before)

			before = f.requests()
			vals := make([][]byte, 3)
			batched(t, len(vals), holdLaneAt(&f.p.hotStrings.hget, lead, lane, memberOf(lead)),
				func() int { return f.p.hotStrings.hget.waitingOps(lane) },
				func(i int) {
					vs, present, err := HashGet(f.scope(), key, [][]byte{field})
					require.NoError(t, err)
					require.True(t, present[0])
					vals[i] = vs[0]
				})
			require.Equal(t, int64(1), f.requests()-before)
			for _, v := range vals {
				require.Equal(t, strconv.FormatInt(tc.want[len(tc.want)-1], 10), string(v))
			}
		})
	}
}

// TestEditBatch checks a batch of EditStrings (INCRBYFLOAT): one read and
// one write, each edit applied to what the one before it made, a failing
// one answering only its own command.
func TestEditBatch(t *testing.T) {
	f := newHotFixture()
	key := []byte("k")
	before := f.requests()
	lead := f.scope()
	errBad := errors.New("bad")
	suffixes := []string{"a", "", "b", "c"}
	got := make([]string, len(suffixes))
	errs := make([]error, len(suffixes))
	scopes := make([]memberScope, len(suffixes))
	batched(t, len(suffixes), holdLane(&f.p.hotStrings.edit, lead, key, editOp{member: memberOf(lead)}),
		func() int { return f.p.hotStrings.edit.waitingOps(string(KeyPK(0, key))) },
		func(i int) {
			scopes[i] = f.scope()
			var out []byte
			out, errs[i] = EditString(scopes[i], key, OriginArg, func(old []byte, live bool) ([]byte, error) {
				if suffixes[i] == "" {
					return nil, errBad
				}
				if !live {
					old = []byte("v")
				}
				return append(append([]byte{}, old...), suffixes[i]...), nil
			})
			got[i] = string(out)
		})
	require.Equal(t, []string{"va", "", "vab", "vabc"}, got)
	require.Equal(t, []error{nil, errBad, nil, nil}, errs)
	require.Equal(t, []string{"k"}, *scopes[0].created)
	require.Empty(t, *scopes[2].created)
	require.Equal(t, int64(2), f.requests()-before)
}

// unknownStore answers every write with an unknown outcome.
type unknownStore struct{ dynastore.Store }

func (unknownStore) Update(context.Context, dynastore.Key, dynastore.Update, dynastore.WriteOptions) (dynastore.Item, error) {
	return nil, fmt.Errorf("test: %w", dynastore.ErrOutcomeUnknown)
}

func (unknownStore) Put(context.Context, dynastore.Item, dynastore.WriteOptions) (dynastore.Item, error) {
	return nil, fmt.Errorf("test: %w", dynastore.ErrOutcomeUnknown)
}

// TestBatchOutcomeUnknown checks that a batch whose request's outcome is
// unknown tells each of its commands so.
func TestBatchOutcomeUnknown(t *testing.T) {
	f := newHotFixture()
	key := []byte("k")
	lead := f.scope()
	scope := func() memberScope {
		s := f.scope()
		s.data = unknownStore{f.st}
		return s
	}
	errs := make([]error, 3)
	batched(t, len(errs), holdLane(&f.p.hotStrings.incr, lead, key, incrOp{memberOf(lead), 0}),
		func() int { return f.p.hotStrings.incr.waitingOps(string(KeyPK(0, key))) },
		func(i int) { _, errs[i] = IncrBy(scope(), key, 1) })
	for _, err := range errs {
		require.ErrorIs(t, err, dynastore.ErrOutcomeUnknown)
	}
	errs = make([]error, 3)
	batched(t, len(errs), holdLane(&f.p.hotStrings.set, lead, key, setOp{member: memberOf(lead)}),
		func() int { return f.p.hotStrings.set.waitingOps(string(KeyPK(0, key))) },
		func(i int) { _, errs[i] = SetString(scope(), key, []byte("v"), SetOptions{}) })
	for _, err := range errs {
		require.ErrorIs(t, err, dynastore.ErrOutcomeUnknown)
	}
}
