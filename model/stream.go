package model

// The stream layout and the stream operations (XADD, XLEN, XRANGE,
// XREVRANGE, XDEL, XTRIM, XREAD, XINFO STREAM; commands/streams.go holds
// the commands), on the collection engine (collection.go). Consumer groups
// are in stream_groups.go; their attribute (xg) is restaged by every write.
//
// Layout. Each entry is a collection member: the member bytes are the
// entry id as 16 big-endian bytes (ms, seq), so member order is id order
// and XRANGE is a range read over member sort keys (EachRange); the value
// is the entry's field/value pairs (encodeFields). A small stream keeps
// its entries inline in the key item (v as an L of B: id, fields, id,
// fields, ...), a large one as member items of its generation, like sets
// and hashes. An entry too big for its member item is kept in chunks, as a
// big hash field value is (bigfields.go): only commands that return
// entries read them (rangeRead, entriesOf). The key item also holds, as key attributes (SetKeyAttr,
// staged by every write of a stream):
//
//	xl  B  the last generated id
//	xa  N  entries-added
//	xd  B  max-deleted-entry-id
//	xn  B  the node table (below)
//	xz  B  the floor: entries with a smaller id are trimmed (large layout)
//
// An emptied stream still exists in Redis (XADD then XDEL leaves an empty
// stream with its last id): the stream codec sets keepEmpty, so the
// collection layer keeps an inline key item with no entries instead of
// deleting the key.
//
// Nodes. Redis keeps a stream in radix tree nodes of at most 100 entries
// (stream-node-max-entries) and trims with ~ only whole nodes, so what
// XTRIM ~ and XADD MAXLEN ~ remove depends on the history of the stream.
// redamo replays that history: the node table holds, per node, the id of
// its first entry (the master id), the last id added to it, its live
// entries and all entries ever added to it (deleted ones count toward the
// 100, as in Redis); XADD appends to the last node or starts one, XDEL
// removes a node whose last live entry goes, and trimming walks the table
// as streamTrim walks the tree (t_stream.c). Redis also starts a node when
// the tail node's listpack would reach stream-node-max-bytes: each node
// also records the size its listpack has in Redis (listpack.go's element
// sizes over streamAppendItem's layout: the master entry, then per entry
// its flags, id deltas, field names unless they are the master's, values
// and element count) and a digest of its master field names, in a second
// attribute (xb) beside the node table (xn), so XADD starts nodes where
// Redis does. Nodes written before xb existed have no size and only
// count entries. stream-node-max-entries and -bytes are the process's
// CONFIG values (Process.streamNodes).
//
// Trimming a large stream would delete up to thousands of members, more
// than one transaction holds; instead the commit raises the floor (xz) in
// the key item, which hides every entry below it at once, and the members
// below the floor are deleted afterwards in the background
// (streamCleanup), by transactions conditioned on the committed floor, so

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Key item attributes of a stream.
const (
	attrStreamLast   = "xl"
	attrStreamAdded  = "xa"
	attrStreamMaxDel = "xd"
	attrStreamNodes  = "xn"
	attrStreamFloor  = "xz"
	attrStreamBytes  = "xb"
	// AttrStreamWatch (S) changes when a write changes the stream as Redis
	// signals a modified key (XADD, XDEL, XTRIM): WATCH compares it
	// instead of ver, which the group commands change too (watch.go).
	AttrStreamWatch = "xw"
)

// StreamNodeMaxEntries and StreamNodeMaxBytes are Redis's
// stream-node-max-entries and stream-node-max-bytes defaults.
const (
	StreamNodeMaxEntries = 100
	StreamNodeMaxBytes   = 4096
)

// StreamInline bounds an inline stream: entries of at most 256 bytes of
// fields, 64 of them, keep the key item under ~16 KB.
var StreamInline = InlineLimits{Entries: 64, Bytes: 256}

// StreamCleanupLabel is the request label of the background deletion of
// trimmed stream entries.
const StreamCleanupLabel = "stream-cleanup"

// Errors of the stream operations a handler replies with as Redis does.
var (
	ErrStreamBadID      = errors.New("model: invalid stream ID")
	ErrStreamIDTooSmall = errors.New("model: stream ID equal or smaller than the top item")
	ErrStreamExhausted  = errors.New("model: stream has exhausted the last possible ID")
	ErrStreamGTID       = errors.New("model: the > ID outside XREADGROUP")
)

// streamCodec is the stream's inline codec: v is an L alternating each
// entry's id (its member) and its fields, in id order. An emptied stream
// keeps its key item (Redis keeps its last id).
var streamCodec = InlineCodec{
	Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
		l, _ := it.Get(AttrValue).(dynastore.L)
		if len(l)%2 != 0 {
			return nil, fmt.Errorf("model: inline stream of %d values: %w", len(l), dynastore.ErrInvalid)
		}
		out := make(map[string]dynastore.Value, len(l)/2)
		for i := 0; i < len(l); i += 2 {
			m, ok := l[i].(dynastore.B)
			if !ok {
				return nil, fmt.Errorf("model: inline stream id: %w", dynastore.ErrInvalid)
			}
			out[string(m)] = l[i+1]
		}
		return out, nil
	},
	Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
		if len(entries) == 0 {
			return
		}
		ms := make([]string, 0, len(entries))
		for m := range entries {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		l := make(dynastore.L, 0, 2*len(ms))
		for _, m := range ms {
			l = append(l, dynastore.B(m), entries[m])
		}
		it.Set(AttrValue, l)
	},
	KeepEmpty: true,
}

