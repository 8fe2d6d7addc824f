package model

// The collection engine: how lists, hashes, sets, sorted sets and streams
// are laid out in the table, read, and changed atomically. Each type's
// operations (list.go, hash.go, set.go, zset.go, stream.go) speak to a
// *Collection and never build member items themselves; the command
// families in commands/ call those operations.
//
// Layouts. A collection's key item (keyitem.go: pk 'k'+db+key, sk 0x00, t,
// x, ttl, ver) is the single source of truth for which members exist:
//
//   - inline (small): the members live in the key item itself, so every
//     single-member command is one UpdateItem. A set keeps its members in v
//     (a binary set). A hash keeps its field names in v (a binary set, so
//     size(v) is the field count a condition can bound and HLEN is free) and
//     each value in a top-level attribute "f"+base64url(field): the typed
//     Update only addresses top-level attributes, and a per-field attribute
//     lets HSET/HDEL/HINCRBY change one field without rewriting the others.
//     A value is an N when it is a canonical int64 (HINCRBY is then one ADD),
//     a B otherwise. Inline is used while the collection has at most
//     InlineMaxSet / InlineMaxHash entries of at most InlineMaxBytes each
//     (redis.conf's listpack thresholds, halved for hashes), or fewer when
//     the encoding parameters say so (Process.inline): the item then stays
//     under ~16 KB, so a write costs a few WCU.
//   - large: the key item holds g (a random 16-byte generation id) and n (the
//     entry count: SCARD/HLEN are one read at any size); each member is an
//     item under pk 'm'+g, sk = MemberSK(member), with the value in v for a
//     hash. Members are NOT under the user key, so RENAME moves only the key
//     item and DEL/EXPIRE/overwrite touch only the key item: the old
//     generation simply stops being referenced. A type with a second order
//     of its members (a sorted set's scores: MemberOrder) also keeps an order
//     item per member in the partition, which the engine writes with it.
//
// A collection with no entries does not exist: the write that removes the
// last entry deletes the key item in the same request or transaction.
//
// Generations are registered (pk 'G'+shard, sk gen, o = owner key pk) before
// any member is written, so the sweeper (sweeper.go) can find generations no
// key item points to any more and delete their members. A generation is
// built invisibly (members first) and published by one transaction that
// flips the key item and checks that the sweeper has not condemned the
// registry entry; a crash at any point leaves only unreferenced garbage.
//
// Changes. Every write is "read, compute, commit conditioned on what was
// read" (the key item's ver), re-run on conflict (Retry), except
// the single-request fast paths of the hot commands, which fall back to it
// when their condition fails (the failed condition returns the item, so the
// fallback does not read it again). A commit is:
//
//   - inline result: one Put of the whole key item (or one Delete when empty);
//   - large, at most MaxTxMembers changed members: one TransactWriteItems with
//     the member puts/deletes and the key item's n/ver update;
//   - a conversion inline -> large: a new generation holding the complete
//     result is staged and published by one transaction;
//   - a bigger change to a large collection (SADD of 5,000, SPOP of
//     thousands): its writes wait in pending items, one transaction publishes
//     them, and they are rolled forward in place (planPending, rollForward),
//     at a cost in proportion to the change (a list's writes around its
//     range of positions need no pending items: planSpan). Inside a
//     transaction (EXEC, a script) such a change is a new generation too.
//
// Either way no client ever observes part of the command.
//
// Caches. Each instance remembers the collection key items it last read or
// wrote (itemCache) and the generations of the large sets and hashes it
// saw (gensOf), and starts the hot commands from them: a fast path whose
// condition holds on the cached item goes out guarded by the item's ver
// alone (FastUpdate), a single-member write of a known large collection is
// its blind transaction at once and a write of several members reads only
// them before its transaction (MemberFast), a list push or pop skips the
// read. Every such write is conditioned on what the cache claims, so
// another instance's writes (DEL, RENAME, conversions, ...) only make it
// fail and fall back: a stale entry costs requests, never a wrong reply.
//
// Reading a large collection pages through its partition; when that takes
// more than one page the key item is read again and the read is re-run if
// its ver moved, so a reply is always one consistent state.
//
// Multi-key commands (SMOVE, *STORE, and LMOVE for lists) open several
// collections, compute, and commit all of them in one transaction whose
// actions each carry the "ver as read" guard (Commit).
//
// Using the engine (a type's operations, such as set.go's):
//
//	err := RetryConflicts(c, func(try int) error {
//		cl, err := OpenChecked(c, key, TypeSet) // one GetItem; ErrWrongType
//		if err != nil { return err }
//		vals, present, err := cl.Lookup(members)        // BatchGet if large
//		cl.Put(m, v); cl.Del(m); cl.SetKeyAttr(name, v)  // staged
//		return cl.Commit() // ErrConflict on conflict: RetryConflicts re-runs
//	})
//
// Entries are (member, value) pairs keyed by member bytes; Each visits
// them in member order (sorted inline, partition order when large). A type
// is a layout over that: its inline codec (InlineCodecs), and for the
// large layout optionally a second order of its members (MemberOrders: a
// sorted set's scores) or a range of positions (MemberSpans: a list). A
// commit of a command that read only some members is conditioned
// on exactly those members (concurrent writers of other members do not
// conflict); one that read everything (Each) or set key attributes is
// guarded by the key item's ver.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/redamo/redamo/dynastore"
)

