package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/retry"
)

// DynamoDB Local never throttles, fails or reports a TransactionConflict, so
// these tests put a fault injector between the SDK and it.

type faultKind int

const (
	passThrough      faultKind = iota
	throttle                   // 400 ThrottlingException: rejected, not applied
	provisioned                // 400 ProvisionedThroughputExceededException
	serverError                // 500 InternalServerError: may have been applied
	unavailable                // 503 ServiceUnavailable: not applied
	hangBefore                 // never sends the request; hangs until the attempt times out
	hangAfter                  // sends the request (it is applied), then hangs
	refused                    // connection refused
	txConflict                 // TransactionCanceledException, one TransactionConflict reason
	unprocessed                // BatchGetItem answers with every key unprocessed
	conditionOnly              // TransactionCanceledException with a ConditionalCheckFailed reason
	txThrottled                // TransactionCanceledException, every reason ThrottlingError
	txThrottledOne             // TransactionCanceledException, one ThrottlingError reason, the others None
	serverErrorAfter           // the request is applied, then answered 500 InternalServerError
	txInProgress               // 400 TransactionInProgressException: the token is still being processed
)

// injector is an aws.HTTPClient that applies queued faults to the requests
// of one operation and passes everything else to a real client.
type injector struct {
	next aws.HTTPClient

	mu     sync.Mutex
	faults map[string][]faultKind // op -> faults for its next requests
	always map[string]faultKind   // op -> fault for every request
	calls  map[string]int
}

func newInjector() *injector {
	return &injector{next: dynamo.NewHTTPClient(), faults: map[string][]faultKind{}, always: map[string]faultKind{}, calls: map[string]int{}}
}

func (in *injector) queue(op string, fs ...faultKind) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults[op] = append(in.faults[op], fs...)
}

func (in *injector) forever(op string, f faultKind) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.always[op] = f
}

func (in *injector) count(op string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.calls[op]
}

func (in *injector) Do(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	in.mu.Lock()
	in.calls[op]++
	f := in.always[op]
	if f == passThrough && len(in.faults[op]) > 0 {
		f = in.faults[op][0]
		in.faults[op] = in.faults[op][1:]
	}
	in.mu.Unlock()

	switch f {
	case throttle:
		return apiError(req, 400, "ThrottlingException", `"message":"Rate of requests exceeds the allowed throughput."`), nil
	case provisioned:
		return apiError(req, 400, "ProvisionedThroughputExceededException", `"message":"The level of configured provisioned throughput for the table was exceeded."`), nil
	case serverError:
		return apiError(req, 500, "InternalServerError", `"message":"Internal server error"`), nil
	case unavailable:
		return apiError(req, 503, "ServiceUnavailable", `"message":"Service unavailable"`), nil
	case hangBefore:
		<-req.Context().Done()
		return nil, req.Context().Err()
	case hangAfter:
		resp, err := in.next.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		<-req.Context().Done()
		return nil, req.Context().Err()
	case refused:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	case txConflict, conditionOnly, txThrottled, txThrottledOne:
		n := countTxItems(req)
		reasons := make([]string, n)
		for i := range reasons {
			reasons[i] = `{"Code":"None"}`
		}
		// The throttling reason's text is DynamoDB's.
		const throttled = `{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly."}`
		switch f {
		case txConflict:
			reasons[n-1] = `{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}`
		case conditionOnly:
			reasons[0] = `{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}`
		case txThrottled:
			for i := range reasons {
				reasons[i] = throttled
			}
		case txThrottledOne:
			reasons[n-1] = throttled
		}
		return apiError(req, 400, "TransactionCanceledException",
			`"Message":"Transaction cancelled","CancellationReasons":[`+strings.Join(reasons, ",")+`]`), nil
	case unprocessed:
		return unprocessedKeys(req), nil
	case txInProgress:
		return apiError(req, 400, "TransactionInProgressException", `"message":"Transaction is in progress"`), nil
	case serverErrorAfter:
		resp, err := in.next.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return apiError(req, 500, "InternalServerError", `"message":"Internal server error"`), nil
	}
	return in.next.Do(req)
}

