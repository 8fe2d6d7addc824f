package dynamo

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
)

// Transact implements dynastore.Store with one TransactWriteItems.
//
// Every attempt carries a ClientRequestToken, which makes DynamoDB apply the
// transaction at most once however often it is sent: an attempt that timed
// out is repeated with the same token (if the first one was applied, the
// repeat reports success without applying it again). A cancellation whose
// reasons are only TransactionConflict or throttling is retried with a new
// token; any other cancellation is final.
func (s *Store) Transact(ctx context.Context, actions []dynastore.TxAction) error {
	if len(actions) == 0 {
		// As DynamoDB: TransactItems must have at least one member.
		return fmt.Errorf("%w: a transaction needs at least one action", dynastore.ErrInvalid)
	}
	if len(actions) > dynastore.MaxTxActions {
		return fmt.Errorf("%w: %d actions (max %d)", dynastore.ErrTxTooLarge, len(actions), dynastore.MaxTxActions)
	}
	items := make([]types.TransactWriteItem, len(actions))
	size := 0
	seen := make(map[string]bool, len(actions))
	for i, a := range actions {
		ti, n, err := s.txItem(a)
		if err != nil {
			return fmt.Errorf("transaction action %d: %w", i, err)
		}
		items[i] = ti
		size += n
		// DynamoDB rejects this too, but DynamoDB Local lets a condition
		// check and a write of one item through.
		k := a.Key
		if a.Op == dynastore.TxPut {
			k = a.Item.Key()
		}
		if seen[keyString(k)] {
			return fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
		}
		seen[keyString(k)] = true
	}
	if size > dynastore.MaxTxSize {
		return fmt.Errorf("%w: %d bytes (max %d)", dynastore.ErrTxTooLarge, size, dynastore.MaxTxSize)
	}
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	token, renew := newToken(), false
	return s.call(ctx, dynastore.OpTransactWriteItems, retrySafe, func(ctx context.Context, r *dynastore.Request) error {
		if renew {
			token, renew = newToken(), false
		}
		in.ClientRequestToken = aws.String(token)
		out, err := s.db.TransactWriteItems(ctx, in)
		if err != nil {
			var tc *types.TransactionCanceledException
			if errors.As(err, &tc) {
				err = txCanceled(tc)
				var rt *errRetry
				renew = errors.As(err, &rt)
			}
			return err
		}
		for i := range out.ConsumedCapacity {
			addCapacity(r, &out.ConsumedCapacity[i], true)
		}
		return nil
	})
}

// newToken returns a ClientRequestToken (at most 36 characters).
func newToken() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b[:])
}

// txItem converts one action and returns its size towards MaxTxSize.
func (s *Store) txItem(a dynastore.TxAction) (types.TransactWriteItem, int, error) {
	var ti types.TransactWriteItem
	if err := dynastore.ValidateCond(a.Cond); err != nil {
		return ti, 0, err
	}
	e := newExprs()
	cond, err := e.Cond(a.Cond)
	if err != nil {
		return ti, 0, err
	}
	size := 0
	switch a.Op {
	case dynastore.TxPut:
		norm, err := dynastore.NormalizeItem(a.Item)
		if err != nil {
			return ti, 0, err
		}
		av, err := toItem(norm)
		if err != nil {
			return ti, 0, err
		}
		size = dynastore.ItemSize(norm)
		ti.Put = &types.Put{
			TableName:                           &s.table,
			Item:                                av,
			ConditionExpression:                 optString(cond),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: onFailure(a.OldOnFailure, cond),
		}
	case dynastore.TxUpdate:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return ti, 0, err
		}
		if a.Update == nil {
			return ti, 0, fmt.Errorf("%w: update action without an update", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateUpdate(*a.Update); err != nil {
			return ti, 0, err
		}
		// A fresh exprs: the update's placeholders come first, as in UpdateItem.
		e = newExprs()
		upd, err := e.Update(*a.Update)
		if err != nil {
			return ti, 0, err
		}
		if upd == "" {
			// Unlike UpdateItem, a transaction's Update needs an expression.
			return ti, 0, fmt.Errorf("%w: a transactional update needs at least one action", dynastore.ErrInvalid)
		}
		cond, err := e.Cond(a.Cond)
		if err != nil {
			return ti, 0, err
		}
		size = keySize(a.Key) + updateSize(*a.Update)
		ti.Update = &types.Update{
			TableName:                           &s.table,
			Key:                                 keyAV(a.Key),
			UpdateExpression:                    &upd,
			ConditionExpression:                 optString(cond),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: onFailure(a.OldOnFailure, cond),
		}
	case dynastore.TxDelete:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return ti, 0, err
		}
		size = keySize(a.Key)
		ti.Delete = &types.Delete{
			TableName:                           &s.table,
			Key:                                 keyAV(a.Key),
			ConditionExpression:                 optString(cond),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: onFailure(a.OldOnFailure, cond),
		}
	case dynastore.TxCheck:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return ti, 0, err
		}
		if a.Cond == nil {
			return ti, 0, fmt.Errorf("%w: condition check without a condition", dynastore.ErrInvalid)
		}
		if cond == "" {
			// Always true, but ConditionCheck requires an expression; any
			// attribute either exists or does not.
			p := e.name(dynastore.AttrPK)
			cond = "attribute_not_exists(" + p + ") OR attribute_exists(" + p + ")"
		}
		size = keySize(a.Key)
		ti.ConditionCheck = &types.ConditionCheck{
			TableName:                           &s.table,
			Key:                                 keyAV(a.Key),
			ConditionExpression:                 &cond,
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: onFailure(a.OldOnFailure, cond),
		}
	default:
		return ti, 0, fmt.Errorf("%w: unknown transaction action %d", dynastore.ErrInvalid, a.Op)
	}
	return ti, size, nil
}

