package memory

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/tidwall/btree"

	"github.com/redamo/redamo/dynastore"
)

// bound is one end of a sort-key range.
type bound struct {
	set, incl bool
	sk        string
}

// skRange turns a Query's key condition into bounds on the sort key.
func skRange(q dynastore.Query) (lo, hi bound, err error) {
	needA := q.Op != dynastore.SKAll
	if needA {
		if err := checkSK(q.A); err != nil {
			return lo, hi, err
		}
	}
	a := string(q.A)
	switch q.Op {
	case dynastore.SKAll:
	case dynastore.SKEq:
		lo, hi = bound{true, true, a}, bound{true, true, a}
	case dynastore.SKLT:
		hi = bound{true, false, a}
	case dynastore.SKLE:
		hi = bound{true, true, a}
	case dynastore.SKGT:
		lo = bound{true, false, a}
	case dynastore.SKGE:
		lo = bound{true, true, a}
	case dynastore.SKBetween:
		if err := checkSK(q.B); err != nil {
			return lo, hi, err
		}
		if bytes.Compare(q.A, q.B) > 0 {
			return lo, hi, fmt.Errorf("%w: Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound", dynastore.ErrInvalid)
		}
		lo, hi = bound{true, true, a}, bound{true, true, string(q.B)}
	case dynastore.SKBeginsWith:
		lo = bound{true, true, a}
		if end, ok := prefixEnd(a); ok {
			hi = bound{true, false, end}
		}
	default:
		return lo, hi, fmt.Errorf("%w: unknown sort key operator %d", dynastore.ErrInvalid, q.Op)
	}
	return lo, hi, nil
}

func checkSK(sk []byte) error {
	switch {
	case len(sk) == 0:
		return fmt.Errorf("%w: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: sk", dynastore.ErrKeyTooLarge)
	case len(sk) > dynastore.MaxSKSize:
		return fmt.Errorf("%w: Aggregated size of all range keys has exceeded the size limit of 1024 bytes", dynastore.ErrKeyTooLarge)
	}
	return nil
}

// prefixEnd is the smallest key after every key starting with p; there is
// none (false) when p is all 0xff.
func prefixEnd(p string) (string, bool) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xff {
			return p[:i] + string([]byte{p[i] + 1}), true
		}
	}
	return "", false
}

func (b bound) below(sk string) bool { // sk is before the lower bound
	if !b.set {
		return false
	}
	c := strings.Compare(sk, b.sk)
	return c < 0 || (c == 0 && !b.incl)
}

func (b bound) above(sk string) bool { // sk is past the upper bound
	if !b.set {
		return false
	}
	c := strings.Compare(sk, b.sk)
	return c > 0 || (c == 0 && !b.incl)
}

