package dynamo

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// fakeDynamo is an HTTP client that records every request and answers
// with what respond says, so that tests see exactly what each path sends
// and how each reads the same answer.
type fakeDynamo struct {
	mu    sync.Mutex
	reqs  []captured
	calls map[string]int
	// respond answers the n-th (0-based) request of op: a status, extra
	// headers and a body, or a transport error.
	respond func(op string, n int) (int, http.Header, string, error)
	// serve, when set, answers instead of respond, from the request itself.
	serve func(c captured, n int) (int, http.Header, string, error)
}

type captured struct {
	op     string
	method string
	url    string
	host   string
	header http.Header
	length int64
	body   []byte
}

func newFake(respond func(op string, n int) (int, http.Header, string, error)) *fakeDynamo {
	return &fakeDynamo{calls: map[string]int{}, respond: respond}
}

func (f *fakeDynamo) Do(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), apiVersionPrefix)
	if body, ok := wellFormedTable[op]; ok {
		return cannedResponse(req, body), nil
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	c := captured{op: op, method: req.Method, url: req.URL.String(), host: host,
		header: req.Header.Clone(), length: req.ContentLength, body: b}
	f.mu.Lock()
	f.reqs = append(f.reqs, c)
	n := f.calls[op]
	f.calls[op]++
	f.mu.Unlock()
	respond := f.respond
	if f.serve != nil {
		respond = func(string, int) (int, http.Header, string, error) { return f.serve(c, n) }
	}
	status, h, body, err := respond(op, n)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{"Content-Type": {"application/x-amz-json-1.0"}}
	for k, v := range h {
		hdr[k] = v
	}
	return &http.Response{
		StatusCode:    status,
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        hdr,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

func (f *fakeDynamo) last() captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeDynamo) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// answer is a respond that gives every request of an operation the same
// successful body.
func answer(bodies map[string]string) func(string, int) (int, http.Header, string, error) {
	return func(op string, _ int) (int, http.Header, string, error) {
		return 200, nil, bodies[op], nil
	}
}

// wellFormedTable answers the table check New makes at start
// (prepareTable) for a table redamo can use.
var wellFormedTable = map[string]string{
	"DescribeTable": `{"Table":{"TableName":"tbl","TableStatus":"ACTIVE",` +
		`"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"B"},{"AttributeName":"sk","AttributeType":"B"}],` +
		`"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}]}}`,
	"DescribeTimeToLive": `{"TimeToLiveDescription":{"AttributeName":"ttl","TimeToLiveStatus":"ENABLED"}}`,
}

// cannedResponse is a 200 response to req with body, and its checksum as
// DynamoDB sends it.
func cannedResponse(req *http.Request, body string) *http.Response {
	return &http.Response{
		StatusCode: 200,
		Status:     "200 OK",
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "Content-Length": {strconv.Itoa(len(body))}, "X-Amzn-Requestid": {"canned"},
			"X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// testCreds are the credentials the fake stores sign with.
var testCreds = aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret/key+x", Source: "test"}

// fakeStore is fakeStores' store on one path (with testCreds), the SDK's
// when sdkOnly.
func fakeStore(t *testing.T, f *fakeDynamo, sdkOnly bool) *Store {
	t.Helper()
	sdk, direct := fakeStores(t, f, testCreds)
	if sdkOnly {
		return sdk
	}
	return direct
}

// fakeStores returns a store on each path, both sending to f, with static
// credentials and quick retries.
func fakeStores(t *testing.T, f *fakeDynamo, creds aws.Credentials) (sdk, direct *Store) {
	t.Helper()
	cleanAWSEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	mk := func(sdkOnly bool) *Store {
		s, err := New(context.Background(), Config{
			Table: "tbl", Endpoint: "http://ddb.test:8000", HTTPClient: f, SDKOnly: sdkOnly,
			Logger: slog.New(slog.DiscardHandler), MaxAttempts: 3, BackoffBase: time.Microsecond, BackoffMax: time.Microsecond,
		})
		require.NoError(t, err)
		return s
	}
	sdk, direct = mk(true), mk(false)
	require.Nil(t, sdk.wire)
	require.NotNil(t, direct.wire)
	return sdk, direct
}

// An item with every type and strings that need escaping.
func oddItem() dynastore.Item {
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B("\x00k\xff\"ey")}, {Name: dynastore.AttrSK, Value: dynastore.B{0}},
		{Name: "s", Value: dynastore.S("quote\" back\\ nl\n tab\t ctl\x01\x1f é 😀 \u2028 </>&")},
		{Name: "bad", Value: dynastore.S("a\xffb\xc3")},
		{Name: "n", Value: dynastore.N("-12.50")},
		{Name: "big", Value: dynastore.N("123456789012345678901234567890")},
		{Name: "empty", Value: dynastore.B{}},
		{Name: "bs", Value: dynastore.BS{{1}, {2, 3}}},
		{Name: "l", Value: dynastore.L{dynastore.S("x"), dynastore.N("1"), dynastore.BOOL(true), dynastore.NULL{}, dynastore.L{}, dynastore.M{}}},
		{Name: "m", Value: dynastore.M{"a": dynastore.B("z"), "b\"q\u00e9": dynastore.N("3"), "n": dynastore.M{"x": dynastore.BOOL(false)}}},
		{Name: "t", Value: dynastore.BOOL(false)},
		{Name: "#x :y.z", Value: dynastore.NULL{}},
	}
}

// sortedItems returns the items with their attributes in name order (nil
// stays nil): the two paths read an item's attributes in different orders.
func sortedItems(items []dynastore.Item) []dynastore.Item {
	if items == nil {
		return nil
	}
	out := make([]dynastore.Item, len(items))
	for i, it := range items {
		out[i] = it.Sorted()
	}
	return out
}

// sortedResult is a store call's result with its items' attributes in
// name order.
func sortedResult(v any) any {
	switch r := v.(type) {
	case dynastore.Item:
		return r.Sorted()
	case []dynastore.Item:
		return sortedItems(r)
	case dynastore.QueryPage:
		r.Items = sortedItems(r.Items)
		return r
	case dynastore.ScanPage:
		r.Items = sortedItems(r.Items)
		return r
	}
	return v
}

// sortedReasons returns the reasons with their old items' attributes in
// name order.
func sortedReasons(rs []dynastore.TxReason) []dynastore.TxReason {
	if rs == nil {
		return nil
	}
	out := make([]dynastore.TxReason, len(rs))
	for i, r := range rs {
		out[i] = dynastore.TxReason{Code: r.Code, Old: r.Old.Sorted()}
	}
	return out
}

func sameJSON(t *testing.T, want, got []byte, msg string) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w), "%s: %s", msg, want)
	require.NoError(t, json.Unmarshal(got, &g), "%s: %s", msg, got)
	require.Equal(t, w, g, msg)
}