func apiError(req *http.Request, status int, code, fields string) *http.Response {
	body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `",` + fields + `}`
	return &http.Response{
		StatusCode:    status,
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"injected"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

func readBody(req *http.Request) map[string]json.RawMessage {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		panic(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

func countTxItems(req *http.Request) int {
	var items []json.RawMessage
	if err := json.Unmarshal(readBody(req)["TransactItems"], &items); err != nil {
		panic(err)
	}
	return len(items)
}

// unprocessedKeys answers a BatchGetItem with nothing found and every key
// unprocessed, as DynamoDB does when it throttles a whole batch.
func unprocessedKeys(req *http.Request) *http.Response {
	body := `{"Responses":{},"UnprocessedKeys":` + string(readBody(req)["RequestItems"]) + `}`
	resp := apiError(req, 200, "", "")
	resp.Body = io.NopCloser(strings.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp
}

const testAttempts = 4

// faultStore returns a store on a fresh table behind an injector. The
// per-attempt timeout is what ends an injected hang, so it is short, but
// long enough that a real request to DynamoDB Local under -race on a loaded
// machine fits in it (the cases that retry after a hang need their real
// attempt to succeed).
func faultStore(t *testing.T) (*dynamo.Store, *injector, *dynastore.Stats) {
	inj := newInjector()
	stats := dynastore.NewStats()
	s := dynamotest.NewStore(t, dynamo.Config{
		Observer:       stats,
		HTTPClient:     inj,
		MaxAttempts:    testAttempts,
		RequestTimeout: 1500 * time.Millisecond,
		RetryBudget:    20 * time.Second,
		BackoffBase:    time.Millisecond,
		BackoffMax:     5 * time.Millisecond,
		// Throttled retries wait as others do here: these tests are
		// about what is retried, not how long it waits.
		ThrottleBackoffBase: time.Millisecond,
		ThrottleBackoffMax:  5 * time.Millisecond,
		// A quota of its own: the process's would carry one test's
		// retries into the next.
		RetryQuota: retry.NewQuota(retry.QuotaTokens),
	})
	return s, inj, stats
}

func TestFaults(t *testing.T) {
	counter := func(k string) dynastore.TxAction {
		return dynastore.TxAction{Op: dynastore.TxUpdate, Key: key(k), Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}}
	}
	ops := map[string]func(ctx context.Context, s *dynamo.Store) error{
		dynastore.OpGetItem: func(ctx context.Context, s *dynamo.Store) error {
			_, err := s.Get(ctx, key("a"))
			return err
		},
		dynastore.OpPutItem: func(ctx context.Context, s *dynamo.Store) error {
			_, err := s.Put(ctx, item("a", "v", dynastore.B("1")), dynastore.WriteOptions{})
			return err
		},
		dynastore.OpUpdateItem: func(ctx context.Context, s *dynamo.Store) error {
			_, err := s.Update(ctx, key("a"), dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}, dynastore.WriteOptions{})
			return err
		},
		dynastore.OpBatchGetItem: func(ctx context.Context, s *dynamo.Store) error {
			_, err := s.BatchGet(ctx, []dynastore.Key{key("a"), key("b")})
			return err
		},
		dynastore.OpQuery: func(ctx context.Context, s *dynamo.Store) error {
			_, err := s.Query(ctx, dynastore.Query{PK: []byte("a")})
			return err
		},
		dynastore.OpTransactWriteItems: func(ctx context.Context, s *dynamo.Store) error {
			return s.Transact(ctx, []dynastore.TxAction{counter("a"), counter("b")})
		},
	}
	cases := []struct {
		name   string
		op     string
		queued []faultKind // faults for the first requests, then the fault clears
		always faultKind   // a fault that never clears (0: none)
		// want is the sentinel (nil: success); calls the requests the
		// injector sees; n the value of counter "a" afterwards (-1: unchecked).
		want  error
		calls int
		n     int
	}{
		{name: "get throttled until the budget runs out", op: dynastore.OpGetItem, always: throttle, want: dynastore.ErrThrottled, calls: testAttempts, n: -1},
		{name: "get throttled then served", op: dynastore.OpGetItem, queued: []faultKind{throttle, provisioned}, calls: 3, n: -1},
		{name: "get 500s until the budget runs out", op: dynastore.OpGetItem, always: serverError, want: dynastore.ErrUnavailable, calls: testAttempts, n: -1},
		{name: "get 500 then served", op: dynastore.OpGetItem, queued: []faultKind{serverError, serverError, serverError}, calls: 4, n: -1},
		{name: "get hangs until the budget runs out", op: dynastore.OpGetItem, always: hangBefore, want: dynastore.ErrUnavailable, calls: testAttempts, n: -1},
		{name: "get hangs then served", op: dynastore.OpGetItem, queued: []faultKind{hangAfter}, calls: 2, n: -1},
		{name: "get connection refused then served", op: dynastore.OpGetItem, queued: []faultKind{refused}, calls: 2, n: -1},
		{name: "query 503 then served", op: dynastore.OpQuery, queued: []faultKind{unavailable}, calls: 2, n: -1},

		{name: "put throttled then applied", op: dynastore.OpPutItem, queued: []faultKind{throttle}, calls: 2, n: -1},
		{name: "put 503 then applied", op: dynastore.OpPutItem, queued: []faultKind{unavailable, unavailable}, calls: 3, n: -1},
		{name: "put never sent then applied", op: dynastore.OpPutItem, queued: []faultKind{hangBefore}, calls: 2, n: -1},
		{name: "put refused then applied", op: dynastore.OpPutItem, queued: []faultKind{refused}, calls: 2, n: -1},
		{name: "put throttled for good", op: dynastore.OpPutItem, always: throttle, want: dynastore.ErrThrottled, calls: testAttempts, n: -1},
		// A write whose outcome is unknown is not repeated: an ADD must not
		// count twice.
		{name: "update 500 is not repeated", op: dynastore.OpUpdateItem, queued: []faultKind{serverError}, want: dynastore.ErrOutcomeUnknown, calls: 1, n: -1},
		{name: "update timed out after sending is not repeated", op: dynastore.OpUpdateItem, queued: []faultKind{hangAfter}, want: dynastore.ErrOutcomeUnknown, calls: 1, n: 1},
		{name: "update 503 is not applied", op: dynastore.OpUpdateItem, always: unavailable, want: dynastore.ErrUnavailable, calls: testAttempts, n: 0},
		{name: "update throttled then applied once", op: dynastore.OpUpdateItem, queued: []faultKind{throttle, throttle}, calls: 3, n: 1},

		{name: "batch unprocessed until the budget runs out", op: dynastore.OpBatchGetItem, always: unprocessed, want: dynastore.ErrThrottled, calls: testAttempts, n: -1},
		{name: "batch unprocessed then served", op: dynastore.OpBatchGetItem, queued: []faultKind{unprocessed, throttle}, calls: 3, n: -1},

		{name: "tx conflicts until the budget runs out", op: dynastore.OpTransactWriteItems, always: txConflict, want: dynastore.ErrTxConflict, calls: testAttempts, n: 0},
		{name: "tx conflicts then applied", op: dynastore.OpTransactWriteItems, queued: []faultKind{txConflict, txConflict}, calls: 3, n: 1},
		// The repeat carries the same ClientRequestToken, so DynamoDB
		// applies the transaction once although it saw it twice.
		{name: "tx timed out after sending is applied once", op: dynastore.OpTransactWriteItems, queued: []faultKind{hangAfter}, calls: 2, n: 1},
		{name: "tx 500 then applied", op: dynastore.OpTransactWriteItems, queued: []faultKind{serverError}, calls: 2, n: 1},
		// Each repeat carries the first attempt's token: applied once, but
		// DynamoDB never said so.
		{name: "tx 500 after apply until the budget runs out", op: dynastore.OpTransactWriteItems, always: serverErrorAfter, want: dynastore.ErrOutcomeUnknown, calls: testAttempts, n: 1},
		{name: "tx 503 until the budget runs out", op: dynastore.OpTransactWriteItems, always: unavailable, want: dynastore.ErrUnavailable, calls: testAttempts, n: 0},
		{name: "tx throttled for good", op: dynastore.OpTransactWriteItems, always: throttle, want: dynastore.ErrThrottled, calls: testAttempts, n: 0},
		{name: "tx throttled reasons for good", op: dynastore.OpTransactWriteItems, always: txThrottled, want: dynastore.ErrThrottled, calls: testAttempts, n: 0},
		{name: "tx one throttled reason then applied", op: dynastore.OpTransactWriteItems, queued: []faultKind{txThrottledOne}, calls: 2, n: 1},
		{name: "tx condition failure is final", op: dynastore.OpTransactWriteItems, queued: []faultKind{conditionOnly}, want: dynastore.ErrTxCanceled, calls: 1, n: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, inj, stats := faultStore(t)
			inj.queue(tc.op, tc.queued...)
			if tc.always != passThrough {
				inj.forever(tc.op, tc.always)
			}
			// No deadline on ctx: only the store's own bounds can end a hang.
			ctx := dynastore.WithLabel(context.Background(), "cmd")
			err := ops[tc.op](ctx, s)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
				require.NotErrorIs(t, err, context.Canceled)
			}
			if tc.want != dynastore.ErrOutcomeUnknown {
				require.NotErrorIs(t, err, dynastore.ErrOutcomeUnknown, "not applied")
			}
			require.Equal(t, tc.calls, inj.count(tc.op), "requests sent")

			row := stats.Snapshot()[dynastore.StatKey{Label: "cmd", Op: tc.op}]
			require.Equal(t, int64(1), row.Requests, "one logical request")
			require.Equal(t, int64(tc.calls-1), row.Retries)
			require.Equal(t, tc.want != nil, row.Errors == 1)

			if tc.n >= 0 {
				inj.forever(tc.op, passThrough)
				got, err := s.Get(context.Background(), key("a"))
				require.NoError(t, err)
				if tc.n == 0 {
					require.Nil(t, got)
				} else {
					require.Equal(t, dynastore.N(strconv.Itoa(tc.n)), got.Get("n"))
				}
			}
		})
	}
}

// A transaction that keeps conflicting reports the per-action reasons.
func TestTxConflictReasons(t *testing.T) {
	s, inj, _ := faultStore(t)
	inj.forever(dynastore.OpTransactWriteItems, txConflict)
	err := s.Transact(context.Background(), []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: item("a")},
		{Op: dynastore.TxDelete, Key: key("b")},
	})
	var tc *dynastore.TxCanceledError
	require.ErrorAs(t, err, &tc)
	require.ErrorIs(t, err, dynastore.ErrTxConflict)
	require.Equal(t, []dynastore.TxReason{{Code: dynastore.ReasonNone}, {Code: dynastore.ReasonConflict}}, tc.Reasons)
}

