package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// addElems adds "e0".."e<n-1>" to a new HyperLogLog in batches of 1000
// (as PFADD commands would), caching its count as PFCOUNT does.
func addElems(t *testing.T, n int) ([]byte, uint64) {
	h := hll{v: NewHLL(), maxSparse: DefaultHLLSparseMaxBytes}
	for i := 0; i < n; i++ {
		_, err := h.add([]byte(fmt.Sprintf("e%d", i)))
		require.NoError(t, err)
		if i%1000 == 999 || i == n-1 {
			hllInvalidate(h.v)
		}
	}
	c, err := hllCount(h.v)
	require.NoError(t, err)
	hllSetCached(h.v, c)
	return h.v, c
}

// TestHLLMatchesRedis: counts and bytes as redis-server 7.0.15 has them
// after the same PFADDs and a PFCOUNT (figures taken from it).
func TestHLLMatchesRedis(t *testing.T) {
	for _, tc := range []struct {
		n      int
		count  uint64
		size   int
		sha256 string
	}{
		{1, 1, 21, "ccda8ba82764c30e591077812417c1f3a165c993cdaba7a6c5c185325d6745c5"},
		{10, 10, 48, "0bba112db5cc118cf31893908d2e54640bdf4049ee589c6fbf8d90df0fd3c91a"},
		{100, 100, 285, "aebee27e50c672722325ed27d2acb1011cc7138f9a0f43d52abc23308a822a44"},
		{1000, 1008, 1906, "ab6313e24c05ff993730105e09ef76d5c0c4fcde58406d6a29d1889220a056e4"},
		{5000, 4968, HLLDenseSize, "bd470063c39f632ff0572b22d3ae558cdc523a5ae6f47e7324ed636dcc84e2ec"},
		{20000, 19901, HLLDenseSize, "e0b65a9f0a68fd6067a893468cad7c12075492b4a9ebafeece2765c5d950fac3"},
		{100000, 100853, HLLDenseSize, "548dba672576d8a299d51943c2728e21beda0aea57391bd87567dba08eed8e4e"},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			v, c := addElems(t, tc.n)
			require.Equal(t, tc.count, c)
			require.Len(t, v, tc.size)
			sum := sha256.Sum256(v)
			require.Equal(t, tc.sha256, hex.EncodeToString(sum[:]))
		})
	}
	v, _ := addElems(t, 1)
	require.Equal(t, "48594c4c0100000001000000000000004525807ad8", hex.EncodeToString(v))
}

// TestHLLSparseDenseAgree: a sparse value, its dense conversion and a
// value kept dense from the start hold the same registers and counts.
func TestHLLSparseDenseAgree(t *testing.T) {
	sp := hll{v: NewHLL(), maxSparse: 1 << 30}
	dense := make([]byte, HLLDenseSize)
	copy(dense, "HYLL")
	dn := hll{v: dense}
	for i := 0; i < 3000; i++ {
		e := []byte(fmt.Sprintf("m%d", i))
		a, err := sp.add(e)
		require.NoError(t, err)
		b, err := dn.add(e)
		require.NoError(t, err)
		require.Equal(t, b, a, i)
		if i%250 == 0 {
			require.True(t, HLLIsSparse(sp.v))
			conv, err := hllToDense(sp.v)
			require.NoError(t, err)
			require.Equal(t, dn.v[hllHdrSize:], conv[hllHdrSize:], i)
			sc, err := hllCount(sp.v)
			require.NoError(t, err)
			dc, err := hllCount(dn.v)
			require.NoError(t, err)
			require.Equal(t, dc, sc, i)
		}
	}
	require.Empty(t, HLLSelfTest())
}

// TestHLLPromotion: a sparse value turns dense past maxSparse, or for a
// register value a VAL opcode cannot hold, keeping every register.
func TestHLLPromotion(t *testing.T) {
	h := hll{v: NewHLL(), maxSparse: 60}
	for i := 0; HLLIsSparse(h.v); i++ {
		_, err := h.add([]byte(fmt.Sprint(i)))
		require.NoError(t, err)
		if HLLIsSparse(h.v) {
			require.LessOrEqual(t, len(h.v), 60)
		}
	}
	require.Len(t, h.v, HLLDenseSize)

	h = hll{v: NewHLL(), maxSparse: DefaultHLLSparseMaxBytes}
	ch, err := h.set(5, 33)
	require.NoError(t, err)
	require.True(t, ch)
	require.False(t, HLLIsSparse(h.v))
	require.Equal(t, uint8(33), denseGet(h.v[hllHdrSize:], 5))
}

// TestHLLCorruptNoPanic: arbitrary bytes behind a valid header decode to
// an error or a value, never a panic.
func TestHLLCorruptNoPanic(t *testing.T) {
	for _, tail := range []string{"", "\x7f", "\x7f\xff\x7f\xff", "\x40", "\xff\xff\xff", "\x3f\x3f", "\x7f\xfe\x80\x80"} {
		v := append([]byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"), tail...)
		require.True(t, IsHLL(v))
		_, _ = hllCount(v)
		_, _ = hllToDense(v)
		_ = hllMergeMax(make([]uint8, hllRegisters), v)
		_ = HLLDecode(v)
		h := hll{v: append([]byte{}, v...), maxSparse: 3000}
		_, _ = h.add([]byte("x"))
		_, _ = h.set(hllRegisters-1, 3)
	}
}

func TestHLLPatLen(t *testing.T) {
	// Redis stores PFADD h e0 as XZERO:1318 VAL:1,1 XZERO:15065.
	i, c := hllPatLen([]byte("e0"))
	require.Equal(t, 1318, i)
	require.Equal(t, uint8(1), c)
}
