package model

// Big values: a string longer than one item holds (DynamoDB's 400 KB),
// up to proto-max-bulk-len (Redis's 512 MB).
//
// A big value is cut into chunks of bigChunkSize bytes, each an item of
// its own under a fresh generation id, and the key item points at them:
//
//	key item   t "string", no v; g the generation; bv the value's length,
//	           chunk size and (written before chunk maps) CRC-32C (bigHeader);
//	           bm the chunk map: per chunk, the edit that wrote it (8
//	           bytes, 0 for the value's first write) and its CRC-32C (4)
//	chunk i    pk NsChunks, generation, i (4 bytes big-endian); sk 0x00
//	           for the first write, the edit id (8 bytes) for an edit's;
//	           d B the chunk's bytes
//	registry   the generation's registry entry (generations.go), with bc,
//	           the chunk count, and once edited bm, the chunk map as
//	           published, so the sweeper knows which chunks to delete
//	journal    a registry entry per edit (sk its own id): bj the value's
//	           generation and bk the chunks (index and edit) the sweeper
//	           deletes after its grace: the edit's own while it is
//	           unpublished, the chunks it replaced once it is published
//
// A write registers the generation, writes the chunks with BatchWriteItem
// (bigBatch per request, one write unit per KB, no transaction: nothing points
// at them yet, so nobody can see them half written), then publishes them
// with one transaction of the key item's conditional put and a check that
// the sweeper has not condemned the generation (genAliveCheck), a
// transaction that only bills the small key item. Inside a unit of work
// (MULTI/EXEC, a script) the chunks are written at once and the
// publication joins the unit's commit. A writer that dies before it
// publishes leaves a generation no key item points at: the sweeper
// deletes it after its grace, as it does a deleted large collection's.
//
// An edit (APPEND, SETRANGE, SETBIT, BITFIELD) rewrites only the chunks
// it changes, plus new ones for growth: chunk boundaries are fixed
// multiples of the chunk size, so an APPEND rewrites the last chunk and
// adds chunks after it. The new chunks are written under a fresh edit id,
// never over a chunk the published value or a reader still uses, after a
// journal entry that names them; one transaction then publishes the key
// item with the new map, records the map on the generation's registry
// entry and turns the journal into the list of the chunks it replaced.
// A reader holding the old key item still finds every chunk it names for
// the sweeper's grace, as after an overwrite. A value written before chunk
// maps existed (no bm) is rewritten whole by its first edit.
//
// Chunk requests are paced (paced): a range the table throttled is sent
// again after a backoff and halves how many are in flight, a success adds
// one back, so a big write runs as fast as the table takes it; it gives
// up, publishing nothing, after a time bounded by its size.
//
// Overwriting, deleting or expiring a big value only changes the key item;
// the old chunks stay until the sweeper has seen the generation dead for
// its grace (10 minutes by default). That grace is what lets a reader on
// any instance that read the key item just before an overwrite still read
// every chunk it points at: a reader never sees a mix of two values, since
// it only reads the chunks its key item names, and each chunk's checksum
// is verified. A read that outlives the grace
// finds a chunk gone and fails with ErrBigValueGone instead of answering.
//
// Each chunk has its own partition key, so the chunks of one value spread
// over DynamoDB's partitions: a 50 MB value's reads and writes are not
// capped by one partition's throughput (1,000 write units, 3,000 read
// units per second), and are sent a few requests at a time. A read is the
// key item, then BatchGetItems of bigBatch chunks, bigParallel of them at
// once; GETRANGE
// reads only the chunks its range covers, and STRLEN none.
//
// A value is big when the key item holding it inline would not fit an
// item (isBig); everything smaller keeps the single-item
// layouts and requests.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

const (
	// AttrBig ("bv") is a big string's header on its key item.
	AttrBig = "bv"
	// attrChunk ("d") is a chunk item's bytes.
	attrChunk = "d"
	// attrChunks ("bc") is the chunk count on a big value's registry entry.
	attrChunks = "bc"
	// attrChunkMap ("bm") is a big value's chunk map (chunkRef, encoded by
	// encodeRefs), on its key item and, once edited, its registry entry.
	attrChunkMap = "bm"
	// attrJournalGen ("bj") is the generation an edit's journal entry is
	// about; attrJournalChunks ("bk") the chunks it lists (encodeJournal).
	attrJournalGen    = "bj"
	attrJournalChunks = "bk"
)

