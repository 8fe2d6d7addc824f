package model_test

// Tests of the collection engine and its layouts through the model's API,
// on the memory store and, when REDAMO_TEST_DYNAMODB_ENDPOINT is set, on
// DynamoDB Local (dynamotest).

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// scope is a model.Scope over a store, in database db, with a clock the
// test moves (the tests of this package share it).
type scope struct {
	context.Context
	st   dynastore.Store
	db   int
	proc *model.Process
	now  *atomic.Int64
}

func newScope(st dynastore.Store) *scope {
	now := &atomic.Int64{}
	now.Store(time.Now().UnixMilli())
	return &scope{Context: context.Background(), st: st, proc: model.NewProcess(testLimits), now: now}
}

// testLimits are the server's default inline limits (the caps; streams
// their own).
func testLimits(typ string) model.InlineLimits {
	switch typ {
	case model.TypeStream:
		return model.StreamInline
	case model.TypeHash, model.TypeZSet:
		return model.InlineLimits{Entries: model.InlineMaxHash, Bytes: model.InlineMaxBytes}
	case model.TypeList:
		return model.InlineLimits{Entries: model.InlineMaxList, Bytes: model.InlineMaxBytes}
	}
	return model.InlineLimits{Entries: model.InlineMaxSet, Bytes: model.InlineMaxBytes}
}

func (s *scope) Data() dynastore.Store         { return s.st }
func (s *scope) DB() int                       { return s.db }
func (s *scope) NowMS() int64                  { return s.now.Load() }
func (s *scope) LostRace(r *model.Retry) error { return r.Lost(s) }
func (s *scope) Process() *model.Process       { return s.proc }

// backend is one store the tests run on.
type backend struct {
	name string
	new  func(t *testing.T) dynastore.Store
}

// backends is the memory store, and DynamoDB Local when configured (a
// fresh table per call).
func backends(t *testing.T) []backend {
	out := []backend{{"memory", func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) }}}
	if os.Getenv(dynamotest.EnvEndpoint) != "" {
		out = append(out, backend{"dynamodb", func(t *testing.T) dynastore.Store { return dynamotest.NewStore(t, dynamo.Config{}) }})
	}
	return out
}

// forBackends runs body on a fresh store per backend.
func forBackends(t *testing.T, body func(t *testing.T, c *scope)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { body(t, newScope(b.new(t))) })
	}
}

// members returns n members named prefix0, prefix1, ...
func members(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(prefix + strconv.Itoa(i))
	}
	return out
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func sorted(bs [][]byte) []string {
	out := strs(bs)
	sort.Strings(out)
	return out
}

// open reads key as typ.
func open(t *testing.T, c *scope, key, typ string) *model.Collection {
	t.Helper()
	cl, err := model.OpenChecked(c, []byte(key), typ)
	require.NoError(t, err)
	return cl
}

// setLen is SCARD.
func setLen(t *testing.T, c *scope, key string) int64 {
	t.Helper()
	return open(t, c, key, model.TypeSet).Len()
}

// expireAt gives key's key item the deadline at (ms), as a write (new ver).
func expireAt(t *testing.T, c *scope, key string, at int64) {
	t.Helper()
	_, err := c.st.Update(c, model.ItemKey(0, []byte(key)), dynastore.Update{Set: []dynastore.SetAction{
		{Attr: model.AttrExpiry, Val: model.NInt(at)},
		{Attr: model.AttrVer, Val: model.NewVer()},
	}}, dynastore.WriteOptions{Cond: dynastore.Exists{Attr: dynastore.AttrPK}})
	require.NoError(t, err)
}

