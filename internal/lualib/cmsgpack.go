package lualib

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
)

// cmsgpack: lua-cmsgpack 0.4.0 as Redis vendors it.

// msgpackMaxNesting is how deep pack goes into tables; a table deeper
// than this packs as nil, which also ends circular references.
const msgpackMaxNesting = 16

func newCMsgpack(L *lua.LState) *lua.LTable {
	t := newModule(L, map[string]lua.LGFunction{
		"pack":         msgpackPack,
		"unpack":       msgpackUnpack,
		"unpack_one":   msgpackUnpackOne,
		"unpack_limit": msgpackUnpackLimit,
	})
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// ===== packing =====

// msgpackPack packs each argument and returns the concatenation.
func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "MessagePack pack needs input.")
	}
	if n+n > lua51.MaxCStack {
		argError(L, 0, "Too many arguments for MessagePack pack.")
	}
	var buf []byte
	for i := 1; i <= n; i++ {
		buf = msgpackAppend(buf, L.Get(i), 0)
	}
	L.Push(lua.LString(buf))
	return 1
}

// msgpackAppend appends v, found level tables deep.
func msgpackAppend(buf []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return msgpackAppendString(buf, string(v))
	case lua.LBool:
		if v {
			return append(buf, 0xc3)
		}
		return append(buf, 0xc2)
	case lua.LNumber:
		return msgpackAppendNumber(buf, float64(v))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			break
		}
		if n, ok := msgpackArrayLength(v); ok {
			buf = msgpackAppendHeader(buf, 0x90, 0xdc, uint32(n))
			for i := 1; i <= n; i++ {
				buf = msgpackAppend(buf, v.RawGetInt(i), level+1)
			}
			return buf
		}
		n := 0
		for k, _ := v.Next(lua.LNil); k != lua.LNil; k, _ = v.Next(k) {
			n++
		}
		buf = msgpackAppendHeader(buf, 0x80, 0xde, uint32(n))
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			buf = msgpackAppend(buf, k, level+1)
			buf = msgpackAppend(buf, val, level+1)
		}
		return buf
	}
	// nil, and what msgpack has no type for: functions, userdata (so
	// cjson.null too), threads.
	return append(buf, 0xc0)
}

func msgpackAppendString(buf []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		buf = append(buf, 0xa0|byte(n))
	case n <= 0xff:
		buf = append(buf, 0xd9, byte(n))
	case n <= 0xffff:
		buf = append(buf, 0xda)
		buf = binary.BigEndian.AppendUint16(buf, uint16(n))
	default:
		buf = append(buf, 0xdb)
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	}
	return append(buf, s...)
}

// msgpackAppendNumber packs as an integer a number an int64 holds
// exactly, otherwise as a float when a float holds it exactly, else as a
// double.
func msgpackAppendNumber(buf []byte, f float64) []byte {
	if !math.IsInf(f, 0) && float64(truncInt64(f)) == f {
		return msgpackAppendInt(buf, truncInt64(f))
	}
	if f32 := float32(f); float64(f32) == f {
		buf = append(buf, 0xca)
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(f32))
	}
	buf = append(buf, 0xcb)
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
}

