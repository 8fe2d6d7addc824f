package dynamo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
)

// exprs renders typed conditions, updates and key conditions to DynamoDB
// expression strings. Every attribute name goes through a placeholder (#a0,
// #a1, ...), so reserved words and odd characters never matter, and every
// value through :v0, :v1, ... One exprs serves all expressions of one request,
// because they share the request's name and value maps. It keeps dynastore
// values: the direct path writes them as JSON, the SDK path converts them.
type exprs struct {
	names  []string          // #aN stands for names[N]
	byName map[string]string // attribute name -> placeholder, once names is long
	values []dynastore.Value // :vN stands for values[N]
	// Room for a typical request's names and values, allocated with it.
	nameBuf  [8]string
	valueBuf [8]dynastore.Value
}

// byNameFrom is the number of names from which name looks them up in a map
// rather than scanning the list.
const byNameFrom = 16

func newExprs() *exprs {
	e := &exprs{}
	e.names, e.values = e.nameBuf[:0], e.valueBuf[:0]
	return e
}

// The placeholders of the first indices, made once: most requests use few.
var namePlaceholders, valuePlaceholders = placeholders("#a"), placeholders(":v")

func placeholders(prefix string) []string {
	out := make([]string, 32)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func placeholder(made []string, i int) string {
	if i < len(made) {
		return made[i]
	}
	return made[0][:2] + strconv.Itoa(i)
}

func (e *exprs) name(attr string) string {
	if e.byName != nil {
		if p, ok := e.byName[attr]; ok {
			return p
		}
	} else {
		for i, n := range e.names {
			if n == attr {
				return placeholder(namePlaceholders, i)
			}
		}
	}
	p := placeholder(namePlaceholders, len(e.names))
	e.names = append(e.names, attr)
	switch {
	case e.byName != nil:
		e.byName[attr] = p
	case len(e.names) == byNameFrom:
		e.byName = make(map[string]string, 2*byNameFrom)
		for i, n := range e.names {
			e.byName[n] = placeholder(namePlaceholders, i)
		}
	}
	return p
}

// value adds a value the caller gave, which may not be sendable.
func (e *exprs) value(v dynastore.Value) (string, error) {
	if err := checkAV(v); err != nil {
		return "", err
	}
	return e.lit(v), nil
}

// lit adds a value made here.
func (e *exprs) lit(v dynastore.Value) string {
	e.values = append(e.values, v)
	return placeholder(valuePlaceholders, len(e.values)-1)
}

// Names and Values return the maps for an SDK request (nil when empty:
// DynamoDB rejects empty maps).
func (e *exprs) Names() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	out := make(map[string]string, len(e.names))
	for i, n := range e.names {
		out[placeholder(namePlaceholders, i)] = n
	}
	return out
}

func (e *exprs) Values() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(e.values))
	for i, v := range e.values {
		// value and lit only take values toAV converts.
		av, _ := toAV(v)
		out[placeholder(valuePlaceholders, i)] = av
	}
	return out
}

// appendJSON appends the request members for the names and values (none
// when empty), each after a comma.
func (e *exprs) appendJSON(b []byte) ([]byte, error) {
	if len(e.names) > 0 {
		b = append(b, `,"ExpressionAttributeNames":{`...)
		for i, n := range e.names {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, placeholder(namePlaceholders, i)...)
			b = append(b, '"', ':')
			b = appendString(b, n)
		}
		b = append(b, '}')
	}
	if len(e.values) > 0 {
		b = append(b, `,"ExpressionAttributeValues":{`...)
		for i, v := range e.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, placeholder(valuePlaceholders, i)...)
			b = append(b, '"', ':')
			var err error
			if b, err = appendAV(b, v); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return b, nil
}

// exprSize is room for a typical expression, reserved at once rather than
// grown step by step.
const exprSize = 96

// ---- conditions ------------------------------------------------------------

// truth is the result of folding constants out of a condition.
type truth uint8

const (
	unknown truth = iota
	alwaysTrue
	alwaysFalse
)

