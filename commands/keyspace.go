package commands

// The keyspace layer: how a Redis key of one database maps to a DynamoDB
// item (the "key item"), how that item is decoded, and the conditions every
// command uses so that an expired key is absent to reads and can be taken
// over by a write in the same single request.
//
// A key item holds:
//
//	pk   'k', db, key bytes
//	sk   0x00
//	t    S  the Redis type ("string", "hash", "list", "set", "zset")
//	v    the string value: N when it is a canonical int64 (INCR is then one
//	     UpdateItem ADD), B otherwise, or L of B chunks once APPEND has
//	     extended it (each APPEND is then one list_append)
//	e    S  the encoding OBJECT ENCODING reports, when the value alone does not
//	     imply it (Redis keeps SETRANGE/APPEND results "raw" and INCRBYFLOAT
//	     results "embstr" even when they look like integers)
//	x    N  expiry, Unix ms; absent: persistent
//	ttl  N  expiry in epoch seconds for DynamoDB's TTL garbage collection only
//	ver  N  a fresh random token written by every write, so optimistic
//	     read-then-write code can condition on "ver = what I read"
//
// Collections keep their own attributes next to t/x/ttl/ver; the helpers here
// that do not touch v work for every type.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Key-item attribute names.
const (
	attrType   = "t"
	attrValue  = "v"
	attrEnc    = "e"
	attrExpiry = "x"
	attrVer    = "ver"
)

// Redis type names, as TYPE reports them and as the key item's "t" holds them.
const (
	TypeString = "string"
	TypeHash   = "hash"
	TypeList   = "list"
	TypeSet    = "set"
	TypeZSet   = "zset"
)

// First bytes of pk. Every other first byte is reserved for internal
// namespaces added later (locks, leaders, queues, collection members).
const (
	nsKey    = 'k' // user keys: 'k', db, key
	nsCursor = 'c' // SCAN cursors: 'c', 8-byte id
)

// MaxKeyLen is the longest Redis key redamo can store: the partition key
// also holds the namespace byte and the db number.
const MaxKeyLen = dynastore.MaxPKSize - 2

// keyItemSK is the sort key of every key item; keyItemSKValue is it as an
// attribute value, boxed once for every item built here (items are never
// modified once built, so they may share it).
var (
	keyItemSK                      = []byte{0}
	keyItemSKValue dynastore.Value = dynastore.B(keyItemSK)
)

// errKeyTooLong is returned by writes to a key that cannot be stored.
var errKeyTooLong = fmt.Errorf("commands: key longer than %d bytes: %w", MaxKeyLen, dynastore.ErrKeyTooLarge)

// keyPK is the partition key of a Redis key in database db.
func keyPK(db int, key []byte) []byte {
	return appendKeyPK(make([]byte, 0, 2+len(key)), db, key)
}

// appendKeyPK appends keyPK(db, key) to dst.
func appendKeyPK(dst []byte, db int, key []byte) []byte {
	return append(append(dst, nsKey, byte(db)), key...)
}

// dbPrefix is the pk prefix shared by every key of database db.
func dbPrefix(db int) []byte { return []byte{nsKey, byte(db)} }

// itemKey is the key of the key item of a Redis key.
func itemKey(db int, key []byte) dynastore.Key {
	return dynastore.Key{PK: keyPK(db, key), SK: keyItemSK}
}

// requestScratch is memory a connection's commands reuse from one request
// to the next for what they hand the store in one call and no longer need
// once it returns, as a Store copies what it is given: readKey's and
// INCR's key, INCR's update. These were a large part of a pipelined
// INCR's allocations; GET allocates nothing. returned is where INCR has
// the store put the item it returns (WriteOptions.ReturnInto); it keeps
// that item's values until the next.
type requestScratch struct {
	pk       []byte
	incr     incrActs
	returned dynastore.Item
}

