package main

import (
	"context"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// startExpiredEvents gives this instance Redis's "expired" events for keys
// whose TTL passes untouched: srv's writes record their expiries in the
// table's expiry index while expiry events are wanted anywhere (model's
// ExpiryIndex wraps the store srv writes to), and a reaper, active on one
// instance of the table at a time, deletes the keys whose TTL passed and
// reports each through srv's dispatcher, which hands it to the other
// instances. While nobody wants them, neither makes any request. Call it
// before serving; both stop with ctx.
func startExpiredEvents(ctx context.Context, srv *commands.Server, store dynastore.Store) {
	d := srv.KeyEvents()
	wanted := func() bool { return d.Wanted(events.Expired) }
	r := &model.Reaper{Store: store, Wanted: wanted, Expired: func(db int, key []byte) {
		d.Emit(events.Event{DB: db, Class: events.Expired, Name: "expired", Key: key})
	}}
	ix := &model.ExpiryIndex{Store: store, Wanted: wanted, Late: r.Late}
	srv.Store = model.On(ix.Wrap(store))
	go ix.Run(ctx)
	go r.Run(ctx)
}

// memoryTTLGrace is how long after an item's ttl the embedded store drops
// it. DynamoDB's TTL deletes items days late; the embedded store's sweep,
// as soon as the ttl second passes, which for a key item may be a moment
// after the key's expiry, before the reaper found it to report it. A key
// that expired reads as absent either way: the grace only keeps dead items
// in memory a little longer.
const memoryTTLGrace = time.Minute