// simplify folds constants out of a condition and drops the parts its other
// parts imply, so that a constant condition needs no expression (DynamoDB has
// no literal true or false) and every other one is as short as its meaning
// allows: DynamoDB Local's latency grows with each operator (the INCR guard
// as first written, seven operators, was markedly slower than a bare ADD),
// and the layers above compose their conditions from reusable parts that
// overlap ("absent OR (live AND ...)", where live re-checks existence). The
// rules, each an equivalence under DynamoDB's semantics (dynastore.EvalCond):
//   - an empty And is true, an empty Or false; nested Ands and Ors flatten;
//   - each disjunct of an Or may assume the ones before it false: after
//     NotExists{A} the attribute exists, after Exists{A} it does not, so
//     later Exists{A} and NotExists{A} become constants;
//   - within an And, an ordered comparison of A (=, <, <=, >, >=) holds only
//     when A exists with the compared value's type, and a size comparison
//     other than <> only when A exists: Exists{A} and that IsType{A, ...}
//     next to them add nothing.
func simplify(c dynastore.Cond) (dynastore.Cond, truth) {
	s, t, _ := simplifyKnowing(c, nil)
	return s, t
}

// facts are what is known about attributes' existence: a list, newest
// first, that a caller's facts are shared by (nothing is changed in place).
type facts struct {
	attr   string
	exists bool
	next   *facts
}

func (f *facts) lookup(attr string) (exists, known bool) {
	for ; f != nil; f = f.next {
		if f.attr == attr {
			return f.exists, true
		}
	}
	return false, false
}

// simplifyKnowing is simplify knowing the facts; same reports that the
// result is c itself (nothing to fold or drop), which it then returns
// without rebuilding it: conditions are mostly already as short as they get.
func simplifyKnowing(c dynastore.Cond, known *facts) (out dynastore.Cond, t truth, same bool) {
	switch x := c.(type) {
	case nil:
		return nil, alwaysTrue, false
	case *dynastore.Checked:
		// Not c: the result is what the check holds, never the wrapper.
		s, t, _ := simplifyKnowing(x.Cond(), known)
		return s, t, false
	case dynastore.Exists:
		if ex, ok := known.lookup(x.Attr); ok {
			return nil, truthOf(ex), false
		}
	case dynastore.NotExists:
		if ex, ok := known.lookup(x.Attr); ok {
			return nil, truthOf(!ex), false
		}
	case dynastore.And:
		var kept dynastore.And // nil while every conjunct is kept as it is
		for i, sub := range x {
			s, t, same := simplifyKnowing(sub, known)
			if t == alwaysFalse {
				return nil, alwaysFalse, false
			}
			if _, nested := s.(dynastore.And); nested {
				same = false // to flatten
			}
			if kept == nil && !same {
				kept = append(make(dynastore.And, 0, len(x)), x[:i]...)
			}
			if kept == nil || t != unknown {
				continue
			}
			if inner, ok := s.(dynastore.And); ok {
				kept = append(kept, inner...)
			} else {
				kept = append(kept, s)
			}
		}
		if kept == nil {
			kept = x
		}
		pruned := dropImplied(kept)
		switch len(pruned) {
		case 0:
			return nil, alwaysTrue, false
		case 1:
			return pruned[0], unknown, false
		}
		return pruned, unknown, len(pruned) == len(x) && &pruned[0] == &x[0]
	case dynastore.Or:
		var kept dynastore.Or // nil while every disjunct is kept as it is
		for i, sub := range x {
			s, t, same := simplifyKnowing(sub, known)
			if t == alwaysTrue {
				return nil, alwaysTrue, false
			}
			if _, nested := s.(dynastore.Or); nested {
				same = false // to flatten
			}
			if kept == nil && !same {
				kept = append(make(dynastore.Or, 0, len(x)), x[:i]...)
			}
			if t != unknown {
				continue
			}
			if kept != nil {
				if inner, ok := s.(dynastore.Or); ok {
					kept = append(kept, inner...)
				} else {
					kept = append(kept, s)
				}
			}
			// The disjuncts after this one only matter when it is false.
			switch a := s.(type) {
			case dynastore.NotExists:
				known = &facts{attr: a.Attr, exists: true, next: known}
			case dynastore.Exists:
				known = &facts{attr: a.Attr, exists: false, next: known}
			}
		}
		if kept == nil {
			kept = x
		}
		switch len(kept) {
		case 0:
			return nil, alwaysFalse, false
		case 1:
			return kept[0], unknown, false
		}
		return kept, unknown, len(kept) == len(x) && &kept[0] == &x[0]
	case dynastore.Not:
		s, t, same := simplifyKnowing(x.C, known)
		switch t {
		case alwaysTrue:
			return nil, alwaysFalse, false
		case alwaysFalse:
			return nil, alwaysTrue, false
		}
		if same {
			return c, unknown, true
		}
		return dynastore.Not{C: s}, unknown, false
	}
	return c, unknown, true
}