// scratchItemKey is itemKey(c.DB(), key) in the connection's scratch
// memory, valid until its next scratchItemKey: for a key handed to a
// single store call.
func (c *Ctx) scratchItemKey(key []byte) dynastore.Key {
	s := &c.Conn.scratch
	s.pk = appendKeyPK(s.pk[:0], c.DB(), key)
	return dynastore.Key{PK: s.pk, SK: keyItemSK}
}

// keyFits reports whether key can be stored at all. A key that cannot fit
// can never exist, so reads answer "absent" and writes fail with MsgKeyTooLong.
func keyFits(key []byte) bool { return len(key) <= MaxKeyLen }

// redisKeyOf returns the db and Redis key of a key item's pk.
func redisKeyOf(pk []byte) (db int, key []byte, ok bool) {
	if len(pk) < 2 || pk[0] != nsKey {
		return 0, nil, false
	}
	return int(pk[1]), pk[2:], true
}

// newVer returns a fresh version token: 64 random bits as 11 base64url
// characters. Tokens must not repeat, not be secret: math/rand/v2's
// generator (ChaCha8, seeded from the OS) is unpredictable enough and costs
// no syscall. A string rather than a Number: a store parses a Number to
// validate, normalize and size it, three times per write, and the decimal
// form takes 19 digits where these 11 bytes fit Go's tiny allocator;
// version tokens are only ever compared for equality.
func newVer() dynastore.S {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b [11]byte
	r := rand.Uint64()
	for i := range b {
		b[i] = digits[r&63]
		r >>= 6
	}
	return dynastore.S(b[:])
}

// nInt formats an int64 as a Number.
func nInt(n int64) dynastore.N { return dynastore.N(strconv.FormatInt(n, 10)) }

// addOverflows reports whether a+b falls outside int64.
func addOverflows(a, b int64) bool {
	return (b < 0 && a < 0 && b < math.MinInt64-a) || (b > 0 && a > 0 && b > math.MaxInt64-a)
}

// incrRoom is the condition that adding d to the number in attr stays
// within int64 (nil when d is 0), for an UpdateItem ADD to check.
func incrRoom(attr string, d int64) dynastore.Cond {
	switch {
	case d > 0:
		return dynastore.Compare{Attr: attr, Op: dynastore.OpLE, Val: nInt(math.MaxInt64 - d)}
	case d < 0:
		return dynastore.Compare{Attr: attr, Op: dynastore.OpGE, Val: nInt(math.MinInt64 - d)}
	}
	return nil
}

// condFailedStart is the state a fast-path write's failed condition handed
// back (err from a write with OldOnFailure), for mutateKey to start from.
// When ok is false err was something else and it has replied.
func condFailedStart(c *Ctx, err error, nowMS int64) (start keyState, ok bool) {
	cur, failed := isCondFailed(err)
	if !failed {
		c.Fail(err)
		return keyState{}, false
	}
	start, err = decodeKey(cur, nowMS)
	if err != nil {
		c.Fail(err)
		return keyState{}, false
	}
	return start, true
}

// stringOf is the value of a string key as read: nil when absent,
// WRONGTYPE (a redisError) when it holds another type.
func stringOf(ks keyState) ([]byte, error) {
	if !ks.Live {
		return nil, nil
	}
	if ks.Type != TypeString {
		return nil, redisError(MsgWrongType)
	}
	return ks.stringValue()
}

// ttlSeconds is the GC attribute for an expiry in ms: one second late rather
// than early, since DynamoDB may delete any time after it.
func ttlSeconds(expiryMS int64) dynastore.N {
	return nInt(expiryMS/1000 + 1)
}

// ---- conditions ------------------------------------------------------------

// latest keeps the value it last built and hands it out again while its
// key stays the same. Under load the commands in a row mostly share their
// millisecond, and building a condition from the clock for each was a good
// part of a write's allocations (for INCR, a tree of eight nodes and two
// formatted numbers). The values are conditions, read-only to stores, so
// every goroutine may share them; callers that add terms wrap them in a
// new And or Or.
type latest[K comparable, V any] struct {
	last atomic.Pointer[keyed[K, V]]
}

