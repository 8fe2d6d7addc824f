package model

// The key item: how a Redis key of one database maps to a DynamoDB item,
// how that item is decoded, and the conditions every command uses so that
// an expired key is absent to reads and can be taken over by a write in
// the same single request.
//
// A key item holds:
//
//	pk   'k', db, key bytes
//	sk   0x00
//	t    S  the Redis type ("string", "hash", "list", "set", "zset", "stream")
//	v    the string value: N when it is a canonical int64 (INCR is then one
//	     UpdateItem ADD), B otherwise, or L of B chunks once APPEND has
//	     extended it (each APPEND is then one list_append)
//	e    S  the encoding OBJECT ENCODING reports, when the value alone does not
//	     imply it (Redis keeps SETRANGE/APPEND results "raw" and INCRBYFLOAT
//	     results "embstr" even when they look like integers)
//	x    N  expiry, Unix ms; absent: persistent. Whole ms, except where a
//	     deadline is finer (CL.THROTTLE's key expires at its TAT, in ns):
//	     up to six decimals, which an UpdateItem can add to. The key is
//	     expired once x <= now in ms, so a fraction counts as the next ms.
//	ttl  N  expiry in epoch seconds for DynamoDB's TTL garbage collection only
//	ver  S  a fresh random token written by every write, so optimistic
//	     read-then-write code can condition on "ver = what I read" (AttrVer)
//	tv   S  CL.THROTTLE's keys: the ver of the write that made x the TAT in
//	     v. While ver = tv no other write came since, so x still is the
//	     TAT, and an UpdateItem may move both by the same amount.
//
// Collections keep their own attributes next to t/x/ttl/ver; the helpers
// here that do not touch v work for every type.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// Key-item attribute names.
const (
	AttrType   = "t"
	AttrValue  = "v"
	AttrEnc    = "e"
	AttrExpiry = "x"
	// AttrVer is the version: a fresh random token that every write of an
	// item others may read and then write sets, so a write can be
	// conditioned on "ver is still what I read".
	AttrVer = "ver"
	// AttrTATVer is "tv" (see above).
	AttrTATVer = "tv"
	// AttrWatchMark marks the item WATCH writes for a key that has none
	// (WatchMarkItem).
	AttrWatchMark = "wm"
)

// watchMarkTTL is how long DynamoDB keeps a WATCH mark: longer than any
// MULTI a client keeps open.
const watchMarkTTL = 24 * time.Hour

// WatchMarkItem is the key item WATCH writes for key when it has no item
// at all, so that the key being created and deleted again before EXEC
// leaves a trace, as Redis's EXEC then fails. It reads as a key that
// expired long ago, so every command takes it for an absent key, and it
// carries a fresh ver: any write that creates the key replaces it, and the
// only deletes of a key item are of live keys (or of their own writes), so
// EXEC finds it unchanged exactly when nothing wrote the key. DynamoDB's
// TTL removes it after watchMarkTTL.
func WatchMarkItem(db int, key []byte, nowMS int64) dynastore.Item {
	k := ItemKey(db, key)
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: AttrType, Value: dynastore.S(TypeString)},
		{Name: AttrVer, Value: NewVer()},
		{Name: AttrExpiry, Value: NInt(1)},
		{Name: AttrWatchMark, Value: NInt(1)},
		{Name: dynastore.AttrTTL, Value: TTLSeconds(nowMS + watchMarkTTL.Milliseconds())},
	}
}

// Redis type names, as TYPE reports them and as the key item's "t" holds them.
const (
	TypeString = "string"
	TypeHash   = "hash"
	TypeList   = "list"
	TypeSet    = "set"
	TypeZSet   = "zset"
	TypeStream = "stream"
)

// MaxKeyLen is the longest Redis key redamo can store: the partition key
// also holds the namespace byte and the db number.
const MaxKeyLen = dynastore.MaxPKSize - 2

// KeyItemSK is the sort key of every key item; KeyItemSKValue is it as an
// attribute value, boxed once for every item built here (items are never
// modified once built, so they may share it).
var (
	KeyItemSK                      = []byte{0}
	KeyItemSKValue dynastore.Value = dynastore.B(KeyItemSK)
)

// ErrKeyTooLong is returned by writes to a key that cannot be stored.
var ErrKeyTooLong = fmt.Errorf("commands: key longer than %d bytes: %w", MaxKeyLen, dynastore.ErrKeyTooLarge)

// KeyPK is the partition key of a Redis key in database db.
func KeyPK(db int, key []byte) []byte {
	return AppendKeyPK(make([]byte, 0, 2+len(key)), db, key)
}

// AppendKeyPK appends KeyPK(db, key) to dst.
func AppendKeyPK(dst []byte, db int, key []byte) []byte {
	return append(append(dst, NsKey, byte(db)), key...)
}

