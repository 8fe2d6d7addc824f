package model_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// The write units of XREADGROUP COUNT 10 and of XACK of 10 entries on a
// group with 100, 290 and 1,000 entries pending: the entries' pages and
// the key item, not an item per entry.
func TestStreamPELUnits(t *testing.T) {
	for _, pending := range []int{100, 290, 1000} {
		t.Run(fmt.Sprint(pending), func(t *testing.T) {
			stats := dynastore.NewStats()
			e := &keysEnv{store: memory.New(memory.Options{Observer: stats}), stats: stats, proc: model.NewProcess(testLimits), now: time.Now().UnixMilli()}
			s := e.scope("setup", 0)
			key := []byte("s")
			for i := 1; i <= pending+10; i++ {
				_, err := xaddS("s", uint64(i), []byte("f"), []byte("v"))(s)
				require.NoError(t, err)
			}
			require.NoError(t, model.XGroupCreate(s, key, []byte("g"), model.XGroupArgs{ID: []byte("0")}))
			read := func(label string, count int64) {
				gs := &model.XReadGroupState{Keys: [][]byte{key}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte("c")}
				got, err := model.XReadGroup(e.scope(label, 0), gs, count, false)
				require.NoError(t, err)
				require.Len(t, got[0].Entries, int(count))
			}
			read("setup", int64(pending))
			units := func(label string) (r, w float64) {
				for k, v := range stats.Snapshot() {
					if k.Label == label {
						r, w = r+v.RCU, w+v.WCU
					}
				}
				return r, w
			}
			read("xreadgroup", 10)
			rr, rw := units("xreadgroup")
			ids := make([]model.StreamID, 10)
			for i := range ids {
				ids[i] = model.StreamID{Ms: uint64(pending/2 + i), Seq: 1}
			}
			acked, err := model.XAck(e.scope("xack", 0), key, []byte("g"), func() ([]model.StreamID, error) { return ids, nil })
			require.NoError(t, err)
			require.EqualValues(t, 10, acked)
			ar, aw := units("xack")
			t.Logf("%d pending: XREADGROUP COUNT 10 %.1f RU %.1f WU (%v); XACK of 10 %.1f RU %.1f WU (%v)", pending, rr, rw, e.ops("xreadgroup"), ar, aw, e.ops("xack"))
			// The key item and the page or two the entries are in.
			require.LessOrEqual(t, rw, 6.0)
			require.LessOrEqual(t, aw, 6.0)
		})
	}
}

// Random deliveries, claims and acknowledgements of a group whose pending
// entries are in pages (split, merged, emptied): XPENDING lists exactly
// the entries a plain model of the list holds, with their consumers, and
// the pages stay few.
func TestStreamPELPagesRandom(t *testing.T) {
	stores := map[string]func() dynastore.Store{
		"memory":   func() dynastore.Store { return memory.New(memory.Options{}) },
		"faithful": func() dynastore.Store { return faithful.New(faithful.Options{Seed: 3, Scale: 0.05}) },
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			c := newScope(newStore())
			const n = 1500
			key := []byte("s")
			for i := 1; i <= n; i++ {
				_, err := xaddS("s", uint64(i), []byte("f"), []byte("v"))(c)
				require.NoError(t, err)
			}
			require.NoError(t, model.XGroupCreate(c, key, []byte("g"), model.XGroupArgs{ID: []byte("0")}))
			r := rand.New(rand.NewPCG(5, 9))
			pending := map[model.StreamID]string{}
			delivered := 0
			for step := 0; step < 400; step++ {
				consumer := fmt.Sprintf("c%d", r.IntN(3))
				switch op := r.IntN(3); {
				case op == 0 && delivered < n:
					count := 1 + r.IntN(40)
					gs := &model.XReadGroupState{Keys: [][]byte{key}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte(consumer)}
					got, err := model.XReadGroup(c, gs, int64(count), false)
					require.NoError(t, err)
					for _, e := range got[0].Entries {
						pending[e.ID] = consumer
						delivered++
					}
				case op == 1:
					var ids []model.StreamID
					for range 1 + r.IntN(30) {
						id := model.StreamID{Ms: uint64(1 + r.IntN(max(delivered, 1))), Seq: 1}
						ids = append(ids, id)
					}
					want := map[model.StreamID]bool{}
					for _, id := range ids {
						if _, ok := pending[id]; ok {
							want[id] = true
						}
					}
					acked, err := model.XAck(c, key, []byte("g"), func() ([]model.StreamID, error) { return ids, nil })
					require.NoError(t, err)
					require.EqualValues(t, len(want), acked)
					for id := range want {
						delete(pending, id)
					}
				default:
					lo := 1 + r.IntN(max(delivered, 1))
					var ids []model.StreamID
					for i := lo; i < lo+r.IntN(20); i++ {
						ids = append(ids, model.StreamID{Ms: uint64(i), Seq: 1})
					}
					out, _, err := model.XClaim(c, key, []byte("g"), []byte(consumer), func() (model.XClaimArgs, error) {
						return model.XClaimArgs{IDs: ids, RetryCount: -1, JustID: true}, nil
					})
					require.NoError(t, err)
					for _, e := range out {
						_, ok := pending[e.ID]
						require.True(t, ok, "claimed %v, not pending", e.ID)
						pending[e.ID] = consumer
					}
				}
			}
			_, entries, err := model.XPending(c, key, []byte("g"), &model.XPendingRange{Start: model.StreamID{}, End: model.MaxStreamID, Count: n})
			require.NoError(t, err)
			got := map[model.StreamID]string{}
			for _, e := range entries {
				got[e.ID] = e.Consumer
			}
			require.Equal(t, pending, got)
			require.EqualValues(t, len(pending), pendingCount(t, c, "s"))
			if gen := pelKeyGen(t, c, "s"); gen != nil {
				items := genItems(t, c, gen)
				require.LessOrEqual(t, items, len(pending)/2+2, "%d pages for %d entries", items, len(pending))
				t.Logf("%d entries pending in %d pages", len(pending), items)
			}
		})
	}
}

// A consumer with a long name (20 KB): its pending entries' pages stay
// under an item, however many of them there are.
func TestStreamPELLongConsumerNames(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		key := []byte("s")
		const n = 150
		for i := 1; i <= n; i++ {
			_, err := xaddS("s", uint64(i), []byte("f"), []byte("v"))(c)
			require.NoError(t, err)
		}
		require.NoError(t, model.XGroupCreate(c, key, []byte("g"), model.XGroupArgs{ID: []byte("0")}))
		name := string(randomBytes(15, 20<<10))
		gs := &model.XReadGroupState{Keys: [][]byte{key}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte(name)}
		got, err := model.XReadGroup(c, gs, n, false)
		require.NoError(t, err)
		require.Len(t, got[0].Entries, n)
		_, entries, err := model.XPending(c, key, []byte("g"), &model.XPendingRange{Start: model.StreamID{}, End: model.MaxStreamID, Count: n})
		require.NoError(t, err)
		require.Len(t, entries, n)
		for _, e := range entries {
			require.Equal(t, name, e.Consumer)
		}
	})
}