const (
	// bigChunkSize is the bytes of one chunk: as many as an item holds with
	// room left for its key and attribute names.
	bigChunkSize = 384 << 10
	// bigBatch is the chunks one BatchGetItem or BatchWriteItem carries:
	// about 3 MB, well under the 16 MB either allows, so that one request
	// fits its attempt's timeout on a slow link or a busy DynamoDB Local
	// (requests of 9 and 15 MB ran past it there).
	bigBatch = 8
	// bigParallel is how many chunk requests a big value's read or write
	// has in flight at once.
	bigParallel = 8
	// bigSlack is the time a chunk request has beyond the store's policy,
	// which is cut for requests of a few KB.
	bigSlack = 5 * time.Second
	// bigItemRoom is what a string key item needs besides its key and
	// value: attribute names, type, version, encoding, expiry, ttl.
	bigItemRoom = 256
	// bigBackoff and bigBackoffCap are the waits after a throttled chunk
	// request: doubled for each throttle in a row, up to the cap.
	bigBackoff    = 50 * time.Millisecond
	bigBackoffCap = 2 * time.Second
)

// bigPatience and bigRangeTime bound how long a big value's chunk requests
// may keep being throttled: bigPatience, plus bigRangeTime for each range
// of bigBatch chunks (what a table taking a thousand write units a second
// needs for it). Variables, so that a test can run out of patience.
var (
	bigPatience  = 20 * time.Second
	bigRangeTime = 3 * time.Second
)

// ErrBigValueGone is a big value whose chunks were deleted while it was
// being read: it was overwritten or deleted longer than the sweeper's grace
// ago. Nothing is answered from it. It is a lost race (it wraps
// dynastore.ErrTxConflict): a unit of work runs again from a fresh read,
// and a client is told to try again.
var ErrBigValueGone = fmt.Errorf("model: the value was replaced while it was being read: %w", dynastore.ErrTxConflict)

// castagnoli is the CRC-32C table of big values' checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isBig reports whether a string of n bytes under key must be stored as a
// big value: its key item would not fit one item.
func isBig(key []byte, n int64) bool {
	return n > dynastore.MaxItemSize-int64(len(key))-bigItemRoom
}

// bigHeader is what a key item says of its big value.
type bigHeader struct {
	gen   []byte
	size  int64
	chunk int64
	// sum is the whole value's CRC-32C, checked when refs is nil (a value
	// written before chunk maps); refs the chunk map, whose sums are
	// checked chunk by chunk.
	sum  uint32
	refs []chunkRef
}

// chunkRef is where a chunk is and what it holds: the edit that wrote it
// (0: the value's first write) and its bytes' CRC-32C.
type chunkRef struct {
	edit uint64
	sum  uint32
}

// chunkRefSize is an encoded chunkRef's bytes.
const chunkRefSize = 12

// encodeRefs is a chunk map as stored: each ref's edit (8 bytes) and sum
// (4), big-endian.
func encodeRefs(refs []chunkRef) dynastore.B {
	b := make([]byte, 0, len(refs)*chunkRefSize)
	for _, r := range refs {
		b = binary.BigEndian.AppendUint64(b, r.edit)
		b = binary.BigEndian.AppendUint32(b, r.sum)
	}
	return dynastore.B(b)
}

// decodeRefs reads a chunk map of n chunks.
func decodeRefs(b []byte, n int64) ([]chunkRef, error) {
	if int64(len(b)) != n*chunkRefSize {
		return nil, fmt.Errorf("model: big value chunk map of %d bytes for %d chunks: %w", len(b), n, dynastore.ErrInvalid)
	}
	refs := make([]chunkRef, n)
	for i := range refs {
		refs[i] = chunkRef{binary.BigEndian.Uint64(b[i*chunkRefSize:]), binary.BigEndian.Uint32(b[i*chunkRefSize+8:])}
	}
	return refs, nil
}

// chunkAt is chunk i's key under h's map.
func (h *bigHeader) chunkAt(i int64) dynastore.Key {
	if h.refs == nil {
		return chunkKey(h.gen, i)
	}
	return chunkKeyAt(h.gen, i, h.refs[i].edit)
}

// keysOf are the keys of h's chunks lo..hi-1.
func (h *bigHeader) keysOf(lo, hi int64) []dynastore.Key {
	keys := make([]dynastore.Key, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, h.chunkAt(i))
	}
	return keys
}

