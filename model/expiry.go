package model

// The expiry index: where the keys whose TTL will pass are written down
// while someone wants Redis's "expired" events (notify-keyspace-events
// with x, or a consumer of every key event), so that one instance (the
// reaper, expiry_reaper.go) can find each key when its TTL passes,
// delete it and report it, whether or not any client touches it again.
// An expired key is otherwise only absent to reads: its item stays until
// a write takes it over or DynamoDB's TTL collects it, possibly days
// later, and no event would ever be raised for it.
//
// Finding expired keys without an index would take a Scan of the whole
// table, which bills every item it reads (DESIGN.md: nothing periodic may
// scan). So every write that leaves a key item with an expiry is seen
// where all of them pass, the store itself: ExpiryIndex.Wrap returns the
// store the commands use, which forwards every request and, once a write
// that set x on a key item succeeded, records (expiry, key) for the index.
// Commands, EXEC, scripts, RENAME/COPY/MOVE/RESTORE and whatever writer
// comes later are covered alike, and a unit of work (EXEC, a script)
// reaches the store only when it commits, so an attempt that lost its
// race records nothing. While nobody wants expiry events a write costs the
// wrapper one check of Wanted, and the index no request at all.
//
// Index entries (namespaces.go, NsExpiry):
//
//	pk  'x', shard, Unix minute of due (8 bytes, big-endian)
//	sk  due in Unix ms (8 bytes, big-endian), FNV-64a of the key item's pk
//	p   B  the key item's pk (namespace, db, key)
//	x   N  the expiry the write set, as it set it
//	ttl N  for DynamoDB's TTL: an entry is read once, when it comes due
//
// due is the expiry, or expiryFlushDelay after the write was recorded when
// that is later (a key whose TTL passes before its entry is written): the
// reaper reads each (shard, minute) partition by sort-key range from
// where its last pass ended, so an entry written behind that point would
// never be read. Shards spread one moment's writes (keys set with the
// same TTL all come due together) over several partitions; minutes keep
// the partitions the reaper reads after a pause few. Entries are never
// deleted one by one: the reaper's cursor passes them once, and their ttl
// lets DynamoDB drop them, which saves a write per key.
//
// Entries are written in batches: a record waits up to expiryFlushDelay
// for others, and a batch is BatchWriteItem requests of up to
// MaxBatchWrite puts (one PutItem when alone): an entry needs no
// condition, and a transaction would bill twice the write units.

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
)

// ExpiryIndexLabel is the request label of the index writes.
const ExpiryIndexLabel = "expiry-index"

// Index layout parameters; every instance on a table must use the same.
const (
	// expiryShards is how many partitions one minute's entries spread
	// over: the reaper reads each every pass, so more shards cost more
	// reads while idle, and fewer cap how many keys per second may be
	// given the same TTL before one partition throttles.
	expiryShards = 4
	// expiryFlushDelay is how long a record waits for others to share its
	// request.
	expiryFlushDelay = 100 * time.Millisecond
	// expiryEntryTTL is how long after it came due DynamoDB may drop an
	// entry: past the reaper's catch-up window (expiryCatchUp).
	expiryEntryTTL = time.Hour
	// expiryMaxPending bounds the records waiting to be written, so a
	// store that stopped answering cannot make the process grow without
	// end (records beyond it are dropped, and counted), and the entries
	// remembered as written.
	expiryMaxPending = 1 << 16
	// expiryClockMargin is how far two instances' clocks may disagree
	// (each corrected by its store's measured offset) for the index to
	// still count an entry as written in time.
	expiryClockMargin = 100 * time.Millisecond
	// attrExpiryKey is an index entry's key item pk.
	attrExpiryKey = "p"
)

// expiryRecord is one key item written with an expiry.
type expiryRecord struct {
	pk []byte
	x  dynastore.N
	// due is when the reaper should look: the expiry, or a little after
	// the write was recorded if that is later.
	due int64
}

