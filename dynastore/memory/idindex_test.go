package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The index against a map, through random inserts and removes. Hashes are
// drawn from a few values, so runs collide, wrap around the table's end
// and shift back on removes; every id stays findable and no removed one is.
func TestIDIndexMatchesMap(t *testing.T) {
	for _, hashes := range []int{1, 3, 1 << 62} {
		t.Run(fmt.Sprintf("hashes=%d", hashes), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(hashes), 7))
			var x idIndex
			model := map[string]*entry{}
			hashOf := map[string]uint64{}
			hash := func(id string) uint64 {
				if h, ok := hashOf[id]; ok {
					return h
				}
				// High and low values, so that homes land near the
				// table's end as well as its start.
				h := nonZero(r.Uint64N(uint64(hashes)) ^ uint64(r.IntN(2))<<63 | 15)
				hashOf[id] = h
				return h
			}
			check := func() {
				require.Equal(t, len(model), x.len())
				for id := range hashOf {
					require.Same(t, model[id], x.find([]byte(id), hashOf[id]), "id %q", id)
				}
			}
			for i := range 3000 {
				id := fmt.Sprint(r.IntN(200))
				h := hash(id)
				if e, ok := model[id]; ok {
					x.remove(e, h)
					delete(model, id)
				} else {
					e := newEntry([]byte(id), nil, 0)
					x.insert(e, h)
					model[id] = e
				}
				if i%97 == 0 {
					check()
				}
			}
			check()
			for id, e := range model {
				x.remove(e, hashOf[id])
			}
			require.Zero(t, x.len())
			for _, s := range x.slots {
				require.Zero(t, s.hash, "an emptied table has no slot in use")
			}
		})
	}
}

// Removing an entry the index does not hold (or an empty index) is a
// no-op; byHash finds only an entry filed under the hash asked for, in its
// home slot or further along the probe run.
func TestIDIndexRemoveAbsent(t *testing.T) {
	var x idIndex
	a, b := newEntry([]byte("a"), nil, 0), newEntry([]byte("b"), nil, 0)
	x.remove(a, 5)
	require.Nil(t, x.byHash(5))
	x.insert(a, 5)
	x.remove(b, 5)
	require.Equal(t, 1, x.len())
	require.Same(t, a, x.find([]byte("a"), 5))
	require.Nil(t, x.find([]byte("b"), 5))
	require.Same(t, a, x.byHash(5))
	require.Nil(t, x.byHash(5+minSlots), "the same home slot, another hash")
	require.Nil(t, x.byHash(6))
	x.insert(b, 5+minSlots) // displaced to the next slot
	require.Same(t, b, x.byHash(5+minSlots))
	require.Same(t, a, x.byHash(5))
}
