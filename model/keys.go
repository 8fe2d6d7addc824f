package model

// The generic keyspace operations, what every type shares: reading key
// items, the optimistic read-modify-write of one key item, DEL, the
// EXPIRE family and PERSIST, moving and copying a key, scanning the
// keyspace (KEYS, SCAN, RANDOMKEY, DBSIZE, FLUSHDB), the keyspace counts
// of INFO and the size accounting of MEMORY USAGE. Each is a function of
// the command's Scope and plain values, making every request itself.

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/redamo/redamo/dynastore"
)

// Scratch is memory a connection's commands reuse from one request to the
// next for what they hand the store in one call and no longer need once it
// returns, as a Store copies what it is given: ReadKey's and IncrBy's key,
// IncrBy's update, so that GET and INCR allocate nothing of their own.
// returned is where IncrBy has the
// store put the item it returns (WriteOptions.ReturnInto); it keeps that
// item's values until the next.
type Scratch struct {
	pk       []byte
	hot      []byte // hotKey's
	incr     incrActs
	returned dynastore.Item
}

// scratcher is a Scope that lends its connection's Scratch (nil: none).
type scratcher interface{ Scratch() *Scratch }

// scratchOf is s's Scratch, nil when it has none.
func scratchOf(s Scope) *Scratch {
	if sc, ok := s.(scratcher); ok {
		return sc.Scratch()
	}
	return nil
}

// scratchItemKey is ItemKey(s.DB(), key), in s's scratch memory when it
// has some (valid until its next scratchItemKey): for a key handed to a
// single store call.
func scratchItemKey(s Scope, key []byte) dynastore.Key {
	sc := scratchOf(s)
	if sc == nil {
		return ItemKey(s.DB(), key)
	}
	sc.pk = AppendKeyPK(sc.pk[:0], s.DB(), key)
	return dynastore.Key{PK: sc.pk, SK: KeyItemSK}
}

// ---- reading key items ---------------------------------------------------------

// ReadKey reads one key item (one GetItem). A key too long to exist reads
// as absent.
// Concurrent reads of one key share requests (hotStrings.read).
func ReadKey(s Scope, key []byte) (KeyState, error) {
	if !KeyFits(key) {
		return KeyState{}, nil
	}
	var it dynastore.Item
	var err error
	if Coalescable(s) {
		it, err = s.Process().hotStrings.read.DoAlone(s, hotKey(s, key), memberOf(s), readAlone(key), func(ops []member) ([]dynastore.Item, []error) {
			return readBatch(key, ops)
		})
	} else {
		it, err = s.Data().Get(s, scratchItemKey(s, key))
	}
	if err != nil {
		return KeyState{}, err
	}
	return decodeIn(s, it)
}

