package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
)

// opConditionCheck names a transaction's condition check in an itemRequest
// (the other actions use the names of the single-item operations).
const opConditionCheck = "ConditionCheck"

// itemRequest is one single-item request, or one action of a transaction,
// with its expressions rendered: the SDK path turns it into the SDK's
// input (sdkItem, sdkTxItem), the direct path into JSON (appendJSON), so
// that both send the same request.
type itemRequest struct {
	op        string         // dynastore.OpGetItem, OpPutItem, OpUpdateItem, OpDeleteItem, opConditionCheck
	key       dynastore.Key  // all but PutItem
	item      dynastore.Item // PutItem: normalized
	update    string         // UpdateItem: "" for none
	cond      string         // "" for none
	e         *exprs         // nil for GetItem
	ret       dynastore.ReturnValues
	oldOnFail bool // ReturnValuesOnConditionCheckFailure ALL_OLD (only with a condition)
}

func returnValue(rv dynastore.ReturnValues) types.ReturnValue {
	switch rv {
	case dynastore.ReturnAllOld:
		return types.ReturnValueAllOld
	case dynastore.ReturnAllNew:
		return types.ReturnValueAllNew
	case dynastore.ReturnUpdatedOld:
		return types.ReturnValueUpdatedOld
	case dynastore.ReturnUpdatedNew:
		return types.ReturnValueUpdatedNew
	}
	return types.ReturnValueNone
}

func (r *itemRequest) onFailure() types.ReturnValuesOnConditionCheckFailure {
	if r.oldOnFail {
		return types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return ""
}

// names and values are the request's expression maps (nil when empty).
func (r *itemRequest) names() map[string]string {
	if r.e == nil {
		return nil
	}
	return r.e.Names()
}

func (r *itemRequest) values() map[string]types.AttributeValue {
	if r.e == nil {
		return nil
	}
	return r.e.Values()
}

// sdkSend makes one attempt of a single-item request through the SDK and
// returns the item or attributes of its answer and the capacity it consumed.
type sdkSend func(ctx context.Context) (map[string]types.AttributeValue, *types.ConsumedCapacity, error)

// sdkItem builds the SDK input of a single-item request, once for all
// its attempts.
func (s *Store) sdkItem(r *itemRequest) (sdkSend, error) {
	switch r.op {
	case dynastore.OpGetItem:
		in := &dynamodb.GetItemInput{
			TableName:              &s.table,
			Key:                    keyAV(r.key),
			ConsistentRead:         aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		}
		return func(ctx context.Context) (map[string]types.AttributeValue, *types.ConsumedCapacity, error) {
			out, err := s.db.GetItem(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			return out.Item, out.ConsumedCapacity, nil
		}, nil
	case dynastore.OpPutItem:
		av, err := toItem(r.item)
		if err != nil {
			return nil, err
		}
		in := &dynamodb.PutItemInput{
			TableName:                           &s.table,
			Item:                                av,
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValues:                        returnValue(r.ret),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		}
		return func(ctx context.Context) (map[string]types.AttributeValue, *types.ConsumedCapacity, error) {
			out, err := s.db.PutItem(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			return out.Attributes, out.ConsumedCapacity, nil
		}, nil
	case dynastore.OpUpdateItem:
		in := &dynamodb.UpdateItemInput{
			TableName:                           &s.table,
			Key:                                 keyAV(r.key),
			UpdateExpression:                    optString(r.update),
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValues:                        returnValue(r.ret),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		}
		return func(ctx context.Context) (map[string]types.AttributeValue, *types.ConsumedCapacity, error) {
			out, err := s.db.UpdateItem(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			return out.Attributes, out.ConsumedCapacity, nil
		}, nil
	case dynastore.OpDeleteItem:
		in := &dynamodb.DeleteItemInput{
			TableName:                           &s.table,
			Key:                                 keyAV(r.key),
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValues:                        returnValue(r.ret),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		}
		return func(ctx context.Context) (map[string]types.AttributeValue, *types.ConsumedCapacity, error) {
			out, err := s.db.DeleteItem(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			return out.Attributes, out.ConsumedCapacity, nil
		}, nil
	}
	return nil, fmt.Errorf("dynamo: %s is not a single-item request", r.op)
}

// sdkTxItem builds the SDK's form of a transaction action.
func (s *Store) sdkTxItem(r *itemRequest) (types.TransactWriteItem, error) {
	var ti types.TransactWriteItem
	switch r.op {
	case dynastore.OpPutItem:
		av, err := toItem(r.item)
		if err != nil {
			return ti, err
		}
		ti.Put = &types.Put{
			TableName:                           &s.table,
			Item:                                av,
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
		}
	case dynastore.OpUpdateItem:
		ti.Update = &types.Update{
			TableName:                           &s.table,
			Key:                                 keyAV(r.key),
			UpdateExpression:                    aws.String(r.update),
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
		}
	case dynastore.OpDeleteItem:
		ti.Delete = &types.Delete{
			TableName:                           &s.table,
			Key:                                 keyAV(r.key),
			ConditionExpression:                 optString(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
		}
	case opConditionCheck:
		ti.ConditionCheck = &types.ConditionCheck{
			TableName:                           &s.table,
			Key:                                 keyAV(r.key),
			ConditionExpression:                 aws.String(r.cond),
			ExpressionAttributeNames:            r.names(),
			ExpressionAttributeValues:           r.values(),
			ReturnValuesOnConditionCheckFailure: r.onFailure(),
		}
	default:
		return ti, fmt.Errorf("dynamo: %s is not a transaction action", r.op)
	}
	return ti, nil
}

// txMembers are the TransactWriteItem member names of the actions.
var txMembers = map[string]string{
	dynastore.OpPutItem:    "Put",
	dynastore.OpUpdateItem: "Update",
	dynastore.OpDeleteItem: "Delete",
	opConditionCheck:       "ConditionCheck",
}

// appendJSON appends the request's JSON body; inTx: as an action of
// TransactWriteItems, which carries no ReturnValues, ConsistentRead or
// ReturnConsumedCapacity of its own.
func (r *itemRequest) appendJSON(b []byte, table string, inTx bool) ([]byte, error) {
	b = append(b, `{"TableName":`...)
	b = appendString(b, table)
	var err error
	if r.op == dynastore.OpPutItem {
		b = append(b, `,"Item":`...)
		if b, err = appendItem(b, r.item); err != nil {
			return b, err
		}
	} else {
		b = append(b, `,"Key":`...)
		b = appendKey(b, r.key)
	}
	if r.update != "" {
		b = append(b, `,"UpdateExpression":`...)
		b = appendString(b, r.update)
	}
	if r.cond != "" {
		b = append(b, `,"ConditionExpression":`...)
		b = appendString(b, r.cond)
	}
	if r.e != nil {
		if b, err = r.e.appendJSON(b); err != nil {
			return b, err
		}
	}
	if !inTx {
		if r.op == dynastore.OpGetItem {
			b = append(b, `,"ConsistentRead":true`...)
		} else {
			b = append(b, `,"ReturnValues":"`...)
			b = append(b, returnValue(r.ret)...)
			b = append(b, '"')
		}
		b = append(b, `,"ReturnConsumedCapacity":"TOTAL"`...)
	}
	if r.oldOnFail {
		b = append(b, `,"ReturnValuesOnConditionCheckFailure":"ALL_OLD"`...)
	}
	return append(b, '}'), nil
}