type keyed[K comparable, V any] struct {
	key K
	val V
}

func (l *latest[K, V]) get(key K, build func(K) V) V {
	if e := l.last.Load(); e != nil && e.key == key {
		return e.val
	}
	v := build(key)
	l.last.Store(&keyed[K, V]{key, v})
	return v
}

// clockConds are the conditions that depend on the clock alone, for one
// millisecond.
type clockConds struct {
	unexpired, live, notLive dynastore.Cond
}

var clockCondsAt latest[int64, clockConds]

func condsAt(nowMS int64) clockConds {
	return clockCondsAt.get(nowMS, func(nowMS int64) clockConds {
		now := nInt(nowMS)
		unexpired := dynastore.Or{
			dynastore.NotExists{Attr: attrExpiry},
			dynastore.Compare{Attr: attrExpiry, Op: dynastore.OpGT, Val: now},
		}
		return clockConds{
			unexpired: dynastore.MustCheck(unexpired),
			live:      dynastore.MustCheck(dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, unexpired}),
			notLive: dynastore.MustCheck(dynastore.Or{
				dynastore.NotExists{Attr: dynastore.AttrPK},
				dynastore.Compare{Attr: attrExpiry, Op: dynastore.OpLE, Val: now},
			}),
		}
	})
}

// condLive holds when the key item exists and has not expired at nowMS.
func condLive(nowMS int64) dynastore.Cond { return condsAt(nowMS).live }

// condNotLive holds when the key is absent or expired at nowMS: a write
// under it takes over an expired key in the same request.
func condNotLive(nowMS int64) dynastore.Cond { return condsAt(nowMS).notLive }

// condUnexpired holds when the item has no expiry or one after nowMS: it is
// condLive without attribute_exists(pk), for conditions whose other terms
// already hold only on an existing item (an ordered comparison of an
// attribute, or of its size, is false when the attribute is missing).
func condUnexpired(nowMS int64) dynastore.Cond { return condsAt(nowMS).unexpired }

// condType holds when the item's type is typ.
func condType(typ string) dynastore.Cond {
	return dynastore.Compare{Attr: attrType, Op: dynastore.OpEQ, Val: dynastore.S(typ)}
}

// condLiveType holds when the key is live and of type typ.
func condLiveType(nowMS int64, typ string) dynastore.Cond {
	return dynastore.And{condLive(nowMS), condType(typ)}
}

// condNotLiveOrType holds when the key is absent, expired, or of type typ:
// the precondition of a write that must not touch a live key of another type.
func condNotLiveOrType(nowMS int64, typ string) dynastore.Cond {
	return dynastore.Or{condNotLive(nowMS), condType(typ)}
}

// ---- decoded key items -----------------------------------------------------

// keyState is a key item as read: the raw item (kept even when expired, so a
// following write can be conditioned on it) and what it means at the
// command's clock.
type keyState struct {
	// Raw is the item as stored, nil if there is none.
	Raw dynastore.Item
	// Live is false when there is no item or it has expired.
	Live bool
	// Type is the Redis type ("" when not live).
	Type string
	// Expiry is the deadline in Unix ms; HasExpiry is false for a persistent key.
	Expiry    int64
	HasExpiry bool
}

// decodeKey interprets a key item at nowMS.
func decodeKey(it dynastore.Item, nowMS int64) (keyState, error) {
	ks := keyState{Raw: it}
	if it == nil {
		return ks, nil
	}
	if x := it.Get(attrExpiry); x != nil {
		n, err := numberInt(x)
		if err != nil {
			return ks, fmt.Errorf("commands: key item expiry: %w", err)
		}
		ks.Expiry, ks.HasExpiry = n, true
		if n <= nowMS {
			ks.Expiry, ks.HasExpiry = 0, false
			return ks, nil
		}
	}
	t, ok := it.Get(attrType).(dynastore.S)
	if !ok {
		return ks, fmt.Errorf("commands: key item without a type: %w", dynastore.ErrInvalid)
	}
	ks.Live, ks.Type = true, string(t)
	return ks, nil
}