// Both paths send the same requests: same operation, same endpoint, and
// JSON bodies that decode to the same document.
func TestDirectRequestsMatchSDK(t *testing.T) {
	k := dynastore.Key{PK: []byte("\x00k\xff"), SK: []byte{0, 1}}
	upd := dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: "v", Val: dynastore.B("hello")},
			{Attr: "n", Val: dynastore.Plus{A: dynastore.IfNotExists{Attr: "n", Default: dynastore.N("0")}, B: dynastore.N("1")}},
			{Attr: "l", Val: dynastore.ListAppend{A: dynastore.Ref{Attr: "l"}, B: dynastore.L{dynastore.S("é\"")}}},
		},
		Remove: []string{"x", "ttl"},
		Add:    []dynastore.AttrValue{{Attr: "c", Val: dynastore.N("-3")}},
		Delete: []dynastore.AttrValue{{Attr: "bs", Val: dynastore.BS{[]byte("q")}}},
	}
	cond := dynastore.Or{
		dynastore.NotExists{Attr: dynastore.AttrPK},
		dynastore.And{
			dynastore.Compare{Attr: "x", Op: dynastore.OpGT, Val: dynastore.N("170")},
			dynastore.IsType{Attr: "v", Type: dynastore.KindB},
			dynastore.SizeCompare{Attr: "v", Op: dynastore.OpLE, Size: 10},
			dynastore.BeginsWith{Attr: "v", Prefix: []byte("he")},
			dynastore.Contains{Attr: "bs", Val: dynastore.B("q")},
			dynastore.Not{C: dynastore.Exists{Attr: "size"}},
		},
	}
	calls := []struct {
		name string
		call func(s *Store) error
	}{
		{"get", func(s *Store) error { _, err := s.Get(context.Background(), k); return err }},
		{"put plain", func(s *Store) error {
			_, err := s.Put(context.Background(), oddItem(), dynastore.WriteOptions{})
			return err
		}},
		{"put conditional, old on failure, handed over", func(s *Store) error {
			_, err := s.Put(context.Background(), oddItem(), dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllOld, OldOnFailure: true, Handover: true})
			return err
		}},
		{"put old on failure without a condition", func(s *Store) error {
			_, err := s.Put(context.Background(), oddItem(), dynastore.WriteOptions{OldOnFailure: true})
			return err
		}},
		{"update", func(s *Store) error {
			_, err := s.Update(context.Background(), k, upd, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnUpdatedNew, OldOnFailure: true})
			return err
		}},
		{"update without actions", func(s *Store) error {
			_, err := s.Update(context.Background(), k, dynastore.Update{}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
			return err
		}},
		{"delete", func(s *Store) error {
			_, err := s.Delete(context.Background(), k, dynastore.WriteOptions{Cond: dynastore.Exists{Attr: "v"}, Return: dynastore.ReturnAllOld})
			return err
		}},
		{"delete always false", func(s *Store) error {
			_, err := s.Delete(context.Background(), k, dynastore.WriteOptions{Cond: dynastore.Or{}, Return: dynastore.ReturnAllOld})
			return err
		}},
		{"transaction", func(s *Store) error {
			return s.Transact(context.Background(), []dynastore.TxAction{
				{Op: dynastore.TxPut, Item: oddItem(), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true},
				{Op: dynastore.TxUpdate, Key: k, Update: &upd, Cond: cond},
				{Op: dynastore.TxDelete, Key: dynastore.Key{PK: []byte("d"), SK: []byte{0}}},
				{Op: dynastore.TxCheck, Key: dynastore.Key{PK: []byte("c"), SK: []byte{0}}, Cond: dynastore.And{}, OldOnFailure: true},
				{Op: dynastore.TxCheck, Key: dynastore.Key{PK: []byte("e"), SK: []byte{0}}, Cond: dynastore.Compare{Attr: "ver", Op: dynastore.OpEQ, Val: dynastore.B("1")}},
			})
		}},
		{"query", func(s *Store) error {
			_, err := s.Query(context.Background(), dynastore.Query{PK: []byte("p"), Op: dynastore.SKBetween, A: []byte("a"), B: []byte("z"),
				Reverse: true, Limit: 7, After: []byte("m"), Filter: dynastore.Compare{Attr: "x", Op: dynastore.OpGT, Val: dynastore.N("9")}})
			return err
		}},
		{"query whole partition", func(s *Store) error {
			_, err := s.Query(context.Background(), dynastore.Query{PK: []byte("p")})
			return err
		}},
		{"batch get with duplicate keys", func(s *Store) error {
			_, err := s.BatchGet(context.Background(), []dynastore.Key{k, {PK: []byte("b\"\xfe"), SK: []byte{0}}, k, {PK: []byte("c"), SK: []byte{0, 7}}})
			return err
		}},
		{"scan", func(s *Store) error {
			_, err := s.Scan(context.Background(), dynastore.Scan{Limit: 50, Segment: 2, Segments: 3, After: &k,
				Filter: dynastore.And{dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte("\x00")}, dynastore.Exists{Attr: "x y"}}})
			return err
		}},
		{"scan whole table", func(s *Store) error {
			_, err := s.Scan(context.Background(), dynastore.Scan{})
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(answer(map[string]string{}))
			sdk, direct := fakeStores(t, f, testCreds)
			require.NoError(t, c.call(sdk))
			want := f.last()
			require.NoError(t, c.call(direct))
			got := f.last()

			require.Equal(t, want.op, got.op)
			require.Equal(t, want.method, got.method)
			require.Equal(t, want.url, got.url)
			require.Equal(t, want.host, got.host)
			require.Equal(t, want.header.Get("Content-Type"), got.header.Get("Content-Type"))
			require.Equal(t, int64(len(got.body)), got.length)
			verifySigV4(t, want, testCreds)
			verifySigV4(t, got, testCreds)
			if want.op == dynastore.OpTransactWriteItems {
				want.body, got.body = withoutToken(t, want.body), withoutToken(t, got.body)
			}
			sameJSON(t, want.body, got.body, "body")
		})
	}
}