// A transaction that stays throttled is ErrThrottled and nothing a caller
// could read as a cancellation: callers take a failed condition for a stale
// receipt or a lost race, and a conflict for a race to run again at once.
func TestThrottledTxIsNoCancellation(t *testing.T) {
	for _, f := range []faultKind{txThrottled, txThrottledOne} {
		s, inj, _ := faultStore(t)
		inj.forever(dynastore.OpTransactWriteItems, f)
		err := s.Transact(context.Background(), []dynastore.TxAction{
			{Op: dynastore.TxPut, Item: item("a")},
			{Op: dynastore.TxDelete, Key: key("b"), Cond: dynastore.Exists{Attr: dynastore.AttrPK}},
		})
		require.ErrorIs(t, err, dynastore.ErrThrottled)
		require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
		require.NotErrorIs(t, err, dynastore.ErrTxConflict)
		var tc *dynastore.TxCanceledError
		require.False(t, errors.As(err, &tc), "a throttled transaction is no *TxCanceledError")
		_, failed := dynastore.ConditionFailedIn(err)
		require.False(t, failed)
		require.Contains(t, err.Error(), dynastore.ReasonThrottled, "the reasons are in the text")
	}
}

// A transaction answered TransactionInProgressException (its token still
// being processed) is retried past MaxAttempts and the budget until a
// retry comes 5 s after the first attempt, as DynamoDB asks: here it is
// answered by the fifth attempt, with two attempts and 100 ms allowed.
func TestTxInProgressRetried(t *testing.T) {
	inj := newInjector()
	s := dynamotest.NewStore(t, dynamo.Config{
		HTTPClient:  inj,
		MaxAttempts: 2,
		RetryBudget: 100 * time.Millisecond,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		RetryQuota:  retry.NewQuota(retry.QuotaTokens),
	})
	inj.queue(dynastore.OpTransactWriteItems, txInProgress, txInProgress, txInProgress, txInProgress)
	require.NoError(t, s.Transact(context.Background(), []dynastore.TxAction{{Op: dynastore.TxPut, Item: item("a")}}))
	require.Equal(t, 5, inj.count(dynastore.OpTransactWriteItems))
}

