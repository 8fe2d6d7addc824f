package model

// The HyperLogLog codec, in Redis's own byte format so that a GET (or a
// DUMP) of the key carries what Redis would hold and the counts agree to
// the last digit. The value is a 16-byte header ("HYLL", the encoding
// byte, three zero bytes, the cached cardinality little-endian with its
// top bit marking it stale) and 2^14 six-bit registers, dense (packed
// least significant bits first) or sparse: run-length opcodes ZERO
// (00xxxxxx: 1..64 zero registers), XZERO (01xxxxxx yyyyyyyy: 1..16384
// zero registers) and VAL (1vvvvvxx: 1..4 registers of value 1..32).
// Elements hash with MurmurHash64A under Redis's seed; the low 14 bits
// pick the register, the run of zeros above them (plus one) is its value.
// The estimate is Ertl's improved estimator over the register histogram,
// as Redis 7 computes it.
//
// Updates of a sparse value follow Redis's own edit sequence (split the
// opcode covering the register, then merge adjacent equal VAL opcodes in a
// short window), because the sparse form is not canonical: another
// sequence of edits could hold the same registers in different bytes.

import (
	"errors"
	"math"
)

const (
	hllP         = 14
	hllQ         = 64 - hllP
	hllRegisters = 1 << hllP
	hllRegMax    = 63
	hllHdrSize   = 16
	// HLLDenseSize is the length of a dense HyperLogLog value.
	HLLDenseSize = hllHdrSize + (hllRegisters*6+7)/8

	hllEncDense  = 0
	hllEncSparse = 1

	hllValMax     = 32
	hllValMaxLen  = 4
	hllZeroMaxLen = 64
	hllXZeroMax   = 16384

	hllSeed     = 0xadc83b19
	hllAlphaInf = 0.721347520444481703680 // 0.5/ln(2)

	// DefaultHLLSparseMaxBytes is Redis's default hll-sparse-max-bytes.
	DefaultHLLSparseMaxBytes = 3000
)

// Errors of the HyperLogLog operations, for the command layer to word.
var (
	// ErrNotHLL is a string value that is not a HyperLogLog.
	ErrNotHLL = errors.New("model: key is not a valid HyperLogLog string value")
	// ErrHLLCorrupt is a HyperLogLog value whose registers do not decode.
	ErrHLLCorrupt = errors.New("model: corrupted HLL object")
)