// withoutToken checks a transaction's ClientRequestToken and drops it.
func withoutToken(t *testing.T, body []byte) []byte {
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	tok, ok := m["ClientRequestToken"].(string)
	require.True(t, ok)
	require.Len(t, tok, 32)
	delete(m, "ClientRequestToken")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// verifySigV4 checks a request's Authorization against an independent
// computation of Signature Version 4 (AWS's published algorithm), so that
// what is signed is what is sent: method, path, headers, body.
func verifySigV4(t *testing.T, r captured, creds aws.Credentials) {
	t.Helper()
	auth := r.header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	require.True(t, ok, auth)
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ", ") {
		k, v, ok := strings.Cut(f, "=")
		require.True(t, ok, auth)
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	require.Len(t, cred, 5, auth)
	require.Equal(t, creds.AccessKeyID, cred[0])
	require.Equal(t, "aws4_request", cred[4])
	date := r.header.Get("X-Amz-Date")
	require.True(t, strings.HasPrefix(date, cred[1]), "date %s scope %s", date, cred[1])

	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, h := range []string{"host", "content-type", "x-amz-date", "x-amz-target"} {
		require.Contains(t, signed, h)
	}
	if creds.SessionToken != "" {
		require.Contains(t, signed, "x-amz-security-token")
		require.Equal(t, creds.SessionToken, r.header.Get("X-Amz-Security-Token"))
	}
	var canon strings.Builder
	for _, h := range signed {
		var v string
		switch h {
		case "host":
			v = r.host
		case "content-length":
			v = strconv.FormatInt(r.length, 10)
		default:
			v = strings.Join(r.header.Values(h), ",")
		}
		canon.WriteString(h + ":" + strings.TrimSpace(v) + "\n")
	}
	u, err := http.NewRequest(r.method, r.url, nil)
	require.NoError(t, err)
	path := u.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	bodySum := sha256.Sum256(r.body)
	creq := strings.Join([]string{r.method, path, u.URL.RawQuery, canon.String(), fields["SignedHeaders"], hex.EncodeToString(bodySum[:])}, "\n")
	creqSum := sha256.Sum256([]byte(creq))
	scope := strings.Join(cred[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + hex.EncodeToString(creqSum[:])
	mac := func(key []byte, s string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(s))
		return h.Sum(nil)
	}
	key := []byte("AWS4" + creds.SecretAccessKey)
	for _, part := range cred[1:] {
		key = mac(key, part)
	}
	require.Equal(t, hex.EncodeToString(mac(key, toSign)), fields["Signature"], "signature of %s", r.op)
}

// Session tokens are sent and signed.
func TestDirectSessionToken(t *testing.T) {
	creds := testCreds
	creds.SessionToken = "session/token=="
	f := newFake(answer(map[string]string{}))
	sdk, direct := fakeStores(t, f, creds)
	for _, s := range []*Store{sdk, direct} {
		_, err := s.Get(context.Background(), dynastore.Key{PK: []byte("k"), SK: []byte{0}})
		require.NoError(t, err)
		verifySigV4(t, f.last(), creds)
	}
}

// Both paths read the same answers into the same results.
func TestDirectResponsesMatchSDK(t *testing.T) {
	item := `{"pk":{"B":"AGs="},"sk":{"B":"AA=="},"s":{"S":"q\"\\\/\n\u00e9\ud83d\ude00 \u0001"},"n":{"N":"3.0"},"m":{"N":"-12.50"},` +
		`"e":{"B":""},"bs":{"BS":["AQ==","AgM="]},"l":{"L":[{"S":"x"},{"NULL":true},{"BOOL":true},{"L":[]},{"M":{}}]},` +
		`"mm":{"M":{"a\"b":{"B":"eg=="},"n":{"M":{"x":{"BOOL":false}}}}},"esc\u00e9":{"S":""}}`
	capTotal := `"ConsumedCapacity":{"TableName":"tbl","CapacityUnits":1.5}`
	capSplit := `"ConsumedCapacity":{"TableName":"tbl","CapacityUnits":3,"ReadCapacityUnits":1,"WriteCapacityUnits":2,"Table":{"CapacityUnits":3}}`
	bodies := map[string]string{
		dynastore.OpGetItem:    ` { "Item" : ` + item + ` , ` + capTotal + ` , "Extra":[1,{"a":null},"s",true] } `,
		dynastore.OpUpdateItem: `{"Attributes":` + item + `,` + capSplit + `}`,
		dynastore.OpPutItem:    `{"Attributes":{},` + capTotal + `}`,
		dynastore.OpDeleteItem: `{}`,
		dynastore.OpQuery: `{"Count":2,"Items":[` + item + `,{"pk":{"B":"cA=="},"sk":{"B":"bQ=="}}],"ScannedCount":3,` +
			`"LastEvaluatedKey":{"pk":{"B":"cA=="},"sk":{"B":"bQ=="}},` + capTotal + `}`,
		dynastore.OpTransactWriteItems: `{"ConsumedCapacity":[{"TableName":"tbl","CapacityUnits":4},{"TableName":"tbl","CapacityUnits":2,"WriteCapacityUnits":2}]}`,
		// Another table's items and unprocessed keys are not this store's.
		dynastore.OpBatchGetItem: `{"Responses":{"other":[{"pk":{"B":"AGs="},"sk":{"B":"AA=="},"o":{"S":"other"}}],"tbl":[` + item + `,{"pk":{"B":"cA=="},"sk":{"B":"bQ=="}}]},` +
			`"UnprocessedKeys":{"other":{"Keys":[{"pk":{"B":"cQ=="},"sk":{"B":"AA=="}}],"ConsistentRead":true}},` +
			`"ConsumedCapacity":[{"TableName":"other","CapacityUnits":0.5},{"TableName":"tbl","CapacityUnits":1.5,"ReadCapacityUnits":1.5}]}`,
		dynastore.OpScan: `{"Count":2,"Items":[{"pk":{"B":"cA=="},"sk":{"B":"bQ=="}},` + item + `],"ScannedCount":9,` +
			`"LastEvaluatedKey":{"sk":{"B":"AA=="},"pk":{"B":"AGs="}},` + capTotal + `}`,
	}
	k := dynastore.Key{PK: []byte("k"), SK: []byte{0}}
	calls := []struct {
		name string
		call func(s *Store) (any, error)
	}{
		{"get", func(s *Store) (any, error) { return s.Get(context.Background(), k) }},
		{"update", func(s *Store) (any, error) {
			return s.Update(context.Background(), k, dynastore.Update{Remove: []string{"x"}}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
		}},
		{"put", func(s *Store) (any, error) {
			return s.Put(context.Background(), oddItem(), dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
		}},
		{"delete", func(s *Store) (any, error) { return s.Delete(context.Background(), k, dynastore.WriteOptions{}) }},
		{"query", func(s *Store) (any, error) { return s.Query(context.Background(), dynastore.Query{PK: []byte("p")}) }},
		{"transaction", func(s *Store) (any, error) {
			return nil, s.Transact(context.Background(), []dynastore.TxAction{{Op: dynastore.TxDelete, Key: k}})
		}},
		{"batch get", func(s *Store) (any, error) {
			kk := dynastore.Key{PK: []byte("\x00k"), SK: []byte{0}}
			return s.BatchGet(context.Background(), []dynastore.Key{kk, {PK: []byte("p"), SK: []byte("m")}, kk, {PK: []byte("q"), SK: []byte{0}}})
		}},
		{"scan", func(s *Store) (any, error) { return s.Scan(context.Background(), dynastore.Scan{Limit: 2}) }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			stats := map[bool]*dynastore.Stats{}
			results := map[bool]any{}
			for _, sdkOnly := range []bool{true, false} {
				f := newFake(answer(bodies))
				s := fakeStore(t, f, sdkOnly)
				stats[sdkOnly] = dynastore.NewStats()
				s.obs = stats[sdkOnly]
				got, err := c.call(s)
				require.NoError(t, err)
				results[sdkOnly] = sortedResult(got)
			}
			require.Equal(t, results[true], results[false])
			require.Equal(t, stats[true].Snapshot(), stats[false].Snapshot())
		})
	}
}

// Both paths turn the same failures into the same errors after the same
// number of attempts.
func TestDirectErrorsMatchSDK(t *testing.T) {
	apiErr := func(status int, code, fields string) func(string, int) (int, http.Header, string, error) {
		return func(string, int) (int, http.Header, string, error) {
			body := `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `"`
			if fields != "" {
				body += "," + fields
			}
			return status, nil, body + "}", nil
		}
	}
	raw := func(status int, h http.Header, body string) func(string, int) (int, http.Header, string, error) {
		return func(string, int) (int, http.Header, string, error) { return status, h, body, nil }
	}
	transport := func(err error) func(string, int) (int, http.Header, string, error) {
		return func(string, int) (int, http.Header, string, error) { return 0, nil, "", err }
	}
	old := `"Item":{"pk":{"B":"aw=="},"sk":{"B":"AA=="},"v":{"N":"7.0"}}`
	k := dynastore.Key{PK: []byte("k"), SK: []byte{0}}
	get := func(s *Store) error { _, err := s.Get(context.Background(), k); return err }
	update := func(s *Store) error {
		_, err := s.Update(context.Background(), k, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}},
			dynastore.WriteOptions{Cond: dynastore.Exists{Attr: "n"}, OldOnFailure: true})
		return err
	}
	tx := func(s *Store) error {
		return s.Transact(context.Background(), []dynastore.TxAction{
			{Op: dynastore.TxDelete, Key: k},
			{Op: dynastore.TxCheck, Key: dynastore.Key{PK: []byte("c"), SK: []byte{0}}, Cond: dynastore.Exists{Attr: "v"}, OldOnFailure: true},
		})
	}
	batch := func(s *Store) error {
		_, err := s.BatchGet(context.Background(), []dynastore.Key{k, k})
		return err
	}
	scan := func(s *Store) error {
		_, err := s.Scan(context.Background(), dynastore.Scan{Limit: 10})
		return err
	}
	cases := []struct {
		name    string
		call    func(s *Store) error
		respond func(string, int) (int, http.Header, string, error)
	}{
		{"throttled batch get", batch, apiErr(400, "ProvisionedThroughputExceededException", `"message":"x"`)},
		{"batch get never processed", batch, raw(200, nil, `{"Responses":{"tbl":[]},"UnprocessedKeys":{"tbl":{"Keys":[{"pk":{"B":"aw=="},"sk":{"B":"AA=="}}]}}}`)},
		{"batch get of an item not asked for", batch, raw(200, nil, `{"Responses":{"tbl":[{"pk":{"B":"eA=="},"sk":{"B":"AA=="}}]}}`)},
		{"batch get with too many keys", batch, apiErr(400, "ValidationException", `"message":"Too many items requested for the BatchGetItem call"`)},
		{"malformed batch get", batch, raw(200, nil, `{"Responses":{"tbl":[{"pk":]}}`)},
		{"batch get cut short", batch, transport(io.ErrUnexpectedEOF)},
		{"server error on a batch get", batch, apiErr(500, "InternalServerError", `"message":"x"`)},
		{"throttled scan", scan, apiErr(400, "ThrottlingException", `"message":"Rate exceeded"`)},
		{"unavailable scan", scan, apiErr(503, "ServiceUnavailable", ``)},
		{"malformed scan", scan, raw(200, nil, `{"Items":[{"pk":{"B":"aw=="}},]}`)},
		{"scan with a bad last key", scan, raw(200, nil, `{"Items":[],"LastEvaluatedKey":{"pk":{"S":"k"},"sk":{"B":"AA=="}}}`)},
		{"scan of a missing table", scan, apiErr(400, "ResourceNotFoundException", `"message":"Requested resource not found"`)},
		{"condition failed with the old item", update, apiErr(400, "ConditionalCheckFailedException", `"message":"The conditional request failed",`+old)},
		{"condition failed without it", update, apiErr(400, "ConditionalCheckFailedException", `"message":"The conditional request failed"`)},
		{"transaction canceled", tx, apiErr(400, "TransactionCanceledException",
			`"Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"The conditional request failed",`+old+`}]`)},
		{"transaction conflict", tx, apiErr(400, "TransactionCanceledException",
			`"Message":"Transaction cancelled","CancellationReasons":[{"Code":"TransactionConflict","Message":"x"},{"Code":null,"Item":null}]`)},
		{"transaction validation", tx, apiErr(400, "TransactionCanceledException",
			`"Message":"x","CancellationReasons":[{"Code":"ValidationError","Message":"Item size has exceeded the maximum allowed size"},{"Code":"None"}]`)},
		{"throttled read", get, apiErr(400, "ThrottlingException", `"message":"Rate exceeded"`)},
		{"throttled write", update, apiErr(400, "ProvisionedThroughputExceededException", `"message":"x"`)},
		{"single-item conflict", update, apiErr(400, "TransactionConflictException", `"message":"x"`)},
		{"item too large", update, apiErr(400, "ValidationException", `"message":"Item size has exceeded the maximum allowed size"`)},
		{"key too large", get, apiErr(400, "ValidationException", `"Message":"One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes"`)},
		{"other validation", get, apiErr(400, "ValidationException", `"message":"bad"`)},
		{"missing table", get, apiErr(400, "ResourceNotFoundException", `"message":"Requested resource not found"`)},
		{"code in the header", get, raw(400, http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/"}}, `{"message":"x"}`)},
		{"empty error body", get, raw(400, nil, ``)},
		{"server error on a read", get, apiErr(500, "InternalServerError", `"message":"x"`)},
		{"server error on a write", update, apiErr(500, "InternalServerError", `"message":"x"`)},
		{"unavailable write", update, apiErr(503, "ServiceUnavailable", ``)},
		{"html 502", update, raw(502, http.Header{"Content-Type": {"text/html"}}, `<html>bad gateway</html>`)},
		{"html 503", get, raw(503, http.Header{"Content-Type": {"text/html"}}, `<html>x</html>`)},
		{"malformed success on a read", get, raw(200, nil, `{"Item":{"pk":`)},
		{"malformed success on a write", update, raw(200, nil, `{"Attributes":[}`)},
		{"bad base64", get, raw(200, nil, `{"Item":{"pk":{"B":"!!"}}}`)},
		{"unsupported attribute type", get, raw(200, nil, `{"Item":{"pk":{"B":"aw=="},"s":{"SS":["a"]}}}`)},
		{"refused", update, transport(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})},
		{"reset on a read", get, transport(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})},
		{"cut short on a write", update, transport(io.ErrUnexpectedEOF)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := map[bool]error{}
			attempts := map[bool]int{}
			for _, sdkOnly := range []bool{true, false} {
				f := newFake(c.respond)
				s := fakeStore(t, f, sdkOnly)
				errs[sdkOnly] = c.call(s)
				require.Error(t, errs[sdkOnly])
				f.mu.Lock()
				attempts[sdkOnly] = len(f.reqs)
				f.mu.Unlock()
			}
			want, got := errs[true], errs[false]
			require.Equal(t, attempts[true], attempts[false], "attempts; sdk: %v; direct: %v", want, got)
			for _, se := range append(storeErrors, context.DeadlineExceeded) {
				require.Equal(t, errors.Is(want, se), errors.Is(got, se), "%v; sdk: %v; direct: %v", se, want, got)
			}
			var wcf, gcf *dynastore.ConditionFailedError
			require.Equal(t, errors.As(want, &wcf), errors.As(got, &gcf))
			if wcf != nil {
				require.Equal(t, wcf.Old.Sorted(), gcf.Old.Sorted())
			}
			var wtc, gtc *dynastore.TxCanceledError
			require.Equal(t, errors.As(want, &wtc), errors.As(got, &gtc))
			if wtc != nil {
				require.Equal(t, sortedReasons(wtc.Reasons), sortedReasons(gtc.Reasons))
			}
		})
	}
}