func truthOf(b bool) truth {
	if b {
		return alwaysTrue
	}
	return alwaysFalse
}

// dropImplied removes from the conjuncts of an And the Exists and IsType
// conditions that another conjunct's comparison already implies; it
// returns and itself when there are none.
func dropImplied(and dynastore.And) dynastore.And {
	implied := func(c dynastore.Cond) bool {
		for _, o := range and {
			switch y := o.(type) {
			case dynastore.Compare:
				if y.Op == dynastore.OpNE || y.Val == nil {
					continue
				}
				switch x := c.(type) {
				case dynastore.Exists:
					if x.Attr == y.Attr {
						return true
					}
				case dynastore.IsType:
					if x.Attr == y.Attr && x.Type == y.Val.Kind() {
						return true
					}
				}
			case dynastore.SizeCompare:
				if x, ok := c.(dynastore.Exists); ok && y.Op != dynastore.OpNE && x.Attr == y.Attr {
					return true
				}
			}
		}
		return false
	}
	var out dynastore.And // nil while nothing is dropped
	for i, c := range and {
		switch c.(type) {
		case dynastore.Exists, dynastore.IsType:
			if implied(c) {
				if out == nil {
					out = append(make(dynastore.And, 0, len(and)-1), and[:i]...)
				}
				continue
			}
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return and
	}
	return out
}

// falseAttr names the attribute of the expression that stands for "false".
// Any name works (an attribute cannot both exist and not exist); it is not a
// key attribute because a Query's FilterExpression may not mention those.
const falseAttr = dynastore.AttrTTL

// Cond renders a condition; "" means always true (send no expression). The
// condition must already be valid (dynastore.ValidateCond).
func (e *exprs) Cond(c dynastore.Cond) (string, error) {
	s, t := simplify(c)
	switch t {
	case alwaysTrue:
		return "", nil
	case alwaysFalse:
		p := e.name(falseAttr)
		return "attribute_exists(" + p + ") AND attribute_not_exists(" + p + ")", nil
	}
	var b strings.Builder
	b.Grow(exprSize)
	if err := e.cond(&b, s); err != nil {
		return "", err
	}
	return b.String(), nil
}

func cmpOp(op dynastore.CmpOp) (string, error) {
	switch op {
	case dynastore.OpEQ:
		return "=", nil
	case dynastore.OpNE:
		return "<>", nil
	case dynastore.OpLT:
		return "<", nil
	case dynastore.OpLE:
		return "<=", nil
	case dynastore.OpGT:
		return ">", nil
	case dynastore.OpGE:
		return ">=", nil
	}
	return "", fmt.Errorf("%w: unknown comparison operator %d", dynastore.ErrInvalid, op)
}

// typeNames are attribute_type's type descriptors, as the values sent.
var typeNames = map[dynastore.Kind]dynastore.Value{
	dynastore.KindB: dynastore.S("B"), dynastore.KindN: dynastore.S("N"), dynastore.KindS: dynastore.S("S"),
	dynastore.KindBS: dynastore.S("BS"), dynastore.KindL: dynastore.S("L"), dynastore.KindM: dynastore.S("M"),
	dynastore.KindBOOL: dynastore.S("BOOL"), dynastore.KindNULL: dynastore.S("NULL"),
}

// call writes fn(args...).
func call(b *strings.Builder, fn string, args ...string) {
	b.WriteString(fn)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a)
	}
	b.WriteByte(')')
}