// ExpiryIndex records the expiries of key items written through the
// stores it wraps, while Wanted says expiry events are wanted, and writes
// them to the index. Run writes them in the background; Flush writes what
// waits at once.
type ExpiryIndex struct {
	// Store is where the index is written (the table, unwrapped).
	Store dynastore.Store
	// Wanted reports whether expiry events are wanted anywhere (nil:
	// never, and nothing is recorded).
	Wanted func() bool
	// Clock is the time source (nil: the store's clock, as the sweeper's).
	Clock func() time.Time

	// Late, when set, is handed the entries written so late that the
	// reaper may have read their place already (a slow or retried index
	// write): Reaper.Late, which reaps them at its next pass.
	Late func(entries []dynastore.Item)

	// Recorded counts the entries written, Dropped those lost (the store
	// failed, or too many waited).
	Recorded, Dropped atomic.Int64

	mu      sync.Mutex
	pending []expiryRecord
	// written holds the expiries this process wrote entries for lately,
	// by key item pk: a write that sets the same expiry again (a
	// collection's key item rewritten with its TTL on every change)
	// finds its entry already there. It is forgotten whole when full.
	written map[string]dynastore.N
	kick    chan struct{}
	once    sync.Once
}

func (ix *ExpiryIndex) wanted() bool { return ix.Wanted != nil && ix.Wanted() }

func (ix *ExpiryIndex) nowMS() int64 { return storeNow(ix.Store, ix.Clock).UnixMilli() }

// storeNow is clock's reading, or the local clock corrected by st's
// offset when it measures one: the clock commands judge expiry by
// (Server.Now), which background jobs must agree with.
func storeNow(st dynastore.Store, clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	now := time.Now()
	if c, ok := st.(dynastore.Clocked); ok {
		if off, _, ok := c.ClockOffset(); ok {
			now = now.Add(off)
		}
	}
	return now
}

func (ix *ExpiryIndex) kicker() chan struct{} {
	ix.once.Do(func() { ix.kick = make(chan struct{}, 1) })
	return ix.kick
}

// add queues records of writes that succeeded.
func (ix *ExpiryIndex) add(recs []expiryRecord) {
	if len(recs) == 0 {
		return
	}
	now := ix.nowMS()
	ix.mu.Lock()
	for _, r := range recs {
		// Only an entry due at its expiry is the same entry again: one
		// due when it was recorded is due at another time each time.
		if r.due > now+expiryFlushDelay.Milliseconds() && ix.written[string(r.pk)] == r.x {
			continue
		}
		if len(ix.pending) >= expiryMaxPending {
			ix.Dropped.Add(1)
			continue
		}
		r.due = max(r.due, now+expiryFlushDelay.Milliseconds())
		ix.pending = append(ix.pending, r)
	}
	ix.mu.Unlock()
	select {
	case ix.kicker() <- struct{}{}:
	default:
	}
}

// Run writes the records as they come, each within about
// expiryFlushDelay, until ctx ends.
func (ix *ExpiryIndex) Run(ctx context.Context) {
	kick := ix.kicker()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(expiryFlushDelay):
		}
		_ = ix.Flush(ctx)
	}
}

// Flush writes every waiting record.
func (ix *ExpiryIndex) Flush(ctx context.Context) error {
	ix.mu.Lock()
	recs := ix.pending
	ix.pending = nil
	ix.mu.Unlock()
	ctx = dynastore.WithLabel(ctx, ExpiryIndexLabel)
	// One batch may not name an item twice: the last record of an entry
	// wins (they are the same entry).
	seen := make(map[string]int, len(recs))
	var items []dynastore.Item
	for _, r := range recs {
		it := expiryEntry(r)
		k := it.Key()
		id := string(k.PK) + "\x00" + string(k.SK)
		if i, ok := seen[id]; ok {
			items[i] = it
			continue
		}
		seen[id] = len(items)
		items = append(items, it)
	}
	return ix.write(ctx, items)
}

// write puts entries: one PutItem for one, BatchWriteItem requests for
// more, or one PutItem per entry when the batch failed (its writes are
// then each applied or not, and writing an entry again changes nothing).
func (ix *ExpiryIndex) write(ctx context.Context, items []dynastore.Item) error {
	if len(items) > 1 {
		if err := dynastore.BatchWrite(ctx, ix.Store, items, nil); err == nil {
			ix.wrote(items...)
			return nil
		}
	}
	var errs []error
	for _, it := range items {
		if _, err := ix.Store.Put(ctx, it, dynastore.WriteOptions{}); err != nil {
			ix.Dropped.Add(1)
			errs = append(errs, err)
			continue
		}
		ix.wrote(it)
	}
	return errors.Join(errs...)
}