// TestCollectionLayouts grows and shrinks collections across the inline
// limit and checks what each layout holds.
func TestCollectionLayouts(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		// Grow a set one member at a time across the inline limit.
		const grown = 140
		for _, m := range members("m", grown) {
			n, err := model.AddMembers(c, []byte("s"), model.TypeSet, [][]byte{m}, nil)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		}
		require.EqualValues(t, grown, setLen(t, c, "s"))
		require.True(t, open(t, c, "s", model.TypeSet).Large())
		got, err := model.SetMembers(c, []byte("s"))
		require.NoError(t, err)
		require.Len(t, got, grown)
		// Shrink it to nothing: the key disappears with its last member.
		for _, m := range members("m", grown) {
			n, err := model.RemoveMembers(c, []byte("s"), model.TypeSet, [][]byte{m})
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		}
		it, err := c.st.Get(c, model.ItemKey(0, []byte("s")))
		require.NoError(t, err)
		require.Nil(t, it)

		// A long member or value forces the large layout at once.
		long := []byte(strings.Repeat("x", 2000))
		n, err := model.AddMembers(c, []byte("l"), model.TypeSet, [][]byte{long, []byte("a")}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		require.True(t, open(t, c, "l", model.TypeSet).Large())
		_, present, err := model.Lookup(c, []byte("l"), model.TypeSet, [][]byte{long})
		require.NoError(t, err)
		require.True(t, present[0])
		n, err = model.AddMembers(c, []byte("h"), model.TypeHash, [][]byte{[]byte("f")}, [][]byte{long})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		vals, _, err := model.HashGet(c, []byte("h"), [][]byte{[]byte("f")})
		require.NoError(t, err)
		require.Equal(t, long, vals[0])
		require.Len(t, vals[0], 2000)

		// Writing to an expired large set starts from empty.
		expireAt(t, c, "l", c.NowMS()+30)
		c.now.Add(60)
		n, err = model.AddMembers(c, []byte("l"), model.TypeSet, [][]byte{[]byte("z")}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		got, err = model.SetMembers(c, []byte("l"))
		require.NoError(t, err)
		require.Equal(t, []string{"z"}, strs(got))

		// Writing to an expired small hash starts from empty too, with no
		// expiry.
		_, err = model.AddMembers(c, []byte("eh"), model.TypeHash, [][]byte{[]byte("a"), []byte("b")}, [][]byte{[]byte("1"), []byte("2")})
		require.NoError(t, err)
		expireAt(t, c, "eh", c.NowMS()+30)
		c.now.Add(60)
		n, err = model.AddMembers(c, []byte("eh"), model.TypeHash, [][]byte{[]byte("c")}, [][]byte{[]byte("3")})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		fields, vals, err := model.HashAll(c, []byte("eh"))
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, strs(fields))
		require.Equal(t, []string{"3"}, strs(vals))
		require.False(t, open(t, c, "eh", model.TypeHash).KS.HasExpiry)

		// Expiry survives conversion to the large layout.
		deadline := c.NowMS() + time.Hour.Milliseconds()
		expireAt(t, c, "eh", deadline)
		for i, f := range members("k", 100) {
			_, err := model.AddMembers(c, []byte("eh"), model.TypeHash, [][]byte{f}, [][]byte{[]byte(strconv.Itoa(i))})
			require.NoError(t, err)
		}
		cl := open(t, c, "eh", model.TypeHash)
		require.True(t, cl.Large())
		require.EqualValues(t, 101, cl.Len())
		require.Equal(t, deadline, cl.KS.Expiry)
	})
}

