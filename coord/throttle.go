package coord

// CL.THROTTLE's recipe: the rate limiter of redis-cell (a Redis module),
// on the key item. The arithmetic is in gcra.go; this file decides which
// DynamoDB request applies a call (commands/throttle.go parses and
// replies).
//
// The key is an ordinary string key, as in redis-cell: it holds the
// theoretical arrival time (TAT) in Unix nanoseconds, so DEL resets it,
// TYPE says string and GET shows the TAT. It expires when the TAT passes
// (the bucket is empty again): its expiry attribute is the TAT itself, in
// ms with the nanoseconds as decimals, so that an UpdateItem that adds to
// the TAT can move the expiry by the same amount.
//
// A call finds the key in one of three states, each with its own request:
//   - empty (absent, expired, or a TAT not after now): the call is allowed
//     and the TAT becomes now + increment, whatever it was: a PutItem
//     conditioned on that state (planFresh);
//   - filling (a TAT after now, with room for the increment): an UpdateItem
//     adding the increment to the TAT and to the expiry, conditioned on the
//     TAT being where the call is allowed, and on the last write of the key
//     being CL.THROTTLE's (ver = tv), so that its expiry is the TAT
//     (planBump). Concurrent calls from any number of instances each apply
//     in one request: none conditions on a value another may have changed,
//     only on the room left;
//   - full: the call is limited and nothing changes: a GetItem reads the
//     TAT the reply is computed from (planRead).
//
// Which request to send is guessed from the TAT this process last saw for
// the key (tatCache). A write whose condition fails returns the item as it
// was, an atomic snapshot: a limited call is answered from it with no
// other request, and only an allowed call whose state was guessed wrong
// costs a second one. What neither write covers (a key another command
// wrote last, a TAT stored as text, arguments that move the TAT back) is
// decided on a snapshot and written conditioned on the item's version
// (planGuard); so is every call in a transaction (MULTI, scripts), which
// reads the key first.

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// throttlePlan is the request an attempt sends.
type throttlePlan uint8

const (
	planRead  throttlePlan = iota // GetItem, then decide on what it read
	planFresh                     // PutItem of now + increment onto an empty bucket
	planBump                      // UpdateItem adding the increment to the TAT
	planGuard                     // PutItem decided on a snapshot, conditioned on its version
)

// ThrottleClock is the clock of a CL.THROTTLE call: Now is the command's
// reading, fixed until Again takes a fresh one.
type ThrottleClock struct {
	Now   func() time.Time
	Again func()
}

// ThrottleReply is the outcome of a CL.THROTTLE call, as redis-cell
// replies it: limited or not, the limit, the calls remaining, and the
// seconds until a retry may succeed (-1 when allowed) and until the bucket
// is empty again.
type ThrottleReply struct {
	Limited                                  bool
	Limit, Remaining, RetryAfter, ResetAfter int64
}

// ErrTATExpire is an allowed call whose TAT makes the key persist past a
// failed expiry: redis-cell writes it and answers "Error while setting
// key expire".
var ErrTATExpire = errors.New("coord: CL.THROTTLE: error while setting key expire")

// BadTATError is a key whose string is not a TAT: redis-cell's parse error
// (Rust's ParseIntError), where redis-cell would crash Redis.
type BadTATError struct{ Msg string }

func (e *BadTATError) Error() string { return "coord: CL.THROTTLE: stored TAT: " + e.Msg }

// Throttle applies one CL.THROTTLE call of quota q on key (of c's
// database) and returns its outcome. An allowed call whose TAT makes the
// key persist past a failed expiry is written and answered with
// ErrTATExpire; a key of another type is model.ErrWrongType.
func (s *Service) Throttle(c model.Scope, key []byte, q GCRAQuota, clk ThrottleClock) (ThrottleReply, error) {
	r, err := s.throttleCoalesced(c, key, q, clk)
	return ThrottleReply{
		Limited:    r.limited,
		Limit:      r.limit,
		Remaining:  r.remaining,
		RetryAfter: cellSeconds(r.retryAfter),
		ResetAfter: cellSeconds(r.resetAfter),
	}, err
}

