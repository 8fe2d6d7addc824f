package model

import (
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

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

// StoredLibraries are the libraries the table holds, as of one version of
// their item ("" when there is none).
type StoredLibraries struct {
	Ver  string
	Code map[string][]byte // name -> code
}

// ReadLibraries reads the libraries item.
func ReadLibraries(c Scope) (StoredLibraries, error) {
	it, err := outside(c).Get(c, LibrariesKey())
	if err != nil {
		return StoredLibraries{}, err
	}
	ver, _ := it.Get(AttrVer).(dynastore.S)
	return StoredLibraries{Ver: string(ver), Code: Libraries(it)}, nil
}

// WriteLibraries replaces the libraries by code (deleting their item when
// there are none) in one write conditioned on the item being still at
// version ver (absent for ""): ErrConflict when another write got there
// first.
func WriteLibraries(c Scope, ver string, code map[string][]byte) error {
	cond := dynastore.Cond(dynastore.NotExists{Attr: dynastore.AttrPK})
	if ver != "" {
		cond = dynastore.Compare{Attr: AttrVer, Op: dynastore.OpEQ, Val: dynastore.S(ver)}
	}
	wo := dynastore.WriteOptions{Cond: cond}
	var err error
	if len(code) == 0 {
		_, err = outside(c).Delete(c, LibrariesKey(), wo)
	} else {
		_, err = outside(c).Put(c, LibrariesItem(code), wo)
	}
	if _, failed := CondFailed(err); failed {
		return ErrConflict
	}
	return err
}

// FlushLibraries deletes every library.
func FlushLibraries(c Scope) error {
	_, err := outside(c).Delete(c, LibrariesKey(), dynastore.WriteOptions{})
	return err
}

// InvalidLibrary is the error of a stored library that does not compile
// (msg says why): the table holds what no FUNCTION LOAD accepts.
func InvalidLibrary(name, msg string) error {
	return fmt.Errorf("commands: stored library %q: %s: %w", name, msg, dynastore.ErrInvalid)
}
