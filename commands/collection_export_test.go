package commands

import (
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// ParseScanCursorForTest exposes parseCursor to the external tests.
var ParseScanCursorForTest = parseCursor

// KeyItemKeyForTest is where key's key item lives in db.
func KeyItemKeyForTest(db int, key string) dynastore.Key { return model.ItemKey(db, []byte(key)) }

// GenerationForTest is the generation a large collection's key item names,
// nil for any other key item.
func GenerationForTest(it dynastore.Item) []byte {
	g, _ := it.Get(model.AttrGen).(dynastore.B)
	return g
}

// MembersPKForTest is the partition of a generation's members.
var MembersPKForTest = model.MembersPK
