package rdb

import (
	"encoding/binary"
	"slices"
)

// Intsets (intset.c): the width of every value (2, 4 or 8 bytes) and the
// count, 32 bits little-endian each, then the values in ascending order,
// little-endian. A set is an intset while every member is the canonical
// decimal form of an int64.

// appendIntset appends the intset of vs (distinct, any order) in the
// narrowest width that holds them all, as one built by SADD without
// removals is.
func appendIntset(dst []byte, vs []int64) []byte {
	sorted := slices.Clone(vs)
	slices.Sort(sorted)
	width := 2
	for _, v := range sorted {
		switch {
		case v < -1<<31 || v > 1<<31-1:
			width = 8
		case (v < -1<<15 || v > 1<<15-1) && width < 4:
			width = 4
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(width))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(sorted)))
	for _, v := range sorted {
		switch width {
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	}
	return dst
}

// readIntset returns an intset's values, checking its width, size and
// that the values ascend strictly (intsetValidateIntegrity, deep).
func readIntset(b []byte) ([]int64, error) {
	if len(b) < 8 {
		return nil, ErrCorrupt
	}
	width := binary.LittleEndian.Uint32(b)
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if (width != 2 && width != 4 && width != 8) || n == 0 || uint64(len(b)-8) != n*uint64(width) {
		return nil, ErrCorrupt
	}
	out := make([]int64, n)
	for i := range out {
		p := b[8+i*int(width):]
		switch width {
		case 2:
			out[i] = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			out[i] = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			out[i] = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && out[i] <= out[i-1] {
			return nil, ErrCorrupt
		}
	}
	return out, nil
}
