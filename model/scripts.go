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

// outside is the store under the unit of work c may run in (EXEC's, a
// script's): script bodies and libraries are read and written at once,
// not with the unit that loads or runs them (they are content-addressed,
// or changed by one conditional write of their own).
func outside(c Scope) dynastore.Store {
	if t := UnitTxn(c); t != nil {
		return t.st
	}
	return c.Data()
}

// PutScript stores body under sha (its SHA1, lower-case hex): one PutItem,
// idempotent.
func PutScript(c Scope, sha string, body []byte) error {
	_, err := outside(c).Put(c, ScriptItem(sha, body), dynastore.WriteOptions{})
	return err
}

// GetScript returns the body stored under sha; found is false when the
// table holds none.
func GetScript(c Scope, sha string) (body []byte, found bool, err error) {
	it, err := outside(c).Get(c, ScriptKey(sha))
	if err != nil || it == nil {
		return nil, false, err
	}
	return ScriptBody(it), true, nil
}

// ScriptsExist reports which of shas the table holds, in one batched read.
func ScriptsExist(c Scope, shas []string) ([]bool, error) {
	keys := make([]dynastore.Key, len(shas))
	for i, sha := range shas {
		keys[i] = ScriptKey(sha)
	}
	items, err := dynastore.GetMany(c, outside(c), keys)
	if err != nil {
		return nil, err
	}
	found := make([]bool, len(items))
	for i, it := range items {
		found[i] = it != nil
	}
	return found, nil
}

// FlushScripts deletes every script item: a scan of the table for them,
// and one DeleteItem each.
func FlushScripts(c Scope) error {
	st := outside(c)
	filter := dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte{NsScript}}
	return ScanAll(c, st, filter, func(it dynastore.Item) error {
		_, err := st.Delete(c, it.Key(), dynastore.WriteOptions{})
		return err
	})
}
