package model

// Stream consumer groups (XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM,
// XAUTOCLAIM, XINFO GROUPS|CONSUMERS|STREAM FULL, XSETID; the commands are
// in commands/streams_groups.go), as Redis 7.0.15's t_stream.c keeps them.
//
// Layout. A stream's groups and their consumers live in the stream's key
// item, in one attribute (xg, encoded by encodeGroups), next to the
// stream's own attributes (stream.go), with each group's and consumer's
// pending count and, while they are few, the pending entries; more are
// items of their own (stream_pel.go). So a group command is the read of
// the key item (or its cached copy), the reads of the pending entries it
// needs, and one write of the key item guarded by its ver joined by the
// writes of those entries: every instance sees the same groups, they
// survive any crash of an instance, and a DEL or an overwrite of the key
// drops them with it, as Redis does. The groups and consumers of one
// stream are bounded by the item: past MaxStreamGroupsBytes a command that
// would grow them fails with ErrStreamGroupsTooBig instead of being cut
// short.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/redamo/redamo/dynastore"
)

// attrStreamGroups is the key item attribute holding a stream's groups.
const attrStreamGroups = "xg"

// MaxStreamGroupsBytes bounds the encoded groups of one stream, so the key
// item (with an inline stream's entries) stays below DynamoDB's 400 KB.
const MaxStreamGroupsBytes = 300 << 10

// Errors of the group operations; the commands reply with Redis's text,
// which names the key and the group.
var (
	ErrNoGroup            = errors.New("model: no such key or consumer group")
	ErrBusyGroup          = errors.New("model: consumer group name already exists")
	ErrGroupNeedsKey      = errors.New("model: XGROUP requires the key to exist")
	ErrGroupDollarID      = errors.New("model: the $ ID in XREADGROUP")
	ErrGroupKeyGone       = errors.New("model: the stream key no longer exists")
	ErrGroupGone          = errors.New("model: the consumer group this client was blocked on no longer exists")
	ErrXSetIDSmall        = errors.New("model: XSETID ID smaller than the top item")
	ErrXSetIDAdded        = errors.New("model: XSETID entries_added smaller than the length")
	ErrStreamGroupsTooBig = errors.New("model: the stream's consumer groups outgrow its item")
)

// InvalidEntriesRead is a group's entries-read when it is not known
// (SCG_INVALID_ENTRIES_READ).
const InvalidEntriesRead = -1

// streamNACK is a pending entry: delivered, not yet acknowledged.
type streamNACK struct {
	id        StreamID
	consumer  string
	delivered int64 // Unix ms of the last delivery
	count     int64 // deliveries
}

type streamConsumer struct {
	name    string
	seen    int64 // Unix ms it was last seen
	pending int64
}

// streamGroup is a consumer group: its consumers sorted by name, how many
// entries are pending, and what this operation knows of them (read or
// changed; stream_pel.go).
type streamGroup struct {
	name        string
	last        StreamID
	entriesRead int64
	consumers   []*streamConsumer
	gid         []byte
	pending     int64
	top         StreamID
	// known holds the pending entries read or changed (nil: known to be
	// absent); dirty the ids whose pages the commit writes.
	known map[StreamID]*streamNACK
	dirty map[StreamID]bool
	// pages are the stored pages read (stream_pel.go), by the id their
	// key holds: the ids each held as read; pageOf the page each id
	// located so far belongs to; below the page just below a page, where
	// a read showed it.
	pages  map[StreamID][]StreamID
	pageOf map[StreamID]StreamID
	below  map[StreamID]StreamID
	// fresh are ids found absent because they pass every id ever
	// pending: above every page.
	fresh []StreamID
}

// ---- encoding ---------------------------------------------------------------------------

