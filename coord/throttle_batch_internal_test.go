package coord

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// TestThrottleBatch checks a batch of CL.THROTTLE calls on one key against
// the same calls made one by one at the same instant: the same replies and
// errors, and the same TAT left, from one read and one write.
func TestThrottleBatch(t *testing.T) {
	now := time.Unix(1_700_000_000, 123_456_789)
	clk := ThrottleClock{Now: func() time.Time { return now }, Again: func() {}}
	small := NewGCRAQuota(2, 1, 60, 1) // 3 calls per minute
	wide := NewGCRAQuota(10, 10, 1, 2) // costs 2
	back := NewGCRAQuota(5, 1, 1, -1)  // moves the TAT back
	for _, tc := range []struct {
		name   string
		setup  func(c model.Scope)
		quotas []GCRAQuota
		ops    map[string]int64
	}{
		{"fresh, fills, then limited", nil, []GCRAQuota{small, small, small, small, small}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{"mixed quotas", nil, []GCRAQuota{wide, small, wide, back, small, wide}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{"all limited", func(c model.Scope) {
			var s Service
			for range 3 {
				_, err := s.Throttle(c, []byte("k"), small, clk)
				require.NoError(t, err)
			}
		}, []GCRAQuota{small, small}, map[string]int64{dynastore.OpGetItem: 1}},
		{"wrong type", func(c model.Scope) {
			_, err := model.AddMembers(c, []byte("k"), model.TypeSet, [][]byte{[]byte("m")}, nil)
			require.NoError(t, err)
		}, []GCRAQuota{small, small}, map[string]int64{dynastore.OpGetItem: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(batch bool) ([]gcraResult, []error, map[string]int64, model.Scope) {
				stats := dynastore.NewStats()
				c := model.StoreScope(dynastore.WithLabel(context.Background(), "cl.throttle"), memory.New(memory.Options{Observer: stats}))
				if tc.setup != nil {
					tc.setup(c)
				}
				stats.Reset()
				var s Service
				var res []gcraResult
				var errs []error
				if batch {
					ops := make([]throttleOp, len(tc.quotas))
					for i, q := range tc.quotas {
						ops[i] = throttleOp{q, clk}
					}
					res, errs = s.throttleBatch(c, []byte("k"), ops)
				} else {
					for _, q := range tc.quotas {
						r, err := s.throttle(c, []byte("k"), q, clk)
						res, errs = append(res, r), append(errs, err)
					}
				}
				ops := map[string]int64{}
				for _, op := range []string{dynastore.OpGetItem, dynastore.OpPutItem, dynastore.OpUpdateItem} {
					if n := stats.Requests("cl.throttle", op); n > 0 {
						ops[op] = n
					}
				}
				return res, errs, ops, c
			}
			want, wantErrs, _, ref := run(false)
			got, gotErrs, ops, c := run(true)
			require.Equal(t, want, got)
			require.Equal(t, wantErrs, gotErrs)
			require.Equal(t, tc.ops, ops)
			k := model.ItemKey(0, []byte("k"))
			a, err := ref.Data().Get(ref, k)
			require.NoError(t, err)
			b, err := c.Data().Get(c, k)
			require.NoError(t, err)
			require.Equal(t, a.Get(model.AttrValue), b.Get(model.AttrValue))
			require.Equal(t, a.Get(model.AttrExpiry), b.Get(model.AttrExpiry))
		})
	}
}
