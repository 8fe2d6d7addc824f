package lualib

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
)

// struct: Roberto Ierusalimschy's struct library (struct.c 1.7) as Redis
// vendors it, with the C type sizes of x86-64 Linux: short 2, int 4, long
// and size_t 8, native little endian, alignment at most 8.

const (
	structMaxIntSize = 32 // the largest integer size i and I take
	structMaxAlign   = 8  // what '!' without a number sets
)

func newStruct(L *lua.LState) *lua.LTable {
	return newModule(L, map[string]lua.LGFunction{
		"pack":   structPack,
		"unpack": structUnpack,
		"size":   structSize,
	})
}

// structFormat walks a format string, keeping the byte order and the
// alignment its options set.
type structFormat struct {
	L         *lua.LState
	fmt       string
	pos       int
	bigEndian bool
	align     int
}

func newStructFormat(L *lua.LState) *structFormat {
	return &structFormat{L: L, fmt: checkCString(L, 1), align: 1}
}

func (f *structFormat) more() bool { return f.pos < len(f.fmt) }

func (f *structFormat) next() byte {
	c := f.fmt[f.pos]
	f.pos++
	return c
}

// number reads the decimal number at the current position, def if there
// is none.
func (f *structFormat) number(def int) int {
	if !f.more() || !isDigit(f.fmt[f.pos]) {
		return def
	}
	a := 0
	for f.more() && isDigit(f.fmt[f.pos]) {
		d := int(f.fmt[f.pos] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			raise(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.pos++
	}
	return a
}

// size is the size of option opt, reading its number if it takes one; 0
// for options that take no room or have no fixed size.
func (f *structFormat) size(opt byte) int {
	switch opt {
	case 'b', 'B', 'x':
		return 1
	case 'h', 'H':
		return 2
	case 'f':
		return 4
	case 'l', 'L', 'T', 'd':
		return 8
	case 'c':
		return f.number(1)
	case 'i', 'I':
		n := f.number(4)
		if n > structMaxIntSize {
			raise(f.L, "integral size %d is larger than limit of %d", n, structMaxIntSize)
		}
		return n
	}
	return 0
}

// padding is how many bytes align an item of the given size at offset
// at. The C code does this in size_t with a mask that assumes a power of
// 2, so odd sizes (i3) pad oddly; this does the same arithmetic.
func (f *structFormat) padding(at uint64, opt byte, size int) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	s := uint64(min(size, f.align))
	return (s - (at & (s - 1))) & (s - 1)
}

// control applies an option that is not a data item.
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		f.bigEndian = true
	case '<':
		f.bigEndian = false
	case '!':
		a := f.number(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			raise(f.L, "alignment %d is not a power of 2", a)
		}
		f.align = a
	default:
		argError(f.L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func (f *structFormat) order() interface {
	binary.ByteOrder
	binary.AppendByteOrder
} {
	if f.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

func structPack(L *lua.LState) int {
	f := newStructFormat(L)
	// The C code pushes a nil after the arguments, so a missing one reads
	// as nil, not as no value.
	L.Push(lua.LNil)
	arg := 2
	var buf []byte
	for f.more() {
		opt := f.next()
		size := f.size(opt)
		buf = append(buf, make([]byte, f.padding(uint64(len(buf)), opt, size))...)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			buf = structAppendInt(buf, checkNumber(L, arg), size, f.bigEndian)
			arg++
		case 'x':
			buf = append(buf, 0)
		case 'f':
			buf = f.order().AppendUint32(buf, math.Float32bits(float32(checkNumber(L, arg))))
			arg++
		case 'd':
			buf = f.order().AppendUint64(buf, math.Float64bits(checkNumber(L, arg)))
			arg++
		case 'c', 's':
			s := checkString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				// The C code names the argument after this one.
				argError(L, arg, "string too short")
			}
			buf = append(buf, s[:size]...)
			if opt == 's' {
				buf = append(buf, 0)
			}
		default:
			f.control(opt)
		}
	}
	L.Push(lua.LString(buf))
	return 1
}

// structAppendInt appends n as an integer of size bytes: converted to
// unsigned long as the C code does (through long when negative), so
// sizes past 8 get zero bytes, not sign bytes, above the low 8.
func structAppendInt(buf []byte, n float64, size int, bigEndian bool) []byte {
	var v uint64
	if n < 0 {
		v = uint64(truncInt64(n))
	} else {
		v = truncUint64(n)
	}
	b := make([]byte, size)
	for i := 0; i < size; i++ {
		at := i
		if bigEndian {
			at = size - 1 - i
		}
		b[at] = byte(v)
		v >>= 8
	}
	return append(buf, b...)
}

// structInt reads an integer of size bytes into an unsigned long, as
// the C code does: past 8 bytes the high ones shift out. Signed values
// are sign-extended with a mask shifted by size*8-1, which the CPU takes
// modulo 64.
func structInt(b string, size int, bigEndian, signed bool) float64 {
	var v uint64
	for i := 0; i < size; i++ {
		at := size - 1 - i
		if bigEndian {
			at = i
		}
		v = v<<8 | uint64(b[at])
	}
	if !signed {
		return float64(v)
	}
	mask := ^uint64(0) << (uint(size*8-1) & 63)
	if v&mask != 0 {
		v |= mask
	}
	return float64(int64(v))
}

func structUnpack(L *lua.LState) int {
	f := newStructFormat(L)
	data := checkString(L, 2)
	pos := uint64(optInteger(L, 3, 1))
	if pos == 0 {
		argError(L, 3, "offset must be 1 or greater")
	}
	pos--
	ld := uint64(len(data))
	args := L.GetTop()
	var results []lua.LValue
	for f.more() {
		opt := f.next()
		size := uint64(f.size(opt))
		pos += f.padding(pos, opt, int(size))
		if size > ld || pos > ld-size {
			argError(L, 2, "data string too short")
		}
		if args+len(results)+2 > lua51.MaxCStack {
			raise(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			signed := opt >= 'a'
			results = append(results, lua.LNumber(structInt(data[pos:pos+size], int(size), f.bigEndian, signed)))
		case 'x':
		case 'f':
			bits := f.order().Uint32([]byte(data[pos : pos+4]))
			results = append(results, lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			bits := f.order().Uint64([]byte(data[pos : pos+8]))
			results = append(results, lua.LNumber(math.Float64frombits(bits)))
		case 'c':
			if size == 0 {
				// c0 takes its length from the previous result.
				var n float64
				ok := len(results) > 0
				if ok {
					n, ok = toNumber(results[len(results)-1])
				}
				if !ok {
					raise(L, "format 'c0' needs a previous size")
				}
				size = truncUint64(n)
				results = results[:len(results)-1]
				if size > ld || pos > ld-size {
					argError(L, 2, "data string too short")
				}
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				raise(L, "unfinished string in data")
			}
			size = uint64(end) + 1
			results = append(results, lua.LString(data[pos:pos+uint64(end)]))
		default:
			f.control(opt)
		}
		pos += size
	}
	for _, v := range results {
		L.Push(v)
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return len(results) + 1
}

func structSize(L *lua.LState) int {
	f := newStructFormat(L)
	var pos uint64
	for f.more() {
		opt := f.next()
		size := f.size(opt)
		pos += f.padding(pos, opt, size)
		switch {
		case opt == 's':
			argError(L, 1, "option 's' has no fixed size")
		case opt == 'c' && size == 0:
			argError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt)
		}
		pos += uint64(size)
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}

func isAlnum(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}