// Collection attributes of the key item, member items and registry items.
const (
	AttrGen     = "g"  // B: the generation id of a large collection
	AttrCount   = "n"  // N: the entry count of a large collection
	attrMember  = "m"  // B: a member item's member when its sk is a digest
	attrOwner   = "o"  // B: a registry item's owner key pk
	attrDying   = "d"  // N: set on a registry item the sweeper has condemned
	attrDeadAt  = "dd" // N: when the sweeper first saw a generation dead
	attrCreated = "c"  // N: when a generation was registered
	// AttrPending (B, on a key item) names the change whose writes wait in
	// pending items to be rolled forward, attrPhase (N) how far that got,
	// and attrChanges (N) counts such changes; attrPendingOp ("p" put, "d"
	// delete) is a pending item's write, and attrRolling (N) the count of
	// the change that last rolled a member or order item forward (see
	// rollForward).
	AttrPending   = "pd"
	attrPhase     = "pp"
	attrChanges   = "cc"
	attrPendingOp = "po"
	attrRolling   = "rt"
	// AttrBigEncoding (N 1) marks a collection Redis would hold in its big
	// encoding (skiplist, hashtable): Redis converts when a write crosses a
	// limit and never back, so OBJECT ENCODING depends on history, which
	// the key item keeps from then on.
	AttrBigEncoding = "e"
	// attrFieldPrefix + base64url(field) holds an inline hash field's value.
	attrFieldPrefix = "f"
)

// Inline caps: elements of at most 64 bytes (Redis's listpack value
// limit), 128 entries (redis.conf's listpack entry limits), 64 for hashes,
// whose fields cost twice (name in v and attribute). They bound the key
// item's size whatever the encoding parameters, which may only lower them
// (Server.inline); OBJECT ENCODING does not depend on them (Encoding).
const (
	InlineMaxBytes = 64
	InlineMaxSet   = 128
	InlineMaxHash  = 64
	InlineMaxList  = 128
)

// genShards spreads the registry over a few partitions.
const genShards = 16

// genIDLen is the length of a generation id.
const genIDLen = 16

// MaxTxMembers is how many member writes one commit transaction carries, with
// room for the key item and two more actions (the other side of an SMOVE).
const MaxTxMembers = dynastore.MaxTxActions - 4

// maxTxBytes keeps a transaction safely under DynamoDB's 4 MB.
const maxTxBytes = 3 << 20

// MemberPageItems caps the items of one page when reading a whole large
// collection: a full 1 MB page can take DynamoDB longer than one request's
// time budget, while 1,024 keeps "HGETALL of 1,000 entries" one page.
const MemberPageItems = 1024

// MaxPlainSK is the longest member stored verbatim in a sort key; longer ones
// are stored under their digest (DynamoDB caps sort keys at 1024 bytes).
const MaxPlainSK = 1000

// RetryConflicts runs attempt until it succeeds or fails with anything but a
// conflict (ErrConflict), as long as the retry policy allows (Retry).
func RetryConflicts(c Scope, attempt func(try int) error) error {
	var retry Retry
	for try := 0; ; try++ {
		err := attempt(try)
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if err := c.LostRace(&retry); err != nil {
			return err
		}
	}
}

// ---- the collection view -------------------------------------------------------

