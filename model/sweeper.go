package model

// The sweeper deletes the members of dead generations (collection.go): a
// large collection that was deleted, overwritten, expired or converted
// leaves its members behind, unreferenced, because DEL/EXPIRE/overwrite only
// touch the key item (O(1)). Every instance may run a sweeper at once:
//
//   - A generation is dead when its registry entry's owner key item does not
//     point to it (missing, another g, or expired). It is first marked with
//     the time it was seen dead (dd) and only condemned once it has stayed
//     dead for Grace, so a reader paging through a collection that was just
//     deleted, and a writer still staging an unpublished generation, are
//     not pulled from under their feet.
//   - Condemning is one transaction: set d on the registry entry (if its
//     owner is still the one checked and it is not condemned yet) and check
//     that the owner key item still does not point to it. Publishing a
//     generation checks that d is absent, so a condemned generation can
//     never come back.
//   - A big value edit's journal entry (bigedit.go) is a registry entry no
//     key item points to: it is dead from the start, and condemning it
//     also checks that it is still as seen dead (dd), since publishing the
//     edit resets dd and changes the chunks it lists.
//   - A condemned generation's members are deleted 100 per transaction, then
//     its registry entry. Deleting twice is harmless, so several sweepers
//     racing on one generation only waste a little work.
//
// Requests go through the Store with the label "sweeper", so they appear in
// the request statistics and metrics like any command's; a token bucket
// caps them at Rate per second.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// SweeperLabel is the request label of the sweeper's store requests.
const SweeperLabel = "sweeper"

// Sweeper removes the members of dead collection generations.
type Sweeper struct {
	Store dynastore.Store
	// Clock is the time source (nil: the local clock, corrected by the
	// store's offset when it measures one, as Server.Now).
	Clock func() time.Time
	// Grace is how long a generation must stay dead before its members go
	// (default 10 minutes).
	Grace time.Duration
	// Interval is the pause between passes over the registry (default 1 minute).
	Interval time.Duration
	// Rate caps the sweeper's store requests per second (default 50).
	Rate int

	// Swept counts, for tests and INFO: generations finished, members deleted.
	Gens, Members int64

	limit tokenBucket
}

func (s *Sweeper) now() time.Time {
	// The store's clock, as commands' (Server.Now): a generation seen dead
	// by one instance is condemned by another.
	return storeNow(s.Store, s.Clock)
}

func (s *Sweeper) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return 10 * time.Minute
}

// Run sweeps every Interval until ctx ends. Errors (a throttled table, say)
// only delay the next pass.
func (s *Sweeper) Run(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = s.SweepOnce(ctx)
		t.Reset(interval)
	}
}

// wait blocks until the rate limit allows one more request.
func (s *Sweeper) wait(ctx context.Context) error {
	rate := s.Rate
	if rate <= 0 {
		rate = 50
	}
	return s.limit.wait(ctx, rate)
}

