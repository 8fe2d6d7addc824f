// Package coord holds redamo's coordination recipes on the model layer:
// locks with fencing tokens, leader election with terms, queues, the rate
// limiter of CL.THROTTLE (throttle.go), and the waits and counters they
// share. Each takes the command's model.Scope. A lock and an election are the same thing
// underneath, a lease: one item per name, in a namespace of its own
// (user commands never see or delete it), holding who holds it, until
// when, and a counter that every grant from a free or expired state
// raises by one. The counter is the lock's fencing token and the
// election's term; the item is never deleted, so it never goes back.
//
// Every operation is one conditional DynamoDB request, decided on the
// item as it is when DynamoDB applies the write: a refused request brings
// back the item that refused it, which says why. Only an owner acquiring
// a lock it already holds takes a second request (the first one, written
// for a free lock, is refused and shows the owner's own lease).
package coord

import (
	"errors"
	"fmt"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Lease item attributes.
const (
	attrHolder  = "o" // B: the holder; absent while free
	attrToken   = "f" // N: the last token (term) granted; never removed
	attrExpiry  = "x" // N: Unix ms the lease ends; absent while free
	attrGranted = "a" // N: Unix ms of the grant
	attrRenewed = "h" // N: Unix ms of the last grant or renewal
	attrValue   = "v" // B: the leader's value
)

// MaxMargin caps the clock margin (see Clock). Two margins apply to one
// takeover (the granting instance's and the taking one's), so the
// guarantee costs at most a second of lease.
const MaxMargin = 500 * time.Millisecond

// ErrNotOwner is a release, extension or guard by someone who does not
// hold the lease (another holder does, or with another token).
var ErrNotOwner = errors.New("coord: not the owner")

// ErrNameTooLong is a lock or election name that cannot be stored.
var ErrNameTooLong = fmt.Errorf("coord: name longer than %d bytes: %w", dynastore.MaxPKSize-1, dynastore.ErrKeyTooLarge)

// Clock is one reading of the instance's clock, corrected to DynamoDB's,
// and how far off it may be. Expiry decisions are made inside DynamoDB's
// conditions with this reading, so instances agree whatever their own
// clocks say; the margin covers the rest of the disagreement. A lease is
// written to end a margin later than asked (the holder's own count of its
// TTL, started before it asked, then ends first), and taken over only a
// margin after its end (so a taker whose clock runs ahead never takes a
// lease its holder still counts on).
type Clock struct {
	NowMS    int64
	MarginMS int64
}

// NewClock reads now with uncertainty u, capping the margin at MaxMargin.
func NewClock(now time.Time, u time.Duration) Clock {
	return Clock{NowMS: now.UnixMilli(), MarginMS: min(u, MaxMargin).Milliseconds()}
}

// Lease is a lease item as read.
type Lease struct {
	Holder    []byte // nil while free
	Token     int64  // the last token granted (0: never granted)
	ExpiryMS  int64
	GrantedMS int64
	RenewedMS int64
	Value     []byte
	HasValue  bool
}

// Held reports whether someone holds the lease at clk.
func (l Lease) Held(clk Clock) bool { return l.Holder != nil && l.ExpiryMS > clk.NowMS }

// PTTL is the time the lease has left at clk, in ms.
func (l Lease) PTTL(clk Clock) int64 { return l.ExpiryMS - clk.NowMS }

func decodeLease(it dynastore.Item) (Lease, error) {
	var l Lease
	if it == nil {
		return l, nil
	}
	if h, ok := it.Get(attrHolder).(dynastore.B); ok {
		l.Holder = h
	}
	for _, f := range []struct {
		attr string
		dst  *int64
	}{{attrToken, &l.Token}, {attrExpiry, &l.ExpiryMS}, {attrGranted, &l.GrantedMS}, {attrRenewed, &l.RenewedMS}} {
		if v := it.Get(f.attr); v != nil {
			n, err := model.NumberInt(v)
			if err != nil {
				return Lease{}, fmt.Errorf("coord: lease attribute %s: %w", f.attr, err)
			}
			*f.dst = n
		}
	}
	l.Value, l.HasValue = it.Get(attrValue).(dynastore.B)
	return l, nil
}

// leaseKey is the item of lease name in namespace ns.
func leaseKey(ns byte, name []byte) (dynastore.Key, error) {
	if len(name)+1 > dynastore.MaxPKSize {
		return dynastore.Key{}, ErrNameTooLong
	}
	return dynastore.Key{PK: append([]byte{ns}, name...), SK: model.KeyItemSK}, nil
}

// readLease reads the lease at k.
func readLease(c model.Scope, k dynastore.Key) (Lease, error) {
	it, err := c.Data().Get(c, k)
	if err != nil {
		return Lease{}, err
	}
	return decodeLease(it)
}

// value says what a grant or renewal does with the lease's value: nothing
// (keep), set it, or clear it.
type value struct {
	set, clear bool
	v          []byte
}

func (v value) apply(u *dynastore.Update) {
	switch {
	case v.set:
		u.Set = append(u.Set, dynastore.SetAction{Attr: attrValue, Val: dynastore.B(v.v)})
	case v.clear:
		u.Remove = append(u.Remove, attrValue)
	}
}

// grantResult is what a grant attempt found.
type grantResult struct {
	Granted bool
	// Renewed: the holder already held it and kept its token.
	Renewed bool
	// TookOver: the grant took over a lease that had expired unreleased.
	TookOver bool
	Lease    Lease
}

// grant gives the lease at k to holder for ttl: a new token when it is
// free or expired, the holder's own token (its lease renewed, onNew's
// value kept unless onRenew sets it) when the holder still holds it. When
// another holder has it, the result is not granted and carries that
// holder's lease.
func grant(c model.Scope, k dynastore.Key, holder []byte, ttlMS int64, clk Clock, onNew, onRenew value) (grantResult, error) {
	var r grantResult
	err := model.RetryConflicts(c, func(int) error {
		expiry := model.NInt(clk.NowMS + clk.MarginMS + ttlMS)
		now := model.NInt(clk.NowMS)
		u := dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: attrHolder, Val: dynastore.B(holder)},
				{Attr: attrExpiry, Val: expiry},
				{Attr: attrGranted, Val: now},
				{Attr: attrRenewed, Val: now},
			},
			Add: []dynastore.AttrValue{{Attr: attrToken, Val: dynastore.N("1")}},
		}
		onNew.apply(&u)
		free := dynastore.Or{
			dynastore.NotExists{Attr: attrHolder},
			dynastore.Compare{Attr: attrExpiry, Op: dynastore.OpLE, Val: model.NInt(clk.NowMS - clk.MarginMS)},
		}
		old, err := c.Data().Update(c, k, u, dynastore.WriteOptions{Cond: free, Return: dynastore.ReturnAllOld, OldOnFailure: true})
		if err == nil {
			prev, err := decodeLease(old)
			if err != nil {
				return err
			}
			l := Lease{Holder: holder, Token: prev.Token + 1, ExpiryMS: clk.NowMS + clk.MarginMS + ttlMS, GrantedMS: clk.NowMS, RenewedMS: clk.NowMS}
			l.Value, l.HasValue = onNew.v, onNew.set
			r = grantResult{Granted: true, TookOver: prev.Holder != nil, Lease: l}
			return nil
		}
		found, failed := model.CondFailed(err)
		if !failed {
			return err
		}
		cur, err := decodeLease(found)
		if err != nil {
			return err
		}
		if string(cur.Holder) != string(holder) || !cur.Held(clk) {
			// Held by another, or in the margin after its end where
			// nobody may take it yet.
			r = grantResult{Lease: cur}
			return nil
		}
		l, ok, err := renew(c, k, holder, cur.Token, ttlMS, clk, onRenew)
		if err != nil || ok {
			r = grantResult{Granted: ok, Renewed: ok, Lease: l}
			return err
		}
		// The lease changed between the two requests: decide again.
		return model.ErrConflict
	})
	if err != nil {
		return grantResult{}, err
	}
	return r, nil
}

