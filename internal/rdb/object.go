package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Object types of the RDB format (rdb.h's RDB_TYPE_*): the first byte of
// a DUMP payload, naming the value's type and encoding. Redis 7.0 writes
// TypeString, TypeSet, TypeZSet2, TypeHash, TypeSetIntset,
// TypeHashListpack, TypeZSetListpack, TypeListQuicklist2 and TypeStream3,
// and reads the others too.
const (
	TypeList           = 1
	TypeSet            = 2
	TypeZSet           = 3
	TypeHash           = 4
	TypeZSet2          = 5
	TypeModule         = 6
	TypeModule2        = 7
	TypeHashZipmap     = 9
	TypeListZiplist    = 10
	TypeSetIntset      = 11
	TypeZSetZiplist    = 12
	TypeHashZiplist    = 13
	TypeListQuicklist  = 14
	TypeStream         = 15
	TypeHashListpack   = 16
	TypeZSetListpack   = 17
	TypeListQuicklist2 = 18
	TypeStream3        = 19
)

// Kind is the Redis type an object type holds.
type Kind int

const (
	KindNone Kind = iota
	KindString
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

// KindOf returns the Redis type of an RDB object type (KindNone: not one
// Redis 7.0 can load without a module).
func KindOf(typ byte) Kind {
	switch typ {
	case TypeString:
		return KindString
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return KindList
	case TypeSet, TypeSetIntset:
		return KindSet
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return KindZSet
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack:
		return KindHash
	case TypeStream, TypeStream3:
		return KindStream
	}
	return KindNone
}

// Object is one key's value as a DUMP payload holds it. Type says which
// encoding it is written in, or was read from; the field of its kind holds
// the content.
type Object struct {
	Type byte
	// String is a string's value.
	String []byte
	// Elems are a list's elements in order, or a set's members.
	Elems [][]byte
	// Pairs are a hash's fields and values, alternating.
	Pairs [][]byte
	// ZSet are a sorted set's members.
	ZSet []ZEntry
	// Stream is a stream.
	Stream *Stream
}

// Kind is the object's Redis type.
func (o *Object) Kind() Kind { return KindOf(o.Type) }

// ZEntry is a sorted set member with its score.
type ZEntry struct {
	Member []byte
	Score  float64
}

// Options are the server settings an encoding depends on.
type Options struct {
	// ListFill is list-max-listpack-size: how full a quicklist node gets.
	ListFill int
	// StreamNodeMaxEntries and StreamNodeMaxBytes are
	// stream-node-max-entries and stream-node-max-bytes (0: no limit).
	StreamNodeMaxEntries, StreamNodeMaxBytes int
}

// DefaultOptions are Redis 7.0's defaults.
var DefaultOptions = Options{ListFill: -2, StreamNodeMaxEntries: 100, StreamNodeMaxBytes: 4096}

// Dump returns o's DUMP payload, trailer included, byte for byte what
// Redis 7.0.15 writes for a value held in that encoding with the same
// content in the same order (rdbSaveObject): the caller picks the
// encoding Redis would hold the value in (Type) and the order Redis would
// iterate it in (sets and hashes in a hash table; a sorted set is written
// in score order whatever the order of ZSet).
func Dump(o *Object, opt Options) []byte {
	b := []byte{o.Type}
	switch o.Type {
	case TypeString:
		b = AppendString(b, o.String)
	case TypeListQuicklist2:
		b = appendQuicklist(b, o.Elems, opt.ListFill)
	case TypeSetIntset:
		vs := make([]int64, len(o.Elems))
		for i, m := range o.Elems {
			vs[i], _ = lpStringToInt(m)
		}
		b = AppendString(b, appendIntset(nil, vs))
	case TypeSet:
		b = AppendLen(b, uint64(len(o.Elems)))
		for _, m := range o.Elems {
			b = AppendString(b, m)
		}
	case TypeHashListpack:
		w := newLPWriter()
		for _, s := range o.Pairs {
			w.appendString(s)
		}
		b = AppendString(b, w.finish())
	case TypeHash:
		b = AppendLen(b, uint64(len(o.Pairs)/2))
		for _, s := range o.Pairs {
			b = AppendString(b, s)
		}
	case TypeZSetListpack:
		w := newLPWriter()
		for _, e := range sortedZSet(o.ZSet) {
			w.appendString(e.Member)
			if v, ok := double2ll(e.Score); ok {
				w.appendInt(v)
			} else {
				w.appendString(d2string(e.Score))
			}
		}
		b = AppendString(b, w.finish())
	case TypeZSet2:
		es := sortedZSet(o.ZSet)
		b = AppendLen(b, uint64(len(es)))
		for i := len(es) - 1; i >= 0; i-- {
			b = AppendString(b, es[i].Member)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(es[i].Score))
		}
	case TypeStream3:
		b = appendStream(b, o.Stream, opt)
	default:
		panic("rdb: Dump of object type " + strconv.Itoa(int(o.Type)))
	}
	return AppendTrailer(b)
}

// sortedZSet is es in a sorted set's order: by score, then member bytes.
func sortedZSet(es []ZEntry) []ZEntry {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b ZEntry) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return bytes.Compare(a.Member, b.Member)
	})
	return out
}