// TestListLayout runs the list operations on a list small enough to be
// inline and on one past the inline limit, against a model of the list
// as a slice.
func TestListLayout(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		for _, size := range []int{10, 300} {
			t.Run(strconv.Itoa(size), func(t *testing.T) {
				key := []byte("list" + strconv.Itoa(size))
				var want []string
				check := func() {
					t.Helper()
					got, err := model.ListRange(c, key, 0, -1)
					require.NoError(t, err)
					if len(want) == 0 {
						require.Empty(t, got)
					} else {
						require.Equal(t, want, strs(got))
					}
					n, err := model.ListLen(c, key)
					require.NoError(t, err)
					require.EqualValues(t, len(want), n)
				}
				n, err := model.ListPush(c, key, [][]byte{[]byte("x")}, true, true)
				require.NoError(t, err)
				require.Zero(t, n, "LPUSHX of a missing key")
				vals := members("e", size)
				n, err = model.ListPush(c, key, vals, false, false)
				require.NoError(t, err)
				require.EqualValues(t, size, n)
				want = strs(vals)
				check()
				require.Equal(t, size > model.InlineMaxList, open(t, c, string(key), model.TypeList).Large())

				n, err = model.ListPush(c, key, [][]byte{[]byte("a"), []byte("b")}, true, false)
				require.NoError(t, err)
				want = append([]string{"b", "a"}, want...)
				require.EqualValues(t, len(want), n)
				check()

				popped, exists, err := model.ListPop(c, key, true, 3)
				require.NoError(t, err)
				require.True(t, exists)
				require.Equal(t, want[:3], strs(popped))
				want = want[3:]
				popped, _, err = model.ListPop(c, key, false, 2)
				require.NoError(t, err)
				require.Equal(t, []string{want[len(want)-1], want[len(want)-2]}, strs(popped))
				want = want[:len(want)-2]
				check()

				v, err := model.ListIndex(c, key, -1, true)
				require.NoError(t, err)
				require.Equal(t, want[len(want)-1], string(v))
				_, err = model.ListIndex(c, key, 0, false)
				require.ErrorIs(t, err, model.ErrIndexNotInt)

				require.NoError(t, model.ListSet(c, key, 1, true, []byte("set")))
				want[1] = "set"
				require.ErrorIs(t, model.ListSet(c, key, int64(len(want)), true, []byte("no")), model.ErrIndexOutOfRange)
				require.ErrorIs(t, model.ListSet(c, []byte("missing"), 0, true, []byte("no")), model.ErrNoSuchKey)
				check()

				n, err = model.ListInsert(c, key, true, []byte("set"), []byte("ins"))
				require.NoError(t, err)
				want = append(want[:2], append([]string{"ins"}, want[2:]...)...)
				require.EqualValues(t, len(want), n)
				n, err = model.ListInsert(c, key, false, []byte("nothere"), []byte("ins"))
				require.NoError(t, err)
				require.EqualValues(t, -1, n)
				check()

				found, exists, err := model.ListPos(c, key, model.ListPosQuery{Elem: []byte("ins"), Rank: 1, Count: 0, HasCount: true})
				require.NoError(t, err)
				require.True(t, exists)
				require.Equal(t, []int64{2}, found)

				n, err = model.ListRem(c, key, 0, []byte("ins"))
				require.NoError(t, err)
				require.EqualValues(t, 1, n)
				want = append(want[:2], want[3:]...)
				check()

				_, err = model.ListTrim(c, key, 1, -2)
				require.NoError(t, err)
				want = want[1 : len(want)-1]
				check()

				moved, err := model.ListMove(c, key, []byte("dst"), true, false, false)
				require.NoError(t, err)
				require.Equal(t, want[0], string(moved))
				want = want[1:]
				check()
				from, got, err := model.ListMultiPop(c, [][]byte{[]byte("none"), []byte("dst"), key}, true, 5, false)
				require.NoError(t, err)
				require.Equal(t, "dst", string(from))
				require.Equal(t, []string{string(moved)}, strs(got))
			})
		}
	})
}

