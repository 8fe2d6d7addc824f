package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// PartitionLimit is a throughput limit per partition key, in capacity
// units per second. DynamoDB serves one partition at most about 1,000
// write and 3,000 read units per second and throttles beyond; with this
// limit the embedded store does the same, so that what spreads a hot
// object over several partitions (a queue's shards) can be measured on
// one machine.
type PartitionLimit struct {
	RCU, WCU float64
}

// DynamoDBPartitionLimit is DynamoDB's own per-partition limit.
var DynamoDBPartitionLimit = PartitionLimit{RCU: 3000, WCU: 1000}

// throttleWait is how long a request waits for its partitions' capacity
// before it fails as throttled: about what the SDK's retries of a
// throttled request wait before they give up.
const throttleWait = time.Second

// partitions names the partitions a request touches: one pk, the keys of
// a batch, the items of a transaction, the item of a put (none: a Scan).
type partitions struct {
	pk   []byte
	item dynastore.Item
	keys []dynastore.Key
	acts []dynastore.TxAction
}

func (p partitions) each(f func(pk []byte)) {
	switch {
	case p.pk != nil:
		f(p.pk)
	case p.item != nil:
		f(p.item.Key().PK)
	}
	for _, k := range p.keys {
		f(k.PK)
	}
	for _, a := range p.acts {
		if a.Op == dynastore.TxPut {
			f(a.Item.Key().PK)
		} else {
			f(a.Key.PK)
		}
	}
}

// limiter keeps a token bucket of read and write units per partition,
// holding at most one second of capacity (DynamoDB's burst capacity is
// more generous; one second keeps measurements short and strict). A
// request waits until every partition it touches is out of debt, then
// runs and charges what it consumed, split between its partitions.
type limiter struct {
	lim   PartitionLimit
	mu    sync.Mutex
	parts map[string]*bucket
}

type bucket struct {
	r, w float64
	at   time.Time
}

func newLimiter(l PartitionLimit) *limiter {
	return &limiter{lim: l, parts: map[string]*bucket{}}
}

// refill brings b up to now (l.mu held).
func (l *limiter) refill(b *bucket, now time.Time) {
	dt := now.Sub(b.at).Seconds()
	b.r = min(b.r+dt*l.lim.RCU, l.lim.RCU)
	b.w = min(b.w+dt*l.lim.WCU, l.lim.WCU)
	b.at = now
}

func (l *limiter) bucket(pk []byte, now time.Time) *bucket {
	b := l.parts[string(pk)]
	if b == nil {
		b = &bucket{r: l.lim.RCU, w: l.lim.WCU, at: now}
		l.parts[string(pk)] = b
	}
	l.refill(b, now)
	return b
}

// admit waits until the partitions of p have capacity of the kind op
// consumes (reads and writes have their own, as in DynamoDB), or fails
// with ErrThrottled after throttleWait.
func (l *limiter) admit(ctx context.Context, op string, p partitions) error {
	write := op == dynastore.OpPutItem || op == dynastore.OpUpdateItem || op == dynastore.OpDeleteItem || op == dynastore.OpTransactWriteItems
	deadline := time.Now().Add(throttleWait)
	for {
		now := time.Now()
		var wait time.Duration
		l.mu.Lock()
		p.each(func(pk []byte) {
			b := l.bucket(pk, now)
			need := -b.r / l.lim.RCU
			if write {
				need = -b.w / l.lim.WCU
			}
			need = max(need, 0)
			wait = max(wait, time.Duration(need*float64(time.Second)))
		})
		l.mu.Unlock()
		if wait == 0 {
			return nil
		}
		if now.Add(wait).After(deadline) {
			return fmt.Errorf("memory: %s: partition throughput exceeded: %w", op, dynastore.ErrThrottled)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("memory: %s: %w", op, ctx.Err())
		}
	}
}

// charge takes what a request consumed from its partitions' buckets.
func (l *limiter) charge(p partitions, rcu, wcu float64) {
	n := 0
	p.each(func([]byte) { n++ })
	if n == 0 {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	p.each(func(pk []byte) {
		b := l.bucket(pk, now)
		b.r -= rcu / float64(n)
		b.w -= wcu / float64(n)
	})
}