// infix writes a op b.
func infix(b *strings.Builder, x, op, y string) {
	b.WriteString(x)
	b.WriteByte(' ')
	b.WriteString(op)
	b.WriteByte(' ')
	b.WriteString(y)
}

func (e *exprs) cond(b *strings.Builder, c dynastore.Cond) error {
	switch x := c.(type) {
	case dynastore.Exists:
		call(b, "attribute_exists", e.name(x.Attr))
	case dynastore.NotExists:
		call(b, "attribute_not_exists", e.name(x.Attr))
	case dynastore.Compare:
		op, err := cmpOp(x.Op)
		if err != nil {
			return err
		}
		n := e.name(x.Attr)
		v, err := e.value(x.Val)
		if err != nil {
			return err
		}
		infix(b, n, op, v)
	case dynastore.CompareAttrs:
		op, err := cmpOp(x.Op)
		if err != nil {
			return err
		}
		infix(b, e.name(x.A), op, e.name(x.B))
	case dynastore.IsType:
		tn, ok := typeNames[x.Type]
		if !ok {
			return fmt.Errorf("%w: unknown attribute type %d", dynastore.ErrInvalid, x.Type)
		}
		n := e.name(x.Attr)
		call(b, "attribute_type", n, e.lit(tn))
	case dynastore.SizeCompare:
		op, err := cmpOp(x.Op)
		if err != nil {
			return err
		}
		n := e.name(x.Attr)
		b.WriteString("size(")
		b.WriteString(n)
		infix(b, ")", op, e.lit(dynastore.N(strconv.FormatInt(x.Size, 10))))
	case dynastore.BeginsWith:
		n := e.name(x.Attr)
		call(b, "begins_with", n, e.lit(dynastore.B(x.Prefix)))
	case dynastore.Contains:
		n := e.name(x.Attr)
		v, err := e.value(x.Val)
		if err != nil {
			return err
		}
		call(b, "contains", n, v)
	case dynastore.And:
		return e.join(b, " AND ", x)
	case dynastore.Or:
		return e.join(b, " OR ", x)
	case dynastore.Not:
		b.WriteString("(NOT ")
		if err := e.cond(b, x.C); err != nil {
			return err
		}
		b.WriteString(")")
	default:
		return fmt.Errorf("%w: unsupported condition %T", dynastore.ErrInvalid, c)
	}
	return nil
}

func (e *exprs) join(b *strings.Builder, sep string, cs []dynastore.Cond) error {
	b.WriteString("(")
	for i, c := range cs {
		if i > 0 {
			b.WriteString(sep)
		}
		if err := e.cond(b, c); err != nil {
			return err
		}
	}
	b.WriteString(")")
	return nil
}

// ---- updates ---------------------------------------------------------------

// Update renders an UpdateExpression; "" when the update has no action. The
// update must already be valid (dynastore.ValidateUpdate).
func (e *exprs) Update(u dynastore.Update) (string, error) {
	var b strings.Builder
	b.Grow(exprSize)
	// sep starts clause kw at its first action (i == 0), else separates actions.
	sep := func(i int, kw string) {
		switch {
		case i > 0:
			b.WriteString(", ")
		case b.Len() > 0:
			b.WriteByte(' ')
			fallthrough
		default:
			b.WriteString(kw)
			b.WriteByte(' ')
		}
	}
	for i, s := range u.Set {
		sep(i, "SET")
		b.WriteString(e.name(s.Attr))
		b.WriteString(" = ")
		if err := e.operand(&b, s.Val, true); err != nil {
			return "", err
		}
	}
	for i, a := range u.Remove {
		sep(i, "REMOVE")
		b.WriteString(e.name(a))
	}
	for _, act := range [...]struct {
		kw  string
		avs []dynastore.AttrValue
	}{{"ADD", u.Add}, {"DELETE", u.Delete}} {
		for i, a := range act.avs {
			sep(i, act.kw)
			n := e.name(a.Attr)
			v, err := e.value(a.Val)
			if err != nil {
				return "", err
			}
			b.WriteString(n)
			b.WriteByte(' ')
			b.WriteString(v)
		}
	}
	return b.String(), nil
}

