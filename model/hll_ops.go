package model

// The HyperLogLog commands on key items: PFADD and PFCOUNT's cache update
// are read-modify-writes of one key item, PFCOUNT of several keys one
// batched read, PFMERGE a batched read and one write of the target
// guarded by the sources read.

import (
	"github.com/redamo/redamo/dynastore"
)

// hllOf is a key's HyperLogLog value as read: nil when absent, a copy
// the caller may edit; ErrWrongType for another type, ErrNotHLL for a
// string that is not one.
func hllOf(ks KeyState) ([]byte, error) {
	v, err := stringOf(ks)
	if err != nil || !ks.Live {
		return nil, err
	}
	if !IsHLL(v) {
		return nil, ErrNotHLL
	}
	return append([]byte{}, v...), nil
}

// PFAdd adds elements to the HyperLogLog at key (created if absent) and
// reports whether it changed (or was created). maxSparse is
// hll-sparse-max-bytes. One read, and one conditional write when it
// changed.
func PFAdd(s Scope, key []byte, elems [][]byte, maxSparse int64) (bool, error) {
	if !KeyFits(key) {
		return false, ErrKeyTooLong
	}
	var updated bool
	err := mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		v, err := hllOf(ks)
		if err != nil {
			return nil, err
		}
		updated = v == nil
		if updated {
			v = NewHLL()
		}
		h := hll{v: v, maxSparse: maxSparse}
		for _, e := range elems {
			ch, err := h.add(e)
			if err != nil {
				return nil, err
			}
			updated = updated || ch
		}
		if !updated {
			return nil, nil
		}
		hllInvalidate(h.v)
		return &keyWrite{put: StringItem(s.DB(), key, h.v, OriginEdited, ks.Expiry)}, nil
	})
	return updated, err
}

// PFCount is the cardinality of the HyperLogLog at key (0 when absent,
// found false): the cached one when valid (one read), else computed and
// cached in the value as Redis does (and a conditional write).
func PFCount(s Scope, key []byte) (card uint64, found bool, err error) {
	ks, err := ReadKey(s, key)
	if err != nil {
		return 0, false, err
	}
	v, err := hllOf(ks)
	if err != nil || v == nil {
		return 0, false, err
	}
	if c, ok := hllCached(v); ok {
		return c, true, nil
	}
	err = mutateKey(s, key, &ks, func(ks KeyState) (*keyWrite, error) {
		v, err := hllOf(ks)
		if err != nil || v == nil {
			card = 0
			return nil, err
		}
		if c, ok := hllCached(v); ok {
			card = c
			return nil, nil
		}
		if card, err = hllCount(v); err != nil {
			return nil, err
		}
		hllSetCached(v, card)
		return &keyWrite{put: StringItem(s.DB(), key, v, OriginEdited, ks.Expiry)}, nil
	})
	return card, true, err
}

// mergeKeys merges the registers of the HyperLogLogs among states (absent
// keys count as empty) and reports whether any of them is dense.
func mergeKeys(states []KeyState) (regs []uint8, dense bool, err error) {
	regs = make([]uint8, hllRegisters)
	for _, ks := range states {
		v, err := hllOf(ks)
		if err != nil {
			return nil, false, err
		}
		if v == nil {
			continue
		}
		dense = dense || !HLLIsSparse(v)
		if err := hllMergeMax(regs, v); err != nil {
			return nil, false, err
		}
	}
	return regs, dense, nil
}

// PFCountKeys is the cardinality of the union of several HyperLogLogs:
// one batched read, nothing cached. miss is called with each key that did
// not exist.
func PFCountKeys(s Scope, keys [][]byte, miss func(key []byte)) (uint64, error) {
	states, err := ReadKeys(s, keys)
	if err != nil {
		return 0, err
	}
	reportMisses(keys, states, miss)
	regs, _, err := mergeKeys(states)
	if err != nil {
		return 0, err
	}
	return hllCountRegisters(regs), nil
}

// PFMerge stores at dst the union of dst and srcs as HyperLogLogs (dense
// if any of them is), keeping dst's expiry: one batched read, then one
// write of dst guarded by its state and its sources'. Redis writes (and
// signals) even when nothing changed. miss is called with each key that
// did not exist (dst first), once.
func PFMerge(s Scope, dst []byte, srcs [][]byte, maxSparse int64, miss func(key []byte)) error {
	if !KeyFits(dst) {
		return ErrKeyTooLong
	}
	keys := append([][]byte{dst}, srcs...)
	return RetryConflicts(s, func(try int) error {
		states, err := ReadKeys(s, keys)
		if err != nil {
			return err
		}
		if try == 0 {
			reportMisses(keys, states, miss)
		}
		regs, dense, err := mergeKeys(states)
		if err != nil {
			return err
		}
		to := states[0]
		v, _ := hllOf(to)
		if v == nil {
			v = NewHLL()
		}
		if dense && HLLIsSparse(v) {
			if v, err = hllToDense(v); err != nil {
				return err
			}
		}
		h := hll{v: v, maxSparse: maxSparse}
		for i, r := range regs {
			if r != 0 {
				if _, err := h.set(i, r); err != nil {
					return err
				}
			}
		}
		hllInvalidate(h.v)
		var acts []dynastore.TxAction
		seen := map[string]bool{string(dst): true}
		for i, k := range srcs {
			if !seen[string(k)] && KeyFits(k) {
				seen[string(k)] = true
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: ItemKey(s.DB(), k), Cond: states[i+1].Guard()})
			}
		}
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: StringItem(s.DB(), dst, h.v, OriginEdited, to.Expiry), Cond: to.Guard()})
		if err := keyConflict(commitKeyActions(s, acts)); err != nil {
			return err
		}
		if !to.Live {
			reportCreated(s, dst)
		}
		return nil
	})
}