// encodeGroups encodes groups: a version byte (2), then per group its name,
// last id, entries-read+1, its incarnation id, pending count and top id,
// its consumers (name, seen, pending count), and, when inline, its pending
// entries (id, consumer index, delivery time, count; none when they are
// items); strings as a uvarint length and bytes, numbers as uvarints.
// Version 1 had no incarnation, counts nor top, and always the entries;
// decodeGroups still reads it.
func encodeGroups(groups []*streamGroup, inline bool) dynastore.B {
	out := []byte{2}
	str := func(s []byte) {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	num := func(v uint64) { out = binary.AppendUvarint(out, v) }
	num(uint64(len(groups)))
	for _, g := range groups {
		str([]byte(g.name))
		num(g.last.Ms)
		num(g.last.Seq)
		num(uint64(g.entriesRead + 1))
		str(g.gid)
		num(uint64(g.pending))
		num(g.top.Ms)
		num(g.top.Seq)
		num(uint64(len(g.consumers)))
		idx := make(map[string]uint64, len(g.consumers))
		for i, cs := range g.consumers {
			str([]byte(cs.name))
			num(uint64(cs.seen))
			num(uint64(cs.pending))
			idx[cs.name] = uint64(i)
		}
		var pel []*streamNACK
		if inline {
			pel = g.inlineEntries()
		}
		num(uint64(len(pel)))
		for _, n := range pel {
			num(n.id.Ms)
			num(n.id.Seq)
			num(idx[n.consumer])
			num(uint64(n.delivered))
			num(uint64(n.count))
		}
	}
	return out
}

// inlineEntries are the group's pending entries by id, all known when
// they are inline.
func (g *streamGroup) inlineEntries() []*streamNACK {
	var pel []*streamNACK
	for _, n := range g.known {
		if n != nil {
			pel = append(pel, n)
		}
	}
	slices.SortFunc(pel, func(a, b *streamNACK) int { return a.id.Cmp(b.id) })
	return pel
}

// decodeGroups decodes encodeGroups.
func decodeGroups(b []byte) ([]*streamGroup, error) {
	bad := fmt.Errorf("model: stream groups: %w", dynastore.ErrInvalid)
	if len(b) == 0 {
		return nil, nil
	}
	v := b[0]
	if v != 1 && v != 2 {
		return nil, bad
	}
	b = b[1:]
	var failed bool
	num := func() uint64 {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			failed = true
			return 0
		}
		b = b[k:]
		return v
	}
	str := func() string {
		n := num()
		if failed || uint64(len(b)) < n {
			failed = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	ng := num()
	var groups []*streamGroup
	for i := uint64(0); i < ng && !failed; i++ {
		g := &streamGroup{name: str(), known: map[StreamID]*streamNACK{}}
		g.last = StreamID{num(), num()}
		g.entriesRead = int64(num()) - 1
		if v == 2 {
			g.gid = []byte(str())
			g.pending = int64(num())
			g.top = StreamID{num(), num()}
		} else {
			g.gid = newGroupID()
		}
		nc := num()
		for j := uint64(0); j < nc && !failed; j++ {
			cs := &streamConsumer{name: str(), seen: int64(num())}
			if v == 2 {
				cs.pending = int64(num())
			}
			g.consumers = append(g.consumers, cs)
		}
		np := num()
		for j := uint64(0); j < np && !failed; j++ {
			n := &streamNACK{id: StreamID{num(), num()}}
			ci := num()
			if ci >= uint64(len(g.consumers)) {
				return nil, bad
			}
			n.consumer = g.consumers[ci].name
			n.delivered, n.count = int64(num()), int64(num())
			if v == 1 {
				g.pelSet(n, n.consumer) // counts it
			} else {
				g.known[n.id] = n
			}
		}
		g.dirty = nil
		groups = append(groups, g)
	}
	if failed {
		return nil, bad
	}
	return groups, nil
}

// loadGroups decodes st's groups (once); a write then restages them as
// changed (stage).
func (st *streamState) loadGroups() error {
	if st.groupsLoaded {
		return nil
	}
	groups, err := decodeGroups(st.groupsRaw)
	if err != nil {
		return err
	}
	st.groups, st.groupsLoaded = groups, true
	return nil
}

// stageGroups is the groups attribute stage writes: the raw one as read
// unless a group operation decoded them.
func (st *streamState) stageGroups(cl *Collection) {
	switch {
	case st.groupsLoaded:
		cl.SetKeyAttr(attrStreamGroups, st.encodeGroups())
	case st.groupsRaw != nil:
		cl.SetKeyAttr(attrStreamGroups, st.groupsRaw)
	}
	switch {
	case st.pelGen != nil:
		cl.SetKeyAttr(attrStreamPEL, dynastore.B(st.pelGen))
	case st.genDropped:
		// Empty: the generation is the sweeper's.
		cl.SetKeyAttr(attrStreamPEL, dynastore.B{})
	}
}

// ---- groups, consumers, pending entries -------------------------------------------------------

func (st *streamState) group(name []byte) *streamGroup {
	i := sort.Search(len(st.groups), func(i int) bool { return st.groups[i].name >= string(name) })
	if i < len(st.groups) && st.groups[i].name == string(name) {
		return st.groups[i]
	}
	return nil
}

func (st *streamState) addGroup(g *streamGroup) bool {
	i := sort.Search(len(st.groups), func(i int) bool { return st.groups[i].name >= g.name })
	if i < len(st.groups) && st.groups[i].name == g.name {
		return false
	}
	st.groups = append(st.groups[:i], append([]*streamGroup{g}, st.groups[i:]...)...)
	return true
}

func (g *streamGroup) consumerAt(name string) (int, bool) {
	i := sort.Search(len(g.consumers), func(i int) bool { return g.consumers[i].name >= name })
	return i, i < len(g.consumers) && g.consumers[i].name == name
}

// lookupConsumer is streamLookupConsumer: refresh sets its seen time.
func (g *streamGroup) lookupConsumer(name []byte, refresh bool, nowMS int64) *streamConsumer {
	i, ok := g.consumerAt(string(name))
	if !ok {
		return nil
	}
	if refresh {
		g.consumers[i].seen = nowMS
	}
	return g.consumers[i]
}

// consumer is the consumer name, created if missing (created true), seen
// now either way (streamLookupConsumer, then streamCreateConsumer).
func (g *streamGroup) consumer(name []byte, nowMS int64) (cs *streamConsumer, created bool) {
	i, ok := g.consumerAt(string(name))
	if ok {
		g.consumers[i].seen = nowMS
		return g.consumers[i], false
	}
	cs = &streamConsumer{name: string(name), seen: nowMS}
	g.consumers = append(g.consumers[:i], append([]*streamConsumer{cs}, g.consumers[i:]...)...)
	return cs, true
}

// ---- entries-read and lag (streamEstimateDistanceFromFirstEverEntry) ---------------------------

// streamEdges are a stream's first and last entry ids as an operation
// needs them, each read once, and only when needed (a large stream's
// costs a query).
type streamEdges struct {
	c                   Scope
	cl                  *Collection
	st                  *streamState
	firstRead, lastRead bool
	first, last         StreamID // zero when empty
}

// edge reads the first (or last) entry's id.
func (e *streamEdges) edge(rev bool) (StreamID, error) {
	var id StreamID
	err := e.st.rangeIDs(e.cl, StreamID{}, MaxStreamID, rev, 1, func(x StreamID) bool {
		id = x
		return false
	})
	return id, err
}

func (e *streamEdges) getFirst() (StreamID, error) {
	if !e.firstRead {
		id, err := e.edge(false)
		if err != nil {
			return id, err
		}
		e.first, e.firstRead = id, true
	}
	return e.first, nil
}

func (e *streamEdges) getLast() (StreamID, error) {
	if !e.lastRead {
		id, err := e.edge(true)
		if err != nil {
			return id, err
		}
		e.last, e.lastRead = id, true
	}
	return e.last, nil
}

// needsFirst reports whether hasTombstones or estimate may need the first
// id.
func (st *streamState) needsFirst() bool {
	return st.length() > 0 && st.added != 0
}

// hasTombstones is streamRangeHasTombstones from start to the end.
func (st *streamState) hasTombstones(first, start StreamID) bool {
	if st.length() == 0 || st.maxDel == (StreamID{}) || first.Cmp(st.maxDel) > 0 {
		return false
	}
	return start.Cmp(st.maxDel) <= 0
}

// estimate is streamEstimateDistanceFromFirstEverEntry.
func (st *streamState) estimate(first, id StreamID) int64 {
	if st.added == 0 {
		return 0
	}
	length := st.length()
	if length == 0 && id.Cmp(st.last) < 1 {
		return st.added
	}
	switch id.Cmp(st.last) {
	case 0:
		return st.added
	case 1:
		return InvalidEntriesRead
	}
	if st.maxDel == (StreamID{}) || st.maxDel.Cmp(first) < 0 {
		switch id.Cmp(first) {
		case -1:
			return st.added - length
		case 0:
			return st.added - length + 1
		}
	}
	return InvalidEntriesRead
}

// lag is streamReplyWithCGLag's value (ok false: a null).
func (st *streamState) lag(first StreamID, g *streamGroup) (int64, bool) {
	switch {
	case st.added == 0:
		return 0, true
	case g.entriesRead != InvalidEntriesRead && !st.hasTombstones(first, g.last):
		return st.added - g.entriesRead, true
	}
	if n := st.estimate(first, g.last); n != InvalidEntriesRead {
		return st.added - n, true
	}
	return 0, false
}

// deliver advances g past id as streamReplyWithRange does for an entry it
// serves.
func (st *streamState) deliver(first StreamID, g *streamGroup, id StreamID) {
	if id.Cmp(g.last) <= 0 {
		return
	}
	if g.entriesRead != InvalidEntriesRead && !st.hasTombstones(first, id) {
		g.entriesRead++
	} else if st.added != 0 {
		g.entriesRead = st.estimate(first, id)
	}
	g.last = id
}

// ---- running a group operation -------------------------------------------------------------

// groupWrite runs fn on key's stream with its groups loaded, and commits
// when fn reports a change. It starts from the item cache; an outcome
// without a write is decided again on the stored item.
func groupWrite(c Scope, key []byte, fn func(cl *Collection, st *streamState) (bool, error)) error {
	return RetryConflicts(c, func(try int) error {
		cl, st, fromCache, err := openStream(c, key, try, true)
		if err != nil {
			return err
		}
		if err := st.loadGroups(); err != nil {
			return err
		}
		changed, err := fn(cl, st)
		if err != nil || !changed {
			if fromCache {
				return ErrConflict
			}
			return err
		}
		return commitGroups(c, cl, st)
	})
}

// commitGroups commits a change of st's groups (and whatever else is
// staged), refusing groups past MaxStreamGroupsBytes.
func commitGroups(c Scope, cl *Collection, st *streamState) error {
	if err := st.stagePEL(c, cl); err != nil {
		return err
	}
	if len(st.encodeGroups()) > MaxStreamGroupsBytes {
		return ErrStreamGroupsTooBig
	}
	var sc *StreamCleanup
	return commitStream(c, cl, st, &sc)
}

// groupRead runs fn on key's stream with its groups loaded, read-only
// (exists false: no such key).
func groupRead(c Scope, key []byte, fn func(cl *Collection, st *streamState) error) error {
	return Read(c, key, TypeStream, func(cl *Collection) error {
		if !cl.Exists() {
			return fn(cl, nil)
		}
		st, err := streamStateOf(cl)
		if err != nil {
			return err
		}
		if err := st.loadGroups(); err != nil {
			return err
		}
		return fn(cl, st)
	})
}

// ---- XGROUP ------------------------------------------------------------------------------------

// XGroupArgs is a parsed XGROUP CREATE or SETID: the id argument ("$" or
// an id, parsed once the key is known, as Redis does), MKSTREAM and
// ENTRIESREAD.
type XGroupArgs struct {
	ID          []byte
	MkStream    bool
	EntriesRead int64
}

// XGroupCreate is XGROUP CREATE: ErrGroupNeedsKey, ErrStreamBadID,
// ErrBusyGroup.
func XGroupCreate(c Scope, key, group []byte, a XGroupArgs) error {
	return groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
		if !cl.Exists() && !a.MkStream {
			return false, ErrGroupNeedsKey
		}
		var id StreamID
		if !bytes.Equal(a.ID, []byte("$")) {
			var ok bool
			if id, _, ok = ParseStreamID(a.ID, 0, true, false); !ok {
				return false, ErrStreamBadID
			}
		} else {
			id = st.last
		}
		g := &streamGroup{name: string(group), last: id, entriesRead: a.EntriesRead, gid: newGroupID(), known: map[StreamID]*streamNACK{}}
		if !st.addGroup(g) {
			return false, ErrBusyGroup
		}
		return true, nil
	})
}

