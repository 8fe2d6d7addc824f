package model

// The string operations: each a single conditional request where it can
// be (SET in all its forms, GETDEL, GETEX, APPEND to a chunked value,
// INCRBY), falling back to the read-modify-write of one key item
// (mutateKey) from the state a failed condition hands back.

import (
	"errors"
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

// Errors of the string operations, for the command layer to word.
var (
	// ErrNotInteger is a value that is not an integer (or out of range).
	ErrNotInteger = errors.New("model: value is not an integer or out of range")
	// ErrOverflow is an increment that would leave int64.
	ErrOverflow = errors.New("model: increment or decrement would overflow")
	// ErrStringTooLong is a string longer than the limit the caller gave
	// (proto-max-bulk-len).
	ErrStringTooLong = errors.New("model: string exceeds the maximum allowed size")
)

// stringOf is the value of a string key as read: nil when absent,
// ErrWrongType when it holds another type.
func stringOf(ks KeyState) ([]byte, error) {
	if !ks.Live {
		return nil, nil
	}
	if ks.Type != TypeString {
		return nil, ErrWrongType
	}
	return ks.StringValue()
}

// fitsLen is Redis's check that size+add bytes stay within max (overflow
// included).
func fitsLen(size, add, max int64) bool {
	total := size + add
	return total <= max && total >= size && total >= add
}

// ---- SET -------------------------------------------------------------------------

// SetOptions are SET's options (and its variants').
type SetOptions struct {
	NX, XX bool
	// Get asks for the key as it was (SetResult.Old).
	Get     bool
	KeepTTL bool
	// ExpireAt is the absolute deadline in Unix ms (0: none).
	ExpireAt int64
}

// SetResult is what a SET did: Written is false when NX or XX held it
// back; Old is the key as it was, with Get.
type SetResult struct {
	Written bool
	Old     KeyState
}

// SetString is SET: one PutItem, or one UpdateItem with KeepTTL.
// Concurrent blind SETs of one key share their write (setBatch).
func SetString(s Scope, key, val []byte, o SetOptions) (SetResult, error) {
	if !KeyFits(key) {
		return SetResult{}, ErrKeyTooLong
	}
	if isBig(key, int64(len(val))) {
		return setBig(s, key, val, o)
	}
	if blindSet(o, val) && Coalescable(s) {
		_, err := s.Process().hotStrings.set.DoAlone(s, hotKey(s, key), setOp{memberOf(s), val, o.ExpireAt}, func(op setOp) (struct{}, error) {
			_, err := setString(op.s, key, op.val, o)
			return struct{}{}, err
		}, func(ops []setOp) ([]struct{}, []error) { return setBatch(key, ops) })
		return SetResult{Written: err == nil}, err
	}
	return setString(s, key, val, o)
}

// setString is SetString on its own.
func setString(s Scope, key, val []byte, o SetOptions) (SetResult, error) {
	if o.KeepTTL {
		return setKeepTTL(s, key, val, o)
	}
	// Only the conditions read the clock: a plain SET needs none.
	var cond dynastore.Cond
	switch {
	case o.NX:
		cond = CondNotLive(s.NowMS())
	case o.XX && o.Get:
		cond = CondLiveType(s.NowMS(), TypeString)
	case o.XX:
		cond = CondLive(s.NowMS())
	case o.Get:
		cond = CondNotLiveOrType(s.NowMS(), TypeString)
	}
	wo := dynastore.WriteOptions{Cond: cond, OldOnFailure: o.Get, Handover: true}
	created := wantsCreated(s)
	if o.Get || created {
		wo.Return = dynastore.ReturnAllOld
	}
	old, err := s.Data().Put(s, StringItem(s.DB(), key, val, OriginArg, o.ExpireAt), wo)
	if err == nil && created {
		reportCreatedIfAbsent(s, key, old)
	}
	return setOutcome(s, o, old, err)
}

// setOutcome is a SET's result from its write's outcome: the old item on
// success (with Get), or the item that failed the condition.
func setOutcome(s Scope, o SetOptions, old dynastore.Item, err error) (SetResult, error) {
	written := err == nil
	if err != nil {
		cur, failed := CondFailed(err)
		if !failed {
			return SetResult{}, err
		}
		old = cur
	}
	if !o.Get {
		return SetResult{Written: written}, nil
	}
	ks, err := decodeIn(s, old)
	if err != nil {
		return SetResult{}, err
	}
	return SetResult{Written: written, Old: ks}, nil
}

// setBig is SET of a big value (bigvalue.go): its chunks are written
// first, then the key item is read and the SET decided on it, and
// published conditioned on the version read. A SET that NX or XX held
// back deletes the chunks it wrote.
func setBig(s Scope, key, val []byte, o SetOptions) (SetResult, error) {
	h, err := stageBig(s, key, val)
	if err != nil {
		return SetResult{}, err
	}
	var res SetResult
	err = mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		res = SetResult{Old: ks}
		switch {
		case ks.Live && ks.Type != TypeString && o.Get:
			return nil, ErrWrongType
		case (o.NX && ks.Live) || (o.XX && !ks.Live):
			return nil, nil
		}
		res.Written = true
		exp := o.ExpireAt
		if o.KeepTTL {
			exp = 0
			if ks.Live && ks.HasExpiry {
				exp = ks.Expiry
			}
		}
		return &keyWrite{put: bigStringItem(s.DB(), key, h, exp), gen: h.gen}, nil
	})
	if !res.Written && (err == nil || errors.Is(err, ErrWrongType)) {
		// Known not to be published: nothing else will ever point at them.
		discardBig(s, h)
	}
	if err != nil {
		return SetResult{}, err
	}
	if !o.Get {
		res.Old = KeyState{}
	}
	return res, nil
}

