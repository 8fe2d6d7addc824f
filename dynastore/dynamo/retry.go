package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

// The SDK's own retryer is off (it waits up to seconds and keeps a client-side
// retry quota); requests go through dynastore/retry's runner instead, and
// this file sorts DynamoDB's answers into its failure classes.

var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
	"TooManyRequestsException":               true,
}

// classify sorts one attempt's error. attemptCtx is the attempt's context,
// wrote whether the whole request was written to a connection.
//
// Both paths report errors in the SDK's shapes: an error response is a
// smithy.APIError (the SDK's types, or the direct path's apiError) inside a
// smithyhttp.ResponseError that carries the status.
func classify(err error, attemptCtx context.Context, wrote bool) *retry.Failure {
	var (
		api smithy.APIError
		re  *smithyhttp.ResponseError
	)
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode() // 0 when no response arrived
	}
	unknown := retry.Unknown
	if !wrote {
		unknown = retry.Unapplied
	}
	isAPI := errors.As(err, &api)
	switch {
	case isAPI && (api.ErrorCode() == codeConditionFailed || api.ErrorCode() == codeTxCanceled):
		// Transactions sort their cancellations themselves (txCanceled).
		return &retry.Failure{Err: err, Class: retry.Final}
	case isAPI:
		// A whole error response was read: its code says what happened.
		switch {
		case throttleCodes[api.ErrorCode()]:
			return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrThrottled}
		case api.ErrorCode() == "TransactionConflictException":
			// A single-item write hit an item a transaction is writing.
			return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrTxConflict}
		case api.ErrorCode() == "TransactionInProgressException":
			// The same ClientRequestToken is still being processed: ask
			// again, until a retry comes after TxInProgressRetry.
			return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrUnavailable, MinRetry: TxInProgressRetry}
		case status == 503:
			return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrUnavailable}
		case status >= 500:
			return &retry.Failure{Err: err, Class: retry.Unknown, Kind: dynastore.ErrUnavailable}
		}
		return &retry.Failure{Err: err, Class: retry.Final}
	case attemptCtx.Err() != nil:
		// The attempt timed out, possibly while reading a response (the SDK
		// then reports the response's status with a read error).
		return &retry.Failure{Err: err, Class: unknown, Kind: dynastore.ErrUnavailable, Timeout: true}
	case status == 503:
		return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrUnavailable}
	case status >= 500:
		return &retry.Failure{Err: err, Class: retry.Unknown, Kind: dynastore.ErrUnavailable}
	case status >= 200 && status < 300:
		// A success whose body could not be read: a write happened, but
		// what it returned is lost.
		return &retry.Failure{Err: err, Class: retry.Unknown, Kind: dynastore.ErrUnavailable}
	case status != 0:
		return &retry.Failure{Err: err, Class: retry.Final}
	}
	// No response: the connection failed.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &retry.Failure{Err: err, Class: retry.Unapplied, Kind: dynastore.ErrUnavailable}
	}
	if isNetErr(err) {
		return &retry.Failure{Err: err, Class: unknown, Kind: dynastore.ErrUnavailable, Timeout: true}
	}
	return &retry.Failure{Err: err, Class: retry.Final}
}

func isNetErr(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var rse *smithyhttp.RequestSendError
	return errors.As(err, &rse) || errors.Is(err, context.DeadlineExceeded)
}

// errorDetail is the short form of an SDK error for messages: the API error
// code and message when there is one, without request ids.
func errorDetail(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		if m := api.ErrorMessage(); m != "" {
			return api.ErrorCode() + ": " + m
		}
		return api.ErrorCode()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d", re.HTTPStatusCode())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "request timed out"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return err.Error()
}

// mapFinal turns a non-retried SDK error into the store's error.
func mapFinal(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		msg := api.ErrorMessage()
		switch api.ErrorCode() {
		case "ValidationException":
			return fmt.Errorf("%w: %s", validationKind(msg), msg)
		case "ItemCollectionSizeLimitExceededException":
			return fmt.Errorf("%w: %s", dynastore.ErrItemTooLarge, msg)
		case "IdempotentParameterMismatchException", "SerializationException":
			return fmt.Errorf("%w: %s", dynastore.ErrInvalid, msg)
		}
	}
	var inv smithy.InvalidParamsError
	if errors.As(err, &inv) {
		return fmt.Errorf("%w: %s", dynastore.ErrInvalid, inv.Error())
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}

// validationKind sorts ValidationException messages by what they mean; the
// substrings cover both DynamoDB's and DynamoDB Local's wording.
func validationKind(msg string) error {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "item size") && strings.Contains(m, "exceeded"):
		return dynastore.ErrItemTooLarge
	case strings.Contains(m, "transaction payload size"),
		strings.Contains(m, "transaction request cannot be larger"),
		strings.Contains(m, "member must have length less than or equal to 100"):
		return dynastore.ErrTxTooLarge
	case strings.Contains(m, "primary key values must be under"),
		strings.Contains(m, "size of hashkey has exceeded"),
		strings.Contains(m, "range key") && strings.Contains(m, "exceeded"),
		strings.Contains(m, "key attribute cannot contain an empty"):
		return dynastore.ErrKeyTooLarge
	}
	return dynastore.ErrInvalid
}