// chunks is the value's chunk count.
func (h *bigHeader) chunks() int64 { return (h.size + h.chunk - 1) / h.chunk }

// encode is the bv attribute: size (8 bytes), chunk size (4), CRC-32C (4),
// big-endian.
func (h *bigHeader) encode() dynastore.B {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(h.size))
	binary.BigEndian.PutUint32(b[8:], uint32(h.chunk))
	binary.BigEndian.PutUint32(b[12:], h.sum)
	return dynastore.B(b)
}

// bigHeaderOf decodes a key item's big value header; nil when it has none.
func bigHeaderOf(it dynastore.Item) (*bigHeader, error) {
	v := it.Get(AttrBig)
	if v == nil {
		return nil, nil
	}
	b, _ := v.(dynastore.B)
	g, _ := it.Get(AttrGen).(dynastore.B)
	h, err := decodeBigHeader(g, b)
	if err != nil {
		return nil, err
	}
	if m, ok := it.Get(attrChunkMap).(dynastore.B); ok {
		refs, err := decodeRefs(m, h.chunks())
		if err != nil {
			return nil, err
		}
		h.refs = refs
	}
	return h, nil
}

// decodeBigHeader is the header of generation g encoded as b.
func decodeBigHeader(g, b []byte) (*bigHeader, error) {
	if len(b) != 16 || len(g) == 0 {
		return nil, fmt.Errorf("model: big value header: %w", dynastore.ErrInvalid)
	}
	h := &bigHeader{
		gen:   []byte(g),
		size:  int64(binary.BigEndian.Uint64(b)),
		chunk: int64(binary.BigEndian.Uint32(b[8:])),
		sum:   binary.BigEndian.Uint32(b[12:]),
	}
	if h.size <= 0 || h.chunk <= 0 {
		return nil, fmt.Errorf("model: big value header: %w", dynastore.ErrInvalid)
	}
	return h, nil
}

// chunkKey is the key of chunk i of generation gen as its first write
// wrote it.
func chunkKey(gen []byte, i int64) dynastore.Key {
	return chunkKeyAt(gen, i, 0)
}

// chunkKeyAt is the key of chunk i of generation gen as edit wrote it:
// the versions of one chunk share its partition.
func chunkKeyAt(gen []byte, i int64, edit uint64) dynastore.Key {
	pk := make([]byte, 0, 1+len(gen)+4)
	pk = append(append(pk, NsChunks), gen...)
	pk = binary.BigEndian.AppendUint32(pk, uint32(i))
	if edit == 0 {
		return dynastore.Key{PK: pk, SK: KeyItemSK}
	}
	return dynastore.Key{PK: pk, SK: binary.BigEndian.AppendUint64(nil, edit)}
}

// chunkKeys are the keys of chunks lo..hi-1 of gen.
func chunkKeys(gen []byte, lo, hi int64) []dynastore.Key {
	keys := make([]dynastore.Key, 0, hi-lo)
	for i := lo; i < hi; i++ {
		keys = append(keys, chunkKey(gen, i))
	}
	return keys
}

// baseStore is where big values' chunks are read and written: the store
// itself, also inside a unit of work. Chunks never change once written, so
// a unit's reads need not check them at commit, and a unit's commit could
// not carry them (DynamoDB's transactions hold 4 MB).
func baseStore(s Scope) dynastore.Store { return baseOf(s.Data()) }

// stageBig writes val as a new, unpublished generation of chunks owned by
// key, and returns its header; the caller publishes it (bigStringItem,
// with genAliveCheck in the same write).
func stageBig(s Scope, key, val []byte) (*bigHeader, error) {
	return stageChunks(s, baseStore(s), s.NowMS(), KeyPK(s.DB(), key), nil, val)
}