// ---- ids ----------------------------------------------------------------------------

// StreamID is an entry id.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest id.
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Cmp compares a with b (-1, 0, 1).
func (a StreamID) Cmp(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// member is the id as collection member bytes: 16 bytes, big-endian.
func (a StreamID) member() []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, a.Ms)
	binary.BigEndian.PutUint64(b[8:], a.Seq)
	return b
}

func idOfMember(m []byte) StreamID {
	if len(m) != 16 {
		return StreamID{}
	}
	return StreamID{binary.BigEndian.Uint64(m), binary.BigEndian.Uint64(m[8:])}
}

// String is the id as Redis writes it.
func (a StreamID) String() string {
	return strconv.FormatUint(a.Ms, 10) + "-" + strconv.FormatUint(a.Seq, 10)
}

// Incr is streamIncrID: the next id, false when a is the last possible one.
func (a StreamID) Incr() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms < math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Decr is streamDecrID.
func (a StreamID) Decr() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms > 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return MaxStreamID, false
}

// string2ull is Redis's string2ull: string2ll, and failing that strtoull
// (leading blanks, a sign, leading zeros, a negated value...).
func string2ull(s []byte) (uint64, bool) {
	if ll, ok := String2ll(s); ok {
		return uint64(ll), ll >= 0
	}
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) || len(s) == 0 {
		return 0, false
	}
	var v uint64
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d))/10 {
			return 0, false // ERANGE
		}
		v = v*10 + uint64(d)
	}
	if neg {
		v = -v
	}
	return v, true
}

// ParseStreamID is streamGenericParseIDOrReply: "-", "+" (unless strict),
// "ms" (seq missingSeq) or "ms-seq"; with xadd also "ms-*" (seqGiven
// false).
func ParseStreamID(arg []byte, missingSeq uint64, strict, xadd bool) (id StreamID, seqGiven, ok bool) {
	if len(arg) > 127 {
		return id, false, false
	}
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i] // a C string
	}
	if len(arg) == 1 && (arg[0] == '-' || arg[0] == '+') {
		if strict {
			return id, false, false
		}
		if arg[0] == '-' {
			return StreamID{}, true, true
		}
		return MaxStreamID, true, true
	}
	msPart, seqPart, dash := bytes.Cut(arg, []byte{'-'})
	ms, ok := string2ull(msPart)
	if !ok {
		return id, false, false
	}
	seq := missingSeq
	seqGiven = true
	if dash {
		if xadd && len(seqPart) == 1 && seqPart[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = string2ull(seqPart); !ok {
			return id, false, false
		}
	}
	return StreamID{ms, seq}, seqGiven, true
}

// ParseIntervalID is streamParseIntervalIDOrReply: an id, or "(" and a
// strict id (exclusive).
func ParseIntervalID(arg []byte, missingSeq uint64) (id StreamID, exclusive, ok bool) {
	if len(arg) > 1 && arg[0] == '(' {
		id, _, ok = ParseStreamID(arg[1:], missingSeq, true, false)
		return id, true, ok
	}
	id, _, ok = ParseStreamID(arg, missingSeq, false, false)
	return id, false, ok
}

// ---- entries ----------------------------------------------------------------------------