// reportMisses calls miss with each key that was not live, in order, up
// to the first that is not a string (where Redis stops with WRONGTYPE).
func reportMisses(keys [][]byte, states []KeyState, miss func(key []byte)) {
	for i, ks := range states {
		if ks.Live && ks.Type != TypeString {
			return
		}
		if !ks.Live {
			miss(keys[i])
		}
	}
}

// HLLValue reads the HyperLogLog at key for PFDEBUG: nil when absent.
func HLLValue(s Scope, key []byte) ([]byte, error) {
	ks, err := ReadKey(s, key)
	if err != nil {
		return nil, err
	}
	return hllOf(ks)
}

// HLLToDense makes the HyperLogLog at key dense (PFDEBUG TODENSE and
// GETREG) and returns its value and whether it converted it; absent is a
// nil value.
func HLLToDense(s Scope, key []byte) (v []byte, converted bool, err error) {
	if !KeyFits(key) {
		return nil, false, nil
	}
	err = mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		converted = false
		if v, err = hllOf(ks); err != nil || v == nil || !HLLIsSparse(v) {
			return nil, err
		}
		if v, err = hllToDense(v); err != nil {
			return nil, err
		}
		converted = true
		return &keyWrite{put: StringItem(s.DB(), key, v, OriginEdited, ks.Expiry)}, nil
	})
	return v, converted, err
}

// HLLRegisters is every register of a dense HyperLogLog value.
func HLLRegisters(v []byte) []uint8 {
	out := make([]uint8, hllRegisters)
	for i := range out {
		out[i] = denseGet(v[hllHdrSize:], i)
	}
	return out
}

// HLLDecode is PFDEBUG DECODE's text of a sparse value's opcodes.
func HLLDecode(v []byte) string {
	var b []byte
	sp := v[hllHdrSize:]
	for p := 0; p < len(sp); {
		oplen, span, val := sparseOp(sp, p)
		if len(b) > 0 {
			b = append(b, ' ')
		}
		switch {
		case val > 0:
			b = append(b, "v:"...)
			b = appendInt(b, val)
			b = append(b, ',')
		case oplen == 2:
			b = append(b, "Z:"...)
		default:
			b = append(b, "z:"...)
		}
		b = appendInt(b, span)
		p += oplen
	}
	return string(b)
}

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// HLLSelfTest checks the register packing and that sparse and dense
// values agree on counts as they grow (PFSELFTEST); "" when all is well,
// else what failed, worded as Redis words it.
func HLLSelfTest() string {
	regs := make([]byte, HLLDenseSize-hllHdrSize)
	want := make([]uint8, hllRegisters)
	seed := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return seed
	}
	for cycle := 0; cycle < 10; cycle++ {
		for i := range want {
			want[i] = uint8(next() & hllRegMax)
			denseSet(regs, i, want[i])
		}
		for i := range want {
			if got := denseGet(regs, i); got != want[i] {
				return "TESTFAILED Register " + string(appendInt(nil, i)) + " should be " + string(appendInt(nil, int(want[i]))) + " but is " + string(appendInt(nil, int(got)))
			}
		}
	}
	dense := make([]byte, HLLDenseSize)
	copy(dense, "HYLL")
	d := hll{v: dense}
	sp := hll{v: NewHLL(), maxSparse: DefaultHLLSparseMaxBytes}
	var ele [8]byte
	for j, checkpoint := uint64(1), uint64(1); j <= 100000; j++ {
		x := j ^ seed
		for k := range ele {
			ele[k] = byte(x >> (8 * k))
		}
		d.add(ele[:])
		if _, err := sp.add(ele[:]); err != nil {
			return "TESTFAILED dense/sparse disagree"
		}
		if j != checkpoint {
			continue
		}
		if j < DefaultHLLSparseMaxBytes/2 && !HLLIsSparse(sp.v) {
			return "TESTFAILED sparse encoding not used"
		}
		dc, _ := hllCount(d.v)
		sc, err := hllCount(sp.v)
		if err != nil || dc != sc {
			return "TESTFAILED dense/sparse disagree"
		}
		checkpoint *= 10
	}
	return ""
}