// tokenBucket caps a background job's store requests per second, so that
// the job never takes much of the table's throughput from the commands.
// It is used by one goroutine.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// wait blocks until the bucket allows one more request at rate per second.
func (b *tokenBucket) wait(ctx context.Context, rate int) error {
	now := time.Now()
	if b.last.IsZero() {
		b.tokens = float64(rate)
	} else {
		b.tokens = min(float64(rate), b.tokens+now.Sub(b.last).Seconds()*float64(rate))
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	d := time.Duration((1 - b.tokens) / float64(rate) * float64(time.Second))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	b.tokens = 0
	b.last = time.Now()
	return nil
}

// SweepOnce makes one pass over the whole registry.
func (s *Sweeper) SweepOnce(ctx context.Context) error {
	ctx = dynastore.WithLabel(ctx, SweeperLabel)
	var errs []error
	for shard := 0; shard < genShards; shard++ {
		pk := []byte{nsGens, byte(shard)}
		var after []byte
		for {
			if err := s.wait(ctx); err != nil {
				return err
			}
			page, err := s.Store.Query(ctx, dynastore.Query{PK: pk, After: after, Limit: 100})
			if err != nil {
				errs = append(errs, err)
				break
			}
			for _, it := range page.Items {
				if err := s.visit(ctx, it); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					errs = append(errs, err)
				}
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
	}
	return errors.Join(errs...)
}

// visit handles one registry entry.
func (s *Sweeper) visit(ctx context.Context, reg dynastore.Item) error {
	k := reg.Key()
	gen := k.SK
	if reg.Has(attrDying) {
		return s.purge(ctx, reg)
	}
	owner, _ := reg.Get(attrOwner).(dynastore.B)
	if err := s.wait(ctx); err != nil {
		return err
	}
	nowMS := s.now().UnixMilli()
	var key dynastore.Item
	if len(owner) > 0 {
		var err error
		if key, err = s.Store.Get(ctx, dynastore.Key{PK: owner, SK: KeyItemSK}); err != nil {
			return err
		}
	}
	alive := pointsTo(key, gen, nowMS)
	var ownerCond dynastore.Cond = dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.And{
			dynastore.Compare{Attr: AttrGen, Op: dynastore.OpNE, Val: dynastore.B(gen)},
			dynastore.Compare{Attr: attrStreamPEL, Op: dynastore.OpNE, Val: dynastore.B(gen)},
		},
		dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpLE, Val: NInt(nowMS)},
	}
	var fieldCheck []dynastore.TxAction
	if ownerSK, ok := reg.Get(attrOwnerSK).(dynastore.B); ok {
		// A hash field's big value (bigfields.go), or a big member
		// (bigmembers.go).
		if err := s.wait(ctx); err != nil {
			return err
		}
		var err error
		if alive, ownerCond, fieldCheck, err = fieldOwnerChecks(ctx, s.Store, key, ownerSK, gen, nowMS); err != nil {
			return err
		}
	}
	if alive {
		if reg.Has(attrDeadAt) {
			// Published after it was first seen: alive after all.
			if err := s.wait(ctx); err != nil {
				return err
			}
			_, err := s.Store.Update(ctx, k, dynastore.Update{Remove: []string{attrDeadAt}}, dynastore.WriteOptions{
				Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}},
			})
			if _, failed := CondFailed(err); failed {
				return nil
			}
			return err
		}
		return nil
	}
	deadAt, err := NumberInt(reg.Get(attrDeadAt))
	if err != nil {
		// First time seen dead: start its grace period.
		if err := s.wait(ctx); err != nil {
			return err
		}
		_, err := s.Store.Update(ctx, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: attrDeadAt, Val: NInt(nowMS)},
		}}, dynastore.WriteOptions{Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, dynastore.NotExists{Attr: attrDying}}})
		if _, failed := CondFailed(err); failed {
			return nil
		}
		return err
	}
	if nowMS-deadAt < s.grace().Milliseconds() {
		return nil
	}
	// Condemn: only if the owner is still the one checked and its key item
	// still does not point here.
	if err := s.wait(ctx); err != nil {
		return err
	}
	err = s.Store.Transact(ctx, append([]dynastore.TxAction{
		{
			Op:  dynastore.TxUpdate,
			Key: k,
			Update: &dynastore.Update{Set: []dynastore.SetAction{
				{Attr: attrDying, Val: NInt(nowMS)},
			}},
			// Still as seen dead: a big value edit's journal that was
			// published meanwhile lost its dd, and now lists other chunks.
			Cond: dynastore.And{
				dynastore.Compare{Attr: attrOwner, Op: dynastore.OpEQ, Val: owner},
				dynastore.Compare{Attr: attrDeadAt, Op: dynastore.OpEQ, Val: NInt(deadAt)},
				dynastore.NotExists{Attr: attrDying},
			},
		},
		{
			Op:   dynastore.TxCheck,
			Key:  dynastore.Key{PK: owner, SK: KeyItemSK},
			Cond: ownerCond,
		},
	}, fieldCheck...))
	if errors.Is(Refused(err, nil), ErrConflict) {
		return nil // it changed under us; the next pass looks again
	}
	if err != nil {
		return fmt.Errorf("condemning generation: %w", err)
	}
	return s.purge(ctx, reg)
}

// pointsTo reports whether key item it references generation gen and is live.
func pointsTo(it dynastore.Item, gen []byte, nowMS int64) bool {
	if it == nil {
		return false
	}
	g, _ := it.Get(AttrGen).(dynastore.B)
	if !bytes.Equal(g, gen) && !bytes.Equal(pelGenOf(it), gen) {
		return false
	}
	if x, err := ExpiryMS(it.Get(AttrExpiry)); err == nil && x <= nowMS {
		return false
	}
	return true
}

// purge deletes a condemned generation's members (a big value's chunks),
// then its registry entry.
func (s *Sweeper) purge(ctx context.Context, regItem dynastore.Item) error {
	reg := regItem.Key()
	gen := reg.SK
	// A big value's chunks, or those an edit's journal lists,
	// BatchWriteItem's worth at a time.
	keys, err := registryChunkKeys(regItem)
	if err != nil {
		return err
	}
	for lo := 0; lo < len(keys); lo += dynastore.MaxBatchWrite {
		if err := s.wait(ctx); err != nil {
			return err
		}
		hi := min(lo+dynastore.MaxBatchWrite, len(keys))
		if err := dynastore.BatchWrite(ctx, s.Store, nil, keys[lo:hi]); err != nil {
			return fmt.Errorf("deleting chunks: %w", err)
		}
		s.Members += int64(hi - lo)
	}
	for {
		if err := s.wait(ctx); err != nil {
			return err
		}
		page, err := s.Store.Query(ctx, dynastore.Query{PK: MembersPK(gen), Limit: dynastore.MaxTxActions})
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			break
		}
		actions := make([]dynastore.TxAction, len(page.Items))
		for i, it := range page.Items {
			actions[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: it.Key()}
		}
		if err := s.wait(ctx); err != nil {
			return err
		}
		if err := s.Store.Transact(ctx, actions); err != nil {
			return fmt.Errorf("deleting members: %w", err)
		}
		s.Members += int64(len(actions))
	}
	if err := s.wait(ctx); err != nil {
		return err
	}
	if _, err := s.Store.Delete(ctx, reg, dynastore.WriteOptions{}); err != nil {
		return err
	}
	s.Gens++
	return nil
}
