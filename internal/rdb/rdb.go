// Package rdb reads and writes the pieces of Redis's RDB format that DUMP
// payloads are made of, as Redis 7.0.15 does (rdb.c): lengths, strings
// (integer-encoded, LZF-compressed or raw), and the trailer of a payload,
// the RDB version and a CRC-64 of everything before it.
//
// What it writes is byte for byte what redis-server writes for the same
// input (with rdbcompression yes, its default); what it reads is anything
// Redis would read. The package tests hold payloads a real redis-server
// 7.0.15 produced.
package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

// Version is the RDB version of Redis 7.0.15 (rdb.h's RDB_VERSION).
const Version = 10

// Opcodes and types of the RDB format (rdb.h).
const (
	// TypeString is a string key's value (RDB_TYPE_STRING).
	TypeString = 0
	// OpFunction2 is a function library: its code, with its shebang
	// (RDB_OPCODE_FUNCTION2).
	OpFunction2 = 245
	// OpFunction is a function library as Redis 7.0's release candidates
	// wrote it: name, engine, optional description, then the code without
	// a shebang (RDB_OPCODE_FUNCTION).
	OpFunction = 246
)

// String encodings: the 6 bits after a length byte's 0b11 (RDB_ENC_*).
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// Errors of Reader.
var (
	// ErrShort is data that ends before what it announces.
	ErrShort = errors.New("rdb: unexpected end of data")
	// ErrCorrupt is data no RDB writer produces: an unknown length or
	// string encoding (or invalid LZF, ErrLZF).
	ErrCorrupt = errors.New("rdb: corrupt data")
)

// AppendLen appends n in RDB's length encoding: 6 bits, 14 bits, or a
// marker byte and 32 or 64 bits big-endian.
func AppendLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|0x40, byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(dst, 0x80), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(dst, 0x81), n)
	}
}

// AppendString appends s as Redis's rdbSaveRawString writes a string: as
// an integer if it is the decimal form of one that fits 32 bits, else
// LZF-compressed if it is longer than 20 bytes and compression saves at
// least 4 of them, else as its length and bytes.
func AppendString(dst, s []byte) []byte {
	if len(s) <= 11 {
		if v, err := strconv.ParseInt(string(s), 10, 32); err == nil && strconv.FormatInt(v, 10) == string(s) {
			return appendInt(dst, v)
		}
	}
	if len(s) > 20 {
		if c := Compress(s, len(s)-4); c != nil {
			dst = append(dst, 0xc0|encLZF)
			dst = AppendLen(dst, uint64(len(c)))
			dst = AppendLen(dst, uint64(len(s)))
			return append(dst, c...)
		}
	}
	return append(AppendLen(dst, uint64(len(s))), s...)
}

// appendInt appends v, which fits 32 bits, in the smallest integer
// encoding, little-endian.
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= -1<<7 && v < 1<<7:
		return append(dst, 0xc0|encInt8, byte(v))
	case v >= -1<<15 && v < 1<<15:
		return binary.LittleEndian.AppendUint16(append(dst, 0xc0|encInt16), uint16(v))
	default:
		return binary.LittleEndian.AppendUint32(append(dst, 0xc0|encInt32), uint32(v))
	}
}

// AppendTrailer appends a payload's trailer to payload: the RDB version
// (2 bytes, little-endian) and the CRC-64 of payload and version (8
// bytes, little-endian), which DUMP payloads end with.
func AppendTrailer(payload []byte) []byte {
	payload = binary.LittleEndian.AppendUint16(payload, Version)
	return binary.LittleEndian.AppendUint64(payload, CRC64(0, payload))
}

// CheckTrailer reports the RDB version of a payload ending with a trailer
// and whether the payload is one Redis accepts (verifyDumpPayload): at
// least 10 bytes, a version no later than Version, a matching checksum.
func CheckTrailer(payload []byte) (version uint16, ok bool) {
	if len(payload) < 10 {
		return 0, false
	}
	t := payload[len(payload)-10:]
	version = binary.LittleEndian.Uint16(t)
	if version > Version {
		return version, false
	}
	return version, CRC64(0, payload[:len(payload)-8]) == binary.LittleEndian.Uint64(t[2:])
}

// Reader reads RDB data from a byte slice.
type Reader struct {
	b   []byte
	pos int
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) - r.pos }

// next returns the next n bytes.
func (r *Reader) next(n uint64) ([]byte, error) {
	if n > uint64(r.Len()) {
		return nil, ErrShort
	}
	p := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return p, nil
}

// ReadByte reads one byte: a type or opcode.
func (r *Reader) ReadByte() (byte, error) {
	p, err := r.next(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// ReadLen reads a length as rdbLoadLen does; encoded reports a string
// encoding marker (0b11xxxxxx), whose 6 bits are then n. Where Redis
// reads a length and ignores the marker (an LZF string's lengths), so do
// callers.
func (r *Reader) ReadLen() (n uint64, encoded bool, err error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c>>6 == 3:
		return uint64(c & 0x3f), true, nil
	case c>>6 == 0:
		return uint64(c), false, nil
	case c>>6 == 1:
		d, err := r.ReadByte()
		return uint64(c&0x3f)<<8 | uint64(d), false, err
	case c == 0x80:
		p, err := r.next(4)
		if err != nil {
			return 0, false, err
		}
		return uint64(binary.BigEndian.Uint32(p)), false, nil
	case c == 0x81:
		p, err := r.next(8)
		if err != nil {
			return 0, false, err
		}
		return binary.BigEndian.Uint64(p), false, nil
	}
	return 0, false, ErrCorrupt
}

// ReadString reads a string in any of its encodings, an integer as its
// decimal form.
func (r *Reader) ReadString() ([]byte, error) {
	n, encoded, err := r.ReadLen()
	switch {
	case err != nil:
		return nil, err
	case !encoded:
		p, err := r.next(n)
		if err != nil {
			return nil, err
		}
		return append(make([]byte, 0, len(p)), p...), nil
	}
	switch n {
	case encInt8, encInt16, encInt32:
		p, err := r.next(1 << n)
		if err != nil {
			return nil, err
		}
		var v int64
		switch n {
		case encInt8:
			v = int64(int8(p[0]))
		case encInt16:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		}
		return strconv.AppendInt(nil, v, 10), nil
	case encLZF:
		clen, _, err := r.ReadLen()
		if err != nil {
			return nil, err
		}
		ulen, _, err := r.ReadLen()
		if err != nil {
			return nil, err
		}
		c, err := r.next(clen)
		if err != nil {
			return nil, err
		}
		if ulen == 0 {
			// lzf_decompress reports an error as 0 bytes written, which
			// Redis compares with the announced length: for 0, anything
			// decompresses.
			return []byte{}, nil
		}
		if ulen > math.MaxInt {
			return nil, ErrLZF
		}
		return Decompress(c, int(ulen))
	}
	return nil, ErrCorrupt
}
