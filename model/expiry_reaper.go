package model

// The reaper deletes the keys of the expiry index (expiry.go) whose TTL
// passed and reports each one deleted (Redis's "expired" event), within
// about a second of its expiry, whether or not a client touches it.
//
//   - One instance reaps at a time: the holder of a lease item in the
//     index's namespace. Reaping twice would be harmless (below) but would
//     double the reads; the others read the lease once per lease period and
//     take it over when it lapses, within LeaseTTL of its holder's death.
//     The lease item also keeps how far the holder got (its cursor), so a
//     new holder goes on from there. After a long pause (events off, every
//     instance down) it starts at most expiryCatchUp back: an event that
//     late would tell a subscriber little, and Redis, which expires keys
//     actively, raises none for keys that expired while nobody listened.
//   - A pass reads the entries that came due since the cursor, reads their
//     key items (BatchGetItem), and deletes each key still expired with the
//     condition that its item is the one read (same ver and x). Only a
//     delete that succeeds reports the key, so two reapers, or a write that
//     replaced or extended the key since, never raise a second event or a
//     wrong one. A key whose TTL moved later has an entry of its own at the
//     new time (the write that moved it recorded it); deleting a large
//     collection's key item is enough, the sweeper collects its members.
//   - An entry written after the passes may have gone past its place (a
//     slow index write) is handed to the writing instance's reaper
//     (ExpiryIndex.Late), which reaps it at its next pass, lease or not.
//   - While expiry events are not wanted it makes no request at all, and
//     lets the lease lapse.
//
// Requests go through the Store with the label "expiry-reaper" and a
// token bucket caps them at Rate per second, as the sweeper's.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// ReaperLabel is the request label of the reaper's store requests.
const ReaperLabel = "expiry-reaper"

const (
	// reaperLag is how far behind the clock a pass reads: an entry is
	// due no earlier than expiryFlushDelay after its write was recorded,
	// so this leaves the index write that long (and the instances' clocks
	// their disagreement) to land before the pass reads its place.
	reaperLag = 250 * time.Millisecond
	// expiryCatchUp is how far back a new lease holder reads at most.
	expiryCatchUp = time.Minute
	// Lease item attributes: holder, lease end (ms), cursor (ms).
	attrReaperHolder = "h"
	attrReaperUntil  = "u"
	attrReaperCursor = "c"
)

// reaperLeaseKey is the lease item.
var reaperLeaseKey = dynastore.Key{PK: []byte{NsExpiry}, SK: []byte{0}}

// Reaper deletes expired keys recorded in the expiry index and reports
// them.
type Reaper struct {
	Store dynastore.Store
	// Clock is the time source (nil: the store's clock, as the sweeper's).
	Clock func() time.Time
	// Wanted reports whether expiry events are wanted (nil: never).
	Wanted func() bool
	// Expired is told each key the reaper deleted; it must not block.
	Expired func(db int, key []byte)
	// ID names this reaper in the lease (default: random).
	ID string
	// Interval is the pause between passes (default 1 second).
	Interval time.Duration
	// LeaseTTL is how long a lease lasts unrenewed (default 5 seconds);
	// the holder renews it every third of that.
	LeaseTTL time.Duration
	// Rate caps the reaper's store requests per second (default 500).
	Rate int

	// Reaped counts the keys deleted and reported.
	Reaped int64

	limit   tokenBucket
	lateMu  sync.Mutex
	late    []dynastore.Item
	holding bool
	failing bool  // the last pass could not read the index
	renewed int64 // when the lease was last written, ms
	nextTry int64 // when a non-holder reads the lease again, ms
	cursor  int64 // every entry due up to here is done, ms
}

func (r *Reaper) id() string {
	if r.ID == "" {
		var b [9]byte
		_, _ = rand.Read(b[:])
		r.ID = base64.RawURLEncoding.EncodeToString(b[:])
	}
	return r.ID
}

func (r *Reaper) leaseTTL() int64 {
	if r.LeaseTTL > 0 {
		return r.LeaseTTL.Milliseconds()
	}
	return 5000
}

func (r *Reaper) wait(ctx context.Context) error {
	rate := r.Rate
	if rate <= 0 {
		rate = 500
	}
	return r.limit.wait(ctx, rate)
}

// Late queues index entries for the next pass: entries written after a
// pass may have read their place (ExpiryIndex.Late), and those a pass
// could not handle. The next pass reaps them whether or not this reaper
// holds the lease: its deletes are conditional like any pass's, so the
// holder reaping them too raises no second event.
func (r *Reaper) Late(entries []dynastore.Item) {
	r.lateMu.Lock()
	defer r.lateMu.Unlock()
	if len(r.late)+len(entries) <= expiryMaxPending {
		r.late = append(r.late, entries...)
	}
}

