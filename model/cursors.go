package model

// Cursors of SCAN, SSCAN, HSCAN and ZSCAN: a number a client hands back to
// go on where the last call stopped. Any instance must be able to go on
// (principle 1), so the position is kept in the table, in a cursor item
// under that number.
//
// The number does not carry the position itself: DynamoDB resumes a scan
// or a query after a key (a partition key of up to 2 KB, a sort key of up
// to 1 KB), which no 64-bit number holds, and a hash of it cannot be turned
// back into a key.
//
// Cursors stay below 2^53: JavaScript clients keep a cursor as a double,
// exact only up to 2^53, and a larger one comes back rounded, naming
// another cursor item or none (Redis's own cursors are small, so clients
// never met the problem there).
//
// A cursor is a hash of the position it names: the same position always
// gets the same cursor, so a repeated scan or a retried call rewrites one
// item instead of adding one per call (the memory store never drops
// expired items). In 53 bits two positions may hash alike among the
// cursors alive at one time; a cursor item is therefore written only where
// its number is free or already names the same position (a conditional
// write, so one request as before), and a number taken by another position
// sends the position on to the next candidate (the hash with a counter).
// So a cursor never resumes another scan's position, and a scan returns
// every key present throughout, as Redis's does.
//
// Cursor items are bookkeeping, not content: inside a transaction (EXEC, a
// script) they are read and written in the store itself, so they add
// nothing to the commit and hold even when it is refused.

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

// MaxCursor is the greatest cursor handed out (2^53-1, the greatest
// integer a double holds exactly).
const MaxCursor = 1<<53 - 1

// cursorCandidates is how many numbers one position tries before the save
// fails. Each further candidate is needed only when every one before it is
// taken by another live position, which 53 bits make vanishingly rare.
const cursorCandidates = 8

// cursorKind is a family of cursors: the pk namespace of its items (the
// cursor follows as 8 bytes, big-endian), the two binary attributes that
// hold a position, and how long an item is kept (GC only: a cursor is
// valid until its item is gone). The attribute names are the ones
// instances have always written, so instances of different versions on
// one table go on with each other's scans.
type cursorKind struct {
	ns          byte
	a, b        string
	lifetimeSec int64
}

var (
	// keysCursors are SCAN's: the table key to resume after.
	keysCursors = cursorKind{ns: NsCursor, a: "npk", b: "nsk", lifetimeSec: 24 * 3600}
	// memberCursors are SSCAN's, HSCAN's and ZSCAN's: a generation and the
	// member sort key to resume after.
	memberCursors = cursorKind{ns: nsCollScan, a: AttrGen, b: "a", lifetimeSec: 3600}
)

// key is the key of cursor id's item.
func (k cursorKind) key(id uint64) dynastore.Key {
	pk := make([]byte, 9)
	pk[0] = k.ns
	binary.BigEndian.PutUint64(pk[1:], id)
	return dynastore.Key{PK: pk, SK: KeyItemSK}
}

// cursorStore is where cursor items are read and written: the store under
// a transaction.
func cursorStore(c Scope) dynastore.Store {
	st := c.Data()
	if txn, ok := st.(*Txn); ok {
		st = txn.Base()
	}
	return st
}

// candidate is the i-th number tried for the position (a, b): in
// 1..MaxCursor.
func (k cursorKind) candidate(a, b []byte, i int) uint64 {
	h := sha256.New()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(a)))
	h.Write([]byte{k.ns, byte(i)})
	h.Write(n[:])
	h.Write(a)
	h.Write(b)
	id := binary.BigEndian.Uint64(h.Sum(nil)) >> (64 - 53)
	if id == 0 {
		id = 1
	}
	return id
}

// save keeps the position (a, b) and returns its cursor.
func (k cursorKind) save(c Scope, a, b []byte) (uint64, error) {
	same := dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.And{
			dynastore.Compare{Attr: k.a, Op: dynastore.OpEQ, Val: dynastore.B(a)},
			dynastore.Compare{Attr: k.b, Op: dynastore.OpEQ, Val: dynastore.B(b)},
		},
	}
	st := cursorStore(c)
	for i := range cursorCandidates {
		id := k.candidate(a, b, i)
		key := k.key(id)
		_, err := st.Put(c, dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(key.PK)},
			{Name: dynastore.AttrSK, Value: dynastore.B(key.SK)},
			{Name: k.a, Value: dynastore.B(a)},
			{Name: k.b, Value: dynastore.B(b)},
			{Name: dynastore.AttrTTL, Value: NInt(c.NowMS()/1000 + k.lifetimeSec)},
		}, dynastore.WriteOptions{Cond: same})
		if _, taken := CondFailed(err); !taken {
			return id, err
		}
	}
	return 0, fmt.Errorf("model: %d cursor numbers of one position all taken: %w", cursorCandidates, dynastore.ErrUnavailable)
}

// load returns the position kept under cursor id; ok is false when there
// is none (a number never handed out, or an item garbage-collected).
func (k cursorKind) load(c Scope, id uint64) (a, b []byte, ok bool, err error) {
	it, err := cursorStore(c).Get(c, k.key(id))
	if err != nil {
		return nil, nil, false, err
	}
	a, ok1 := it.Get(k.a).(dynastore.B)
	b, ok2 := it.Get(k.b).(dynastore.B)
	return a, b, ok1 && ok2, nil
}

// SaveScanCursor keeps SCAN's position (the table key to resume after)
// and returns its cursor.
func SaveScanCursor(c Scope, after dynastore.Key) (uint64, error) {
	return keysCursors.save(c, after.PK, after.SK)
}

// LoadScanCursor returns the table key SCAN's cursor id resumes after; ok
// is false for a cursor redamo did not hand out (or one garbage-collected).
func LoadScanCursor(c Scope, id uint64) (after dynastore.Key, ok bool, err error) {
	pk, sk, ok, err := keysCursors.load(c, id)
	return dynastore.Key{PK: pk, SK: sk}, ok, err
}