// guard is the condition that the key item is still exactly as read: the
// version token seen, or no item at all. Every read-then-write uses it.
func (ks keyState) guard() dynastore.Cond {
	if ks.Raw == nil {
		return dynastore.NotExists{Attr: dynastore.AttrPK}
	}
	if v := ks.Raw.Get(attrVer); v != nil {
		return dynastore.Compare{Attr: attrVer, Op: dynastore.OpEQ, Val: v}
	}
	// Every write sets ver, so this only guards items written by hand.
	return dynastore.NotExists{Attr: attrVer}
}

// stringValue returns a live string key's value.
func (ks keyState) stringValue() ([]byte, error) {
	return decodeValue(ks.Raw.Get(attrValue))
}

// readKey reads one key item (one GetItem). A key too long to exist reads as absent.
func readKey(c *Ctx, key []byte) (keyState, error) {
	if !keyFits(key) {
		return keyState{}, nil
	}
	it, err := c.Store.Get(c, c.scratchItemKey(key))
	if err != nil {
		return keyState{}, err
	}
	return decodeKey(it, c.NowMS())
}

// ---- string values ---------------------------------------------------------

// Encodings OBJECT ENCODING reports for strings.
const (
	encInt    = "int"
	encEmbstr = "embstr"
	encRaw    = "raw"
)

// embstrLimit is Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const embstrLimit = 44

// How a string value came to be, which decides the encoding Redis gives it.
type strOrigin uint8

const (
	// originArg: a value from the client, run through tryObjectEncoding (SET,
	// MSET, APPEND to a missing key, ...): int, embstr or raw by content.
	originArg strOrigin = iota
	// originFloat: created from a number text (INCRBYFLOAT): embstr or raw by length.
	originFloat
	// originEdited: modified in place (SETRANGE, APPEND): always raw.
	originEdited
)

// encodeValue returns the attributes that hold a string value: v, and e when
// the value alone does not imply the encoding (nil if it does). A binary v
// is a copy of val appended to buf (non-nil), so that a caller can have it
// share an allocation with something else.
func encodeValue(buf, val []byte, origin strOrigin) (v dynastore.Value, e dynastore.Value) {
	_, isInt := string2ll(val)
	if isInt {
		v = dynastore.N(val)
	} else {
		start := len(buf)
		buf = append(buf, val...)
		v = dynastore.B(buf[start:len(buf):len(buf)])
	}
	switch {
	case origin == originEdited && (isInt || len(val) <= embstrLimit):
		e = dynastore.S(encRaw)
	case origin == originFloat && isInt:
		e = dynastore.S(encEmbstr)
	}
	return v, e
}

