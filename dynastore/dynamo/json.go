package dynamo

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/redamo/redamo/dynastore"
)

// DynamoDB JSON, written and read by hand for the direct path (wire.go):
// attribute values are one-member objects ({"B":"<base64>"}, {"N":"12"},
// {"S":"..."}, {"BS":[...]}, {"L":[...]}, {"M":{...}}, {"BOOL":true},
// {"NULL":true}), numbers travel as strings. Encoding appends to the
// caller's buffer; decoding slices strings out of one copy of the response
// instead of allocating each, and carves binaries out of shared blocks.

// badValue is the error for a value that cannot be sent, on either path.
func badValue(v dynastore.Value) error {
	if v == nil {
		return fmt.Errorf("%w: nil attribute value", dynastore.ErrInvalid)
	}
	return fmt.Errorf("%w: unsupported attribute value %T", dynastore.ErrInvalid, v)
}

// checkAV reports whether v can be sent, without converting it.
func checkAV(v dynastore.Value) error {
	switch v := v.(type) {
	case dynastore.B, dynastore.N, dynastore.S, dynastore.BS, dynastore.BOOL, dynastore.NULL:
		return nil
	case dynastore.L:
		for _, e := range v {
			if err := checkAV(e); err != nil {
				return err
			}
		}
		return nil
	case dynastore.M:
		for _, e := range v {
			if err := checkAV(e); err != nil {
				return err
			}
		}
		return nil
	}
	return badValue(v)
}

// ---- encoding ----------------------------------------------------------------

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json and the SDK's encoder do.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendBinary(b, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendAV appends one attribute value.
func appendAV(b []byte, v dynastore.Value) ([]byte, error) {
	switch v := v.(type) {
	case dynastore.B:
		b = append(b, `{"B":`...)
		b = appendBinary(b, v)
	case dynastore.N:
		b = append(b, `{"N":`...)
		b = appendString(b, string(v))
	case dynastore.S:
		b = append(b, `{"S":`...)
		b = appendString(b, string(v))
	case dynastore.BS:
		b = append(b, `{"BS":[`...)
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBinary(b, m)
		}
		b = append(b, ']')
	case dynastore.L:
		b = append(b, `{"L":[`...)
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendAV(b, e); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	case dynastore.M:
		var err error
		if b, err = appendM(append(b, `{"M":`...), v); err != nil {
			return b, err
		}
	case dynastore.BOOL:
		if v {
			b = append(b, `{"BOOL":true`...)
		} else {
			b = append(b, `{"BOOL":false`...)
		}
	case dynastore.NULL:
		b = append(b, `{"NULL":true`...)
	default:
		return b, badValue(v)
	}
	return append(b, '}'), nil
}