// double2ll is Redis's double2ll: d is integral and within ±2^62.
func double2ll(d float64) (int64, bool) {
	if d < -(1<<62) || d > 1<<62 || math.IsNaN(d) {
		return 0, false
	}
	v := int64(d)
	return v, float64(v) == d
}

// d2string is Redis's d2string for a value double2ll refuses: "inf",
// "-inf", or %.17g.
func d2string(d float64) []byte {
	switch {
	case math.IsInf(d, 1):
		return []byte("inf")
	case math.IsInf(d, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, d, 'g', 17, 64)
}

// quicklist node limits (quicklist.c): the node sizes of the negative
// fills, the size a count-limited node may not pass, and what a new
// element is assumed to add beyond its length.
var quicklistLevels = [...]int{4096, 8192, 16384, 32768, 65536}

const (
	quicklistSafetyLimit = 8192
	quicklistOverhead    = 8
	quicklistFillMax     = 1<<15 - 1
)

// appendQuicklist appends a list's nodes as RPUSH of its elements one by
// one lays them out (quicklistPushTail) under fill.
func appendQuicklist(b []byte, elems [][]byte, fill int) []byte {
	fill = max(min(fill, quicklistFillMax), -len(quicklistLevels))
	var nodes [][]byte
	var cur *lpWriter
	for _, e := range elems {
		if cur == nil || !quicklistAllows(cur.size(), cur.n, fill, len(e)) {
			if cur != nil {
				nodes = append(nodes, cur.finish())
			}
			cur = newLPWriter()
		}
		cur.appendString(e)
	}
	if cur != nil {
		nodes = append(nodes, cur.finish())
	}
	b = AppendLen(b, uint64(len(nodes)))
	for _, n := range nodes {
		b = AppendLen(b, quicklistPacked)
		b = AppendString(b, n)
	}
	return b
}

// Quicklist node containers.
const (
	quicklistPlain  = 1
	quicklistPacked = 2
)

// quicklistAllows is _quicklistNodeAllowInsert: whether a node of size
// bytes and count entries takes one more of sz bytes.
func quicklistAllows(size, count, fill, sz int) bool {
	newSize := size + sz + quicklistOverhead
	if fill < 0 {
		if off := -fill - 1; off < len(quicklistLevels) && newSize <= quicklistLevels[off] {
			return true
		}
	}
	if newSize > quicklistSafetyLimit {
		return false
	}
	return count < fill
}

// Restore decodes the value of a DUMP payload whose trailer CheckTrailer
// accepted, as Redis 7.0's rdbLoadObject reads it, and checks what Redis
// checks with sanitize-dump-payload yes (an empty collection, a duplicate
// member, a NaN score, a malformed listpack... are ErrCorrupt). Redis
// reads the value from the whole payload, so a value that claims more
// bytes than it has takes them from the trailer; bytes after the value
// are ignored.
func Restore(payload []byte) (*Object, error) {
	r := NewReader(payload)
	typ, err := r.ReadByte()
	if err != nil {
		return nil, err
	}
	o := &Object{Type: typ}
	switch KindOf(typ) {
	case KindString:
		o.String, err = r.ReadString()
	case KindList:
		o.Elems, err = readList(r, typ)
	case KindSet:
		o.Elems, err = readSet(r, typ)
	case KindZSet:
		o.ZSet, err = readZSet(r, typ)
	case KindHash:
		o.Pairs, err = readHash(r, typ)
	case KindStream:
		o.Stream, err = readStream(r, typ)
	default:
		return nil, ErrCorrupt
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// readCount reads a collection's length, refusing 0 (an empty key) and
// more than the remaining bytes could hold (each entry takes a byte).
func readCount(r *Reader, perEntry int) (int, error) {
	n, _, err := r.ReadLen()
	if err != nil {
		return 0, err
	}
	if n == 0 || n > uint64(r.Len()/perEntry) {
		return 0, ErrCorrupt
	}
	return int(n), nil
}

func readList(r *Reader, typ byte) ([][]byte, error) {
	switch typ {
	case TypeList:
		n, err := readCount(r, 1)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, 0, n)
		for range n {
			s, err := r.ReadString()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case TypeListZiplist:
		blob, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		out, err := readZiplist(blob)
		if err == nil && len(out) == 0 {
			err = ErrCorrupt
		}
		return out, err
	}
	nodes, err := readCount(r, 1)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for range nodes {
		container := uint64(quicklistPacked)
		if typ == TypeListQuicklist2 {
			if container, _, err = r.ReadLen(); err != nil {
				return nil, err
			}
			if container != quicklistPacked && container != quicklistPlain {
				return nil, ErrCorrupt
			}
		}
		blob, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		if len(blob) == 0 {
			return nil, ErrCorrupt
		}
		switch {
		case container == quicklistPlain:
			out = append(out, blob)
		case typ == TypeListQuicklist2:
			es, err := readListpack(blob)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				out = append(out, e.bytes())
			}
		default:
			es, err := readZiplist(blob)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
	}
	if len(out) == 0 {
		return nil, ErrCorrupt
	}
	return out, nil
}

func readSet(r *Reader, typ byte) ([][]byte, error) {
	if typ == TypeSetIntset {
		blob, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		vs, err := readIntset(blob)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(vs))
		for i, v := range vs {
			out[i] = strconv.AppendInt(nil, v, 10)
		}
		return out, nil
	}
	n, err := readCount(r, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, n)
	seen := make(map[string]bool, n)
	for range n {
		s, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		if seen[string(s)] {
			return nil, ErrCorrupt
		}
		seen[string(s)] = true
		out = append(out, s)
	}
	return out, nil
}

// distinctPairs checks that pairs (alternating) is not empty and that its
// first elements are distinct.
func distinctPairs(pairs [][]byte) error {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return ErrCorrupt
	}
	seen := make(map[string]bool, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		if seen[string(pairs[i])] {
			return ErrCorrupt
		}
		seen[string(pairs[i])] = true
	}
	return nil
}

// readPairBlob reads a listpack (or, old, a ziplist or zipmap) of
// alternating elements.
func readPairBlob(r *Reader, typ byte) ([][]byte, error) {
	blob, err := r.ReadString()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	switch typ {
	case TypeHashListpack, TypeZSetListpack:
		es, err := readListpack(blob)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, e.bytes())
		}
	case TypeHashZipmap:
		out, err = readZipmap(blob)
	default:
		out, err = readZiplist(blob)
	}
	if err != nil {
		return nil, err
	}
	return out, distinctPairs(out)
}

