package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// TestFence checks LOCK.GUARD's fence through coord's API: outside a unit
// of work it is only kept (for the next EXEC), inside one it checks the
// lease at once, and a unit whose lease was lost before it committed
// either runs again and learns so (a script: ErrNotOwner) or is refused
// (EXEC's fences, required before it began: ErrWatched).
func TestFence(t *testing.T) {
	clock := func() coord.Clock { return coord.NewClock(time.Now(), 0) }
	cases := []struct {
		name string
		// watched: the fence is required before the unit (EXEC); else
		// the unit's work guards itself (a script).
		watched bool
		// lose: another owner takes the lock while the first attempt runs.
		lose    bool
		wantErr error
		// wantAttempts is how many times the work ran.
		wantAttempts int
	}{
		{name: "a script that holds the lock commits", wantAttempts: 1},
		{name: "a script that lost it runs again and learns so", lose: true, wantErr: coord.ErrNotOwner, wantAttempts: 2},
		{name: "EXEC that holds the lock commits", watched: true, wantAttempts: 1},
		{name: "EXEC that lost it is refused", watched: true, lose: true, wantErr: model.ErrWatched, wantAttempts: 1},
	}
	for name, newStore := range stores() {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				c := model.StoreScope(context.Background(), newStore(t, nil))
				var s coord.Service
				l, ok, err := s.Acquire(c, []byte("l"), []byte("me"), time.Minute, 0, clock)
				require.NoError(t, err)
				require.True(t, ok)
				f, err := coord.LockFence([]byte("l"), l.Token)
				require.NoError(t, err)
				inUnit, err := s.Guard(c, f, clock())
				require.NoError(t, err)
				require.False(t, inUnit, "outside a unit of work the fence waits for EXEC")

				u := model.Unit{Keys: [][]byte{[]byte("k")}}
				if tc.watched {
					u.Begin = func(t *model.Txn) error { f.Require(t, clock()); return nil }
				}
				attempts := 0
				u.Work = func(txn *model.Txn) error {
					attempts++
					if !tc.watched {
						inUnit, err := s.Guard(inTxn{c, txn}, f, clock())
						if err != nil {
							return err
						}
						require.True(t, inUnit)
					}
					_, err := txn.Put(c, model.StringItem(0, []byte("k"), []byte("v"), model.OriginArg, 0), dynastore.WriteOptions{})
					require.NoError(t, err)
					if tc.lose && attempts == 1 {
						_, err := s.Release(c, []byte("l"), []byte("me"), 0, clock())
						require.NoError(t, err)
						_, ok, err := s.Acquire(c, []byte("l"), []byte("other"), time.Minute, 0, clock)
						require.NoError(t, err)
						require.True(t, ok)
					}
					return nil
				}
				_, err = u.Run(c)
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, tc.wantAttempts, attempts)
			})
		}
	}
}
