package model

import (
	"context"

	"github.com/redamo/redamo/dynastore"
)

// Item is a stored item, as the data model hands it to callers that decide
// from a key item (whether a blocked client may be served).
type Item = dynastore.Item

// ReadKeyItems reads the key items of the partition keys pks in one
// BatchGet counted under label: the poll of the keys blocked clients wait
// on. A missing key's item is empty.
func ReadKeyItems(ctx context.Context, t Target, label string, pks []string) ([]Item, error) {
	ks := make([]dynastore.Key, len(pks))
	for i, pk := range pks {
		ks[i] = dynastore.Key{PK: []byte(pk), SK: KeyItemSK}
	}
	return t.st.BatchGet(dynastore.WithLabel(ctx, label), ks)
}

// HasElements reports whether a key item is a live, non-empty list or
// sorted set, the types clients block on.
func HasElements(it Item, nowMS int64) bool {
	ks, err := DecodeKey(it, nowMS)
	if err != nil || !ks.Live || (ks.Type != TypeList && ks.Type != TypeZSet) {
		return false
	}
	if it.Has(AttrGen) {
		n, err := NumberInt(it.Get(AttrCount))
		return err == nil && n > 0
	}
	switch v := it.Get(AttrValue).(type) {
	case dynastore.L:
		return len(v) > 0
	case dynastore.BS:
		return len(v) > 0
	}
	return false
}
