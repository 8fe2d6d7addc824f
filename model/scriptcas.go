package model

// The one-request forms of the compare-and-act scripts of lock libraries
// (the scripting package recognizes them: scripting/scriptfast.go): a
// script whose whole effect is one conditional write of one key runs as
// that write, without reading the key first. When the condition fails,
// the item the store hands back decides the script's reply; what it
// cannot decide exactly is left to the script (CASUndecided), with
// nothing written.

import (
	"bytes"
	"math"

	"github.com/redamo/redamo/dynastore"
)

// CASOutcome is what a compare-and-act write came to.
type CASOutcome uint8

const (
	// CASUndecided: only the script can decide; nothing was written.
	CASUndecided CASOutcome = iota
	// CASDone: the write was made.
	CASDone
	// CASMissing: refused, the key holds no value the script looks for
	// (no string; no hash, or an inline one without the field).
	CASMissing
	// CASOther: refused, the key holds another value (for CASSetNXPX: any
	// live key).
	CASOther
	// CASKept: HashUnlock decremented the holder's count and set the
	// expiry, rather than deleting the key.
	CASKept
)

// CASAct is the write of a compare-and-act script.
type CASAct uint8

const (
	// CASDelete deletes the key when it holds the string token.
	CASDelete CASAct = iota + 1
	// CASPExpire sets the key's expiry when it holds the string token.
	CASPExpire
	// CASSetPX sets the key to token with an expiry when it holds token.
	CASSetPX
	// CASSetNXPX sets the key to token with an expiry when nothing is there.
	CASSetNXPX
	// CASHashPExpire sets the key's expiry when it is an inline hash with
	// the field token.
	CASHashPExpire
)

// validTTL reports whether ms (milliseconds from nowMS) is an expiry the
// fast paths set themselves: PEXPIRE's and SET's refusals, and a deadline
// in the past (a delete), are the script's to run.
func validTTL(ms, nowMS int64) bool {
	return ms > 0 && ms <= math.MaxInt64/2-nowMS
}

// CompareAndAct makes act on key as one conditional request: DeleteItem,
// UpdateItem of the expiry, or PutItem of the string token; ms is the
// expiry's milliseconds (unused by CASDelete).
func CompareAndAct(c Scope, act CASAct, key, token []byte, ms int64) (CASOutcome, error) {
	if !KeyFits(key) {
		return CASUndecided, nil
	}
	now := c.NowMS()
	if act != CASDelete && !validTTL(ms, now) {
		return CASUndecided, nil
	}
	st := c.Data()
	stored, _ := EncodeValue(nil, token, OriginArg)
	k := ItemKey(c.DB(), key)
	wo := dynastore.WriteOptions{OldOnFailure: true,
		Cond: dynastore.And{CondLive(now), CondType(TypeString), dynastore.Compare{Attr: AttrValue, Op: dynastore.OpEQ, Val: stored}}}
	var err error
	switch act {
	case CASSetPX, CASSetNXPX:
		if act == CASSetNXPX {
			wo.Cond = CondNotLive(now)
		}
		_, err = st.Put(c, StringItem(c.DB(), key, token, OriginArg, now+ms), wo)
	case CASDelete:
		_, err = st.Delete(c, k, wo)
	case CASPExpire, CASHashPExpire:
		if act == CASHashPExpire {
			// A large hash keeps its fields apart: the script decides.
			wo.Cond = dynastore.And{CondLive(now), CondType(TypeHash),
				dynastore.NotExists{Attr: AttrGen}, dynastore.Contains{Attr: AttrValue, Val: dynastore.B(token)}}
		}
		at := now + ms
		_, err = st.Update(c, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: AttrExpiry, Val: NInt(at)},
			{Attr: dynastore.AttrTTL, Val: TTLSeconds(at)},
			{Attr: AttrVer, Val: NewVer()},
		}}, wo)
	}
	if err == nil {
		return CASDone, nil
	}
	old, failed := CondFailed(err)
	if !failed {
		return CASUndecided, err
	}
	switch act {
	case CASSetNXPX:
		return CASOther, nil // EXISTS found a key, of whatever type
	case CASHashPExpire:
		if _, ok := inlineHashOrNone(old, now); !ok {
			return CASUndecided, nil
		}
		return CASMissing, nil
	}
	ks, err := DecodeKey(old, now)
	switch {
	case err != nil || (ks.Live && ks.Type != TypeString):
		return CASUndecided, nil // GET fails on it: the script's error to give
	case !ks.Live:
		return CASMissing, nil
	}
	v, err := ks.StringValue()
	if err != nil || bytes.Equal(v, token) {
		return CASUndecided, nil // the same value, stored otherwise
	}
	return CASOther, nil
}