// encodeFields encodes an entry's field/value pairs: each as a uvarint
// length and its bytes.
func encodeFields(fv [][]byte) dynastore.B {
	n := 0
	for _, f := range fv {
		n += binary.MaxVarintLen32 + len(f)
	}
	out := make([]byte, 0, n)
	for _, f := range fv {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// entryFields is a stored entry's fields, a big entry's read from its
// chunks.
func entryFields(c Scope, v dynastore.Value) ([][]byte, error) {
	vs := []dynastore.Value{v}
	if err := loadValues(c, vs); err != nil {
		return nil, err
	}
	return decodeFields(vs[0])
}

func decodeFields(v dynastore.Value) ([][]byte, error) {
	b, _ := v.(dynastore.B)
	var out [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, fmt.Errorf("model: stream entry: %w", dynastore.ErrInvalid)
		}
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out, nil
}

// StreamEntry is one entry read.
type StreamEntry struct {
	ID     StreamID
	Fields [][]byte
	// Gone: a pending entry no longer in the stream (no fields).
	Gone bool
}

// ---- the stream state in the key item ------------------------------------------------------

// streamNode is one emulated radix tree node (see the file comment).
type streamNode struct {
	master, last StreamID
	live, total  int64
	// bytes is the node's listpack size in Redis but for the master
	// entry's count and deleted integers (lpBytes adds them); 0: unknown.
	// fields digests the master entry's field names.
	bytes  int64
	fields uint64
}

// streamState is a stream's key attributes as read, and as a write
// changes them.
type streamState struct {
	last, maxDel, floor StreamID
	added               int64
	nodes               []streamNode
	// pending are the ids this command put (not yet committed).
	pending []StreamID
	// cleanup: the floor rose, so trimmed members wait for streamCleanup.
	cleanup bool
	// watch is the key's AttrStreamWatch as read; modified: this write
	// changes the stream as Redis signals (it gets a new one).
	watch    dynastore.Value
	modified bool
	// groupsRaw is the consumer groups attribute as read; groups, once a
	// group operation decoded it (groupsLoaded), what stage writes
	// (stream_groups.go).
	groupsRaw    dynastore.B
	groups       []*streamGroup
	groupsLoaded bool
	// pelGen is the pending entries' generation (stream_pel.go); newGen:
	// this operation made it; genDropped: it dropped the one read.
	pelGen     []byte
	newGen     bool
	genDropped bool
}

func idAttr(v dynastore.Value) StreamID {
	b, _ := v.(dynastore.B)
	return idOfMember(b)
}

// streamStateOf decodes cl's stream attributes (zero for a new stream).
func streamStateOf(cl *Collection) (*streamState, error) {
	st := &streamState{
		last:   idAttr(cl.KeyAttr(attrStreamLast)),
		maxDel: idAttr(cl.KeyAttr(attrStreamMaxDel)),
		floor:  idAttr(cl.KeyAttr(attrStreamFloor)),
	}
	st.groupsRaw, _ = cl.KeyAttr(attrStreamGroups).(dynastore.B)
	if g, ok := cl.KeyAttr(attrStreamPEL).(dynastore.B); ok && len(g) > 0 {
		st.pelGen = g
	}
	st.watch = cl.KeyAttr(AttrStreamWatch)
	if v := cl.KeyAttr(attrStreamAdded); v != nil {
		n, err := NumberInt(v)
		if err != nil {
			return nil, fmt.Errorf("model: stream entries-added: %w", err)
		}
		st.added = n
	}
	b, _ := cl.KeyAttr(attrStreamNodes).(dynastore.B)
	for len(b) > 0 {
		var vals [6]uint64
		for i := range vals {
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, fmt.Errorf("model: stream node table: %w", dynastore.ErrInvalid)
			}
			vals[i], b = v, b[k:]
		}
		st.nodes = append(st.nodes, streamNode{
			master: StreamID{vals[0], vals[1]}, last: StreamID{vals[2], vals[3]},
			live: int64(vals[4]), total: int64(vals[5]),
		})
	}
	// The node sizes, when they were recorded for every node.
	xb, _ := cl.KeyAttr(attrStreamBytes).(dynastore.B)
	sizes := make([]streamNode, 0, len(st.nodes))
	for len(xb) > 0 {
		n, k := binary.Uvarint(xb)
		if k <= 0 || len(xb[k:]) < 8 {
			return nil, fmt.Errorf("model: stream node sizes: %w", dynastore.ErrInvalid)
		}
		sizes = append(sizes, streamNode{bytes: int64(n), fields: binary.BigEndian.Uint64(xb[k:])})
		xb = xb[k+8:]
	}
	if len(sizes) == len(st.nodes) {
		for i := range st.nodes {
			st.nodes[i].bytes, st.nodes[i].fields = sizes[i].bytes, sizes[i].fields
		}
	}
	return st, nil
}

// stage stages every stream attribute (an inline commit rewrites the key
// item whole).
func (st *streamState) stage(cl *Collection) {
	var nodes, sizes []byte
	for _, n := range st.nodes {
		for _, v := range []uint64{n.master.Ms, n.master.Seq, n.last.Ms, n.last.Seq, uint64(n.live), uint64(n.total)} {
			nodes = binary.AppendUvarint(nodes, v)
		}
		sizes = binary.AppendUvarint(sizes, uint64(n.bytes))
		sizes = binary.BigEndian.AppendUint64(sizes, n.fields)
	}
	cl.SetKeyAttr(attrStreamBytes, dynastore.B(sizes))
	cl.SetKeyAttr(attrStreamLast, dynastore.B(st.last.member()))
	cl.SetKeyAttr(attrStreamAdded, NInt(st.added))
	cl.SetKeyAttr(attrStreamMaxDel, dynastore.B(st.maxDel.member()))
	cl.SetKeyAttr(attrStreamNodes, dynastore.B(nodes))
	cl.SetKeyAttr(attrStreamFloor, dynastore.B(st.floor.member()))
	st.stageGroups(cl)
	if st.modified || st.watch == nil {
		st.watch = NewVer()
	}
	cl.SetKeyAttr(AttrStreamWatch, st.watch)
}

// length is the number of entries.
func (st *streamState) length() int64 {
	var n int64
	for _, nd := range st.nodes {
		n += nd.live
	}
	return n
}

// appendID records a new entry in the node table (streamAppendItem):
// maxBytes and maxEntries are stream-node-max-bytes and -entries.
func (st *streamState) appendID(id StreamID, fields [][]byte, maxBytes, maxEntries int64) {
	names := make([][]byte, 0, len(fields)/2)
	var totelelen int64
	for i, f := range fields {
		totelelen += int64(len(f))
		if i%2 == 0 {
			names = append(names, f)
		}
	}
	if maxBytes <= 0 || maxBytes > lpMaxSize {
		maxBytes = lpMaxSize
	}
	var tail *streamNode
	if n := len(st.nodes); n > 0 {
		tail = &st.nodes[n-1]
		switch {
		case tail.bytes > 0 && tail.lpBytes()+totelelen >= maxBytes:
			tail = nil
		case maxEntries > 0 && tail.total >= maxEntries:
			tail = nil
		}
	}
	digest := fieldsDigest(names)
	if tail == nil {
		st.nodes = append(st.nodes, streamNode{master: id, fields: digest, bytes: masterBytes(names)})
		tail = &st.nodes[len(st.nodes)-1]
	}
	if tail.bytes > 0 {
		tail.bytes += entryBytes(id, tail.master, fields, digest == tail.fields)
	}
	tail.last, tail.live, tail.total = id, tail.live+1, tail.total+1
	st.last = id
	st.added++
	st.pending = append(st.pending, id)
}

// nodeOf is the index of the node holding id (-1: none).
func (st *streamState) nodeOf(id StreamID) int {
	i := sort.Search(len(st.nodes), func(i int) bool { return st.nodes[i].master.Cmp(id) > 0 }) - 1
	if i >= 0 && id.Cmp(st.nodes[i].last) > 0 {
		return -1
	}
	return i
}

// live reports whether an entry with this id is above the floor.
func (st *streamState) live(id StreamID) bool { return id.Cmp(st.floor) >= 0 }

// rangeIDs calls fn for the ids of the live committed entries from..to
// (inclusive), in id order or reversed, until fn returns false; hint is
// how many the caller expects to need (0: unknown). It reads no big
// entry's chunks.
func (st *streamState) rangeIDs(cl *Collection, from, to StreamID, rev bool, hint int, fn func(id StreamID) bool) error {
	return st.rangeValues(cl, from, to, rev, hint, func(m []byte, _ dynastore.Value) (bool, error) {
		return fn(idOfMember(m)), nil
	})
}

// rangeRead is rangeIDs of whole entries: a big entry's fields are read
// from its chunks.
func (st *streamState) rangeRead(cl *Collection, from, to StreamID, rev bool, hint int, fn func(e StreamEntry) bool) error {
	return st.rangeValues(cl, from, to, rev, hint, func(m []byte, v dynastore.Value) (bool, error) {
		fields, err := entryFields(cl.c, v)
		if err != nil {
			return false, err
		}
		return fn(StreamEntry{ID: idOfMember(m), Fields: fields}), nil
	})
}

// rangeValues is rangeIDs of the stored members and values.
func (st *streamState) rangeValues(cl *Collection, from, to StreamID, rev bool, hint int, fn func(m []byte, v dynastore.Value) (bool, error)) error {
	if from.Cmp(st.floor) < 0 {
		from = st.floor
	}
	if from.Cmp(to) > 0 {
		return nil
	}
	return cl.EachRange(from.member(), to.member(), rev, hint, fn)
}

// cutThrough removes every entry with an id up to through (inclusive):
// inline ones (and those this command put) at once, large ones by raising
// the floor past it. No floor passes the largest id: an entry with that one
// is deleted by itself.
func (st *streamState) cutThrough(cl *Collection, through StreamID) error {
	if !cl.Large() {
		var ids [][]byte
		err := st.rangeIDs(cl, StreamID{}, through, false, 0, func(id StreamID) bool {
			ids = append(ids, id.member())
			return true
		})
		if err != nil {
			return err
		}
		for _, m := range ids {
			cl.Del(m)
		}
		for _, id := range st.pending {
			if id.Cmp(through) <= 0 {
				cl.Del(id.member())
			}
		}
		return nil
	}
	floor, ok := through.Incr()
	if !ok {
		floor = MaxStreamID
		cl.Del(MaxStreamID.member())
	}
	if floor.Cmp(st.floor) > 0 {
		st.floor, st.cleanup = floor, true
	}
	return nil
}

// StreamTrim is a parsed trimming strategy.
type StreamTrim struct {
	Strategy int // 0 none, TrimMaxLen, TrimMinID
	Approx   bool
	Limit    int64
	MaxLen   int64
	MinID    StreamID
}

// The trimming strategies.
const (
	TrimMaxLen = 1
	TrimMinID  = 2
)

// trim is streamTrim over the node table: it removes whole nodes from the
// head while they may go, and, unless approx, entries of the next one. It
// returns how many entries it removed.
func (st *streamState) trim(cl *Collection, t StreamTrim) (int64, error) {
	if t.Strategy == 0 {
		return 0, nil
	}
	length := st.length()
	var deleted int64
	for len(st.nodes) > 0 {
		if t.Strategy == TrimMaxLen && length <= t.MaxLen {
			break
		}
		nd := &st.nodes[0]
		entries := nd.live
		if t.Limit != 0 && deleted+entries > t.Limit {
			break
		}
		var remove bool
		if t.Strategy == TrimMaxLen {
			remove = length-entries >= t.MaxLen
		} else {
			remove = nd.last.Cmp(t.MinID) < 0
		}
		if remove {
			if err := st.cutThrough(cl, nd.last); err != nil {
				return 0, err
			}
			length -= entries
			deleted += entries
			st.nodes = st.nodes[1:]
			continue
		}
		if t.Approx {
			break
		}
		// Entries within the node: the oldest ones.
		var k int64
		var through StreamID
		if t.Strategy == TrimMaxLen {
			k = length - t.MaxLen
			var last StreamID
			seen := int64(0)
			err := st.rangeIDs(cl, nd.master, nd.last, false, int(k), func(id StreamID) bool {
				last, seen = id, seen+1
				return seen < k
			})
			if err != nil {
				return 0, err
			}
			for _, id := range st.pending { // only the newest entry is pending
				if seen < k && id.Cmp(nd.master) >= 0 {
					last, seen = id, seen+1
				}
			}
			through = last
		} else {
			if end, ok := t.MinID.Decr(); ok {
				through = end
				err := st.rangeIDs(cl, nd.master, end, false, 0, func(StreamID) bool {
					k++
					return true
				})
				if err != nil {
					return 0, err
				}
			}
		}
		if k > 0 {
			if err := st.cutThrough(cl, through); err != nil {
				return 0, err
			}
		}
		nd.live -= k
		length -= k
		deleted += k
		break
	}
	return deleted, nil
}

// ---- opening --------------------------------------------------------------------------------

// openStream reads key as a stream. With cached, a first try outside
// transactions starts from the item cache instead (fromCache): a write
// made from it is guarded by the cached item's ver, so a stale entry
// costs a failed write and a re-run, but a reply given without a write
// must not rest on it (the caller re-runs with ErrConflict).
func openStream(c Scope, key []byte, try int, cached bool) (cl *Collection, st *streamState, fromCache bool, err error) {
	if e, ok := Items(c).Get(c.DB(), key); ok && cached && try == 0 && !inTx(c) {
		cl, err = FromItem(c, key, TypeStream, e.Item)
		fromCache = true
	}
	if cl == nil || err != nil || cl.WrongType {
		// WRONGTYPE is a reply without a write: never from the cache.
		cl, err = OpenChecked(c, key, TypeStream)
		fromCache = false
	}
	if err != nil {
		return nil, nil, false, err
	}
	if st, err = streamStateOf(cl); err != nil {
		return nil, nil, false, err
	}
	return cl, st, fromCache, nil
}

// commitStream stages st and commits cl; if the floor rose, *sc is then
// the deletion of the trimmed members.
func commitStream(c Scope, cl *Collection, st *streamState, sc **StreamCleanup) error {
	st.stage(cl)
	if err := cl.Commit(); err != nil {
		return err
	}
	if st.cleanup {
		*sc = newStreamCleanup(c, cl.Key)
	}
	return nil
}

// renewStreamWatch gives a stream key item copied to another key (RENAME,
// MOVE, COPY) a watch token of its own: a key renamed away and back is a
// change to a client that WATCHes it.
func renewStreamWatch(it *dynastore.Item) {
	if it.Has(AttrStreamWatch) {
		it.Set(AttrStreamWatch, NewVer())
	}
}

// inTx reports whether c runs inside a transaction (EXEC, a script).
func inTx(c Scope) bool {
	_, ok := c.Data().(*Txn)
	return ok
}

// firstLast reads a stream's first and last entries (nil when empty).
func firstLast(cl *Collection, st *streamState) (first, last *StreamEntry, err error) {
	for _, rev := range []bool{false, true} {
		err = st.rangeRead(cl, StreamID{}, MaxStreamID, rev, 1, func(e StreamEntry) bool {
			if rev {
				last = &e
			} else {
				first = &e
			}
			return false
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return first, last, nil
}

// raxNodes is the node count of a radix tree (Redis's rax) holding keys,
// distinct and of one length, sorted, from depth on: a compressed node for
// a prefix they share, a branching node where they part, a node where a
// key ends. It is what Redis reports as radix-tree-nodes for the node
// master ids as long as its tree is shaped as inserting them makes it.
func raxNodes(keys [][]byte, depth int) int64 {
	if len(keys) == 0 {
		return 1
	}
	if depth == len(keys[0]) {
		return 1
	}
	p := 0
	for depth+p < len(keys[0]) {
		b := keys[0][depth+p]
		same := true
		for _, k := range keys[1:] {
			if k[depth+p] != b {
				same = false
				break
			}
		}
		if !same {
			break
		}
		p++
	}
	if p > 0 {
		return 1 + raxNodes(keys, depth+p)
	}
	n := int64(1)
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j][depth] == keys[i][depth] {
			j++
		}
		n += raxNodes(keys[i:j], depth+1)
		i = j
	}
	return n
}

// xreadReady tells the blocked-client poller whether the key item it read
// for k may hold entries for a blocked XREAD: a live stream whose last id
// passed the client's id and moved since the client's latest attempt saw
// it (entries up to the id seen were there to read then, and none can be
// added below it).
func xreadReady(keys [][]byte, gt, seen []StreamID, k string, it dynastore.Item, nowMS int64) bool {
	ks, err := DecodeKey(it, nowMS)
	if err != nil || !ks.Live || ks.Type != TypeStream {
		return false
	}
	last := idAttr(it.Get(attrStreamLast))
	for i, key := range keys {
		if string(key) == k && i < len(gt) && last.Cmp(gt[i]) > 0 && last != seen[i] {
			return true
		}
	}
	return false
}

// ---- cleanup of trimmed members ----------------------------------------------------------

// streamCleanupDelay is how long after a trim its cleanup starts: a trim
// inside MULTI or a script commits after the command returns, and the
// cleanup only deletes below the committed floor.
const streamCleanupDelay = 2 * time.Second

// StreamCleanup is the deletion of a large stream's members below its
// floor, which a trim leaves to the background: Run it after Delay.
type StreamCleanup struct {
	Delay time.Duration
	st    dynastore.Store
	db    int
	key   []byte
}

// newStreamCleanup is the cleanup of key after a trim committed by c:
// against the store under c's transaction, later when there is one.
func newStreamCleanup(c Scope, key []byte) *StreamCleanup {
	st, delay := c.Data(), time.Duration(0)
	if txn, ok := st.(*Txn); ok {
		st, delay = txn.Base(), streamCleanupDelay
	}
	return &StreamCleanup{Delay: delay, st: st, db: c.DB(), key: bytes.Clone(key)}
}

// Run deletes the members below the committed floor, its requests labelled
// StreamCleanupLabel; nowMS reads the clock.
func (sc *StreamCleanup) Run(nowMS func() int64) error {
	return streamCleanup(dynastore.WithLabel(context.Background(), StreamCleanupLabel), sc.st, sc.db, sc.key, nowMS)
}

// streamCleanup deletes the members of key's large stream below its
// committed floor, a transaction at a time, each checking that the key
// item still holds the generation and at least that floor.
func streamCleanup(ctx context.Context, st dynastore.Store, db int, key []byte, nowMS func() int64) error {
	for {
		it, err := st.Get(ctx, ItemKey(db, key))
		if err != nil {
			return err
		}
		ks, err := DecodeKey(it, nowMS())
		if err != nil || !ks.Live || ks.Type != TypeStream {
			return err
		}
		gen, _ := it.Get(AttrGen).(dynastore.B)
		floor, _ := it.Get(attrStreamFloor).(dynastore.B)
		if gen == nil || len(floor) != 16 {
			return nil
		}
		page, err := st.Query(ctx, dynastore.Query{PK: MembersPK(gen), Op: dynastore.SKLT, A: MemberSK(floor), Limit: MaxTxMembers})
		if err != nil || len(page.Items) == 0 {
			return err
		}
		acts := make([]dynastore.TxAction, 0, len(page.Items)+1)
		for _, m := range page.Items {
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: m.Key(), Cond: dynastore.Exists{Attr: dynastore.AttrPK}})
		}
		// A check, not a write, of the key item: the cleanup changes
		// nothing visible, so it must not move ver (a FLUSHALL or an
		// optimistic writer would take it for a write). n, the engine's
		// member count, is left as it is: for a stream it is an upper
		// bound of the members (the stream's length is in its node table).
		acts = append(acts, dynastore.TxAction{
			Op:  dynastore.TxCheck,
			Key: ItemKey(db, key),
			Cond: dynastore.And{
				dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: gen},
				dynastore.Compare{Attr: attrStreamFloor, Op: dynastore.OpGE, Val: floor},
			},
		})
		if err := st.Transact(ctx, acts); err != nil {
			if _, changed := ConditionsFailed(err); changed || Retryable(err) {
				return nil // someone else changed it: a later cleanup goes on
			}
			return err
		}
	}
}