// DBPrefix is the pk prefix shared by every key of database db.
func DBPrefix(db int) []byte { return []byte{NsKey, byte(db)} }

// ItemKey is the key of the key item of a Redis key.
func ItemKey(db int, key []byte) dynastore.Key {
	return dynastore.Key{PK: KeyPK(db, key), SK: KeyItemSK}
}

// KeyFits reports whether key can be stored at all. A key that cannot fit
// can never exist, so reads answer "absent" and writes fail with MsgKeyTooLong.
func KeyFits(key []byte) bool { return len(key) <= MaxKeyLen }

// RedisKeyOf returns the db and Redis key of a key item's pk.
func RedisKeyOf(pk []byte) (db int, key []byte, ok bool) {
	if len(pk) < 2 || pk[0] != NsKey {
		return 0, nil, false
	}
	return int(pk[1]), pk[2:], true
}

// NewVer returns a fresh version token: 64 random bits as 11 base64url
// characters. Tokens must not repeat, not be secret: math/rand/v2's
// generator (ChaCha8, seeded from the OS) is unpredictable enough and costs
// no syscall. A string rather than a Number: a store parses a Number to
// validate, normalize and size it, three times per write, and the decimal
// form takes 19 digits where these 11 bytes fit Go's tiny allocator;
// version tokens are only ever compared for equality.
func NewVer() dynastore.S {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b [11]byte
	r := rand.Uint64()
	for i := range b {
		b[i] = digits[r&63]
		r >>= 6
	}
	return dynastore.S(b[:])
}

// NInt formats an int64 as a Number.
func NInt(n int64) dynastore.N { return dynastore.N(strconv.FormatInt(n, 10)) }

// TTLSeconds is the GC attribute for an expiry in ms: one second late rather
// than early, since DynamoDB may delete any time after it.
func TTLSeconds(expiryMS int64) dynastore.N {
	return NInt(expiryMS/1000 + 1)
}

// Latest keeps the value it last built and hands it out again while its
// key stays the same. Under load the commands in a row mostly share their
// millisecond, and building a condition from the clock for each was a good
// part of a write's allocations (for INCR, a tree of eight nodes and two
// formatted numbers). The values are conditions, read-only to stores, so
// every goroutine may share them; callers that add terms wrap them in a
// new And or Or.
type Latest[K comparable, V any] struct {
	last atomic.Pointer[keyed[K, V]]
}

type keyed[K comparable, V any] struct {
	key K
	val V
}

// Reset forgets the value kept (for tests that check what is built).
func (l *Latest[K, V]) Reset() { l.last.Store(nil) }

// Get returns the value kept for key, or the one build makes for it (and
// then keeps).
func (l *Latest[K, V]) Get(key K, build func(K) V) V {
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

var clockCondsAt Latest[int64, clockConds]

func condsAt(nowMS int64) clockConds {
	return clockCondsAt.Get(nowMS, func(nowMS int64) clockConds {
		now := NInt(nowMS)
		unexpired := dynastore.Or{
			dynastore.NotExists{Attr: AttrExpiry},
			dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpGT, Val: now},
		}
		return clockConds{
			unexpired: dynastore.MustCheck(unexpired),
			live:      dynastore.MustCheck(dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, unexpired}),
			notLive: dynastore.MustCheck(dynastore.Or{
				dynastore.NotExists{Attr: dynastore.AttrPK},
				dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpLE, Val: now},
			}),
		}
	})
}

// CondLive holds when the key item exists and has not expired at nowMS.
func CondLive(nowMS int64) dynastore.Cond { return condsAt(nowMS).live }

// CondNotLive holds when the key is absent or expired at nowMS: a write
// under it takes over an expired key in the same request.
func CondNotLive(nowMS int64) dynastore.Cond { return condsAt(nowMS).notLive }

// CondUnexpired holds when the item has no expiry or one after nowMS: it is
// CondLive without attribute_exists(pk), for conditions whose other terms
// already hold only on an existing item (an ordered comparison of an
// attribute, or of its size, is false when the attribute is missing).
func CondUnexpired(nowMS int64) dynastore.Cond { return condsAt(nowMS).unexpired }

// CondType holds when the item's type is typ.
func CondType(typ string) dynastore.Cond {
	return dynastore.Compare{Attr: AttrType, Op: dynastore.OpEQ, Val: dynastore.S(typ)}
}

// CondLiveType holds when the key is live and of type typ.
func CondLiveType(nowMS int64, typ string) dynastore.Cond {
	return dynastore.And{CondLive(nowMS), CondType(typ)}
}

// CondNotLiveOrType holds when the key is absent, expired, or of type typ:
// the precondition of a write that must not touch a live key of another type.
func CondNotLiveOrType(nowMS int64, typ string) dynastore.Cond {
	return dynastore.Or{CondNotLive(nowMS), CondType(typ)}
}

