package model

import (
	"bytes"

	"github.com/redamo/redamo/dynastore"
)

// The settings item holds what Redis keeps per server and redamo per
// table, because a client may reach any instance: CONFIG SET
// notify-keyspace-events. It lives in the NsBus partition under a sort key
// no instance id can take (ids are 16 bytes), so the bus's membership
// Query, which every instance runs each heartbeat anyway, reads it at no
// extra request; without a bus an instance reads it once at start
// (ReadSettings).
var settingsKey = dynastore.Key{PK: []byte{NsBus}, SK: []byte("settings")}

// The settings item's attributes, each missing until first set.
const (
	// attrKeyspaceEvents (S) is notify-keyspace-events as CONFIG GET prints it.
	attrKeyspaceEvents = "nke"
)

// Settings is the table-wide settings.
type Settings struct {
	// KeyspaceEvents is notify-keyspace-events ("" when never set, Redis's
	// default: notifications off).
	KeyspaceEvents string
}

// SettingsOf returns the settings an item of the NsBus partition holds;
// ok is false when it is not the settings item (a member's).
func SettingsOf(it dynastore.Item) (s Settings, ok bool) {
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	pk, _ := it.Get(dynastore.AttrPK).(dynastore.B)
	if !bytes.Equal(sk, settingsKey.SK) || !bytes.Equal(pk, settingsKey.PK) {
		return Settings{}, false
	}
	v, _ := it.Get(attrKeyspaceEvents).(dynastore.S)
	return Settings{KeyspaceEvents: string(v)}, true
}

// ReadSettings reads the settings item: one GetItem. A table without one
// has the defaults.
func ReadSettings(c Scope) (Settings, error) {
	it, err := outside(c).Get(c, settingsKey)
	if err != nil || it == nil {
		return Settings{}, err
	}
	s, _ := SettingsOf(it)
	return s, nil
}

// SetKeyspaceEvents stores notify-keyspace-events (flags as CONFIG GET
// prints them): one UpdateItem, at once even inside a unit of work (the
// setting is not data a transaction could take back). An update rather
// than a put leaves the item's other settings alone.
func SetKeyspaceEvents(c Scope, flags string) error {
	u := dynastore.Update{Set: []dynastore.SetAction{{Attr: attrKeyspaceEvents, Val: dynastore.S(flags)}}}
	_, err := outside(c).Update(c, settingsKey, u, dynastore.WriteOptions{})
	return err
}