// After DynamoDB rejects a request for its signing time, later requests
// are signed with the server's clock, taken from the response's Date.
func TestDirectClockSkew(t *testing.T) {
	ahead := time.Now().Add(time.Hour).UTC()
	cases := []struct {
		name string
		code string
		date time.Time
		want time.Time // the signing time of the next request
	}{
		{"definite skew error", "RequestTimeTooSkewed", ahead, ahead},
		{"signature error with a far clock", "InvalidSignatureException", ahead, ahead},
		{"signature error with a near clock", "InvalidSignatureException", time.Now().Add(time.Minute), time.Now()},
		{"other error", "ValidationException", ahead, time.Now()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(func(op string, n int) (int, http.Header, string, error) {
				if n == 0 {
					return 400, http.Header{"Date": {c.date.Format(http.TimeFormat)}}, `{"__type":"` + c.code + `","message":"x"}`, nil
				}
				return 200, nil, `{}`, nil
			})
			_, direct := fakeStores(t, f, testCreds)
			k := dynastore.Key{PK: []byte("k"), SK: []byte{0}}
			_, err := direct.Get(context.Background(), k)
			require.Error(t, err, "the rejected request itself is final, as on the SDK path")
			_, err = direct.Get(context.Background(), k)
			require.NoError(t, err)
			signed, err := time.Parse("20060102T150405Z", f.last().header.Get("X-Amz-Date"))
			require.NoError(t, err)
			require.WithinDuration(t, c.want, signed, 5*time.Second)
			verifySigV4(t, f.last(), testCreds)
		})
	}
}

