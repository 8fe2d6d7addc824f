package model

import "github.com/redamo/redamo/dynastore"

// The function libraries (FUNCTION LOAD) of the whole table live in one
// item, so that a load checks every function name against every library
// and changes the set in one conditional write (guarded by its version).
// AttrLibraries maps each library's name to its code (with its shebang),
// which bounds the libraries' code to DynamoDB's 400 KB item. Its pk is
// NsFunctions alone (namespaces.go).
const AttrLibraries = "l"

// LibrariesKey is the key of the libraries item.
func LibrariesKey() dynastore.Key {
	return dynastore.Key{PK: []byte{NsFunctions}, SK: KeyItemSK}
}

// LibrariesItem is the libraries item holding libs (name -> code).
func LibrariesItem(libs map[string][]byte) dynastore.Item {
	k := LibrariesKey()
	m := make(dynastore.M, len(libs))
	for name, code := range libs {
		m[name] = dynastore.B(append([]byte(nil), code...))
	}
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: KeyItemSKValue},
		{Name: AttrLibraries, Value: m},
		{Name: AttrVer, Value: NewVer()},
	}
}

// Libraries returns the libraries an item holds (name -> code).
func Libraries(it dynastore.Item) map[string][]byte {
	out := map[string][]byte{}
	m, _ := it.Get(AttrLibraries).(dynastore.M)
	for name, v := range m {
		if b, ok := v.(dynastore.B); ok {
			out[name] = b
		}
	}
	return out
}
