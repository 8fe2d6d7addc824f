package model

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// gatedStore counts requests and, while armed, holds the first one until
// released: a command held so has its request in flight, and those the
// test starts meanwhile join the batch behind it.
type gatedStore struct {
	dynastore.Store
	requests atomic.Int64
	mu       sync.Mutex
	armed    bool
	held     chan struct{} // closed once a request is held
	release  chan struct{}
}

func (g *gatedStore) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.held, g.release = true, make(chan struct{}), make(chan struct{})
}

func (g *gatedStore) gate() {
	g.requests.Add(1)
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.held)
		<-g.release
	}
}

func (g *gatedStore) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	g.gate()
	return g.Store.Get(ctx, k)
}

func (g *gatedStore) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	g.gate()
	return g.Store.BatchGet(ctx, keys)
}

func (g *gatedStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	g.gate()
	return g.Store.Put(ctx, it, o)
}

func (g *gatedStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	g.gate()
	return g.Store.Update(ctx, k, u, o)
}

func (g *gatedStore) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	g.gate()
	return g.Store.Delete(ctx, k, o)
}

func (g *gatedStore) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	g.gate()
	return g.Store.Transact(ctx, actions)
}

func (g *gatedStore) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	g.gate()
	return g.Store.Query(ctx, q)
}

// reportScope is one client's scope: it keeps the lifecycle events the
// model tells it.
type reportScope struct {
	procScope
	events *[]string
}

func (r reportScope) KeyCreated(key []byte) { *r.events = append(*r.events, "new "+string(key)) }
func (r reportScope) KeyEmptied(key []byte) { *r.events = append(*r.events, "del "+string(key)) }
func (r reportScope) WantsCreated() bool    { return true }

// collCmd is one command of a test: what it runs and its answer as text.
type collCmd func(s Scope) string

func answer(v any, err error) string {
	if err != nil {
		return "err " + err.Error()
	}
	return fmt.Sprintf("%q", v)
}

func lpush(key string, left bool, vals ...string) collCmd {
	return func(s Scope) string {
		return answer(ListPush(s, []byte(key), bs(vals), left, false))
	}
}

func lpushx(key string, vals ...string) collCmd {
	return func(s Scope) string { return answer(ListPush(s, []byte(key), bs(vals), true, true)) }
}

func lpop(key string, left bool, count int64) collCmd {
	return func(s Scope) string {
		popped, exists, err := ListPop(s, []byte(key), left, count)
		return answer([]any{popped, exists}, err)
	}
}

func sadd(key string, ms ...string) collCmd {
	return func(s Scope) string { return answer(AddMembers(s, []byte(key), TypeSet, bs(ms), nil)) }
}

func srem(key string, typ string, ms ...string) collCmd {
	return func(s Scope) string { return answer(RemoveMembers(s, []byte(key), typ, bs(ms))) }
}

func hset(key string, fv ...string) collCmd {
	return func(s Scope) string {
		var fs, vs [][]byte
		for i := 0; i < len(fv); i += 2 {
			fs, vs = append(fs, []byte(fv[i])), append(vs, []byte(fv[i+1]))
		}
		return answer(AddMembers(s, []byte(key), TypeHash, fs, vs))
	}
}

// zadd is ZADD (ZINCRBY with f.Incr) of score-member pairs, answered as
// the command replies.
func zadd(key string, f ZAddFlags, pairs ...any) collCmd {
	return func(s Scope) string {
		var ms [][]byte
		var scores []float64
		for i := 0; i < len(pairs); i += 2 {
			scores, ms = append(scores, pairs[i].(float64)), append(ms, []byte(pairs[i+1].(string)))
		}
		res, err := ZAdd(s, []byte(key), f, ms, scores, 128, 64)
		switch {
		case err != nil || res.Fast:
			return answer(res.Added, err)
		case f.Incr && res.Processed > 0:
			return answer(res.Score, nil)
		case f.Incr:
			return "nil"
		case f.CH:
			return answer(res.Added+res.Updated, nil)
		}
		return answer(res.Added, nil)
	}
}

func zincrby(key string, by float64, m string) collCmd {
	return zadd(key, ZAddFlags{Incr: true}, by, m)
}

func expire(key string) collCmd {
	return func(s Scope) string { return answer(Expire(s, []byte(key), s.NowMS()+3600_000, 0)) }
}

func bs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// zpairs is n score-member pairs, member mi scoring i.
func zpairs(n int) []any {
	out := make([]any, 0, 2*n)
	for i, m := range many("m", n) {
		out = append(out, float64(i), m)
	}
	return out
}