// murmurHash64A is Austin Appleby's MurmurHash64A, reading the input as
// little-endian 64-bit words as Redis does on every platform it supports.
func murmurHash64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(data)) * m)
	n := len(data) &^ 7
	for i := 0; i < n; i += 8 {
		k := uint64(data[i]) | uint64(data[i+1])<<8 | uint64(data[i+2])<<16 | uint64(data[i+3])<<24 |
			uint64(data[i+4])<<32 | uint64(data[i+5])<<40 | uint64(data[i+6])<<48 | uint64(data[i+7])<<56
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if tail := data[n:]; len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint64(tail[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen is the register an element goes to and the value it offers.
func hllPatLen(ele []byte) (index int, count uint8) {
	hash := murmurHash64A(ele, hllSeed)
	index = int(hash & (hllRegisters - 1))
	hash >>= hllP
	hash |= 1 << hllQ
	count = 1
	for bit := uint64(1); hash&bit == 0; bit <<= 1 {
		count++
	}
	return index, count
}

// denseGet reads register i of packed dense registers (a byte past the
// end reads as zero, as Redis's string terminator does).
func denseGet(regs []byte, i int) uint8 {
	byteIdx := i * 6 / 8
	fb := uint(i * 6 & 7)
	b0 := uint(regs[byteIdx])
	var b1 uint
	if byteIdx+1 < len(regs) {
		b1 = uint(regs[byteIdx+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegMax)
}

// denseSet writes register i of packed dense registers.
func denseSet(regs []byte, i int, v uint8) {
	byteIdx := i * 6 / 8
	fb := uint(i * 6 & 7)
	regs[byteIdx] &^= byte(hllRegMax << fb)
	regs[byteIdx] |= byte(uint(v) << fb)
	if byteIdx+1 < len(regs) {
		regs[byteIdx+1] &^= byte(hllRegMax >> (8 - fb))
		regs[byteIdx+1] |= byte(uint(v) >> (8 - fb))
	}
}

// NewHLL is an empty HyperLogLog as Redis creates one: sparse, its
// registers all in XZERO opcodes.
func NewHLL() []byte {
	v := make([]byte, hllHdrSize, hllHdrSize+2)
	copy(v, "HYLL")
	v[4] = hllEncSparse
	for left := hllRegisters; left > 0; {
		n := min(left, hllXZeroMax)
		v = appendXZero(v, n)
		left -= n
	}
	return v
}

func appendXZero(v []byte, n int) []byte {
	return append(v, byte((n-1)>>8)|0x40, byte((n-1)&0xff))
}

func valOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | 0x80 }

// IsHLL reports whether a string value is a HyperLogLog as Redis checks it
// (header, encoding, a dense value's exact length).
func IsHLL(v []byte) bool {
	if len(v) < hllHdrSize || string(v[:4]) != "HYLL" || v[4] > hllEncSparse {
		return false
	}
	return v[4] != hllEncDense || len(v) == HLLDenseSize
}

// HLLIsSparse reports whether a HyperLogLog value is sparse.
func HLLIsSparse(v []byte) bool { return v[4] == hllEncSparse }

func hllInvalidate(v []byte) { v[15] |= 0x80 }

// hllCached is the cached cardinality, if valid.
func hllCached(v []byte) (uint64, bool) {
	if v[15]&0x80 != 0 {
		return 0, false
	}
	var c uint64
	for i := 7; i >= 0; i-- {
		c = c<<8 | uint64(v[8+i])
	}
	return c, true
}

func hllSetCached(v []byte, c uint64) {
	for i := 0; i < 8; i++ {
		v[8+i] = byte(c >> (8 * i))
	}
}

// sparseOp decodes the opcode at p of sparse opcodes sp: its length in
// bytes, the registers it spans and their value (0 for the zero runs).
func sparseOp(sp []byte, p int) (oplen, span, val int) {
	op := sp[p]
	switch {
	case op&0xc0 == 0:
		return 1, int(op&0x3f) + 1, 0
	case op&0x80 != 0:
		return 1, int(op&3) + 1, int(op>>2&0x1f) + 1
	}
	var lo byte
	if p+1 < len(sp) {
		lo = sp[p+1]
	}
	return 2, (int(op&0x3f)<<8 | int(lo)) + 1, 0
}

// hllToDense is a sparse value made dense (the header copied but for the
// encoding), or ErrHLLCorrupt when its opcodes do not cover exactly the
// registers.
func hllToDense(v []byte) ([]byte, error) {
	d := make([]byte, HLLDenseSize)
	copy(d, v[:hllHdrSize])
	d[4] = hllEncDense
	regs := d[hllHdrSize:]
	sp := v[hllHdrSize:]
	idx := 0
	for p := 0; p < len(sp); {
		oplen, span, val := sparseOp(sp, p)
		p += oplen
		if val == 0 {
			idx += span
			continue
		}
		if idx+span > hllRegisters {
			break
		}
		for ; span > 0; span-- {
			denseSet(regs, idx, uint8(val))
			idx++
		}
	}
	if idx != hllRegisters {
		return nil, ErrHLLCorrupt
	}
	return d, nil
}

// hll is a HyperLogLog value being updated.
type hll struct {
	v         []byte
	maxSparse int64 // hll-sparse-max-bytes
}

// set raises register index to count if lower, and reports whether it
// did; a sparse value turns dense when the register needs more than a
// VAL opcode holds or the value would outgrow maxSparse.
func (h *hll) set(index int, count uint8) (bool, error) {
	if h.v[4] == hllEncDense {
		regs := h.v[hllHdrSize:]
		if count > denseGet(regs, index) {
			denseSet(regs, index, count)
			return true, nil
		}
		return false, nil
	}
	if count > hllValMax {
		return h.promote(index, count)
	}
	sp := h.v[hllHdrSize:]
	p, first, prev, span := 0, 0, -1, 0
	oplen, val := 0, 0
	for p < len(sp) {
		oplen, span, val = sparseOp(sp, p)
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= len(sp) {
		return false, ErrHLLCorrupt
	}
	isVal := sp[p]&0x80 != 0
	switch {
	case isVal && val >= int(count):
		return false, nil
	case span == 1 && (isVal || oplen == 1):
		// A VAL or ZERO of one register: rewritten in place.
		sp[p] = valOp(int(count), 1)
	default:
		last := first + span - 1
		seq := make([]byte, 0, 5)
		zeros := func(n int) {
			if n > hllZeroMaxLen {
				seq = appendXZero(seq, n)
			} else {
				seq = append(seq, byte(n-1))
			}
		}
		if isVal {
			if index != first {
				seq = append(seq, valOp(val, index-first))
			}
			seq = append(seq, valOp(int(count), 1))
			if index != last {
				seq = append(seq, valOp(val, last-index))
			}
		} else {
			if index != first {
				zeros(index - first)
			}
			seq = append(seq, valOp(int(count), 1))
			if index != last {
				zeros(last - index)
			}
		}
		if delta := len(seq) - oplen; delta > 0 && int64(len(h.v)+delta) > h.maxSparse {
			return h.promote(index, count)
		}
		tail := append([]byte{}, sp[min(p+oplen, len(sp)):]...)
		h.v = append(append(h.v[:hllHdrSize+p], seq...), tail...)
		sp = h.v[hllHdrSize:]
	}
	// Merge adjacent VAL opcodes of one value, in the window Redis scans.
	p = max(prev, 0)
	for scan := 5; p < len(sp) && scan > 0; scan-- {
		if sp[p]&0x80 == 0 {
			n, _, _ := sparseOp(sp, p)
			p += n
			continue
		}
		if p+1 < len(sp) && sp[p+1]&0x80 != 0 {
			_, l1, v1 := sparseOp(sp, p)
			_, l2, v2 := sparseOp(sp, p+1)
			if v1 == v2 && l1+l2 <= hllValMaxLen {
				sp[p+1] = valOp(v1, l1+l2)
				copy(sp[p:], sp[p+1:])
				h.v = h.v[:len(h.v)-1]
				sp = h.v[hllHdrSize:]
				continue
			}
		}
		p++
	}
	hllInvalidate(h.v)
	return true, nil
}

// promote turns a sparse value dense and sets the register there.
func (h *hll) promote(index int, count uint8) (bool, error) {
	d, err := hllToDense(h.v)
	if err != nil {
		return false, err
	}
	h.v = d
	denseSet(d[hllHdrSize:], index, count)
	return true, nil
}

// add adds an element and reports whether a register changed.
func (h *hll) add(ele []byte) (bool, error) {
	index, count := hllPatLen(ele)
	return h.set(index, count)
}

// hllMergeMax raises max[i] to each register of a HyperLogLog value.
func hllMergeMax(max []uint8, v []byte) error {
	if v[4] == hllEncDense {
		regs := v[hllHdrSize:]
		for i := range max {
			if r := denseGet(regs, i); r > max[i] {
				max[i] = r
			}
		}
		return nil
	}
	sp := v[hllHdrSize:]
	i := 0
	for p := 0; p < len(sp); {
		oplen, span, val := sparseOp(sp, p)
		p += oplen
		if val == 0 {
			i += span
			continue
		}
		if i+span > hllRegisters {
			break
		}
		for ; span > 0; span-- {
			if uint8(val) > max[i] {
				max[i] = uint8(val)
			}
			i++
		}
	}
	if i != hllRegisters {
		return ErrHLLCorrupt
	}
	return nil
}

// hllHisto is the histogram of a value's register values; a sparse value
// whose opcodes do not cover exactly the registers is ErrHLLCorrupt.
func hllHisto(v []byte) (h [64]int, err error) {
	if v[4] == hllEncDense {
		regs := v[hllHdrSize:]
		for i := 0; i < hllRegisters; i++ {
			h[denseGet(regs, i)]++
		}
		return h, nil
	}
	sp := v[hllHdrSize:]
	idx := 0
	for p := 0; p < len(sp); {
		oplen, span, val := sparseOp(sp, p)
		p += oplen
		idx += span
		h[val] += span
	}
	if idx != hllRegisters {
		return h, ErrHLLCorrupt
	}
	return h, nil
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += float64(x * y) // the conversion keeps Go from fusing a multiply-add C does not
		y += y
		if zPrime == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		// (1-x)² as a product: correctly rounded, as C's pow(1-x, 2) is;
		// the conversion keeps Go from fusing a multiply-add C does not.
		z -= float64(float64((1-x)*(1-x)) * y)
		if zPrime == z {
			return z / 3
		}
	}
}

// hllEstimate is the cardinality estimate of a register histogram.
func hllEstimate(h *[64]int) uint64 {
	const m = float64(hllRegisters)
	z := m * hllTau((m-float64(h[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(h[0])/m))
	return uint64(math.Round(hllAlphaInf * m * m / z))
}

// hllCount is the cardinality of a HyperLogLog value, computed.
func hllCount(v []byte) (uint64, error) {
	h, err := hllHisto(v)
	if err != nil {
		return 0, err
	}
	return hllEstimate(&h), nil
}

// hllCountRegisters is the cardinality of one register per byte.
func hllCountRegisters(regs []uint8) uint64 {
	var h [64]int
	for _, r := range regs {
		h[r]++
	}
	return hllEstimate(&h)
}
