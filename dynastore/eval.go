package dynastore

import (
	"bytes"
	"fmt"
	"strings"
)

// This file evaluates conditions and applies updates exactly as DynamoDB
// does, as pure functions on Items. The memory backend is built on them, and
// so is anything else that must predict DynamoDB's answer without asking it
// (a transaction buffer replaying MULTI/EXEC). The rules were checked against
// DynamoDB Local; the conformance suite (dynastore/storetest) holds both
// backends to them.

// Messages of DynamoDB's ValidationException, as the service words them.
const (
	msgOperandType  = "An operand in the update expression has an incorrect data type"
	msgNoSuchAttr   = "The provided expression refers to an attribute that does not exist in the item"
	msgPathsOverlap = "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [%s], path two: [%s]"
	msgKeyAttr      = "One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key"
	msgEmptyName    = "Empty attribute name"
	msgEmptySet     = "One or more parameter values were invalid: Binary sets should not be empty"
	msgSetDups      = "One or more parameter values were invalid: Input collection of type BS contains duplicates."
	msgOpType       = "Incorrect operand type for operator or function; operator or function: %s, operand type: %s"
	msgItemTooLarge = "Item size has exceeded the maximum allowed size"
	msgUpdTooLarge  = "Item size to update has exceeded the maximum allowed size"
	msgKeyTooLarge  = "Hash primary key values must be under 2048 bytes, and range primary key values must be under 1024 bytes"
	msgKeyEmpty     = "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: %s"
	msgKeyMissing   = "One of the required keys was not given a value"
	msgKeyType      = "One or more parameter values were invalid: Type mismatch for key"
)