// renew extends holder's lease with token (0: any) to ttl from clk, and
// applies val. It reports false, with the lease as it is, when holder
// does not hold it with that token.
func renew(c model.Scope, k dynastore.Key, holder []byte, token, ttlMS int64, clk Clock, val value) (Lease, bool, error) {
	u := dynastore.Update{Set: []dynastore.SetAction{
		{Attr: attrExpiry, Val: model.NInt(clk.NowMS + clk.MarginMS + ttlMS)},
		{Attr: attrRenewed, Val: model.NInt(clk.NowMS)},
	}}
	val.apply(&u)
	it, err := c.Data().Update(c, k, u, dynastore.WriteOptions{Cond: heldBy(holder, token, clk), Return: dynastore.ReturnAllNew, OldOnFailure: true})
	return settle(it, err)
}

// release ends holder's lease with token (0: any), keeping the token
// counter. It reports false, with the lease as it is, when holder does not
// hold it with that token.
func release(c model.Scope, k dynastore.Key, holder []byte, token int64, clk Clock) (Lease, bool, error) {
	u := dynastore.Update{Remove: []string{attrHolder, attrExpiry, attrGranted, attrRenewed, attrValue}}
	it, err := c.Data().Update(c, k, u, dynastore.WriteOptions{Cond: heldBy(holder, token, clk), Return: dynastore.ReturnAllOld, OldOnFailure: true})
	return settle(it, err)
}