// throttle applies one call and returns its outcome.
func (s *Service) throttle(c model.Scope, key []byte, q GCRAQuota, clk ThrottleClock) (gcraResult, error) {
	k := model.ItemKey(c.DB(), key)
	st := c.Data()
	inTxn := model.UnitTxn(c) != nil
	slot, tag := s.tats.slot(c.DB(), key)
	var (
		// snap is the item as the store last returned it; known says there
		// is one, lost that it came back from a failed write.
		snap        dynastore.Item
		known, lost bool
		res         gcraResult
	)
	// An attempt ends in a lost race when a write found the key changed
	// and the snapshot it returned allows the call: the unit of work
	// then runs again, at a fresh clock reading.
	err := model.RetryConflicts(c, func(int) error {
		for {
			now := clk.Now()
			res = gcraResult{}
			plan := planRead
			if known {
				r, tat, err := decideOn(snap, q, now)
				if err != nil || r.limited {
					slot.remember(tag, tat)
					res = r
					return err
				}
				if lost {
					// The snapshot answers nothing by itself.
					lost = false
					return model.ErrConflict
				}
				res, plan = r, planGuard
				if !inTxn {
					plan = q.planFor(snap, now)
				}
			} else if !inTxn {
				plan = q.guess(slot.recall(tag), now.UnixNano())
			}

			var err error
			switch plan {
			case planRead:
				if snap, err = st.Get(c, k); err != nil {
					return err
				}
				known = true
				if !inTxn {
					// Decide as of after the read, so not before a call
					// whose write it saw (a script's time stands still).
					clk.Again()
				}
				continue
			case planFresh:
				res = q.at(spanOf(now.UnixNano()), span{}, false)
				_, err = st.Put(c, tatItem(c.DB(), key, res), dynastore.WriteOptions{
					Cond:         q.freshCond(now),
					OldOnFailure: true,
					Handover:     true,
				})
			case planBump:
				var it dynastore.Item
				it, err = st.Update(c, k, q.bumpUpdate(now), dynastore.WriteOptions{
					Cond:         q.bumpCond(now),
					Return:       dynastore.ReturnUpdatedNew,
					OldOnFailure: true,
				})
				if err == nil {
					// The update lands after every call it follows, whatever
					// their clock readings: the reply is decided as of after it.
					clk.Again()
					res, err = q.bumped(it, now, clk.Now())
				}
			case planGuard:
				_, err = st.Put(c, tatItem(c.DB(), key, res), dynastore.WriteOptions{
					Cond:         model.KeyState{Raw: snap}.Guard(),
					OldOnFailure: true,
					Handover:     true,
				})
			}
			if err == nil {
				slot.remember(tag, storedTAT{res.tat, true})
				if res.expiry() == expireNeverAndFail {
					return ErrTATExpire
				}
				return nil
			}
			cur, failed := model.CondFailed(err)
			if !failed {
				return err
			}
			snap, known, lost = cur, true, true
		}
	})
	return res, err
}

// storedTAT is a key's TAT as a call found it: has is false when the key
// is absent.
type storedTAT struct {
	tat span
	has bool
}

// decideOn decides a call at now on a snapshot of the key item: WRONGTYPE
// for a key of another type, redis-cell's parse error for a string that
// is not a TAT (where redis-cell would crash Redis).
func decideOn(it dynastore.Item, q GCRAQuota, now time.Time) (gcraResult, storedTAT, error) {
	ks, err := model.DecodeKey(it, now.UnixMilli())
	if err != nil {
		return gcraResult{}, storedTAT{}, err
	}
	var st storedTAT
	if ks.Live {
		if ks.Type != model.TypeString {
			return gcraResult{}, storedTAT{}, model.ErrWrongType
		}
		b, err := ks.StringValue()
		if err != nil {
			return gcraResult{}, storedTAT{}, err
		}
		n, msg := parseRustU64(b)
		if msg != "" {
			return gcraResult{}, storedTAT{}, &BadTATError{Msg: msg}
		}
		st = storedTAT{spanOfU64(n), true}
	}
	return q.at(spanOf(now.UnixNano()), st.tat, st.has), st, nil
}