// TestZSetOrder adds members to a sorted set past the inline limit and
// reads them back in score order, by rank and by score.
func TestZSetOrder(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		key := []byte("z")
		const n = 100
		ms := members("m", n)
		scores := make([]float64, n)
		for i := range scores {
			scores[i] = float64((i*37)%n) - 50.5
		}
		res, err := model.ZAdd(c, key, model.ZAddFlags{}, ms[:10], scores[:10], 128, 64)
		require.NoError(t, err)
		require.True(t, res.Fast, "a small plain ZADD is one UpdateItem")
		require.EqualValues(t, 10, res.Added)
		res, err = model.ZAdd(c, key, model.ZAddFlags{}, ms[10:], scores[10:], 50, 64)
		require.NoError(t, err)
		require.EqualValues(t, n-10, res.Added)
		enc, err := model.Encoding(c, key, model.TypeZSet, model.EncodingLimits{})
		require.NoError(t, err)
		require.Equal(t, "skiplist", enc)
		cl := open(t, c, "z", model.TypeZSet)
		require.True(t, cl.Large())

		var got []float64
		require.NoError(t, model.ZWalk(cl, nil, model.ZOrderEnd, false, 0, 0, func(m []byte, s float64) error {
			got = append(got, s)
			return nil
		}))
		require.Len(t, got, n)
		require.True(t, sort.Float64sAreSorted(got))

		rank, ok, err := model.ZRankOf(cl, ms[1], false)
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, sort.SearchFloat64s(got, scores[1]), rank)

		res, err = model.ZAdd(c, key, model.ZAddFlags{Incr: true}, ms[:1], []float64{1000}, 128, 64)
		require.NoError(t, err)
		require.Equal(t, scores[0]+1000, res.Score)
		s, present, err := model.ZScores(c, key, [][]byte{ms[0], []byte("absent")})
		require.NoError(t, err)
		require.Equal(t, []bool{true, false}, present)
		require.Equal(t, scores[0]+1000, s[0])
		cl = open(t, c, "z", model.TypeZSet)
		rank, _, err = model.ZRankOf(cl, ms[0], true)
		require.NoError(t, err)
		require.Zero(t, rank, "the highest score ranks first in reverse")
	})
}

// TestStreamLayout adds entries to a stream past the inline limit, reads
// and trims it, and checks that the cleanup a trim leaves deletes exactly
// the trimmed members.
func TestStreamLayout(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		key := []byte("x")
		const n = 150
		var ids []model.StreamID
		for i := 0; i < n; i++ {
			id, _, ok, sc, err := model.XAdd(c, key, model.XAddArgs{ID: model.StreamID{Ms: uint64(i + 1)}, IDGiven: true, SeqGiven: true, Fields: [][]byte{[]byte("f"), []byte(strconv.Itoa(i))}})
			require.NoError(t, err)
			require.True(t, ok)
			require.Nil(t, sc)
			ids = append(ids, id)
		}
		_, _, _, _, err := model.XAdd(c, key, model.XAddArgs{ID: model.StreamID{Ms: 1}, IDGiven: true, SeqGiven: true, Fields: [][]byte{[]byte("f"), []byte("v")}})
		require.ErrorIs(t, err, model.ErrStreamIDTooSmall)
		cl := open(t, c, "x", model.TypeStream)
		require.True(t, cl.Large())
		gen := cl.Gen
		length, err := model.XLen(c, key)
		require.NoError(t, err)
		require.EqualValues(t, n, length)

		es, exists, err := model.XRange(c, key, model.StreamID{}, model.MaxStreamID, true, 3)
		require.NoError(t, err)
		require.True(t, exists)
		require.Len(t, es, 3)
		require.Equal(t, ids[n-1], es[0].ID)
		require.Equal(t, [][]byte{[]byte("f"), []byte(strconv.Itoa(n - 1))}, es[0].Fields)

		deleted, err := model.XDel(c, key, [][]byte{[]byte(ids[5].String()), []byte("9999-0")})
		require.NoError(t, err)
		require.EqualValues(t, 1, deleted)
		_, err = model.XDel(c, key, [][]byte{[]byte("bad")})
		require.ErrorIs(t, err, model.ErrStreamBadID)

		// An exact MAXLEN trim raises the floor and leaves the members
		// below it to the cleanup.
		deleted, sc, err := model.XTrim(c, key, model.StreamTrim{Strategy: model.TrimMaxLen, MaxLen: 10})
		require.NoError(t, err)
		require.EqualValues(t, n-1-10, deleted)
		require.NotNil(t, sc)
		require.Zero(t, sc.Delay)
		es, _, err = model.XRange(c, key, model.StreamID{}, model.MaxStreamID, false, -1)
		require.NoError(t, err)
		require.Len(t, es, 10)
		require.Equal(t, ids[n-10], es[0].ID)
		require.NoError(t, sc.Run(c.NowMS))
		page, err := c.st.Query(c, dynastore.Query{PK: model.MembersPK(gen)})
		require.NoError(t, err)
		require.Len(t, page.Items, 10, "only the live entries' members are left")

		info, err := model.XInfo(c, key)
		require.NoError(t, err)
		require.EqualValues(t, 10, info.Length)
		require.Equal(t, ids[n-1], info.LastID)
		require.Equal(t, ids[n-10], info.FirstID)
		require.EqualValues(t, n, info.EntriesAdded)
		info, err = model.XInfo(c, []byte("missing"))
		require.NoError(t, err)
		require.Nil(t, info)

		s := &model.XReadState{Keys: [][]byte{key}, IDs: [][]byte{[]byte(ids[n-3].String())}}
		out, err := model.XRead(c, s, 0, false)
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Len(t, out[0].Entries, 2)
	})
}

