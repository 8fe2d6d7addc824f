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
	"github.com/redamo/redamo/dynastore/retry"
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
	reqs := make([]itemRequest, len(actions))
	size := 0
	seen := make(map[string]bool, len(actions))
	for i, a := range actions {
		n, err := txItem(a, &reqs[i])
		if err != nil {
			return fmt.Errorf("transaction action %d: %w", i, err)
		}
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
	if s.wire == nil {
		return s.sdkTransact(ctx, reqs)
	}
	return s.wireTransact(ctx, reqs)
}

// wireTransact sends a transaction on the direct path.
func (s *Store) wireTransact(ctx context.Context, reqs []itemRequest) error {
	wr := newWireRequest(dynastore.OpTransactWriteItems)
	defer wr.release()
	b := append(*wr.buf, `{"TransactItems":[`...)
	for i := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"`...)
		b = append(b, txMembers[reqs[i].op]...)
		b = append(b, `":`...)
		var err error
		if b, err = reqs[i].appendJSON(b, s.table, true); err != nil {
			*wr.buf = b
			return fmt.Errorf("transaction action %d: %w", i, err)
		}
		b = append(b, '}')
	}
	b = append(b, `],"ReturnConsumedCapacity":"TOTAL","ClientRequestToken":`...)
	*wr.buf = b
	prefix := len(b)
	// The token ends the body, so a new one rewrites only the end.
	setToken := func(token string) {
		b := appendString((*wr.buf)[:prefix], token)
		*wr.buf = append(b, '}')
		wr.seal()
	}
	setToken(newToken())
	renew := false
	return s.call(ctx, dynastore.OpTransactWriteItems, retry.Idempotent, func(ctx context.Context, r *dynastore.Request) error {
		if renew {
			setToken(newToken())
			renew = false
		}
		var out wireOutput
		err := s.wire.send(ctx, wr, &out)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.code == codeTxCanceled {
				err = txCanceled(ae.reasons)
				var rt *retry.Failure
				renew = errors.As(err, &rt)
			}
			return err
		}
		out.cc.addTo(r, true)
		return nil
	})
}