// Collection is one collection key as read by one attempt, plus the
// changes the attempt stages. Reads see the staged changes. The exported
// fields are what the command families read of it (and set: Replace,
// ListKnown); everything else goes through its methods.
type Collection struct {
	c Scope
	// Type is the type the key was opened as; Key the key; KS its key
	// item as read.
	Type string
	Key  []byte
	KS   KeyState
	// WrongType: the key is live and holds another type.
	WrongType bool

	// Gen is non-nil for the large layout; n is then the entry count.
	Gen []byte
	n   int64
	// Inline holds an inline collection's entries (nil values for sets),
	// keyed by string(member).
	Inline map[string]dynastore.Value
	// Known caches large-layout lookups: present members with their values.
	Known map[string]MemberState

	puts map[string]dynastore.Value
	dels map[string]bool
	// Replace: the commit overwrites the key (whatever it held) with exactly
	// the staged puts and no expiry (SINTERSTORE and friends).
	Replace bool
	// PagesRead is set when a read took more than one query page.
	PagesRead bool
	// first is the first page of a large collection's members when it was
	// read beside the key item (see pageAhead); each uses it once.
	first *dynastore.QueryPage
	// exact: the command's result depends on the whole collection (it read
	// it with each), so its commit must guard the key item's ver rather
	// than only the members it changes.
	exact bool
	// keyAttrs are extra key item attributes the commit writes (a list's
	// head and tail, say); see SetKeyAttr.
	keyAttrs map[string]dynastore.Value
	// planned is set by a plan with actions; genAfter is then the
	// generation the key item holds once they are applied (nil: none),
	// and after the key item itself when the plan writes it whole
	// (afterKnown; nil when it deletes it).
	planned    bool
	genAfter   []byte
	after      dynastore.Item
	afterKnown bool
	// pending is what the key item marks once a plan whose writes wait in
	// pending items (planPending) commits: the commit's caller rolls it
	// forward. pendingTx is that change's id from the moment its pending
	// items start to be written.
	pending   dynastore.Item
	pendingTx []byte
	// rolled: opening the collection rolled a change forward, so a page
	// read ahead of it may predate that (pageAhead.take).
	rolled bool
	// changes is the key item's attrChanges as read; SawRolling: a read
	// met an item a later change rolled forward, so what was read holds
	// only if the key item is still as read (ValidateRead).
	changes    int64
	SawRolling bool
	// rebuilt, when set, is the whole content the commit writes in place
	// of what the key holds (rebuiltLen entries; the expiry stays): a new
	// generation, or an inline item when it fits (see Rebuild).
	rebuilt    func(yield func(m []byte, v dynastore.Value) error) error
	rebuiltLen int64
	// outside is the positions a spanned commit takes out of the range
	// (MemberSpan), deleted after it succeeds (dropOutside).
	outside []int64
	// checks are actions the commit carries besides its writes (the
	// checks that big values it publishes were not swept: bigfields.go).
	checks []dynastore.TxAction
	// ListKnown is what the item cache keeps with the key item after the
	// commit (a large list's element values: ListKnown).
	ListKnown *ListKnown
	// Extra are actions on items outside the collection that its commit
	// joins (a stream's pending entries: stream_pel.go).
	Extra []dynastore.TxAction
	// memberRefs are the references of big members (bigmembers.go) read
	// or staged, by member sort key; staged the chunks this attempt
	// staged, and checked the members whose check joined cl.checks.
	memberRefs map[string]dynastore.Value
	staged     []*bigHeader
	checked    map[string]bool
}

// saw notes what a read of member or order items met.
func (cl *Collection) saw(it dynastore.Item) {
	if sk, _ := it.Get(dynastore.AttrSK).(dynastore.B); len(sk) > 0 && sk[0] == skDigest {
		cl.noteRef(sk, it)
	}
	if v := it.Get(attrRolling); v != nil {
		if n, err := NumberInt(v); err != nil || n > cl.changes {
			cl.SawRolling = true
		}
	}
}

// SetKeyAttr stages an extra attribute of the key item. The commit writes
// it whatever the layout; an inline commit rewrites the whole key item, so
// a family with extra attributes stages all of them on every write. Such a
// commit is always guarded by the key item's ver.
func (cl *Collection) SetKeyAttr(name string, v dynastore.Value) {
	if cl.keyAttrs == nil {
		cl.keyAttrs = map[string]dynastore.Value{}
	}
	cl.keyAttrs[name] = v
	cl.exact = true
}

// KeyAttr returns an attribute of the key item as read (nil if none).
func (cl *Collection) KeyAttr(name string) dynastore.Value {
	if !cl.KS.Live || cl.Replace {
		return nil
	}
	return cl.KS.Raw.Get(name)
}

type MemberState struct {
	present bool
	v       dynastore.Value
}

// Open reads key (one GetItem) as a collection of type typ.
func Open(c Scope, key []byte, typ string) (*Collection, error) {
	it, err := c.Data().Get(c, ItemKey(c.DB(), key))
	if err != nil {
		return nil, err
	}
	return FromItem(c, key, typ, it)
}

