package rdb

import (
	"encoding/binary"
	"strconv"
)

// Listpacks (listpack.c): a 4-byte total size and a 2-byte entry count
// (65535: too many to count), little-endian, the entries, and 0xff. An
// entry is its encoding and data followed by the length of both, written
// backwards in 7-bit groups so the list can be walked from its end.

const (
	lpHeaderSize  = 6
	lpEOF         = 0xff
	lpCountAbsent = 0xffff
)

// lpEntry is one listpack entry: an integer, or a string.
type lpEntry struct {
	isInt bool
	n     int64
	s     []byte
}

// bytes is the entry as Redis hands it out: an integer as its decimal
// form.
func (e lpEntry) bytes() []byte {
	if e.isInt {
		return strconv.AppendInt(nil, e.n, 10)
	}
	return e.s
}

// lpWriter builds a listpack entry by entry, as lpAppend and
// lpAppendInteger do.
type lpWriter struct {
	b []byte
	n int
}

func newLPWriter() *lpWriter { return &lpWriter{b: make([]byte, lpHeaderSize, 64)} }

// size is the listpack's total size as it stands (lpBytes).
func (w *lpWriter) size() int { return len(w.b) + 1 }

// appendString appends s, as an integer when it is the canonical decimal
// form of one (lpStringToInt64).
func (w *lpWriter) appendString(s []byte) {
	if v, ok := lpStringToInt(s); ok {
		w.appendInt(v)
		return
	}
	start := len(w.b)
	switch n := len(s); {
	case n < 64:
		w.b = append(w.b, 0x80|byte(n))
	case n < 4096:
		w.b = append(w.b, 0xe0|byte(n>>8), byte(n))
	default:
		w.b = binary.LittleEndian.AppendUint32(append(w.b, 0xf0), uint32(n))
	}
	w.b = append(w.b, s...)
	w.end(start)
}

// appendInt appends v in the smallest integer encoding.
func (w *lpWriter) appendInt(v int64) {
	start := len(w.b)
	w.b = appendLPInt(w.b, v)
	w.end(start)
}

// appendLPInt appends v's integer encoding (lpEncodeIntegerGetType).
func appendLPInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 127:
		return append(b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		return append(b, 0xc0|byte(u>>8), byte(u))
	case v >= -32768 && v <= 32767:
		return binary.LittleEndian.AppendUint16(append(b, 0xf1), uint16(v))
	case v >= -8388608 && v <= 8388607:
		u := uint32(v)
		return append(b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= -2147483648 && v <= 2147483647:
		return binary.LittleEndian.AppendUint32(append(b, 0xf3), uint32(v))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xf4), uint64(v))
}

// lpIntSize is the size of v's entry, backlen included.
func lpIntSize(v int64) int {
	n := len(appendLPInt(make([]byte, 0, 9), v))
	return n + lpBacklenSize(n)
}

// end appends the backlen of the entry that starts at start.
func (w *lpWriter) end(start int) {
	w.b = appendBacklen(w.b, uint64(len(w.b)-start))
	w.n++
}

// appendBacklen is lpEncodeBacklen.
func appendBacklen(b []byte, l uint64) []byte {
	switch {
	case l <= 127:
		return append(b, byte(l))
	case l < 16383:
		return append(b, byte(l>>7), byte(l&127)|128)
	case l < 2097151:
		return append(b, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case l < 268435455:
		return append(b, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
	return append(b, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
}

func lpBacklenSize(l int) int { return len(appendBacklen(make([]byte, 0, 5), uint64(l))) }

// finish returns the listpack's bytes.
func (w *lpWriter) finish() []byte {
	b := append(w.b, lpEOF)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	count := w.n
	if count >= lpCountAbsent {
		count = lpCountAbsent
	}
	binary.LittleEndian.PutUint16(b[4:], uint16(count))
	return b
}

// lpStringToInt is lpStringToInt64: s is the canonical decimal form of an
// int64 (no sign on 0, no leading zeros, at most 20 bytes).
func lpStringToInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	p := s
	neg := p[0] == '-'
	if neg {
		p = p[1:]
	}
	if len(p) == 0 || p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<64-1)/10 {
			return 0, false
		}
		v *= 10
		if v > 1<<64-1-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// readListpack returns a listpack's entries, checking its whole
// structure: sizes, encodings, backlens, terminator and count.
func readListpack(b []byte) ([]lpEntry, error) {
	if len(b) < lpHeaderSize+1 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != lpEOF {
		return nil, ErrCorrupt
	}
	want := int(binary.LittleEndian.Uint16(b[4:]))
	var out []lpEntry
	p := lpHeaderSize
	for p < len(b)-1 {
		e, n, err := readLPEntry(b[p : len(b)-1])
		if err != nil {
			return nil, err
		}
		// The backlen must say what the entry's size is.
		bl := len(appendBacklen(nil, uint64(n)))
		if p+n+bl > len(b)-1 || string(b[p+n:p+n+bl]) != string(appendBacklen(nil, uint64(n))) {
			return nil, ErrCorrupt
		}
		out = append(out, e)
		p += n + bl
	}
	if p != len(b)-1 || (want != lpCountAbsent && want != len(out)) {
		return nil, ErrCorrupt
	}
	return out, nil
}

// readLPEntry decodes the entry at the start of b and returns it with the
// size of its encoding and data.
func readLPEntry(b []byte) (lpEntry, int, error) {
	c := b[0]
	need := func(n int) bool { return n <= len(b) }
	sint := func(u uint64, bits uint) int64 { return int64(u<<(64-bits)) >> (64 - bits) }
	switch {
	case c&0x80 == 0:
		return lpEntry{isInt: true, n: int64(c)}, 1, nil
	case c&0xc0 == 0x80:
		n := int(c & 0x3f)
		if !need(1 + n) {
			return lpEntry{}, 0, ErrCorrupt
		}
		return lpEntry{s: b[1 : 1+n]}, 1 + n, nil
	case c&0xe0 == 0xc0:
		if !need(2) {
			return lpEntry{}, 0, ErrCorrupt
		}
		return lpEntry{isInt: true, n: sint(uint64(c&0x1f)<<8|uint64(b[1]), 13)}, 2, nil
	case c&0xf0 == 0xe0:
		if !need(2) {
			return lpEntry{}, 0, ErrCorrupt
		}
		n := int(c&0x0f)<<8 | int(b[1])
		if !need(2 + n) {
			return lpEntry{}, 0, ErrCorrupt
		}
		return lpEntry{s: b[2 : 2+n]}, 2 + n, nil
	case c == 0xf0:
		if !need(5) {
			return lpEntry{}, 0, ErrCorrupt
		}
		n := uint64(binary.LittleEndian.Uint32(b[1:]))
		if n > uint64(len(b)-5) {
			return lpEntry{}, 0, ErrCorrupt
		}
		return lpEntry{s: b[5 : 5+n]}, 5 + int(n), nil
	case c >= 0xf1 && c <= 0xf4:
		size := map[byte]int{0xf1: 2, 0xf2: 3, 0xf3: 4, 0xf4: 8}[c]
		if !need(1 + size) {
			return lpEntry{}, 0, ErrCorrupt
		}
		var u uint64
		for i := size; i >= 1; i-- {
			u = u<<8 | uint64(b[i])
		}
		return lpEntry{isInt: true, n: sint(u, uint(8*size))}, 1 + size, nil
	}
	return lpEntry{}, 0, ErrCorrupt
}