// The direct path resolves the endpoint the SDK would use, for AWS regions,
// FIPS and dual-stack endpoints, account-based endpoints and custom ones,
// and signs for the same region and service.
func TestDirectEndpointsMatchSDK(t *testing.T) {
	cases := []struct {
		name     string
		region   string
		endpoint string
		env      map[string]string
		account  string
	}{
		{name: "region", region: "eu-west-3"},
		{name: "china partition", region: "cn-north-1"},
		{name: "custom endpoint", region: "us-east-1", endpoint: "http://127.0.0.1:8000"},
		{name: "custom endpoint with a path", region: "us-east-1", endpoint: "https://proxy.test/ddb"},
		{name: "local pseudo-region", region: "local"},
		{name: "fips", region: "us-west-2", env: map[string]string{"AWS_USE_FIPS_ENDPOINT": "true"}},
		{name: "dual-stack", region: "us-west-2", env: map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "true"}},
		{name: "account-based", region: "us-east-1", account: "123456789012"},
		{name: "account-based disabled", region: "us-east-1", account: "123456789012", env: map[string]string{"AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}},
		{name: "endpoint from the environment", region: "us-east-1", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://10.0.0.1:4566"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cleanAWSEnv(t)
			t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
			t.Setenv("AWS_ACCOUNT_ID", c.account)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			f := newFake(answer(map[string]string{}))
			var got [2]captured
			for i, sdkOnly := range []bool{true, false} {
				s, err := New(context.Background(), Config{Table: "tbl", Region: c.region, Endpoint: c.endpoint,
					HTTPClient: f, SDKOnly: sdkOnly, Logger: slog.New(slog.DiscardHandler)})
				require.NoError(t, err)
				require.Equal(t, sdkOnly, s.wire == nil)
				_, err = s.Get(context.Background(), dynastore.Key{PK: []byte("k"), SK: []byte{0}})
				require.NoError(t, err)
				got[i] = f.last()
			}
			require.Equal(t, got[0].url, got[1].url)
			require.Equal(t, got[0].host, got[1].host)
			scope := func(c captured) string {
				a := c.header.Get("Authorization")
				return a[strings.Index(a, "/"):strings.Index(a, ",")]
			}
			require.Equal(t, scope(got[0]), scope(got[1]))
			verifySigV4(t, got[1], testCreds)
		})
	}
}