// OpenMany reads several keys with one BatchGet.
func OpenMany(c Scope, keys [][]byte, typ string) ([]*Collection, error) {
	ks := make([]dynastore.Key, len(keys))
	for i, k := range keys {
		ks[i] = ItemKey(c.DB(), k)
	}
	items, err := c.Data().BatchGet(c, ks)
	if err != nil {
		return nil, err
	}
	out := make([]*Collection, len(keys))
	for i, it := range items {
		if out[i], err = FromItem(c, keys[i], typ, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FromItem decodes a key item read (or returned by a failed
// condition) as a collection of type typ, and remembers it in the item
// cache, and in the generation cache whether it is large.
func FromItem(c Scope, key []byte, typ string, it dynastore.Item) (_ *Collection, err error) {
	cl := &Collection{c: c, Type: typ, Key: key}
	if !KeyFits(key) {
		it = nil
	}
	ks, err := DecodeKey(it, c.NowMS())
	if err != nil {
		return nil, err
	}
	if ks.Live && ks.Type == typ && it.Has(AttrPending) {
		return rolledForward(c, key, typ, it)
	}
	cl.KS = ks
	defer func() {
		if err == nil && KeyFits(key) {
			NoteGen(c, key, typ, cl.Gen)
			Items(c).Put(c.DB(), key, it)
		}
	}()
	if !ks.Live {
		return cl, nil
	}
	if ks.Type != typ {
		cl.WrongType = true
		return cl, nil
	}
	if g, ok := it.Get(AttrGen).(dynastore.B); ok {
		cl.Gen = g
		if cl.n, err = NumberInt(it.Get(AttrCount)); err != nil {
			return nil, fmt.Errorf("model: collection count: %w", err)
		}
		if c := it.Get(attrChanges); c != nil {
			if cl.changes, err = NumberInt(c); err != nil {
				return nil, fmt.Errorf("model: collection changes: %w", err)
			}
		}
		return cl, nil
	}
	codec, ok := InlineCodecs[typ]
	if !ok {
		return nil, fmt.Errorf("model: no inline codec for type %q: %w", typ, dynastore.ErrInvalid)
	}
	if cl.Inline, err = codec.Decode(it); err != nil {
		return nil, err
	}
	return cl, nil
}

// rolledForward is FromItem of a key item that marks a change
// published but not rolled forward yet: it finishes the change first (its
// writes change no content). Inside a transaction the item is then decoded
// as it is without the mark (same ver: the commit checks that it still
// is); otherwise it is read again, since a read is not checked at the end.
func rolledForward(c Scope, key []byte, typ string, it dynastore.Item) (*Collection, error) {
	k := ItemKey(c.DB(), key)
	for range maxRollForwards {
		if err := rollForward(c, c.Data(), k, it); err != nil {
			return nil, err
		}
		if _, inTx := c.Data().(*Txn); inTx {
			it = it.Clone(0)
			it.Delete(AttrPending)
		} else {
			var err error
			if it, err = c.Data().Get(c, k); err != nil {
				return nil, err
			}
		}
		if !it.Has(AttrPending) {
			cl, err := FromItem(c, key, typ, it)
			if cl != nil {
				cl.rolled = true
			}
			return cl, err
		}
	}
	return nil, ErrConflict
}

// maxRollForwards bounds the changes one open rolls forward before it
// starts over (each one was published after the previous one finished).
const maxRollForwards = 8

// InlineCodec reads and writes one type's inline entries in its key item.
type InlineCodec struct {
	Decode func(it dynastore.Item) (map[string]dynastore.Value, error)
	Encode func(it *dynastore.Item, entries map[string]dynastore.Value)
	// keepEmpty: the key outlives its last entry (a stream: Redis keeps
	// an emptied stream with its last id). Removing the last entry then
	// leaves an inline key item with no entries instead of deleting it.
	KeepEmpty bool
}

// InlineCodecs holds each collection type's inline codec: a set's members
// in v, a hash's (and a sorted set's, whose values are scores) field names
// in v and values in field attributes, a list's elements in order (list.go),
// a stream's ids and entries (stream.go).
var InlineCodecs = map[string]InlineCodec{
	TypeSet:    setCodec,
	TypeHash:   hashCodec,
	TypeZSet:   hashCodec,
	TypeList:   {Decode: decodeListInline, Encode: encodeListInline},
	TypeStream: streamCodec,
}

// setCodec keeps a set's members in v, a BS.
var setCodec = InlineCodec{
	Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
		names, _ := it.Get(AttrValue).(dynastore.BS)
		out := make(map[string]dynastore.Value, len(names))
		for _, m := range names {
			out[string(m)] = nil
		}
		return out, nil
	},
	Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
		names := make(dynastore.BS, 0, len(entries))
		for m := range entries {
			names = append(names, []byte(m))
		}
		it.Set(AttrValue, names)
	},
}

// hashCodec keeps the field names in v, a BS, and each value in the
// field's attribute (FieldAttr).
var hashCodec = InlineCodec{
	Decode: func(it dynastore.Item) (map[string]dynastore.Value, error) {
		names, _ := it.Get(AttrValue).(dynastore.BS)
		out := make(map[string]dynastore.Value, len(names))
		for _, m := range names {
			out[string(m)] = nil
		}
		// One pass over the attributes: a search of the item per
		// field would be quadratic in the fields.
		found := 0
		for _, a := range it {
			enc, ok := strings.CutPrefix(a.Name, attrFieldPrefix)
			if !ok {
				continue
			}
			f, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				return nil, fmt.Errorf("model: hash field attribute %q: %w", a.Name, dynastore.ErrInvalid)
			}
			if v, listed := out[string(f)]; listed && v == nil {
				out[string(f)] = a.Value
				found++
			}
		}
		if found != len(names) {
			return nil, fmt.Errorf("model: hash field without a value: %w", dynastore.ErrInvalid)
		}
		return out, nil
	},
	Encode: func(it *dynastore.Item, entries map[string]dynastore.Value) {
		names := make(dynastore.BS, 0, len(entries))
		for m, v := range entries {
			names = append(names, []byte(m))
			it.Set(FieldAttr([]byte(m)), v)
		}
		it.Set(AttrValue, names)
	},
}

// Check returns ErrWrongType when the key holds another type.
func (cl *Collection) Check() error {
	if cl.WrongType {
		return ErrWrongType
	}
	return nil
}

// Exists reports whether the key exists as read (any type).
func (cl *Collection) Exists() bool { return cl.KS.Live }

// Large reports whether the collection uses the large layout.
func (cl *Collection) Large() bool { return cl.Gen != nil }

// Len is the entry count as read.
func (cl *Collection) Len() int64 {
	if cl.Large() {
		return cl.n
	}
	return int64(len(cl.Inline))
}

// Lookup returns the current values of members (staged changes included)
// and whether each is present. A large collection fetches the members it has
// not seen yet with one BatchGet.
func (cl *Collection) Lookup(members [][]byte) ([]dynastore.Value, []bool, error) {
	if err := cl.Fetch(members); err != nil {
		return nil, nil, err
	}
	vals := make([]dynastore.Value, len(members))
	ok := make([]bool, len(members))
	for i, m := range members {
		vals[i], ok[i] = cl.current(m)
	}
	return vals, ok, nil
}

// committed returns a member's value as read (fetch first for large).
func (cl *Collection) committed(m []byte) (dynastore.Value, bool) {
	if cl.Replace || cl.WrongType {
		return nil, false
	}
	if cl.Large() {
		st := cl.Known[string(m)]
		return st.v, st.present
	}
	v, ok := cl.Inline[string(m)]
	return v, ok
}

func (cl *Collection) current(m []byte) (dynastore.Value, bool) {
	if v, ok := cl.puts[string(m)]; ok {
		return v, true
	}
	if cl.dels[string(m)] {
		return nil, false
	}
	return cl.committed(m)
}

// Fetch loads the large-layout members not looked up yet.
func (cl *Collection) Fetch(members [][]byte) error {
	if !cl.Large() || cl.Replace {
		return nil
	}
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	var keys []dynastore.Key
	var want [][]byte
	seen := map[string]bool{}
	for _, m := range members {
		if _, ok := cl.Known[string(m)]; ok || seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		keys = append(keys, MemberKey(cl.Gen, m))
		want = append(want, m)
	}
	if len(keys) == 0 {
		return nil
	}
	items, err := cl.c.Data().BatchGet(cl.c, keys)
	if err != nil {
		return err
	}
	for i, it := range items {
		cl.saw(it)
		st := MemberState{}
		if isMember(it, want[i]) {
			st = MemberState{present: true, v: it.Get(AttrValue)}
		}
		cl.Known[string(want[i])] = st
	}
	return nil
}

// Put stages member m with value v (nil for sets).
func (cl *Collection) Put(m []byte, v dynastore.Value) {
	if cl.puts == nil {
		cl.puts = map[string]dynastore.Value{}
	}
	delete(cl.dels, string(m))
	cl.puts[string(m)] = v
}

// Del stages the removal of member m.
func (cl *Collection) Del(m []byte) {
	if cl.dels == nil {
		cl.dels = map[string]bool{}
	}
	delete(cl.puts, string(m))
	cl.dels[string(m)] = true
}

// Each calls fn for every committed entry (staged changes are not seen).
// Reading a large collection over several pages marks the view so the
// caller validates it (ValidateRead) before trusting the result.
func (cl *Collection) Each(fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.WrongType || !cl.KS.Live {
		return nil
	}
	if !cl.Large() {
		// Member order, as the large layout's partition order: lists rely
		// on it (their members are position keys).
		ms := make([]string, 0, len(cl.Inline))
		for m := range cl.Inline {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		for _, m := range ms {
			if err := fn([]byte(m), cl.Inline[m]); err != nil {
				return err
			}
		}
		return nil
	}
	first := cl.first
	cl.first = nil
	return eachMemberPaged(cl.c, cl.c.Data(), cl.Gen, first, fn, func() { cl.PagesRead = true }, cl.saw)
}

// EachOrdered calls fn for the committed entries whose order sort key
// (MemberOrder) lies in [lo, hi) (nil: unbounded), in that order or, when
// reverse, the opposite one, until fn returns ErrEnough; staged changes are
// not seen. A large collection reads order items a page at a time, the
// first page of at most hint items (0: a full page), so a command that
// needs the first few reads only them. As each, it makes the commit depend
// on the whole collection.
func (cl *Collection) EachOrdered(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	cl.exact = true
	if cl.WrongType || !cl.KS.Live {
		return nil
	}
	if lo == nil {
		lo = []byte{SKOrder}
	}
	if hi == nil {
		hi = []byte{SKOrder + 1}
	}
	err := cl.eachOrderedIn(lo, hi, reverse, hint, fn)
	if errors.Is(err, ErrEnough) {
		return nil
	}
	return err
}

func (cl *Collection) eachOrderedIn(lo, hi []byte, reverse bool, hint int, fn func(m []byte, v dynastore.Value) error) error {
	if !cl.Large() {
		type entry struct {
			sk, m []byte
			v     dynastore.Value
		}
		order := MemberOrders[cl.Type]
		var es []entry
		for m, v := range cl.Inline {
			sk := order.SK([]byte(m), v)
			if bytes.Compare(sk, lo) >= 0 && bytes.Compare(sk, hi) < 0 {
				es = append(es, entry{sk, []byte(m), v})
			}
		}
		sort.Slice(es, func(i, j int) bool { return (bytes.Compare(es[i].sk, es[j].sk) < 0) != reverse })
		for _, e := range es {
			if err := fn(e.m, e.v); err != nil {
				return err
			}
		}
		return nil
	}
	// What is read is known: a commit that removes it (ZPOPMIN) need not
	// fetch its members again.
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	order := MemberOrders[cl.Type]
	lo, hi = order.widen(lo, hi)
	// Neighbours whose sort keys do not order them wait in ties until the
	// last of them is read, and go to fn in member order.
	type tie struct {
		m []byte
		v dynastore.Value
	}
	var ties []tie
	var tieKey []byte
	flush := func() error {
		sort.Slice(ties, func(i, j int) bool { return (bytes.Compare(ties[i].m, ties[j].m) < 0) != reverse })
		for _, t := range ties {
			if err := fn(t.m, t.v); err != nil {
				return err
			}
		}
		ties, tieKey = ties[:0], nil
		return nil
	}
	// BETWEEN is inclusive: an item whose key is hi itself is skipped.
	q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBetween, A: lo, B: hi, Reverse: reverse, Limit: MemberPageItems}
	if hint > 0 && hint < MemberPageItems {
		q.Limit = hint
	}
	for {
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if sk, _ := it.Get(dynastore.AttrSK).(dynastore.B); bytes.Equal(sk, hi) {
				continue
			}
			cl.saw(it)
			m, v := decodeOrderItem(cl.Type, it)
			if m, err = loadMember(cl.c, cl.c.Data(), it, m); err != nil {
				return err
			}
			if bigMember(m) {
				cl.noteRef(MemberSK(m), it)
			}
			cl.Known[string(m)] = MemberState{present: true, v: v}
			sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
			if t := order.tieKey(sk); t == nil || !bytes.Equal(t, tieKey) {
				if err := flush(); err != nil {
					return err
				}
				tieKey = t
			}
			if tieKey != nil {
				ties = append(ties, tie{m, v})
			} else if err := fn(m, v); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return flush()
		}
		cl.PagesRead = true
		q.After, q.Limit = page.Next, MemberPageItems
	}
}