// groupOf is the named group of an existing stream (ErrGroupNeedsKey,
// ErrNoGroup).
func groupOf(cl *Collection, st *streamState, group []byte) (*streamGroup, error) {
	if !cl.Exists() {
		return nil, ErrGroupNeedsKey
	}
	g := st.group(group)
	if g == nil {
		return nil, ErrNoGroup
	}
	return g, nil
}

// XGroupSetID is XGROUP SETID.
func XGroupSetID(c Scope, key, group []byte, a XGroupArgs) error {
	return groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
		g, err := groupOf(cl, st, group)
		if err != nil {
			return false, err
		}
		id := st.last
		if !bytes.Equal(a.ID, []byte("$")) {
			var ok bool
			if id, _, ok = ParseStreamID(a.ID, 0, false, false); !ok {
				return false, ErrStreamBadID
			}
		}
		g.last, g.entriesRead = id, a.EntriesRead
		return true, nil
	})
}

// XGroupDestroy is XGROUP DESTROY: whether the group existed.
func XGroupDestroy(c Scope, key, group []byte) (destroyed bool, err error) {
	var gone *streamGroup
	var at *streamState
	err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
		destroyed, gone, at = false, nil, st
		if !cl.Exists() {
			return false, ErrGroupNeedsKey
		}
		for i, g := range st.groups {
			if g.name == string(group) {
				st.groups = append(st.groups[:i], st.groups[i+1:]...)
				destroyed, gone = true, g
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil && gone != nil {
		at.dropGroupEntries(c, gone)
	}
	return destroyed, err
}

// XGroupCreateConsumer is XGROUP CREATECONSUMER: whether it created it.
func XGroupCreateConsumer(c Scope, key, group, consumer []byte) (created bool, err error) {
	err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
		created = false
		g, err := groupOf(cl, st, group)
		if err != nil {
			return false, err
		}
		if _, ok := g.consumerAt(string(consumer)); ok {
			return false, nil
		}
		_, created = g.consumer(consumer, c.NowMS())
		return true, nil
	})
	return created, err
}

