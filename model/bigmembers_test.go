package model_test

import (
	"bytes"
	"testing"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// saddS is SADD of members to key.
func saddS(key string, ms ...[]byte) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		return model.AddMembers(s, []byte(key), model.TypeSet, ms, nil)
	}
}

// A big set member's writes and reads, and the requests each makes: SADD
// stages its chunks (the registry entry and BatchWriteItems of 8 chunks)
// before its commit; SISMEMBER reads the member item alone; SMEMBERS the
// partition and BatchGetItems of 8 chunks.
func TestBigMemberRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		for _, tc := range []struct {
			name    string
			n       int
			batches int64
		}{
			{"1 MB", 1 << 20, 1},
			{"10 MB", 10 << 20, 4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				key := "s" + tc.name
				m := randomBytes(9, tc.n)
				runSteps(t, e, []step{
					{name: tc.name + " sadd big", run: saddS(key, m, []byte("small")), want: int64(2), ops: map[string]int64{get: 1, putOp: 2, dynastore.OpBatchWriteItem: tc.batches, tx: 2}},
					{name: tc.name + " sadd big again", run: saddS(key, m), want: int64(0), ops: map[string]int64{get: 1, batch: 1}},
					{name: tc.name + " sismember big", run: func(s model.Scope) (any, error) {
						return model.SetIsMember(s, []byte(key), [][]byte{m, append(bytes.Clone(m[:len(m)-1]), m[len(m)-1]+1)})
					}, want: []bool{true, false}, ops: map[string]int64{get: 1, batch: 1}},
					{name: tc.name + " smembers big", run: func(s model.Scope) (any, error) {
						ms, err := model.SetMembers(s, []byte(key))
						n := 0
						for _, x := range ms {
							if bytes.Equal(x, m) {
								n++
							}
						}
						return []int{len(ms), n}, err
					}, want: []int{2, 1}, ops: map[string]int64{get: 1, dynastore.OpQuery: 1, batch: tc.batches}},
				})
				for _, label := range []string{"sadd big", "sismember big", "smembers big"} {
					var r, w float64
					for k, v := range e.stats.Snapshot() {
						if k.Label == tc.name+" "+label {
							r += v.RCU
							w += v.WCU
						}
					}
					t.Logf("%s of a %s member: %.0f read units, %.0f write units", label, tc.name, r, w)
				}
			})
		}
	})
}