// Configurations the direct path does not handle leave every request to
// the SDK.
func TestDirectFallsBack(t *testing.T) {
	cleanAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
	s, err := New(context.Background(), Config{Table: "tbl", Region: "fips-us-east-1", Endpoint: "", HTTPClient: newFake(nil),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Nil(t, s.wire)

	// Anonymous credentials: the SDK client sends unsigned requests.
	o := s.db.Options()
	o.Credentials = aws.AnonymousCredentials{}
	o.Region = "us-east-1"
	_, why := newWire(dynamodb.New(o), "tbl", newFake(nil))
	require.Equal(t, "no credentials provider", why)
}

func TestSanitizeCode(t *testing.T) {
	for in, want := range map[string]string{
		"com.amazonaws.dynamodb.v20120810#ThrottlingException": "ThrottlingException",
		"ThrottlingException:http://internal.amazon.com/":      "ThrottlingException",
		"aws#Code:suffix": "Code",
		"Plain":           "Plain",
	} {
		require.Equal(t, want, sanitizeCode(in), in)
	}
}

func TestCheckCRC32(t *testing.T) {
	body := []byte(`{"Item":{}}`)
	require.NoError(t, checkCRC32(http.Header{}, body))
	require.NoError(t, checkCRC32(http.Header{"X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}}, body))
	require.Error(t, checkCRC32(http.Header{"X-Amz-Crc32": {"1"}}, body))
	require.Error(t, checkCRC32(http.Header{"X-Amz-Crc32": {"x"}}, body))
}

// A body that fails its checksum is not used: a read asks again.
func TestDirectChecksumMismatch(t *testing.T) {
	cleanAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
	body := `{"Item":{"pk":{"B":"aw=="},"sk":{"B":"AA=="}}}`
	sum := strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10)
	f := newFake(func(op string, n int) (int, http.Header, string, error) {
		if n == 0 {
			return 200, http.Header{"X-Amz-Crc32": {"1"}}, body, nil
		}
		return 200, http.Header{"X-Amz-Crc32": {sum}}, body, nil
	})
	s, err := New(context.Background(), Config{Table: "tbl", Region: "us-east-1", HTTPClient: f,
		Logger: slog.New(slog.DiscardHandler), BackoffBase: time.Microsecond, BackoffMax: time.Microsecond})
	require.NoError(t, err)
	require.NotNil(t, s.wire)
	it, err := s.Get(context.Background(), dynastore.Key{PK: []byte("k"), SK: []byte{0}})
	require.NoError(t, err)
	require.Equal(t, dynastore.B("k"), it.Get(dynastore.AttrPK))
	require.Equal(t, 2, f.count(dynastore.OpGetItem))
}

// batchKeys reads the keys a BatchGetItem body asks for on table tbl.
func batchKeys(t *testing.T, body []byte) []any {
	var in struct {
		RequestItems map[string]struct {
			Keys           []any
			ConsistentRead bool
		}
		ReturnConsumedCapacity string
	}
	require.NoError(t, json.Unmarshal(body, &in))
	require.Len(t, in.RequestItems, 1)
	require.True(t, in.RequestItems["tbl"].ConsistentRead)
	require.Equal(t, "TOTAL", in.ReturnConsumedCapacity)
	return in.RequestItems["tbl"].Keys
}

// canonicalBodies returns bodies re-encoded with sorted members, sorted:
// requests of parallel chunks arrive in any order.
func canonicalBodies(t *testing.T, reqs []captured) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		var v any
		require.NoError(t, json.Unmarshal(r.body, &v))
		b, err := json.Marshal(v)
		require.NoError(t, err)
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// Both paths ask for the same keys (duplicates once, chunks of
// MaxBatchGet), ask again for the unprocessed keys DynamoDB hands back, and
// return the same items in the callers' order, after the same attempts.
func TestDirectBatchGetMatchesSDK(t *testing.T) {
	keys := func(n int, dup bool) []dynastore.Key {
		var out []dynastore.Key
		for i := range n {
			k := dynastore.Key{PK: fmt.Appendf(nil, "\x00k%03d\xff", i), SK: []byte{0}}
			out = append(out, k)
			if dup && i%3 == 0 {
				out = append(out, k)
			}
		}
		return out
	}
	cases := []struct {
		name string
		keys []dynastore.Key
		// unprocessed is how many of a request's n keys come back
		// unprocessed (the last ones), unless asked for twice before.
		unprocessed func(n int) int
		requests    int // BatchGetItem requests on each path
	}{
		{"all processed", keys(5, false), func(int) int { return 0 }, 1},
		{"duplicate keys", keys(7, true), func(int) int { return 0 }, 1},
		{"half unprocessed each time", keys(10, false), func(n int) int { return n / 2 }, 3},
		// 100+100+30 distinct keys: each chunk in three requests.
		{"chunks with duplicates, some unprocessed", keys(230, true), func(n int) int { return min(n/3, 20) }, 9},
		// Twice no progress (backoff), and Responses null, which the SDK reads as none.
		{"one unprocessed key, no progress at first", keys(1, false), func(n int) int { return n }, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reqs [2][]captured
			var results [2][]dynastore.Item
			var stats [2]map[dynastore.StatKey]dynastore.StatRow
			for i, sdkOnly := range []bool{true, false} {
				var mu sync.Mutex
				asked := map[string]int{} // how often each key was asked for
				f := newFake(nil)
				f.serve = func(r captured, _ int) (int, http.Header, string, error) {
					ks := batchKeys(t, r.body)
					mu.Lock()
					defer mu.Unlock()
					var items, unp []any
					for j, k := range ks {
						kb, err := json.Marshal(k)
						require.NoError(t, err)
						asked[string(kb)]++
						if j >= len(ks)-c.unprocessed(len(ks)) && asked[string(kb)] < 3 {
							unp = append(unp, k)
							continue
						}
						it := maps.Clone(k.(map[string]any))
						it["v"] = map[string]any{"B": it["pk"].(map[string]any)["B"]}
						if j%4 == 3 {
							continue // absent
						}
						items = append(items, it)
					}
					out := map[string]any{
						"Responses":        map[string]any{"tbl": items},
						"ConsumedCapacity": []any{map[string]any{"TableName": "tbl", "CapacityUnits": 0.5 * float64(len(ks))}},
					}
					if unp != nil {
						out["UnprocessedKeys"] = map[string]any{"tbl": map[string]any{"Keys": unp}}
					} else {
						out["UnprocessedKeys"] = map[string]any{}
					}
					b, err := json.Marshal(out)
					require.NoError(t, err)
					return 200, nil, string(b), nil
				}
				s := fakeStore(t, f, sdkOnly)
				st := dynastore.NewStats()
				s.obs = st
				got, err := s.BatchGet(context.Background(), c.keys)
				require.NoError(t, err)
				require.Len(t, got, len(c.keys))
				for j, k := range c.keys {
					if got[j] != nil {
						require.Equal(t, k, got[j].Key())
						require.Equal(t, dynastore.B(k.PK), got[j].Get("v"))
					}
				}
				// Equal keys do not share an item: callers may modify what they
				// get, changing an attribute in place or adding one.
				for j := range got {
					for l := j + 1; l < len(got); l++ {
						if got[j] != nil && got[l] != nil {
							v := got[j].Get("v")
							got[j].Set("v", dynastore.B("changed"))
							require.Equal(t, dynastore.B(c.keys[l].PK), got[l].Get("v"))
							got[j].Set("v", v)
							got[j].Set("mark", dynastore.N("1"))
							require.False(t, got[l].Has("mark"))
							got[j].Delete("mark")
						}
					}
				}
				f.mu.Lock()
				reqs[i] = f.reqs
				f.mu.Unlock()
				require.Equal(t, c.requests, len(reqs[i]), "requests")
				for _, r := range reqs[i] {
					require.Equal(t, dynastore.OpBatchGetItem, r.op)
					require.LessOrEqual(t, len(batchKeys(t, r.body)), dynastore.MaxBatchGet)
					verifySigV4(t, r, testCreds)
				}
				results[i], stats[i] = sortedItems(got), st.Snapshot()
			}
			require.Equal(t, canonicalBodies(t, reqs[0]), canonicalBodies(t, reqs[1]))
			require.Equal(t, results[0], results[1])
			require.Equal(t, stats[0], stats[1])
		})
	}
}

// Both paths page through a table alike: same requests (ExclusiveStartKey
// from the previous page's Next), same pages, same capacity.
func TestDirectScanPagingMatchesSDK(t *testing.T) {
	const size = 25
	table := make([]map[string]any, size)
	for i := range table {
		table[i] = map[string]any{
			"pk": map[string]any{"B": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "\x00p%02d", i))},
			"sk": map[string]any{"B": "AA=="},
			"n":  map[string]any{"N": strconv.Itoa(i) + ".0"},
		}
	}
	serve := func(t *testing.T) func(captured, int) (int, http.Header, string, error) {
		return func(r captured, _ int) (int, http.Header, string, error) {
			var in struct {
				Limit             int
				ExclusiveStartKey map[string]any
				ConsistentRead    bool
			}
			require.NoError(t, json.Unmarshal(r.body, &in))
			require.True(t, in.ConsistentRead)
			start := 0
			if in.ExclusiveStartKey != nil {
				start = slices.IndexFunc(table, func(it map[string]any) bool {
					return it["pk"].(map[string]any)["B"] == in.ExclusiveStartKey["pk"].(map[string]any)["B"]
				}) + 1
				require.Positive(t, start)
			}
			end := size
			if in.Limit > 0 {
				end = min(start+in.Limit, size)
			}
			out := map[string]any{
				"Items":            table[start:end],
				"Count":            end - start,
				"ConsumedCapacity": map[string]any{"TableName": "tbl", "CapacityUnits": 0.5 * float64(end-start)},
			}
			if in.Limit > 0 && end-start == in.Limit {
				out["LastEvaluatedKey"] = map[string]any{"pk": table[end-1]["pk"], "sk": table[end-1]["sk"]}
			}
			b, err := json.Marshal(out)
			require.NoError(t, err)
			return 200, nil, string(b), nil
		}
	}
	cases := []struct {
		name  string
		scan  dynastore.Scan
		pages int
	}{
		{"one page", dynastore.Scan{}, 1},
		{"pages of 7", dynastore.Scan{Limit: 7}, 4},
		{"pages of 5, the last one empty", dynastore.Scan{Limit: 5}, 6},
		{"filtered segment", dynastore.Scan{Limit: 10, Segment: 1, Segments: 4, Filter: dynastore.Compare{Attr: "n", Op: dynastore.OpGE, Val: dynastore.N("0")}}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var reqs [2][]captured
			var pages [2][]dynastore.ScanPage
			var stats [2]map[dynastore.StatKey]dynastore.StatRow
			for i, sdkOnly := range []bool{true, false} {
				f := newFake(nil)
				f.serve = serve(t)
				s := fakeStore(t, f, sdkOnly)
				st := dynastore.NewStats()
				s.obs = st
				sc := c.scan
				var all []dynastore.Item
				for {
					p, err := s.Scan(context.Background(), sc)
					require.NoError(t, err)
					pages[i] = append(pages[i], sortedResult(p).(dynastore.ScanPage))
					all = append(all, p.Items...)
					if p.Next == nil {
						break
					}
					require.Less(t, len(pages[i]), 100)
					sc.After = p.Next
				}
				require.Len(t, all, size)
				for j, it := range all {
					require.Equal(t, dynastore.N(strconv.Itoa(j)), it.Get("n"))
				}
				f.mu.Lock()
				reqs[i] = f.reqs
				f.mu.Unlock()
				for _, r := range reqs[i] {
					require.Equal(t, dynastore.OpScan, r.op)
					verifySigV4(t, r, testCreds)
				}
				stats[i] = st.Snapshot()
			}
			require.Len(t, pages[1], c.pages)
			require.Equal(t, pages[0], pages[1])
			require.Equal(t, stats[0], stats[1])
			require.Equal(t, len(reqs[0]), len(reqs[1]))
			for j := range reqs[0] {
				require.Equal(t, reqs[0][j].url, reqs[1][j].url)
				sameJSON(t, reqs[0][j].body, reqs[1][j].body, "body of page "+strconv.Itoa(j))
			}
		})
	}
}