// XGroupDelConsumer is XGROUP DELCONSUMER: how many entries the consumer
// had pending, and whether it existed.
// Its entries go pelTxBudget per commit, the consumer with the last.
func XGroupDelConsumer(c Scope, key, group, consumer []byte) (pending int64, deleted bool, err error) {
	first := true
	from := StreamID{}
	for {
		done := false
		err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
			g, err := groupOf(cl, st, group)
			if err != nil {
				return false, err
			}
			i, ok := g.consumerAt(string(consumer))
			if !ok {
				done = true
				return false, nil
			}
			if first {
				pending = g.consumers[i].pending
			}
			var ids []StreamID
			err = st.pelScan(c, g, from, MaxStreamID, false, 0, func(n *streamNACK) bool {
				if n.consumer == string(consumer) {
					ids = append(ids, n.id)
				}
				return len(ids) < pelTxBudget
			})
			if err != nil {
				return false, err
			}
			for _, id := range ids {
				g.pelRemove(id)
			}
			if len(ids) < pelTxBudget || g.consumers[i].pending == 0 {
				g.consumers = append(g.consumers[:i], g.consumers[i+1:]...)
				done, deleted = true, true
			} else {
				from, _ = ids[len(ids)-1].Incr()
			}
			return true, nil
		})
		first = false
		if err != nil || done {
			return pending, deleted, err
		}
	}
}

// ---- XSETID ------------------------------------------------------------------------------------

// XSetID is XSETID (entriesAdded -1: not given; maxDel zero: not given):
// ErrNoSuchKey, ErrXSetIDSmall, ErrXSetIDAdded.
func XSetID(c Scope, key []byte, id StreamID, entriesAdded int64, maxDel StreamID) error {
	return groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
		if !cl.Exists() {
			return false, ErrNoSuchKey
		}
		if length := st.length(); length > 0 {
			last, err := (&streamEdges{c: c, cl: cl, st: st}).getLast()
			if err != nil {
				return false, err
			}
			if id.Cmp(last) < 0 {
				return false, ErrXSetIDSmall
			}
			if entriesAdded != -1 && length > entriesAdded {
				return false, ErrXSetIDAdded
			}
		}
		st.last = id
		if entriesAdded != -1 {
			st.added = entriesAdded
		}
		if maxDel != (StreamID{}) {
			st.maxDel = maxDel
		}
		return true, nil
	})
}

// ---- XREADGROUP --------------------------------------------------------------------------------

// XReadGroupState is one XREADGROUP across its attempts (a blocked one
// retries): its keys and ids, group, consumer and NOACK. FailedKey is the
// key an error names.
type XReadGroupState struct {
	Keys, IDs         [][]byte
	Group, Consumer   []byte
	NoAck             bool
	FailedKey         []byte
	history           []bool
	from              []StreamID
	CreatedConsumerAt [][]byte
}

// XReadGroup is one attempt of XREADGROUP over s's keys: the entries
// served, at most count per key (0: all). The first attempt (blocked
// false) checks every key and id as Redis does before serving (ErrNoGroup,
// ErrGroupDollarID, ErrStreamBadID, ErrWrongType); a blocked client's
// attempt serves the first key whose group has new entries, and fails with
// ErrGroupKeyGone or ErrGroupGone when its stream or group went away.
// s.CreatedConsumerAt lists the keys whose group it added the consumer to.
//
// One commit changes at most pelTxBudget pending entries, so a read of one
// key serves a larger count in steps, each committed (an instance that
// dies between them leaves the entries served so far pending, as a client
// that never reads its reply does); a read of several keys serves at most
// its share of them from each.
func XReadGroup(c Scope, s *XReadGroupState, count int64, blocked bool) ([]XReadResult, error) {
	step := max(int64(pelTxBudget/len(s.Keys)), 1)
	if count > 0 && count < step {
		step = count
	}
	var out []XReadResult
	var created [][]byte
	for {
		var got []XReadResult
		err := RetryConflicts(c, func(try int) error {
			fromCache := false
			err := xreadGroupAttempt(c, s, step, blocked, try, &got, &fromCache)
			if err != nil && fromCache {
				// An outcome without a write must not rest on the cache.
				return ErrConflict
			}
			return err
		})
		created = append(created, s.CreatedConsumerAt...)
		s.CreatedConsumerAt = created
		if err != nil {
			if out != nil {
				// Served and committed before: the reply stands.
				return out, nil
			}
			return got, err
		}
		if out == nil {
			out = got
		} else if len(got) == 1 {
			out[0].Entries = append(out[0].Entries, got[0].Entries...)
		}
		if len(s.Keys) != 1 || len(got) != 1 || int64(len(got[0].Entries)) < step {
			return out, nil
		}
		served := int64(len(out[0].Entries))
		if count > 0 && served >= count {
			return out, nil
		}
		if count > 0 {
			step = min(step, count-served)
		}
		if s.history[0] {
			s.from[0], _ = got[0].Entries[len(got[0].Entries)-1].ID.Incr()
		}
	}
}