// The retry quota (the AWS SDKs' standard mode figures) refuses retries
// once drained, so a request fails after one attempt, and refills with
// successes.
func TestRetryQuota(t *testing.T) {
	inj := newInjector()
	quota := retry.NewQuota(2 * retry.RetryCost)
	s := dynamotest.NewStore(t, dynamo.Config{
		HTTPClient:          inj,
		MaxAttempts:         testAttempts,
		BackoffBase:         time.Millisecond,
		BackoffMax:          5 * time.Millisecond,
		ThrottleBackoffBase: time.Millisecond,
		ThrottleBackoffMax:  5 * time.Millisecond,
		RetryQuota:          quota,
	})
	ctx := context.Background()
	get := func() error { _, err := s.Get(ctx, key("a")); return err }

	inj.forever(dynastore.OpGetItem, throttle)
	err := get()
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	require.Contains(t, err.Error(), "retry quota exhausted")
	require.Equal(t, 3, inj.count(dynastore.OpGetItem), "two retries drained the quota")
	require.Equal(t, int64(1), quota.Refusals())
	require.ErrorIs(t, get(), dynastore.ErrThrottled)
	require.Equal(t, 4, inj.count(dynastore.OpGetItem), "no retry at all")
	require.Equal(t, int64(2), quota.Refusals())

	inj.forever(dynastore.OpGetItem, passThrough)
	for range retry.RetryCost {
		require.NoError(t, get())
	}
	require.Equal(t, retry.RetryCost, quota.Available(), "each success returned a token")
	inj.queue(dynastore.OpGetItem, throttle)
	require.NoError(t, get(), "the refilled quota pays for a retry")
	require.Equal(t, 4+retry.RetryCost+2, inj.count(dynastore.OpGetItem))
	require.Equal(t, retry.RetryCost, quota.Available(), "a retry that succeeded is refunded")
}