func keySize(k dynastore.Key) int {
	return len(dynastore.AttrPK) + len(k.PK) + len(dynastore.AttrSK) + len(k.SK)
}

// updateSize is what an update sends: its names and literal values.
func updateSize(u dynastore.Update) int {
	n := 0
	for _, s := range u.Set {
		n += len(s.Attr) + operandSize(s.Val)
	}
	for _, a := range u.Remove {
		n += len(a)
	}
	for _, av := range append(append([]dynastore.AttrValue(nil), u.Add...), u.Delete...) {
		n += dynastore.ItemSize(dynastore.Item{av.Attr: av.Val})
	}
	return n
}

func operandSize(o dynastore.Operand) int {
	switch x := o.(type) {
	case dynastore.Lit:
		return dynastore.ItemSize(dynastore.Item{"": x.V})
	case dynastore.IfNotExists:
		return len(x.Attr) + dynastore.ItemSize(dynastore.Item{"": x.Default})
	case dynastore.Ref:
		return len(x.Attr)
	case dynastore.Plus:
		return operandSize(x.A) + operandSize(x.B)
	case dynastore.Minus:
		return operandSize(x.A) + operandSize(x.B)
	case dynastore.ListAppend:
		return operandSize(x.A) + operandSize(x.B)
	}
	return 0
}

// txCanceled turns a TransactionCanceledException into a
// *dynastore.TxCanceledError, or into an errRetry when every reason is
// transient (conflict, throttling) so the transaction is worth sending again.
func txCanceled(tc *types.TransactionCanceledException) error {
	reasons := make([]dynastore.TxReason, len(tc.CancellationReasons))
	transient, conflict, throttled := true, false, false
	var kind error
	for i, r := range tc.CancellationReasons {
		code := aws.ToString(r.Code)
		if code == "" {
			code = dynastore.ReasonNone
		}
		old, err := fromItem(r.Item)
		if err != nil {
			return err
		}
		reasons[i] = dynastore.TxReason{Code: code, Old: old}
		switch code {
		case dynastore.ReasonNone:
		case dynastore.ReasonConflict:
			conflict = true
		case dynastore.ReasonThrottled, "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			throttled = true
		case dynastore.ReasonValidation:
			transient = false
			kind = validationKind(aws.ToString(r.Message))
		case dynastore.ReasonItemTooLarge:
			transient = false
			kind = dynastore.ErrItemTooLarge
		default:
			transient = false
		}
	}
	txErr := &dynastore.TxCanceledError{Reasons: reasons}
	switch {
	case transient && conflict:
		return &errRetry{cause: txErr, kind: dynastore.ErrTxConflict}
	case transient && throttled:
		return &errRetry{cause: txErr, kind: dynastore.ErrThrottled}
	case kind != nil:
		return fmt.Errorf("%w: %w", kind, txErr)
	}
	return txErr
}
