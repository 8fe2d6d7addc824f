package model

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
)

// TestListContentionLosesNothing runs pushes and pops of one list
// concurrently from several goroutines of one process and of three, past
// the lanes and key locks that normally serialise a process's own writers
// (listPush and listPop directly): every push acknowledged is popped
// exactly once, whatever the contention, on an inline and a large list.
// A push refused under contention (it gave up after conflicting
// attempts, as the faithful store's conflicts can make it) is the
// client's error, not a loss.
func TestListContentionLosesNothing(t *testing.T) {
	stores := map[string]func(t *testing.T) dynastore.Store{
		"memory":   func(*testing.T) dynastore.Store { return memory.New(memory.Options{}) },
		"faithful": func(*testing.T) dynastore.Store { return faithful.New(faithful.Options{Seed: 1, Scale: 0.1}) },
	}
	if os.Getenv(dynamotest.EnvEndpoint) != "" {
		stores["dynamodb"] = func(t *testing.T) dynastore.Store { return dynamotest.NewStore(t, dynamo.Config{}) }
	}
	for name, newStore := range stores {
		for _, procs := range []int{1, 3} {
			for _, large := range []bool{false, true} {
				t.Run(name+"/procs="+strconv.Itoa(procs)+"/large="+strconv.FormatBool(large), func(t *testing.T) {
					listContention(t, newStore(t), procs, large)
				})
			}
		}
	}
}

func listContention(t *testing.T, st dynastore.Store, procs int, large bool) {
	lim := func(string) InlineLimits { return InlineLimits{Entries: 128, Bytes: 8192} }
	if large {
		lim = func(string) InlineLimits { return InlineLimits{Entries: 1, Bytes: 16} }
	}
	var ps []procScope
	for range procs {
		ps = append(ps, procScope{storeScope{context.Background(), st}, NewProcess(lim)})
	}
	const per, workers = 40, 6
	key := []byte("l")
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		popped = map[string]int{}
		acked  = map[string]bool{}
	)
	take := func(vals [][]byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range vals {
			popped[string(v)]++
		}
	}
	for w := range workers {
		s := ps[w%procs]
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range per {
				v := strconv.Itoa(w*per + i)
				if _, err := listPush(s, key, [][]byte{[]byte(v)}, false, false); err == nil {
					mu.Lock()
					acked[v] = true
					mu.Unlock()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range per {
				if vals, _, err := listPop(s, key, true, 1); err == nil {
					take(vals)
				}
			}
		}()
	}
	wg.Wait()
	for {
		vals, _, err := listPop(ps[0], key, true, 100)
		require.NoError(t, err)
		if len(vals) == 0 {
			break
		}
		take(vals)
	}
	require.NotEmpty(t, acked)
	for v := range acked {
		require.Equal(t, 1, popped[v], "element %s", v)
	}
	for v, n := range popped {
		require.Equal(t, 1, n, "element %s", v)
	}
}