// The total budget ends retries even when many attempts are allowed.
func TestRetryBudget(t *testing.T) {
	inj := newInjector()
	s := dynamotest.NewStore(t, dynamo.Config{
		HTTPClient:     inj,
		MaxAttempts:    1000,
		RequestTimeout: 50 * time.Millisecond,
		RetryBudget:    300 * time.Millisecond,
		BackoffBase:    10 * time.Millisecond,
		BackoffMax:     20 * time.Millisecond,
	})
	inj.forever(dynastore.OpGetItem, hangBefore)
	_, err := s.Get(context.Background(), key("a"))
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	// Each attempt takes at least its backoff (>= 5 ms), so 300 ms allow
	// far fewer than the 1000 attempts MaxAttempts would.
	require.Less(t, inj.count(dynastore.OpGetItem), 100)
}

// A caller that gives up (client gone) ends the retries at once.
func TestCallerCancel(t *testing.T) {
	s, inj, _ := faultStore(t)
	inj.forever(dynastore.OpGetItem, hangBefore)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for inj.count(dynastore.OpGetItem) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := s.Get(ctx, key("a"))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, inj.count(dynastore.OpGetItem))
}

func TestUnknownOutcomeMessage(t *testing.T) {
	s, inj, _ := faultStore(t)
	inj.queue(dynastore.OpPutItem, serverError)
	_, err := s.Put(context.Background(), item("a"), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	require.Contains(t, err.Error(), "may or may not have been applied")
	require.False(t, errors.Is(err, dynastore.ErrConditionFailed))
}
