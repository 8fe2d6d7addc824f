package model

// Edits of big values (bigvalue.go): only the chunks an edit changes are
// read and written.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

// bigEdit is an edit of a big value in progress: buf holds the bytes of
// chunks lo..hi-1 of the value after the edit (zeros past the old value's
// end), with the old bytes read where the edit keeps them; the caller
// changes them, then stages the edit.
type bigEdit struct {
	old    *bigHeader
	lo, hi int64
	size   int64
	buf    []byte
}

// editable reports whether a key state's value is a big value that an
// edit may change chunk by chunk: one written with a chunk map.
func (ks KeyState) editable() bool {
	return ks.big != nil && ks.big.refs != nil && ks.scope != nil
}

// openBigEdit starts an edit of ks's big value (editable) that changes
// bytes [from, to), growing the value to to with zeros: buf then starts at
// byte off of the value. With overwrite, the caller replaces all of
// [from, to), so only the chunks the range covers in part are read.
func openBigEdit(ks KeyState, from, to int64, overwrite bool) (e *bigEdit, off int64, err error) {
	h := ks.big
	e = &bigEdit{old: h, size: max(h.size, to)}
	e.lo, e.hi = min(from, h.size)/h.chunk, (to+h.chunk-1)/h.chunk
	off = e.lo * h.chunk
	e.buf = make([]byte, min(e.hi*h.chunk, e.size)-off)
	kept := min(e.hi*h.chunk, h.size) // old bytes in the edited chunks end here
	read := func(a, b int64) error {
		if a >= b {
			return nil
		}
		d, err := readBig(ks.scope, baseStore(ks.scope), h, a, b)
		if err != nil {
			return err
		}
		copy(e.buf[a-off:], d)
		return nil
	}
	// The old bytes kept are those before from in the first chunk and
	// after to in the last: read once when they are in one chunk.
	headEnd, tailStart := min(from, kept), max(to, off)
	switch {
	case !overwrite || (e.hi-e.lo == 1 && headEnd > off && tailStart < kept):
		err = read(off, kept)
	default:
		if err = read(off, headEnd); err == nil {
			err = read(tailStart, kept)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	return e, off, nil
}

// stage writes the edit's chunks under a fresh edit id, after a journal
// entry naming them (so that the sweeper deletes them if they are never
// published), and returns the write that publishes them: the key item
// with the new chunk map, in one transaction with the map recorded on the
// generation's registry entry and the journal turned into the list of the
// chunks the edit replaced (or deleted when it replaced none). Both are
// conditioned on not being condemned by the sweeper.
func (e *bigEdit) stage(s Scope, key []byte, expiryMS int64) (*keyWrite, error) {
	st := baseStore(s)
	old := e.old
	id := newGenID()
	edit := binary.BigEndian.Uint64(id) | 1 // never 0, the first write's
	h := &bigHeader{gen: old.gen, size: e.size, chunk: old.chunk}
	h.refs = make([]chunkRef, h.chunks())
	copy(h.refs, old.refs)
	var written, replaced []byte
	for i := e.lo; i < e.hi; i++ {
		a := (i - e.lo) * h.chunk
		h.refs[i] = chunkRef{edit: edit, sum: crc32.Checksum(e.buf[a:min(a+h.chunk, int64(len(e.buf)))], castagnoli)}
		written = appendJournal(written, i, edit)
		if i < old.chunks() {
			replaced = appendJournal(replaced, i, old.refs[i].edit)
		}
	}
	jk := genRegKey(id)
	_, err := putPatiently(s, st, dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(jk.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(jk.SK)},
		{Name: attrOwner, Value: dynastore.B(KeyPK(s.DB(), key))},
		{Name: attrCreated, Value: NInt(s.NowMS())},
		{Name: attrJournalGen, Value: dynastore.B(h.gen)},
		{Name: attrJournalChunks, Value: dynastore.B(written)},
	})
	if err != nil {
		return nil, fmt.Errorf("registering a big value edit: %w", err)
	}
	discard := func() {
		if dynastore.BatchWrite(retry.WithSlack(s, bigSlack), st, nil, h.keysOf(e.lo, e.hi)) == nil {
			_, _ = st.Delete(s, jk, dynastore.WriteOptions{})
		}
	}
	if err := writeChunks(s, st, h, e.lo, e.buf); err != nil {
		return nil, fmt.Errorf("writing a big value edit: %w", err)
	}
	alive := genAliveCheck(id).Cond
	journal := dynastore.TxAction{Op: dynastore.TxDelete, Key: jk, Cond: alive}
	if replaced != nil {
		// The grace of the replaced chunks starts when the sweeper next sees
		// the journal, after this publication.
		journal = dynastore.TxAction{Op: dynastore.TxUpdate, Key: jk, Cond: alive, Update: &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: attrJournalChunks, Val: dynastore.B(replaced)}},
			Remove: []string{attrDeadAt},
		}}
	}
	return &keyWrite{
		put: bigStringItem(s.DB(), key, h, expiryMS),
		also: []dynastore.TxAction{
			{Op: dynastore.TxUpdate, Key: genRegKey(h.gen), Cond: genAliveCheck(h.gen).Cond, Update: &dynastore.Update{Set: []dynastore.SetAction{
				{Attr: attrChunks, Val: NInt(h.chunks())},
				{Attr: attrChunkMap, Val: encodeRefs(h.refs)},
			}}},
			journal,
		},
		lost: discard,
	}, nil
}

