package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
)

// TestListPushPopNoLoss runs pushes and pops of one list from several
// clients of several Processes on one store, as clients of several
// instances would, with neither the lane nor any lock between them
// (listPush and listPop directly): correctness must rest on the store's
// conditions alone, so every pushed element is popped exactly once.
func TestListPushPopNoLoss(t *testing.T) {
	type store struct {
		name string
		new  func(t *testing.T) dynastore.Store
	}
	stores := []store{
		{"memory", func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) }},
		{"faithful", func(*testing.T) dynastore.Store { return faithful.New(faithful.Options{Seed: 1, Scale: 0.05}) }},
	}
	if os.Getenv(dynamotest.EnvEndpoint) != "" {
		stores = append(stores, store{"dynamodb", func(t *testing.T) dynastore.Store { return dynamotest.NewStore(t, dynamo.Config{}) }})
	}
	layouts := []struct {
		name    string
		entries int
	}{
		{"inline", 1 << 12},
		{"large", 1}, // every list is large from its second element
	}
	const instances, clients, perClient = 3, 4, 25
	for _, b := range stores {
		for _, lay := range layouts {
			t.Run(b.name+"/"+lay.name, func(t *testing.T) {
				st := b.new(t)
				limits := func(string) InlineLimits { return InlineLimits{Entries: lay.entries, Bytes: InlineMaxBytes} }
				key := []byte("hot")
				var mu sync.Mutex
				popped := map[string]int{}
				refused := map[string]error{} // pushes that gave up, told so
				acked, popRefused := 0, 0
				var pushers, all sync.WaitGroup
				errs := make(chan error, 2*instances*clients)
				pushed := make(chan struct{})
				for i := range instances {
					s := procScope{storeScope{context.Background(), st}, NewProcess(limits)}
					for c := range clients {
						pushers.Add(1)
						all.Add(2)
						go func() {
							defer all.Done()
							defer pushers.Done()
							for j := range perClient {
								v := []byte(fmt.Sprintf("i%d-c%d-e%d", i, c, j))
								_, err := listPush(s, key, [][]byte{v}, j%2 == 0, false)
								mu.Lock()
								if err != nil {
									refused[string(v)] = err
								} else {
									acked++
								}
								mu.Unlock()
							}
						}()
						go func() {
							defer all.Done()
							for k := 0; ; k++ {
								var done bool
								select {
								case <-pushed:
									done = true
								default:
								}
								got, _, err := listPop(s, key, k%2 == 0, 2)
								if err != nil {
									mu.Lock()
									popRefused++
									mu.Unlock()
									continue
								}
								mu.Lock()
								for _, g := range got {
									popped[string(g)]++
								}
								mu.Unlock()
								if len(got) == 0 && done {
									return
								}
							}
						}()
					}
				}
				pushers.Wait()
				close(pushed)
				all.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				var dup []string
				for v, n := range popped {
					if n != 1 {
						dup = append(dup, v)
					}
				}
				require.Empty(t, dup, "popped more than once")
				// A push whose outcome is unknown (a busy machine can time an
				// applied request out) may or may not have been applied; any
				// other refusal must have written nothing.
				unknown := 0
				for v, err := range refused {
					require.Error(t, err)
					if errors.Is(err, dynastore.ErrOutcomeUnknown) {
						unknown++
						continue
					}
					require.Zero(t, popped[v], "push of %s was refused yet popped", v)
				}
				require.GreaterOrEqual(t, len(popped), acked, "elements delivered")
				require.LessOrEqual(t, len(popped), acked+unknown, "elements delivered")
				require.Equal(t, instances*clients*perClient, acked+len(refused))
				t.Logf("pushed %d, refused %d, delivered %d, pops refused %d", acked+len(refused), len(refused), len(popped), popRefused)
			})
		}
	}
}
