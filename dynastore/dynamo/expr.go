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
}

// byNameFrom is the number of names from which name looks them up in a map
// rather than scanning the list.
const byNameFrom = 16

func newExprs() *exprs {
	return &exprs{}
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
// as first written, seven operators, cost ~0.3 ms over a bare ADD), and the
// layers above compose their conditions from reusable parts that overlap
// ("absent OR (live AND ...)", where live re-checks existence). The rules,
// each an equivalence under DynamoDB's semantics (dynastore.EvalCond):
//   - an empty And is true, an empty Or false; nested Ands and Ors flatten;
//   - each disjunct of an Or may assume the ones before it false: after
//     NotExists{A} the attribute exists, after Exists{A} it does not, so
//     later Exists{A} and NotExists{A} become constants;
//   - within an And, an ordered comparison of A (=, <, <=, >, >=) holds only
//     when A exists with the compared value's type, and a size comparison
//     other than <> only when A exists: Exists{A} and that IsType{A, ...}
//     next to them add nothing.
func simplify(c dynastore.Cond) (dynastore.Cond, truth) {
	return simplifyKnowing(c, nil)
}

// simplifyKnowing is simplify where known[A] tells whether attribute A is
// known to exist (absent from the map: unknown).
func simplifyKnowing(c dynastore.Cond, known map[string]bool) (dynastore.Cond, truth) {
	switch x := c.(type) {
	case nil:
		return nil, alwaysTrue
	case dynastore.Exists:
		if ex, ok := known[x.Attr]; ok {
			return nil, truthOf(ex)
		}
	case dynastore.NotExists:
		if ex, ok := known[x.Attr]; ok {
			return nil, truthOf(!ex)
		}
	case dynastore.And:
		var kept dynastore.And
		for _, sub := range x {
			s, t := simplifyKnowing(sub, known)
			switch t {
			case alwaysFalse:
				return nil, alwaysFalse
			case unknown:
				if inner, ok := s.(dynastore.And); ok {
					kept = append(kept, inner...)
				} else {
					kept = append(kept, s)
				}
			}
		}
		kept = dropImplied(kept)
		switch len(kept) {
		case 0:
			return nil, alwaysTrue
		case 1:
			return kept[0], unknown
		}
		return kept, unknown
	case dynastore.Or:
		var kept dynastore.Or
		for _, sub := range x {
			s, t := simplifyKnowing(sub, known)
			switch t {
			case alwaysTrue:
				return nil, alwaysTrue
			case unknown:
				if inner, ok := s.(dynastore.Or); ok {
					kept = append(kept, inner...)
				} else {
					kept = append(kept, s)
				}
				// The disjuncts after this one only matter when it is false.
				switch a := s.(type) {
				case dynastore.NotExists:
					known = withFact(known, a.Attr, true)
				case dynastore.Exists:
					known = withFact(known, a.Attr, false)
				}
			}
		}
		switch len(kept) {
		case 0:
			return nil, alwaysFalse
		case 1:
			return kept[0], unknown
		}
		return kept, unknown
	case dynastore.Not:
		s, t := simplifyKnowing(x.C, known)
		switch t {
		case alwaysTrue:
			return nil, alwaysFalse
		case alwaysFalse:
			return nil, alwaysTrue
		}
		return dynastore.Not{C: s}, unknown
	}
	return c, unknown
}

func truthOf(b bool) truth {
	if b {
		return alwaysTrue
	}
	return alwaysFalse
}

// withFact returns known plus "attr exists == ex", copying rather than
// changing known, which a caller up the tree still uses.
func withFact(known map[string]bool, attr string, ex bool) map[string]bool {
	out := make(map[string]bool, len(known)+1)
	for k, v := range known {
		out[k] = v
	}
	out[attr] = ex
	return out
}

// dropImplied removes from the conjuncts of an And the Exists and IsType
// conditions that another conjunct's comparison already implies.
func dropImplied(and dynastore.And) dynastore.And {
	type typed struct {
		attr string
		kind dynastore.Kind
	}
	exists := map[string]bool{}
	kinds := map[typed]bool{}
	for _, c := range and {
		switch x := c.(type) {
		case dynastore.Compare:
			if x.Op != dynastore.OpNE && x.Val != nil {
				exists[x.Attr] = true
				kinds[typed{x.Attr, x.Val.Kind()}] = true
			}
		case dynastore.SizeCompare:
			if x.Op != dynastore.OpNE {
				exists[x.Attr] = true
			}
		}
	}
	if len(exists) == 0 {
		return and
	}
	out := and[:0:0]
	for _, c := range and {
		switch x := c.(type) {
		case dynastore.Exists:
			if exists[x.Attr] {
				continue
			}
		case dynastore.IsType:
			if kinds[typed{x.Attr, x.Type}] {
				continue
			}
		}
		out = append(out, c)
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
	case dynastore.Lit:
		v, err := e.value(x.V)
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