// setKeepTTL is SET ... KEEPTTL. The fast path is one UpdateItem that
// leaves x/ttl alone, allowed when the key is absent or a live string. An
// expired key must lose its old expiry and a live key of another type must
// lose its other attributes, so those cases fall back to a whole-item Put
// conditioned on the item read back from the failed update.
func setKeepTTL(s Scope, key, val []byte, o SetOptions) (SetResult, error) {
	now := s.NowMS()
	v, e := EncodeValue(make([]byte, 0, len(val)), val, OriginArg)
	u := dynastore.Update{Set: []dynastore.SetAction{
		{Attr: AttrType, Val: dynastore.S(TypeString)},
		{Attr: AttrValue, Val: v},
		{Attr: AttrVer, Val: NewVer()},
	}}
	// A big value's header and chunks' generation go (the sweeper deletes
	// the chunks).
	if e != nil {
		u.Set = append(u.Set, dynastore.SetAction{Attr: AttrEnc, Val: e})
		u.Remove = removeBig
	} else {
		u.Remove = removeEncBig
	}
	var cond dynastore.Cond
	switch {
	case o.NX:
		cond = dynastore.NotExists{Attr: dynastore.AttrPK}
	case o.XX:
		cond = CondLiveType(now, TypeString)
	default:
		cond = dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, CondLiveType(now, TypeString)}
	}
	wo := dynastore.WriteOptions{Cond: cond, OldOnFailure: true}
	created := wantsCreated(s)
	if o.Get || created {
		wo.Return = dynastore.ReturnAllOld
	}
	old, err := s.Data().Update(s, ItemKey(s.DB(), key), u, wo)
	if _, failed := CondFailed(err); !failed {
		if err == nil && created {
			reportCreatedIfAbsent(s, key, old)
		}
		return setOutcome(s, o, old, err)
	}
	start, err := failedStart(err, now)
	if err != nil {
		return SetResult{}, err
	}
	// What the old state means for the result, decided on the state the
	// final write was conditioned on.
	var res SetResult
	err = mutateKey(s, key, &start, func(ks KeyState) (*keyWrite, error) {
		res = SetResult{Old: ks}
		switch {
		case ks.Live && ks.Type != TypeString && o.Get:
			return nil, ErrWrongType
		case (o.NX && ks.Live) || (o.XX && !ks.Live):
			return nil, nil
		}
		res.Written = true
		var exp int64
		if ks.Live && ks.HasExpiry {
			exp = ks.Expiry
		}
		return &keyWrite{put: StringItem(s.DB(), key, val, OriginArg, exp)}, nil
	})
	if err != nil {
		return SetResult{}, err
	}
	if !o.Get {
		res.Old = KeyState{}
	}
	return res, nil
}