// stageChunks is stageBig into st (never a unit's buffer) for any owner: a
// hash field's value (bigfields.go) names the field's member sort key
// ownerSK besides its key item's pk.
func stageChunks(ctx context.Context, st dynastore.Store, nowMS int64, ownerPK, ownerSK, val []byte) (*bigHeader, error) {
	h := &bigHeader{gen: newGenID(), size: int64(len(val)), chunk: bigChunkSize}
	h.refs = make([]chunkRef, h.chunks())
	for i := range h.refs {
		h.refs[i].sum = crc32.Checksum(val[int64(i)*h.chunk:min(int64(i+1)*h.chunk, h.size)], castagnoli)
	}
	reg := genRegKey(h.gen)
	regItem := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(reg.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(reg.SK)},
		{Name: attrOwner, Value: dynastore.B(ownerPK)},
		{Name: attrCreated, Value: NInt(nowMS)},
		{Name: attrChunks, Value: NInt(h.chunks())},
	}
	if ownerSK != nil {
		regItem.Set(attrOwnerSK, dynastore.B(ownerSK))
	}
	if _, err := putPatiently(ctx, st, regItem); err != nil {
		return nil, fmt.Errorf("registering a big value: %w", err)
	}
	if err := writeChunks(ctx, st, h, 0, val); err != nil {
		return nil, fmt.Errorf("writing a big value: %w", err)
	}
	return h, nil
}