// HashLock makes Redisson's acquire one UpdateItem: the holder's field
// created (with the key) or incremented, and the expiry set, when the key
// is free or an inline hash holding the field (lim: the hash's inline
// limits); otherwise the item that refused it gives PTTL's reply, pttl
// (CASOther). What that cannot decide (an expired key still in the
// table, another type, a large hash, a field that is not an integer or
// would overflow) the script decides.
func HashLock(c Scope, lim InlineLimits, key, field []byte, ms int64) (out CASOutcome, pttl int64, err error) {
	now := c.NowMS()
	// The count the field holds must fit the inline layout as any value
	// of it may be written: the longest int64 as text.
	if !KeyFits(key) || !validTTL(ms, now) || lim.Entries < 1 || len(field) > lim.Bytes || lim.Bytes < len("-9223372036854775808") {
		return CASUndecided, 0, nil
	}
	fa, at := FieldAttr(field), now+ms
	cond := dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.And{
			CondUnexpired(now), CondType(TypeHash),
			dynastore.Contains{Attr: AttrValue, Val: dynastore.B(field)},
			dynastore.IsType{Attr: fa, Type: dynastore.KindN},
			// Room to add 1 within int64.
			dynastore.Compare{Attr: fa, Op: dynastore.OpLE, Val: NInt(math.MaxInt64 - 1)},
		},
	}
	_, err = c.Data().Update(c, ItemKey(c.DB(), key), dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: AttrType, Val: dynastore.S(TypeHash)},
			{Attr: AttrVer, Val: NewVer()},
			{Attr: AttrExpiry, Val: NInt(at)},
			{Attr: dynastore.AttrTTL, Val: TTLSeconds(at)},
		},
		Add: []dynastore.AttrValue{
			{Attr: fa, Val: NInt(1)},
			{Attr: AttrValue, Val: BSOf([][]byte{field})},
		},
	}, dynastore.WriteOptions{Cond: cond, OldOnFailure: true})
	if err == nil {
		return CASDone, 0, nil
	}
	old, failed := CondFailed(err)
	if !failed {
		return CASUndecided, 0, err
	}
	ks, ok := inlineHashOrNone(old, now)
	if !ok || !ks.Live || old.Has(fa) {
		return CASUndecided, 0, nil
	}
	pttl = -1
	if ks.HasExpiry {
		pttl = ks.Expiry - now
	}
	return CASOther, pttl, nil
}

// HashUnlock makes Redisson's release one DeleteItem when the holder's
// count is at most one (CASDone); a count above that is decremented, and
// the expiry set, by a second request conditioned on the item the first
// found (CASKept). CASMissing: the hash has no such field. What neither
// decides (an expired key still in the table, another type, a large hash,
// a count that is not an integer, a change between the two requests) the
// script decides.
func HashUnlock(c Scope, key, field []byte, ms int64) (CASOutcome, error) {
	now := c.NowMS()
	if !KeyFits(key) || !validTTL(ms, now) {
		return CASUndecided, nil
	}
	k, fa := ItemKey(c.DB(), key), FieldAttr(field)
	mine := dynastore.And{
		CondLive(now), CondType(TypeHash), dynastore.NotExists{Attr: AttrGen},
		dynastore.Contains{Attr: AttrValue, Val: dynastore.B(field)}, dynastore.IsType{Attr: fa, Type: dynastore.KindN},
	}
	_, err := c.Data().Delete(c, k, dynastore.WriteOptions{
		Cond:         append(mine, dynastore.Compare{Attr: fa, Op: dynastore.OpLE, Val: NInt(1)}),
		OldOnFailure: true,
	})
	if err == nil {
		return CASDone, nil
	}
	old, failed := CondFailed(err)
	if !failed {
		return CASUndecided, err
	}
	ks, ok := inlineHashOrNone(old, now)
	switch {
	case !ok:
		return CASUndecided, nil
	case !ks.Live || !old.Has(fa):
		return CASMissing, nil
	}
	if _, err := NumberInt(old.Get(fa)); err != nil {
		return CASUndecided, nil
	}
	at := now + ms
	_, err = c.Data().Update(c, k, dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: AttrVer, Val: NewVer()},
			{Attr: AttrExpiry, Val: NInt(at)},
			{Attr: dynastore.AttrTTL, Val: TTLSeconds(at)},
		},
		Add: []dynastore.AttrValue{{Attr: fa, Val: NInt(-1)}},
	}, dynastore.WriteOptions{Cond: ks.Guard()})
	if err != nil {
		if _, failed := CondFailed(err); failed {
			return CASUndecided, nil // it changed meanwhile: the script decides
		}
		return CASUndecided, err
	}
	return CASKept, nil
}

// inlineHashOrNone decodes the item a Redisson fast path's write found;
// ok is false when only the script can decide: a key of another type
// (the script's HEXISTS fails) or a large hash (its fields are items of
// their own).
func inlineHashOrNone(old dynastore.Item, now int64) (KeyState, bool) {
	ks, err := DecodeKey(old, now)
	return ks, err == nil && (!ks.Live || (ks.Type == TypeHash && !old.Has(AttrGen)))
}
