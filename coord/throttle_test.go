package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// TestThrottle runs CL.THROTTLE's recipe through coord's API at a clock
// that stands still: a limit of 2 (max_burst 1) at one per minute. Each
// call's request is the one its state needs, guessed from the TAT the
// process saw last: a fresh bucket is written at once, a filling one
// bumped, a full one only read; inside a unit of work the key (another
// one) is read first and the write goes with the commit.
func TestThrottle(t *testing.T) {
	q := coord.NewGCRAQuota(1, 1, 60, 1)
	// An hour ahead, not a fixed past instant: DynamoDB Local deletes
	// items whose TTL attribute has passed, and could take the bucket
	// away between two calls.
	now := time.Unix(time.Now().Unix()+3600, 123_456_789)
	clk := coord.ThrottleClock{Now: func() time.Time { return now }, Again: func() {}}
	calls := []struct {
		name   string
		inUnit bool
		want   coord.ThrottleReply
		ops    map[string]int64
	}{
		{"a fresh bucket", false, coord.ThrottleReply{Limit: 2, Remaining: 1, RetryAfter: -1, ResetAfter: 60}, map[string]int64{dynastore.OpPutItem: 1}},
		{"a filling bucket", false, coord.ThrottleReply{Limit: 2, Remaining: 0, RetryAfter: -1, ResetAfter: 120}, map[string]int64{dynastore.OpUpdateItem: 1}},
		{"a full bucket", false, coord.ThrottleReply{Limited: true, Limit: 2, Remaining: 0, RetryAfter: 60, ResetAfter: 120}, map[string]int64{dynastore.OpGetItem: 1}},
		{"a fresh bucket in a unit", true, coord.ThrottleReply{Limit: 2, Remaining: 1, RetryAfter: -1, ResetAfter: 60}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
	}
	for name, newStore := range stores() {
		t.Run(name, func(t *testing.T) {
			stats := dynastore.NewStats()
			c := model.StoreScope(dynastore.WithLabel(context.Background(), "cl.throttle"), newStore(t, stats))
			var s coord.Service
			for _, call := range calls {
				stats.Reset()
				var got coord.ThrottleReply
				var err error
				if call.inUnit {
					u := model.Unit{Keys: [][]byte{[]byte("u")}}
					u.Work = func(t *model.Txn) error {
						got, err = s.Throttle(inTxn{c, t}, []byte("u"), q, clk)
						return err
					}
					_, err = u.Run(c)
				} else {
					got, err = s.Throttle(c, []byte("k"), q, clk)
				}
				require.NoError(t, err, call.name)
				require.Equal(t, call.want, got, call.name)
				ops := map[string]int64{}
				for _, op := range []string{dynastore.OpGetItem, dynastore.OpBatchGetItem, dynastore.OpPutItem, dynastore.OpUpdateItem, dynastore.OpTransactWriteItems} {
					if n := stats.Requests("cl.throttle", op); n > 0 {
						ops[op] = n
					}
				}
				require.Equal(t, call.ops, ops, call.name)
			}
		})
	}
}

// stores are the stores coord's tests run on: the memory store, and
// DynamoDB Local when REDAMO_TEST_DYNAMODB_ENDPOINT is set; st (nil: none)
// counts their requests.
func stores() map[string]func(t *testing.T, st *dynastore.Stats) dynastore.Store {
	return map[string]func(t *testing.T, st *dynastore.Stats) dynastore.Store{
		"memory": func(_ *testing.T, st *dynastore.Stats) dynastore.Store {
			return memory.New(memory.Options{Observer: observer(st)})
		},
		"dynamodb": func(t *testing.T, st *dynastore.Stats) dynastore.Store {
			return dynamotest.NewStore(t, dynamo.Config{Observer: observer(st)})
		},
	}
}

// observer is st as an Observer, nil when st is.
func observer(st *dynastore.Stats) dynastore.Observer {
	if st == nil {
		return nil
	}
	return st
}

// inTxn is a scope whose data is a unit's Txn, as a command's run by EXEC.
type inTxn struct {
	model.Scope
	t *model.Txn
}

func (s inTxn) Data() dynastore.Store { return s.t }