// writeChunks writes h's chunks from lo on with data, the value's bytes
// from chunk lo's start to its end, one BatchWriteItem per bigBatch
// chunks, paced.
func writeChunks(ctx context.Context, st dynastore.Store, h *bigHeader, lo int64, data []byte) error {
	base := lo * h.chunk
	end := base + int64(len(data))
	n := (end - base + h.chunk - 1) / h.chunk
	return paced(ctx, n, bigBatch, func(ctx context.Context, a, b int64) error {
		puts := make([]dynastore.Item, 0, b-a)
		for i := lo + a; i < lo+b; i++ {
			k := h.chunkAt(i)
			puts = append(puts, dynastore.Item{
				{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
				{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
				{Name: attrChunk, Value: dynastore.B(data[i*h.chunk-base : min((i+1)*h.chunk, end)-base])},
			})
		}
		return dynastore.BatchWrite(retry.WithSlack(ctx, bigSlack), st, puts, nil)
	})
}

// discardBig deletes a staged generation that was never published (SET NX
// that found the key, say), best effort: what it leaves the sweeper
// deletes.
func discardBig(s Scope, h *bigHeader) {
	st := baseStore(s)
	if err := dynastore.BatchWrite(retry.WithSlack(s, bigSlack), st, nil, h.keysOf(0, h.chunks())); err != nil {
		return
	}
	_, _ = st.Delete(s, genRegKey(h.gen), dynastore.WriteOptions{})
}

// putPatiently puts it unconditionally, as a big value's write puts its
// registry and journal entries: a request the table throttled is sent
// again, paced as chunks are, since the chunk requests around it are what
// put the table in debt.
func putPatiently(ctx context.Context, st dynastore.Store, it dynastore.Item) (dynastore.Item, error) {
	var old dynastore.Item
	err := patiently(ctx, func(ctx context.Context) (err error) {
		old, err = st.Put(ctx, it, dynastore.WriteOptions{})
		return err
	})
	return old, err
}

// patiently is fn, sent again as paced sends a range while the table
// throttles it.
func patiently(ctx context.Context, fn func(ctx context.Context) error) error {
	return paced(ctx, 1, 1, func(ctx context.Context, _, _ int64) error { return fn(ctx) })
}

// unappliedThrottle reports whether err is a throttle of a request that
// was certainly not applied: sending it again cannot apply it twice, so a
// conditional write (a publication) sent again is not refused by its own
// first attempt.
func unappliedThrottle(err error) bool {
	return errors.Is(err, dynastore.ErrThrottled) && !errors.Is(err, dynastore.ErrOutcomeUnknown)
}

// paced calls fn for the ranges of step of 0..n-1, up to bigParallel at
// once, pacing them to what the table takes, as TCP paces itself to a
// link (additive increase, multiplicative decrease): a range the table
// throttled (unappliedThrottle, once the store's own retries are spent)
// is split in two and sent again after a backoff, and halves how
// many ranges may be in flight; each success adds back one range per
// round. Any other error stops it, as does throttling past a time bounded
// by n (bigPatience, bigRangeTime): it returns the first error, the
// throttle's then, and fn may have been applied to any of the ranges.
func paced(ctx context.Context, n, step int64, fn func(ctx context.Context, lo, hi int64) error) error {
	ctx, cancel := context.WithTimeout(ctx, bigPatience+time.Duration((n+step-1)/step)*bigRangeTime)
	defer cancel()
	type span struct {
		lo, hi int64
		err    error
	}
	var queue []span
	for lo := int64(0); lo < n; lo += step {
		queue = append(queue, span{lo: lo, hi: min(lo+step, n)})
	}
	var (
		done      = make(chan span)
		window    = float64(bigParallel)
		inflight  int
		first     error
		throttled error
		throttles int
		backoff   *time.Timer
		resume    <-chan time.Time
	)
	defer func() {
		if backoff != nil {
			backoff.Stop()
		}
	}()
	for (first == nil && len(queue) > 0) || inflight > 0 {
		for first == nil && resume == nil && len(queue) > 0 && float64(inflight) < window {
			r := queue[0]
			queue = queue[1:]
			inflight++
			go func() {
				r.err = fn(ctx, r.lo, r.hi)
				done <- r
			}()
		}
		var expired <-chan struct{}
		if first == nil {
			expired = ctx.Done()
		}
		select {
		case r := <-done:
			inflight--
			switch {
			case r.err == nil:
				throttles = 0
				window = min(float64(bigParallel), window+1/window)
			case unappliedThrottle(r.err) && ctx.Err() == nil:
				throttled = r.err
				if mid := (r.lo + r.hi) / 2; mid > r.lo {
					queue = append(queue, span{lo: r.lo, hi: mid}, span{lo: mid, hi: r.hi})
				} else {
					queue = append(queue, span{lo: r.lo, hi: r.hi})
				}
				window = max(1, window/2)
				throttles++
				if resume == nil {
					d := min(bigBackoffCap, bigBackoff<<min(throttles-1, 16))
					backoff = time.NewTimer(d/2 + rand.N(d/2+1))
					resume = backoff.C
				}
			case first == nil:
				first = r.err
				if errors.Is(r.err, context.DeadlineExceeded) && throttled != nil {
					first = throttled
				}
			}
		case <-resume:
			resume = nil
		case <-expired:
			first = ctx.Err()
			if throttled != nil {
				first = throttled
			}
		}
	}
	return first
}

// readBig reads bytes [from, to) of a big value (to <= size), verifying
// each chunk's checksum (a value written before chunk maps: the whole
// value's, when that is what is read).
func readBig(ctx context.Context, st dynastore.Store, h *bigHeader, from, to int64) ([]byte, error) {
	if from >= to {
		return []byte{}, nil
	}
	lo, hi := from/h.chunk, (to-1)/h.chunk+1
	out := make([]byte, to-from)
	err := paced(ctx, hi-lo, bigBatch, func(ctx context.Context, a, b int64) error {
		items, err := st.BatchGet(retry.WithSlack(ctx, bigSlack), h.keysOf(lo+a, lo+b))
		if err != nil {
			return err
		}
		for j, it := range items {
			i := lo + a + int64(j)
			d, ok := it.Get(attrChunk).(dynastore.B)
			if it == nil || !ok {
				return ErrBigValueGone
			}
			start, end := i*h.chunk, min((i+1)*h.chunk, h.size)
			if int64(len(d)) != end-start {
				return fmt.Errorf("model: big value chunk %d of %d bytes: %w", i, len(d), dynastore.ErrInvalid)
			}
			if h.refs != nil && crc32.Checksum(d, castagnoli) != h.refs[i].sum {
				return fmt.Errorf("model: big value chunk %d checksum mismatch: %w", i, dynastore.ErrInvalid)
			}
			// The part of the chunk inside [from, to).
			cs, ce := max(start, from), min(end, to)
			copy(out[cs-from:ce-from], d[cs-start:ce-start])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.refs == nil && from == 0 && to == h.size && crc32.Checksum(out, castagnoli) != h.sum {
		return nil, fmt.Errorf("model: big value checksum mismatch: %w", dynastore.ErrInvalid)
	}
	return out, nil
}

// bigStringItem is the key item that publishes a staged big value.
func bigStringItem(db int, key []byte, h *bigHeader, expiryMS int64) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(KeyPK(db, key))},
		{Name: dynastore.AttrSK, Value: KeyItemSKValue},
		{Name: AttrType, Value: dynastore.S(TypeString)},
		{Name: AttrGen, Value: dynastore.B(bytes.Clone(h.gen))},
		{Name: AttrBig, Value: h.encode()},
		{Name: AttrVer, Value: NewVer()},
	}
	if h.refs != nil {
		it = append(it, dynastore.Attr{Name: attrChunkMap, Value: encodeRefs(h.refs)})
	}
	if expiryMS != 0 {
		it = append(it,
			dynastore.Attr{Name: AttrExpiry, Value: NInt(expiryMS)},
			dynastore.Attr{Name: dynastore.AttrTTL, Value: TTLSeconds(expiryMS)})
	}
	return it
}

// stringWrite is the write of a string key item holding val, staging it
// as a big value first when it needs one.
func stringWrite(s Scope, key, val []byte, origin StrOrigin, expiryMS int64) (*keyWrite, error) {
	if !isBig(key, int64(len(val))) {
		return &keyWrite{put: StringItem(s.DB(), key, val, origin, expiryMS)}, nil
	}
	h, err := stageBig(s, key, val)
	if err != nil {
		return nil, err
	}
	return &keyWrite{put: bigStringItem(s.DB(), key, h, expiryMS), gen: h.gen}, nil
}

// bind gives a decoded key state the scope its big value is read in.
func bind(s Scope, ks KeyState) KeyState {
	if ks.big != nil {
		ks.scope = s
	}
	return ks
}

// decodeIn is DecodeKey at s's clock, bound to s.
func decodeIn(s Scope, it dynastore.Item) (KeyState, error) {
	ks, err := DecodeKey(it, s.NowMS())
	return bind(s, ks), err
}

// errBigUnbound is a big value read from a key state decoded without a
// scope: a path of the model that does not read big values.
var errBigUnbound = fmt.Errorf("model: a big value read outside a command: %w", dynastore.ErrInvalid)

// loadBig reads a key state's whole big value.
func (ks KeyState) loadBig() ([]byte, error) {
	if ks.scope == nil {
		return nil, errBigUnbound
	}
	return readBig(ks.scope, baseStore(ks.scope), ks.big, 0, ks.big.size)
}

// StringRange is bytes [from, to) of a live string key's value (to at
// most its length): of a big value, only the chunks the range covers are
// read.
func (ks KeyState) StringRange(from, to int64) ([]byte, error) {
	if ks.big == nil {
		v, err := ks.StringValue()
		if err != nil {
			return nil, err
		}
		return v[from:to], nil
	}
	if ks.scope == nil {
		return nil, errBigUnbound
	}
	return readBig(ks.scope, baseStore(ks.scope), ks.big, from, to)
}

// copyBigItem is COPY's key item for a big string: its chunks copied into
// a new generation owned by dst (O(size), as COPY is in Redis), to be
// published with the returned check.
func copyBigItem(s Scope, from KeyState, dstDB int, dst []byte) (dynastore.Item, []dynastore.TxAction, error) {
	val, err := from.StringValue()
	if err != nil {
		return nil, nil, err
	}
	h, err := stageBig(dbScope{s, dstDB}, dst, val)
	if err != nil {
		return nil, nil, err
	}
	it := bigStringItem(dstDB, dst, h, 0)
	if from.HasExpiry {
		it = bigStringItem(dstDB, dst, h, from.Expiry)
	}
	return it, []dynastore.TxAction{genAliveCheck(h.gen)}, nil
}

// dbScope is a scope with another database (COPY ... DB).
type dbScope struct {
	Scope
	db int
}

func (d dbScope) DB() int { return d.db }

// publishBig writes a big value's key item under guard in one transaction
// with w's other actions: the check that the sweeper has not condemned the
// generation it publishes (a staging that took longer than the sweeper's
// grace), or an edit's (bigEdit.stage). A failed guard is reported as a
// single write's (CondFailed, with the item found); a condemned generation
// or edit as errBigCondemned, a lost race.
func publishBig(s Scope, w *keyWrite, guard dynastore.Cond) error {
	acts := []dynastore.TxAction{{Op: dynastore.TxPut, Item: w.put, Cond: guard, OldOnFailure: true}}
	if w.gen != nil {
		acts = append(acts, genAliveCheck(w.gen))
	}
	acts = append(acts, w.also...)
	// A transaction the table throttled was not applied (a throttle is
	// never a lost race): it is sent again rather than losing the chunks
	// staged for it.
	err := patiently(s, func(ctx context.Context) error { return s.Data().Transact(ctx, acts) })
	r, failed := ConditionsFailed(err)
	if !failed {
		return err
	}
	if cur, ok := r.Failed(0); ok {
		return &dynastore.ConditionFailedError{Old: cur}
	}
	return errBigCondemned
}

// errBigCondemned is a staged big value the sweeper condemned before it was
// published.
var errBigCondemned = fmt.Errorf("model: a big value's chunks were swept before it was published: %w", dynastore.ErrTxConflict)
