package memory

import (
	"context"
	"strconv"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// DynamoDB deletes items whose TTL attribute (epoch seconds) has passed, in
// the background. Without the same here an embedded redamo that writes many
// keys with an expiry would keep every dead key in memory forever: redamo
// treats them as absent, but nothing else would ever remove them. The sweep
// walks the shards in order a slice at a time: it examines up to ttlChunk
// items under a shard's read lock (lockOrdered), then deletes the dead ones
// among them under its write lock, so writers of that shard wait for at most
// one slice.

const (
	// ttlBatch is how many items one sweep step examines.
	ttlBatch = 4096
	// ttlChunk is how many items the sweep examines, or deletes, per lock.
	ttlChunk = 256
)

// ttlPos is where the next sweep step starts: in shard, after the entry
// whose id is after ("": from the shard's first entry; no id is empty).
type ttlPos struct {
	shard int
	after string
}

// ExpireTTL examines up to ttlBatch items from where the previous call
// stopped (wrapping around) and deletes those whose ttl attribute is at or
// before now, as DynamoDB's TTL would. It returns how many it deleted.
func (s *Store) ExpireTTL(now time.Time) int {
	s.ttlMu.Lock()
	defer s.ttlMu.Unlock()
	limit := dynastore.N(strconv.FormatInt(now.Unix(), 10))
	seen, deleted := 0, 0
	for seen < ttlBatch {
		n, d, more := s.sweep(limit, min(ttlChunk, ttlBatch-seen))
		seen, deleted = seen+n, deleted+d
		if more {
			continue
		}
		s.ttlPos = ttlPos{shard: s.ttlPos.shard + 1}
		if s.ttlPos.shard == nShards {
			s.ttlPos.shard = 0
			break // reached the end: start over next time
		}
	}
	return deleted
}

// sweep examines up to max items of the current shard from s.ttlPos on and
// deletes the expired ones, unless a write replaced them in the meantime
// (same entry, same ver). more reports whether the shard has items left.
func (s *Store) sweep(limit dynastore.N, max int) (seen, deleted int, more bool) {
	type deadEntry struct {
		e   *entry
		ver uint64
	}
	var dead []deadEntry
	sh := &s.shards[s.ttlPos.shard]
	after := s.ttlPos.after
	excl := sh.lockOrdered()
	sh.tree.Ascend(pivot(after), func(r ref) bool {
		e := r.e
		if e.id == after {
			return true
		}
		if seen == max {
			more = true
			return false
		}
		seen++
		s.ttlPos.after = e.id
		if ttl, ok := e.item.Get(dynastore.AttrTTL).(dynastore.N); ok {
			if c, err := dynastore.CompareNumbers(ttl, limit); err == nil && c <= 0 {
				dead = append(dead, deadEntry{e, e.ver})
			}
		}
		return true
	})
	sh.unlockOrdered(excl)
	if len(dead) == 0 {
		return seen, 0, more
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, d := range dead {
		if !d.e.removed && d.e.ver == d.ver {
			sh.remove(d.e)
			deleted++
		}
	}
	return seen, deleted, more
}

// RunTTL sweeps expired items every interval until ctx is done, dropping
// those whose ttl passed more than grace ago (DynamoDB's TTL is late too,
// and whoever reads dead items before they go may rely on it). A full
// pass over n items takes n/ttlBatch intervals.
func (s *Store) RunTTL(ctx context.Context, interval, grace time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.ExpireTTL(now.Add(-grace))
		}
	}
}