// appendItem appends an item's attributes as a JSON object.
func appendItem(b []byte, it dynastore.Item) ([]byte, error) {
	b = append(b, '{')
	for i, a := range it {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendNamed(b, a.Name, a.Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendM appends a map's entries as a JSON object.
func appendM(b []byte, m dynastore.M) ([]byte, error) {
	b = append(b, '{')
	first := true
	for k, v := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		var err error
		if b, err = appendNamed(b, k, v); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendNamed appends one named value (an item's attribute, a map's entry)
// as a JSON object member.
func appendNamed(b []byte, name string, v dynastore.Value) ([]byte, error) {
	b = appendString(b, name)
	b = append(b, ':')
	b, err := appendAV(b, v)
	if err != nil {
		return b, fmt.Errorf("attribute %q: %w", name, err)
	}
	return b, nil
}

// appendKey appends a primary key as an attribute map.
func appendKey(b []byte, k dynastore.Key) []byte {
	b = append(b, `{"`+dynastore.AttrPK+`":{"B":`...)
	b = appendBinary(b, k.PK)
	b = append(b, `},"`+dynastore.AttrSK+`":{"B":`...)
	b = appendBinary(b, k.SK)
	return append(b, `}}`...)
}

// ---- decoding ----------------------------------------------------------------

// errSyntax wraps the decoder's complaints about malformed input; other
// decoding errors (an attribute type redamo does not use) are about the
// data, not the response.
type errSyntax struct{ msg string }

func (e *errSyntax) Error() string { return "malformed response: " + e.msg }

// Binaries are carved from blocks of at most arenaBlock bytes; a larger one
// gets its own allocation, so that a small value kept in a cache never pins
// a large block.
const arenaBlock = 4 << 10

// jsonDecoder reads one JSON document. Errors are sticky: after the first,
// every method returns zero values and err keeps the first.
type jsonDecoder struct {
	b []byte
	i int
	// str is string(b[sbase:sbase+len(str)]), made once: strings within it
	// are sliced from it rather than copied one by one.
	str   string
	sbase int
	arena []byte
	err   error
}

func newDecoder(b []byte) jsonDecoder {
	return jsonDecoder{b: b}
}

func (d *jsonDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &errSyntax{msg: fmt.Sprintf(format, args...) + " at offset " + strconv.Itoa(d.i)}
	}
}

func (d *jsonDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (d *jsonDecoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *jsonDecoder) expect(c byte) bool {
	if d.err != nil {
		return false
	}
	if d.peek() != c {
		d.fail("expected %q", c)
		return false
	}
	d.i++
	return true
}

// open consumes the '{' or '[' that starts a container and reports whether
// it has a first element.
func (d *jsonDecoder) open(c byte) bool {
	if !d.expect(c) {
		return false
	}
	end := byte('}')
	if c == '[' {
		end = ']'
	}
	if d.peek() == end {
		d.i++
		return false
	}
	return true
}

// more consumes the ',' before another element and reports whether there
// is one; at the end it consumes the closing '}' or ']'.
func (d *jsonDecoder) more(end byte) bool {
	if d.err != nil {
		return false
	}
	switch d.peek() {
	case ',':
		d.i++
		return true
	case end:
		d.i++
		return false
	}
	d.fail("expected ',' or %q", end)
	return false
}

// rawString consumes a string and returns its contents as they appear in
// the input and whether they need unescape: escapes, or invalid UTF-8
// (which encoding/json, and so the SDK, reads as U+FFFD).
func (d *jsonDecoder) rawString() (start, end int, escaped bool) {
	if !d.expect('"') {
		return 0, 0, false
	}
	start = d.i
	nonASCII := false
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			end = d.i
			d.i++
			if nonASCII && !escaped && !utf8.Valid(d.b[start:end]) {
				escaped = true
			}
			return start, end, escaped
		case c == '\\':
			escaped = true
			d.i += 2
		case c < 0x20:
			d.fail("control character in string")
			return 0, 0, false
		default:
			nonASCII = nonASCII || c >= utf8.RuneSelf
			d.i++
		}
	}
	d.fail("unterminated string")
	return 0, 0, false
}

// key consumes a member name and the colon after it; the result aliases
// the input and is valid until the input changes.
func (d *jsonDecoder) key() []byte {
	start, end, escaped := d.rawString()
	if d.err != nil || !d.expect(':') {
		return nil
	}
	if escaped {
		return d.unescape(d.b[start:end])
	}
	return d.b[start:end]
}

// name consumes a member name and the colon after it, as a string.
func (d *jsonDecoder) name() string {
	s := d.string()
	d.expect(':')
	return s
}

// string consumes a string value.
func (d *jsonDecoder) string() string {
	start, end, escaped := d.rawString()
	if d.err != nil {
		return ""
	}
	if escaped {
		return string(d.unescape(d.b[start:end]))
	}
	return d.slice(start, end)
}

// optString consumes a string or null ("").
func (d *jsonDecoder) optString() string {
	if d.null() {
		return ""
	}
	return d.string()
}

// slice returns b[start:end] as a string, sliced from str when it lies there.
func (d *jsonDecoder) slice(start, end int) string {
	if start >= d.sbase && end <= d.sbase+len(d.str) {
		return d.str[start-d.sbase : end-d.sbase]
	}
	return string(d.b[start:end])
}

// unescape decodes the escapes of a string's contents into a new slice,
// and replaces invalid UTF-8 with U+FFFD, byte by byte.
func (d *jsonDecoder) unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r)
			i += size - 1
			continue
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			d.fail("bad escape")
			return nil
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+1:])
			if !ok {
				d.fail("bad \\u escape")
				return nil
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2, ok = hex4(raw[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			d.fail("bad escape")
			return nil
		}
	}
	return out
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// binary consumes a base64 string and returns the bytes it encodes.
func (d *jsonDecoder) binary() []byte {
	start, end, escaped := d.rawString()
	if d.err != nil {
		return nil
	}
	raw := d.b[start:end]
	if escaped {
		raw = d.unescape(raw)
	}
	if len(raw) == 0 {
		return []byte{}
	}
	n := base64.StdEncoding.DecodedLen(len(raw))
	var dst []byte
	shared := n <= arenaBlock/4
	if shared {
		if n > cap(d.arena)-len(d.arena) {
			// Sized by what is left to read, so that a small response
			// allocates little.
			d.arena = make([]byte, 0, min(base64.StdEncoding.DecodedLen(len(d.b)-d.i)+n, arenaBlock))
		}
		dst = d.arena[len(d.arena) : len(d.arena)+n]
	} else {
		dst = make([]byte, n)
	}
	w, err := base64.StdEncoding.Decode(dst, raw)
	if err != nil {
		d.fail("bad base64: %v", err)
		return nil
	}
	if shared {
		d.arena = d.arena[:len(d.arena)+w]
	}
	// Capped, so that appending to one value never writes into the next.
	return dst[:w:w]
}

// number consumes a JSON number.
func (d *jsonDecoder) number() float64 {
	if d.err != nil {
		return 0
	}
	d.ws()
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	f, err := strconv.ParseFloat(d.slice(start, d.i), 64)
	if err != nil {
		d.fail("bad number")
	}
	return f
}

// boolean consumes true or false.
func (d *jsonDecoder) boolean() bool {
	if d.err != nil {
		return false
	}
	d.ws()
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false
	}
	d.fail("expected a boolean")
	return false
}