// BatchGetItem's answer is read for the store's table only, and nulls
// where DynamoDB sends objects or lists read as nothing, as the SDK reads
// them.
func TestDecodeBatchGet(t *testing.T) {
	key := `{"pk":{"B":"aw=="},"sk":{"B":"AA=="}}`
	cases := []struct {
		name              string
		body              string
		items, unp        int
		rcu               float64
		noResponsesMember bool
	}{
		{"items and unprocessed keys", `{"Responses":{"tbl":[` + key + `,` + key + `]},"UnprocessedKeys":{"tbl":{"Keys":[` + key + `],"ConsistentRead":true}},` +
			`"ConsumedCapacity":[{"TableName":"tbl","CapacityUnits":2}]}`, 2, 1, 2, false},
		{"other tables", `{"Responses":{"x":[` + key + `],"tbl":[],"y":[` + key + `]},"UnprocessedKeys":{"x":{"Keys":[` + key + `]},"tbl":{"Keys":[]}}}`, 0, 0, 0, false},
		{"nulls", `{"Responses":{"tbl":null},"UnprocessedKeys":{"tbl":{"Keys":null,"ConsistentRead":null},"x":null},"ConsumedCapacity":null}`, 0, 0, 0, false},
		{"null members", `{"Responses":null,"UnprocessedKeys":null}`, 0, 0, 0, false},
		{"no members", `{}`, 0, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := wireOutput{page: true, table: "tbl"}
			require.NoError(t, out.decode([]byte(c.body)))
			require.Len(t, out.items, c.items)
			require.Equal(t, c.noResponsesMember, out.items == nil)
			require.Len(t, out.unprocessed, c.unp)
			for _, k := range out.unprocessed {
				require.Equal(t, dynastore.Key{PK: []byte("k"), SK: []byte{0}}, k.Key())
			}
			require.Equal(t, c.rcu, out.cc.total)
		})
	}
}