// Run makes a pass every Interval until ctx ends, then gives up the
// lease, so that another instance takes it at its next look rather than
// once it lapses.
func (r *Reaper) Run(ctx context.Context) {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = r.Resign(rctx)
			cancel()
			return
		case <-t.C:
		}
		_ = r.PassOnce(ctx)
	}
}

// PassOnce reaps what came due since the last pass, if this reaper holds
// the lease (or gets it).
func (r *Reaper) PassOnce(ctx context.Context) error {
	if r.Wanted == nil || !r.Wanted() {
		r.holding = false
		r.lateMu.Lock()
		r.late = nil
		r.lateMu.Unlock()
		return nil
	}
	ctx = dynastore.WithLabel(ctx, ReaperLabel)
	now := storeNow(r.Store, r.Clock).UnixMilli()
	r.lateMu.Lock()
	late := r.late
	r.late = nil
	r.lateMu.Unlock()
	// Entries that keep failing are given up once a new holder would not
	// reach back to them either.
	late = slices.DeleteFunc(late, func(e dynastore.Item) bool { return entryDue(e) < now-expiryCatchUp.Milliseconds() })
	for len(late) > 0 {
		n := min(len(late), dynastore.MaxBatchGet)
		if err := r.expire(ctx, late[:n], now); err != nil {
			return err
		}
		late = late[n:]
	}
	if ok, err := r.lease(ctx, now); !ok || err != nil {
		return err
	}
	if r.failing {
		// The index could not be read for a while: as after a pause,
		// reach back expiryCatchUp at most, rather than read a window
		// that grows with every failed pass.
		r.cursor = max(r.cursor, now-expiryCatchUp.Milliseconds())
	}
	upto := now - reaperLag.Milliseconds()
	if upto <= r.cursor {
		return nil
	}
	if err := r.reap(ctx, r.cursor, upto, now); err != nil {
		r.failing = true
		return err // the next pass reads the same entries again
	}
	r.cursor, r.failing = upto, false
	return nil
}

// lease makes sure this reaper holds the lease at now: a read while
// another holds it (once per lease period), a write to take it or to renew
// it (a third of the way through), none otherwise.
func (r *Reaper) lease(ctx context.Context, now int64) (bool, error) {
	ttl := r.leaseTTL()
	if r.holding && now < r.renewed+ttl/3 {
		return true, nil
	}
	if !r.holding {
		if now < r.nextTry {
			return false, nil
		}
		if err := r.wait(ctx); err != nil {
			return false, err
		}
		it, err := r.Store.Get(ctx, reaperLeaseKey)
		if err != nil {
			return false, err
		}
		if until, held := r.heldByOther(it, now); held {
			r.nextTry = until
			return false, nil
		}
	}
	id := dynastore.S(r.id())
	var cond dynastore.Cond = dynastore.Compare{Attr: attrReaperHolder, Op: dynastore.OpEQ, Val: id}
	set := []dynastore.SetAction{
		{Attr: attrReaperHolder, Val: id},
		{Attr: attrReaperUntil, Val: NInt(now + ttl)},
	}
	if r.holding {
		set = append(set, dynastore.SetAction{Attr: attrReaperCursor, Val: NInt(r.cursor)})
	} else {
		cond = dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			cond,
			dynastore.Compare{Attr: attrReaperUntil, Op: dynastore.OpLE, Val: NInt(now)},
		}
	}
	if err := r.wait(ctx); err != nil {
		return false, err
	}
	it, err := r.Store.Update(ctx, reaperLeaseKey, dynastore.Update{Set: set}, dynastore.WriteOptions{
		Cond: cond, Return: dynastore.ReturnAllNew, OldOnFailure: true,
	})
	if old, failed := CondFailed(err); failed {
		r.holding = false
		r.nextTry, _ = r.heldByOther(old, now)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !r.holding {
		// Taken over: go on from where the last holder got, but not
		// from further back than expiryCatchUp.
		r.cursor = now - expiryCatchUp.Milliseconds()
		if c, err := NumberInt(it.Get(attrReaperCursor)); err == nil {
			r.cursor = max(r.cursor, c)
		}
	}
	r.holding, r.renewed = true, now
	return true, nil
}