// decodeValue turns a stored v back into the string's bytes.
func decodeValue(v dynastore.Value) ([]byte, error) {
	switch v := v.(type) {
	case dynastore.B:
		return []byte(v), nil
	case dynastore.N:
		return []byte(v), nil
	case dynastore.L:
		var n int
		for _, el := range v {
			b, ok := el.(dynastore.B)
			if !ok {
				return nil, fmt.Errorf("commands: string chunk of kind %d: %w", el.Kind(), dynastore.ErrInvalid)
			}
			n += len(b)
		}
		out := make([]byte, 0, n)
		for _, el := range v {
			out = append(out, el.(dynastore.B)...)
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("commands: string key item without a value: %w", dynastore.ErrInvalid)
	default:
		return nil, fmt.Errorf("commands: string value of kind %d: %w", v.Kind(), dynastore.ErrInvalid)
	}
}

// valueLen is the length of a stored string without concatenating chunks.
func valueLen(v dynastore.Value) int64 {
	switch v := v.(type) {
	case dynastore.B:
		return int64(len(v))
	case dynastore.N:
		return int64(len(v))
	case dynastore.L:
		var n int64
		for _, el := range v {
			if b, ok := el.(dynastore.B); ok {
				n += int64(len(b))
			}
		}
		return n
	}
	return 0
}

// stringEncoding is the encoding Redis would report for a string key item.
func stringEncoding(it dynastore.Item) string {
	if e, ok := it.Get(attrEnc).(dynastore.S); ok {
		return string(e)
	}
	switch v := it.Get(attrValue).(type) {
	case dynastore.N:
		return encInt
	case dynastore.L:
		// One chunk: APPEND to a missing key, which Redis encodes like SET.
		if len(v) == 1 {
			if b, ok := v[0].(dynastore.B); ok {
				if _, isInt := string2ll(b); isInt {
					return encInt
				}
				if len(b) <= embstrLimit {
					return encEmbstr
				}
			}
		}
		return encRaw
	}
	if valueLen(it.Get(attrValue)) <= embstrLimit {
		return encEmbstr
	}
	return encRaw
}

// stringItem builds a whole string key item, sharing no memory with its
// arguments (a Put may hand it over). expiryMS 0 means persistent.
func stringItem(db int, key, val []byte, origin strOrigin, expiryMS int64) dynastore.Item {
	// pk and a binary value share one allocation.
	buf := make([]byte, 0, 2+len(key)+len(val))
	buf = append(append(buf, nsKey, byte(db)), key...)
	pk := buf[:len(buf):len(buf)]
	v, e := encodeValue(buf, val, origin)
	// Exactly the room the attributes need, in one allocation; each is
	// appended once, so none needs Set's search.
	n := 5
	if e != nil {
		n++
	}
	if expiryMS != 0 {
		n += 2
	}
	it := append(make(dynastore.Item, 0, n),
		dynastore.Attr{Name: dynastore.AttrPK, Value: dynastore.B(pk)},
		dynastore.Attr{Name: dynastore.AttrSK, Value: keyItemSKValue},
		dynastore.Attr{Name: attrType, Value: dynastore.S(TypeString)},
		dynastore.Attr{Name: attrValue, Value: v},
		dynastore.Attr{Name: attrVer, Value: newVer()},
	)
	if e != nil {
		it = append(it, dynastore.Attr{Name: attrEnc, Value: e})
	}
	if expiryMS != 0 {
		it = append(it,
			dynastore.Attr{Name: attrExpiry, Value: nInt(expiryMS)},
			dynastore.Attr{Name: dynastore.AttrTTL, Value: ttlSeconds(expiryMS)})
	}
	return it
}

// retarget returns a copy of a key item under another key with a fresh
// version (RENAME, COPY); expiry and every other attribute are kept.
func retarget(it dynastore.Item, db int, key []byte) dynastore.Item {
	out := it.Clone(0)
	out.Set(dynastore.AttrPK, dynastore.B(keyPK(db, key)))
	out.Set(dynastore.AttrSK, keyItemSKValue)
	out.Set(attrVer, newVer())
	return out
}

// ---- numbers ---------------------------------------------------------------

// string2ll parses s as Redis's string2ll does: an optional '-', no '+', no
// spaces, no leading zeros, within int64. Exactly the strings that are the
// canonical decimal form of an int64 pass.
func string2ll(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	i := 0
	neg := s[0] == '-'
	if neg {
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	if s[i] < '1' || s[i] > '9' {
		return 0, false
	}
	var u uint64
	for ; i < len(s); i++ {
		d := s[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u *= 10
		if u > 1<<64-1-uint64(d-'0') {
			return 0, false
		}
		u += uint64(d - '0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// numberInt reads an N attribute as an int64.
func numberInt(v dynastore.Value) (int64, error) {
	n, ok := v.(dynastore.N)
	if !ok {
		return 0, fmt.Errorf("commands: expected a number, got kind %d: %w", kindOf(v), dynastore.ErrInvalid)
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("commands: number %q: %w", string(n), dynastore.ErrInvalid)
	}
	return i, nil
}

func kindOf(v dynastore.Value) dynastore.Kind {
	if v == nil {
		return 0
	}
	return v.Kind()
}

// ---- scanning the keyspace -------------------------------------------------

// keyFilter selects the live key items of database db (all databases when db
// is negative) whose key starts with prefix.
func keyFilter(db int, prefix []byte, nowMS int64) dynastore.Cond {
	var pfx []byte
	if db < 0 {
		pfx = []byte{nsKey}
	} else {
		pfx = append(dbPrefix(db), prefix...)
	}
	return dynastore.And{
		dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: pfx},
		dynastore.Compare{Attr: dynastore.AttrSK, Op: dynastore.OpEQ, Val: dynastore.B(keyItemSK)},
		condUnexpired(nowMS),
	}
}

// scanAll runs a table scan with filter to the end, calling fn for every item.
func scanAll(ctx context.Context, st dynastore.Store, filter dynastore.Cond, fn func(dynastore.Item) error) error {
	var after *dynastore.Key
	for {
		page, err := st.Scan(ctx, dynastore.Scan{Filter: filter, After: after})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		after = page.Next
	}
}

// isCondFailed reports whether err is a failed condition, and the item the
// store returned with it (nil when not asked for, or when there is none).
func isCondFailed(err error) (dynastore.Item, bool) {
	var cf *dynastore.ConditionFailedError
	if errors.As(err, &cf) {
		return cf.Old, true
	}
	return nil, errors.Is(err, dynastore.ErrConditionFailed)
}

// sameKey reports whether two keys are the same bytes.
func sameKey(a, b []byte) bool { return bytes.Equal(a, b) }

// ---- optimistic read-modify-write -------------------------------------------

// keyWrite is the write a command decided on for one key item.
type keyWrite struct {
	Put    dynastore.Item // replace the whole item
	Delete bool           // or delete it
}

// redisError is a reply a command decided on (WRONGTYPE, not an integer,
// ...), as opposed to a storage failure.
type redisError string

func (e redisError) Error() string { return string(e) }

// mutateKey runs a read-modify-write on one key item without ever writing
// over a state it has not seen: decide looks at the current state and
// returns the write to make (nil: none needed), and the write is conditioned
// on the item being unchanged (its version token). When another writer got
// there first, the failed write hands back the current item and decide runs
// again, as long as the retry policy (model.Retry) allows. start is a state already known
// (from a failed fast path); nil reads the item first.
func mutateKey(c *Ctx, key []byte, start *keyState, decide func(keyState) (*keyWrite, error)) error {
	k := itemKey(c.DB(), key)
	var ks keyState
	if start != nil {
		ks = *start
	} else {
		var err error
		if ks, err = readKey(c, key); err != nil {
			return err
		}
	}
	var retry model.Retry
	for {
		w, err := decide(ks)
		if err != nil || w == nil {
			return err
		}
		wo := dynastore.WriteOptions{Cond: ks.guard(), OldOnFailure: true}
		if w.Delete {
			_, err = c.Store.Delete(c, k, wo)
		} else {
			_, err = c.Store.Put(c, w.Put, wo)
		}
		if err == nil {
			return nil
		}
		cur, failed := isCondFailed(err)
		if !failed {
			return err
		}
		if err := c.lostRace(&retry); err != nil {
			return err
		}
		if ks, err = decodeKey(cur, c.NowMS()); err != nil {
			return err
		}
	}
}

// asTxCanceled is errors.As for a canceled transaction.
func asTxCanceled(err error, target **dynastore.TxCanceledError) bool {
	return errors.As(err, target)
}

// ---- arguments and registration -------------------------------------------------

// argIs reports whether arg is the option opt, compared as Redis compares
// options (strcasecmp on a C string: ASCII case folding, the argument ending
// at its first NUL byte).
func argIs(arg []byte, opt string) bool {
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	if len(arg) != len(opt) {
		return false
	}
	for i := 0; i < len(arg); i++ {
		a, b := arg[i], opt[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