// failingStore fails one chosen request, counting from 1.
type failingStore struct {
	dynastore.Store
	n, failAt atomic.Int64
}

var errInjected = fmt.Errorf("injected: %w", dynastore.ErrUnavailable)

func (f *failingStore) hit() error {
	if f.n.Add(1) == f.failAt.Load() {
		return errInjected
	}
	return nil
}

func (f *failingStore) arm(at int64) { f.n.Store(0); f.failAt.Store(at) }

func (f *failingStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, k)
}

func (f *failingStore) BatchGet(ctx context.Context, k []dynastore.Key) ([]dynastore.Item, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	return f.Store.BatchGet(ctx, k)
}

func (f *failingStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	return f.Store.Put(ctx, it, o)
}

func (f *failingStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	return f.Store.Update(ctx, k, u, o)
}

func (f *failingStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	return f.Store.Delete(ctx, k, o)
}

func (f *failingStore) Transact(ctx context.Context, a []dynastore.TxAction) error {
	if err := f.hit(); err != nil {
		return err
	}
	return f.Store.Transact(ctx, a)
}

func (f *failingStore) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	if err := f.hit(); err != nil {
		return dynastore.QueryPage{}, err
	}
	return f.Store.Query(ctx, q)
}

// TestBigWritesAllOrNothing makes every request of big writes fail in
// turn (as if the process died there) and checks that the collections are
// then either untouched or completely changed, never in between, and that
// SMOVE and SUNIONSTORE neither lose nor duplicate a member.
func TestBigWritesAllOrNothing(t *testing.T) {
	fs := &failingStore{Store: memory.New(memory.Options{})}
	var c *scope
	seed := func() {
		fs.arm(0)
		// A fresh store and process: nothing cached from the last run.
		fs.Store = memory.New(memory.Options{})
		c = newScope(fs)
		_, err := model.AddMembers(c, []byte("big"), model.TypeSet, members("b", 150), nil)
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("small"), model.TypeSet, [][]byte{[]byte("x"), []byte("y")}, nil)
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("other"), model.TypeSet, [][]byte{[]byte("y"), []byte("z")}, nil)
		require.NoError(t, err)
	}
	card := func(key string) int64 {
		t.Helper()
		cl, err := model.OpenChecked(c, []byte(key), model.TypeSet)
		require.NoError(t, err)
		return cl.Len()
	}
	smembers := func(key string) [][]byte {
		t.Helper()
		ms, err := model.SetMembers(c, []byte(key))
		require.NoError(t, err)
		return ms
	}
	isMember := func(key, m string) bool {
		t.Helper()
		_, present, err := model.Lookup(c, []byte(key), model.TypeSet, [][]byte{[]byte(m)})
		require.NoError(t, err)
		return present[0]
	}
	adds := members("n", 500)
	rems := members("b", 120)
	scripts := []struct {
		name  string
		run   func() error
		check func(applied bool)
	}{
		{"sadd-500-to-large", func() error {
			_, err := model.AddMembers(c, []byte("big"), model.TypeSet, adds, nil)
			return err
		}, func(applied bool) {
			want := int64(150)
			if applied {
				want = 650
			}
			require.EqualValues(t, want, card("big"))
			require.Len(t, smembers("big"), int(want))
		}},
		{"sadd-500-to-small", func() error {
			_, err := model.AddMembers(c, []byte("small"), model.TypeSet, adds, nil)
			return err
		}, func(applied bool) {
			want := 2
			if applied {
				want = 502
			}
			require.Len(t, smembers("small"), want)
			require.EqualValues(t, want, card("small"))
		}},
		{"srem-120-from-large", func() error {
			_, err := model.RemoveMembers(c, []byte("big"), model.TypeSet, rems)
			return err
		}, func(applied bool) {
			want := int64(150)
			if applied {
				want = 30
			}
			require.EqualValues(t, want, card("big"))
			require.Len(t, smembers("big"), int(want))
		}},
		{"smove", func() error {
			_, _, err := model.SetMove(c, []byte("big"), []byte("small"), []byte("b7"))
			return err
		}, func(bool) {
			inBig, inSmall := isMember("big", "b7"), isMember("small", "b7")
			require.True(t, inBig != inSmall, "b7 in big %v, in small %v", inBig, inSmall)
			require.EqualValues(t, 152, card("big")+card("small"))
		}},
		{"sunionstore", func() error {
			_, err := model.SetStore(c, model.SetUnion, []byte("small"), [][]byte{[]byte("big"), []byte("other")})
			return err
		}, func(applied bool) {
			want := 2
			if applied {
				want = 152
			}
			require.Len(t, smembers("small"), want)
			require.EqualValues(t, want, card("small"))
		}},
	}
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			// Count the requests of a clean run, then fail each in turn.
			seed()
			fs.arm(-1)
			require.NoError(t, sc.run())
			total := fs.n.Load()
			require.Positive(t, total)
			for at := int64(1); at <= total; at++ {
				seed()
				fs.arm(at)
				err := sc.run()
				fs.arm(0)
				c.proc = model.NewProcess(testLimits) // read back from the store
				sc.check(err == nil)
			}
		})
	}
}