// ---- the operations -----------------------------------------------------------------------

// XAddArgs is a parsed XADD: its id (IDGiven; SeqGiven false for "ms-*"),
// fields and trimming (Trim, also XTRIM's).
type XAddArgs struct {
	Trim              StreamTrim
	NoMkStream        bool
	ID                StreamID
	IDGiven, SeqGiven bool
	Fields            [][]byte
}

// XAdd is XADD: the id of the entry it added (ok false for NOMKSTREAM of
// a missing key), how many entries its trim removed, and the cleanup its
// trim leaves (nil: none).
func XAdd(c Scope, key []byte, a XAddArgs) (added StreamID, trimmed int64, ok bool, sc *StreamCleanup, err error) {
	val := dynastore.Value(encodeFields(a.Fields))
	// An entry too big for a member item is staged in chunks first
	// (bigfields.go); its id is known only on each try, whose commit names
	// it (publishAs).
	var big *bigHeader
	if enc := val.(dynastore.B); bigField(MaxStreamID.member(), len(enc)) {
		if big, err = stageUnnamed(c, key, enc); err != nil {
			return StreamID{}, 0, false, nil, err
		}
		val = bigRef(big)
	}
	err = RetryConflicts(c, func(try int) error {
		added, trimmed, ok = StreamID{}, 0, false
		cl, st, fromCache, err := openStream(c, key, try, true)
		if err != nil {
			return err
		}
		// An outcome without a write must not rest on the cache.
		noWrite := func(err error) error {
			if fromCache {
				return ErrConflict
			}
			return err
		}
		if !cl.Exists() && a.NoMkStream {
			return noWrite(nil)
		}
		if st.last == MaxStreamID {
			return noWrite(ErrStreamExhausted)
		}
		var id StreamID
		switch {
		case !a.IDGiven:
			if now := uint64(c.NowMS()); now > st.last.Ms {
				id = StreamID{now, 0}
			} else {
				id, _ = st.last.Incr()
			}
		case a.SeqGiven:
			id = a.ID
		case st.last.Ms == a.ID.Ms:
			if st.last.Seq == math.MaxUint64 {
				return noWrite(ErrStreamIDTooSmall)
			}
			id = StreamID{a.ID.Ms, st.last.Seq + 1}
		default:
			id = a.ID
		}
		if id.Cmp(st.last) <= 0 {
			return noWrite(ErrStreamIDTooSmall)
		}
		cl.Put(id.member(), val)
		if big != nil {
			publishAs(cl, big, id.member())
		}
		if cl.Large() {
			// No member above the last id was ever written to this
			// generation: the commit need not read it (the put's own
			// condition still checks it is absent).
			if cl.Known == nil {
				cl.Known = map[string]MemberState{}
			}
			cl.Known[string(id.member())] = MemberState{}
		}
		maxBytes, maxEntries := c.Process().streamNodes()
		st.appendID(id, a.Fields, maxBytes, maxEntries)
		if trimmed, err = st.trim(cl, a.Trim); err != nil {
			return err
		}
		added, ok = id, true
		st.modified = true
		return commitStream(c, cl, st, &sc)
	})
	if big != nil && !ok && (err == nil || errors.Is(err, ErrWrongType) || errors.Is(err, ErrStreamIDTooSmall) || errors.Is(err, ErrStreamExhausted)) {
		// Refused before any write: nothing will ever name the chunks.
		discardBig(c, big)
	}
	return added, trimmed, ok, sc, err
}

