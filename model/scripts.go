package model

import "github.com/redamo/redamo/dynastore"

// Script items: the body of every Lua script loaded (SCRIPT LOAD) or run
// (EVAL), under its SHA1, so that EVALSHA works through every instance and
// after restarts. pk is NsScript and the 40 lower-case hex digits of the
// SHA1 (namespaces.go); the body is in AttrScriptBody.
const AttrScriptBody = "b"

// ScriptKey is the key of the script item of sha (lower-case hex).
func ScriptKey(sha string) dynastore.Key {
	return dynastore.Key{PK: append([]byte{NsScript}, sha...), SK: KeyItemSK}
}

// ScriptItem is the script item holding body under sha.
func ScriptItem(sha string, body []byte) dynastore.Item {
	k := ScriptKey(sha)
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: KeyItemSKValue},
		{Name: AttrScriptBody, Value: dynastore.B(append([]byte(nil), body...))},
	}
}

// ScriptBody returns the body a script item holds (empty for the empty
// script).
func ScriptBody(it dynastore.Item) []byte {
	b, _ := it.Get(AttrScriptBody).(dynastore.B)
	return b
}
