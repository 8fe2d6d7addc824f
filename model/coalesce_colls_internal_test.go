package model

import (
	"context"
	"fmt"
	"strconv"
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

func bs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
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
	fs, vs, err := HashAll(s, []byte(key))
	require.NoError(t, err)
	return answer([]any{fs, vs}, nil)
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
				return hc.lists.waitingOps("") + hc.lists.waitingOps(laneKey(0, TypeList, []byte(tc.key))) + hc.members.waitingOps(laneKey(0, TypeSet, []byte(tc.key))) + hc.members.waitingOps(laneKey(0, TypeHash, []byte(tc.key)))
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
