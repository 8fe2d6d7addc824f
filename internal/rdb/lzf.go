package rdb

import (
	"errors"
	"math"
	"sync"
)

// LZF (liblzf 3.6), as Redis's lzf_c.c and lzf_d.c run it. The format is a
// sequence of
//
//	000LLLLL <L+1 bytes>           a literal run of 1..32 bytes
//	LLLooooo oooooooo              a copy of L+2 bytes (L = 1..6) from o+1 back
//	111ooooo LLLLLLLL oooooooo     a copy of L+9 bytes from o+1 back
//
// with o+1 at most 8192 and a copy at most 264 bytes long.

const (
	lzfHashLog = 16 // lzfP.h's HLOG
	lzfMaxLit  = 1 << 5
	lzfMaxOff  = 1 << 13
	lzfMaxRef  = 1<<8 + 1<<3
)

// ErrLZF is a compressed string that does not decompress to its length.
var ErrLZF = errors.New("rdb: invalid LZF data")

// lzfIndex is the hash slot of the three bytes whose shifted sum is h,
// with lzfP.h's VERY_FAST hash.
func lzfIndex(h uint32) uint32 {
	return (h>>(3*8-lzfHashLog) - h*5) & (1<<lzfHashLog - 1)
}

// lzfTable is the encoder's hash table: for each slot, the last position
// whose three bytes hashed to it, 0 for none (an entry at position 0
// never serves: a match must start after the first byte).
type lzfTable [1 << lzfHashLog]int32

// lzfTables recycles tables, which are too large to allocate per call.
var lzfTables = sync.Pool{New: func() any { return new(lzfTable) }}

// Compress returns in LZF-compressed in at most max bytes, or nil if it
// does not fit (or in is empty): the bytes Redis's lzf_compress writes.
//
// The encoder is greedy: at each position it looks up the last position
// whose three bytes hashed to the same slot, and takes the match there if
// it is real, less than 8192 back and not at offset 0. Redis leaves its
// hash table uninitialised (INIT_HTAB 0), so an entry left on its stack
// by an earlier call could in principle offer a match a fresh table would
// not; this encoder starts from an empty table, which is what Redis does
// absent such leftovers, and gives its output byte for byte then. Inputs
// beyond 2 GB, which Redis strings cannot be, are not compressed.
func Compress(in []byte, max int) []byte {
	if len(in) == 0 || max <= 0 || len(in) > math.MaxInt32 {
		return nil
	}
	htab := lzfTables.Get().(*lzfTable)
	defer lzfTables.Put(htab)
	clear(htab[:])
	out := make([]byte, max+1)
	end := len(in)
	ip, op, lit := 0, 1, 0 // op 1: room for the first run's length
	// undo is 1 when the current run is empty (its length byte is dropped).
	undo := func() int {
		if lit == 0 {
			return 1
		}
		return 0
	}
	var h uint32
	if end >= 2 {
		h = uint32(in[0])<<8 | uint32(in[1])
	}
	for ip < end-2 {
		h = h<<8 | uint32(in[ip+2])
		slot := lzfIndex(h)
		ref := int(htab[slot])
		htab[slot] = int32(ip)
		off := ip - ref - 1
		if ref > 0 && off < lzfMaxOff && in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			n := 2 // bytes known to match, less one
			maxLen := min(end-ip-n, lzfMaxRef)
			if op+3+1 >= max && op-undo()+3+1 >= max {
				return nil
			}
			out[op-lit-1] = byte(lit - 1) // close the run
			op -= undo()
			n = lzfMatchLen(in, ref, ip, maxLen)
			n -= 2
			ip++
			if n < 7 {
				out[op] = byte(off>>8 + n<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(n - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // open a run
			ip += n + 1
			if ip >= end-2 {
				break
			}
			// Hash the match's last two positions (VERY_FAST).
			ip -= 2
			h = uint32(in[ip])<<8 | uint32(in[ip+1])
			h = h<<8 | uint32(in[ip+2])
			htab[lzfIndex(h)] = int32(ip)
			ip++
			h = h<<8 | uint32(in[ip+2])
			htab[lzfIndex(h)] = int32(ip)
			ip++
			continue
		}
		if op >= max {
			return nil
		}
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	if op+3 > max {
		return nil
	}
	for ; ip < end; ip++ {
		lit++
		out[op] = in[ip]
		op++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	out[op-lit-1] = byte(lit - 1)
	op -= undo()
	return out[:op]
}

// lzfMatchLen is the length of the match of in at ref and at ip, whose
// first three bytes are equal, as lzf_compress measures it: when more
// than 16 bytes may match it first compares bytes 3 to 18 one by one and,
// if all are equal, counts the 19th as matching without comparing it and
// goes on up to maxLen (so a match can exceed maxLen by up to two bytes
// there; it never passes the input's end).
func lzfMatchLen(in []byte, ref, ip, maxLen int) int {
	n := 2
	if maxLen > 16 {
		for range 16 {
			n++
			if in[ref+n] != in[ip+n] {
				return n
			}
		}
	}
	for {
		n++
		if n >= maxLen || in[ref+n] != in[ip+n] {
			return n
		}
	}
}

// Decompress returns the n bytes in decompresses to, or ErrLZF if in is
// not valid LZF or does not decompress to exactly n bytes. Any valid LZF
// is read, not only Compress's.
func Decompress(in []byte, n int) ([]byte, error) {
	out := make([]byte, 0, min(n, 64<<10))
	for ip := 0; ip < len(in); {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 {
			run := ctrl + 1
			if len(out)+run > n || ip+run > len(in) {
				return nil, ErrLZF
			}
			out = append(out, in[ip:ip+run]...)
			ip += run
			continue
		}
		size, back := ctrl>>5, (ctrl&0x1f)<<8+1
		if ip >= len(in) {
			return nil, ErrLZF
		}
		if size == 7 {
			size += int(in[ip])
			ip++
			if ip >= len(in) {
				return nil, ErrLZF
			}
		}
		back += int(in[ip])
		ip++
		size += 2
		if len(out)+size > n || back > len(out) {
			return nil, ErrLZF
		}
		// Byte by byte: the source may overlap what is being written.
		from := len(out) - back
		for i := range size {
			out = append(out, out[from+i])
		}
	}
	if len(out) != n {
		return nil, ErrLZF
	}
	return out, nil
}