// TestSweeper deletes dead generations' members and nothing else: those
// of a deleted key and of an expired one, not those of a live key or of
// one renamed (its registry entry names its new owner).
func TestSweeper(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		ms := members("m", 250)
		for _, k := range []string{"dead", "renamed", "live", "expiring"} {
			_, err := model.AddMembers(c, []byte(k), model.TypeSet, ms, nil)
			require.NoError(t, err)
			require.True(t, open(t, c, k, model.TypeSet).Large())
		}
		_, err := c.st.Delete(c, model.ItemKey(0, []byte("dead")), dynastore.WriteOptions{})
		require.NoError(t, err)
		expireAt(t, c, "expiring", time.Now().UnixMilli()-1)
		// RENAME: the key item moves, its registry entry names the new
		// owner, in one transaction.
		old, err := c.st.Get(c, model.ItemKey(0, []byte("renamed")))
		require.NoError(t, err)
		moved := model.Retarget(old, 0, []byte("renamed2"))
		acts := append([]dynastore.TxAction{
			{Op: dynastore.TxDelete, Key: model.ItemKey(0, []byte("renamed"))},
			{Op: dynastore.TxPut, Item: moved},
		}, model.CollectionRenameActions(old, model.KeyPK(0, []byte("renamed2")))...)
		require.NoError(t, c.st.Transact(c, acts))

		clock := time.Now()
		sw := &model.Sweeper{Store: c.st, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		// First pass only notes who is dead; nothing goes before the grace.
		require.NoError(t, sw.SweepOnce(c))
		require.Zero(t, sw.Members)
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(c))
		require.EqualValues(t, 2, sw.Gens)
		require.EqualValues(t, 500, sw.Members)
		c.proc = model.NewProcess(testLimits)
		for _, k := range []string{"live", "renamed2"} {
			got, err := model.SetMembers(c, []byte(k))
			require.NoError(t, err)
			require.Len(t, got, 250, k)
		}
		// Nothing left to do.
		require.NoError(t, sw.SweepOnce(c))
		require.EqualValues(t, 2, sw.Gens)
	})
}

