package faithful

import (
	"sync"
	"time"
)

// budget throttles as DynamoDB does: per partition key, and per table.
// A request is admitted when its partitions and the table are not in
// debt, and then charged what it consumed (the store's own accounting of
// item sizes): DynamoDB too admits a request before it knows its size.
// A request over budget is throttled at once, never queued.
type budget struct {
	c  Capacity
	mu sync.Mutex
	// parts holds each partition's balance, in seconds of its throughput
	// (at most one: a partition's unused capacity does not pile up here).
	parts   map[string]*partition
	charges int

	read, write tableBucket
}

type partition struct {
	bal float64
	at  time.Time
}

// tableBucket is one direction's on-demand ceiling: a balance in units,
// refilled at the ceiling per second and holding at most one second's,
// and the peaks that raise the ceiling.
type tableBucket struct {
	ceiling float64
	bal     float64
	at      time.Time
	// peak is the highest rate that is PeakWindow old (initially half
	// the new table's ceiling: the ceiling is twice the previous peak).
	peak float64
	// sec is the second being counted and used its units; minutes holds
	// the highest rate of each recent minute, not yet PeakWindow old.
	sec     int64
	used    float64
	minutes []minutePeak
}

type minutePeak struct {
	minute int64
	rate   float64
}

func newBudget(c Capacity, now time.Time) *budget {
	b := &budget{c: c, parts: map[string]*partition{}}
	b.read = tableBucket{ceiling: c.TableRRU, bal: c.TableRRU, at: now, peak: c.TableRRU / 2}
	b.write = tableBucket{ceiling: c.TableWRU, bal: c.TableWRU, at: now, peak: c.TableWRU / 2}
	return b
}

func (b *budget) partition(pk string, now time.Time) *partition {
	p := b.parts[pk]
	if p == nil {
		p = &partition{bal: 1, at: now}
		b.parts[pk] = p
		return p
	}
	p.bal = min(p.bal+now.Sub(p.at).Seconds(), 1)
	p.at = now
	return p
}

// admit says which of the partitions pks (one per item or key; repeats
// allowed) are over budget, and whether the table is. units is the least
// a request of this kind consumes per item: it must be left.
func (b *budget) admit(pks []string, write bool, units float64, now time.Time) (parts []bool, table bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	need := units / b.c.PartitionRCU
	tb := &b.read
	if write {
		need = units / b.c.PartitionWCU
		tb = &b.write
	}
	for i, pk := range pks {
		if b.partition(pk, now).bal < need {
			if parts == nil {
				parts = make([]bool, len(pks))
			}
			parts[i] = true
		}
	}
	tb.refill(now, b.c.PeakWindow)
	return parts, tb.bal < units
}

// charge takes what a request consumed from its partitions (in equal
// shares) and from the table.
func (b *budget) charge(pks []string, rcu, wcu float64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(pks) > 0 {
		cost := (rcu/b.c.PartitionRCU + wcu/b.c.PartitionWCU) / float64(len(pks))
		for _, pk := range pks {
			b.partition(pk, now).bal -= cost
		}
	}
	b.read.charge(rcu, now, b.c.PeakWindow)
	b.write.charge(wcu, now, b.c.PeakWindow)
	b.charges++
	if b.charges%4096 == 0 {
		// Forget partitions back at full balance: they are as new.
		for pk, p := range b.parts {
			if p.bal+now.Sub(p.at).Seconds() >= 1 {
				delete(b.parts, pk)
			}
		}
	}
}

func (t *tableBucket) refill(now time.Time, window time.Duration) {
	t.roll(now, window)
	t.bal = min(t.bal+now.Sub(t.at).Seconds()*t.ceiling, t.ceiling)
	t.at = now
}

func (t *tableBucket) charge(units float64, now time.Time, window time.Duration) {
	t.refill(now, window)
	t.bal -= units
	t.used += units
}

// roll closes the second being counted when now is past it, and raises
// the ceiling to twice the peaks that became PeakWindow old.
func (t *tableBucket) roll(now time.Time, window time.Duration) {
	sec := now.Unix()
	if sec == t.sec {
		return
	}
	if t.used > 0 {
		m := t.sec / 60
		if n := len(t.minutes); n > 0 && t.minutes[n-1].minute == m {
			t.minutes[n-1].rate = max(t.minutes[n-1].rate, t.used)
		} else {
			t.minutes = append(t.minutes, minutePeak{minute: m, rate: t.used})
		}
	}
	t.sec, t.used = sec, 0
	mature := now.Add(-window).Unix() / 60
	keep := 0
	for _, mp := range t.minutes {
		if mp.minute < mature {
			t.peak = max(t.peak, mp.rate)
			continue
		}
		t.minutes[keep] = mp
		keep++
	}
	t.minutes = t.minutes[:keep]
	t.ceiling = max(t.ceiling, 2*t.peak)
}
