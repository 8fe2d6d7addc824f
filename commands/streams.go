package commands

// Stream commands (XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XREAD,
// XINFO STREAM), on the collection engine (model/collection.go). Consumer groups
// are not implemented and their commands not registered.
//
// Layout. Each entry is a collection member: the member bytes are the
// entry id as 16 big-endian bytes (ms, seq), so member order is id order
// and XRANGE is a range read over member sort keys (EachRange); the value
// is the entry's field/value pairs (encodeFields). A small stream keeps
// its entries inline in the key item (v as an L of B: id, fields, id,
// fields, ...), a large one as member items of its generation, like sets
// and hashes. The key item also holds, as key attributes (SetKeyAttr,
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
// the tail node's listpack would reach stream-node-max-bytes (4096) bytes:
// that rule is not replayed, so streams of big entries (about 40 bytes and
// more per entry) can trim differently under ~ than Redis.
//
// Trimming a large stream would delete up to thousands of members, more
// than one transaction holds; instead the commit raises the floor (xz) in
// the key item, which hides every entry below it at once, and the members
// below the floor are deleted afterwards in the background
// (streamCleanup), by transactions conditioned on the committed floor, so
// they never touch a live entry.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Key item attributes of a stream.
const (
	attrStreamLast   = "xl"
	attrStreamAdded  = "xa"
	attrStreamMaxDel = "xd"
	attrStreamNodes  = "xn"
	attrStreamFloor  = "xz"
)

// Replies of the stream family (checked against redis-server 7.0.15).
const (
	msgStreamBadID         = "ERR Invalid stream ID specified as stream command argument"
	msgStreamIDTooSmall    = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	msgStreamIDZero        = "ERR The ID specified in XADD must be greater than 0-0"
	msgStreamExhausted     = "ERR The stream has exhausted the last possible ID, unable to add more items"
	msgStreamMaxlenMinid   = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	msgStreamMaxlenNeg     = "ERR The MAXLEN argument must be >= 0."
	msgStreamLimitNeg      = "ERR The LIMIT argument must be >= 0."
	msgStreamLimitNoTrim   = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	msgStreamLimitExact    = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	msgStreamNoStrategy    = "ERR syntax error, XTRIM must be called with a trimming strategy"
	msgStreamBadStart      = "ERR invalid start ID for the interval"
	msgStreamBadEnd        = "ERR invalid end ID for the interval"
	msgStreamUnbalanced    = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	msgStreamGroupOpt      = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	msgStreamNoackOpt      = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	msgStreamGTID          = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	msgStreamBlockInScript = "ERR %s command is not allowed with BLOCK option from scripts"
)

// streamNodeMaxEntries is Redis's stream-node-max-entries default.
const streamNodeMaxEntries = 100

// xreadBlockedCount is the COUNT of a blocked XREAD given none (Redis's
// XREAD_BLOCKED_DEFAULT_COUNT).
const xreadBlockedCount = 1000

// streamInline bounds an inline stream: entries of at most 256 bytes of
// fields, 64 of them, keep the key item under ~16 KB.
var streamInline = model.InlineLimits{Entries: 64, Bytes: 256}

// StreamCleanupLabel is the request label of the background deletion of
// trimmed stream entries.
const StreamCleanupLabel = "stream-cleanup"

func registerStreams(t *Table) {
	t.Register([]Row{
		{"xadd", cmdXadd},
		{"xlen", cmdXlen},
		{"xrange", func(c *Ctx) { cmdXrange(c, false) }},
		{"xrevrange", func(c *Ctx) { cmdXrange(c, true) }},
		{"xdel", cmdXdel},
		{"xtrim", cmdXtrim},
		{"xread", cmdXread},
		{"xinfo|stream", cmdXinfoStream},
	})
}

// ---- ids ----------------------------------------------------------------------------

// streamID is an entry id.
type streamID struct{ ms, seq uint64 }

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (a streamID) cmp(b streamID) int {
	switch {
	case a.ms < b.ms:
		return -1
	case a.ms > b.ms:
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// member is the id as collection member bytes: 16 bytes, big-endian.
func (a streamID) member() []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, a.ms)
	binary.BigEndian.PutUint64(b[8:], a.seq)
	return b
}