func many(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// contents is what a key holds, as text.
func contents(t *testing.T, s Scope, key string) string {
	l, err := ListRange(s, []byte(key), 0, -1)
	if err == nil {
		return answer(l, nil)
	}
	ms, err := SetMembers(s, []byte(key))
	if err == nil {
		return answer(ms, nil)
	}
	es, err := ZRange(s, []byte(key), ZRangeQuery{By: ZRangeRank, Start: 0, End: -1})
	if err == nil {
		enc, err := Encoding(s, []byte(key), TypeZSet, EncodingLimits{})
		require.NoError(t, err)
		return answer([]any{es, enc, hasExpiry(t, s, key)}, nil)
	}
	fs, vs, err := HashAll(s, []byte(key))
	require.NoError(t, err)
	return answer([]any{fs, vs, hasExpiry(t, s, key)}, nil)
}

// hasExpiry reports whether key is live with an expiry.
func hasExpiry(t *testing.T, s Scope, key string) bool {
	cl, err := Open(s, []byte(key), TypeZSet)
	require.NoError(t, err)
	return cl.KS.Live && cl.KS.HasExpiry
}

// TestCollBatches runs a lone command held in flight, then a batch of
// commands that arrive meanwhile on one key, and checks that the batch
// shares one write and that every command is answered, and told its key's
// lifecycle, exactly as running them one by one in order does.
func TestCollBatches(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      string
		setup    []collCmd
		first    collCmd
		batch    []collCmd
		requests int64 // the most the batch may make
	}{
		{"list", "l", []collCmd{lpush("l", false, "a", "b", "c")}, lpush("l", true, "x"), []collCmd{
			lpush("l", false, "y", "z"), lpop("l", false, 1), lpop("l", true, 1), lpushx("l", "p"),
			lpop("l", false, 10), lpushx("l", "q"), lpop("l", true, 1), lpush("l", false, "w"), lpop("l", true, 0),
		}, 1},
		{"list absent", "l", nil, lpop("l", false, 1), []collCmd{
			lpush("l", true, "a"), lpop("l", false, 1), lpop("l", false, 1), lpushx("l", "b"), lpush("l", false, "c", "d"), lpop("l", true, 1),
		}, 2},
		{"list queue", "q", []collCmd{lpush("q", true, "j0")}, lpush("q", true, "j1"), []collCmd{
			lpush("q", true, "j2"), lpop("q", false, 1), lpush("q", true, "j3"), lpop("q", false, 1), lpop("q", false, 1), lpop("q", false, 1), lpop("q", false, 1),
		}, 1},
		{"list large", "L", []collCmd{lpush("L", false, many("e", 200)...)}, lpop("L", true, 1), []collCmd{
			lpush("L", true, "h1", "h2"), lpop("L", false, 3), lpop("L", true, 4), lpush("L", false, "t1"), lpop("L", false, 1),
		}, 3},
		{"list wrongtype", "s", []collCmd{sadd("s", "m")}, lpush("s", true, "x"), []collCmd{
			lpush("s", true, "y"), lpop("s", false, 1),
		}, 2},
		{"set", "s", []collCmd{sadd("s", "a", "b")}, sadd("s", "c"), []collCmd{
			sadd("s", "a", "d"), srem("s", TypeSet, "a", "b"), sadd("s", "a"), sadd("s", "a", "b"),
			srem("s", TypeSet, "a", "b", "c", "d", "zz"), sadd("s", "x"), srem("s", TypeSet, "y"),
		}, 1},
		{"set all present", "s", []collCmd{sadd("s", "a", "b")}, sadd("s", "c"), []collCmd{sadd("s", "a"), sadd("s", "b", "c")}, 1},
		{"set large", "S", []collCmd{sadd("S", many("m", 300)...)}, sadd("S", "n0"), []collCmd{
			sadd("S", "m1", "n1"), srem("S", TypeSet, "m2", "n1"), sadd("S", "n1", "n2"),
		}, 2},
		{"set wrongtype", "l", []collCmd{lpush("l", true, "a")}, sadd("l", "a"), []collCmd{sadd("l", "b"), srem("l", TypeSet, "a")}, 1},
		{"hash", "h", []collCmd{hset("h", "f", "1")}, hset("h", "g", "0"), []collCmd{
			hset("h", "f", "2", "g", "3"), srem("h", TypeHash, "f"), hset("h", "f", "4"), srem("h", TypeHash, "f", "g"), hset("h", "k", "5"),
		}, 1},
		{"hash emptied and filled", "h", []collCmd{hset("h", "f", "1"), expire("h")}, hset("h", "g", "0"), []collCmd{
			srem("h", TypeHash, "f", "g"), hset("h", "k", "5"),
		}, 2},
		{"zset", "z", []collCmd{zadd("z", ZAddFlags{}, 1.0, "a", 2.0, "b")}, zadd("z", ZAddFlags{}, 3.0, "c"), []collCmd{
			zadd("z", ZAddFlags{NX: true}, 5.0, "a", 4.0, "d"), zadd("z", ZAddFlags{XX: true}, 1.0, "e", 6.0, "d"),
			zadd("z", ZAddFlags{CH: true}, 7.0, "a", 2.0, "b", 0.0, "f"), zincrby("z", 1, "a"), zincrby("z", 2, "g"),
			zadd("z", ZAddFlags{Incr: true, NX: true}, 1.0, "a"), zadd("z", ZAddFlags{Incr: true, XX: true}, 1.0, "h"),
			zadd("z", ZAddFlags{Incr: true, GT: true}, -1.0, "a"), zadd("z", ZAddFlags{Incr: true, LT: true}, -1.0, "a"),
			zadd("z", ZAddFlags{GT: true, CH: true}, 1.0, "a", 9.0, "b"), zadd("z", ZAddFlags{LT: true}, 0.5, "c", 1.0, "i"),
			srem("z", TypeZSet, "a", "zz"), zincrby("z", 1, "a"), zincrby("z", math.Inf(1), "n"), zincrby("z", math.Inf(-1), "n"),
			zadd("z", ZAddFlags{Incr: true}, math.Inf(-1), "n"), zincrby("z", -1, "n"), srem("z", TypeZSet, "n"),
		}, 1},
		{"zset absent", "z", nil, srem("z", TypeZSet, "a"), []collCmd{
			zadd("z", ZAddFlags{XX: true}, 1.0, "a"), zadd("z", ZAddFlags{Incr: true, XX: true}, 1.0, "a"), zincrby("z", 2, "a"),
			srem("z", TypeZSet, "a"), zadd("z", ZAddFlags{GT: true}, 3.0, "b"), zadd("z", ZAddFlags{}, 1.0, "c"),
		}, 2},
		{"zset emptied and filled", "z", []collCmd{zadd("z", ZAddFlags{}, 1.0, "a"), expire("z"), zadd("z", ZAddFlags{}, 2.0, strings.Repeat("l", 65))},
			zincrby("z", 1, "a"), []collCmd{srem("z", TypeZSet, "a", strings.Repeat("l", 65)), zadd("z", ZAddFlags{}, 1.0, "b"), zincrby("z", 1, "c")}, 3},
		{"zset big", "z", []collCmd{zadd("z", ZAddFlags{}, 1.0, "a")}, zadd("z", ZAddFlags{}, 2.0, "b"), []collCmd{
			zadd("z", ZAddFlags{}, 3.0, strings.Repeat("l", 65)), srem("z", TypeZSet, strings.Repeat("l", 65)), zadd("z", ZAddFlags{}, 4.0, "c"),
		}, 1},
		{"zset large", "Z", []collCmd{zadd("Z", ZAddFlags{}, zpairs(300)...)}, zadd("Z", ZAddFlags{}, 1.0, "n0"), []collCmd{
			zadd("Z", ZAddFlags{CH: true}, 5.0, "m1", 1.0, "n1"), srem("Z", TypeZSet, "m2", "n1"), zincrby("Z", 2, "m3"),
			zadd("Z", ZAddFlags{Incr: true, GT: true}, -1.0, "m4"), zincrby("Z", 1, "n1"), zadd("Z", ZAddFlags{XX: true}, 9.0, "n2"),
		}, 3},
		{"zset wrongtype", "l", []collCmd{lpush("l", true, "a")}, zadd("l", ZAddFlags{}, 1.0, "a"), []collCmd{
			zincrby("l", 1, "b"), srem("l", TypeZSet, "a"),
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The reference: every command on its own, in order.
			ref := procScope{storeScope{context.Background(), memory.New(memory.Options{})}, NewProcess(nil)}
			var want []string
			var wantEvents [][]string
			for _, cmd := range tc.setup {
				cmd(ref)
			}
			for _, cmd := range append([]collCmd{tc.first}, tc.batch...) {
				var evs []string
				want = append(want, cmd(reportScope{ref, &evs}))
				wantEvents = append(wantEvents, evs)
			}
			wantContents := contents(t, ref, tc.key)

			st := &gatedStore{Store: memory.New(memory.Options{})}
			s := procScope{storeScope{context.Background(), st}, NewProcess(nil)}
			for _, cmd := range tc.setup {
				cmd(s)
			}
			got := make([]string, len(tc.batch)+1)
			gotEvents := make([][]string, len(tc.batch)+1)
			var wg sync.WaitGroup
			run := func(i int, cmd collCmd) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i] = cmd(reportScope{s, &gotEvents[i]})
				}()
			}
			st.arm()
			run(0, tc.first)
			<-st.held
			hc := &s.p.hotColls
			waiting := func() int {
				return hc.lists.waitingOps(laneKey(0, TypeList, []byte(tc.key))) + hc.members.waitingOps(laneKey(0, TypeSet, []byte(tc.key))) +
					hc.members.waitingOps(laneKey(0, TypeHash, []byte(tc.key))) + hc.zsets.waitingOps(laneKey(0, TypeZSet, []byte(tc.key)))
			}
			for i, cmd := range tc.batch {
				run(i+1, cmd)
				require.Eventually(t, func() bool { return waiting() == i+1 }, 10*time.Second, time.Millisecond)
			}
			before := st.requests.Load()
			close(st.release)
			wg.Wait()
			require.Equal(t, want, got)
			require.Equal(t, wantEvents, gotEvents)
			batches, members := s.p.Coalesced()
			require.Equal(t, [2]int64{1, int64(len(tc.batch))}, [2]int64{batches, members})
			// The lone command's own request was held; what it sends
			// after it is at most one more (its fallback).
			require.LessOrEqual(t, st.requests.Load()-before, tc.requests+1)
			require.Equal(t, wantContents, contents(t, s, tc.key))
		})
	}
}
