package model

// Bitmaps: the bit commands on string values (SETBIT, GETBIT, BITCOUNT,
// BITPOS, BITOP, BITFIELD). Bits are numbered from the most significant
// bit of the first byte, as Redis numbers them. A write is the
// read-modify-write of one key item (mutateKey), BITOP a batched read of
// its keys and one write of the target guarded by what was read.

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/redamo/redamo/dynastore"
)

// growTo is v zero-padded to at least n bytes (a copy either way, since v
// may be the stored value). A value past one item is written as a big
// value (stringWrite); the command bounds n by proto-max-bulk-len.
func growTo(v []byte, n int64) []byte {
	if int64(len(v)) >= n {
		return append([]byte{}, v...)
	}
	out := make([]byte, n)
	copy(out, v)
	return out
}

// GetBit is the bit at offset of v (0 past its end).
func GetBit(v []byte, offset uint64) bool {
	byteIdx := offset >> 3
	if byteIdx >= uint64(len(v)) {
		return false
	}
	return v[byteIdx]&(0x80>>(offset&7)) != 0
}

// SetBit sets or clears the bit at offset of a string key (growing it
// with zeros) and returns the bit it held. Nothing is written when the
// bit already had that value and the string needed no growth (Redis then
// raises no event: changed is false).
func SetBit(s Scope, key []byte, offset uint64, on bool) (old, changed bool, err error) {
	if !KeyFits(key) {
		return false, false, ErrKeyTooLong
	}
	err = mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		if ks.Live && ks.editable() {
			b := int64(offset >> 3)
			return editBig(s, key, ks, b, b+1, false, func(buf []byte, off int64) bool {
				old = GetBit(buf, offset-uint64(off)<<3)
				changed = old != on || b+1 > ks.big.size
				setBitIn(buf, offset-uint64(off)<<3, on)
				return changed
			})
		}
		cur, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		need := int64(offset>>3) + 1
		old = GetBit(cur, offset)
		grows := !ks.Live || int64(len(cur)) < need
		changed = grows || old != on
		if !changed {
			return nil, nil
		}
		nv := growTo(cur, need)
		setBitIn(nv, offset, on)
		return stringWrite(s, key, nv, OriginEdited, ks.Expiry)
	})
	return old, changed, err
}

// setBitIn sets or clears the bit at offset of v.
func setBitIn(v []byte, offset uint64, on bool) {
	mask := byte(0x80 >> (offset & 7))
	if on {
		v[offset>>3] |= mask
	} else {
		v[offset>>3] &^= mask
	}
}

// BitRange turns BITCOUNT's and BITPOS's start and end (negative from the
// end, in bytes or with isBit in bits) into an inclusive range of bits of
// a string of n bytes; empty when start > end.
func BitRange(n, start, end int64, isBit bool) (from, to int64) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, -1
	}
	if isBit {
		return start, end
	}
	return start << 3, end<<3 + 7
}

// BitCount counts the set bits of v in the inclusive bit range [from, to].
func BitCount(v []byte, from, to int64) int64 {
	if from > to {
		return 0
	}
	var n int64
	fb, tb := from>>3, to>>3
	for i := fb; i <= tb; i++ {
		b := v[i]
		if i == fb {
			b &= 0xff >> (from & 7)
		}
		if i == tb {
			b &= 0xff << (7 - to&7)
		}
		n += int64(bits.OnesCount8(b))
	}
	return n
}

// BitPos is the position of the first bit of value bit in the inclusive
// bit range [from, to] of v, or -1. Looking for a clear bit without an
// explicit end (endGiven false), Redis counts the string as followed by
// zeros: the answer is then the first bit past the range.
func BitPos(v []byte, bit bool, from, to int64, endGiven bool) int64 {
	if from > to {
		return -1
	}
	for i := from; i <= to; {
		b := v[i>>3]
		if !bit {
			b = ^b
		}
		if i&7 == 0 && i+7 <= to && b == 0 {
			i += 8
			continue
		}
		if b&(0x80>>(i&7)) != 0 {
			return i
		}
		i++
	}
	if bit || endGiven {
		return -1
	}
	return to + 1
}

// BitOp names BITOP's operations.
type BitOp int

// BITOP's operations.
const (
	BitAnd BitOp = iota
	BitOr
	BitXor
	BitNot
)

