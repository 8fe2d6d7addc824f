package rdb

import (
	"encoding/binary"
	"strconv"
)

// The encodings Redis 7.0 still reads but no longer writes: ziplists
// (ziplist.c, before 7.0) and zipmaps (zipmap.c, before 2.6).

// readZiplist returns a ziplist's entries, integers as their decimal form:
// a 4-byte size, a 4-byte offset of the last entry and a 2-byte count
// (65535: too many to count), little-endian, then entries (the previous
// entry's size in 1 or 5 bytes, an encoding, data) and 0xff.
func readZiplist(b []byte) ([][]byte, error) {
	if len(b) < 11 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xff {
		return nil, ErrCorrupt
	}
	want := int(binary.LittleEndian.Uint16(b[8:]))
	var out [][]byte
	p, prev, last := 10, 0, 10
	end := len(b) - 1
	for p < end {
		start := p
		// The previous entry's size.
		if b[p] < 254 {
			if int(b[p]) != prev {
				return nil, ErrCorrupt
			}
			p++
		} else if b[p] == 254 && p+5 <= end {
			if int(binary.LittleEndian.Uint32(b[p+1:])) != prev {
				return nil, ErrCorrupt
			}
			p += 5
		} else {
			return nil, ErrCorrupt
		}
		if p >= end {
			return nil, ErrCorrupt
		}
		c := b[p]
		var val []byte
		intOf := func(size int) bool {
			if p+1+size > end {
				return false
			}
			var u uint64
			for i := size; i >= 1; i-- {
				u = u<<8 | uint64(b[p+i])
			}
			bits := uint(8 * size)
			v := int64(u<<(64-bits)) >> (64 - bits)
			val = strconv.AppendInt(nil, v, 10)
			p += 1 + size
			return true
		}
		ok := true
		switch {
		case c>>6 == 0:
			n := int(c & 0x3f)
			if ok = p+1+n <= end; ok {
				val, p = b[p+1:p+1+n], p+1+n
			}
		case c>>6 == 1:
			if ok = p+2 <= end; ok {
				n := int(c&0x3f)<<8 | int(b[p+1])
				if ok = p+2+n <= end; ok {
					val, p = b[p+2:p+2+n], p+2+n
				}
			}
		case c>>6 == 2:
			if ok = c == 0x80 && p+5 <= end; ok {
				n := uint64(binary.BigEndian.Uint32(b[p+1:]))
				if ok = n <= uint64(end-p-5); ok {
					val, p = b[p+5:p+5+int(n)], p+5+int(n)
				}
			}
		case c == 0xc0:
			ok = intOf(2)
		case c == 0xd0:
			ok = intOf(4)
		case c == 0xe0:
			ok = intOf(8)
		case c == 0xf0:
			ok = intOf(3)
		case c == 0xfe:
			ok = intOf(1)
		case c >= 0xf1 && c <= 0xfd:
			val, p = strconv.AppendInt(nil, int64(c&0x0f)-1, 10), p+1
		default:
			ok = false
		}
		if !ok {
			return nil, ErrCorrupt
		}
		out = append(out, val)
		prev, last = p-start, start
	}
	if p != end || (want != 0xffff && want != len(out)) {
		return nil, ErrCorrupt
	}
	if len(out) > 0 && int(binary.LittleEndian.Uint32(b[4:])) != last {
		return nil, ErrCorrupt
	}
	return out, nil
}

// readZipmap returns a zipmap's fields and values, alternating: a count
// byte, then per pair the field's length (1 byte, or 254 and 4 bytes
// little-endian), the field, the value's length, a count of free bytes
// after the value, the value and those bytes, and 0xff.
func readZipmap(b []byte) ([][]byte, error) {
	if len(b) < 2 || b[len(b)-1] != 0xff {
		return nil, ErrCorrupt
	}
	end := len(b) - 1
	p := 1
	readLen := func() (int, bool) {
		if p >= end {
			return 0, false
		}
		if b[p] < 254 {
			p++
			return int(b[p-1]), true
		}
		if b[p] != 254 || p+5 > end {
			return 0, false
		}
		n := binary.LittleEndian.Uint32(b[p+1:])
		p += 5
		return int(n), uint64(n) <= uint64(end)
	}
	var out [][]byte
	for p < end {
		fl, ok := readLen()
		if !ok || p+fl > end {
			return nil, ErrCorrupt
		}
		f := b[p : p+fl]
		p += fl
		vl, ok := readLen()
		if !ok || p >= end {
			return nil, ErrCorrupt
		}
		free := int(b[p])
		p++
		if p+vl+free > end {
			return nil, ErrCorrupt
		}
		out = append(out, f, b[p:p+vl])
		p += vl + free
	}
	if len(out) == 0 {
		return nil, ErrCorrupt
	}
	return out, nil
}