// XTrim is XTRIM: how many entries it removed, and the cleanup it leaves.
func XTrim(c Scope, key []byte, t StreamTrim) (deleted int64, sc *StreamCleanup, err error) {
	err = RetryConflicts(c, func(try int) error {
		cl, st, _, err := openStream(c, key, try, false)
		if err != nil {
			return err
		}
		if deleted, err = st.trim(cl, t); err != nil || deleted == 0 {
			return err
		}
		st.modified = true
		return commitStream(c, cl, st, &sc)
	})
	return deleted, sc, err
}

// XDel is XDEL of the ids args (ErrStreamBadID for one that is not an id,
// found only once the key is known to be a stream, as Redis does): how
// many entries it removed.
func XDel(c Scope, key []byte, args [][]byte) (int64, error) {
	ids := make([]StreamID, 0, len(args))
	var deleted int64
	var sc *StreamCleanup
	err := RetryConflicts(c, func(try int) error {
		cl, st, _, err := openStream(c, key, try, false)
		if err != nil || !cl.Exists() {
			return err
		}
		if try == 0 { // after the type check, as Redis
			for _, arg := range args {
				id, _, ok := ParseStreamID(arg, 0, true, false)
				if !ok {
					return ErrStreamBadID
				}
				ids = append(ids, id)
			}
		}
		members := make([][]byte, 0, len(ids))
		for _, id := range ids {
			members = append(members, id.member())
		}
		_, present, err := cl.Lookup(members)
		if err != nil {
			return err
		}
		deleted = 0
		gone := map[StreamID]bool{}
		for i, id := range ids {
			if !present[i] || gone[id] || !st.live(id) {
				continue
			}
			gone[id] = true
			cl.Del(members[i])
			if n := st.nodeOf(id); n >= 0 {
				if st.nodes[n].live--; st.nodes[n].live == 0 {
					st.nodes = append(st.nodes[:n], st.nodes[n+1:]...)
				}
			}
			if id.Cmp(st.maxDel) > 0 {
				st.maxDel = id
			}
			deleted++
		}
		if deleted == 0 {
			return nil
		}
		st.modified = true
		return commitStream(c, cl, st, &sc)
	})
	return deleted, err
}