// bitOpOf combines srcs (a missing key is an empty string) as BITOP does:
// the result is as long as the longest source, shorter ones padded with
// zeros.
func bitOpOf(op BitOp, srcs [][]byte) []byte {
	n := 0
	for _, s := range srcs {
		n = max(n, len(s))
	}
	out := make([]byte, n)
	at := func(s []byte, j int) byte {
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	for j := range out {
		o := at(srcs[0], j)
		if op == BitNot {
			o = ^o
		}
		for _, s := range srcs[1:] {
			switch op {
			case BitAnd:
				o &= at(s, j)
			case BitOr:
				o |= at(s, j)
			case BitXor:
				o ^= at(s, j)
			}
		}
		out[j] = o
	}
	return out
}

// BitOpStore is BITOP: it stores the result of op over the string keys
// srcs at dst (deleting dst for an empty result) and returns the result's
// length; deleted says an empty result removed a live dst. miss is called
// with each source that did not exist (Redis's key misses, raised before
// the write's events), once. One batched
// read of every key, then one write of dst guarded by its state and the
// unchanged state of the sources.
func BitOpStore(s Scope, op BitOp, dst []byte, srcs [][]byte, miss func(key []byte)) (n int64, deleted bool, err error) {
	keys := append([][]byte{dst}, srcs...)
	err = RetryConflicts(s, func(try int) error {
		deleted = false
		states, err := ReadKeys(s, keys)
		if err != nil {
			return err
		}
		if try == 0 {
			reportMisses(srcs, states[1:], miss)
		}
		vals := make([][]byte, len(srcs))
		var acts []dynastore.TxAction
		seen := map[string]bool{string(dst): true}
		for i, ks := range states[1:] {
			if vals[i], err = stringOf(ks); err != nil {
				return err
			}
			if k := srcs[i]; !seen[string(k)] && KeyFits(k) {
				seen[string(k)] = true
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: ItemKey(s.DB(), k), Cond: ks.Guard()})
			}
		}
		res := bitOpOf(op, vals)
		n = int64(len(res))
		to := states[0]
		switch {
		case n > 0:
			if !KeyFits(dst) {
				return ErrKeyTooLong
			}
			if n > dynastore.MaxItemSize {
				return fmt.Errorf("model: %d bytes: %w", n, dynastore.ErrItemTooLarge)
			}
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: StringItem(s.DB(), dst, res, OriginEdited, 0), Cond: to.Guard()})
		case to.Live:
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: ItemKey(s.DB(), dst), Cond: to.Guard()})
			deleted = true
		default:
			return nil
		}
		if err := keyConflict(commitKeyActions(s, acts)); err != nil {
			return err
		}
		if n > 0 && !to.Live {
			reportCreated(s, dst)
		}
		return nil
	})
	return n, deleted, err
}

// ---- BITFIELD ---------------------------------------------------------------------

// Overflow is BITFIELD's OVERFLOW behaviour.
type Overflow int

// BITFIELD's overflow behaviours.
const (
	OverflowWrap Overflow = iota
	OverflowSat
	OverflowFail
)

// BitfieldOpKind is a BITFIELD subcommand.
type BitfieldOpKind int

// BITFIELD's subcommands that do something.
const (
	FieldGet BitfieldOpKind = iota
	FieldSet
	FieldIncrBy
)

// BitfieldOp is one BITFIELD operation, parsed.
type BitfieldOp struct {
	Kind     BitfieldOpKind
	Signed   bool
	Bits     int
	Offset   uint64
	Value    int64 // SET's value, INCRBY's increment
	Overflow Overflow
}

// FieldResult is one BITFIELD reply element: Nil for an operation OVERFLOW
// FAIL refused.
type FieldResult struct {
	Val int64
	Nil bool
}

// getField reads the bits-wide field at offset of v as unsigned (bits
// past v's end are zeros).
func getField(v []byte, offset uint64, width int) uint64 {
	var x uint64
	for i := 0; i < width; i++ {
		x <<= 1
		if GetBit(v, offset+uint64(i)) {
			x |= 1
		}
	}
	return x
}

// setField writes the low bits of x as the bits-wide field at offset of
// v, which is long enough.
func setField(v []byte, offset uint64, width int, x uint64) {
	for i := 0; i < width; i++ {
		o := offset + uint64(i)
		mask := byte(0x80 >> (o & 7))
		if x&(1<<(width-1-i)) != 0 {
			v[o>>3] |= mask
		} else {
			v[o>>3] &^= mask
		}
	}
}

// signExtend reads a bits-wide two's complement field.
func signExtend(x uint64, width int) int64 {
	if width < 64 && x&(1<<(width-1)) != 0 {
		x |= math.MaxUint64 << width
	}
	return int64(x)
}

// unsignedOverflow is Redis's check of value+incr in an unsigned field of
// width bits: whether it overflows and, if so, what the field gets under
// ow (wrapped or saturated).
func unsignedOverflow(value uint64, incr int64, width int, ow Overflow) (bool, uint64) {
	maxv := uint64(1)<<width - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	wrap := (value + uint64(incr)) & maxv
	switch {
	case value > maxv || (incr > 0 && incr > maxIncr):
		if ow == OverflowSat {
			return true, maxv
		}
		return true, wrap
	case incr < 0 && incr < minIncr:
		if ow == OverflowSat {
			return true, 0
		}
		return true, wrap
	}
	return false, 0
}