// SetStrings is MSET (MSETNX with nx): every key written in one
// transaction (one PutItem for a single key), so a failure leaves none of
// them written. keys are distinct. written is false when nx found a live
// key.
func SetStrings(s Scope, keys, vals [][]byte, nx bool) (written bool, err error) {
	for _, k := range keys {
		if !KeyFits(k) {
			return false, ErrKeyTooLong
		}
	}
	if len(keys) > dynastore.MaxTxActions {
		return false, fmt.Errorf("model: %d keys in one atomic write: %w", len(keys), dynastore.ErrTxTooLarge)
	}
	var cond dynastore.Cond
	if nx {
		cond = CondNotLive(s.NowMS())
	}
	// Big values are staged first; their key items publish them in the
	// transaction, with the checks that they were not swept meanwhile.
	var checks []dynastore.TxAction
	for i, k := range keys {
		if isBig(k, int64(len(vals[i]))) {
			checks = append(checks, dynastore.TxAction{})
		}
	}
	if len(keys)+len(checks) > dynastore.MaxTxActions {
		return false, fmt.Errorf("model: %d keys in one atomic write: %w", len(keys), dynastore.ErrTxTooLarge)
	}
	checks = checks[:0]
	if len(keys) == 1 && !isBig(keys[0], int64(len(vals[0]))) {
		_, err = s.Data().Put(s, StringItem(s.DB(), keys[0], vals[0], OriginArg, 0), dynastore.WriteOptions{Cond: cond})
	} else {
		acts := make([]dynastore.TxAction, len(keys))
		for i, k := range keys {
			w, err := stringWrite(s, k, vals[i], OriginArg, 0)
			if err != nil {
				return false, err
			}
			if w.gen != nil {
				checks = append(checks, genAliveCheck(w.gen))
			}
			acts[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: w.put, Cond: cond}
		}
		err = s.Data().Transact(s, append(acts, checks...))
	}
	if err != nil && nx && OnlyConditionsFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// ---- GETDEL, GETEX ---------------------------------------------------------------

// GetDel deletes a live string key and returns it as it was: one
// DeleteItem conditioned on a live string, so an absent or expired key is
// left as it is (an expired item may be WATCH's mark: WatchMarkItem). A
// key of another type is returned as read, not deleted.
func GetDel(s Scope, key []byte) (KeyState, error) {
	if !KeyFits(key) {
		return KeyState{}, nil
	}
	now := s.NowMS()
	old, err := s.Data().Delete(s, ItemKey(s.DB(), key), dynastore.WriteOptions{
		Cond:         CondLiveType(now, TypeString),
		Return:       dynastore.ReturnAllOld,
		OldOnFailure: true,
	})
	return oldString(s, old, err)
}

// oldString is the key as it was before a write conditioned on its being
// a string (ALL_OLD), or, when the condition failed, the item the failure
// handed back.
func oldString(s Scope, old dynastore.Item, err error) (KeyState, error) {
	if cur, failed := CondFailed(err); failed {
		old, err = cur, nil
	}
	if err != nil {
		return KeyState{}, err
	}
	return decodeIn(s, old)
}

// GetExpire is GETEX with an option that writes: it sets a live string
// key's deadline to atMS (deleting the key when atMS has passed), or with
// persist removes its expiry, and returns the key as it was. One request,
// conditioned on a live string; a key of another type is returned as read.
func GetExpire(s Scope, key []byte, atMS int64, persist bool) (KeyState, error) {
	if !KeyFits(key) {
		return KeyState{}, nil
	}
	now := s.NowMS()
	k := ItemKey(s.DB(), key)
	live := CondLiveType(now, TypeString)
	var old dynastore.Item
	var err error
	switch {
	case persist:
		// Only a key with an expiry is written; for one without, the failed
		// condition hands back the value.
		old, err = s.Data().Update(s, k, dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
			Remove: []string{AttrExpiry, dynastore.AttrTTL},
		}, dynastore.WriteOptions{
			Cond:         dynastore.And{live, dynastore.Exists{Attr: AttrExpiry}},
			Return:       dynastore.ReturnAllOld,
			OldOnFailure: true,
		})
	case atMS <= now:
		old, err = s.Data().Delete(s, k, dynastore.WriteOptions{Cond: live, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	default:
		old, err = s.Data().Update(s, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: AttrExpiry, Val: NInt(atMS)},
			{Attr: dynastore.AttrTTL, Val: TTLSeconds(atMS)},
			{Attr: AttrVer, Val: NewVer()},
		}}, dynastore.WriteOptions{Cond: live, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	}
	return oldString(s, old, err)
}

// ---- APPEND, SETRANGE ------------------------------------------------------------

// Append appends val to a string key and returns its new length: one
// UpdateItem list_append when the value is already chunked (or the key is
// new); otherwise the current value becomes the first chunk, in a Put
// conditioned on the item read back from the failed update. maxLen is
// proto-max-bulk-len; the fast path cannot check it, and need not: it is
// at least 1 MB, more than an item holds, so the item limit always bites
// first.
func Append(s Scope, key, val []byte, maxLen int64) (int64, error) {
	if !KeyFits(key) {
		return 0, ErrKeyTooLong
	}
	now := s.NowMS()
	chunk := dynastore.L{dynastore.B(append([]byte{}, val...))}
	newItem, err := s.Data().Update(s, ItemKey(s.DB(), key), dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: AttrType, Val: dynastore.S(TypeString)},
			{Attr: AttrValue, Val: dynastore.ListAppend{
				A: dynastore.IfNotExists{Attr: AttrValue, Default: dynastore.L{}},
				B: chunk,
			}},
			{Attr: AttrVer, Val: NewVer()},
		},
		Remove: []string{AttrEnc},
	}, dynastore.WriteOptions{
		Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{CondLiveType(now, TypeString), dynastore.IsType{Attr: AttrValue, Type: dynastore.KindL}},
		},
		Return:       dynastore.ReturnUpdatedNew,
		OldOnFailure: true,
	})
	if err == nil {
		if l, ok := newItem.Get(AttrValue).(dynastore.L); ok && len(l) == 1 {
			// A live chunked value already had a chunk: this one's is the
			// first, so the key is new.
			reportCreated(s, key)
		}
		return ValueLen(newItem.Get(AttrValue)), nil
	}
	// An append past what an item holds makes a big value: from a fresh read.
	var startAt *KeyState
	if !errors.Is(err, dynastore.ErrItemTooLarge) {
		start, err := failedStart(err, now)
		if err != nil {
			return 0, err
		}
		startAt = &start
	}
	var newLen int64
	err = mutateKey(s, key, startAt, func(ks KeyState) (*keyWrite, error) {
		if !ks.Live {
			newLen = int64(len(val))
			return stringWrite(s, key, val, OriginArg, 0)
		}
		if ks.Type != TypeString {
			return nil, ErrWrongType
		}
		oldLen := ks.StringLen()
		if !fitsLen(oldLen, int64(len(val)), maxLen) {
			return nil, ErrStringTooLong
		}
		if ks.editable() {
			newLen = oldLen + int64(len(val))
			return editBig(s, key, ks, oldLen, newLen, true, func(buf []byte, off int64) bool {
				copy(buf[oldLen-off:], val)
				return true
			})
		}
		if isBig(key, oldLen+int64(len(val))) {
			old, err := ks.StringValue()
			if err != nil {
				return nil, err
			}
			newLen = oldLen + int64(len(val))
			return stringWrite(s, key, append(old[:len(old):len(old)], val...), OriginEdited, ks.Expiry)
		}
		var chunks dynastore.L
		switch v := ks.Raw.Get(AttrValue).(type) {
		case dynastore.L:
			chunks = append(append(dynastore.L{}, v...), chunk[0])
		default:
			old, err := DecodeValue(v)
			if err != nil {
				return nil, err
			}
			chunks = dynastore.L{dynastore.B(old), chunk[0]}
		}
		newLen = oldLen + int64(len(val))
		it := StringItem(s.DB(), key, nil, OriginArg, ks.Expiry)
		it.Set(AttrValue, chunks)
		it.Delete(AttrEnc)
		if dynastore.ItemSize(it) > dynastore.MaxItemSize {
			// Many appends: the list's own overhead is what no longer fits.
			joined, err := DecodeValue(chunks)
			if err != nil {
				return nil, err
			}
			return stringWrite(s, key, joined, OriginEdited, ks.Expiry)
		}
		return &keyWrite{put: it}, nil
	})
	return newLen, err
}