// heldByOther reports whether lease item it is held by another reaper at
// now, and until when.
func (r *Reaper) heldByOther(it dynastore.Item, now int64) (until int64, held bool) {
	if it == nil {
		return 0, false
	}
	until, err := NumberInt(it.Get(attrReaperUntil))
	if err != nil || until <= now {
		return 0, false
	}
	h, _ := it.Get(attrReaperHolder).(dynastore.S)
	return until, string(h) != r.id()
}

// Resign gives the lease up, if this reaper holds it, with its cursor.
func (r *Reaper) Resign(ctx context.Context) error {
	if !r.holding {
		return nil
	}
	r.holding = false
	ctx = dynastore.WithLabel(ctx, ReaperLabel)
	_, err := r.Store.Update(ctx, reaperLeaseKey, dynastore.Update{Set: []dynastore.SetAction{
		{Attr: attrReaperUntil, Val: NInt(0)},
		{Attr: attrReaperCursor, Val: NInt(r.cursor)},
	}}, dynastore.WriteOptions{Cond: dynastore.Compare{Attr: attrReaperHolder, Op: dynastore.OpEQ, Val: dynastore.S(r.id())}})
	if _, failed := CondFailed(err); failed {
		return nil
	}
	return err
}

// reap handles the entries due in (from, upto], judging expiry at now.
// Entries from every shard and page are gathered into batches of
// MaxBatchGet, so that a pass reads their key items in as few requests as
// it can.
func (r *Reaper) reap(ctx context.Context, from, upto, now int64) error {
	lo := expiryDueSK(from + 1)
	hi := append(expiryDueSK(upto), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	var errs []error
	var batch []dynastore.Item
	flush := func() error {
		err := r.expire(ctx, batch, now)
		batch = batch[:0]
		if err != nil && ctx.Err() == nil {
			errs = append(errs, err)
			return nil
		}
		return err
	}
	for minute := (from + 1) / 60000; minute <= upto/60000; minute++ {
		for shard := range byte(expiryShards) {
			q := dynastore.Query{PK: expiryPK(shard, minute), Op: dynastore.SKBetween, A: lo, B: hi, Limit: dynastore.MaxBatchGet}
			for {
				if err := r.wait(ctx); err != nil {
					return err
				}
				page, err := r.Store.Query(ctx, q)
				if err != nil {
					errs = append(errs, err)
					break
				}
				for _, it := range page.Items {
					batch = append(batch, it)
					if len(batch) == dynastore.MaxBatchGet {
						if err := flush(); err != nil {
							return err
						}
					}
				}
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// expire deletes the keys of entries that are expired at now and reports
// those it deleted. Entries it could not handle (the store failed) wait
// for the next pass (Late); only the end of ctx is an error.
func (r *Reaper) expire(ctx context.Context, entries []dynastore.Item, now int64) error {
	keys := make([]dynastore.Key, 0, len(entries))
	byPK := make(map[string]dynastore.Item, len(entries))
	for _, e := range entries {
		pk, _ := e.Get(attrExpiryKey).(dynastore.B)
		if len(pk) == 0 || byPK[string(pk)] != nil {
			continue
		}
		byPK[string(pk)] = e
		keys = append(keys, dynastore.Key{PK: pk, SK: KeyItemSK})
	}
	if len(keys) == 0 {
		return nil
	}
	if err := r.wait(ctx); err != nil {
		return err
	}
	items, err := dynastore.GetMany(ctx, r.Store, keys)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.Late(entries) // tried again at the next pass
		return nil
	}
	for i, it := range items {
		if it == nil || it.Has(AttrWatchMark) {
			continue
		}
		x := it.Get(AttrExpiry)
		if at, err := ExpiryMS(x); err != nil || at > now {
			continue // persisted, or extended: a later entry has it
		}
		var sameVer dynastore.Cond = dynastore.NotExists{Attr: AttrVer}
		if v := it.Get(AttrVer); v != nil {
			sameVer = dynastore.Compare{Attr: AttrVer, Op: dynastore.OpEQ, Val: v}
		}
		if err := r.wait(ctx); err != nil {
			return err
		}
		_, err := r.Store.Delete(ctx, keys[i], dynastore.WriteOptions{Cond: dynastore.And{
			sameVer,
			dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpEQ, Val: x},
		}})
		if _, failed := CondFailed(err); failed {
			continue // changed since it was read, or another reaper had it
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Late([]dynastore.Item{byPK[string(keys[i].PK)]})
			continue
		}
		r.Reaped++
		if db, key, ok := RedisKeyOf(keys[i].PK); ok && r.Expired != nil {
			r.Expired(db, append([]byte(nil), key...))
		}
	}
	return nil
}
