package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBitmap: the bit range, count, position and field functions never
// panic, and agree with a bit-by-bit reading of the value.
func FuzzBitmap(f *testing.F) {
	f.Add([]byte("foobar"), int64(1), int64(-2), true, true, uint16(3), uint8(8), true, int64(-5), uint8(1))
	f.Add([]byte("\xff\xff"), int64(-100), int64(100), false, false, uint16(15), uint8(64), false, int64(1), uint8(2))
	f.Add([]byte{}, int64(0), int64(-1), false, true, uint16(0), uint8(1), true, int64(9), uint8(0))
	f.Fuzz(func(t *testing.T, v []byte, start, end int64, isBit, bit bool, off uint16, width uint8, signed bool, val int64, ow uint8) {
		from, to := BitRange(int64(len(v)), start, end, isBit)
		var want int64
		first := int64(-1)
		for i := from; i <= to; i++ {
			if GetBit(v, uint64(i)) {
				want++
			}
			if first < 0 && GetBit(v, uint64(i)) == bit {
				first = i
			}
		}
		require.Equal(t, want, BitCount(v, from, to))
		pos := BitPos(v, bit, from, to, true)
		require.Equal(t, first, pos)

		w := int(width%64) + 1
		if !signed && w == 64 {
			w = 63
		}
		op := BitfieldOp{Kind: BitfieldOpKind(ow % 3), Signed: signed, Bits: w, Offset: uint64(off), Value: val, Overflow: Overflow(ow / 3 % 3)}
		buf := growTo(v, int64(op.Offset+uint64(w)-1)>>3+1)
		res, _ := applyField(buf, op)
		if op.Kind == FieldGet {
			require.Equal(t, res, BitfieldRead(v, []BitfieldOp{op})[0])
		}
		_, n, ms := LCS(v, buf, true, 0)
		var sum int64
		for _, m := range ms {
			sum += m.Len
		}
		require.Equal(t, n, sum)
	})
}