// XLen is XLEN.
func XLen(c Scope, key []byte) (int64, error) {
	cl, err := OpenChecked(c, key, TypeStream)
	if err != nil {
		return 0, err
	}
	st, err := streamStateOf(cl)
	if err != nil {
		return 0, err
	}
	return st.length(), nil
}

// XRange is XRANGE (XREVRANGE when rev) of the entries from start to end,
// at most count of them (negative: all); exists is false when the key
// does not exist.
func XRange(c Scope, key []byte, start, end StreamID, rev bool, count int64) (out []StreamEntry, exists bool, err error) {
	err = Read(c, key, TypeStream, func(cl *Collection) error {
		out, exists = nil, cl.Exists()
		if !exists || count == 0 {
			return nil
		}
		st, err := streamStateOf(cl)
		if err != nil {
			return err
		}
		return st.rangeRead(cl, start, end, rev, int(max(count, 0)), func(e StreamEntry) bool {
			out = append(out, e)
			return count < 0 || int64(len(out)) < count
		})
	})
	return out, exists, err
}

// StreamInfo is what XINFO STREAM reports.
type StreamInfo struct {
	Length                        int64
	RadixTreeKeys, RadixTreeNodes int64
	LastID, MaxDeletedID, FirstID StreamID
	EntriesAdded                  int64
	First, Last                   *StreamEntry
	Groups                        int64
}