// SetRange overwrites a string key's value from offset on with val
// (zero-padding a shorter value) and returns the new length: it reads the
// value and writes the result conditioned on the version read. An empty
// val writes nothing and returns the current length. maxLen is
// proto-max-bulk-len.
func SetRange(s Scope, key []byte, offset int64, val []byte, maxLen int64) (int64, error) {
	if !KeyFits(key) {
		return 0, ErrKeyTooLong
	}
	var reply int64
	err := mutateKey(s, key, nil, func(ks KeyState) (*keyWrite, error) {
		if ks.Live && ks.editable() {
			reply = ks.big.size
			if len(val) == 0 {
				return nil, nil
			}
			if !fitsLen(offset, int64(len(val)), maxLen) {
				return nil, ErrStringTooLong
			}
			end := offset + int64(len(val))
			reply = max(reply, end)
			return editBig(s, key, ks, offset, end, true, func(buf []byte, off int64) bool {
				copy(buf[offset-off:], val)
				return true
			})
		}
		old, err := stringOf(ks)
		if err != nil {
			return nil, err
		}
		if len(val) == 0 {
			reply = int64(len(old))
			return nil, nil
		}
		if !fitsLen(offset, int64(len(val)), maxLen) {
			return nil, ErrStringTooLong
		}
		end := offset + int64(len(val))
		nv := old
		if int64(len(nv)) < end {
			nv = make([]byte, end)
			copy(nv, old)
		} else {
			nv = append([]byte{}, old...)
		}
		copy(nv[offset:], val)
		reply = int64(len(nv))
		return stringWrite(s, key, nv, OriginEdited, ks.Expiry)
	})
	return reply, err
}