func idOfMember(m []byte) streamID {
	if len(m) != 16 {
		return streamID{}
	}
	return streamID{binary.BigEndian.Uint64(m), binary.BigEndian.Uint64(m[8:])}
}

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

// incr is streamIncrID: the next id, false when a is the last possible one.
func (a streamID) incr() (streamID, bool) {
	switch {
	case a.seq < math.MaxUint64:
		return streamID{a.ms, a.seq + 1}, true
	case a.ms < math.MaxUint64:
		return streamID{a.ms + 1, 0}, true
	}
	return streamID{}, false
}

// decr is streamDecrID.
func (a streamID) decr() (streamID, bool) {
	switch {
	case a.seq > 0:
		return streamID{a.ms, a.seq - 1}, true
	case a.ms > 0:
		return streamID{a.ms - 1, math.MaxUint64}, true
	}
	return maxStreamID, false
}

// string2ull is Redis's string2ull: string2ll, and failing that strtoull
// (leading blanks, a sign, leading zeros, a negated value...).
func string2ull(s []byte) (uint64, bool) {
	if ll, ok := model.String2ll(s); ok {
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

// parseStreamID is streamGenericParseIDOrReply: "-", "+" (unless strict),
// "ms" (seq missingSeq) or "ms-seq"; with xadd also "ms-*" (seqGiven
// false).
func parseStreamID(arg []byte, missingSeq uint64, strict, xadd bool) (id streamID, seqGiven, ok bool) {
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
			return streamID{}, true, true
		}
		return maxStreamID, true, true
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
	return streamID{ms, seq}, seqGiven, true
}

// parseIntervalID is streamParseIntervalIDOrReply: an id, or "(" and a
// strict id (exclusive).
func parseIntervalID(arg []byte, missingSeq uint64) (id streamID, exclusive, ok bool) {
	if len(arg) > 1 && arg[0] == '(' {
		id, _, ok = parseStreamID(arg[1:], missingSeq, true, false)
		return id, true, ok
	}
	id, _, ok = parseStreamID(arg, missingSeq, false, false)
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

func decodeFields(v dynastore.Value) ([][]byte, error) {
	b, _ := v.(dynastore.B)
	var out [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, fmt.Errorf("commands: stream entry: %w", dynastore.ErrInvalid)
		}
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out, nil
}

// streamEntry is one entry read.
type streamEntry struct {
	id     streamID
	fields [][]byte
}

// writeEntry replies with one entry: [id, [field, value, ...]].
func writeEntry(c *Ctx, e streamEntry) {
	c.W.Array(2)
	c.W.BulkString(e.id.String())
	c.W.Array(len(e.fields))
	for _, f := range e.fields {
		c.W.Bulk(f)
	}
}

func writeEntries(c *Ctx, es []streamEntry) {
	c.W.Array(len(es))
	for _, e := range es {
		writeEntry(c, e)
	}
}

// ---- the stream state in the key item ------------------------------------------------------

// streamNode is one emulated radix tree node (see the file comment).
type streamNode struct {
	master, last streamID
	live, total  int64
}

// streamState is a stream's key attributes as read, and as a write
// changes them.
type streamState struct {
	last, maxDel, floor streamID
	added               int64
	nodes               []streamNode
	// pending are the ids this command put (not yet committed).
	pending []streamID
	// cleanup: the floor rose, so trimmed members wait for streamCleanup.
	cleanup bool
}

func idAttr(v dynastore.Value) streamID {
	b, _ := v.(dynastore.B)
	return idOfMember(b)
}

// streamStateOf decodes cl's stream attributes (zero for a new stream).
func streamStateOf(cl *model.Collection) (*streamState, error) {
	st := &streamState{
		last:   idAttr(cl.KeyAttr(attrStreamLast)),
		maxDel: idAttr(cl.KeyAttr(attrStreamMaxDel)),
		floor:  idAttr(cl.KeyAttr(attrStreamFloor)),
	}
	if v := cl.KeyAttr(attrStreamAdded); v != nil {
		n, err := model.NumberInt(v)
		if err != nil {
			return nil, fmt.Errorf("commands: stream entries-added: %w", err)
		}
		st.added = n
	}
	b, _ := cl.KeyAttr(attrStreamNodes).(dynastore.B)
	for len(b) > 0 {
		var vals [6]uint64
		for i := range vals {
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, fmt.Errorf("commands: stream node table: %w", dynastore.ErrInvalid)
			}
			vals[i], b = v, b[k:]
		}
		st.nodes = append(st.nodes, streamNode{
			master: streamID{vals[0], vals[1]}, last: streamID{vals[2], vals[3]},
			live: int64(vals[4]), total: int64(vals[5]),
		})
	}
	return st, nil
}

// stage stages every stream attribute (an inline commit rewrites the key
// item whole).
func (st *streamState) stage(cl *model.Collection) {
	var nodes []byte
	for _, n := range st.nodes {
		for _, v := range []uint64{n.master.ms, n.master.seq, n.last.ms, n.last.seq, uint64(n.live), uint64(n.total)} {
			nodes = binary.AppendUvarint(nodes, v)
		}
	}
	cl.SetKeyAttr(attrStreamLast, dynastore.B(st.last.member()))
	cl.SetKeyAttr(attrStreamAdded, model.NInt(st.added))
	cl.SetKeyAttr(attrStreamMaxDel, dynastore.B(st.maxDel.member()))
	cl.SetKeyAttr(attrStreamNodes, dynastore.B(nodes))
	cl.SetKeyAttr(attrStreamFloor, dynastore.B(st.floor.member()))
}

// length is the number of entries.
func (st *streamState) length() int64 {
	var n int64
	for _, nd := range st.nodes {
		n += nd.live
	}
	return n
}

// appendID records a new entry in the node table (streamAppendItem).
func (st *streamState) appendID(id streamID) {
	if n := len(st.nodes); n > 0 && st.nodes[n-1].total < streamNodeMaxEntries {
		tail := &st.nodes[n-1]
		tail.last, tail.live, tail.total = id, tail.live+1, tail.total+1
	} else {
		st.nodes = append(st.nodes, streamNode{master: id, last: id, live: 1, total: 1})
	}
	st.last = id
	st.added++
	st.pending = append(st.pending, id)
}

// nodeOf is the index of the node holding id (-1: none).
func (st *streamState) nodeOf(id streamID) int {
	i := sort.Search(len(st.nodes), func(i int) bool { return st.nodes[i].master.cmp(id) > 0 }) - 1
	if i >= 0 && id.cmp(st.nodes[i].last) > 0 {
		return -1
	}
	return i
}

// live reports whether an entry with this id is above the floor.
func (st *streamState) live(id streamID) bool { return id.cmp(st.floor) >= 0 }

// rangeRead calls fn for the live committed entries from..to (inclusive),
// in id order or reversed, until fn returns false; hint is how many the
// caller expects to need (0: unknown).
func (st *streamState) rangeRead(cl *model.Collection, from, to streamID, rev bool, hint int, fn func(e streamEntry) bool) error {
	if from.cmp(st.floor) < 0 {
		from = st.floor
	}
	if from.cmp(to) > 0 {
		return nil
	}
	return cl.EachRange(from.member(), to.member(), rev, hint, func(m []byte, v dynastore.Value) (bool, error) {
		fields, err := decodeFields(v)
		if err != nil {
			return false, err
		}
		return fn(streamEntry{id: idOfMember(m), fields: fields}), nil
	})
}

// cutThrough removes every entry with an id up to through (inclusive):
// inline ones (and those this command put) at once, large ones by raising
// the floor past it. No floor passes the largest id: an entry with that one
// is deleted by itself.
func (st *streamState) cutThrough(cl *model.Collection, through streamID) error {
	if !cl.Large() {
		var ids [][]byte
		err := st.rangeRead(cl, streamID{}, through, false, 0, func(e streamEntry) bool {
			ids = append(ids, e.id.member())
			return true
		})
		if err != nil {
			return err
		}
		for _, m := range ids {
			cl.Del(m)
		}
		for _, id := range st.pending {
			if id.cmp(through) <= 0 {
				cl.Del(id.member())
			}
		}
		return nil
	}
	floor, ok := through.incr()
	if !ok {
		floor = maxStreamID
		cl.Del(maxStreamID.member())
	}
	if floor.cmp(st.floor) > 0 {
		st.floor, st.cleanup = floor, true
	}
	return nil
}

// trimArgs is a parsed trimming strategy.
type trimArgs struct {
	strategy int // 0 none, trimMaxlen, trimMinid
	approx   bool
	limit    int64
	maxlen   int64
	minid    streamID
}

const (
	trimMaxlen = 1
	trimMinid  = 2
)

// trim is streamTrim over the node table: it removes whole nodes from the
// head while they may go, and, unless approx, entries of the next one. It
// returns how many entries it removed.
func (st *streamState) trim(cl *model.Collection, t trimArgs) (int64, error) {
	if t.strategy == 0 {
		return 0, nil
	}
	length := st.length()
	var deleted int64
	for len(st.nodes) > 0 {
		if t.strategy == trimMaxlen && length <= t.maxlen {
			break
		}
		nd := &st.nodes[0]
		entries := nd.live
		if t.limit != 0 && deleted+entries > t.limit {
			break
		}
		var remove bool
		if t.strategy == trimMaxlen {
			remove = length-entries >= t.maxlen
		} else {
			remove = nd.last.cmp(t.minid) < 0
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
		if t.approx {
			break
		}
		// Entries within the node: the oldest ones.
		var k int64
		var through streamID
		if t.strategy == trimMaxlen {
			k = length - t.maxlen
			var last streamID
			seen := int64(0)
			err := st.rangeRead(cl, nd.master, nd.last, false, int(k), func(e streamEntry) bool {
				last, seen = e.id, seen+1
				return seen < k
			})
			if err != nil {
				return 0, err
			}
			for _, id := range st.pending { // only the newest entry is pending
				if seen < k && id.cmp(nd.master) >= 0 {
					last, seen = id, seen+1
				}
			}
			through = last
		} else {
			if end, ok := t.minid.decr(); ok {
				through = end
				err := st.rangeRead(cl, nd.master, end, false, 0, func(streamEntry) bool {
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
// must not rest on it (the caller re-runs with model.ErrConflict).
func openStream(c *Ctx, key []byte, try int, cached bool) (cl *model.Collection, st *streamState, fromCache bool, err error) {
	if e, ok := model.Items(c).Get(c.DB(), key); ok && cached && try == 0 && c.Store == c.Srv.Store {
		cl, err = model.FromItem(c, key, model.TypeStream, e.Item)
		fromCache = true
	}
	if cl == nil || err != nil || cl.WrongType {
		// WRONGTYPE is a reply without a write: never from the cache.
		cl, err = model.OpenChecked(c, key, model.TypeStream)
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

// commitStream stages st and commits cl, then starts the deletion of
// trimmed members if the floor rose.
func commitStream(c *Ctx, cl *model.Collection, st *streamState) error {
	st.stage(cl)
	if err := cl.Commit(); err != nil {
		return err
	}
	if st.cleanup {
		startStreamCleanup(c, cl.Key)
	}
	return nil
}

// ---- XADD, XTRIM ---------------------------------------------------------------------------

// xaddArgs is a parsed XADD or XTRIM.
type xaddArgs struct {
	trim               trimArgs
	noMkStream         bool
	id                 streamID
	idGiven, seqGiven  bool
	fields             [][]byte
	arityError, noTrim bool
}

// parseAddOrTrim is streamParseAddOrTrimArgsOrReply; for XADD it also
// takes the id and the fields.
func parseAddOrTrim(args [][]byte, xadd bool) (xaddArgs, string) {
	var a xaddArgs
	i := 2
	limitGiven := false
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
		case argIs(opt, "maxlen") && more > 0, argIs(opt, "minid") && more > 0:
			if a.trim.strategy != 0 {
				return a, msgStreamMaxlenMinid
			}
			a.trim.approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.trim.approx = next[0] == '~'
				i++
			}
			if argIs(opt, "maxlen") {
				n, ok := model.String2ll(args[i+1])
				if !ok {
					return a, MsgNotInt
				}
				if n < 0 {
					return a, msgStreamMaxlenNeg
				}
				a.trim.maxlen, a.trim.strategy = n, trimMaxlen
			} else {
				id, _, ok := parseStreamID(args[i+1], 0, true, false)
				if !ok {
					return a, msgStreamBadID
				}
				a.trim.minid, a.trim.strategy = id, trimMinid
			}
			i++
			continue
		case argIs(opt, "limit") && more > 0:
			n, ok := model.String2ll(args[i+1])
			if !ok {
				return a, MsgNotInt
			}
			if n < 0 {
				return a, msgStreamLimitNeg
			}
			a.trim.limit, limitGiven = n, true
			i++
			continue
		case xadd && argIs(opt, "nomkstream"):
			a.noMkStream = true
			continue
		case xadd:
			id, seqGiven, ok := parseStreamID(opt, 0, true, true)
			if !ok {
				return a, msgStreamBadID
			}
			a.id, a.seqGiven, a.idGiven = id, seqGiven, true
		default:
			return a, MsgSyntax
		}
		break
	}
	if a.trim.limit != 0 && a.trim.strategy == 0 {
		return a, msgStreamLimitNoTrim
	}
	if !xadd && a.trim.strategy == 0 {
		return a, msgStreamNoStrategy
	}
	switch {
	case limitGiven && !a.trim.approx:
		return a, msgStreamLimitExact
	case !limitGiven && a.trim.approx:
		a.trim.limit = 100 * streamNodeMaxEntries
	case !limitGiven:
		a.trim.limit = 0
	}
	if xadd {
		fields := len(args) - (i + 1)
		if fields < 2 || fields%2 == 1 {
			return a, ErrWrongArgs("xadd")
		}
		a.fields = args[i+1:]
	}
	return a, ""
}

func cmdXadd(c *Ctx) {
	a, msg := parseAddOrTrim(c.Args, true)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if a.idGiven && a.seqGiven && a.id == (streamID{}) {
		c.W.Error(msgStreamIDZero)
		return
	}
	key := c.Args[1]
	var added streamID
	var reply string
	unlock := c.lockKeys(key)
	err := model.RetryConflicts(c, func(try int) error {
		reply, added = "", streamID{}
		cl, st, fromCache, err := openStream(c, key, try, true)
		if err != nil {
			return err
		}
		// An outcome without a write must not rest on the cache.
		noWrite := func(msg string) error {
			if fromCache {
				return model.ErrConflict
			}
			reply = msg
			return nil
		}
		if !cl.Exists() && a.noMkStream {
			return noWrite("")
		}
		if st.last == maxStreamID {
			return noWrite(msgStreamExhausted)
		}
		var id streamID
		switch {
		case !a.idGiven:
			if now := uint64(c.NowMS()); now > st.last.ms {
				id = streamID{now, 0}
			} else {
				id, _ = st.last.incr()
			}
		case a.seqGiven:
			id = a.id
		case st.last.ms == a.id.ms:
			if st.last.seq == math.MaxUint64 {
				return noWrite(msgStreamIDTooSmall)
			}
			id = streamID{a.id.ms, st.last.seq + 1}
		default:
			id = a.id
		}
		if id.cmp(st.last) <= 0 {
			return noWrite(msgStreamIDTooSmall)
		}
		cl.Put(id.member(), encodeFields(a.fields))
		if cl.Large() {
			// No member above the last id was ever written to this
			// generation: the commit need not read it (the put's own
			// condition still checks it is absent).
			if cl.Known == nil {
				cl.Known = map[string]model.MemberState{}
			}
			cl.Known[string(id.member())] = model.MemberState{}
		}
		st.appendID(id)
		if _, err := st.trim(cl, a.trim); err != nil {
			return err
		}
		added = id
		return commitStream(c, cl, st)
	})
	unlock()
	switch {
	case err != nil:
		c.Fail(err)
	case reply != "":
		c.W.Error(reply)
	case added == (streamID{}):
		c.W.Nil() // NOMKSTREAM of a missing key
	default:
		c.W.BulkString(added.String())
		c.Srv.listRT().notify(c.DB(), key)
	}
}

func cmdXtrim(c *Ctx) {
	a, msg := parseAddOrTrim(c.Args, false)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key := c.Args[1]
	var deleted int64
	unlock := c.lockKeys(key)
	err := model.RetryConflicts(c, func(try int) error {
		cl, st, _, err := openStream(c, key, try, false)
		if err != nil {
			return err
		}
		if deleted, err = st.trim(cl, a.trim); err != nil || deleted == 0 {
			return err
		}
		return commitStream(c, cl, st)
	})
	unlock()
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(deleted)
}

// ---- XDEL ----------------------------------------------------------------------------------

func cmdXdel(c *Ctx) {
	ids := make([]streamID, 0, len(c.Args)-2)
	key := c.Args[1]
	var deleted int64
	unlock := c.lockKeys(key)
	err := model.RetryConflicts(c, func(try int) error {
		cl, st, _, err := openStream(c, key, try, false)
		if err != nil || !cl.Exists() {
			return err
		}
		if try == 0 { // after the type check, as Redis
			for _, arg := range c.Args[2:] {
				id, _, ok := parseStreamID(arg, 0, true, false)
				if !ok {
					return redisError(msgStreamBadID)
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
		gone := map[streamID]bool{}
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
			if id.cmp(st.maxDel) > 0 {
				st.maxDel = id
			}
			deleted++
		}
		if deleted == 0 {
			return nil
		}
		return commitStream(c, cl, st)
	})
	unlock()
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(deleted)
}

// ---- reads -----------------------------------------------------------------------------------

func cmdXlen(c *Ctx) {
	cl, err := model.OpenChecked(c, c.Args[1], model.TypeStream)
	if err != nil {
		c.Fail(err)
		return
	}
	st, err := streamStateOf(cl)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(st.length())
}

func cmdXrange(c *Ctx, rev bool) {
	startArg, endArg := c.Args[2], c.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, startEx, ok := parseIntervalID(startArg, 0)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	if startEx {
		if start, ok = start.incr(); !ok {
			c.W.Error(msgStreamBadStart)
			return
		}
	}
	end, endEx, ok := parseIntervalID(endArg, math.MaxUint64)
	if !ok {
		c.W.Error(msgStreamBadID)
		return
	}
	if endEx {
		if end, ok = end.decr(); !ok {
			c.W.Error(msgStreamBadEnd)
			return
		}
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if !argIs(c.Args[j], "count") || j+1 >= len(c.Args) {
			c.W.Error(MsgSyntax)
			return
		}
		n, ok := model.String2ll(c.Args[j+1])
		if !ok {
			c.W.Error(MsgNotInt)
			return
		}
		count = max(n, 0)
		j++
	}
	var out []streamEntry
	exists := false
	err := model.Read(c, c.Args[1], model.TypeStream, func(cl *model.Collection) error {
		out, exists = nil, cl.Exists()
		if !exists || count == 0 {
			return nil
		}
		st, err := streamStateOf(cl)
		if err != nil {
			return err
		}
		return st.rangeRead(cl, start, end, rev, int(max(count, 0)), func(e streamEntry) bool {
			out = append(out, e)
			return count < 0 || int64(len(out)) < count
		})
	})
	switch {
	case err != nil:
		c.Fail(err)
	case exists && count == 0:
		c.W.NilArray()
	default:
		writeEntries(c, out)
	}
}

// firstLast reads a stream's first and last entries (nil when empty).
func firstLast(cl *model.Collection, st *streamState) (first, last *streamEntry, err error) {
	for _, rev := range []bool{false, true} {
		err = st.rangeRead(cl, streamID{}, maxStreamID, rev, 1, func(e streamEntry) bool {
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

// cmdXinfoStream is XINFO STREAM key (the FULL form is not supported).
// As in Redis, the key is looked up (no such key, WRONGTYPE) before the
// options are read.
func cmdXinfoStream(c *Ctx) {
	var st *streamState
	var first, last *streamEntry
	exists := false
	err := model.Read(c, c.Args[2], model.TypeStream, func(cl *model.Collection) (err error) {
		if exists = cl.Exists(); !exists {
			return nil
		}
		if st, err = streamStateOf(cl); err != nil {
			return err
		}
		first, last, err = firstLast(cl, st)
		return err
	})
	switch {
	case err != nil:
		c.Fail(err)
		return
	case !exists:
		c.W.Error(MsgNoSuchKey)
		return
	case len(c.Args) > 3:
		c.W.Error("ERR XINFO STREAM FULL is not supported")
		return
	}
	masters := make([][]byte, len(st.nodes))
	for i, n := range st.nodes {
		masters[i] = n.master.member()
	}
	firstID := streamID{}
	if first != nil {
		firstID = first.id
	}
	c.W.Map(10)
	c.W.BulkString("length")
	c.W.Int(st.length())
	// radix-tree-keys is the number of nodes, exact under the node
	// emulation; radix-tree-nodes the nodes of a radix tree over their
	// master ids (raxNodes).
	c.W.BulkString("radix-tree-keys")
	c.W.Int(int64(len(st.nodes)))
	c.W.BulkString("radix-tree-nodes")
	c.W.Int(raxNodes(masters, 0))
	c.W.BulkString("last-generated-id")
	c.W.BulkString(st.last.String())
	c.W.BulkString("max-deleted-entry-id")
	c.W.BulkString(st.maxDel.String())
	c.W.BulkString("entries-added")
	c.W.Int(st.added)
	c.W.BulkString("recorded-first-entry-id")
	c.W.BulkString(firstID.String())
	c.W.BulkString("groups")
	c.W.Int(0)
	for i, e := range []*streamEntry{first, last} {
		c.W.BulkString([]string{"first-entry", "last-entry"}[i])
		if e == nil {
			c.W.Nil()
		} else {
			writeEntry(c, *e)
		}
	}
}

// ---- XREAD ---------------------------------------------------------------------------------

// xreadArgs is a parsed XREAD.
type xreadArgs struct {
	block   bool
	blockMS int64
	count   int64
	keys    [][]byte
	ids     [][]byte
}

func parseXread(args [][]byte, inScript bool) (xreadArgs, string) {
	var a xreadArgs
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		more := len(args) - i - 1
		switch o := args[i]; {
		case argIs(o, "block") && more > 0:
			if inScript {
				// Redis refuses it as it reads the option, naming the
				// command as the script wrote it.
				return a, fmt.Sprintf(msgStreamBlockInScript, args[0])
			}
			i++
			n, ok := model.String2ll(args[i])
			if !ok {
				return a, MsgTimeoutNotInt
			}
			if n < 0 {
				return a, MsgNegativeTimeout
			}
			a.block, a.blockMS = true, n
		case argIs(o, "count") && more > 0:
			i++
			n, ok := model.String2ll(args[i])
			if !ok {
				return a, MsgNotInt
			}
			a.count = max(n, 0)
		case argIs(o, "streams") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				return a, msgStreamUnbalanced
			}
		case argIs(o, "group") && more >= 2:
			return a, msgStreamGroupOpt
		case argIs(o, "noack"):
			return a, msgStreamNoackOpt
		default:
			return a, MsgSyntax
		}
	}
	if streamsAt == 0 {
		return a, MsgSyntax
	}
	n := (len(args) - streamsAt) / 2
	a.keys, a.ids = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return a, ""
}

// xreadResult is what one XREAD attempt found for one key.
type xreadResult struct {
	key     []byte
	entries []streamEntry
}

func cmdXread(c *Ctx) {
	a, msg := parseXread(c.Args, c.InScript)
	if msg != "" {
		c.W.Error(msg)
		return
	}
	// The ids each key must pass, resolved ("$") by the first attempt; seen
	// is each key's last id as the latest attempt saw it (see xreadReady).
	var (
		mu   sync.Mutex
		gt   []streamID
		seen []streamID
		out  []xreadResult
	)
	attempt := func(ac *Ctx, quiet bool) (bool, error) {
		count := a.count
		if quiet && count == 0 {
			count = xreadBlockedCount
		}
		return true, model.RetryConflicts(ac, func(int) error {
			out = nil
			cls, err := model.OpenMany(ac, a.keys, model.TypeStream)
			if err != nil {
				return err
			}
			sts := make([]*streamState, len(cls))
			resolve := gt == nil
			if resolve {
				gt = make([]streamID, len(cls))
				seen = make([]streamID, len(cls))
			}
			for i, cl := range cls {
				if cl.WrongType {
					if quiet {
						continue // as Redis, a blocked client ignores it
					}
					return model.ErrWrongType
				}
				if sts[i], err = streamStateOf(cl); err != nil {
					return err
				}
				if resolve {
					switch id := a.ids[i]; {
					case len(id) == 1 && id[0] == '$':
						gt[i] = sts[i].last
					case len(id) == 1 && id[0] == '>':
						return redisError(msgStreamGTID)
					default:
						v, _, ok := parseStreamID(id, 0, true, false)
						if !ok {
							return redisError(msgStreamBadID)
						}
						gt[i] = v
					}
				}
			}
			mu.Lock()
			for i, st := range sts {
				if st != nil {
					seen[i] = st.last
				}
			}
			mu.Unlock()
			for i, cl := range cls {
				if sts[i] == nil || !cl.Exists() {
					continue
				}
				from, ok := gt[i].incr()
				if !ok {
					continue
				}
				var es []streamEntry
				err := sts[i].rangeRead(cl, from, maxStreamID, false, int(count), func(e streamEntry) bool {
					es = append(es, e)
					return count == 0 || int64(len(es)) < count
				})
				if err != nil {
					return err
				}
				if len(es) > 0 {
					out = append(out, xreadResult{key: a.keys[i], entries: es})
				}
			}
			return model.ValidateRead(ac, cls...)
		})
	}
	_, err := attempt(c, false)
	if err == nil && len(out) == 0 && a.block && !c.InTx {
		ready := func(k dbKey, it dynastore.Item, nowMS int64) bool {
			mu.Lock()
			defer mu.Unlock()
			return xreadReady(a.keys, gt, seen, k, it, nowMS)
		}
		_, err = blockWith(c, a.keys, a.blockMS, ready, func(quiet bool) (bool, error) {
			if !quiet {
				return false, nil // the first attempt above found nothing
			}
			ac, live := blockAttempt(c)
			if !live {
				return false, nil
			}
			_, err := attempt(ac, true)
			return len(out) > 0, err
		})
	}
	if err != nil {
		c.Fail(err)
		return
	}
	if len(out) == 0 {
		c.W.NilArray()
		return
	}
	if c.W.Proto() == 3 {
		c.W.Map(len(out))
	} else {
		c.W.Array(len(out))
	}
	for _, r := range out {
		if c.W.Proto() != 3 {
			c.W.Array(2)
		}
		c.W.Bulk(r.key)
		writeEntries(c, r.entries)
	}
}

// xreadReady tells the blocked-client poller whether the key item it read
// for k may hold entries for a blocked XREAD: a live stream whose last id
// passed the client's id and moved since the client's latest attempt saw
// it (entries up to the id seen were there to read then, and none can be
// added below it).
func xreadReady(keys [][]byte, gt, seen []streamID, k dbKey, it dynastore.Item, nowMS int64) bool {
	ks, err := model.DecodeKey(it, nowMS)
	if err != nil || !ks.Live || ks.Type != model.TypeStream {
		return false
	}
	last := idAttr(it.Get(attrStreamLast))
	for i, key := range keys {
		if string(key) == k.key && i < len(gt) && last.cmp(gt[i]) > 0 && last != seen[i] {
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

// startStreamCleanup deletes, in the background, the members of key's
// large stream below its floor.
func startStreamCleanup(c *Ctx, key []byte) {
	srv, db, key := c.Srv, c.DB(), bytes.Clone(key)
	delay := time.Duration(0)
	if c.Store != c.Srv.Store {
		delay = streamCleanupDelay
	}
	go func() {
		time.Sleep(delay)
		ctx := dynastore.WithLabel(context.Background(), StreamCleanupLabel)
		_ = streamCleanup(ctx, srv, db, key)
	}()
}

// streamCleanup deletes the members of key's large stream below its
// committed floor, a transaction at a time, each checking that the key
// item still holds the generation and at least that floor.
func streamCleanup(ctx context.Context, srv *Server, db int, key []byte) error {
	st := srv.Store
	for {
		it, err := st.Get(ctx, model.ItemKey(db, key))
		if err != nil {
			return err
		}
		ks, err := model.DecodeKey(it, srv.Now().UnixMilli())
		if err != nil || !ks.Live || ks.Type != model.TypeStream {
			return err
		}
		gen, _ := it.Get(model.AttrGen).(dynastore.B)
		floor, _ := it.Get(attrStreamFloor).(dynastore.B)
		if gen == nil || len(floor) != 16 {
			return nil
		}
		page, err := st.Query(ctx, dynastore.Query{PK: model.MembersPK(gen), Op: dynastore.SKLT, A: model.MemberSK(floor), Limit: model.MaxTxMembers})
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
			Key: model.ItemKey(db, key),
			Cond: dynastore.And{
				dynastore.Compare{Attr: model.AttrGen, Op: dynastore.OpEQ, Val: gen},
				dynastore.Compare{Attr: attrStreamFloor, Op: dynastore.OpGE, Val: floor},
			},
		})
		if err := st.Transact(ctx, acts); err != nil {
			if _, changed := dynastore.ConditionFailedIn(err); changed || model.Retryable(err) {
				return nil // someone else changed it: a later cleanup goes on
			}
			return err
		}
	}
}