// ---- ordered range reads -----------------------------------------------------

// EachRange calls fn for the committed entries whose members lie between
// from and to (both inclusive; nil: unbounded), in member order, or in
// reverse member order when rev, until fn returns false. Only members of
// at most MaxPlainSK bytes are in member order in a large collection (the
// longer ones sit under digests), so callers range over short members
// (a stream's 16-byte ids). A large collection is read a page at a time
// starting at the bound, pages of pageHint items (what the caller expects
// to need; 0: MemberPageItems), so a read that stops early costs only the
// pages it needed. Like each, reading several pages marks the view for
// ValidateRead; unlike each, it does not make the commit exact.
func (cl *Collection) EachRange(from, to []byte, rev bool, pageHint int, fn func(m []byte, v dynastore.Value) (bool, error)) error {
	if cl.WrongType || !cl.KS.Live || cl.Replace {
		return nil
	}
	in := func(m []byte) bool {
		return (from == nil || bytes.Compare(m, from) >= 0) && (to == nil || bytes.Compare(m, to) <= 0)
	}
	if !cl.Large() {
		ms := make([]string, 0, len(cl.Inline))
		for m := range cl.Inline {
			if in([]byte(m)) {
				ms = append(ms, m)
			}
		}
		sort.Strings(ms)
		for i := range ms {
			m := ms[i]
			if rev {
				m = ms[len(ms)-1-i]
			}
			if more, err := fn([]byte(m), cl.Inline[m]); err != nil || !more {
				return err
			}
		}
		return nil
	}
	q := dynastore.Query{PK: MembersPK(cl.Gen), Reverse: rev, Limit: MemberPageItems}
	if pageHint > 0 && pageHint < MemberPageItems {
		q.Limit = pageHint
	}
	lo, hi := []byte{skMember}, []byte{skDigest} // every plain member
	if from != nil {
		lo = MemberSK(from)
	}
	if to != nil {
		hi = MemberSK(to)
	}
	q.Op, q.A, q.B = dynastore.SKBetween, lo, hi
	for pages := 0; ; pages++ {
		if pages > 0 {
			cl.PagesRead = true
		}
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m := decodeMember(it)
			if !in(m) {
				continue
			}
			if more, err := fn(m, it.Get(AttrValue)); err != nil || !more {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		q.After = page.Next
	}
}

// ValidateRead re-reads the key items of views whose reads were not one
// consistent snapshot (several pages, or several keys) and returns
// ErrConflict if any changed since it was opened.
func ValidateRead(c Scope, cls ...*Collection) error {
	need := len(cls) > 1
	for _, cl := range cls {
		need = need || cl.PagesRead || cl.SawRolling
	}
	if !need {
		return nil
	}
	keys := make([]dynastore.Key, len(cls))
	for i, cl := range cls {
		keys[i] = ItemKey(c.DB(), cl.Key)
	}
	items, err := c.Data().BatchGet(c, keys)
	if err != nil {
		return err
	}
	for i, cl := range cls {
		if !SameVer(cl.KS.Raw, items[i]) || items[i].Has(AttrPending) {
			return ErrConflict
		}
	}
	return nil
}

// SameVer reports whether two reads of one key item saw the same version.
func SameVer(a, b dynastore.Item) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	// Whatever the token's type: items written before versions became
	// strings hold Numbers.
	va, vb := a.Get(AttrVer), b.Get(AttrVer)
	return (va == nil && vb == nil) || dynastore.ValuesEqual(va, vb)
}

