package model_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// The write units of XREADGROUP COUNT 10 and of XACK of 10 entries on a
// group with 100, 290 and 1,000 entries pending.
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
		})
	}
}