// fits reports whether the write forms (planFresh, planBump) serve the
// call at nowNS: the increment does not move the TAT back, the call is not
// bound to be limited, and the fullest bucket ends within int64
// nanoseconds. Other calls are decided on a snapshot.
func (q GCRAQuota) fits(nowNS int64) bool {
	return q.increment >= 0 && q.increment <= q.tolerance && q.tolerance <= math.MaxInt64-nowNS
}

// guess picks the first request from the TAT this process last saw (0:
// none or unknown). The TAT of a live key only grows, so one seen in the
// future is still there, at least: a bucket seen full is read (a read is
// cheaper than a failed write), one seen filling is bumped; a key never
// seen, or seen empty, is most likely empty (a new key).
func (q GCRAQuota) guess(seen, nowNS int64) throttlePlan {
	switch {
	case !q.fits(nowNS):
		return planRead
	case seen <= nowNS:
		return planFresh
	case seen-nowNS > q.tolerance-q.increment:
		return planRead
	}
	return planBump
}

// planFor picks the write for an allowed call decided on snapshot it: the
// write form whose condition the snapshot meets, so that a write that
// fails again has met another writer; planGuard when neither does.
func (q GCRAQuota) planFor(it dynastore.Item, now time.Time) throttlePlan {
	if !q.fits(now.UnixNano()) {
		return planGuard
	}
	if dynastore.EvalValidCond(it, q.freshCond(now)) {
		return planFresh
	}
	if dynastore.EvalValidCond(it, q.bumpCond(now)) {
		return planBump
	}
	return planGuard
}

// freshCond holds on an empty bucket: no live key, or a string whose TAT
// is a Number not after now.
func (q GCRAQuota) freshCond(now time.Time) dynastore.Cond {
	return dynastore.Or{
		model.CondNotLive(now.UnixMilli()),
		dynastore.And{
			model.CondType(model.TypeString),
			dynastore.Compare{Attr: model.AttrValue, Op: dynastore.OpGE, Val: dynastore.N("0")},
			dynastore.Compare{Attr: model.AttrValue, Op: dynastore.OpLE, Val: model.NInt(now.UnixNano())},
		},
	}
}

// bumpCond holds on a filling bucket with room for the increment: a
// string whose TAT is a Number after now and at most the top of the
// bucket less the increment, last written by CL.THROTTLE with the TAT as
// its expiry (ver = tv), which the update can then move with the TAT.
func (q GCRAQuota) bumpCond(now time.Time) dynastore.Cond {
	nowNS := now.UnixNano()
	return dynastore.And{
		model.CondType(model.TypeString),
		dynastore.Compare{Attr: model.AttrValue, Op: dynastore.OpGT, Val: model.NInt(nowNS)},
		dynastore.Compare{Attr: model.AttrValue, Op: dynastore.OpLE, Val: model.NInt(nowNS + q.tolerance - q.increment)},
		dynastore.CompareAttrs{A: model.AttrVer, Op: dynastore.OpEQ, B: model.AttrTATVer},
	}
}

// bumpUpdate adds the increment to the TAT and its expiry. The GC
// attribute cannot follow exactly: it gets the latest the key can expire.
func (q GCRAQuota) bumpUpdate(now time.Time) dynastore.Update {
	ver := model.NewVer()
	return dynastore.Update{Set: []dynastore.SetAction{
		{Attr: model.AttrValue, Val: dynastore.Plus{A: dynastore.Ref{Attr: model.AttrValue}, B: model.NInt(q.increment)}},
		{Attr: model.AttrExpiry, Val: dynastore.Plus{A: dynastore.Ref{Attr: model.AttrExpiry}, B: expiryN(spanOf(q.increment))}},
		{Attr: dynastore.AttrTTL, Val: model.TTLSeconds(ceilMS(spanOf(now.UnixNano() + q.tolerance)))},
		{Attr: model.AttrEnc, Val: dynastore.S(model.EncEmbstr)},
		{Attr: model.AttrVer, Val: ver},
		{Attr: model.AttrTATVer, Val: ver},
	}}
}