// wrote notes entries written, and hands those written late to Late.
func (ix *ExpiryIndex) wrote(entries ...dynastore.Item) {
	ix.Recorded.Add(int64(len(entries)))
	// The reaper reads reaperLag behind its clock; allow the clocks of
	// two instances to disagree by expiryClockMargin.
	passed := ix.nowMS() - reaperLag.Milliseconds() + expiryClockMargin.Milliseconds()
	var late []dynastore.Item
	ix.mu.Lock()
	if ix.written == nil || len(ix.written)+len(entries) > expiryMaxPending {
		ix.written = make(map[string]dynastore.N, len(entries))
	}
	for _, it := range entries {
		pk, _ := it.Get(attrExpiryKey).(dynastore.B)
		x, _ := it.Get(AttrExpiry).(dynastore.N)
		ix.written[string(pk)] = x
		if entryDue(it) <= passed {
			late = append(late, it)
		}
	}
	ix.mu.Unlock()
	if len(late) > 0 && ix.Late != nil {
		ix.Late(late)
	}
}

// entryDue is when an index entry is due (its sort key's first 8 bytes).
func entryDue(it dynastore.Item) int64 {
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	if len(sk) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(sk))
}

// expiryEntry is the index item of r.
func expiryEntry(r expiryRecord) dynastore.Item {
	h := fnv.New64a()
	_, _ = h.Write(r.pk)
	sum := h.Sum64()
	sk := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(r.due))
	sk = binary.BigEndian.AppendUint64(sk, sum)
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(expiryPK(byte(sum%expiryShards), r.due/60000))},
		{Name: dynastore.AttrSK, Value: dynastore.B(sk)},
		{Name: attrExpiryKey, Value: dynastore.B(r.pk)},
		{Name: AttrExpiry, Value: r.x},
		{Name: dynastore.AttrTTL, Value: TTLSeconds(r.due + expiryEntryTTL.Milliseconds())},
	}
}

// expiryPK is the partition of shard's entries due in Unix minute min.
func expiryPK(shard byte, minute int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{NsExpiry, shard}, uint64(minute))
}

// expiryDueSK is the smallest sort key of an entry due at ms.
func expiryDueSK(ms int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(ms))
}

// ---- what a write records ----------------------------------------------------

// keyItemExpiry returns the record of a key item write that sets x to
// the literal v, if it is one.
func keyItemExpiry(k dynastore.Key, v dynastore.Value) (expiryRecord, bool) {
	n, ok := v.(dynastore.N)
	if !ok || len(k.PK) < 2 || k.PK[0] != NsKey || len(k.SK) != 1 || k.SK[0] != KeyItemSK[0] {
		return expiryRecord{}, false
	}
	due, err := ExpiryMS(n)
	if err != nil {
		return expiryRecord{}, false
	}
	return expiryRecord{pk: append([]byte(nil), k.PK...), x: n, due: due}, true
}

// putExpiry is the record of a put of it. A WATCH mark (WatchMarkItem)
// reads as a key that expired long ago but is no key: nothing expires.
func putExpiry(it dynastore.Item) (expiryRecord, bool) {
	x := it.Get(AttrExpiry)
	if x == nil || it.Has(AttrWatchMark) {
		return expiryRecord{}, false
	}
	return keyItemExpiry(it.Key(), x)
}

// updateExpiry is the record of an update of k by u. An expiry computed
// by the update itself (CL.THROTTLE's, moved by an amount) is not known
// here and is not recorded.
func updateExpiry(k dynastore.Key, u *dynastore.Update) (expiryRecord, bool) {
	if u == nil {
		return expiryRecord{}, false
	}
	for _, s := range u.Set {
		if s.Attr == AttrExpiry {
			v, _ := s.Val.(dynastore.Value)
			return keyItemExpiry(k, v)
		}
	}
	return expiryRecord{}, false
}