// lateReader is an HTTP client that answers at once and reads request
// bodies only later, as net/http's Transport may.
type lateReader struct {
	mu     sync.Mutex
	bodies []io.Reader
}

func (l *lateReader) Do(req *http.Request) (*http.Response, error) {
	if body, ok := wellFormedTable[strings.TrimPrefix(req.Header.Get("X-Amz-Target"), apiVersionPrefix)]; ok {
		return cannedResponse(req, body), nil
	}
	l.mu.Lock()
	l.bodies = append(l.bodies, req.Body)
	l.mu.Unlock()
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:   io.NopCloser(strings.NewReader("{}")), ContentLength: 2, Request: req,
	}, nil
}

// TestDirectBodyOutlivesDo checks that a client other than directClient
// gets request bodies of their own: the direct path reuses and pools its
// buffers, and a body read after Do returned must still be its request's.
func TestDirectBodyOutlivesDo(t *testing.T) {
	cleanAWSEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", testCreds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testCreds.SecretAccessKey)
	l := &lateReader{}
	s, err := New(context.Background(), Config{
		Table: "tbl", Endpoint: "http://ddb.test:8000", HTTPClient: l, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	require.NotNil(t, s.wire, "the direct path is on")
	const n = 8
	for i := range n {
		_, err := s.Get(context.Background(), dynastore.Key{PK: []byte(fmt.Sprintf("key-%d", i)), SK: []byte{0}})
		require.NoError(t, err)
	}
	require.Len(t, l.bodies, n)
	for i, b := range l.bodies {
		body, err := io.ReadAll(b)
		require.NoError(t, err)
		want := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("key-%d", i)))
		require.Contains(t, string(body), want, "request %d's body, read after Do returned", i)
	}
}