// XInfo is XINFO STREAM (nil when the key does not exist).
func XInfo(c Scope, key []byte) (*StreamInfo, error) {
	var info *StreamInfo
	err := Read(c, key, TypeStream, func(cl *Collection) error {
		info = nil
		if !cl.Exists() {
			return nil
		}
		st, err := streamStateOf(cl)
		if err != nil {
			return err
		}
		info, err = streamInfoOf(cl, st)
		return err
	})
	return info, err
}

// streamInfoOf is XINFO STREAM's report of cl.
func streamInfoOf(cl *Collection, st *streamState) (*StreamInfo, error) {
	first, last, err := firstLast(cl, st)
	if err != nil {
		return nil, err
	}
	if err := st.loadGroups(); err != nil {
		return nil, err
	}
	masters := make([][]byte, len(st.nodes))
	for i, n := range st.nodes {
		masters[i] = n.master.member()
	}
	info := &StreamInfo{
		Length: st.length(),
		// radix-tree-keys is the number of nodes, exact under the
		// node emulation; radix-tree-nodes the nodes of a radix
		// tree over their master ids (raxNodes).
		RadixTreeKeys: int64(len(st.nodes)), RadixTreeNodes: raxNodes(masters, 0),
		LastID: st.last, MaxDeletedID: st.maxDel, EntriesAdded: st.added,
		First: first, Last: last, Groups: int64(len(st.groups)),
	}
	if first != nil {
		info.FirstID = first.ID
	}
	return info, nil
}