// Query implements dynastore.Store. It reads one partition, which lives in
// one shard, under that shard's lock (lockOrdered).
func (s *Store) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	var page dynastore.QueryPage
	err := s.request(ctx, dynastore.OpQuery, partitions{pk: q.PK}, func() (float64, float64, error) {
		if len(q.PK) == 0 {
			return 0, 0, fmt.Errorf("%w: One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: pk", dynastore.ErrKeyTooLarge)
		}
		if q.Limit < 0 {
			return 0, 0, fmt.Errorf("%w: negative Limit", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateCond(q.Filter); err != nil {
			return 0, 0, err
		}
		lo, hi, err := skRange(q)
		if err != nil {
			return 0, 0, err
		}
		if q.After != nil {
			after := string(q.After)
			if lo.below(after) || hi.above(after) {
				return 0, 0, fmt.Errorf("%w: The provided starting key does not match the range key predicate", dynastore.ErrInvalid)
			}
			// Resume strictly after q.After in the direction of travel.
			if q.Reverse {
				hi = bound{true, false, after}
			} else {
				lo = bound{true, false, after}
			}
		}
		prefix := appendPartition(nil, q.PK)
		part := string(prefix)
		pg := pager{limit: q.Limit, filter: q.Filter}
		visit := func(r ref) bool {
			e := r.e
			if !strings.HasPrefix(e.id, part) {
				return false
			}
			sk := e.id[len(part):]
			if q.Reverse {
				if hi.above(sk) {
					return true
				}
				if lo.below(sk) {
					return false
				}
			} else {
				if lo.below(sk) {
					return true
				}
				if hi.above(sk) {
					return false
				}
			}
			return pg.add(e)
		}
		from := part + lo.sk
		if q.Reverse {
			from = string(partitionEnd(prefix))
			if hi.set {
				from = part + hi.sk
			}
		}
		sh := &s.shards[s.shardOf(q.PK)]
		excl := sh.lockOrdered()
		if q.Reverse {
			sh.tree.Descend(pivot(from), visit)
		} else {
			sh.tree.Ascend(pivot(from), visit)
		}
		sh.unlockOrdered(excl)
		page.Items = pg.items
		if pg.more {
			page.Next = bytes.Clone(pg.last.SK)
		}
		return dynastore.ReadUnits(pg.size), 0, nil
	})
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	return page, nil
}

// pager collects one Query or Scan page as DynamoDB does: it reads items
// until Limit items or 1 MB have been read (the item crossing 1 MB is still
// read), then filters. more is set when the page stopped early, even if no
// item follows: that is when DynamoDB returns a LastEvaluatedKey, the key of
// the last item read.
type pager struct {
	limit  int
	filter dynastore.Cond
	read   int
	size   int
	// items are the stored items that passed the filter (read-only, see
	// dynastore.Store).
	items []dynastore.Item
	more  bool
	last  dynastore.Key
}

// add reads one item and reports whether to read on. The caller holds the
// entry's shard lock.
func (p *pager) add(e *entry) bool {
	p.read++
	p.size += e.size
	if dynastore.EvalValidCond(e.item, p.filter) {
		p.items = append(p.items, e.lend())
	}
	if (p.limit > 0 && p.read >= p.limit) || p.size >= dynastore.MaxPageSize {
		p.more, p.last = true, e.item.Key()
		return false
	}
	return true
}

// segmentOf assigns a partition to one of n scan segments; all items of a
// partition share a segment, as in DynamoDB.
func segmentOf(pk []byte, n int) int {
	h := fnv.New32a()
	h.Write(pk)
	return int(h.Sum32() % uint32(n))
}

// Scan implements dynastore.Store. Items come in (pk, sk) order, each
// segment holding whole partitions. A page is read under the locks of every
// shard (lockOrdered), so it sees the table as of one instant.
func (s *Store) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	var page dynastore.ScanPage
	// A Scan reads every partition: not throttled per partition.
	err := s.request(ctx, dynastore.OpScan, partitions{}, func() (float64, float64, error) {
		segs := sc.Segments
		switch {
		case sc.Limit < 0:
			return 0, 0, fmt.Errorf("%w: negative Limit", dynastore.ErrInvalid)
		case segs < 0 || segs > 1_000_000:
			return 0, 0, fmt.Errorf("%w: TotalSegments must be between 1 and 1000000", dynastore.ErrInvalid)
		case segs == 0 && sc.Segment != 0:
			return 0, 0, fmt.Errorf("%w: Segment without Segments", dynastore.ErrInvalid)
		case segs > 0 && (sc.Segment < 0 || sc.Segment >= segs):
			return 0, 0, fmt.Errorf("%w: Segment must be less than TotalSegments", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateCond(sc.Filter); err != nil {
			return 0, 0, err
		}
		var after *ref // scan strictly after it (nil: from the start)
		if sc.After != nil {
			if err := dynastore.ValidateKey(*sc.After); err != nil {
				return 0, 0, err
			}
			p := pivot(string(appendID(nil, sc.After.PK, sc.After.SK)))
			after = &p
		}
		pg := pager{limit: sc.Limit, filter: sc.Filter}
		var excl [nShards]bool
		for n := range s.shards { // in ascending order, as every request
			excl[n] = s.shards[n].lockOrdered()
		}
		var m merged
		m.start(s, after)
		for e := m.next(); e != nil; e = m.next() {
			if segs > 1 && segmentOf(e.item.Key().PK, segs) != sc.Segment {
				continue
			}
			if !pg.add(e) {
				break
			}
		}
		for n := range s.shards {
			s.shards[n].unlockOrdered(excl[n])
		}
		page.Items = pg.items
		if pg.more {
			page.Next = &dynastore.Key{PK: bytes.Clone(pg.last.PK), SK: bytes.Clone(pg.last.SK)}
		}
		return dynastore.ReadUnits(pg.size), 0, nil
	})
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	return page, nil
}

// merged walks the ordered indexes of all shards as one, in id order: the
// shards whose iterator still has an entry form a min-heap by that entry's
// id. The caller holds every shard's lock (lockOrdered).
type merged struct {
	its  [nShards]btree.IterG[ref]
	heap []int // shard numbers
}

// start positions every shard's iterator on its first entry after after
// (nil: its first entry). The trees have no locks of their own, so the
// iterators hold nothing to Release.
func (m *merged) start(s *Store, after *ref) {
	m.heap = make([]int, 0, nShards)
	for i := range s.shards {
		if s.shards[i].tree.Len() == 0 {
			continue
		}
		it := &m.its[i]
		*it = s.shards[i].tree.Iter()
		var ok bool
		if after == nil {
			ok = it.First()
		} else if ok = it.Seek(*after); ok && it.Item().e.id == after.e.id {
			ok = it.Next()
		}
		if ok {
			m.heap = append(m.heap, i)
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// next returns the next entry in id order, nil after the last.
func (m *merged) next() *entry {
	if len(m.heap) == 0 {
		return nil
	}
	it := &m.its[m.heap[0]]
	e := it.Item().e
	if !it.Next() {
		last := len(m.heap) - 1
		m.heap[0] = m.heap[last]
		m.heap = m.heap[:last]
	}
	m.down(0)
	return e
}

func (m *merged) less(i, j int) bool {
	return refLess(m.its[m.heap[i]].Item(), m.its[m.heap[j]].Item())
}

// down restores the heap order below position i.
func (m *merged) down(i int) {
	for {
		least := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(m.heap) && m.less(c, least) {
				least = c
			}
		}
		if least == i {
			return
		}
		m.heap[i], m.heap[least] = m.heap[least], m.heap[i]
		i = least
	}
}