// RandomMembers returns up to count distinct members (values included)
// chosen at random: all of an inline collection's members shuffled, or, for
// a large one, a run starting at a random position in the partition.
func (cl *Collection) RandomMembers(count int) ([][]byte, []dynastore.Value, error) {
	var ms [][]byte
	var vs []dynastore.Value
	if !cl.Large() {
		for m, v := range cl.Inline {
			ms = append(ms, []byte(m))
			vs = append(vs, v)
		}
		rand.Shuffle(len(ms), func(i, j int) {
			ms[i], ms[j] = ms[j], ms[i]
			vs[i], vs[j] = vs[j], vs[i]
		})
		if len(ms) > count {
			ms, vs = ms[:count], vs[:count]
		}
		return ms, vs, nil
	}
	start := make([]byte, 9)
	start[0] = byte(rand.IntN(2)) // plain or digest members
	for i := 1; i < len(start); i++ {
		start[i] = byte(rand.IntN(256))
	}
	q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBetween, A: start, B: memberSKLast}
	wrapped := false
	for len(ms) < count {
		q.Limit = count - len(ms)
		page, err := cl.c.Data().Query(cl.c, q)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range page.Items {
			cl.saw(it)
			m, err := loadMember(cl.c, cl.c.Data(), it, decodeMember(it))
			if err != nil {
				return nil, nil, err
			}
			if wrapped && bytes.Compare(MemberSK(m), start) >= 0 {
				return ms, vs, nil
			}
			ms = append(ms, m)
			vs = append(vs, it.Get(AttrValue))
		}
		if page.Next != nil {
			cl.PagesRead = true
			q.After = page.Next
			continue
		}
		if wrapped {
			break
		}
		wrapped = true
		cl.PagesRead = true
		q = dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKLT, A: memberSKEnd}
	}
	if wrapped {
		// The run may have come back to where it started.
		seen := map[string]bool{}
		k := 0
		for i, m := range ms {
			if !seen[string(m)] {
				seen[string(m)] = true
				ms[k], vs[k] = m, vs[i]
				k++
			}
		}
		ms, vs = ms[:k], vs[:k]
	}
	if len(ms) > count {
		ms, vs = ms[:count], vs[:count]
	}
	// What was read is known: a following commit need not fetch it again.
	if cl.Known == nil {
		cl.Known = map[string]MemberState{}
	}
	for i, m := range ms {
		cl.Known[string(m)] = MemberState{present: true, v: vs[i]}
	}
	return ms, vs, nil
}