func msgpackAppendInt(buf []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(buf, byte(n))
	case n >= 0 && n <= 0xff:
		return append(buf, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(buf, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(buf, 0xcf), uint64(n))
	case n >= -32:
		return append(buf, byte(n))
	case n >= -128:
		return append(buf, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(buf, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(buf, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(buf, 0xd3), uint64(n))
}

// msgpackAppendHeader appends an array or map header: the fix form
// (fix|n) up to 15 elements, then the 16-bit form (code16) and the 32-bit
// one (code16+1).
func msgpackAppendHeader(buf []byte, fix, code16 byte, n uint32) []byte {
	switch {
	case n <= 15:
		return append(buf, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(buf, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(buf, code16+1), n)
}

// msgpackArrayLength is lua-cmsgpack's test for a table to pack as an
// array: its keys are exactly the integers 1 to n (so the empty table is
// an array). Keys are compared after the CPU's conversion to int.
func msgpackArrayLength(t *lua.LTable) (int, bool) {
	var count, max int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || math.IsInf(f, 0) || float64(truncInt32(f)) != f {
			return 0, false
		}
		if f > float64(max) {
			max = truncInt32(f)
		}
		count++
	}
	return int(count), max == count
}

// ===== unpacking =====

const (
	msgpackOK = iota
	msgpackEOF
	msgpackBadFormat
)

type msgpackDecoder struct {
	L     *lua.LState
	data  string
	pos   int
	err   int
	slots int // values on the C decoder's stack
}

func msgpackUnpack(L *lua.LState) int {
	return msgpackUnpackFull(L, 0, 0)
}

func msgpackUnpackOne(L *lua.LState) int {
	offset := optInteger(L, 2, 0)
	L.SetTop(1)
	return msgpackUnpackFull(L, 1, offset)
}

func msgpackUnpackLimit(L *lua.LState) int {
	limit := checkInteger(L, 2)
	offset := optInteger(L, 3, 0)
	L.SetTop(1)
	return msgpackUnpackFull(L, limit, offset)
}

// msgpackUnpackFull decodes up to limit values from offset: all of them
// when both are 0, in which case the next offset is not returned before
// the values.
func msgpackUnpackFull(L *lua.LState, limit, offset int64) int {
	data := checkString(L, 1)
	if offset < 0 || limit < 0 {
		// The C code prints the input length where it means the limit.
		raise(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(data)))
	}
	if offset > int64(len(data)) {
		raise(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(data)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	d := msgpackDecoder{L: L, data: data, pos: int(offset), slots: L.GetTop()}
	var values []lua.LValue
	for int64(len(values)) < limit && d.pos < len(d.data) {
		v := d.value()
		switch d.err {
		case msgpackEOF:
			raise(L, "Missing bytes in input.")
		case msgpackBadFormat:
			raise(L, "Bad data format in input.")
		}
		values = append(values, v)
		d.slots++
	}
	if !all {
		if d.slots+1 > lua51.MaxCStack {
			raise(L, "stack overflow (in function mp_unpack_full)")
		}
		next := int64(d.pos)
		if d.pos == len(d.data) {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range values {
		L.Push(v)
	}
	if all {
		return len(values)
	}
	return len(values) + 1
}

// need reports whether n more bytes are there, setting the EOF error if
// not.
func (d *msgpackDecoder) need(n uint64) bool {
	if uint64(len(d.data)-d.pos) < n {
		d.err = msgpackEOF
		return false
	}
	return true
}

// readUint reads a big-endian unsigned integer of size bytes at at.
func (d *msgpackDecoder) readUint(at, size int) uint64 {
	var n uint64
	for i := 0; i < size; i++ {
		n = n<<8 | uint64(d.data[at+i])
	}
	return n
}

// value decodes the value at d.pos; on failure it sets d.err and returns
// nil.
func (d *msgpackDecoder) value() lua.LValue {
	if !d.need(1) {
		return nil
	}
	if d.slots+1 > lua51.MaxCStack {
		raise(d.L, "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
	p := d.pos
	c := d.data[p]
	// fixed-size values: their total size and how to read them
	fixed := func(size int, read func() lua.LValue) lua.LValue {
		if !d.need(uint64(size)) {
			return nil
		}
		v := read()
		d.pos += size
		return v
	}
	switch {
	case c <= 0x7f:
		d.pos++
		return lua.LNumber(c)
	case c >= 0xe0:
		d.pos++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return d.str(1, uint64(c&0x1f))
	case c&0xf0 == 0x90:
		d.pos++
		return d.array(uint64(c & 0xf))
	case c&0xf0 == 0x80:
		d.pos++
		return d.table(uint64(c & 0xf))
	}
	switch c {
	case 0xc0:
		d.pos++
		return lua.LNil
	case 0xc2, 0xc3:
		d.pos++
		return lua.LBool(c == 0xc3)
	case 0xcc:
		return fixed(2, func() lua.LValue { return lua.LNumber(d.readUint(p+1, 1)) })
	case 0xcd:
		return fixed(3, func() lua.LValue { return lua.LNumber(d.readUint(p+1, 2)) })
	case 0xce:
		return fixed(5, func() lua.LValue { return lua.LNumber(d.readUint(p+1, 4)) })
	case 0xcf:
		// lua_pushinteger of the unsigned value: past 2^63 it wraps.
		return fixed(9, func() lua.LValue { return lua.LNumber(int64(d.readUint(p+1, 8))) })
	case 0xd0:
		return fixed(2, func() lua.LValue { return lua.LNumber(int8(d.readUint(p+1, 1))) })
	case 0xd1:
		return fixed(3, func() lua.LValue { return lua.LNumber(int16(d.readUint(p+1, 2))) })
	case 0xd2:
		return fixed(5, func() lua.LValue { return lua.LNumber(int32(d.readUint(p+1, 4))) })
	case 0xd3:
		return fixed(9, func() lua.LValue { return lua.LNumber(int64(d.readUint(p+1, 8))) })
	case 0xca:
		return fixed(5, func() lua.LValue {
			return lua.LNumber(math.Float32frombits(uint32(d.readUint(p+1, 4))))
		})
	case 0xcb:
		return fixed(9, func() lua.LValue { return lua.LNumber(math.Float64frombits(d.readUint(p+1, 8))) })
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		n := 1 << (c - 0xd9)
		if d.need(uint64(1 + n)) {
			return d.str(1+n, d.readUint(p+1, n))
		}
	case 0xdc, 0xdd, 0xde, 0xdf: // array 16, 32, map 16, 32
		n := 2 << ((c - 0xdc) & 1)
		if d.need(uint64(1 + n)) {
			d.pos += 1 + n
			if c <= 0xdd {
				return d.array(d.readUint(p+1, n))
			}
			return d.table(d.readUint(p+1, n))
		}
	default:
		// bin, ext and the unused code: not in the format this library
		// knows.
		d.err = msgpackBadFormat
	}
	return nil
}

// str reads a string of n bytes after a header of hdr bytes.
func (d *msgpackDecoder) str(hdr int, n uint64) lua.LValue {
	if !d.need(uint64(hdr) + n) {
		return nil
	}
	start := d.pos + hdr
	d.pos = start + int(n)
	return lua.LString(d.data[start:d.pos])
}

func (d *msgpackDecoder) array(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.slots++
	if d.slots+1 > lua51.MaxCStack {
		raise(d.L, "stack overflow (in function mp_decode_to_lua_array)")
	}
	d.slots++ // each index, pushed before its value
	for i := uint64(1); i <= n; i++ {
		v := d.value()
		if d.err != msgpackOK {
			return nil
		}
		if v != lua.LNil {
			t.RawSetInt(int(i), v)
		}
	}
	d.slots -= 2
	return t
}

func (d *msgpackDecoder) table(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.slots++
	for i := uint64(0); i < n; i++ {
		k := d.value()
		if d.err != msgpackOK {
			return nil
		}
		d.slots++
		v := d.value()
		d.slots--
		if d.err != msgpackOK {
			return nil
		}
		switch k := k.(type) {
		case *lua.LNilType:
			d.L.Error(lua.LString("table index is nil"), 0)
		case lua.LNumber:
			if math.IsNaN(float64(k)) {
				d.L.Error(lua.LString("table index is NaN"), 0)
			}
		}
		t.RawSet(k, v)
	}
	d.slots--
	return t
}