// ---- the wrapper --------------------------------------------------------------

// Wrap returns st, recording through ix the expiries its successful
// writes set. The returned store offers what st does of the optional
// capabilities the model uses (snapshot reads, prefetching, counting, the
// clock offset).
func (ix *ExpiryIndex) Wrap(st dynastore.Store) dynastore.Store {
	w := &expiryStore{Store: st, ix: ix}
	if _, ok := st.(dynastore.Prefetcher); ok {
		return expiryPrefetchStore{w}
	}
	return w
}

type expiryStore struct {
	dynastore.Store
	ix *ExpiryIndex
}

// expiryPrefetchStore is an expiryStore over a store that prefetches: a
// separate type so that the model asks a store that does not for no
// hints.
type expiryPrefetchStore struct{ *expiryStore }

func (s expiryPrefetchStore) Prefetch(reads, replaced []dynastore.Key) {
	s.Store.(dynastore.Prefetcher).Prefetch(reads, replaced)
}

func (s *expiryStore) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if !s.ix.wanted() {
		return s.Store.Put(ctx, it, o)
	}
	// Before the call: a handed-over item is the store's once it is made.
	rec, ok := putExpiry(it)
	out, err := s.Store.Put(ctx, it, o)
	if ok && err == nil {
		s.ix.add([]expiryRecord{rec})
	}
	return out, err
}

func (s *expiryStore) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	out, err := s.Store.Update(ctx, k, u, o)
	if err == nil && s.ix.wanted() {
		if rec, ok := updateExpiry(k, &u); ok {
			s.ix.add([]expiryRecord{rec})
		}
	}
	return out, err
}

func (s *expiryStore) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	err := s.Store.Transact(ctx, actions)
	if err != nil || !s.ix.wanted() {
		return err
	}
	var recs []expiryRecord
	for _, a := range actions {
		var rec expiryRecord
		var ok bool
		switch a.Op {
		case dynastore.TxPut:
			rec, ok = putExpiry(a.Item)
		case dynastore.TxUpdate:
			rec, ok = updateExpiry(a.Key, a.Update)
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	s.ix.add(recs)
	return nil
}

// BatchWrite records the expiries of the key items it puts, as Put does.
func (s *expiryStore) BatchWrite(ctx context.Context, puts []dynastore.Item, deletes []dynastore.Key) error {
	var recs []expiryRecord
	if s.ix.wanted() {
		for _, it := range puts {
			if rec, ok := putExpiry(it); ok {
				recs = append(recs, rec)
			}
		}
	}
	if err := dynastore.BatchWrite(ctx, s.Store, puts, deletes); err != nil {
		return err
	}
	s.ix.add(recs)
	return nil
}

// GetSnapshot forwards to the wrapped store; one that cannot read
// snapshots answers ErrInvalid, on which the model reads plainly.
func (s *expiryStore) GetSnapshot(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	if sr, ok := s.Store.(dynastore.SnapshotReader); ok {
		return sr.GetSnapshot(ctx, keys)
	}
	return nil, errNoSnapshot
}

var errNoSnapshot = errors.Join(dynastore.ErrInvalid, errors.New("model: the store reads no snapshots"))

// CountItems forwards to the wrapped store; one that cannot count
// reports none, as DynamoDB does before its first count.
func (s *expiryStore) CountItems(ctx context.Context, filter dynastore.Cond, each func(dynastore.Item)) (int64, bool, error) {
	if c, ok := s.Store.(dynastore.Counter); ok {
		return c.CountItems(ctx, filter, each)
	}
	return 0, false, nil
}

// ClockOffset forwards to the wrapped store (none measured when it does
// not measure).
func (s *expiryStore) ClockOffset() (offset, uncertainty time.Duration, ok bool) {
	if c, is := s.Store.(dynastore.Clocked); is {
		return c.ClockOffset()
	}
	return 0, 0, false
}

// ClockSamples forwards to the wrapped store.
func (s *expiryStore) ClockSamples() int {
	if c, is := s.Store.(dynastore.Clocked); is {
		return c.ClockSamples()
	}
	return 0
}