// XReadResult is what one XREAD attempt found for one key.
type XReadResult struct {
	Key     []byte
	Entries []StreamEntry
}

// XReadState is one XREAD's ids across its attempts: the ids each key
// must pass, resolved ("$") by the first attempt, and each key's last id
// as the latest attempt saw it (see Ready).
type XReadState struct {
	Keys, IDs [][]byte
	mu        sync.Mutex
	gt, seen  []StreamID
}

// XRead is one attempt of XREAD over s's keys: the entries past each
// key's id, at most count per key (0: all). quiet (a blocked client's
// retry) skips keys of another type instead of failing.
func XRead(c Scope, s *XReadState, count int64, quiet bool) ([]XReadResult, error) {
	var out []XReadResult
	err := RetryConflicts(c, func(int) error {
		out = nil
		cls, err := OpenMany(c, s.Keys, TypeStream)
		if err != nil {
			return err
		}
		sts := make([]*streamState, len(cls))
		resolve := s.gt == nil
		if resolve {
			s.gt = make([]StreamID, len(cls))
			s.seen = make([]StreamID, len(cls))
		}
		for i, cl := range cls {
			if cl.WrongType {
				if quiet {
					continue // as Redis, a blocked client ignores it
				}
				return ErrWrongType
			}
			if sts[i], err = streamStateOf(cl); err != nil {
				return err
			}
			if resolve {
				switch id := s.IDs[i]; {
				case len(id) == 1 && id[0] == '$':
					s.gt[i] = sts[i].last
				case len(id) == 1 && id[0] == '>':
					return ErrStreamGTID
				default:
					v, _, ok := ParseStreamID(id, 0, true, false)
					if !ok {
						return ErrStreamBadID
					}
					s.gt[i] = v
				}
			}
		}
		s.mu.Lock()
		for i, st := range sts {
			if st != nil {
				s.seen[i] = st.last
			}
		}
		s.mu.Unlock()
		for i, cl := range cls {
			if sts[i] == nil || !cl.Exists() {
				continue
			}
			from, ok := s.gt[i].Incr()
			if !ok {
				continue
			}
			var es []StreamEntry
			err := sts[i].rangeRead(cl, from, MaxStreamID, false, int(count), func(e StreamEntry) bool {
				es = append(es, e)
				return count == 0 || int64(len(es)) < count
			})
			if err != nil {
				return err
			}
			if len(es) > 0 {
				out = append(out, XReadResult{Key: s.Keys[i], Entries: es})
			}
		}
		return ValidateRead(c, cls...)
	})
	return out, err
}

// Ready tells the blocked-client poller whether the key item it read for
// key may hold entries for the blocked XREAD (xreadReady).
func (s *XReadState) Ready(key string, it Item, nowMS int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return xreadReady(s.Keys, s.gt, s.seen, key, it, nowMS)
}
