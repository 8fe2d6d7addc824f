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
// because they share the request's name and value maps.
type exprs struct {
	names  map[string]string // placeholder -> attribute name
	byName map[string]string // attribute name -> placeholder
	values map[string]types.AttributeValue
}

func newExprs() *exprs {
	return &exprs{}
}

func (e *exprs) name(attr string) string {
	if p, ok := e.byName[attr]; ok {
		return p
	}
	if e.names == nil {
		e.names = map[string]string{}
		e.byName = map[string]string{}
	}
	p := "#a" + strconv.Itoa(len(e.names))
	e.names[p] = attr
	e.byName[attr] = p
	return p
}

func (e *exprs) value(v dynastore.Value) (string, error) {
	av, err := toAV(v)
	if err != nil {
		return "", err
	}
	return e.av(av), nil
}

func (e *exprs) av(av types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = av
	return p
}

// Names and Values return the maps for the request (nil when empty: DynamoDB
// rejects empty maps).
func (e *exprs) Names() map[string]string                { return e.names }
func (e *exprs) Values() map[string]types.AttributeValue { return e.values }

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

// typeNames are attribute_type's type descriptors.
var typeNames = map[dynastore.Kind]string{
	dynastore.KindB: "B", dynastore.KindN: "N", dynastore.KindS: "S", dynastore.KindBS: "BS",
	dynastore.KindL: "L", dynastore.KindM: "M", dynastore.KindBOOL: "BOOL", dynastore.KindNULL: "NULL",
}

func (e *exprs) cond(b *strings.Builder, c dynastore.Cond) error {
	switch x := c.(type) {
	case dynastore.Exists:
		b.WriteString("attribute_exists(" + e.name(x.Attr) + ")")
	case dynastore.NotExists:
		b.WriteString("attribute_not_exists(" + e.name(x.Attr) + ")")
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
		b.WriteString(n + " " + op + " " + v)
	case dynastore.IsType:
		tn, ok := typeNames[x.Type]
		if !ok {
			return fmt.Errorf("%w: unknown attribute type %d", dynastore.ErrInvalid, x.Type)
		}
		n := e.name(x.Attr)
		b.WriteString("attribute_type(" + n + ", " + e.av(&types.AttributeValueMemberS{Value: tn}) + ")")
	case dynastore.SizeCompare:
		op, err := cmpOp(x.Op)
		if err != nil {
			return err
		}
		n := e.name(x.Attr)
		b.WriteString("size(" + n + ") " + op + " " + e.av(&types.AttributeValueMemberN{Value: strconv.FormatInt(x.Size, 10)}))
	case dynastore.BeginsWith:
		n := e.name(x.Attr)
		b.WriteString("begins_with(" + n + ", " + e.av(&types.AttributeValueMemberB{Value: x.Prefix}) + ")")
	case dynastore.Contains:
		n := e.name(x.Attr)
		v, err := e.value(x.Val)
		if err != nil {
			return err
		}
		b.WriteString("contains(" + n + ", " + v + ")")
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
	var clauses []string
	if len(u.Set) > 0 {
		parts := make([]string, len(u.Set))
		for i, s := range u.Set {
			n := e.name(s.Attr)
			v, err := e.operand(s.Val, true)
			if err != nil {
				return "", err
			}
			parts[i] = n + " = " + v
		}
		clauses = append(clauses, "SET "+strings.Join(parts, ", "))
	}
	if len(u.Remove) > 0 {
		parts := make([]string, len(u.Remove))
		for i, a := range u.Remove {
			parts[i] = e.name(a)
		}
		clauses = append(clauses, "REMOVE "+strings.Join(parts, ", "))
	}
	for _, act := range []struct {
		kw  string
		avs []dynastore.AttrValue
	}{{"ADD", u.Add}, {"DELETE", u.Delete}} {
		if len(act.avs) == 0 {
			continue
		}
		parts := make([]string, len(act.avs))
		for i, a := range act.avs {
			n := e.name(a.Attr)
			v, err := e.value(a.Val)
			if err != nil {
				return "", err
			}
			parts[i] = n + " " + v
		}
		clauses = append(clauses, act.kw+" "+strings.Join(parts, ", "))
	}
	return strings.Join(clauses, " "), nil
}

// operand renders the right-hand side of SET. DynamoDB's grammar allows one
// + or - or list_append at the top, whose arguments are paths, values or
// if_not_exists (checked on DynamoDB Local); deeper nesting is a
// ValidationException there, and is rejected here before the round trip.
func (e *exprs) operand(o dynastore.Operand, top bool) (string, error) {
	switch x := o.(type) {
	case dynastore.Lit:
		return e.value(x.V)
	case dynastore.Ref:
		return e.name(x.Attr), nil
	case dynastore.IfNotExists:
		n := e.name(x.Attr)
		v, err := e.value(x.Default)
		if err != nil {
			return "", err
		}
		return "if_not_exists(" + n + ", " + v + ")", nil
	case dynastore.Plus:
		return e.arith(x.A, x.B, " + ", top)
	case dynastore.Minus:
		return e.arith(x.A, x.B, " - ", top)
	case dynastore.ListAppend:
		if !top {
			return "", fmt.Errorf("%w: Invalid UpdateExpression: The function is not allowed to be used this way in an expression; function: list_append", dynastore.ErrInvalid)
		}
		ls, err := e.operand(x.A, false)
		if err != nil {
			return "", err
		}
		rs, err := e.operand(x.B, false)
		if err != nil {
			return "", err
		}
		return "list_append(" + ls + ", " + rs + ")", nil
	case nil:
		return "", fmt.Errorf("%w: nil operand", dynastore.ErrInvalid)
	}
	return "", fmt.Errorf("%w: unsupported operand %T", dynastore.ErrInvalid, o)
}

func (e *exprs) arith(a, b dynastore.Operand, sign string, top bool) (string, error) {
	if !top {
		return "", fmt.Errorf("%w: Invalid UpdateExpression: Syntax error; token: %q", dynastore.ErrInvalid, strings.TrimSpace(sign))
	}
	as, err := e.operand(a, false)
	if err != nil {
		return "", err
	}
	bs, err := e.operand(b, false)
	if err != nil {
		return "", err
	}
	return as + sign + bs, nil
}

// ---- key conditions --------------------------------------------------------

// KeyCond renders a Query's KeyConditionExpression.
func (e *exprs) KeyCond(q dynastore.Query) (string, error) {
	pk := e.name(dynastore.AttrPK) + " = " + e.av(&types.AttributeValueMemberB{Value: q.PK})
	if q.Op == dynastore.SKAll {
		return pk, nil
	}
	sk := e.name(dynastore.AttrSK)
	a := e.av(&types.AttributeValueMemberB{Value: q.A})
	var c string
	switch q.Op {
	case dynastore.SKEq:
		c = sk + " = " + a
	case dynastore.SKLT:
		c = sk + " < " + a
	case dynastore.SKLE:
		c = sk + " <= " + a
	case dynastore.SKGT:
		c = sk + " > " + a
	case dynastore.SKGE:
		c = sk + " >= " + a
	case dynastore.SKBetween:
		c = sk + " BETWEEN " + a + " AND " + e.av(&types.AttributeValueMemberB{Value: q.B})
	case dynastore.SKBeginsWith:
		c = "begins_with(" + sk + ", " + a + ")"
	default:
		return "", fmt.Errorf("%w: unknown sort key operator %d", dynastore.ErrInvalid, q.Op)
	}
	return pk + " AND " + c, nil
}