// xreadGroupAttempt is one try of XReadGroup; *fromCache tells whether it
// started from the item cache.
func xreadGroupAttempt(c Scope, s *XReadGroupState, count int64, blocked bool, try int, outp *[]XReadResult, fromCache *bool) error {
	var out []XReadResult
	defer func() { *outp = out }()
	s.CreatedConsumerAt, s.FailedKey = nil, nil
	var cls []*Collection
	var sts []*streamState
	var uniq []*Collection // cls without repeats
	if len(s.Keys) == 1 {
		cl, st, cached, err := openStream(c, s.Keys[0], try, true)
		if err != nil {
			if errors.Is(err, ErrWrongType) && blocked {
				return ErrGroupKeyGone // overwritten: as deleted, for Redis
			}
			return err
		}
		cls, sts, *fromCache = []*Collection{cl}, []*streamState{st}, cached
		uniq = cls
	} else {
		// A key named twice is one collection, served twice in turn (as
		// Redis does) and written once.
		at := map[string]int{}
		var keys [][]byte
		for _, k := range s.Keys {
			if _, ok := at[string(k)]; !ok {
				at[string(k)] = len(keys)
				keys = append(keys, k)
			}
		}
		opened, err := OpenMany(c, keys, TypeStream)
		if err != nil {
			return err
		}
		states := make([]*streamState, len(opened))
		for i, cl := range opened {
			if cl.WrongType {
				continue
			}
			if states[i], err = streamStateOf(cl); err != nil {
				return err
			}
		}
		uniq = opened
		cls, sts = make([]*Collection, len(s.Keys)), make([]*streamState, len(s.Keys))
		for i, k := range s.Keys {
			cls[i], sts[i] = opened[at[string(k)]], states[at[string(k)]]
		}
	}
	groups := make([]*streamGroup, len(cls))
	for i, cl := range cls {
		if sts[i] == nil {
			if blocked {
				return ErrGroupKeyGone
			}
			return ErrWrongType
		}
		if !cl.Exists() {
			if blocked {
				return ErrGroupKeyGone
			}
			s.FailedKey = s.Keys[i]
			return ErrNoGroup
		}
		if err := sts[i].loadGroups(); err != nil {
			return err
		}
		if groups[i] = sts[i].group(s.Group); groups[i] == nil {
			if blocked {
				return ErrGroupGone
			}
			s.FailedKey = s.Keys[i]
			return ErrNoGroup
		}
		if blocked || s.history != nil {
			continue
		}
		switch id := s.IDs[i]; {
		case bytes.Equal(id, []byte("$")):
			return ErrGroupDollarID
		case bytes.Equal(id, []byte(">")):
		default:
			if _, _, ok := ParseStreamID(id, 0, true, false); !ok {
				return ErrStreamBadID
			}
		}
	}
	if s.history == nil {
		s.history, s.from = make([]bool, len(cls)), make([]StreamID, len(cls))
		for i, id := range s.IDs {
			if !bytes.Equal(id, []byte(">")) {
				gt, _, _ := ParseStreamID(id, 0, true, false)
				s.history[i] = true
				s.from[i], _ = gt.Incr()
			}
		}
	}
	now := c.NowMS()
	var writes []*Collection
	for i, cl := range cls {
		g, st := groups[i], sts[i]
		if g == nil {
			continue
		}
		edges := &streamEdges{c: c, cl: cl, st: st}
		var es []StreamEntry
		served := false
		switch {
		case s.history[i]:
			if blocked {
				continue
			}
			served = true
			cs, created := g.consumer(s.Consumer, now)
			if created {
				s.CreatedConsumerAt = append(s.CreatedConsumerAt, s.Keys[i])
			}
			var err error
			if es, err = historyOf(c, cl, st, g, cs.name, s.from[i], count, now); err != nil {
				return err
			}
		default:
			if blocked && st.last.Cmp(g.last) <= 0 {
				continue
			}
			from, ok := g.last.Incr()
			if ok {
				err := st.rangeRead(cl, from, MaxStreamID, false, int(count), func(e StreamEntry) bool {
					es = append(es, e)
					return count == 0 || int64(len(es)) < count
				})
				if err != nil {
					return err
				}
			}
			if len(es) == 0 && !blocked {
				continue
			}
			served = true
			cs, created := g.consumer(s.Consumer, now)
			if created {
				s.CreatedConsumerAt = append(s.CreatedConsumerAt, s.Keys[i])
			}
			if len(es) > 0 && (g.last == (StreamID{}) || from.Cmp(st.floor) <= 0) {
				// Nothing below from: the first entry served is the
				// stream's first.
				edges.first, edges.firstRead = es[0].ID, true
			}
			var first StreamID
			if st.needsFirst() && !(g.entriesRead != InvalidEntriesRead && st.maxDel == (StreamID{})) {
				var err error
				if first, err = edges.getFirst(); err != nil {
					return err
				}
			}
			if !s.NoAck {
				ids := make([]StreamID, len(es))
				for j, e := range es {
					ids[j] = e.ID
				}
				if err := st.pelFetch(c, g, ids); err != nil {
					return err
				}
			}
			for _, e := range es {
				st.deliver(first, g, e.ID)
				if s.NoAck {
					continue
				}
				n := g.known[e.ID]
				if n == nil {
					n = &streamNACK{id: e.ID}
				}
				n.delivered, n.count = now, 1
				g.pelSet(n, cs.name)
			}
		}
		if served {
			out = append(out, XReadResult{Key: s.Keys[i], Entries: es})
			if !contains(writes, cl) {
				writes = append(writes, cl)
			}
			if blocked {
				break
			}
		}
	}
	if len(writes) == 0 {
		if *fromCache {
			return ErrConflict
		}
		return ValidateRead(c, uniq...)
	}
	staged := map[*Collection]bool{}
	for i, cl := range cls {
		if sts[i] == nil || !contains(writes, cl) || staged[cl] {
			continue
		}
		staged[cl] = true
		if err := sts[i].stagePEL(c, cl); err != nil {
			return err
		}
		if len(sts[i].encodeGroups()) > MaxStreamGroupsBytes {
			return ErrStreamGroupsTooBig
		}
		sts[i].stage(cl)
	}
	if err := Commit(c, writes, uniq); err != nil {
		*fromCache = false // a failed write decides nothing
		return err
	}
	return nil
}

func contains(cls []*Collection, cl *Collection) bool {
	for _, x := range cls {
		if x == cl {
			return true
		}
	}
	return false
}

// historyOf is streamReplyWithRangeFromConsumerPEL: the consumer's pending
// entries from from on, at most count (0: all), each delivered again; one
// no longer in the stream comes back Gone.
func historyOf(c Scope, cl *Collection, st *streamState, g *streamGroup, consumer string, from StreamID, count int64, now int64) ([]StreamEntry, error) {
	var nacks []*streamNACK
	if cs := g.consumerNamed(consumer); cs != nil && cs.pending > 0 {
		err := st.pelScan(c, g, from, MaxStreamID, false, 0, func(n *streamNACK) bool {
			if n.consumer == consumer {
				nacks = append(nacks, n)
			}
			return count == 0 || int64(len(nacks)) < count
		})
		if err != nil {
			return nil, err
		}
	}
	ids := make([]StreamID, len(nacks))
	for j, n := range nacks {
		ids[j] = n.id
	}
	es, err := st.entriesOf(cl, ids)
	if err != nil {
		return nil, err
	}
	for j, n := range nacks {
		if !es[j].Gone {
			n.delivered, n.count = now, n.count+1
			g.touch(n.id)
		}
	}
	return es, nil
}