// journalEntrySize is an encoded journal entry's bytes: a chunk's index
// (4) and edit (8), big-endian.
const journalEntrySize = 12

// appendJournal appends chunk i as edit wrote it to a journal's list.
func appendJournal(b []byte, i int64, edit uint64) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(i))
	return binary.BigEndian.AppendUint64(b, edit)
}

// journalKeys are the chunk keys a journal entry lists; nil when it is
// not a journal entry.
func journalKeys(reg dynastore.Item) ([]dynastore.Key, error) {
	gen, ok := reg.Get(attrJournalGen).(dynastore.B)
	if !ok {
		return nil, nil
	}
	b, _ := reg.Get(attrJournalChunks).(dynastore.B)
	if len(b)%journalEntrySize != 0 {
		return nil, fmt.Errorf("model: big value journal of %d bytes: %w", len(b), dynastore.ErrInvalid)
	}
	keys := make([]dynastore.Key, 0, len(b)/journalEntrySize)
	for ; len(b) > 0; b = b[journalEntrySize:] {
		keys = append(keys, chunkKeyAt(gen, int64(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint64(b[4:])))
	}
	return keys, nil
}

// registryChunkKeys are the chunk keys of a big value's registry entry:
// those of its chunk map once edited, else chunks 0..bc-1 as first
// written; nil for any other registry entry.
func registryChunkKeys(reg dynastore.Item) ([]dynastore.Key, error) {
	n, err := NumberInt(reg.Get(attrChunks))
	if err != nil {
		return journalKeys(reg)
	}
	gen := reg.Key().SK
	m, ok := reg.Get(attrChunkMap).(dynastore.B)
	if !ok {
		return chunkKeys(gen, 0, n), nil
	}
	refs, err := decodeRefs(m, n)
	if err != nil {
		return nil, err
	}
	h := &bigHeader{gen: gen, refs: refs}
	return h.keysOf(0, n), nil
}

// editBig is the write of an edit of ks's big value (editable) that
// changes bytes [from, to): change gets the edited chunks' bytes, starting
// at byte off of the value, and says whether it changed anything (a nil
// write then, unless the value grew).
func editBig(s Scope, key []byte, ks KeyState, from, to int64, overwrite bool, change func(buf []byte, off int64) bool) (*keyWrite, error) {
	e, off, err := openBigEdit(ks, from, to, overwrite)
	if err != nil {
		return nil, err
	}
	if !change(e.buf, off) && e.size == ks.big.size {
		return nil, nil
	}
	return e.stage(s, key, ks.Expiry)
}