// KeyState is a key item as read: the raw item (kept even when expired, so a
// following write can be conditioned on it) and what it means at the
// command's clock.
type KeyState struct {
	// Raw is the item as stored, nil if there is none.
	Raw dynastore.Item
	// Live is false when there is no item or it has expired.
	Live bool
	// Type is the Redis type ("" when not live).
	Type string
	// Expiry is the deadline in Unix ms; HasExpiry is false for a persistent key.
	Expiry    int64
	HasExpiry bool
	// big is a big string's header (bigvalue.go), nil for any other key;
	// scope is where its chunks are read (bind), nil when decoded outside
	// a command.
	big   *bigHeader
	scope Scope
}

// DecodeKey interprets a key item at nowMS.
func DecodeKey(it dynastore.Item, nowMS int64) (KeyState, error) {
	ks := KeyState{Raw: it}
	if it == nil {
		return ks, nil
	}
	if x := it.Get(AttrExpiry); x != nil {
		n, err := ExpiryMS(x)
		if err != nil {
			return ks, fmt.Errorf("commands: key item expiry: %w", err)
		}
		ks.Expiry, ks.HasExpiry = n, true
		if n <= nowMS {
			ks.Expiry, ks.HasExpiry = 0, false
			return ks, nil
		}
	}
	t, ok := it.Get(AttrType).(dynastore.S)
	if !ok {
		return ks, fmt.Errorf("commands: key item without a type: %w", dynastore.ErrInvalid)
	}
	ks.Live, ks.Type = true, string(t)
	if ks.Type == TypeString {
		h, err := bigHeaderOf(it)
		if err != nil {
			return ks, err
		}
		ks.big = h
	}
	return ks, nil
}

// Guard is the condition that the key item is still exactly as read: the
// version token seen, or no item at all. Every read-then-write uses it.
func (ks KeyState) Guard() dynastore.Cond {
	if ks.Raw == nil {
		return dynastore.NotExists{Attr: dynastore.AttrPK}
	}
	if v := ks.Raw.Get(AttrVer); v != nil {
		return dynastore.Compare{Attr: AttrVer, Op: dynastore.OpEQ, Val: v}
	}
	// Every write sets ver, so this only guards items written by hand.
	return dynastore.NotExists{Attr: AttrVer}
}

// StringValue returns a live string key's value.
func (ks KeyState) StringValue() ([]byte, error) {
	if ks.big != nil {
		return ks.loadBig()
	}
	return DecodeValue(ks.Raw.Get(AttrValue))
}

// Encodings OBJECT ENCODING reports for strings.
const (
	EncInt    = "int"
	EncEmbstr = "embstr"
	EncRaw    = "raw"
)

// EmbstrLimit is Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const EmbstrLimit = 44

// How a string value came to be, which decides the encoding Redis gives it.
type StrOrigin uint8

const (
	// OriginArg: a value from the client, run through tryObjectEncoding (SET,
	// MSET, APPEND to a missing key, ...): int, embstr or raw by content.
	OriginArg StrOrigin = iota
	// OriginFloat: created from a number text (INCRBYFLOAT): embstr or raw by length.
	OriginFloat
	// OriginEdited: modified in place (SETRANGE, APPEND): always raw.
	OriginEdited
)

// EncodeValue returns the attributes that hold a string value: v, and e when
// the value alone does not imply the encoding (nil if it does). A binary v
// is a copy of val appended to buf (non-nil), so that a caller can have it
// share an allocation with something else.
func EncodeValue(buf, val []byte, origin StrOrigin) (v dynastore.Value, e dynastore.Value) {
	_, isInt := String2ll(val)
	if isInt {
		v = dynastore.N(val)
	} else {
		start := len(buf)
		buf = append(buf, val...)
		v = dynastore.B(buf[start:len(buf):len(buf)])
	}
	switch {
	case origin == OriginEdited && (isInt || len(val) <= EmbstrLimit):
		e = dynastore.S(EncRaw)
	case origin == OriginFloat && isInt:
		e = dynastore.S(EncEmbstr)
	}
	return v, e
}