// EditString replaces a string key's value with what edit makes of it
// (old is nil when the key is absent, live false), keeping its expiry, and
// returns the new value: it reads the value and writes the result,
// conditioned on the version read; a lost race runs edit again. origin
// decides the new value's encoding. Concurrent edits of one key share
// their read and write (editOps).
func EditString(s Scope, key []byte, origin StrOrigin, edit func(old []byte, live bool) ([]byte, error)) ([]byte, error) {
	if !KeyFits(key) {
		return nil, ErrKeyTooLong
	}
	op := editOp{memberOf(s), origin, edit}
	if !Coalescable(s) {
		res, errs := editOps(s, key, []editOp{op}, func(int) {})
		return res[0], errs[0]
	}
	return s.Process().hotStrings.edit.Do(s, hotKey(s, key), op, func(ops []editOp) ([][]byte, []error) {
		if len(ops) == 1 {
			return editOps(ops[0].s, key, ops, func(int) {})
		}
		bs := newBatchScope(ops)
		return editOps(bs, key, ops, func(i int) { bs.creator = ops[i].s })
	})
}

// ---- counters ----------------------------------------------------------------

// IncrBy adds d to a counter and returns the result: one UpdateItem ADD,
// guarded so that it only applies to a missing key or a live integer
// string that cannot overflow. Anything else (an expired key, a value
// stored as text, a wrong type, an overflow) is decided from the item the
// failed update returns. Concurrent INCRBYs of one key share their update
// (incrBatch).
func IncrBy(s Scope, key []byte, d int64) (int64, error) {
	if !KeyFits(key) {
		return 0, ErrKeyTooLong
	}
	if !Coalescable(s) {
		return incrBy(s, key, d)
	}
	return s.Process().hotStrings.incr.DoAlone(s, hotKey(s, key), incrOp{memberOf(s), d}, func(op incrOp) (int64, error) {
		return incrBy(op.s, key, op.d)
	}, func(ops []incrOp) ([]int64, []error) { return incrBatch(key, ops) })
}