// sdkTransact sends a transaction through the SDK.
func (s *Store) sdkTransact(ctx context.Context, reqs []itemRequest) error {
	items := make([]types.TransactWriteItem, len(reqs))
	for i := range reqs {
		ti, err := s.sdkTxItem(&reqs[i])
		if err != nil {
			return fmt.Errorf("transaction action %d: %w", i, err)
		}
		items[i] = ti
	}
	in := &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	token, renew := newToken(), false
	return s.call(ctx, dynastore.OpTransactWriteItems, retry.Idempotent, func(ctx context.Context, r *dynastore.Request) error {
		if renew {
			token, renew = newToken(), false
		}
		in.ClientRequestToken = aws.String(token)
		out, err := s.db.TransactWriteItems(ctx, in)
		if err != nil {
			err = sdkCanceled(err)
			var rt *retry.Failure
			renew = errors.As(err, &rt)
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

// txItem renders one action into r and returns its size towards MaxTxSize.
func txItem(a dynastore.TxAction, r *itemRequest) (int, error) {
	if err := dynastore.ValidateCond(a.Cond); err != nil {
		return 0, err
	}
	e := newExprs()
	cond, err := e.Cond(a.Cond)
	if err != nil {
		return 0, err
	}
	size := 0
	switch a.Op {
	case dynastore.TxPut:
		norm, n, err := dynastore.NormalizeItemSize(a.Item)
		if err != nil {
			return 0, err
		}
		size = n
		*r = itemRequest{op: dynastore.OpPutItem, item: norm}
	case dynastore.TxUpdate:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return 0, err
		}
		if a.Update == nil {
			return 0, fmt.Errorf("%w: update action without an update", dynastore.ErrInvalid)
		}
		if err := dynastore.ValidateUpdate(*a.Update); err != nil {
			return 0, err
		}
		// A fresh exprs: the update's placeholders come first, as in UpdateItem.
		e = newExprs()
		upd, err := e.Update(*a.Update)
		if err != nil {
			return 0, err
		}
		if upd == "" {
			// Unlike UpdateItem, a transaction's Update needs an expression.
			return 0, fmt.Errorf("%w: a transactional update needs at least one action", dynastore.ErrInvalid)
		}
		if cond, err = e.Cond(a.Cond); err != nil {
			return 0, err
		}
		size = keySize(a.Key) + dynastore.UpdatePayloadSize(a.Update)
		*r = itemRequest{op: dynastore.OpUpdateItem, key: a.Key, update: upd}
	case dynastore.TxDelete:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return 0, err
		}
		size = keySize(a.Key)
		*r = itemRequest{op: dynastore.OpDeleteItem, key: a.Key}
	case dynastore.TxCheck:
		if err := dynastore.ValidateKey(a.Key); err != nil {
			return 0, err
		}
		if a.Cond == nil {
			return 0, fmt.Errorf("%w: condition check without a condition", dynastore.ErrInvalid)
		}
		if cond == "" {
			// Always true, but ConditionCheck requires an expression; any
			// attribute either exists or does not.
			p := e.name(dynastore.AttrPK)
			cond = "attribute_not_exists(" + p + ") OR attribute_exists(" + p + ")"
		}
		size = keySize(a.Key)
		*r = itemRequest{op: opConditionCheck, key: a.Key}
	default:
		return 0, fmt.Errorf("%w: unknown transaction action %d", dynastore.ErrInvalid, a.Op)
	}
	r.cond, r.e, r.oldOnFail = cond, e, a.OldOnFailure && cond != ""
	return size, nil
}

func keySize(k dynastore.Key) int {
	return len(dynastore.AttrPK) + len(k.PK) + len(dynastore.AttrSK) + len(k.SK)
}

// txReason is one cancellation reason as DynamoDB gives it.
type txReason struct {
	code, message string
	item          dynastore.Item
}

// sdkReasons converts the SDK's cancellation reasons.
func sdkReasons(rs []types.CancellationReason) ([]txReason, error) {
	out := make([]txReason, len(rs))
	for i, r := range rs {
		old, err := fromItem(r.Item)
		if err != nil {
			return nil, err
		}
		out[i] = txReason{code: aws.ToString(r.Code), message: aws.ToString(r.Message), item: old}
	}
	return out, nil
}

// sdkCanceled is the error of an SDK transaction request: a
// TransactionCanceledException's reasons as txCanceled reads them, any
// other error as it is.
func sdkCanceled(err error) error {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return err
	}
	reasons, rerr := sdkReasons(tc.CancellationReasons)
	if rerr != nil {
		return rerr
	}
	return txCanceled(reasons)
}

// txCanceled turns a TransactionCanceledException's reasons into a
// *dynastore.TxCanceledError, or into a retry.Failure when every reason is
// transient (TxCanceledError.Transient) so the transaction is worth sending
// again.
func txCanceled(rs []txReason) error {
	reasons := make([]dynastore.TxReason, len(rs))
	var kind error
	for i, r := range rs {
		code := r.code
		if code == "" {
			code = dynastore.ReasonNone
		}
		reasons[i] = dynastore.TxReason{Code: code, Old: r.item}
		switch code {
		case dynastore.ReasonValidation:
			kind = validationKind(r.message)
		case dynastore.ReasonItemTooLarge:
			kind = dynastore.ErrItemTooLarge
		}
	}
	txErr := &dynastore.TxCanceledError{Reasons: reasons}
	if k := txErr.Transient(); k != nil {
		// A cancellation under the token of the attempts before proves
		// that none of them was applied (DynamoDB would have answered
		// success for it).
		return &retry.Failure{Err: txErr, Class: retry.Unapplied, Kind: k, Settles: true}
	}
	if kind != nil {
		return fmt.Errorf("%w: %w", kind, txErr)
	}
	return txErr
}

// GetSnapshot implements dynastore.SnapshotReader with one TransactGetItems
// (through the SDK's client: it is no hot request). A cancellation whose
// reasons are only TransactionConflict (a write transaction in progress on
// one of the items) or throttling is retried like any transient error.
func (s *Store) GetSnapshot(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	switch {
	case len(keys) == 0:
		return nil, fmt.Errorf("%w: a transaction needs at least one item", dynastore.ErrInvalid)
	case len(keys) > dynastore.MaxTxActions:
		return nil, fmt.Errorf("%w: %d items (max %d)", dynastore.ErrTxTooLarge, len(keys), dynastore.MaxTxActions)
	}
	items := make([]types.TransactGetItem, len(keys))
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if err := dynastore.ValidateKey(k); err != nil {
			return nil, err
		}
		if seen[keyString(k)] {
			return nil, fmt.Errorf("%w: Transaction request cannot include multiple operations on one item", dynastore.ErrInvalid)
		}
		seen[keyString(k)] = true
		items[i] = types.TransactGetItem{Get: &types.Get{TableName: &s.table, Key: keyAV(k)}}
	}
	in := &dynamodb.TransactGetItemsInput{TransactItems: items, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	out := make([]dynastore.Item, len(keys))
	err := s.call(ctx, dynastore.OpTransactGetItems, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		res, err := s.db.TransactGetItems(ctx, in)
		if err != nil {
			return sdkCanceled(err)
		}
		for i := range res.ConsumedCapacity {
			addCapacity(r, &res.ConsumedCapacity[i], false)
		}
		if len(res.Responses) != len(keys) {
			return fmt.Errorf("dynamo: TransactGetItems answered %d items for %d keys", len(res.Responses), len(keys))
		}
		for i, ir := range res.Responses {
			if out[i], err = fromItem(ir.Item); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