// DecodeValue turns a stored v back into the string's bytes.
func DecodeValue(v dynastore.Value) ([]byte, error) {
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

// ValueLen is the length of a stored string without concatenating chunks.
func ValueLen(v dynastore.Value) int64 {
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

// StringEncoding is the encoding Redis would report for a string key item.
func StringEncoding(it dynastore.Item) string {
	if e, ok := it.Get(AttrEnc).(dynastore.S); ok {
		return string(e)
	}
	if it.Has(AttrBig) {
		return EncRaw
	}
	switch v := it.Get(AttrValue).(type) {
	case dynastore.N:
		return EncInt
	case dynastore.L:
		// One chunk: APPEND to a missing key, which Redis encodes like SET.
		if len(v) == 1 {
			if b, ok := v[0].(dynastore.B); ok {
				if _, isInt := String2ll(b); isInt {
					return EncInt
				}
				if len(b) <= EmbstrLimit {
					return EncEmbstr
				}
			}
		}
		return EncRaw
	}
	if ValueLen(it.Get(AttrValue)) <= EmbstrLimit {
		return EncEmbstr
	}
	return EncRaw
}

// StringItem builds a whole string key item, sharing no memory with its
// arguments (a Put may hand it over). expiryMS 0 means persistent.
func StringItem(db int, key, val []byte, origin StrOrigin, expiryMS int64) dynastore.Item {
	// pk and a binary value share one allocation.
	buf := make([]byte, 0, 2+len(key)+len(val))
	buf = append(append(buf, NsKey, byte(db)), key...)
	pk := buf[:len(buf):len(buf)]
	v, e := EncodeValue(buf, val, origin)
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
		dynastore.Attr{Name: dynastore.AttrSK, Value: KeyItemSKValue},
		dynastore.Attr{Name: AttrType, Value: dynastore.S(TypeString)},
		dynastore.Attr{Name: AttrValue, Value: v},
		dynastore.Attr{Name: AttrVer, Value: NewVer()},
	)
	if e != nil {
		it = append(it, dynastore.Attr{Name: AttrEnc, Value: e})
	}
	if expiryMS != 0 {
		it = append(it,
			dynastore.Attr{Name: AttrExpiry, Value: NInt(expiryMS)},
			dynastore.Attr{Name: dynastore.AttrTTL, Value: TTLSeconds(expiryMS)})
	}
	return it
}

// Retarget returns a copy of a key item under another key with a fresh
// version (RENAME, COPY); expiry and every other attribute are kept.
func Retarget(it dynastore.Item, db int, key []byte) dynastore.Item {
	out := it.Clone(0)
	out.Set(dynastore.AttrPK, dynastore.B(KeyPK(db, key)))
	out.Set(dynastore.AttrSK, KeyItemSKValue)
	out.Set(AttrVer, NewVer())
	renewStreamWatch(&out)
	return out
}

// String2ll parses s as Redis's String2ll does: an optional '-', no '+', no
// spaces, no leading zeros, within int64. Exactly the strings that are the
// canonical decimal form of an int64 pass.
func String2ll(s []byte) (int64, bool) {
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

// NumberInt reads an N attribute as an int64.
func NumberInt(v dynastore.Value) (int64, error) {
	n, ok := v.(dynastore.N)
	if !ok {
		return 0, fmt.Errorf("commands: expected a number, got kind %d: %w", KindOf(v), dynastore.ErrInvalid)
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("commands: number %q: %w", string(n), dynastore.ErrInvalid)
	}
	return i, nil
}

// ExpiryMS reads an expiry attribute (x) as the first whole Unix ms at
// which the key is expired: x itself, or x rounded up when it has a
// fraction.
func ExpiryMS(v dynastore.Value) (int64, error) {
	n, ok := v.(dynastore.N)
	if !ok {
		return 0, fmt.Errorf("commands: expected a number, got kind %d: %w", KindOf(v), dynastore.ErrInvalid)
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	// Stores return numbers in positional notation ("1712345678901.5");
	// anything else is made so first.
	c, err := dynastore.CanonicalNumber(string(n))
	if err != nil {
		return 0, fmt.Errorf("commands: expiry %q: %w", string(n), dynastore.ErrInvalid)
	}
	whole, frac, _ := strings.Cut(string(c), ".")
	i, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || i == math.MaxInt64 {
		return 0, fmt.Errorf("commands: expiry %q: %w", string(n), dynastore.ErrInvalid)
	}
	// A positive fraction rounds up; a negative one is already rounded up
	// by dropping it ("-0.5" -> "-0").
	if frac != "" && whole[0] != '-' {
		i++
	}
	return i, nil
}

func KindOf(v dynastore.Value) dynastore.Kind {
	if v == nil {
		return 0
	}
	return v.Kind()
}

// KeyFilter selects the live key items of database db (all databases when db
// is negative) whose key starts with prefix.
func KeyFilter(db int, prefix []byte, nowMS int64) dynastore.Cond {
	var pfx []byte
	if db < 0 {
		pfx = []byte{NsKey}
	} else {
		pfx = append(DBPrefix(db), prefix...)
	}
	return dynastore.And{
		dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: pfx},
		dynastore.Compare{Attr: dynastore.AttrSK, Op: dynastore.OpEQ, Val: dynastore.B(KeyItemSK)},
		CondUnexpired(nowMS),
	}
}