func readHash(r *Reader, typ byte) ([][]byte, error) {
	if typ != TypeHash {
		return readPairBlob(r, typ)
	}
	n, err := readCount(r, 2)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, 2*n)
	for range 2 * n {
		s, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, distinctPairs(out)
}

func readZSet(r *Reader, typ byte) ([]ZEntry, error) {
	var out []ZEntry
	switch typ {
	case TypeZSetListpack, TypeZSetZiplist:
		pairs, err := readPairBlob(r, typ)
		if err != nil {
			return nil, err
		}
		for i := 0; i < len(pairs); i += 2 {
			f, ok := parseScore(pairs[i+1])
			if !ok {
				return nil, ErrCorrupt
			}
			out = append(out, ZEntry{Member: pairs[i], Score: f})
		}
		return out, nil
	}
	n, err := readCount(r, 2)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, n)
	for range n {
		m, err := r.ReadString()
		if err != nil {
			return nil, err
		}
		var f float64
		if typ == TypeZSet2 {
			p, err := r.next(8)
			if err != nil {
				return nil, err
			}
			f = math.Float64frombits(binary.LittleEndian.Uint64(p))
		} else if f, err = readOldDouble(r); err != nil {
			return nil, err
		}
		if math.IsNaN(f) || seen[string(m)] {
			return nil, ErrCorrupt
		}
		seen[string(m)] = true
		out = append(out, ZEntry{Member: m, Score: f})
	}
	return out, nil
}

// parseScore reads a score a listpack holds as text (zzlStrtod).
func parseScore(s []byte) (float64, bool) {
	if len(s) == 0 || len(s) > 128 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, !math.IsNaN(f)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// readOldDouble reads a score as RDB versions before 8 wrote it
// (rdbLoadDoubleValue): a length byte and text, or 253, 254, 255 for NaN,
// +inf and -inf.
func readOldDouble(r *Reader) (float64, error) {
	n, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	p, err := r.next(uint64(n))
	if err != nil {
		return 0, err
	}
	f, ok := parseScore(p)
	if !ok {
		return 0, ErrCorrupt
	}
	return f, nil
}

// Canonical is o's content in a form that does not depend on its encoding
// nor on the order a hash table keeps: two objects with the same content
// have the same Canonical (a stream's nodes aside).
func Canonical(o *Object) string {
	var parts []string
	switch o.Kind() {
	case KindString:
		return "string " + strconv.Quote(string(o.String))
	case KindList:
		for _, e := range o.Elems {
			parts = append(parts, strconv.Quote(string(e)))
		}
		return "list " + strings.Join(parts, ",")
	case KindSet:
		for _, m := range o.Elems {
			parts = append(parts, strconv.Quote(string(m)))
		}
		slices.Sort(parts)
		return "set " + strings.Join(parts, ",")
	case KindHash:
		for i := 0; i+1 < len(o.Pairs); i += 2 {
			parts = append(parts, strconv.Quote(string(o.Pairs[i]))+"="+strconv.Quote(string(o.Pairs[i+1])))
		}
		slices.Sort(parts)
		return "hash " + strings.Join(parts, ",")
	case KindZSet:
		for _, e := range sortedZSet(o.ZSet) {
			parts = append(parts, strconv.Quote(string(e.Member))+"="+strconv.FormatFloat(e.Score, 'g', -1, 64))
		}
		return "zset " + strings.Join(parts, ",")
	case KindStream:
		s := *o.Stream
		s.Nodes = nil
		return fmt.Sprintf("stream %+v", s)
	}
	return "none"
}
