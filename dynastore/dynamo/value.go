package dynamo

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
)

// toAV converts a dynastore value to the SDK's attribute value.
func toAV(v dynastore.Value) (types.AttributeValue, error) {
	switch v := v.(type) {
	case dynastore.B:
		return &types.AttributeValueMemberB{Value: v}, nil
	case dynastore.N:
		return &types.AttributeValueMemberN{Value: string(v)}, nil
	case dynastore.S:
		return &types.AttributeValueMemberS{Value: string(v)}, nil
	case dynastore.BS:
		return &types.AttributeValueMemberBS{Value: v}, nil
	case dynastore.L:
		out := make([]types.AttributeValue, len(v))
		for i, e := range v {
			av, err := toAV(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case dynastore.M:
		out := make(map[string]types.AttributeValue, len(v))
		for k, e := range v {
			av, err := toAV(e)
			if err != nil {
				return nil, err
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	case dynastore.BOOL:
		return &types.AttributeValueMemberBOOL{Value: bool(v)}, nil
	case dynastore.NULL:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	default:
		return nil, badValue(v)
	}
}

// fromAV converts an SDK attribute value to a dynastore value. Types redamo
// never writes (SS, NS) are an error rather than a silent conversion.
func fromAV(av types.AttributeValue) (dynastore.Value, error) {
	switch av := av.(type) {
	case *types.AttributeValueMemberB:
		return dynastore.B(av.Value), nil
	case *types.AttributeValueMemberN:
		// DynamoDB Local returns arithmetic results as computed ("3.0",
		// "-3.50"); the service, and the Store contract, use one canonical form.
		if n, err := dynastore.CanonicalNumber(av.Value); err == nil {
			return n, nil
		}
		return dynastore.N(av.Value), nil
	case *types.AttributeValueMemberS:
		return dynastore.S(av.Value), nil
	case *types.AttributeValueMemberBS:
		return dynastore.BS(av.Value), nil
	case *types.AttributeValueMemberL:
		out := make(dynastore.L, len(av.Value))
		for i, e := range av.Value {
			v, err := fromAV(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case *types.AttributeValueMemberM:
		out := make(dynastore.M, len(av.Value))
		for k, e := range av.Value {
			v, err := fromAV(e)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case *types.AttributeValueMemberBOOL:
		return dynastore.BOOL(av.Value), nil
	case *types.AttributeValueMemberNULL:
		return dynastore.NULL{}, nil
	default:
		return nil, fmt.Errorf("dynamo: unsupported attribute type %T in table data", av)
	}
}

func toItem(it dynastore.Item) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(it))
	for _, a := range it {
		av, err := toAV(a.Value)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
		}
		out[a.Name] = av
	}
	return out, nil
}

// fromPage converts the items of a Query or Scan page and the key it
// stopped after (nil on the last page).
func fromPage(ms []map[string]types.AttributeValue, last map[string]types.AttributeValue) ([]dynastore.Item, *dynastore.Key, error) {
	items := make([]dynastore.Item, 0, len(ms))
	for _, m := range ms {
		it, err := fromItem(m)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, it)
	}
	if last == nil {
		return items, nil, nil
	}
	k, err := keyFromAV(last)
	if err != nil {
		return nil, nil, err
	}
	return items, &k, nil
}

// fromItem converts a returned item; an empty or nil map is a nil Item
// (DynamoDB returns no attributes for a missing item).
func fromItem(m map[string]types.AttributeValue) (dynastore.Item, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(dynastore.Item, 0, len(m))
	for k, av := range m {
		v, err := fromAV(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out = append(out, dynastore.Attr{Name: k, Value: v})
	}
	return out, nil
}

func keyAV(k dynastore.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		dynastore.AttrPK: &types.AttributeValueMemberB{Value: k.PK},
		dynastore.AttrSK: &types.AttributeValueMemberB{Value: k.SK},
	}
}

// keyFromAV reads a LastEvaluatedKey.
func keyFromAV(m map[string]types.AttributeValue) (dynastore.Key, error) {
	pk, ok1 := m[dynastore.AttrPK].(*types.AttributeValueMemberB)
	sk, ok2 := m[dynastore.AttrSK].(*types.AttributeValueMemberB)
	if !ok1 || !ok2 {
		return dynastore.Key{}, fmt.Errorf("dynamo: unexpected key shape %v", m)
	}
	return dynastore.Key{PK: pk.Value, SK: sk.Value}, nil
}

// keyOf reads a LastEvaluatedKey the direct path decoded.
func keyOf(it dynastore.Item) (dynastore.Key, error) {
	pk, ok1 := it.Get(dynastore.AttrPK).(dynastore.B)
	sk, ok2 := it.Get(dynastore.AttrSK).(dynastore.B)
	if !ok1 || !ok2 {
		return dynastore.Key{}, fmt.Errorf("dynamo: unexpected key shape %v", it.Sorted())
	}
	return dynastore.Key{PK: pk, SK: sk}, nil
}
