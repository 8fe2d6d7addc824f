package model

// Big values: a string longer than one item holds (DynamoDB's 400 KB),
// up to proto-max-bulk-len (Redis's 512 MB).
//
// A big value is cut into chunks of bigChunkSize bytes, each an item of
// its own under a fresh generation id, and the key item points at them:
//
//	key item   t "string", no v; g the generation; bv the value's length,
//	           chunk size and CRC-32C (bigHeader)
//	chunk i    pk NsChunks, generation, i (4 bytes big-endian); sk 0x00;
//	           d B the chunk's bytes
//	registry   the generation's registry entry (generations.go), with bc,
//	           the chunk count, so the sweeper knows which chunks to delete
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
// Overwriting, deleting or expiring a big value only changes the key item;
// the old chunks stay until the sweeper has seen the generation dead for
// its grace (10 minutes by default). That grace is what lets a reader on
// any instance that read the key item just before an overwrite still read
// every chunk it points at: a reader never sees a mix of two values, since
// it only reads the chunks of the generation its key item names, and the
// checksum of a whole read is verified. A read that outlives the grace
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
	"fmt"
	"hash/crc32"
	"sync"
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
	sum   uint32
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
	return decodeBigHeader(g, b)
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

// chunkKey is the key of chunk i of generation gen.
func chunkKey(gen []byte, i int64) dynastore.Key {
	pk := make([]byte, 0, 1+len(gen)+4)
	pk = append(append(pk, NsChunks), gen...)
	pk = binary.BigEndian.AppendUint32(pk, uint32(i))
	return dynastore.Key{PK: pk, SK: KeyItemSK}
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
	h := &bigHeader{gen: newGenID(), size: int64(len(val)), chunk: bigChunkSize, sum: crc32.Checksum(val, castagnoli)}
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
	_, err := st.Put(ctx, regItem, dynastore.WriteOptions{})
	if err != nil {
		return nil, fmt.Errorf("registering a big value: %w", err)
	}
	n := h.chunks()
	// One batch per BatchWriteItem, a few in flight at once.
	err = inParallel(n, bigBatch, func(lo, hi int64) error {
		puts := make([]dynastore.Item, 0, hi-lo)
		for i := lo; i < hi; i++ {
			k := chunkKey(h.gen, i)
			puts = append(puts, dynastore.Item{
				{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
				{Name: dynastore.AttrSK, Value: KeyItemSKValue},
				{Name: attrChunk, Value: dynastore.B(val[i*h.chunk : min((i+1)*h.chunk, h.size)])},
			})
		}
		return dynastore.BatchWrite(retry.WithSlack(ctx, bigSlack), st, puts, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("writing a big value: %w", err)
	}
	return h, nil
}

// discardBig deletes a staged generation that was never published (SET NX
// that found the key, say), best effort: what it leaves the sweeper
// deletes.
func discardBig(s Scope, h *bigHeader) {
	st := baseStore(s)
	if err := dynastore.BatchWrite(retry.WithSlack(s, bigSlack), st, nil, chunkKeys(h.gen, 0, h.chunks())); err != nil {
		return
	}
	_, _ = st.Delete(s, genRegKey(h.gen), dynastore.WriteOptions{})
}

// inParallel calls fn for the ranges of step of 0..n-1, bigParallel at
// once, and returns the first error.
func inParallel(n, step int64, fn func(lo, hi int64) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, bigParallel)
	)
	for lo := int64(0); lo < n; lo += step {
		hi := min(lo+step, n)
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := fn(lo, hi); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// readBig reads bytes [from, to) of a big value (to <= size), verifying
// the checksum when that is the whole value.
func readBig(ctx context.Context, st dynastore.Store, h *bigHeader, from, to int64) ([]byte, error) {
	if from >= to {
		return []byte{}, nil
	}
	lo, hi := from/h.chunk, (to-1)/h.chunk+1
	out := make([]byte, to-from)
	err := inParallel(hi-lo, bigBatch, func(a, b int64) error {
		items, err := st.BatchGet(retry.WithSlack(ctx, bigSlack), chunkKeys(h.gen, lo+a, lo+b))
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
			// The part of the chunk inside [from, to).
			cs, ce := max(start, from), min(end, to)
			copy(out[cs-from:ce-from], d[cs-start:ce-start])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if from == 0 && to == h.size && crc32.Checksum(out, castagnoli) != h.sum {
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
// with the check that the sweeper has not condemned its generation gen (a
// staging that took longer than the sweeper's grace). A failed guard is
// reported as a single write's (CondFailed, with the item found); a
// condemned generation as errBigCondemned, a lost race.
func publishBig(s Scope, it dynastore.Item, gen []byte, guard dynastore.Cond) error {
	err := s.Data().Transact(s, []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: it, Cond: guard, OldOnFailure: true},
		genAliveCheck(gen),
	})
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