// OpenSeeded opens key from an item already read (use) or by reading it,
// failing with ErrWrongType when it holds another type.
func OpenSeeded(c Scope, key []byte, typ string, seed dynastore.Item, use bool) (*Collection, error) {
	var cl *Collection
	var err error
	if use {
		cl, err = FromItem(c, key, typ, seed)
	} else {
		cl, err = Open(c, key, typ)
	}
	if err != nil {
		return nil, err
	}
	if err := cl.Check(); err != nil {
		return nil, err
	}
	return cl, nil
}

// OpenChecked reads key (one GetItem) as a collection of type typ, failing
// with ErrWrongType when it holds another type.
func OpenChecked(c Scope, key []byte, typ string) (*Collection, error) {
	return OpenSeeded(c, key, typ, nil, false)
}

// Len is the number of entries of key's collection of type typ (SCARD,
// HLEN, ZCARD): one read of the key item at any size.
func Len(c Scope, key []byte, typ string) (int64, error) {
	cl, err := OpenChecked(c, key, typ)
	if err != nil {
		return 0, err
	}
	return cl.Len(), nil
}

// Read runs read on key's collection as one consistent state: after
// read, ValidateRead makes RetryConflicts start over if a large collection
// changed while read paged through it.
func Read(c Scope, key []byte, typ string, read func(cl *Collection) error) error {
	return collReading(c, key, typ, false, read)
}