// bumped is the outcome of a call planBump applied, from the TAT it left.
// It is decided at the later of the two clock readings, but before the TAT
// the update found (which bumpCond had after now): the reply describes the
// filling bucket the update wrote, never an empty one.
func (q GCRAQuota) bumped(it dynastore.Item, now, later time.Time) (gcraResult, error) {
	v, ok := it.Get(model.AttrValue).(dynastore.N)
	if !ok {
		return gcraResult{}, fmt.Errorf("coord: CL.THROTTLE: updated TAT of kind %d: %w", model.KindOf(it.Get(model.AttrValue)), dynastore.ErrInvalid)
	}
	n, msg := parseRustU64([]byte(v))
	if msg != "" {
		return gcraResult{}, fmt.Errorf("coord: CL.THROTTLE: updated TAT %q: %s: %w", string(v), msg, dynastore.ErrInvalid)
	}
	found := spanOfU64(n).sub(spanOf(q.increment))
	at := spanOf(max(now.UnixNano(), later.UnixNano()))
	if at.cmp(found) >= 0 {
		at = found.sub(span{nsec: 1})
	}
	return q.at(at, found, true), nil
}

// tatItem is the key item an allowed call leaves: the TAT as redis-cell
// writes it (a u64 decimal string, which Redis keeps "embstr") and the
// expiry its outcome gives.
func tatItem(db int, key []byte, r gcraResult) dynastore.Item {
	it := model.StringItem(db, key, strconv.AppendUint(nil, r.tat.u64(), 10), model.OriginFloat, 0)
	if r.expiry() == expireAtTAT {
		it = append(it,
			dynastore.Attr{Name: model.AttrExpiry, Value: expiryN(r.tat)},
			dynastore.Attr{Name: dynastore.AttrTTL, Value: model.TTLSeconds(ceilMS(r.tat))},
			dynastore.Attr{Name: model.AttrTATVer, Value: it.Get(model.AttrVer)})
	}
	return it
}

// expiryN is the expiry attribute for the instant t since the epoch: Unix
// ms, with the nanoseconds as up to six decimals.
func expiryN(t span) dynastore.N {
	if t.sec < 0 {
		return "-" + expiryN(t.neg())
	}
	b := strconv.AppendInt(nil, t.sec*1_000+t.nsec/1_000_000, 10)
	if frac := t.nsec % 1_000_000; frac != 0 {
		b = append(b, '.')
		for d := int64(100_000); frac != 0; d /= 10 {
			b = append(b, byte('0'+frac/d))
			frac %= d
		}
	}
	return dynastore.N(b)
}

// ceilMS is t in whole ms, rounded up.
func ceilMS(t span) int64 {
	ms := t.sec*1_000 + t.nsec/1_000_000
	if t.nsec%1_000_000 != 0 {
		ms++
	}
	return ms
}

// tatCache remembers, for a bounded number of keys, the TAT this process
// last saw, to guess the request a call needs. It is only ever a guess: a
// wrong one costs a second request, never a wrong reply. So a slot holds
// a 64-bit hash of its key and the TAT, with no lock: a collision, or a
// hash and a TAT from two writers, is just a wrong guess.
type tatCache struct {
	once  sync.Once
	seed  maphash.Seed
	slots []tatSlot
}

// tatCacheSlots bounds the keys remembered (16 bytes each).
const tatCacheSlots = 4096

type tatSlot struct {
	tag atomic.Uint64
	tat atomic.Int64
}

// slot returns the slot of a key and the tag that marks it as the key's.
func (tc *tatCache) slot(db int, key []byte) (*tatSlot, uint64) {
	tc.once.Do(func() {
		tc.seed = maphash.MakeSeed()
		tc.slots = make([]tatSlot, tatCacheSlots)
	})
	h := maphash.Bytes(tc.seed, key)*31 + uint64(db)
	return &tc.slots[h%tatCacheSlots], h | 1 // 0 is no key's tag
}

// recall returns the TAT remembered for the key tagged tag, 0 if none.
func (s *tatSlot) recall(tag uint64) int64 {
	if s.tag.Load() != tag {
		return 0
	}
	return s.tat.Load()
}

// remember records the key's TAT.
func (s *tatSlot) remember(tag uint64, st storedTAT) {
	ns, ok := st.tat.int64NS()
	if !st.has || !ok {
		ns = 0
	}
	s.tat.Store(ns)
	s.tag.Store(tag)
}