// settle turns a conditional write's outcome into (lease, done, err): the
// item written (or replaced) when it went through, the item that refused
// it when it did not.
func settle(it dynastore.Item, err error) (Lease, bool, error) {
	var cf *dynastore.ConditionFailedError
	switch {
	case err == nil:
		l, err := decodeLease(it)
		return l, true, err
	case errors.As(err, &cf):
		l, err := decodeLease(cf.Old)
		return l, false, err
	}
	return Lease{}, false, err
}

// heldBy is the condition that holder holds the lease (with token, unless
// 0) and it has not ended at clk.
func heldBy(holder []byte, token int64, clk Clock) dynastore.Cond {
	c := dynastore.And{
		dynastore.Compare{Attr: attrHolder, Op: dynastore.OpEQ, Val: dynastore.B(holder)},
		dynastore.Compare{Attr: attrExpiry, Op: dynastore.OpGT, Val: model.NInt(clk.NowMS)},
	}
	if token != 0 {
		c = append(c, dynastore.Compare{Attr: attrToken, Op: dynastore.OpEQ, Val: model.NInt(token)})
	}
	return c
}

// guardCond is what a fenced commit requires of the lease: granted with
// token and not released or ended at clk. Another grant changes the
// token, so a write fenced by a lost lease never commits.
func guardCond(token int64, clk Clock) dynastore.Cond {
	return dynastore.And{
		dynastore.Exists{Attr: attrHolder},
		dynastore.Compare{Attr: attrToken, Op: dynastore.OpEQ, Val: model.NInt(token)},
		dynastore.Compare{Attr: attrExpiry, Op: dynastore.OpGT, Val: model.NInt(clk.NowMS)},
	}
}

// refusal says why holder's release or renewal with token (0: any) was
// refused by lease l: nobody holds it any more (false, nil), or someone
// else does, or holder with another token (ErrNotOwner).
func refusal(l Lease, holder []byte, token int64, clk Clock) error {
	if !l.Held(clk) {
		return nil
	}
	if string(l.Holder) != string(holder) || (token != 0 && l.Token != token) {
		return ErrNotOwner
	}
	// It is holder's, with that token: the lease changed between the
	// write and the read of what refused it, which one conditional
	// request cannot do.
	return fmt.Errorf("coord: lease refused a write it allows: %w", dynastore.ErrTxConflict)
}