// operand renders the right-hand side of SET. DynamoDB's grammar allows one
// + or - or list_append at the top, whose arguments are paths, values or
// if_not_exists (checked on DynamoDB Local); deeper nesting is a
// ValidationException there, and is rejected here before the round trip.
func (e *exprs) operand(b *strings.Builder, o dynastore.Operand, top bool) error {
	switch x := o.(type) {
	case dynastore.Value:
		v, err := e.value(x)
		if err != nil {
			return err
		}
		b.WriteString(v)
	case dynastore.Ref:
		b.WriteString(e.name(x.Attr))
	case dynastore.IfNotExists:
		n := e.name(x.Attr)
		v, err := e.value(x.Default)
		if err != nil {
			return err
		}
		call(b, "if_not_exists", n, v)
	case dynastore.Plus:
		return e.arith(b, x.A, x.B, " + ", top)
	case dynastore.Minus:
		return e.arith(b, x.A, x.B, " - ", top)
	case dynastore.ListAppend:
		if !top {
			return fmt.Errorf("%w: Invalid UpdateExpression: The function is not allowed to be used this way in an expression; function: list_append", dynastore.ErrInvalid)
		}
		b.WriteString("list_append(")
		if err := e.operand(b, x.A, false); err != nil {
			return err
		}
		b.WriteString(", ")
		if err := e.operand(b, x.B, false); err != nil {
			return err
		}
		b.WriteByte(')')
	case nil:
		return fmt.Errorf("%w: nil operand", dynastore.ErrInvalid)
	default:
		return fmt.Errorf("%w: unsupported operand %T", dynastore.ErrInvalid, o)
	}
	return nil
}

func (e *exprs) arith(b *strings.Builder, x, y dynastore.Operand, sign string, top bool) error {
	if !top {
		return fmt.Errorf("%w: Invalid UpdateExpression: Syntax error; token: %q", dynastore.ErrInvalid, strings.TrimSpace(sign))
	}
	if err := e.operand(b, x, false); err != nil {
		return err
	}
	b.WriteString(sign)
	return e.operand(b, y, false)
}

// ---- key conditions --------------------------------------------------------

// KeyCond renders a Query's KeyConditionExpression.
func (e *exprs) KeyCond(q dynastore.Query) (string, error) {
	var b strings.Builder
	infix(&b, e.name(dynastore.AttrPK), "=", e.lit(dynastore.B(q.PK)))
	if q.Op == dynastore.SKAll {
		return b.String(), nil
	}
	b.WriteString(" AND ")
	sk := e.name(dynastore.AttrSK)
	a := e.lit(dynastore.B(q.A))
	switch q.Op {
	case dynastore.SKEq:
		infix(&b, sk, "=", a)
	case dynastore.SKLT:
		infix(&b, sk, "<", a)
	case dynastore.SKLE:
		infix(&b, sk, "<=", a)
	case dynastore.SKGT:
		infix(&b, sk, ">", a)
	case dynastore.SKGE:
		infix(&b, sk, ">=", a)
	case dynastore.SKBetween:
		infix(&b, sk, "BETWEEN", a)
		infix(&b, "", "AND", e.lit(dynastore.B(q.B)))
	case dynastore.SKBeginsWith:
		call(&b, "begins_with", sk, a)
	default:
		return "", fmt.Errorf("%w: unknown sort key operator %d", dynastore.ErrInvalid, q.Op)
	}
	return b.String(), nil
}