// entriesOf reads the entries with these ids; one not in the stream is
// Gone.
func (st *streamState) entriesOf(cl *Collection, ids []StreamID) ([]StreamEntry, error) {
	members := make([][]byte, len(ids))
	for i, id := range ids {
		members[i] = id.member()
	}
	vals, present, err := cl.Lookup(members)
	if err != nil {
		return nil, err
	}
	out := make([]StreamEntry, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if !present[i] || !st.live(id) {
			out[i].Gone = true
			continue
		}
		if out[i].Fields, err = entryFields(cl.c, vals[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Ready tells the blocked-client poller whether the key item it read for
// key may let the blocked XREADGROUP go on: its group has entries past its
// last delivered id, or the stream or the group is gone (an error then;
// a key overwritten by another type counts as gone, as in Redis).
func (s *XReadGroupState) Ready(key string, it Item, nowMS int64) bool {
	ks, err := DecodeKey(it, nowMS)
	if err != nil || !ks.Live || ks.Type != TypeStream {
		return err == nil // deleted or overwritten: the attempt fails
	}
	b, _ := it.Get(attrStreamGroups).(dynastore.B)
	groups, err := decodeGroups(b)
	if err != nil {
		return false
	}
	st := &streamState{groups: groups}
	g := st.group(s.Group)
	return g == nil || idAttr(it.Get(attrStreamLast)).Cmp(g.last) > 0
}

// ---- XACK ----------------------------------------------------------------------------------------

// XAck is XACK: parse (the ids, parsed once the group is found, as Redis
// does) gives the ids to acknowledge; how many were pending. No key or no
// group acknowledges none.
// More ids than one commit takes are acknowledged pelTxBudget at a time.
func XAck(c Scope, key, group []byte, parse func() ([]StreamID, error)) (acked int64, err error) {
	var ids []StreamID
	parsed := false
	for {
		var n int64
		err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
			n = 0
			if !cl.Exists() {
				return false, nil
			}
			g := st.group(group)
			if g == nil {
				return false, nil
			}
			if !parsed {
				var err error
				if ids, err = parse(); err != nil {
					return false, err
				}
				parsed = true
			}
			chunk := ids[:min(len(ids), pelTxBudget)]
			if err := st.pelFetch(c, g, chunk); err != nil {
				return false, err
			}
			for _, id := range chunk {
				if g.pelRemove(id) {
					n++
				}
			}
			return n > 0, nil
		})
		acked += n
		if err != nil || !parsed || len(ids) <= pelTxBudget {
			return acked, err
		}
		ids = ids[pelTxBudget:]
	}
}

// ---- XPENDING ------------------------------------------------------------------------------------

// XPendingSummary is XPENDING's short form.
type XPendingSummary struct {
	Count       int64
	First, Last StreamID
	Consumers   []XPendingConsumer
}

// XPendingConsumer is a consumer and how many entries it has pending.
type XPendingConsumer struct {
	Name    string
	Pending int64
}

// XPendingEntry is a pending entry as XPENDING's extended form and XINFO
// STREAM FULL report it.
type XPendingEntry struct {
	ID        StreamID
	Consumer  string
	Idle      int64 // ms since the last delivery
	Delivered int64 // Unix ms of the last delivery
	Count     int64
}

// XPendingRange is XPENDING's extended form: its options.
type XPendingRange struct {
	MinIdle    int64
	Start, End StreamID
	Count      int64
	Consumer   []byte // nil: every consumer
}

// XPending is XPENDING: the summary (r nil) or the entries r selects.
// ErrNoGroup.
func XPending(c Scope, key, group []byte, r *XPendingRange) (sum *XPendingSummary, entries []XPendingEntry, err error) {
	err = groupRead(c, key, func(cl *Collection, st *streamState) error {
		sum, entries = nil, nil
		if st == nil || st.group(group) == nil {
			return ErrNoGroup
		}
		g := st.group(group)
		now := c.NowMS()
		if r == nil {
			sum = &XPendingSummary{Count: g.pending}
			if g.pending > 0 {
				for _, rev := range []bool{false, true} {
					err := st.pelScan(c, g, StreamID{}, MaxStreamID, rev, 1, func(n *streamNACK) bool {
						if rev {
							sum.Last = n.id
						} else {
							sum.First = n.id
						}
						return false
					})
					if err != nil {
						return err
					}
				}
				for _, cs := range g.consumers {
					if cs.pending > 0 {
						sum.Consumers = append(sum.Consumers, XPendingConsumer{Name: cs.name, Pending: cs.pending})
					}
				}
			}
			return nil
		}
		entries = []XPendingEntry{}
		if r.Consumer != nil && g.lookupConsumer(r.Consumer, false, now) == nil {
			return nil
		}
		if r.Count <= 0 {
			return nil
		}
		page := 0
		if r.Consumer == nil && r.MinIdle == 0 {
			page = int(min(r.Count, 1000))
		}
		return st.pelScan(c, g, r.Start, r.End, false, page, func(n *streamNACK) bool {
			if r.Consumer != nil && n.consumer != string(r.Consumer) {
				return true
			}
			if r.MinIdle != 0 && now-n.delivered < r.MinIdle {
				return true
			}
			entries = append(entries, XPendingEntry{ID: n.id, Consumer: n.consumer, Idle: max(now-n.delivered, 0), Delivered: n.delivered, Count: n.count})
			return int64(len(entries)) < r.Count
		})
	})
	return sum, entries, err
}

// ---- XCLAIM, XAUTOCLAIM ------------------------------------------------------------------------

// XClaimArgs is a parsed XCLAIM after its key and group (parsed once the
// group is found, as Redis does).
type XClaimArgs struct {
	MinIdle    int64
	IDs        []StreamID
	Idle       int64 // with IdleGiven: the idle time to set
	IdleGiven  bool
	Time       int64 // with TimeGiven: the delivery time to set
	TimeGiven  bool
	RetryCount int64 // -1: not given
	Force      bool
	JustID     bool
	LastID     StreamID
}

// XClaim is XCLAIM: the entries claimed (only ids with JustID), whether it
// created the consumer. ErrNoGroup, or parse's error.
// More ids than one commit takes are claimed pelTxBudget at a time.
func XClaim(c Scope, key, group, consumer []byte, parse func() (XClaimArgs, error)) (out []StreamEntry, created bool, err error) {
	var a XClaimArgs
	parsed := false
	ids := []StreamID(nil)
	for {
		var part []StreamEntry
		var made bool
		err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
			part, made = nil, false
			if !cl.Exists() || st.group(group) == nil {
				return false, ErrNoGroup
			}
			g := st.group(group)
			if !parsed {
				var err error
				if a, err = parse(); err != nil {
					return false, err
				}
				parsed, ids = true, a.IDs
			}
			chunk := ids[:min(len(ids), pelTxBudget)]
			now := c.NowMS()
			changed := false
			if a.LastID.Cmp(g.last) > 0 {
				g.last, changed = a.LastID, true
			}
			delivery := now
			switch {
			case a.IdleGiven:
				delivery = now - a.Idle
			case a.TimeGiven:
				delivery = a.Time
			}
			if delivery < 0 || delivery > now {
				delivery = now
			}
			es, err := st.entriesOf(cl, chunk)
			if err != nil {
				return false, err
			}
			if err := st.pelFetch(c, g, chunk); err != nil {
				return false, err
			}
			var cs *streamConsumer
			for i, id := range chunk {
				n := g.known[id]
				if es[i].Gone {
					if g.pelRemove(id) {
						changed = true
					}
					continue
				}
				forced := false
				if a.Force && n == nil {
					n = &streamNACK{id: id}
					forced = true
				}
				if n == nil {
					continue
				}
				if !forced && a.MinIdle != 0 && now-n.delivered < a.MinIdle {
					continue
				}
				if cs == nil {
					var m bool
					cs, m = g.consumer(consumer, now)
					made = made || m
				}
				n.delivered = delivery
				if a.RetryCount >= 0 {
					n.count = a.RetryCount
				} else if !a.JustID {
					n.count++
				}
				g.pelSet(n, cs.name)
				changed = true
				if a.JustID {
					part = append(part, StreamEntry{ID: id})
				} else {
					part = append(part, es[i])
				}
			}
			return changed, nil
		})
		if err != nil {
			if out != nil {
				return out, created, nil
			}
			return nil, false, err
		}
		out, created = append(out, part...), created || made
		if len(ids) <= pelTxBudget {
			return out, created, nil
		}
		ids = ids[pelTxBudget:]
	}
}

