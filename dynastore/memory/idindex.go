package memory

import "hash/maphash"

// idIndex finds a shard's entries by id: an open-addressing hash table
// whose slots hold each id's full 64-bit hash next to its entry, probed
// linearly and kept free of tombstones by shifting back on delete.
//
// It replaced a map[string]*entry. On a large store a point request
// waits for memory at every dependent read, and the map's lookup made
// three or four of them (the group's control word, the slot, the key's
// bytes in the entry, the entry) where a slot here is one read and leads
// to the entry, whose id is compared only when the hashes match. GET, SET
// and INCR all gain from it.
type idIndex struct {
	slots []idSlot // a power of two of them, or none
	n     int
}

type idSlot struct {
	hash uint64 // 0: an empty slot (hashes of 0 are stored as 1)
	e    *entry
}

// idSeed seeds every index's hashes. One seed for the process is enough:
// the hash only has to spread ids, and a lookup's hash is computed before
// the shard's lock is taken.
var idSeed = maphash.MakeSeed()

// idHash is the hash an index files id under.
func idHash(id []byte) uint64 { return nonZero(maphash.Bytes(idSeed, id)) }

func idHashString(id string) uint64 { return nonZero(maphash.String(idSeed, id)) }

func nonZero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// minSlots is the size of a shard's first table.
const minSlots = 16

// len returns the number of entries.
func (x *idIndex) len() int { return x.n }

// find returns the entry at id, whose hash is h (nil if none).
func (x *idIndex) find(id []byte, h uint64) *entry {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		switch {
		case s.hash == 0:
			return nil
		case s.hash == h && s.e.id == string(id):
			return s.e
		}
	}
}

// byHash returns the first entry filed under hash h (nil if none): a
// lookup that compares no id, enough for a prefetch. It follows the probe
// run, whose slots share a cache line or two: an entry displaced from its
// home slot (linear probing displaces many as the table fills up) was
// otherwise not prefetched at all.
func (x *idIndex) byHash(h uint64) *entry {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s := &x.slots[i]; s.hash {
		case 0:
			return nil
		case h:
			return s.e
		}
	}
}

// insert adds e, whose id is not in the index yet, filed under hash h.
func (x *idIndex) insert(e *entry, h uint64) {
	// At most three quarters full: linear probing's runs stay short.
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.place(idSlot{h, e})
	x.n++
}

// place puts s in the first free slot from its home; there is one.
func (x *idIndex) place(s idSlot) {
	mask := uint64(len(x.slots) - 1)
	i := s.hash & mask
	for x.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

func (x *idIndex) grow() {
	old := x.slots
	x.slots = make([]idSlot, max(minSlots, 2*len(old)))
	for _, s := range old {
		if s.hash != 0 {
			x.place(s)
		}
	}
}

// remove deletes e, filed under hash h, if the index holds it.
func (x *idIndex) remove(e *entry, h uint64) {
	if x.n == 0 {
		return
	}
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].e != e {
		if x.slots[i].hash == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Shift back every later slot of the run that may sit at i, so that
	// no probe for it stops early at the hole: a slot may move to i when
	// its home is not cyclically within (i, j].
	for j := (i + 1) & mask; x.slots[j].hash != 0; j = (j + 1) & mask {
		home := x.slots[j].hash & mask
		if (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = idSlot{}
	x.n--
}