// skip consumes any value.
func (d *jsonDecoder) skip() {
	if d.err != nil {
		return
	}
	switch c := d.peek(); {
	case c == '{':
		for more := d.open('{'); more; more = d.more('}') {
			d.key()
			d.skip()
		}
	case c == '[':
		for more := d.open('['); more; more = d.more(']') {
			d.skip()
		}
	case c == '"':
		d.rawString()
	case c == 't' || c == 'f':
		d.boolean()
	case c == 'n':
		if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
			d.i += 4
			return
		}
		d.fail("expected a value")
	default:
		d.number()
	}
}

// null consumes a null if there is one.
func (d *jsonDecoder) null() bool {
	if d.err == nil && d.peek() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// value consumes one attribute value. An attribute type redamo never
// writes is an error, as fromAV makes it.
func (d *jsonDecoder) value() dynastore.Value {
	if !d.open('{') {
		d.fail("empty attribute value")
		return nil
	}
	tag := d.key()
	var v dynastore.Value
	switch string(tag) {
	case "B":
		v = dynastore.B(d.binary())
	case "N":
		s := d.string()
		// DynamoDB Local returns arithmetic results as computed ("3.0");
		// the Store contract uses the canonical form.
		if n, err := dynastore.CanonicalNumber(s); err == nil {
			v = n
		} else {
			v = dynastore.N(s)
		}
	case "S":
		v = dynastore.S(d.string())
	case "BS":
		var bs dynastore.BS
		for more := d.open('['); more; more = d.more(']') {
			bs = append(bs, d.binary())
		}
		v = bs
	case "L":
		l := dynastore.L{}
		for more := d.open('['); more; more = d.more(']') {
			l = append(l, d.value())
		}
		v = l
	case "M":
		m := dynastore.M{}
		for more := d.open('{'); more; more = d.more('}') {
			k := d.name()
			m[k] = d.value()
		}
		v = m
	case "BOOL":
		v = dynastore.BOOL(d.boolean())
	case "NULL":
		d.boolean()
		v = dynastore.NULL{}
	default:
		if d.err == nil {
			d.err = fmt.Errorf("dynamo: unsupported attribute type %q in table data", tag)
		}
		return nil
	}
	if d.more('}') {
		d.fail("attribute value with more than one type")
	}
	return v
}

// item consumes an attribute map; empty or null is a nil Item (DynamoDB
// returns no attributes for a missing item).
func (d *jsonDecoder) item() dynastore.Item {
	if d.null() {
		return nil
	}
	var it dynastore.Item
	for more := d.open('{'); more; more = d.more('}') {
		name := d.name()
		v := d.value()
		if d.err != nil {
			var se *errSyntax
			if !errors.As(d.err, &se) {
				d.err = fmt.Errorf("attribute %q: %w", name, d.err)
			}
			return nil
		}
		if it == nil {
			it = make(dynastore.Item, 0, 8)
		}
		it = append(it, dynastore.Attr{Name: name, Value: v})
	}
	return it
}

// ownItem consumes an attribute map from a copy of its own text, so that
// what it returns does not keep the rest of the response alive (one item
// of a Query page may outlive the page in a cache).
func (d *jsonDecoder) ownItem() dynastore.Item {
	if d.err != nil {
		return nil
	}
	d.ws()
	start := d.i
	d.skip()
	if d.err != nil {
		return nil
	}
	str, sbase, arena := d.str, d.sbase, d.arena
	d.str, d.sbase, d.arena = string(d.b[start:d.i]), start, nil
	d.i = start
	it := d.item()
	d.str, d.sbase, d.arena = str, sbase, arena
	return it
}
