package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
)

// TestMembersRaceNoLoss has every client of three Processes add the same
// members of one set or hash, then remove them all, past the lanes
// (addMembers and removeMembers directly): each member is reported added
// once and removed once in all, as if the commands ran one at a time.
func TestMembersRaceNoLoss(t *testing.T) {
	stores := map[string]func(t *testing.T) dynastore.Store{
		"memory":   func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) },
		"faithful": func(*testing.T) dynastore.Store { return faithful.New(faithful.Options{Seed: 1, Scale: 0.05}) },
	}
	if os.Getenv(dynamotest.EnvEndpoint) != "" {
		stores["dynamodb"] = func(t *testing.T) dynastore.Store { return dynamotest.NewStore(t, dynamo.Config{}) }
	}
	const instances, clients, members = 3, 3, 30
	for name, newStore := range stores {
		for _, typ := range []string{TypeSet, TypeHash} {
			for _, entries := range []int{1 << 12, 1} {
				t.Run(fmt.Sprintf("%s/%s/inline=%d", name, typ, entries), func(t *testing.T) {
					st := newStore(t)
					limits := func(string) InlineLimits { return InlineLimits{Entries: entries, Bytes: InlineMaxBytes} }
					var ps []procScope
					for range instances {
						ps = append(ps, procScope{storeScope{context.Background(), st}, NewProcess(limits)})
					}
					key := []byte("hot")
					valsFor := func() [][]byte { // a hash's field values
						if typ == TypeHash {
							return [][]byte{[]byte("v")}
						}
						return nil
					}
					phase := func(rem bool) (total, refused, unknown int64) {
						var wg sync.WaitGroup
						var sum, bad, unsure atomic.Int64
						for w := range instances * clients {
							s := ps[w%instances]
							wg.Add(1)
							go func() {
								defer wg.Done()
								for i := range members {
									m := [][]byte{[]byte(fmt.Sprintf("m%d", (i+w*7)%members))}
									var n int64
									var err error
									if rem {
										n, err = removeMembers(s, key, typ, m)
									} else {
										n, err = addMembers(s, key, typ, m, valsFor())
									}
									if err != nil {
										bad.Add(1)
										if errors.Is(err, dynastore.ErrOutcomeUnknown) {
											unsure.Add(1)
										}
										continue
									}
									sum.Add(n)
								}
							}()
						}
						wg.Wait()
						return sum.Load(), bad.Load(), unsure.Load()
					}
					// A command that gave up under conflicts is its client's
					// error and changed nothing: one client then finishes
					// each phase alone, which finds exactly what the racing
					// clients left undone.
					finish := func(rem bool) int64 {
						var n int64
						for i := range members {
							m := [][]byte{[]byte(fmt.Sprintf("m%d", i))}
							var k int64
							var err error
							if rem {
								k, err = removeMembers(ps[0], key, typ, m)
							} else {
								k, err = addMembers(ps[0], key, typ, m, valsFor())
							}
							require.NoError(t, err)
							n += k
						}
						return n
					}
					// A command whose outcome is unknown (a busy machine
					// can time an applied request out) may have done its
					// part unreported.
					added, refusedAdd, unknown := phase(false)
					added += finish(false)
					require.LessOrEqual(t, added, int64(members), "members reported added")
					require.GreaterOrEqual(t, added, members-unknown, "members reported added")
					removed, refusedRem, unknown := phase(true)
					removed += finish(true)
					require.LessOrEqual(t, removed, int64(members), "members reported removed")
					require.GreaterOrEqual(t, removed, members-unknown, "members reported removed")
					t.Logf("added %d, removed %d, refused %d+%d", added, removed, refusedAdd, refusedRem)
				})
			}
		}
	}
}
