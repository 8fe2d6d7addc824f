package model

// OBJECT ENCODING of the collection types.

import (
	"errors"

	"github.com/redamo/redamo/dynastore"
)

// EncodingLimits are the encoding parameters OBJECT ENCODING answers by
// (CONFIG SET hash-max-listpack-entries and friends).
type EncodingLimits struct {
	HashEntries, HashValue int64
	SetIntsetEntries       int64
}

// ErrNoEncoding: OBJECT ENCODING of a type that has none here.
var ErrNoEncoding = errors.New("model: no OBJECT ENCODING for the type")

// Encoding is Redis 7.0's OBJECT ENCODING of key, a live key of type typ
// (not a string), under the encoding parameters lim.
func Encoding(c Scope, key []byte, typ string, lim EncodingLimits) (string, error) {
	switch typ {
	case TypeList:
		// Redis 7.0 reports every list as a quicklist.
		return "quicklist", nil
	case TypeStream:
		return "stream", nil
	case TypeHash:
		return encodingOf(c, key, TypeHash, lim.HashEntries, "listpack", "hashtable", func(f []byte, v dynastore.Value) bool {
			return int64(len(f)) <= lim.HashValue && int64(ValueSize(v)) <= lim.HashValue
		})
	case TypeSet:
		// Redis 7.0: an intset while every member is an integer, else a
		// hash table (small sets of strings became listpacks only in 7.2).
		return encodingOf(c, key, TypeSet, lim.SetIntsetEntries, "intset", "hashtable", func(m []byte, _ dynastore.Value) bool {
			_, ok := String2ll(m)
			return ok
		})
	case TypeZSet:
		// Redis converts a sorted set to a skiplist once and never back:
		// the key item keeps that history (AttrBigEncoding).
		cl, err := OpenChecked(c, key, TypeZSet)
		if err != nil || cl.KeyAttr(AttrBigEncoding) == nil {
			return "listpack", err
		}
		return "skiplist", nil
	}
	return "", ErrNoEncoding
}

// encodingOf is Redis 7.0's OBJECT ENCODING for a hash, set or sorted set
// key: compact (listpack, intset) while it holds at most maxEntries entries
// that all pass fits, big (hashtable, skiplist) otherwise. Redis never
// converts back, so a key that was once past a limit stays big there even
// after removals bring
// it under; redamo keeps no such history and answers from the current
// content (a large layout is only read when its count is within the limit).
func encodingOf(c Scope, key []byte, typ string, maxEntries int64, compact, big string, fits func(m []byte, v dynastore.Value) bool) (string, error) {
	enc := compact
	err := Read(c, key, typ, func(cl *Collection) error {
		enc = compact
		if cl.Len() > maxEntries {
			enc = big
			return nil
		}
		err := cl.Each(func(m []byte, v dynastore.Value) error {
			if !fits(m, v) {
				enc = big
				return ErrEnough
			}
			return nil
		})
		if errors.Is(err, ErrEnough) {
			return nil
		}
		return err
	})
	return enc, err
}
