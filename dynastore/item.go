package dynastore

import (
	"slices"
	"strings"
)

// Attr is one attribute of an item: its name and its value.
type Attr struct {
	Name  string
	Value Value
}

// Item is one item's attributes, including pk and sk, each name at most
// once and in no particular order (compare items with ItemsEqual).
//
// It is a slice rather than a map: redamo's items have a handful of
// attributes, which a slice holds in one allocation and searches by
// comparing a few short names, where a Go map takes two allocations and
// hashes every name it looks up. On the embedded store's hot path (a SET
// builds an item, an INCR copies one, every condition reads one) the map
// was a large part of the cost.
type Item []Attr

// Get returns the value of attribute name, nil if the item has none.
func (it Item) Get(name string) Value {
	for i := range it {
		if it[i].Name == name {
			return it[i].Value
		}
	}
	return nil
}

// Has reports whether the item has attribute name.
func (it Item) Has(name string) bool { return it.Get(name) != nil }

// Set makes v the value of attribute name, replacing the one it had. Like
// writing to a map, it changes the attribute in place, which every holder
// of the item sees: copy a shared item (Clone) before changing it.
func (it *Item) Set(name string, v Value) {
	s := *it
	for i := range s {
		if s[i].Name == name {
			s[i].Value = v
			return
		}
	}
	*it = append(s, Attr{Name: name, Value: v})
}

// Delete removes attribute name, if the item has it. Like Set, it changes
// the item in place.
func (it *Item) Delete(name string) {
	s := *it
	for i := range s {
		if s[i].Name == name {
			last := len(s) - 1
			s[i] = s[last]
			s[last] = Attr{}
			*it = s[:last]
			return
		}
	}
}

// Clone returns a copy of the item's attribute list (nil for nil) with
// room for extra more attributes; the values are shared, not copied (see
// CloneItem for a deep copy).
func (it Item) Clone(extra int) Item {
	if it == nil {
		return nil
	}
	return append(make(Item, 0, len(it)+extra), it...)
}

// Key returns the item's key, nil slices if absent.
func (it Item) Key() Key {
	k := Key{}
	for _, a := range it {
		switch a.Name {
		case AttrPK:
			k.PK, _ = a.Value.(B)
		case AttrSK:
			k.SK, _ = a.Value.(B)
		}
	}
	return k
}

// Sorted returns a copy of the item with its attributes in name order (nil
// for nil): a stable form to print or to compare with reflect.DeepEqual.
func (it Item) Sorted() Item {
	out := it.Clone(0)
	slices.SortFunc(out, func(a, b Attr) int { return strings.Compare(a.Name, b.Name) })
	return out
}