// XAutoClaimResult is what XAUTOCLAIM replies.
type XAutoClaimResult struct {
	Next    StreamID
	Claimed []StreamEntry
	Deleted []StreamID
	Created bool
}

// XAutoClaim is XAUTOCLAIM from start (inclusive), claiming at most count
// entries idle at least minIdle ms. ErrNoGroup.
//
// It commits pelTxBudget changes of pending entries at a time, going on
// from where the last commit stopped.
func XAutoClaim(c Scope, key, group, consumer []byte, minIdle int64, start StreamID, count int64, justID bool) (res XAutoClaimResult, err error) {
	attempts := count * 10
	for {
		var part XAutoClaimResult
		var more bool
		var left, tries int64
		err = groupWrite(c, key, func(cl *Collection, st *streamState) (bool, error) {
			part, more, left, tries = XAutoClaimResult{}, false, count, attempts
			if !cl.Exists() || st.group(group) == nil {
				return false, ErrNoGroup
			}
			g := st.group(group)
			now := c.NowMS()
			// The window it may visit, and the entry after it for the
			// cursor.
			var window []*streamNACK
			err := st.pelScan(c, g, start, MaxStreamID, false, int(min(tries+1, 1000)), func(n *streamNACK) bool {
				window = append(window, n)
				return int64(len(window)) <= tries
			})
			if err != nil {
				return false, err
			}
			var es []StreamEntry
			var cs *streamConsumer
			k := 0
			for ; tries > 0 && left > 0 && k < len(window); k++ {
				if st.pelChanges() >= pelTxBudget {
					more = true
					break
				}
				if k == len(es) {
					// The first read is of as many as it may claim; when
					// some are not idle enough, of a full batch.
					size := dynastore.MaxBatchGet
					if k == 0 {
						size = int(min(left, int64(size)))
					}
					batch := window[k:min(len(window), k+size)]
					ids := make([]StreamID, len(batch))
					for j, n := range batch {
						ids[j] = n.id
					}
					got, err := st.entriesOf(cl, ids)
					if err != nil {
						return false, err
					}
					es = append(es, got...)
				}
				tries--
				n := window[k]
				if es[k].Gone {
					g.pelRemove(n.id)
					part.Deleted = append(part.Deleted, n.id)
					left--
					continue
				}
				if minIdle != 0 && now-n.delivered < minIdle {
					continue
				}
				if cs == nil {
					cs, part.Created = g.consumer(consumer, now)
				}
				n.delivered = now
				if !justID {
					n.count++
				}
				g.pelSet(n, cs.name)
				if justID {
					part.Claimed = append(part.Claimed, StreamEntry{ID: n.id})
				} else {
					part.Claimed = append(part.Claimed, es[k])
				}
				left--
			}
			// The cursor: the pending entry after the last one visited.
			if k < len(window) {
				part.Next = window[k].id
			}
			return len(part.Claimed) > 0 || len(part.Deleted) > 0, nil
		})
		if err != nil {
			if res.Claimed != nil || res.Deleted != nil {
				return res, nil
			}
			return XAutoClaimResult{}, err
		}
		res.Next = part.Next
		res.Claimed = append(res.Claimed, part.Claimed...)
		res.Deleted = append(res.Deleted, part.Deleted...)
		res.Created = res.Created || part.Created
		if !more || part.Next == (StreamID{}) {
			return res, nil
		}
		start, count, attempts = part.Next, left, tries
	}
}

// ---- XINFO ---------------------------------------------------------------------------------------