// ReadKeys reads several key items with batched reads (duplicates read
// once); the result is in the order of keys. Concurrent reads of the same
// keys (MGETs of one list) share their requests (hotStrings.readMany).
func ReadKeys(s Scope, keys [][]byte) ([]KeyState, error) {
	var items []dynastore.Item
	var err error
	if Coalescable(s) {
		items, err = s.Process().hotStrings.readMany.Do(s, hotKeys(s, keys), memberOf(s), func(ops []member) ([][]dynastore.Item, []error) {
			res, errs := answers[[]dynastore.Item](len(ops))
			s := ops[0].s
			if len(ops) > 1 {
				s = Detached(s)
			}
			items, err := readKeyItems(s, keys)
			for i := range ops {
				res[i], errs[i] = items, err
			}
			return res, errs
		})
	} else {
		items, err = readKeyItems(s, keys)
	}
	if err != nil {
		return nil, err
	}
	out := make([]KeyState, len(keys))
	for i, it := range items {
		if out[i], err = decodeIn(s, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readKeyItems reads the key items of keys, in their order (nil for a key
// that has none or cannot fit), each distinct key once.
func readKeyItems(s Scope, keys [][]byte) ([]dynastore.Item, error) {
	idx := make(map[string]int, len(keys))
	var ks []dynastore.Key
	for _, k := range keys {
		if !KeyFits(k) {
			continue
		}
		if _, ok := idx[string(k)]; !ok {
			idx[string(k)] = len(ks)
			ks = append(ks, ItemKey(s.DB(), k))
		}
	}
	out := make([]dynastore.Item, len(keys))
	if len(ks) == 0 {
		return out, nil
	}
	items, err := s.Data().BatchGet(s, ks)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if j, ok := idx[string(k)]; ok {
			out[i] = items[j]
		}
	}
	return out, nil
}

// StringLen is the length of a live string key's value.
func (ks KeyState) StringLen() int64 {
	if ks.big != nil {
		return ks.big.size
	}
	return ValueLen(ks.Raw.Get(AttrValue))
}

// Encoding is the encoding OBJECT ENCODING reports for a live string key.
func (ks KeyState) Encoding() string { return StringEncoding(ks.Raw) }

// ---- optimistic read-modify-write ---------------------------------------------

// keyWrite is the write a read-modify-write decided on for one key item.
type keyWrite struct {
	put    dynastore.Item // replace the whole item
	delete bool           // or delete it
	// gen is the staged generation put publishes (a big value's): the put
	// then goes with the check that the sweeper has not condemned it.
	gen []byte
	// also are actions published with put in one transaction (a big value
	// edit's: bigEdit.stage); lost, when set, is called when the guard
	// refused put, to discard what was staged for it.
	also []dynastore.TxAction
	lost func()
}

// mutateKey runs a read-modify-write on one key item without ever writing
// over a state it has not seen: decide looks at the current state and
// returns the write to make (nil: none needed), and the write is
// conditioned on the item being unchanged (its version token). When
// another writer got there first, the failed write hands back the current
// item and decide runs again, as long as the retry policy (Retry) allows.
// start is a state already known (from a failed fast path); nil reads the
// item first.
func mutateKey(s Scope, key []byte, start *KeyState, decide func(KeyState) (*keyWrite, error)) error {
	k := ItemKey(s.DB(), key)
	var ks KeyState
	if start != nil {
		ks = *start
	} else {
		var err error
		if ks, err = ReadKey(s, key); err != nil {
			return err
		}
	}
	ks = bind(s, ks)
	var cur dynastore.Item // what the last failed write found
	lost := false
	return RetryConflicts(s, func(int) error {
		if lost {
			// Decoded now, at the clock reading of this attempt.
			var err error
			if ks, err = decodeIn(s, cur); err != nil {
				return err
			}
		}
		w, err := decide(ks)
		if err != nil || w == nil {
			return err
		}
		wo := dynastore.WriteOptions{Cond: ks.Guard(), OldOnFailure: true}
		switch {
		case w.delete:
			_, err = s.Data().Delete(s, k, wo)
		case w.gen != nil || w.also != nil:
			err = publishBig(s, w, ks.Guard())
		default:
			_, err = s.Data().Put(s, w.put, wo)
		}
		if cur, lost = CondFailed(err); lost {
			if w.lost != nil {
				w.lost()
			}
			return ErrConflict
		}
		if err == nil && !w.delete && !ks.Live {
			reportCreated(s, key)
		}
		return err
	})
}

// failedStart is the state a fast-path write's failed condition handed
// back (err from a write with OldOnFailure), for mutateKey to start from;
// any other err is returned as it is.
func failedStart(err error, nowMS int64) (KeyState, error) {
	cur, failed := CondFailed(err)
	if !failed {
		return KeyState{}, err
	}
	return DecodeKey(cur, nowMS)
}

// OnlyConditionsFailed reports whether a write failed for no other reason
// than its conditions.
func OnlyConditionsFailed(err error) bool {
	r, ok := ConditionsFailed(err)
	return ok && r.Only()
}

// AddOverflows reports whether a+b falls outside int64.
func AddOverflows(a, b int64) bool {
	return (b < 0 && a < 0 && b < math.MinInt64-a) || (b > 0 && a > 0 && b > math.MaxInt64-a)
}

// IncrRoom is the condition that adding d to the number in attr stays
// within int64 (nil when d is 0), for an UpdateItem ADD to check.
func IncrRoom(attr string, d int64) dynastore.Cond {
	switch {
	case d > 0:
		return dynastore.Compare{Attr: attr, Op: dynastore.OpLE, Val: NInt(math.MaxInt64 - d)}
	case d < 0:
		return dynastore.Compare{Attr: attr, Op: dynastore.OpGE, Val: NInt(math.MinInt64 - d)}
	}
	return nil
}

// ---- DEL -------------------------------------------------------------------------

// DeleteKey deletes one live key: one DeleteItem. It reports whether there
// was one. An expired item stays for DynamoDB's TTL (it may be WATCH's
// mark: WatchMarkItem).
func DeleteKey(s Scope, key []byte) (bool, error) {
	if !KeyFits(key) {
		return false, nil
	}
	_, err := s.Data().Delete(s, ItemKey(s.DB(), key), dynastore.WriteOptions{Cond: CondLive(s.NowMS())})
	if _, failed := CondFailed(err); failed {
		return false, nil
	}
	return err == nil, err
}

// DeleteKeys deletes the live keys among keys and returns how many there
// were: a batched read, then one transaction deleting the live ones, each
// conditioned on the version read, re-run if any of them changed meanwhile.
func DeleteKeys(s Scope, keys [][]byte) (int64, error) {
	deleted, err := DeleteLiveKeys(s, keys)
	return int64(len(deleted)), err
}

// DeleteLiveKeys is DeleteKeys returning the keys it deleted, in the order
// of their first occurrence in keys.
func DeleteLiveKeys(s Scope, keys [][]byte) (deleted [][]byte, err error) {
	keys = distinctKeys(keys)
	err = RetryConflicts(s, func(int) error {
		states, err := ReadKeys(s, keys)
		if err != nil {
			return err
		}
		var acts []dynastore.TxAction
		deleted = deleted[:0]
		for i, ks := range states {
			if ks.Live {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: ItemKey(s.DB(), keys[i]), Cond: ks.Guard()})
				deleted = append(deleted, keys[i])
			}
		}
		return keyConflict(commitKeyActions(s, acts))
	})
	return deleted, err
}

// commitKeyActions writes actions atomically: nothing for none, a single
// conditional write for one (half the cost of a transaction), else one
// transaction. More than a transaction holds is ErrTxTooLarge.
func commitKeyActions(s Scope, acts []dynastore.TxAction) error {
	switch {
	case len(acts) == 0:
		return nil
	case len(acts) > dynastore.MaxTxActions:
		return fmt.Errorf("model: %d items in one atomic write: %w", len(acts), dynastore.ErrTxTooLarge)
	case len(acts) == 1 && acts[0].Op == dynastore.TxDelete:
		_, err := s.Data().Delete(s, acts[0].Key, dynastore.WriteOptions{Cond: acts[0].Cond})
		return err
	case len(acts) == 1 && acts[0].Op == dynastore.TxPut:
		_, err := s.Data().Put(s, acts[0].Item, dynastore.WriteOptions{Cond: acts[0].Cond})
		return err
	}
	return s.Data().Transact(s, acts)
}

// keyConflict is what a key transaction's outcome means for its attempt
// (RetryConflicts): ErrConflict when only its conditions failed (another
// writer got there first), else err.
func keyConflict(err error) error {
	if err != nil && OnlyConditionsFailed(err) {
		return ErrConflict
	}
	return err
}

// distinctKeys returns keys without repeats and without keys too long to exist.
func distinctKeys(keys [][]byte) [][]byte {
	seen := make(map[string]bool, len(keys))
	var out [][]byte
	for _, k := range keys {
		if KeyFits(k) && !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// ---- expiry ----------------------------------------------------------------------

// ExpireRule is the EXPIRE family's NX/XX/GT/LT options.
type ExpireRule uint8

const (
	ExpireNX ExpireRule = 1 << iota // only a key without expiry
	ExpireXX                        // only a key with one
	ExpireGT                        // only a later deadline
	ExpireLT                        // only an earlier one
)

// Expire sets a live key's deadline to whenMS (Unix ms) under rule and
// reports whether it did: one UpdateItem, or one DeleteItem when the
// deadline has passed, either conditioned on the key being live and on the
// rule (GT and LT treat a key without expiry as having an infinite TTL, as
// Redis does).
func Expire(s Scope, key []byte, whenMS int64, rule ExpireRule) (bool, error) {
	if !KeyFits(key) {
		return false, nil
	}
	now := s.NowMS()
	var terms dynastore.And
	switch {
	case rule&ExpireNX != 0:
		terms = append(terms, dynastore.NotExists{Attr: AttrExpiry})
	case rule&ExpireXX != 0:
		terms = append(terms, dynastore.Exists{Attr: AttrExpiry})
	}
	switch {
	case rule&ExpireGT != 0:
		terms = append(terms, dynastore.Exists{Attr: AttrExpiry},
			dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpLT, Val: NInt(whenMS)})
	case rule&ExpireLT != 0:
		terms = append(terms, dynastore.Or{
			dynastore.NotExists{Attr: AttrExpiry},
			dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpGT, Val: NInt(whenMS)},
		})
	}
	cond := CondLive(now)
	if len(terms) > 0 {
		cond = append(dynastore.And{cond}, terms...)
	}
	k := ItemKey(s.DB(), key)
	var err error
	if whenMS <= now {
		_, err = s.Data().Delete(s, k, dynastore.WriteOptions{Cond: cond})
	} else {
		_, err = s.Data().Update(s, k, dynastore.Update{Set: []dynastore.SetAction{
			{Attr: AttrExpiry, Val: NInt(whenMS)},
			{Attr: dynastore.AttrTTL, Val: TTLSeconds(whenMS)},
			{Attr: AttrVer, Val: NewVer()},
		}}, dynastore.WriteOptions{Cond: cond})
	}
	return condWrite(err)
}

// Persist removes a live key's expiry and reports whether it had one: one
// UpdateItem conditioned on a live key that has one.
func Persist(s Scope, key []byte) (bool, error) {
	if !KeyFits(key) {
		return false, nil
	}
	_, err := s.Data().Update(s, ItemKey(s.DB(), key), dynastore.Update{
		Set:    []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
		Remove: []string{AttrExpiry, dynastore.AttrTTL},
	}, dynastore.WriteOptions{Cond: dynastore.And{CondLive(s.NowMS()), dynastore.Exists{Attr: AttrExpiry}}})
	return condWrite(err)
}

// condWrite is a conditional write's outcome: whether it happened, false
// when its condition did not hold.
func condWrite(err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	if _, failed := CondFailed(err); failed {
		return false, nil
	}
	return false, err
}

// ---- RENAME, MOVE, COPY ----------------------------------------------------------

// MoveResult is what MoveKey did.
type MoveResult uint8

const (
	MoveNoSource     MoveResult = iota // the source key does not exist
	MoveTargetExists                   // nx and the target exists: nothing done
	MoveDone
)

// MoveKey moves the key item of src (the scope's database) to dst in
// dstDB, keeping its expiry, replacing a live target unless nx. It reads
// both in one batch, then writes one transaction (delete the source, write
// the target, each conditioned on the version read; a large collection's
// registry entry follows its key); a lost race re-runs it.
func MoveKey(s Scope, src []byte, dstDB int, dst []byte, nx bool) (MoveResult, error) {
	srcKey := ItemKey(s.DB(), src)
	if !KeyFits(src) {
		return MoveNoSource, nil
	}
	var res MoveResult
	err := RetryConflicts(s, func(int) error {
		from, to, err := readPair(s, srcKey, dstDB, dst)
		if err != nil {
			return err
		}
		switch {
		case !from.Live:
			res = MoveNoSource
			return nil
		case to.Live && nx:
			res = MoveTargetExists
			return nil
		case !KeyFits(dst):
			return ErrKeyTooLong
		}
		dstPK := KeyPK(dstDB, dst)
		acts := []dynastore.TxAction{
			{Op: dynastore.TxDelete, Key: srcKey, Cond: from.Guard()},
			{Op: dynastore.TxPut, Item: Retarget(from.Raw, dstDB, dst), Cond: to.Guard()},
		}
		acts = append(acts, CollectionRenameActions(from.Raw, dstPK)...)
		fieldActs, err := bigFieldRenameActions(s, s.Data(), from.Raw, dstPK)
		if err != nil {
			return err
		}
		acts = append(acts, fieldActs...)
		res = MoveDone
		return keyConflict(s.Data().Transact(s, acts))
	})
	return res, err
}

// readPair reads the key items at srcKey and of dst in dstDB in one
// batch; a dst too long to exist reads as absent.
func readPair(s Scope, srcKey dynastore.Key, dstDB int, dst []byte) (from, to KeyState, err error) {
	keys := []dynastore.Key{srcKey}
	if KeyFits(dst) {
		keys = append(keys, ItemKey(dstDB, dst))
	}
	items, err := s.Data().BatchGet(s, keys)
	if err != nil {
		return from, to, err
	}
	if from, err = decodeIn(s, items[0]); err != nil || len(items) == 1 {
		return from, to, err
	}
	to, err = DecodeKey(items[1], s.NowMS())
	return from, to, err
}

// CopyKey copies src (the scope's database) to dst in dstDB, replacing a
// live target only with replace, and reports whether it copied. It reads
// both keys in one batch and writes the copy in one transaction that also
// checks the source is unchanged, so the copy is of one consistent state.
// A large collection's members are copied first by the collection layer
// (CopyCollectionItem).
func CopyKey(s Scope, src []byte, dstDB int, dst []byte, replace bool) (bool, error) {
	if !KeyFits(src) {
		return false, nil
	}
	srcKey := ItemKey(s.DB(), src)
	var copied bool
	err := RetryConflicts(s, func(int) error {
		copied = false
		from, to, err := readPair(s, srcKey, dstDB, dst)
		if err != nil || !from.Live || (to.Live && !replace) {
			return err
		}
		if !KeyFits(dst) {
			return ErrKeyTooLong
		}
		var item dynastore.Item
		var extra []dynastore.TxAction
		switch {
		case from.Type == TypeString && from.big != nil:
			if item, extra, err = copyBigItem(s, from, dstDB, dst); err != nil {
				return err
			}
		case from.Type == TypeString:
			item = Retarget(from.Raw, dstDB, dst)
		default:
			if item, extra, err = CopyCollectionItem(s, s.Data(), from.Raw, KeyPK(dstDB, dst), s.NowMS()); err != nil {
				return err
			}
		}
		acts := append([]dynastore.TxAction{
			{Op: dynastore.TxCheck, Key: srcKey, Cond: from.Guard()},
			{Op: dynastore.TxPut, Item: item, Cond: to.Guard()},
		}, extra...)
		copied = true
		return keyConflict(s.Data().Transact(s, acts))
	})
	return copied, err
}

// ---- scanning the keyspace -------------------------------------------------------

// redisKey is the Redis key of a key item met by a scan (ok false for
// anything else).
func redisKey(it dynastore.Item) ([]byte, bool) {
	pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
	_, key, ok := RedisKeyOf(pk)
	return key, ok
}

// Keys scans the table for the live keys of the scope's database that
// start with prefix, calling fn with each.
func Keys(s Scope, prefix []byte, fn func(key []byte)) error {
	return ScanAll(s, s.Data(), KeyFilter(s.DB(), prefix, s.NowMS()), func(it dynastore.Item) error {
		if key, ok := redisKey(it); ok {
			fn(key)
		}
		return nil
	})
}

// SCAN reads the table in pages. A page's Limit counts the items DynamoDB
// examines, other databases' keys and internal items included, so a call
// starts with a page of COUNT items and, while it finds too few keys of the
// selected database, reads growing pages (x4 each, up to scanMaxLimit), for
// at most scanPageBudget pages. A dense database then answers about COUNT
// keys per call, a sparse one is not crawled COUNT items at a time, and a
// small table is done in one call, as a small Redis database is.
const (
	scanPageBudget = 6
	scanMaxLimit   = 1000
	// scanMaxCount caps the first page of a huge COUNT (DynamoDB ends a
	// page at 1 MB anyway).
	scanMaxCount = 100_000
)

// ScanOptions are SCAN's: COUNT, and TYPE when HasType.
type ScanOptions struct {
	Count   int64
	Type    string
	HasType bool
}

// ScanKeys continues a table scan from the position kept under cursor (0:
// the start), calling fn with the live keys of the scope's database met
// on the way (Count bounds the items examined, as Redis's COUNT bounds
// work), and keeps the new position under a new cursor, which it returns
// (0: the end; cursors.go: why in the table, why below 2^53). ok is false
// when cursor is not one redamo handed out (or one garbage-collected after
// a day): continuing from anywhere would silently skip keys.
func ScanKeys(s Scope, cursor uint64, o ScanOptions, fn func(key []byte)) (next uint64, ok bool, err error) {
	var after *dynastore.Key
	if cursor != 0 {
		pos, ok, err := LoadScanCursor(s, cursor)
		if err != nil || !ok {
			return 0, ok, err
		}
		after = &pos
	}
	filter := KeyFilter(s.DB(), nil, s.NowMS())
	if o.HasType {
		filter = append(filter.(dynastore.And), CondType(o.Type))
	}
	limit := min(o.Count, scanMaxCount)
	var found int64
	for pages := 0; pages < scanPageBudget; pages++ {
		page, err := scanPage(s, s.Data(), dynastore.Scan{Limit: int(limit), Filter: filter, After: after})
		if err != nil {
			return 0, false, err
		}
		for _, it := range page.Items {
			if key, ok := redisKey(it); ok {
				fn(key)
			}
		}
		found += int64(len(page.Items))
		after = page.Next
		if after == nil || found >= o.Count {
			break
		}
		if limit < scanMaxLimit {
			limit = min(limit*4, max(scanMaxLimit, limit))
		}
	}
	if after == nil {
		return 0, true, nil
	}
	id, err := SaveScanCursor(s, *after)
	return id, err == nil, err
}

// randomKeyCandidates is how many live keys RandomKey gathers, from a
// random position on, before choosing one of them at random.
const randomKeyCandidates = 16

// RandomKey scans from a random position (wrapping around once) until it
// has met a few live keys of the scope's database, and returns one of them
// at random (nil: none). DynamoDB orders a scan by a hash of the key, so
// the position is random; the memory store orders by key bytes, where
// gathering several candidates keeps the choice from always falling on the
// same key.
func RandomKey(s Scope) ([]byte, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("model: random position: %w", err)
	}
	filter := KeyFilter(s.DB(), nil, s.NowMS())
	start := &dynastore.Key{PK: append(DBPrefix(s.DB()), b[:8]...), SK: KeyItemSK}
	var candidates [][]byte
	seen := map[string]bool{}
gather:
	for _, after := range []*dynastore.Key{start, nil} {
		for {
			page, err := scanPage(s, s.Data(), dynastore.Scan{Limit: 100, Filter: filter, After: after})
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				if key, ok := redisKey(it); ok && !seen[string(key)] {
					seen[string(key)] = true
					candidates = append(candidates, key)
				}
			}
			if len(candidates) >= randomKeyCandidates {
				break gather
			}
			if page.Next == nil {
				break
			}
			after = page.Next
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	return candidates[binary.BigEndian.Uint64(b[8:])%uint64(len(candidates))], nil
}

// CountKeys counts the live keys of the scope's database with a strongly
// consistent Scan of the whole table (DBSIZE: exact rather than cheap).
func CountKeys(s Scope) (int64, error) {
	var n int64
	err := ScanAll(s, s.Data(), KeyFilter(s.DB(), nil, s.NowMS()), func(dynastore.Item) error {
		n++
		return nil
	})
	return n, err
}

// ---- FLUSHDB, FLUSHALL -----------------------------------------------------------

// FlushDB deletes every item of database db.
func FlushDB(s Scope, db int) error { return flushPrefix(s, DBPrefix(db)) }

// FlushAll deletes every item of every database.
func FlushAll(s Scope) error { return flushPrefix(s, []byte{NsKey}) }

// flushWorkers is how many deletes a flush keeps in flight: each is one
// small conditional DeleteItem of a round trip's few milliseconds, so the
// flush of a big database is bound by how many go at once, and DynamoDB
// spreads them over the table's partitions (a throttled one is retried by
// the policy like any write).
const flushWorkers = 32

// flushPrefix deletes every item whose pk starts with prefix. A table flush
// cannot be one atomic request; each delete is conditioned on the version
// the scan saw, so a key written after the scan read it survives, as a write
// that came after the flush would.
func flushPrefix(s Scope, prefix []byte) error {
	work := make(chan dynastore.Item)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i := 0; i < flushWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				var cond dynastore.Cond
				if v := it.Get(AttrVer); v != nil {
					cond = dynastore.Compare{Attr: AttrVer, Op: dynastore.OpEQ, Val: v}
				}
				_, err := s.Data().Delete(s, it.Key(), dynastore.WriteOptions{Cond: cond})
				if _, changed := CondFailed(err); err != nil && !changed {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	err := ScanAll(s, s.Data(), dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: prefix}, func(it dynastore.Item) error {
		mu.Lock()
		failed := firstErr
		mu.Unlock()
		if failed != nil {
			return failed
		}
		if it.Has(AttrWatchMark) {
			// No key (it reads as expired), and a watcher's: Redis's
			// flush does not touch a watched key that did not exist.
			return nil
		}
		work <- it
		return nil
	})
	close(work)
	wg.Wait()
	if err == nil {
		err = firstErr
	}
	return err
}

// ---- INFO keyspace -----------------------------------------------------------------

// DBKeys is what INFO's keyspace section says of one database.
type DBKeys struct {
	DB            int
	Keys, Expires int64
}

// KeyspaceCounts reports the keys of every non-empty database below
// numDBs, in ascending db order, without a Scan: monitoring sends INFO ALL
// on every scrape, and a Scan bills every item of the table. The count is
// the store's (dynastore.Counter). The embedded store's is exact: the live
// keys, and those with an expiry, of each database. DynamoDB's is the
// table's item count as DynamoDB last refreshed it (about every six
// hours), which counts every item, not only key items, and cannot tell
// databases or expiries apart: it is reported as db0's keys, an estimate
// (README, "INFO"). A store that counts nothing gives none.
func KeyspaceCounts(s Scope, numDBs int) ([]DBKeys, error) {
	st := s.Data()
	txn, inTxn := st.(*Txn)
	if inTxn {
		st = txn.Base()
	}
	counter, ok := st.(dynastore.Counter)
	if !ok {
		return nil, nil
	}
	counts := make([]DBKeys, numDBs)
	add := func(it dynastore.Item) {
		pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
		db, _, ok := RedisKeyOf(pk)
		if !ok || db >= numDBs {
			return
		}
		counts[db].Keys++
		if it.Has(AttrExpiry) {
			counts[db].Expires++
		}
	}
	filter := KeyFilter(-1, nil, s.NowMS())
	n, exact, err := counter.CountItems(s, filter, add)
	if err != nil {
		return nil, err
	}
	if !exact {
		if n == 0 {
			return nil, nil
		}
		return []DBKeys{{DB: 0, Keys: n}}, nil
	}
	if inTxn {
		// Inside MULTI or a script the count includes the transaction's
		// own writes, which only its scan sees; on a store that counts
		// exactly, items are in this process and a scan bills nothing.
		clear(counts)
		if err := ScanAll(s, s.Data(), filter, func(it dynastore.Item) error { add(it); return nil }); err != nil {
			return nil, err
		}
	}
	var out []DBKeys
	for db, ks := range counts {
		if ks.Keys > 0 {
			ks.DB = db
			out = append(out, ks)
		}
	}
	return out, nil
}

// ---- MEMORY USAGE ---------------------------------------------------------------

// KeyUsage is the bytes key occupies in the table, by DynamoDB's own
// accounting of item sizes (dynastore.ItemSize, what capacity units and the
// 400 KB limit are counted on): its key item, and for a large collection
// its member items, of which at most samples are read (one Query page,
// usually) and the rest estimated from their average, as Redis estimates a
// big collection from a sample of its elements. found is false when the
// key does not exist.
func KeyUsage(s Scope, key []byte, samples int64) (size int64, found bool, err error) {
	ks, err := ReadKey(s, key)
	if err != nil || !ks.Live {
		return 0, false, err
	}
	size = int64(dynastore.ItemSize(ks.Raw))
	if ks.big != nil {
		// The chunks, from the header: their sizes are known, none is read.
		return size + ks.big.stored(), true, nil
	}
	gen, large := ks.Raw.Get(AttrGen).(dynastore.B)
	if !large {
		return size, true, nil
	}
	q := dynastore.Query{PK: MembersPK(gen)}
	var n int64
	if span, spanned := MemberSpans[ks.Type]; spanned {
		// Only the positions in [Lo, Hi) are elements.
		h, err := NumberInt(ks.Raw.Get(span.Lo))
		if err != nil {
			return 0, false, err
		}
		t, err := NumberInt(ks.Raw.Get(span.Hi))
		if err != nil {
			return 0, false, err
		}
		n = t - h
		q.Op, q.A, q.B = dynastore.SKBetween, MemberSK(PosMember(h)), MemberSK(PosMember(t-1))
	} else if n, err = NumberInt(ks.Raw.Get(AttrCount)); err != nil {
		return 0, false, err
	} else if _, ordered := MemberOrders[ks.Type]; ordered {
		n *= 2 // an order item beside each member item
	}
	var read, bytes int64
	for want := min(samples, n); read < want; {
		q.Limit = int(want - read)
		page, err := s.Data().Query(s, q)
		if err != nil {
			return 0, false, err
		}
		for _, it := range page.Items {
			bytes += int64(dynastore.ItemSize(it))
			if h, ok := refOf(it.Get(AttrValue)); ok {
				bytes += h.stored()
			}
			if h, ok := refOf(it.Get(attrMember)); ok && it.Has(attrBigMember) {
				bytes += h.stored() // a big member's chunks, counted at its member item
			}
			read++
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	if read > 0 && read < n {
		bytes = int64(float64(bytes) / float64(read) * float64(n))
	}
	return size + bytes, true, nil
}
