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
// walks the tree a slice at a time, so the write lock is held only briefly.

// ttlBatch is how many items one sweep step examines.
const ttlBatch = 4096

// ExpireTTL examines up to ttlBatch items from where the previous call
// stopped (wrapping around) and deletes those whose ttl attribute is at or
// before now, as DynamoDB's TTL would. It returns how many it deleted.
func (s *Store) ExpireTTL(now time.Time) int {
	sec := now.Unix()
	// An entry found dead is deleted only if no write replaced its item
	// since (same entry, same ver).
	type deadEntry struct {
		e   *entry
		ver uint64
	}
	var dead []deadEntry
	s.mu.RLock()
	var last *entry
	seen := 0
	visit := func(v interface{}) bool {
		e := v.(*entry)
		last = e
		seen++
		if n, ok := e.item[dynastore.AttrTTL].(dynastore.N); ok {
			if c, err := dynastore.CompareNumbers(n, dynastore.N(strconv.FormatInt(sec, 10))); err == nil && c <= 0 {
				dead = append(dead, deadEntry{e, e.ver})
			}
		}
		return seen < ttlBatch
	}
	if s.ttlPos == nil {
		s.tree.Ascend(nil, visit)
	} else {
		s.tree.Ascend(s.ttlPos, visit)
	}
	s.mu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if seen < ttlBatch {
		s.ttlPos = nil // reached the end: start over next time
	} else {
		s.ttlPos = &entry{pk: last.pk, sk: last.sk}
	}
	deleted := 0
	for _, d := range dead {
		// Only if the item was not rewritten since it was examined.
		if cur := s.get(dynastore.Key{PK: d.e.pk, SK: d.e.sk}); cur != nil && cur == d.e && cur.ver == d.ver {
			s.tree.Delete(d.e)
			deleted++
		}
	}
	return deleted
}

// RunTTL sweeps expired items every interval until ctx is done. A full pass
// over n items takes n/ttlBatch intervals.
func (s *Store) RunTTL(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.ExpireTTL(now)
		}
	}
}
