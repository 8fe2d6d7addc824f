package lualib

import (
	"fmt"
	"math"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
)

// cjson: lua-cjson 2.1.0 as Redis vendors it.

// jsonConfig is one cjson module's settings, changed by its encode_* and
// decode_* functions. Each module table (cjson, and every cjson.new())
// has its own.
type jsonConfig struct {
	sparseConvert        int // 0 or 1
	sparseRatio          int32
	sparseSafe           int32
	encodeMaxDepth       int32
	decodeMaxDepth       int32
	encodeInvalidNumbers int // 0 off, 1 on, 2 null
	decodeInvalidNumbers int // 0 or 1
	keepBuffer           int // 0 or 1; no effect but its own value
	precision            int32
}

func defaultJSONConfig() *jsonConfig {
	return &jsonConfig{
		sparseRatio:          2,
		sparseSafe:           10,
		encodeMaxDepth:       1000,
		decodeMaxDepth:       1000,
		decodeInvalidNumbers: 1,
		keepBuffer:           1,
		precision:            14,
	}
}

// newJSONNull makes cjson.null. In Redis it is a NULL light userdata,
// which prints as "userdata: (nil)"; here it is a userdata with a
// __tostring that prints the same.
func newJSONNull(L *lua.LState) *lua.LUserData {
	null := L.NewUserData()
	mt := L.NewTable()
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("userdata: (nil)"))
		return 1
	}))
	null.Metatable = mt
	return null
}

// cjsonModule is one cjson table's functions and the state they share.
type cjsonModule struct {
	cfg  *jsonConfig
	null *lua.LUserData
}