// ReadAll is Read for a read that goes through every entry (each):
// the first page of a large collection's members is read beside its key
// item when the generation cache knows it (see pageAhead).
func ReadAll(c Scope, key []byte, typ string, read func(cl *Collection) error) error {
	return collReading(c, key, typ, true, read)
}

// collReading is Read, reading ahead (ReadAll) when all is set.
func collReading(c Scope, key []byte, typ string, all bool, read func(cl *Collection) error) error {
	return RetryConflicts(c, func(try int) error {
		var p *pageAhead
		if all && try == 0 {
			p = startPageAhead(c, key, typ)
		}
		cl, err := OpenChecked(c, key, typ)
		if first := p.take(cl); err == nil {
			cl.first = first
		}
		if err != nil {
			return err
		}
		if err := read(cl); err != nil {
			return err
		}
		return ValidateRead(c, cl)
	})
}

// Lookup reads members of key's collection: one read inline, two (key
// item, then the members) when large.
func Lookup(c Scope, key []byte, typ string, members [][]byte) (vals []dynastore.Value, present []bool, err error) {
	err = Read(c, key, typ, func(cl *Collection) (err error) {
		vals, present, err = cl.Lookup(members)
		return err
	})
	return vals, present, err
}

// EntriesOf reads a collection whole: copies of the members, and their values.
func EntriesOf(cl *Collection) (ms [][]byte, vs []dynastore.Value, err error) {
	err = cl.Each(func(m []byte, v dynastore.Value) error {
		ms = append(ms, bytes.Clone(m))
		vs = append(vs, v)
		return nil
	})
	return ms, vs, err
}

// ScanPage returns one page of an SSCAN/HSCAN-style iteration and the next
// cursor (0 at the end). An inline collection is returned whole with cursor
// 0, as Redis does for its small encodings. A large one pages through its
// partition; the position to resume after is kept in the table under the
// cursor (cursors.go), so any instance can continue it. An unknown cursor
// ends the iteration.
func (cl *Collection) ScanPage(cursor uint64, count int) ([][]byte, []dynastore.Value, uint64, error) {
	if !cl.Exists() {
		return nil, nil, 0, nil
	}
	if !cl.Large() {
		if cursor != 0 && cl.Type == TypeSet && !cl.intsetLike() {
			// Redis 7.0 keeps such a set in a hash table, where a cursor
			// it never handed out (it returns 0 for small sets) lands past
			// the end: an empty last page.
			return nil, nil, 0, nil
		}
		var ms [][]byte
		var vs []dynastore.Value
		err := cl.Each(func(m []byte, v dynastore.Value) error {
			ms = append(ms, m)
			vs = append(vs, v)
			return nil
		})
		return ms, vs, 0, err
	}
	var after []byte
	if cursor != 0 {
		// The generation the cursor was handed out in is not checked: a
		// member's sort key is the same in every generation, so a
		// collection rewritten into a new one since (a rebuild, RENAME
		// over it) goes on after the same member, and every member
		// present throughout is still returned.
		_, a, ok, err := memberCursors.load(cl.c, cursor)
		if err != nil {
			return nil, nil, 0, err
		}
		if !ok || len(a) == 0 {
			return nil, nil, 0, nil
		}
		after = a
	}
	page, err := cl.c.Data().Query(cl.c, dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKLT, A: memberSKEnd, After: after, Limit: count})
	if err != nil {
		return nil, nil, 0, err
	}
	ms := make([][]byte, len(page.Items))
	vs := make([]dynastore.Value, len(page.Items))
	for i, it := range page.Items {
		if ms[i], err = loadMember(cl.c, cl.c.Data(), it, decodeMember(it)); err != nil {
			return nil, nil, 0, err
		}
		vs[i] = it.Get(AttrValue)
	}
	if page.Next == nil {
		return ms, vs, 0, nil
	}
	next, err := memberCursors.save(cl.c, cl.Gen, page.Next)
	if err != nil {
		return nil, nil, 0, err
	}
	return ms, vs, next, nil
}

// intsetLike reports whether Redis would keep this inline set as an intset.
func (cl *Collection) intsetLike() bool {
	for m := range cl.Inline {
		if _, ok := String2ll([]byte(m)); !ok {
			return false
		}
	}
	return true
}

// ErrEnough ends an each early once the answer is known.
var ErrEnough = errors.New("model: enough entries seen")