// XGroupInfo is a group as XINFO GROUPS and STREAM FULL report it.
type XGroupInfo struct {
	Name             string
	Consumers        int64
	Pending          int64
	LastDeliveredID  StreamID
	EntriesRead      int64 // InvalidEntriesRead: null
	Lag              int64
	LagKnown         bool
	PendingEntries   []XPendingEntry    // STREAM FULL
	ConsumersDetails []XConsumerDetails // STREAM FULL
}

// XConsumerDetails is a consumer as XINFO CONSUMERS and STREAM FULL report
// it.
type XConsumerDetails struct {
	Name     string
	Pending  int64
	Idle     int64
	SeenTime int64
	Entries  []XPendingEntry // STREAM FULL
}

// XInfoGroups is XINFO GROUPS (nil when the key does not exist).
func XInfoGroups(c Scope, key []byte) (out []XGroupInfo, exists bool, err error) {
	err = groupRead(c, key, func(cl *Collection, st *streamState) error {
		out, exists = []XGroupInfo{}, st != nil
		if st == nil {
			return nil
		}
		edges := &streamEdges{c: c, cl: cl, st: st}
		for _, g := range st.groups {
			gi, err := groupInfo(edges, g, -1)
			if err != nil {
				return err
			}
			out = append(out, gi)
		}
		return nil
	})
	return out, exists, err
}

// groupInfo reports g; full >= 0 adds its pending entries and consumers,
// at most full of each list (0: all).
func groupInfo(edges *streamEdges, g *streamGroup, full int64) (XGroupInfo, error) {
	st := edges.st
	gi := XGroupInfo{
		Name: g.name, Consumers: int64(len(g.consumers)), Pending: g.pending,
		LastDeliveredID: g.last, EntriesRead: g.entriesRead,
	}
	var first StreamID
	if st.needsFirst() {
		var err error
		if first, err = edges.getFirst(); err != nil {
			return gi, err
		}
	}
	gi.Lag, gi.LagKnown = st.lag(first, g)
	if full < 0 {
		return gi, nil
	}
	gi.PendingEntries = []XPendingEntry{}
	gi.ConsumersDetails = []XConsumerDetails{}
	// One pass over the pending entries fills the group's list and each
	// consumer's, stopping once every list is as full as it can be.
	owned := map[string]*XConsumerDetails{}
	missing := int64(0) // consumers' lists not full yet
	for _, cs := range g.consumers {
		gi.ConsumersDetails = append(gi.ConsumersDetails, XConsumerDetails{Name: cs.name, SeenTime: cs.seen, Pending: cs.pending, Entries: []XPendingEntry{}})
		if cs.pending > 0 {
			missing++
		}
	}
	for i := range gi.ConsumersDetails {
		owned[gi.ConsumersDetails[i].Name] = &gi.ConsumersDetails[i]
	}
	full64 := func(n int) bool { return full != 0 && int64(n) >= full }
	err := st.pelScan(edges.c, g, StreamID{}, MaxStreamID, false, 0, func(n *streamNACK) bool {
		if !full64(len(gi.PendingEntries)) {
			gi.PendingEntries = append(gi.PendingEntries, XPendingEntry{ID: n.id, Consumer: n.consumer, Delivered: n.delivered, Count: n.count})
		}
		if d := owned[n.consumer]; d != nil && !full64(len(d.Entries)) {
			d.Entries = append(d.Entries, XPendingEntry{ID: n.id, Delivered: n.delivered, Count: n.count})
			if full64(len(d.Entries)) || int64(len(d.Entries)) == d.Pending {
				missing--
			}
		}
		return !full64(len(gi.PendingEntries)) || missing > 0
	})
	return gi, err
}

// XInfoConsumers is XINFO CONSUMERS: exists false when the key does not
// exist; ErrNoGroup.
func XInfoConsumers(c Scope, key, group []byte) (out []XConsumerDetails, exists bool, err error) {
	err = groupRead(c, key, func(cl *Collection, st *streamState) error {
		out, exists = []XConsumerDetails{}, st != nil
		if st == nil {
			return nil
		}
		g := st.group(group)
		if g == nil {
			return ErrNoGroup
		}
		now := c.NowMS()
		for _, cs := range g.consumers {
			out = append(out, XConsumerDetails{Name: cs.name, Pending: cs.pending, Idle: max(now-cs.seen, 0)})
		}
		return nil
	})
	return out, exists, err
}

// StreamFullInfo is XINFO STREAM FULL.
type StreamFullInfo struct {
	StreamInfo
	Entries []StreamEntry
	Groups  []XGroupInfo
}

// XInfoFull is XINFO STREAM key FULL COUNT count (0: everything; nil when
// the key does not exist).
func XInfoFull(c Scope, key []byte, count int64) (*StreamFullInfo, error) {
	var info *StreamFullInfo
	err := groupRead(c, key, func(cl *Collection, st *streamState) error {
		info = nil
		if st == nil {
			return nil
		}
		base, err := streamInfoOf(cl, st)
		if err != nil {
			return err
		}
		info = &StreamFullInfo{StreamInfo: *base, Entries: []StreamEntry{}, Groups: []XGroupInfo{}}
		err = st.rangeRead(cl, StreamID{}, MaxStreamID, false, int(count), func(e StreamEntry) bool {
			info.Entries = append(info.Entries, e)
			return count == 0 || int64(len(info.Entries)) < count
		})
		if err != nil {
			return err
		}
		edges := &streamEdges{c: c, cl: cl, st: st, firstRead: true, first: base.FirstID}
		for _, g := range st.groups {
			gi, err := groupInfo(edges, g, count)
			if err != nil {
				return err
			}
			info.Groups = append(info.Groups, gi)
		}
		return nil
	})
	return info, err
}

// XGroupCheck is what XGROUP checks before its subcommand's arguments:
// the key's type and existence (unless mkStream) and, when needGroup, the
// group (ErrWrongType, ErrGroupNeedsKey, ErrNoGroup).
func XGroupCheck(c Scope, key, group []byte, needGroup, mkStream bool) error {
	return groupRead(c, key, func(cl *Collection, st *streamState) error {
		if mkStream {
			return nil
		}
		if st == nil {
			return ErrGroupNeedsKey
		}
		if needGroup && st.group(group) == nil {
			return ErrNoGroup
		}
		return nil
	})
}