// incrBy is IncrBy on its own.
func incrBy(s Scope, key []byte, d int64) (int64, error) {
	now := s.NowMS()
	// The update's actions in reused memory, as its key (see Scratch).
	sc := scratchOf(s)
	if sc == nil {
		sc = new(Scratch)
	}
	acts := &sc.incr
	*acts = incrActs{
		set: [2]dynastore.SetAction{
			{Attr: AttrType, Val: litTypeString},
			{Attr: AttrVer, Val: NewVer()},
		},
		add: [1]dynastore.AttrValue{{Attr: AttrValue, Val: deltaValue(d)}},
	}
	// ALL_NEW (DynamoDB charges the same as UPDATED_NEW) in the
	// connection's memory: the embedded store copies its new item there,
	// so that nobody holds its own and the next INCR of the key changes it
	// in place; UPDATED_NEW built an item of t, ver and v for every INCR
	// only for v to be read.
	if sc.returned == nil {
		sc.returned = make(dynastore.Item, 0, 8) // a key item's attributes
	}
	ret, created := dynastore.ReturnAllNew, wantsCreated(s)
	if created {
		// The item from before tells whether the key is new; the result
		// follows from it (the condition admits no key or a number).
		ret = dynastore.ReturnAllOld
	}
	newItem, err := s.Data().Update(s, scratchItemKey(s, key), dynastore.Update{
		Set:    acts.set[:],
		Add:    acts.add[:],
		Remove: removeEnc,
	}, dynastore.WriteOptions{
		Cond:         incrCond(now, d),
		Return:       ret,
		ReturnInto:   sc.returned,
		OldOnFailure: true,
	})
	if err == nil && created {
		if newItem.Get(AttrValue) == nil {
			reportCreated(s, key)
			return d, nil
		}
		old, err := NumberInt(newItem.Get(AttrValue))
		return old + d, err
	}
	if err == nil {
		return NumberInt(newItem.Get(AttrValue))
	}
	start, err := failedStart(err, now)
	if err != nil {
		return 0, err
	}
	var result int64
	err = mutateKey(s, key, &start, func(ks KeyState) (*keyWrite, error) {
		var old int64
		if ks.Live {
			b, err := stringOf(ks)
			if err != nil {
				return nil, err
			}
			var ok bool
			if old, ok = String2ll(b); !ok {
				return nil, ErrNotInteger
			}
			if AddOverflows(old, d) {
				return nil, ErrOverflow
			}
		}
		result = old + d
		return &keyWrite{put: StringItem(s.DB(), key, []byte(fmt.Sprint(result)), OriginArg, ks.Expiry)}, nil
	})
	return result, err
}

// incrActs are the actions of INCR's update.
type incrActs struct {
	set [2]dynastore.SetAction
	add [1]dynastore.AttrValue
}

// litTypeString and removeEnc are parts of the updates of INCR, built once
// (updates are read-only to stores).
var (
	litTypeString dynastore.Operand = dynastore.S(TypeString)
	removeEnc                       = []string{AttrEnc}
	removeBig                       = []string{AttrBig, AttrGen}
	removeEncBig                    = []string{AttrEnc, AttrBig, AttrGen}
)

// deltaValue is d as a Number, without formatting and boxing INCR's and
// DECR's deltas every time.
func deltaValue(d int64) dynastore.Value {
	switch d {
	case 1:
		return dynastore.N("1")
	case -1:
		return dynastore.N("-1")
	}
	return NInt(d)
}

// incrConds holds INCR's fast-path condition for the last clock reading
// and delta (see Latest).
var incrConds Latest[[2]int64, dynastore.Cond]

// incrCond returns the condition of INCR's fast path at nowMS for delta d:
// the key is absent, or a live Number that d cannot overflow.
func incrCond(nowMS, d int64) dynastore.Cond {
	return incrConds.Get([2]int64{nowMS, d}, func(k [2]int64) dynastore.Cond {
		nowMS, d := k[0], k[1]
		// No type check: only a string key ever holds a Number in v
		// (collections keep a set or a list there), so a Number v is a
		// string's. Past the NotExists the item exists, and room, an
		// ordered comparison with a Number, holds only on a Number: the
		// condition says neither again (the embedded store evaluates every
		// node; DynamoDB's expression builder drops implied ones anyway).
		var live dynastore.Cond = dynastore.IsType{Attr: AttrValue, Type: dynastore.KindN}
		if room := IncrRoom(AttrValue, d); room != nil {
			live = room
		}
		return dynastore.MustCheck(dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{CondUnexpired(nowMS), live},
		})
	})
}