// signedOverflow is the same for a signed field.
func signedOverflow(value, incr int64, width int, ow Overflow) (bool, int64) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = int64(1)<<(width-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := int64(uint64(minv) - uint64(value))
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := uint64(math.MaxUint64) << width
			if c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	switch {
	case value > maxv || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
		if ow == OverflowSat {
			return true, maxv
		}
		return true, wrap()
	case value < minv || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
		if ow == OverflowSat {
			return true, minv
		}
		return true, wrap()
	}
	return false, 0
}

// applyField runs one operation on v (long enough for a write) and
// returns its reply and whether it changed the field.
func applyField(v []byte, op BitfieldOp) (FieldResult, bool) {
	raw := getField(v, op.Offset, op.Bits)
	if op.Kind == FieldGet {
		if op.Signed {
			return FieldResult{Val: signExtend(raw, op.Bits)}, false
		}
		return FieldResult{Val: int64(raw)}, false
	}
	var newv uint64
	var reply int64
	var over bool
	if op.Signed {
		old := signExtend(raw, op.Bits)
		var nv, lim int64
		if op.Kind == FieldIncrBy {
			over, lim = signedOverflow(old, op.Value, op.Bits, op.Overflow)
			nv = old + op.Value
			if over {
				nv = lim
			}
			reply = nv
		} else {
			nv = op.Value
			if over, lim = signedOverflow(nv, 0, op.Bits, op.Overflow); over {
				nv = lim
			}
			reply = old
		}
		newv = uint64(nv)
	} else {
		var lim uint64
		if op.Kind == FieldIncrBy {
			newv = raw + uint64(op.Value)
			if over, lim = unsignedOverflow(raw, op.Value, op.Bits, op.Overflow); over {
				newv = lim
			}
			reply = int64(newv)
		} else {
			newv = uint64(op.Value)
			if over, lim = unsignedOverflow(newv, 0, op.Bits, op.Overflow); over {
				newv = lim
			}
			reply = int64(raw)
		}
	}
	if over && op.Overflow == OverflowFail {
		return FieldResult{Nil: true}, false
	}
	if op.Bits < 64 {
		newv &= 1<<op.Bits - 1
	}
	setField(v, op.Offset, op.Bits, newv)
	return FieldResult{Val: reply}, newv != raw
}

// BitfieldRead runs BITFIELD operations that only GET on v.
func BitfieldRead(v []byte, ops []BitfieldOp) []FieldResult {
	out := make([]FieldResult, len(ops))
	for i, op := range ops {
		out[i], _ = applyField(v, op)
	}
	return out
}

// Bitfield runs BITFIELD operations with at least one write on a string
// key, grown with zeros to reach the farthest bit written, and returns
// their replies; changed says whether anything was written (Redis's
// "setbit" event). A read-modify-write of the key item: one read, and one
// conditional write unless nothing changed.
func Bitfield(s Scope, key []byte, ops []BitfieldOp) (res []FieldResult, changed bool, err error) {
	if !KeyFits(key) {
		return nil, false, ErrKeyTooLong
	}
	var highest uint64
	for _, op := range ops {
		if op.Kind != FieldGet {
			highest = max(highest, op.Offset+uint64(op.Bits)-1)
		}
	}
	err = mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		if ks.Live && ks.editable() {
			return bitfieldBig(s, key, ks, ops, highest, &res, &changed)
		}
		cur, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		need := int64(highest>>3) + 1
		nv := growTo(cur, need)
		grew := !ks.Live || int64(len(cur)) < need
		changed = false
		res = make([]FieldResult, len(ops))
		for i, op := range ops {
			var ch bool
			res[i], ch = applyField(nv, op)
			changed = changed || ch || (grew && op.Kind != FieldGet && !res[i].Nil)
		}
		// Redis creates or grows the string even when every write was
		// refused by OVERFLOW FAIL (then without an event).
		if !changed && !grew {
			return nil, nil
		}
		return stringWrite(s, key, nv, OriginEdited, ks.Expiry)
	})
	return res, changed, err
}

// bitfieldBig is Bitfield's write on a big value (editable): only the
// chunks from its lowest to its highest bit are read and rewritten.
func bitfieldBig(s Scope, key []byte, ks KeyState, ops []BitfieldOp, highest uint64, res *[]FieldResult, changed *bool) (*keyWrite, error) {
	lowest, reach := uint64(math.MaxUint64), highest
	for _, op := range ops {
		lowest = min(lowest, op.Offset)
		reach = max(reach, op.Offset+uint64(op.Bits)-1)
	}
	need := int64(highest>>3) + 1
	// A GET past the writes reads old bytes, without growing the value.
	to := max(need, min(int64(reach>>3)+1, ks.big.size))
	grew := ks.big.size < need
	return editBig(s, key, ks, int64(lowest>>3), to, false, func(buf []byte, off int64) bool {
		*changed = false
		*res = make([]FieldResult, len(ops))
		for i, op := range ops {
			op.Offset -= uint64(off) << 3
			var ch bool
			(*res)[i], ch = applyField(buf, op)
			*changed = *changed || ch || (grew && op.Kind != FieldGet && !(*res)[i].Nil)
		}
		return *changed
	})
}