// TestHashFields covers the single-field hash operations inline and
// large: HSETNX, HINCRBY (with its errors) and the read-modify-write of
// one field.
func TestHashFields(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		for _, size := range []int{1, 100} {
			key := []byte("h" + strconv.Itoa(size))
			_, err := model.AddMembers(c, key, model.TypeHash, members("f", size), members("v", size))
			require.NoError(t, err)
			require.Equal(t, size > model.InlineMaxHash, open(t, c, string(key), model.TypeHash).Large())

			set, err := model.HashSetNX(c, key, []byte("f0"), []byte("other"))
			require.NoError(t, err)
			require.False(t, set)
			set, err = model.HashSetNX(c, key, []byte("new"), []byte("1"))
			require.NoError(t, err)
			require.True(t, set)

			n, err := model.HashIncrBy(c, key, []byte("new"), 41)
			require.NoError(t, err)
			require.EqualValues(t, 42, n)
			n, err = model.HashIncrBy(c, key, []byte("absent"), -3)
			require.NoError(t, err)
			require.EqualValues(t, -3, n)
			_, err = model.HashIncrBy(c, key, []byte("f0"), 1)
			require.ErrorIs(t, err, model.ErrHashNotInt)
			_, err = model.HashIncrBy(c, key, []byte("new"), math.MaxInt64)
			require.ErrorIs(t, err, model.ErrIncrOverflow)

			require.NoError(t, model.HashUpdate(c, key, []byte("new"), func(cur []byte, present bool) ([]byte, bool, error) {
				require.True(t, present)
				require.Equal(t, "42", string(cur))
				return []byte("4.5"), true, nil
			}))
			vals, present, err := model.HashGet(c, key, [][]byte{[]byte("new"), []byte("absent"), []byte("nothere")})
			require.NoError(t, err)
			require.Equal(t, []bool{true, true, false}, present)
			require.Equal(t, []string{"4.5", "-3", ""}, strs(vals))
			length, err := model.Len(c, key, model.TypeHash)
			require.NoError(t, err)
			require.EqualValues(t, size+2, length)
		}
	})
}

// TestEncoding is OBJECT ENCODING of each collection type.
func TestEncoding(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		lim := model.EncodingLimits{HashEntries: 2, HashValue: 5, SetIntsetEntries: 3}
		_, err := model.AddMembers(c, []byte("ints"), model.TypeSet, members("", 3), nil)
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("strs"), model.TypeSet, members("m", 2), nil)
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("manyints"), model.TypeSet, members("", 4), nil)
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("h"), model.TypeHash, [][]byte{[]byte("f")}, [][]byte{[]byte("short")})
		require.NoError(t, err)
		_, err = model.AddMembers(c, []byte("hlong"), model.TypeHash, [][]byte{[]byte("f")}, [][]byte{[]byte("longer")})
		require.NoError(t, err)
		_, err = model.ListPush(c, []byte("l"), [][]byte{[]byte("a")}, false, false)
		require.NoError(t, err)
		_, _, _, _, err = model.XAdd(c, []byte("x"), model.XAddArgs{Fields: [][]byte{[]byte("f"), []byte("v")}})
		require.NoError(t, err)
		_, err = model.ZAdd(c, []byte("z"), model.ZAddFlags{}, [][]byte{[]byte("m")}, []float64{1}, 128, 64)
		require.NoError(t, err)
		for _, tc := range []struct{ key, typ, want string }{
			{"ints", model.TypeSet, "intset"},
			{"strs", model.TypeSet, "hashtable"},
			{"manyints", model.TypeSet, "hashtable"},
			{"h", model.TypeHash, "listpack"},
			{"hlong", model.TypeHash, "hashtable"},
			{"l", model.TypeList, "quicklist"},
			{"x", model.TypeStream, "stream"},
			{"z", model.TypeZSet, "listpack"},
		} {
			enc, err := model.Encoding(c, []byte(tc.key), tc.typ, lim)
			require.NoError(t, err)
			require.Equal(t, tc.want, enc, tc.key)
		}
		_, err = model.Encoding(c, []byte("ints"), model.TypeString, lim)
		require.ErrorIs(t, err, model.ErrNoEncoding)
	})
}