func newCJSON(L *lua.LState, null *lua.LUserData) *lua.LTable {
	m := &cjsonModule{cfg: defaultJSONConfig(), null: null}
	t := newModule(L, map[string]lua.LGFunction{
		"encode":                  m.encode,
		"decode":                  m.decode,
		"encode_sparse_array":     m.encodeSparseArray,
		"encode_max_depth":        intSetting(&m.cfg.encodeMaxDepth, 1, math.MaxInt32),
		"decode_max_depth":        intSetting(&m.cfg.decodeMaxDepth, 1, math.MaxInt32),
		"encode_number_precision": intSetting(&m.cfg.precision, 1, 14),
		"encode_keep_buffer":      enumSetting(&m.cfg.keepBuffer, onOffOptions),
		"encode_invalid_numbers":  enumSetting(&m.cfg.encodeInvalidNumbers, []string{"off", "on", "null"}),
		"decode_invalid_numbers":  enumSetting(&m.cfg.decodeInvalidNumbers, onOffOptions),
		"new": func(L *lua.LState) int {
			L.Push(newCJSON(L, null))
			return 1
		},
	})
	t.RawSetString("null", null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

// ===== configuration =====

// configArgs checks a configuration function got at most n arguments,
// and pads them with nils to n so the settings pushed come after them.
func configArgs(L *lua.LState, n int) {
	if L.GetTop() > n {
		argError(L, n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// integerOption sets *setting from argument i when given, range-checked,
// and pushes the setting. lua-cjson reports a range error as argument #1
// whatever the argument.
func integerOption(L *lua.LState, i int, setting *int32, min, max int32) {
	if L.Get(i) != lua.LNil {
		v := int32(checkInteger(L, i))
		if v < min || v > max {
			argError(L, 1, fmt.Sprintf("expected integer between %d and %d", min, max))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
}

var onOffOptions = []string{"off", "on"}

// enumOption sets *setting from argument i when given, a boolean or one
// of options by name, and pushes the setting: as a boolean when it is 0 or
// 1, by name otherwise.
func enumOption(L *lua.LState, i int, setting *int, options []string) {
	if v := L.Get(i); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := checkCString(L, i)
			found := false
			for n, o := range options {
				if o == name {
					*setting, found = n, true
					break
				}
			}
			if !found {
				argError(L, i, fmt.Sprintf("invalid option '%s'", name))
			}
		}
	}
	if *setting <= 1 {
		L.Push(lua.LBool(*setting == 1))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
}

func (m *cjsonModule) encodeSparseArray(L *lua.LState) int {
	configArgs(L, 3)
	enumOption(L, 1, &m.cfg.sparseConvert, onOffOptions)
	integerOption(L, 2, &m.cfg.sparseRatio, 0, math.MaxInt32)
	integerOption(L, 3, &m.cfg.sparseSafe, 0, math.MaxInt32)
	return 3
}

// intSetting is a configuration function for one integer setting.
func intSetting(setting *int32, min, max int32) lua.LGFunction {
	return func(L *lua.LState) int {
		configArgs(L, 1)
		integerOption(L, 1, setting, min, max)
		return 1
	}
}

// enumSetting is a configuration function for one setting by name.
func enumSetting(setting *int, options []string) lua.LGFunction {
	return func(L *lua.LState) int {
		configArgs(L, 1)
		enumOption(L, 1, setting, options)
		return 1
	}
}

// ===== encoding =====

func (m *cjsonModule) encode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	e := jsonEncoder{L: L, cfg: m.cfg, null: m.null}
	// The C encoder holds the argument and, per table level, what it is
	// walking on the Lua stack.
	e.value(L.Get(1), 0, 1)
	L.Push(lua.LString(e.buf))
	return 1
}

type jsonEncoder struct {
	L    *lua.LState
	cfg  *jsonConfig
	null *lua.LUserData
	buf  []byte
}

func (e *jsonEncoder) fail(v lua.LValue, reason string) {
	raise(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

// value appends v at nesting depth (tables above it) with slots values on
// the C encoder's stack.
func (e *jsonEncoder) value(v lua.LValue, depth int, slots int) {
	switch v := v.(type) {
	case lua.LString:
		e.buf = appendJSONString(e.buf, string(v))
	case lua.LNumber:
		e.number(v)
	case lua.LBool:
		if v {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case *lua.LTable:
		depth++
		if depth > int(e.cfg.encodeMaxDepth) || slots+3 > lua51.MaxCStack {
			raise(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(v); n > 0 {
			e.array(v, n, depth, slots)
		} else {
			e.object(v, depth, slots)
		}
	default:
		if v == e.null {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.fail(v, "type not supported")
	}
}

func (e *jsonEncoder) number(n lua.LNumber) {
	f := float64(n)
	switch e.cfg.encodeInvalidNumbers {
	case 0:
		if math.IsInf(f, 0) || math.IsNaN(f) {
			e.fail(n, "must not be NaN or Inf")
		}
	case 1:
		if math.IsNaN(f) {
			e.buf = append(e.buf, "nan"...)
			return
		}
	default:
		if math.IsInf(f, 0) || math.IsNaN(f) {
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = append(e.buf, formatG(f, int(e.cfg.precision))...)
}

// arrayLength is lua-cjson's test for a table to encode as an array: its
// largest key when every key is a positive integer and the table is not
// too sparse, else -1 (or an error for a too sparse array, unless
// converting those to objects is on). The C code keeps the largest key in
// an int, with the CPU's conversion from double.
func (e *jsonEncoder) arrayLength(t *lua.LTable) int32 {
	var max, items int32
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = truncInt32(f)
		}
		items++
	}
	if e.cfg.sparseRatio > 0 && max > items*e.cfg.sparseRatio && max > e.cfg.sparseSafe {
		if e.cfg.sparseConvert == 0 {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return max
}

func (e *jsonEncoder) array(t *lua.LTable, n int32, depth, slots int) {
	e.buf = append(e.buf, '[')
	for i := int32(1); i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.value(t.RawGetInt(int(i)), depth, slots+1)
	}
	e.buf = append(e.buf, ']')
}

func (e *jsonEncoder) object(t *lua.LTable, depth, slots int) {
	e.buf = append(e.buf, '{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		switch k := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.number(k)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.buf = appendJSONString(e.buf, string(k))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.value(v, depth, slots+2)
	}
	e.buf = append(e.buf, '}')
}

// appendJSONString appends s quoted as lua-cjson does: control
// characters, DEL, '"', '\' and '/' escaped, other bytes (UTF-8 or not)
// as they are.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\', '/':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			if c < 0x20 || c == 0x7f {
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}

// ===== decoding =====

type jsonToken int

const (
	tokObjBegin jsonToken = iota
	tokObjEnd
	tokArrBegin
	tokArrEnd
	tokString
	tokNumber
	tokBoolean
	tokNull
	tokColon
	tokComma
	tokEnd
	tokError
)

// jsonTokenNames are the names lua-cjson's errors give the tokens.
var jsonTokenNames = [...]string{
	tokObjBegin: "T_OBJ_BEGIN",
	tokObjEnd:   "T_OBJ_END",
	tokArrBegin: "T_ARR_BEGIN",
	tokArrEnd:   "T_ARR_END",
	tokString:   "T_STRING",
	tokNumber:   "T_NUMBER",
	tokBoolean:  "T_BOOLEAN",
	tokNull:     "T_NULL",
	tokColon:    "T_COLON",
	tokComma:    "T_COMMA",
	tokEnd:      "T_END",
	tokError:    "T_ERROR",
}

type jsonTokenValue struct {
	typ   jsonToken
	index int // where the token starts
	str   string
	num   float64
	b     bool
	err   string // what is wrong, for tokError
}

type jsonDecoder struct {
	L     *lua.LState
	cfg   *jsonConfig
	null  *lua.LUserData
	data  string
	pos   int
	depth int
	slots int // values on the C decoder's stack
}

func (m *cjsonModule) decode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	d := jsonDecoder{L: L, cfg: m.cfg, null: m.null, data: checkString(L, 1), slots: 1}
	// RFC 4627: JSON text in UTF-16 or UTF-32 has a zero byte among its
	// first two.
	if len(d.data) >= 2 && (d.data[0] == 0 || d.data[1] == 0) {
		raise(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	tok := d.next()
	v := d.value(&tok)
	tok = d.next()
	if tok.typ != tokEnd {
		d.fail("the end", &tok)
	}
	L.Push(v)
	return 1
}

// at is the byte at i; the C parser sees a zero byte past the end.
func (d *jsonDecoder) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (d *jsonDecoder) fail(expected string, tok *jsonTokenValue) {
	found := jsonTokenNames[tok.typ]
	if tok.typ == tokError {
		found = tok.err
	}
	raise(d.L, "Expected %s but found %s at character %d", expected, found, tok.index+1)
}

func (d *jsonDecoder) errorToken(msg string) jsonTokenValue {
	return jsonTokenValue{typ: tokError, index: d.pos, err: msg}
}

func (d *jsonDecoder) next() jsonTokenValue {
	for {
		switch d.at(d.pos) {
		case ' ', '\t', '\n', '\r':
			d.pos++
			continue
		}
		break
	}
	start := d.pos
	single := func(t jsonToken) jsonTokenValue {
		d.pos++
		return jsonTokenValue{typ: t, index: start}
	}
	rest := d.data[min(d.pos, len(d.data)):]
	switch c := d.at(d.pos); {
	case c == 0:
		return jsonTokenValue{typ: tokEnd, index: start}
	case c == '{':
		return single(tokObjBegin)
	case c == '}':
		return single(tokObjEnd)
	case c == '[':
		return single(tokArrBegin)
	case c == ']':
		return single(tokArrEnd)
	case c == ',':
		return single(tokComma)
	case c == ':':
		return single(tokColon)
	case c == '"':
		return d.stringToken()
	case c == '-' || isDigit(c):
		if d.cfg.decodeInvalidNumbers == 0 && d.invalidNumber() {
			return d.errorToken("invalid number")
		}
		return d.numberToken()
	case c == 't' && len(rest) >= 4 && rest[:4] == "true":
		d.pos += 4
		return jsonTokenValue{typ: tokBoolean, index: start, b: true}
	case c == 'f' && len(rest) >= 5 && rest[:5] == "false":
		d.pos += 5
		return jsonTokenValue{typ: tokBoolean, index: start}
	case c == 'n' && len(rest) >= 4 && rest[:4] == "null":
		d.pos += 4
		return jsonTokenValue{typ: tokNull, index: start}
	case c == '+' || c == 'i' || c == 'I' || c == 'n' || c == 'N':
		if d.cfg.decodeInvalidNumbers != 0 && d.invalidNumber() {
			return d.numberToken()
		}
	}
	return d.errorToken("invalid token")
}

// invalidNumber is lua-cjson's test for what strtod reads but JSON does
// not allow: a leading '+', hexadecimal, leading zeros, inf and nan.
func (d *jsonDecoder) invalidNumber() bool {
	p := d.pos
	switch d.at(p) {
	case '+':
		return true
	case '-':
		p++
	}
	if c := d.at(p); c == '0' {
		c2 := d.at(p + 1)
		return c2|0x20 == 'x' || isDigit(c2)
	} else if c <= '9' {
		return false
	}
	rest := d.data[min(p, len(d.data)):]
	return hasPrefixFold(rest, "inf") || hasPrefixFold(rest, "nan")
}

func (d *jsonDecoder) numberToken() jsonTokenValue {
	f, n := strtod(d.data[d.pos:])
	if n == 0 {
		return d.errorToken("invalid number")
	}
	start := d.pos
	d.pos += n
	return jsonTokenValue{typ: tokNumber, index: start, num: f}
}

func (d *jsonDecoder) stringToken() jsonTokenValue {
	start := d.pos
	d.pos++ // the opening quote
	var s []byte
	for {
		c := d.at(d.pos)
		if c == '"' {
			break
		}
		if c == 0 {
			return d.errorToken("unexpected end of string")
		}
		if c == '\\' {
			switch e := d.at(d.pos + 1); e {
			case 'u':
				var ok bool
				if s, ok = d.unicodeEscape(s); !ok {
					return d.errorToken("invalid unicode escape code")
				}
				continue
			case '"', '\\', '/':
				c = e
			case 'b':
				c = '\b'
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'f':
				c = '\f'
			case 'r':
				c = '\r'
			default:
				return d.errorToken("invalid escape code")
			}
			d.pos++
		}
		s = append(s, c)
		d.pos++
	}
	d.pos++ // the closing quote
	return jsonTokenValue{typ: tokString, index: start, str: string(s)}
}

// hex4 reads four hex digits at i as a UTF-16 code unit, -1 if they are
// not.
func (d *jsonDecoder) hex4(i int) int {
	v := 0
	for j := i; j < i+4; j++ {
		n := hexValue(d.at(j))
		if n < 0 {
			return -1
		}
		v = v<<4 | n
	}
	return v
}

// unicodeEscape appends as UTF-8 the \uXXXX escape at d.pos, or the
// surrogate pair of two escapes, and moves past it.
func (d *jsonDecoder) unicodeEscape(s []byte) ([]byte, bool) {
	cp := d.hex4(d.pos + 2)
	if cp < 0 {
		return s, false
	}
	length := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || d.at(d.pos+6) != '\\' || d.at(d.pos+7) != 'u' {
			return s, false
		}
		low := d.hex4(d.pos + 8)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return s, false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		length = 12
	}
	// Every code point here is at most 0x10FFFF and no lone surrogate, so
	// it is valid UTF-8.
	s = append(s, string(rune(cp))...)
	d.pos += length
	return s, true
}

// descend enters an object or array that needs slots more stack values.
func (d *jsonDecoder) descend(slots int) {
	d.depth++
	if d.depth <= int(d.cfg.decodeMaxDepth) && d.slots+slots <= lua51.MaxCStack {
		return
	}
	raise(d.L, "Found too many nested data structures (%d) at character %d", d.depth, d.pos)
}

func (d *jsonDecoder) value(tok *jsonTokenValue) lua.LValue {
	switch tok.typ {
	case tokString:
		return lua.LString(tok.str)
	case tokNumber:
		return lua.LNumber(tok.num)
	case tokBoolean:
		return lua.LBool(tok.b)
	case tokNull:
		return d.null
	case tokObjBegin:
		return d.object()
	case tokArrBegin:
		return d.array()
	}
	d.fail("value", tok)
	return nil
}

func (d *jsonDecoder) object() lua.LValue {
	d.descend(3)
	t := d.L.NewTable()
	d.slots += 2 // the table and, in turn, each key
	d.members(tokObjEnd, "object", func(tok *jsonTokenValue) {
		if tok.typ != tokString {
			d.fail("object key string", tok)
		}
		key := tok.str
		if *tok = d.next(); tok.typ != tokColon {
			d.fail("colon", tok)
		}
		*tok = d.next()
		t.RawSetString(key, d.value(tok))
	})
	d.slots -= 2
	d.depth--
	return t
}

func (d *jsonDecoder) array() lua.LValue {
	d.descend(2)
	t := d.L.NewTable()
	d.slots++
	i := 0
	d.members(tokArrEnd, "array", func(tok *jsonTokenValue) {
		i++
		t.RawSetInt(i, d.value(tok))
	})
	d.slots--
	d.depth--
	return t
}

// members reads the comma-separated members of an object or array up to
// the closing token, handing member the first token of each.
func (d *jsonDecoder) members(closing jsonToken, what string, member func(tok *jsonTokenValue)) {
	tok := d.next()
	if tok.typ == closing {
		return
	}
	for {
		member(&tok)
		if tok = d.next(); tok.typ == closing {
			return
		}
		if tok.typ != tokComma {
			d.fail("comma or "+what+" end", &tok)
		}
		tok = d.next()
	}
}