// kindName is the type descriptor DynamoDB uses in messages.
func (k Kind) String() string {
	switch k {
	case KindB:
		return "B"
	case KindN:
		return "N"
	case KindS:
		return "S"
	case KindBS:
		return "BS"
	case KindL:
		return "L"
	case KindM:
		return "M"
	case KindBOOL:
		return "BOOL"
	case KindNULL:
		return "NULL"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (op CmpOp) String() string {
	switch op {
	case OpEQ:
		return "="
	case OpNE:
		return "<>"
	case OpLT:
		return "<"
	case OpLE:
		return "<="
	case OpGT:
		return ">"
	case OpGE:
		return ">="
	}
	return fmt.Sprintf("CmpOp(%d)", uint8(op))
}

// ---- keys and items --------------------------------------------------------

// ValidateKey checks DynamoDB's key limits: a non-empty partition key of at
// most MaxPKSize bytes and a non-empty sort key of at most MaxSKSize bytes.
// Anything else is ErrKeyTooLarge.
func ValidateKey(k Key) error {
	switch {
	case len(k.PK) == 0:
		return fmt.Errorf("%w: "+msgKeyEmpty, ErrKeyTooLarge, AttrPK)
	case len(k.SK) == 0:
		return fmt.Errorf("%w: "+msgKeyEmpty, ErrKeyTooLarge, AttrSK)
	case len(k.PK) > MaxPKSize || len(k.SK) > MaxSKSize:
		return fmt.Errorf("%w: %s", ErrKeyTooLarge, msgKeyTooLarge)
	}
	return nil
}

// NormalizeItem returns what DynamoDB would store for a PutItem of it: a deep
// copy with every number in canonical form. It rejects what DynamoDB rejects:
// a missing or non-binary key (ErrInvalid), a key over its limit or empty
// (ErrKeyTooLarge), a malformed value (ErrInvalid: bad number, empty set,
// duplicate set members, empty attribute name, nil value) and an item over
// MaxItemSize (ErrItemTooLarge).
func NormalizeItem(it Item) (Item, error) {
	out, _, err := NormalizeItemSize(it)
	return out, err
}

// NormalizeItemSize is NormalizeItem that also returns the normalized
// item's ItemSize, which it computes anyway.
func NormalizeItemSize(it Item) (Item, int, error) {
	return normalizeItem(it, false)
}

// AdoptItem is NormalizeItemSize for an item handed over to a store
// (WriteOptions.Handover): it checks the same things but returns it itself,
// made canonical in place, copying only the values it must change.
func AdoptItem(it Item) (Item, int, error) {
	return normalizeItem(it, true)
}

// normalizeItem is NormalizeItemSize; with adopt it makes it canonical in
// place instead of copying it.
func normalizeItem(it Item, adopt bool) (Item, int, error) {
	pk, sk := it.Get(AttrPK), it.Get(AttrSK)
	if pk == nil || sk == nil {
		return nil, 0, invalidf("%s", msgKeyMissing)
	}
	if _, ok := pk.(B); !ok {
		return nil, 0, invalidf("%s", msgKeyType)
	}
	if _, ok := sk.(B); !ok {
		return nil, 0, invalidf("%s", msgKeyType)
	}
	if err := ValidateKey(it.Key()); err != nil {
		return nil, 0, err
	}
	if err := checkNames(it); err != nil {
		return nil, 0, err
	}
	out := it
	if !adopt {
		out = make(Item, len(it))
	}
	size := 0 // ItemSize(out), counted on the way
	for i, a := range it {
		var nv Value
		var err error
		changed := true
		if adopt {
			nv, changed, err = adoptValue(a.Value)
		} else {
			nv, err = NormalizeValue(a.Value)
		}
		if err != nil {
			return nil, 0, err
		}
		if changed {
			out[i] = Attr{Name: a.Name, Value: nv}
		}
		size += len(a.Name) + valueSize(nv)
	}
	if size > MaxItemSize {
		return nil, 0, fmt.Errorf("%w: %s", ErrItemTooLarge, msgItemTooLarge)
	}
	return out, size, nil
}

// checkNames rejects an empty attribute name and a name given twice (which
// a DynamoDB request's JSON map cannot carry, and an Item must not).
func checkNames(it Item) error {
	// Items have a handful of attributes: comparing every pair costs
	// less than a set would, up to a few dozen.
	const pairwise = 32
	var seen map[string]bool
	if len(it) > pairwise {
		seen = make(map[string]bool, len(it))
	}
	for i, a := range it {
		if a.Name == "" {
			return invalidf("%s", msgEmptyName)
		}
		dup := false
		if seen != nil {
			dup = seen[a.Name]
			seen[a.Name] = true
		} else {
			for _, b := range it[:i] {
				dup = dup || b.Name == a.Name
			}
		}
		if dup {
			return invalidf("attribute %q appears twice", a.Name)
		}
	}
	return nil
}

// NormalizeValue returns a deep copy of v with numbers in canonical form, or
// ErrInvalid for a value DynamoDB would reject.
func NormalizeValue(v Value) (Value, error) {
	switch x := v.(type) {
	case nil:
		return nil, invalidf("attribute value is nil")
	case B:
		return B(bytes.Clone([]byte(x))), nil
	case N:
		if _, _, ok := plainInt(string(x)); ok {
			return v, nil // already canonical; v avoids boxing x again
		}
		return CanonicalNumber(string(x))
	case S:
		return v, nil
	case BS:
		if len(x) == 0 {
			return nil, invalidf("%s", msgEmptySet)
		}
		seen := make(map[string]struct{}, len(x))
		out := make(BS, len(x))
		for i, m := range x {
			if _, dup := seen[string(m)]; dup {
				return nil, invalidf("%s", msgSetDups)
			}
			seen[string(m)] = struct{}{}
			out[i] = bytes.Clone(m)
			if out[i] == nil {
				out[i] = []byte{}
			}
		}
		return out, nil
	case L:
		out := make(L, len(x))
		for i, e := range x {
			ne, err := NormalizeValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = ne
		}
		return out, nil
	case M:
		out := make(M, len(x))
		for k, e := range x {
			if k == "" {
				return nil, invalidf("%s", msgEmptyName)
			}
			ne, err := NormalizeValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = ne
		}
		return out, nil
	case BOOL, NULL:
		return v, nil
	}
	return nil, invalidf("unsupported attribute value %T", v)
}

// adoptValue is NormalizeValue for a value the store may keep: v itself
// when it is canonical (changed false). Sets, lists and maps are copied
// anyway: they are rare on hot paths, and copying keeps their rules in one
// place (NormalizeValue).
func adoptValue(v Value) (nv Value, changed bool, err error) {
	switch x := v.(type) {
	case B, S, BOOL, NULL:
		return v, false, nil
	case N:
		if _, _, ok := plainInt(string(x)); ok {
			return v, false, nil
		}
	}
	nv, err = NormalizeValue(v)
	return nv, true, err
}

// checkValue returns the error NormalizeValue would, without copying v.
func checkValue(v Value) error {
	switch x := v.(type) {
	case nil:
		return invalidf("attribute value is nil")
	case B, S, BOOL, NULL:
		return nil
	case N:
		if _, _, ok := plainInt(string(x)); ok {
			return nil
		}
		_, err := CanonicalNumber(string(x))
		return err
	case BS:
		if len(x) == 0 {
			return invalidf("%s", msgEmptySet)
		}
		if len(x) == 1 {
			return nil
		}
		seen := make(map[string]struct{}, len(x))
		for _, m := range x {
			if _, dup := seen[string(m)]; dup {
				return invalidf("%s", msgSetDups)
			}
			seen[string(m)] = struct{}{}
		}
		return nil
	case L:
		for _, e := range x {
			if err := checkValue(e); err != nil {
				return err
			}
		}
		return nil
	case M:
		for k, e := range x {
			if k == "" {
				return invalidf("%s", msgEmptyName)
			}
			if err := checkValue(e); err != nil {
				return err
			}
		}
		return nil
	}
	return invalidf("unsupported attribute value %T", v)
}

// CloneItem returns a deep copy (nil for nil).
func CloneItem(it Item) Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for i, a := range it {
		out[i] = Attr{Name: a.Name, Value: CloneValue(a.Value)}
	}
	return out
}

// CloneValue returns a deep copy of v.
func CloneValue(v Value) Value {
	switch x := v.(type) {
	case B:
		if x == nil {
			return B{}
		}
		return B(bytes.Clone([]byte(x)))
	case BS:
		out := make(BS, len(x))
		for i, m := range x {
			out[i] = bytes.Clone(m)
			if out[i] == nil {
				out[i] = []byte{}
			}
		}
		return out
	case L:
		out := make(L, len(x))
		for i, e := range x {
			out[i] = CloneValue(e)
		}
		return out
	case M:
		out := make(M, len(x))
		for k, e := range x {
			out[k] = CloneValue(e)
		}
		return out
	}
	return v
}

// ItemSize is the item's size as DynamoDB counts it against MaxItemSize and
// capacity units: attribute name bytes plus value sizes (see valueSize).
func ItemSize(it Item) int {
	n := 0
	for _, a := range it {
		n += len(a.Name) + valueSize(a.Value)
	}
	return n
}

// ItemSizeAt is ItemSize of an item whose key is k, taking the key
// attributes' sizes from k: a store sizing the item an update left at k
// need not read values it did not touch (on a large store each is a cache
// miss).
func ItemSizeAt(k Key, it Item) int {
	n := len(AttrPK) + len(k.PK) + len(AttrSK) + len(k.SK)
	for _, a := range it {
		if a.Name != AttrPK && a.Name != AttrSK {
			n += len(a.Name) + valueSize(a.Value)
		}
	}
	return n
}

// valueSize follows AWS's "Item sizes and formats": strings and binaries
// their byte length, numbers about one byte per two significant digits plus
// one, BOOL and NULL one byte, sets the sum of their members, lists and maps
// 3 bytes plus one byte per element (and each map key's length). Checked
// byte for byte against DynamoDB Local's 400 KB limit.
func valueSize(v Value) int {
	switch x := v.(type) {
	case B:
		return len(x)
	case S:
		return len(x)
	case N:
		return numberSize(x)
	case BS:
		n := 0
		for _, m := range x {
			n += len(m)
		}
		return n
	case L:
		n := 3
		for _, e := range x {
			n += 1 + valueSize(e)
		}
		return n
	case M:
		n := 3
		for k, e := range x {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case BOOL, NULL:
		return 1
	}
	return 0
}

// UpdatePayloadSize is an update's share of a transaction's request
// payload (MaxTxSize): the attribute names and literal values it carries.
func UpdatePayloadSize(u *Update) int {
	n := 0
	for _, s := range u.Set {
		n += len(s.Attr) + operandSize(s.Val)
	}
	for _, a := range u.Remove {
		n += len(a)
	}
	for _, as := range [][]AttrValue{u.Add, u.Delete} {
		for _, a := range as {
			n += len(a.Attr) + valueSize(a.Val)
		}
	}
	return n
}

func operandSize(o Operand) int {
	switch x := o.(type) {
	case Value:
		return valueSize(x)
	case IfNotExists:
		return len(x.Attr) + valueSize(x.Default)
	case Ref:
		return len(x.Attr)
	case Plus:
		return operandSize(x.A) + operandSize(x.B)
	case Minus:
		return operandSize(x.A) + operandSize(x.B)
	case ListAppend:
		return operandSize(x.A) + operandSize(x.B)
	}
	return 0
}

// Capacity unit sizes: a strongly consistent read unit covers 4 KB, a write
// unit 1 KB; transactional requests cost TxCapacityFactor times as much.
const (
	ReadUnitSize     = 4 * 1024
	WriteUnitSize    = 1024
	TxCapacityFactor = 2
)

// ReadUnits is the read capacity of a strongly consistent read of size bytes,
// rounded up to whole 4 KB units; a read of nothing still costs one unit.
func ReadUnits(size int) float64 {
	return float64(max(1, (size+ReadUnitSize-1)/ReadUnitSize))
}

// WriteUnits is the write capacity of writing size bytes (DynamoDB takes the
// larger of the old and the new item), rounded up to whole 1 KB units with a
// minimum of one.
func WriteUnits(size int) float64 {
	return float64(max(1, (size+WriteUnitSize-1)/WriteUnitSize))
}

// ValuesEqual is DynamoDB's `=`: same type and same value, numbers compared
// numerically, sets as sets, lists and maps element by element.
func ValuesEqual(a, b Value) bool {
	if a == nil || b == nil || a.Kind() != b.Kind() {
		return false
	}
	switch x := a.(type) {
	case B:
		return bytes.Equal(x, b.(B))
	case S:
		return x == b.(S)
	case N:
		c, err := CompareNumbers(x, b.(N))
		if err != nil {
			return x == b.(N)
		}
		return c == 0
	case BOOL:
		return x == b.(BOOL)
	case NULL:
		return true
	case BS:
		y := b.(BS)
		if len(x) != len(y) {
			return false
		}
		set := make(map[string]struct{}, len(x))
		for _, m := range x {
			set[string(m)] = struct{}{}
		}
		for _, m := range y {
			if _, ok := set[string(m)]; !ok {
				return false
			}
		}
		return true
	case L:
		y := b.(L)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !ValuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case M:
		y := b.(M)
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !ValuesEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// ItemsEqual reports whether two items hold the same attributes with equal
// values (ValuesEqual); nil and empty items are equal.
func ItemsEqual(a, b Item) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		w := b.Get(x.Name)
		if w == nil || !ValuesEqual(x.Value, w) {
			return false
		}
	}
	return true
}

// ---- conditions ------------------------------------------------------------

// ValidateCond checks a condition the way DynamoDB parses a
// ConditionExpression, before looking at any item: unknown operators, nil
// operands, malformed values and operand types an operator does not accept
// are ErrInvalid.
func ValidateCond(c Cond) error {
	switch x := c.(type) {
	case nil:
		return nil
	case Exists:
		return checkName(x.Attr)
	case NotExists:
		return checkName(x.Attr)
	case Compare:
		if err := checkName(x.Attr); err != nil {
			return err
		}
		if x.Op < OpEQ || x.Op > OpGE {
			return invalidf("unknown comparison operator %d", x.Op)
		}
		if err := checkValue(x.Val); err != nil {
			return err
		}
		if x.Op != OpEQ && x.Op != OpNE {
			switch x.Val.Kind() {
			case KindN, KindS, KindB:
			default:
				return invalidf("Invalid ConditionExpression: "+msgOpType, x.Op, x.Val.Kind())
			}
		}
		return nil
	case IsType:
		if err := checkName(x.Attr); err != nil {
			return err
		}
		if x.Type < KindB || x.Type > KindNULL {
			return invalidf("Invalid ConditionExpression: unknown attribute type %d", x.Type)
		}
		return nil
	case CompareAttrs:
		if err := checkName(x.A); err != nil {
			return err
		}
		if err := checkName(x.B); err != nil {
			return err
		}
		if x.A == x.B {
			return invalidf("The first operand must be distinct from the remaining operands for this operator or function")
		}
		if x.Op < OpEQ || x.Op > OpGE {
			return invalidf("unknown comparison operator %d", x.Op)
		}
		return nil
	case SizeCompare:
		if err := checkName(x.Attr); err != nil {
			return err
		}
		if x.Op < OpEQ || x.Op > OpGE {
			return invalidf("unknown comparison operator %d", x.Op)
		}
		return nil
	case BeginsWith:
		return checkName(x.Attr)
	case Contains:
		if err := checkName(x.Attr); err != nil {
			return err
		}
		return checkValue(x.Val)
	case And:
		for _, e := range x {
			if e == nil {
				return invalidf("nil condition in And")
			}
			if err := ValidateCond(e); err != nil {
				return err
			}
		}
		return nil
	case Or:
		for _, e := range x {
			if e == nil {
				return invalidf("nil condition in Or")
			}
			if err := ValidateCond(e); err != nil {
				return err
			}
		}
		return nil
	case Not:
		if x.C == nil {
			return invalidf("nil condition in Not")
		}
		return ValidateCond(x.C)
	case *Checked:
		if x == nil {
			return invalidf("nil Checked condition")
		}
		return nil
	}
	return invalidf("unsupported condition %T", c)
}

func checkName(name string) error {
	if name == "" {
		return invalidf("%s", msgEmptyName)
	}
	return nil
}

// EvalCond evaluates c on it (nil it: the item does not exist; nil c: true)
// as DynamoDB evaluates a ConditionExpression. An invalid condition is
// ErrInvalid whatever the item.
func EvalCond(it Item, c Cond) (bool, error) {
	if err := ValidateCond(c); err != nil {
		return false, err
	}
	return evalCond(it, c), nil
}

// EvalValidCond is EvalCond for a condition ValidateCond accepted: callers
// that validate before taking a lock need not validate again under it.
func EvalValidCond(it Item, c Cond) bool {
	return evalCond(it, c)
}

func evalCond(it Item, c Cond) bool {
	switch x := c.(type) {
	case nil:
		return true
	case Exists:
		return it.Has(x.Attr)
	case NotExists:
		return !it.Has(x.Attr)
	case Compare:
		v := it.Get(x.Attr)
		if v == nil {
			return x.Op == OpNE
		}
		return compareValues(v, x.Op, x.Val)
	case CompareAttrs:
		a, b := it.Get(x.A), it.Get(x.B)
		if a == nil || b == nil {
			return x.Op == OpNE
		}
		return compareValues(a, x.Op, b)
	case IsType:
		v := it.Get(x.Attr)
		return v != nil && v.Kind() == x.Type
	case SizeCompare:
		v := it.Get(x.Attr)
		if v == nil {
			return x.Op == OpNE
		}
		n, ok := sizeOf(v)
		if !ok {
			return x.Op == OpNE
		}
		return cmpResult(cmpInt(n, x.Size), x.Op)
	case BeginsWith:
		v, ok := it.Get(x.Attr).(B)
		return ok && bytes.HasPrefix(v, x.Prefix)
	case Contains:
		return contains(it.Get(x.Attr), x.Val)
	case And:
		for _, e := range x {
			if !evalCond(it, e) {
				return false
			}
		}
		return true
	case Or:
		for _, e := range x {
			if evalCond(it, e) {
				return true
			}
		}
		return false
	case Not:
		return !evalCond(it, x.C)
	case *Checked:
		return evalCond(it, x.c)
	}
	return false
}

// compareValues is `a op b` for a present attribute a. Values of different
// types are unequal and unordered.
func compareValues(a Value, op CmpOp, b Value) bool {
	if a.Kind() != b.Kind() {
		return op == OpNE
	}
	switch op {
	case OpEQ:
		return ValuesEqual(a, b)
	case OpNE:
		return !ValuesEqual(a, b)
	}
	var c int
	switch x := a.(type) {
	case N:
		r, err := CompareNumbers(x, b.(N))
		if err != nil {
			return false
		}
		c = r
	case S:
		c = strings.Compare(string(x), string(b.(S)))
	case B:
		c = bytes.Compare(x, b.(B))
	default:
		return false
	}
	return cmpResult(c, op)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpResult(c int, op CmpOp) bool {
	switch op {
	case OpEQ:
		return c == 0
	case OpNE:
		return c != 0
	case OpLT:
		return c < 0
	case OpLE:
		return c <= 0
	case OpGT:
		return c > 0
	case OpGE:
		return c >= 0
	}
	return false
}

// sizeOf is DynamoDB's size(): bytes of B and S, elements of sets, lists and
// maps; other types have no size.
func sizeOf(v Value) (int64, bool) {
	switch x := v.(type) {
	case B:
		return int64(len(x)), true
	case S:
		return int64(len(x)), true
	case BS:
		return int64(len(x)), true
	case L:
		return int64(len(x)), true
	case M:
		return int64(len(x)), true
	}
	return 0, false
}

// contains is DynamoDB's contains(): a substring of an S, a byte substring
// of a B, a member of a set, an element of a list.
func contains(a, v Value) bool {
	switch x := a.(type) {
	case S:
		s, ok := v.(S)
		return ok && strings.Contains(string(x), string(s))
	case B:
		b, ok := v.(B)
		return ok && bytes.Contains(x, b)
	case BS:
		b, ok := v.(B)
		if !ok {
			return false
		}
		for _, m := range x {
			if bytes.Equal(m, b) {
				return true
			}
		}
	case L:
		for _, e := range x {
			if ValuesEqual(e, v) {
				return true
			}
		}
	}
	return false
}

// ---- updates ---------------------------------------------------------------

// ValidateUpdate checks an update the way DynamoDB parses an
// UpdateExpression, before looking at any item: an attribute named in two
// actions, an action on pk or sk, an empty name, a malformed value, an ADD of
// something other than a number or set, a DELETE of something other than a
// set, and literal operands of the wrong type are ErrInvalid.
func ValidateUpdate(u Update) error {
	// An update names a few attributes: comparing each name with those
	// before it costs less than collecting them (checking the names was
	// most of ValidateUpdate's cost, itself a measurable part of a
	// pipelined INCR's); many go to a map.
	const pairwise = 16
	n := len(u.Set) + len(u.Remove) + len(u.Add) + len(u.Delete)
	var seen map[string]bool
	if n > pairwise {
		seen = make(map[string]bool, n)
	}
	i := 0 // the action's position, as attrAt counts
	name := func(a string) error {
		if err := checkName(a); err != nil {
			return err
		}
		if a == AttrPK || a == AttrSK {
			return invalidf(msgKeyAttr, a)
		}
		dup := false
		if seen != nil {
			dup = seen[a]
			seen[a] = true
		} else {
			for j := range i {
				if u.attrAt(j) == a {
					dup = true
					break
				}
			}
		}
		if dup {
			return invalidf(msgPathsOverlap, a, a)
		}
		i++
		return nil
	}
	for _, s := range u.Set {
		if err := name(s.Attr); err != nil {
			return err
		}
		if err := validateOperand(s.Val, ""); err != nil {
			return err
		}
	}
	for _, a := range u.Remove {
		if err := name(a); err != nil {
			return err
		}
	}
	for _, a := range u.Add {
		if err := name(a.Attr); err != nil {
			return err
		}
		if err := checkValue(a.Val); err != nil {
			return err
		}
		if k := a.Val.Kind(); k != KindN && k != KindBS {
			return invalidf("Invalid UpdateExpression: "+msgOpType, "ADD", k)
		}
	}
	for _, a := range u.Delete {
		if err := name(a.Attr); err != nil {
			return err
		}
		if err := checkValue(a.Val); err != nil {
			return err
		}
		if k := a.Val.Kind(); k != KindBS {
			return invalidf("Invalid UpdateExpression: "+msgOpType, "DELETE", k)
		}
	}
	return nil
}

// attrAt is the attribute that u's i-th action names, counting the SET
// actions first, then REMOVE, ADD and DELETE.
func (u *Update) attrAt(i int) string {
	if i < len(u.Set) {
		return u.Set[i].Attr
	}
	i -= len(u.Set)
	if i < len(u.Remove) {
		return u.Remove[i]
	}
	i -= len(u.Remove)
	if i < len(u.Add) {
		return u.Add[i].Attr
	}
	return u.Delete[i-len(u.Add)].Attr
}

// validateOperand checks an operand tree; want is the type its parent needs
// from a literal ("N" under + and -, "L" under list_append).
func validateOperand(o Operand, want string) error {
	switch x := o.(type) {
	case nil:
		return invalidf("nil operand")
	case Value:
		if err := checkValue(x); err != nil {
			return err
		}
		if want != "" && x.Kind().String() != want {
			fn := "+"
			if want == "L" {
				fn = "list_append"
			}
			return invalidf("Invalid UpdateExpression: "+msgOpType, fn, x.Kind())
		}
		return nil
	case Ref:
		return checkName(x.Attr)
	case IfNotExists:
		if err := checkName(x.Attr); err != nil {
			return err
		}
		return checkValue(x.Default)
	case Plus:
		if err := validateOperand(x.A, "N"); err != nil {
			return err
		}
		return validateOperand(x.B, "N")
	case Minus:
		if err := validateOperand(x.A, "N"); err != nil {
			return err
		}
		return validateOperand(x.B, "N")
	case ListAppend:
		if err := validateOperand(x.A, "L"); err != nil {
			return err
		}
		return validateOperand(x.B, "L")
	}
	return invalidf("unsupported operand %T", o)
}

// ApplyUpdate returns the item an UpdateItem of u makes from old (nil old:
// the item does not exist and is created from k). Every operand reads old,
// never a value another action of u produces. The result is a new item; old
// is not modified. Besides ValidateUpdate's errors it reports, as DynamoDB
// does once it sees the item, ErrInvalid for: a Ref (or an operand of +, -,
// list_append) naming a missing attribute, + or - on a non-number,
// list_append on a non-list, ADD or DELETE on an attribute of another type,
// and arithmetic results DynamoDB cannot store. The size of the result is
// not checked here (see ItemSize / MaxItemSize).
func ApplyUpdate(k Key, old Item, u Update) (Item, error) {
	if err := ValidateUpdate(u); err != nil {
		return nil, err
	}
	return applyUpdate(k, old, u, false, nil)
}

// ApplyValidUpdate is ApplyUpdate for an update ValidateUpdate accepted,
// whose result shares the values it leaves unchanged with old instead of
// copying them: for stores that never mutate a stored item, only replace it.
// Values taken from u are still copied (and normalized); a one-byte sort key
// of a new item is a value every such item shares.
func ApplyValidUpdate(k Key, old Item, u Update) (Item, error) {
	return applyUpdate(k, old, u, true, nil)
}

// ApplyValidUpdateInto is ApplyValidUpdate building an update of an
// existing item in dst's memory (from dst[:0]) where it fits: for a store
// that reuses memory of its own for the result.
func ApplyValidUpdateInto(k Key, old Item, u Update, dst Item) (Item, error) {
	return applyUpdate(k, old, u, true, dst)
}

// oneByteB holds every one-byte binary value, boxed once: the items updates
// create in a store that never mutates a value may share their sort key
// (redamo's key items all have the sort key 0x00), two allocations fewer
// for each, and two objects fewer for the collector to mark.
var oneByteB = func() (vs [256]Value) {
	for i := range vs {
		vs[i] = B{byte(i)}
	}
	return vs
}()

// applyUpdate applies u to old; with share the result shares old's values,
// and a result that keeps old's attributes starts from dst when it is not
// nil.
func applyUpdate(k Key, old Item, u Update, share bool, dst Item) (Item, error) {
	var out Item
	switch {
	case old == nil:
		if err := ValidateKey(k); err != nil {
			return nil, err
		}
		var sk Value = B(bytes.Clone(k.SK))
		if share && len(k.SK) == 1 {
			sk = oneByteB[k.SK[0]]
		}
		out = make(Item, 2, 2+newAttrs(old, u))
		out[0] = Attr{Name: AttrPK, Value: B(bytes.Clone(k.PK))}
		out[1] = Attr{Name: AttrSK, Value: sk}
	case share && dst != nil:
		out = append(dst[:0], old...)
	case share:
		out = old.Clone(newAttrs(old, u))
	default:
		out = CloneItem(old)
	}
	for _, s := range u.Set {
		v, err := evalOperand(old, s.Val, share)
		if err != nil {
			return nil, err
		}
		out.Set(s.Attr, v)
	}
	for _, a := range u.Remove {
		out.Delete(a)
	}
	for _, a := range u.Add {
		v, err := addValue(old.Get(a.Attr), a.Val)
		if err != nil {
			return nil, err
		}
		out.Set(a.Attr, v)
	}
	for _, a := range u.Delete {
		cur := old.Get(a.Attr)
		if cur == nil {
			continue
		}
		set, ok := cur.(BS)
		if !ok {
			return nil, invalidf("%s", msgOperandType)
		}
		rest := setMinus(set, a.Val.(BS))
		if len(rest) == 0 {
			out.Delete(a.Attr)
		} else {
			out.Set(a.Attr, rest)
		}
	}
	return out, nil
}

// newAttrs counts the attributes u's SET and ADD actions give an item that
// old lacks: the room an updated copy of old needs. Room for every action
// made each INCR's copy of a key item larger than it needs (it only
// replaces attributes), memory the collector then had to reclaim.
func newAttrs(old Item, u Update) int {
	n := 0
	for _, s := range u.Set {
		if !old.Has(s.Attr) {
			n++
		}
	}
	for _, a := range u.Add {
		if !old.Has(a.Attr) {
			n++
		}
	}
	return n
}

// evalOperand evaluates o on old; with share, values taken from old are not
// copied.
func evalOperand(old Item, o Operand, share bool) (Value, error) {
	switch x := o.(type) {
	case Value:
		return NormalizeValue(x)
	case Ref:
		v := old.Get(x.Attr)
		if v == nil {
			return nil, invalidf("%s", msgNoSuchAttr)
		}
		if share {
			return v, nil
		}
		return CloneValue(v), nil
	case IfNotExists:
		if v := old.Get(x.Attr); v != nil {
			if share {
				return v, nil
			}
			return CloneValue(v), nil
		}
		return NormalizeValue(x.Default)
	case Plus, Minus:
		var a, b Operand
		if p, ok := x.(Plus); ok {
			a, b = p.A, p.B
		} else {
			m := x.(Minus)
			a, b = m.A, m.B
		}
		va, err := evalOperand(old, a, share)
		if err != nil {
			return nil, err
		}
		vb, err := evalOperand(old, b, share)
		if err != nil {
			return nil, err
		}
		na, oka := va.(N)
		nb, okb := vb.(N)
		if !oka || !okb {
			return nil, invalidf("%s", msgOperandType)
		}
		if _, ok := x.(Plus); ok {
			return sumValue(na, nb)
		}
		return SubtractNumbers(na, nb)
	case ListAppend:
		va, err := evalOperand(old, x.A, share)
		if err != nil {
			return nil, err
		}
		vb, err := evalOperand(old, x.B, share)
		if err != nil {
			return nil, err
		}
		la, oka := va.(L)
		lb, okb := vb.(L)
		if !oka || !okb {
			return nil, invalidf("%s", msgOperandType)
		}
		return append(append(L{}, la...), lb...), nil
	}
	return nil, invalidf("unsupported operand %T", o)
}

// addValue is ADD: a number added to an N (missing counts as 0), members
// added to a BS (missing counts as empty).
func addValue(cur, v Value) (Value, error) {
	switch x := v.(type) {
	case N:
		if cur == nil {
			return CanonicalNumber(string(x))
		}
		n, ok := cur.(N)
		if !ok {
			return nil, invalidf("%s", msgOperandType)
		}
		return sumValue(n, x)
	case BS:
		if cur == nil {
			return CloneValue(x), nil
		}
		set, ok := cur.(BS)
		if !ok {
			return nil, invalidf("%s", msgOperandType)
		}
		out := CloneValue(set).(BS)
		have := make(map[string]struct{}, len(set))
		for _, m := range set {
			have[string(m)] = struct{}{}
		}
		for _, m := range x {
			if _, ok := have[string(m)]; !ok {
				out = append(out, bytes.Clone(m))
				have[string(m)] = struct{}{}
			}
		}
		return out, nil
	}
	return nil, invalidf("%s", msgOperandType)
}

func setMinus(set, del BS) BS {
	drop := make(map[string]struct{}, len(del))
	for _, m := range del {
		drop[string(m)] = struct{}{}
	}
	var out BS
	for _, m := range set {
		if _, ok := drop[string(m)]; !ok {
			out = append(out, bytes.Clone(m))
		}
	}
	return out
}

// UpdatedAttrs lists the attributes u's actions name, in action order.
func UpdatedAttrs(u *Update) []string {
	if u == nil {
		return nil
	}
	var out []string
	for _, s := range u.Set {
		out = append(out, s.Attr)
	}
	out = append(out, u.Remove...)
	for _, a := range u.Add {
		out = append(out, a.Attr)
	}
	for _, a := range u.Delete {
		out = append(out, a.Attr)
	}
	return out
}

// Projection is what a successful write returns for rv: ALL_OLD the old
// item (nil if there was none), ALL_NEW the new item, UPDATED_OLD /
// UPDATED_NEW the attributes u names, taken from the old / new item (nil when
// none of them is present). old or new is nil when the item is absent before
// or after the write. The result shares its values with old and new (what a
// Store returns is read-only), and ALL_OLD / ALL_NEW are old / new
// themselves: a store that changes items in place takes it before they
// change.
func Projection(rv ReturnValues, old, new Item, u *Update) Item {
	switch rv {
	case ReturnAllOld:
		return old
	case ReturnAllNew:
		return new
	case ReturnUpdatedOld, ReturnUpdatedNew:
		src := old
		if rv == ReturnUpdatedNew {
			src = new
		}
		var out Item
		take := func(a string) {
			if v := src.Get(a); v != nil {
				out.Set(a, v)
			}
		}
		// The attributes of UpdatedAttrs, without building the list.
		if u != nil {
			for _, s := range u.Set {
				take(s.Attr)
			}
			for _, a := range u.Remove {
				take(a)
			}
			for _, a := range u.Add {
				take(a.Attr)
			}
			for _, a := range u.Delete {
				take(a.Attr)
			}
		}
		return out
	}
	return nil
}

// ValidateReturn checks rv for a write kind: PutItem and DeleteItem accept
// only ReturnNone and ReturnAllOld (DynamoDB: "Return values set to invalid
// value"); UpdateItem accepts all five.
func ValidateReturn(rv ReturnValues, update bool) error {
	switch {
	case rv == ReturnNone || rv == ReturnAllOld:
		return nil
	case update && rv <= ReturnUpdatedNew:
		return nil
	}
	return invalidf("Return values set to invalid value")
}

// UpdatedItemTooLarge is the error for an update whose result exceeds
// MaxItemSize (DynamoDB words it differently from PutItem's).
func UpdatedItemTooLarge() error {
	return fmt.Errorf("%w: %s", ErrItemTooLarge, msgUpdTooLarge)
}
