package dynamo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/redamo/redamo/dynastore"
)

// The direct path sends the data-plane requests (GetItem, PutItem,
// UpdateItem, DeleteItem, TransactWriteItems, Query, BatchGetItem, Scan)
// without the SDK's client: the typed request is written as DynamoDB's
// JSON 1.0 body (json.go), signed with the SDK's own SigV4 signer and
// credentials, sent through the store's HTTP client, and the response is
// read straight into dynastore items.
//
// Why: the SDK's call (middleware stack, its types, its JSON encoder and
// decoder, signing) plus redamo's conversion of items to and from its types
// cost more CPU and allocations per request than the direct path
// (BenchmarkRequest compares the two). What the SDK does beyond signing is generic machinery this fixed
// set of requests does not need. It is paid per item too: a BatchGetItem
// (an MGET) pays it for every item it returns.
//
// The SDK client stays for table management, and for every request when
// the configuration asks for something the direct path does not do (see
// newWire) or Config.SDKOnly is set.
//
// Errors come out in the SDK's shapes (smithyhttp.RequestSendError for a
// failed exchange, smithyhttp.ResponseError around an apiError or a
// decoding failure), so retry.go classifies both paths with the same code.

// apiVersionPrefix starts every X-Amz-Target.
const apiVersionPrefix = "DynamoDB_20120810."

// userAgent identifies the direct path's requests.
const userAgent = "redamo (direct; aws-sdk-go-v2 signer)"

// Header values shared by every request; nothing changes them.
var (
	contentTypeJSON = []string{"application/x-amz-json-1.0"}
	userAgentHeader = []string{userAgent}
	targets         = map[string][]string{}
)

func init() {
	for _, op := range []string{dynastore.OpGetItem, dynastore.OpPutItem, dynastore.OpUpdateItem,
		dynastore.OpDeleteItem, dynastore.OpTransactWriteItems, dynastore.OpQuery,
		dynastore.OpBatchGetItem, dynastore.OpScan} {
		targets[op] = []string{apiVersionPrefix + op}
	}
}

// Error codes the direct path handles itself.
const (
	codeConditionFailed = "ConditionalCheckFailedException"
	codeTxCanceled      = "TransactionCanceledException"
)

// skewCodes are the error codes that say the request's signing time was
// off: definitely (true), or possibly when the server's clock is far from
// ours (false). As the SDK's retryer sorts them.
var skewCodes = map[string]bool{
	"RequestExpired":            true,
	"RequestInTheFuture":        true,
	"RequestTimeTooSkewed":      true,
	"InvalidSignatureException": false,
	"SignatureDoesNotMatch":     false,
	"AuthFailure":               false,
}

// skewThreshold is how far the server's clock must be from ours before an
// ambiguous signature error is taken for skew (the SDK's value).
const skewThreshold = 4 * time.Minute

// wire sends requests on the direct path. It is safe for concurrent use.
type wire struct {
	http      aws.HTTPClient
	direct    bool // http sends through a directClient (sendsDirect)
	creds     aws.CredentialsProvider
	signer    dynamodb.HTTPSignerV4
	endpoints *endpoints
	checksum  bool // verify X-Amz-Crc32 (the SDK's DisableValidateResponseChecksum off)
	// skew is added to the clock when signing, in nanoseconds: the server's
	// clock minus ours, learnt from the Date of a response that rejected a
	// request for its signing time. The rejected request itself stays
	// failed (final, as on the SDK path); the ones after it are signed
	// right. The SDK client learns the same offset only between the retries
	// of its own retryer, which redamo turns off, so there it never applies.
	skew atomic.Int64
}

// newWire returns the direct path for db's configuration, or nil and the
// reason when that configuration needs something only the SDK client does.
func newWire(db *dynamodb.Client, table string, hc aws.HTTPClient) (*wire, string) {
	o := db.Options()
	switch {
	case o.EndpointResolver != nil:
		return nil, "a custom (legacy) endpoint resolver is configured"
	case o.EndpointDiscovery.EnableEndpointDiscovery == aws.EndpointDiscoveryEnabled:
		return nil, "endpoint discovery is enabled"
	case o.Credentials == nil:
		// Anonymous: the SDK client sends such requests unsigned.
		return nil, "no credentials provider"
	case strings.Contains(o.Region, "fips"):
		return nil, "the region names a FIPS pseudo-region"
	}
	eps, err := newEndpoints(o, table)
	if err != nil {
		return nil, err.Error()
	}
	return &wire{
		http:      hc,
		direct:    sendsDirect(hc),
		creds:     o.Credentials,
		signer:    o.HTTPSignerV4,
		endpoints: eps,
		checksum:  !o.DisableValidateResponseChecksum,
	}, ""
}

// ---- endpoints ------------------------------------------------------------------

// endpoint is where requests go and how they are signed.
type endpoint struct {
	url           url.URL
	header        http.Header // set on every request (the resolver's; usually none)
	signingName   string
	signingRegion string
}

// endpoints resolves the endpoint with the SDK's resolver, once: or once
// per account, when the configuration routes requests by the account the
// credentials belong to (account-based endpoints).
type endpoints struct {
	fixed   *endpoint // nil: it depends on the account
	resolve func(account string) (*endpoint, error)
	last    atomic.Pointer[accountEndpoint]
}

type accountEndpoint struct {
	account string
	ep      *endpoint
	err     error
}

// sampleAccount is a well-formed account id: resolving with and without one
// tells whether the endpoint depends on it.
const sampleAccount = "111122223333"

func newEndpoints(o dynamodb.Options, table string) (*endpoints, error) {
	resolver := o.EndpointResolverV2
	if resolver == nil {
		resolver = dynamodb.NewDefaultEndpointResolverV2()
	}
	resolve := func(account string) (*endpoint, error) {
		p := dynamodb.EndpointParameters{
			Region:                aws.String(o.Region),
			UseDualStack:          aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
			UseFIPS:               aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
			Endpoint:              o.BaseEndpoint,
			AccountIdEndpointMode: aws.String(string(o.AccountIDEndpointMode)),
			ResourceArn:           aws.String(table),
		}
		if o.Region == "" {
			p.Region = nil
		}
		if account != "" && o.AccountIDEndpointMode != aws.AccountIDEndpointModeDisabled {
			p.AccountId = aws.String(account)
		}
		r, err := resolver.ResolveEndpoint(context.Background(), p)
		if err != nil {
			return nil, fmt.Errorf("failed to resolve service endpoint, %w", err)
		}
		return toEndpoint(r, o.Region)
	}
	none, errNone := resolve("")
	some, errSome := resolve(sampleAccount)
	switch {
	case errNone != nil && errSome != nil:
		return nil, errNone
	case errNone == nil && errSome == nil && sameEndpoint(none, some):
		return &endpoints{fixed: none}, nil
	}
	return &endpoints{resolve: resolve}, nil
}

func sameEndpoint(a, b *endpoint) bool {
	return a.url == b.url && a.signingName == b.signingName && a.signingRegion == b.signingRegion &&
		fmt.Sprint(a.header) == fmt.Sprint(b.header)
}

// toEndpoint takes what the direct path needs from a resolved endpoint:
// URL, headers, and the SigV4 signing name and region (the resolver may
// override them, as the SDK's auth scheme resolution lets it).
func toEndpoint(r smithyendpoints.Endpoint, region string) (*endpoint, error) {
	if r.URI.Scheme != "http" && r.URI.Scheme != "https" {
		return nil, fmt.Errorf("endpoint %q: unsupported scheme", r.URI.String())
	}
	ep := &endpoint{
		url:           url.URL{Scheme: r.URI.Scheme, Host: r.URI.Host, Path: smithyhttp.JoinPath(r.URI.Path, "/")},
		header:        r.Headers,
		signingName:   "dynamodb",
		signingRegion: region,
	}
	if r.URI.RawPath != "" {
		ep.url.RawPath = smithyhttp.JoinPath(r.URI.RawPath, "/")
	}
	if opts, ok := smithyauth.GetAuthOptions(&r.Properties); ok {
		for _, opt := range opts {
			if opt.SchemeID != smithyauth.SchemeIDSigV4 {
				return nil, fmt.Errorf("endpoint %q asks for auth scheme %s", r.URI.String(), opt.SchemeID)
			}
			if n, ok := smithyhttp.GetSigV4SigningName(&opt.SignerProperties); ok {
				ep.signingName = n
			}
			if r, ok := smithyhttp.GetSigV4SigningRegion(&opt.SignerProperties); ok {
				ep.signingRegion = r
			}
		}
	}
	return ep, nil
}

func (e *endpoints) get(account string) (*endpoint, error) {
	if e.fixed != nil {
		return e.fixed, nil
	}
	if l := e.last.Load(); l != nil && l.account == account {
		return l.ep, l.err
	}
	ep, err := e.resolve(account)
	e.last.Store(&accountEndpoint{account: account, ep: ep, err: err})
	return ep, err
}

// ---- requests -------------------------------------------------------------------

// bufs holds request and response bodies.
var bufs = sync.Pool{New: func() any { return new([]byte) }}

func getBuf() *[]byte { return bufs.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= maxKeptReqBuf {
		*b = (*b)[:0]
		bufs.Put(b)
	}
}

// wireRequest is one request's body, ready for its attempts.
type wireRequest struct {
	op   string
	buf  *[]byte // the body
	hash string  // hex SHA-256 of the body, which SigV4 signs
}

func newWireRequest(op string) *wireRequest {
	return &wireRequest{op: op, buf: getBuf()}
}

// seal computes the payload hash once the body is complete.
func (r *wireRequest) seal() {
	sum := sha256.Sum256(*r.buf)
	r.hash = hex.EncodeToString(sum[:])
}

func (r *wireRequest) release() { putBuf(r.buf) }

// outgoing holds what an attempt's http.Request points to, in one
// allocation: its URL and its body.
type outgoing struct {
	url  url.URL
	body body
}

// body is an http.Request body over a request's bytes.
type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

// send makes one attempt and decodes a successful response into res.
func (w *wire) send(ctx context.Context, r *wireRequest, res *wireOutput) error {
	creds, err := w.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("failed to retrieve credentials: %w", err)
	}
	ep, err := w.endpoints.get(creds.AccountID)
	if err != nil {
		return err
	}
	out := &outgoing{url: ep.url}
	out.body.Reset(*r.buf)
	h := make(http.Header, 8)
	for k, v := range ep.header {
		h[k] = v
	}
	h["Content-Type"] = contentTypeJSON
	h["X-Amz-Target"] = targets[r.op]
	h["User-Agent"] = userAgentHeader
	h["Accept-Encoding"] = acceptIdentity // see encoding.go
	req := (&http.Request{
		Method:        http.MethodPost,
		URL:           &out.url,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          &out.body,
		ContentLength: int64(len(*r.buf)),
		Host:          out.url.Host,
	}).WithContext(ctx)
	now := time.Now().Add(time.Duration(w.skew.Load()))
	if err := w.signer.SignHTTP(ctx, creds, req, r.hash, ep.signingName, ep.signingRegion, now); err != nil {
		return fmt.Errorf("sign http: %w", err)
	}
	var resp *http.Response
	if w.direct {
		resp, err = w.http.Do(req)
	} else {
		resp, err = doDetached(w.http, req)
	}
	if err != nil {
		return &smithyhttp.RequestSendError{Err: err}
	}
	at := time.Now()
	rbuf := getBuf()
	defer putBuf(rbuf)
	err = readBody(resp, rbuf)
	if err == nil {
		err = receive(resp.Header, rbuf, w.checksum)
	}
	if err != nil {
		return responseError(resp, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		aerr, err := decodeError(resp.Header, *rbuf)
		if err != nil {
			return responseError(resp, err)
		}
		w.learnSkew(aerr.code, resp.Header, at)
		return responseError(resp, aerr)
	}
	if err := res.decode(*rbuf); err != nil {
		var se *errSyntax
		if errors.As(err, &se) {
			return responseError(resp, err)
		}
		return err
	}
	return nil
}

func responseError(resp *http.Response, err error) error {
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: err}
}

// readBody reads a response body into buf and closes it, which lets the
// connection carry the next request.
func readBody(resp *http.Response, buf *[]byte) error {
	defer resp.Body.Close()
	b := (*buf)[:0]
	if n := resp.ContentLength; n > 0 && int64(cap(b)) < n {
		b = make([]byte, 0, n)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := resp.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*buf = b
			return nil
		}
		if err != nil {
			*buf = b
			return fmt.Errorf("failed to read response body, %w", err)
		}
	}
}

// checkCRC32 verifies DynamoDB's checksum of the body as received (still
// compressed, if it was), when it sent one. A body that fails it is not
// trusted: for a write that means an unknown outcome, a read is asked
// again. (The SDK only logs the mismatch.)
func checkCRC32(h http.Header, b []byte) error {
	v := h.Get("X-Amz-Crc32")
	if v == "" {
		return nil
	}
	want, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("unable to parse checksum header %v, %w", v, err)
	}
	if got := crc32.ChecksumIEEE(b); got != uint32(want) {
		return fmt.Errorf("response did not match expected checksum, %d, %d", want, got)
	}
	return nil
}

// learnSkew moves the signing clock to the server's after an error that
// blames the signing time.
func (w *wire) learnSkew(code string, h http.Header, at time.Time) {
	definite, ok := skewCodes[code]
	if !ok {
		return
	}
	server, err := smithyhttp.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	skew := server.Sub(at)
	if off := skew - time.Duration(w.skew.Load()); definite || off > skewThreshold || off < -skewThreshold {
		w.skew.Store(int64(skew))
	}
}

// ---- responses ------------------------------------------------------------------

// capacity is the units of a response's ConsumedCapacity entries, summed:
// those reported with a read/write split, and the totals of the others.
type capacity struct {
	read, write, total float64
}

// add adds one entry: units in total, read and write units when split.
func (c *capacity) add(units, read, write float64, split bool) {
	if split {
		c.read += read
		c.write += write
	} else {
		c.total += units
	}
}

// addTo adds c to r; write says how to count totals without a read/write
// split.
func (c capacity) addTo(r *dynastore.Request, write bool) {
	r.RCU += c.read
	r.WCU += c.write
	if write {
		r.WCU += c.total
	} else {
		r.RCU += c.total
	}
}

// wireOutput is what a successful response carries.
type wireOutput struct {
	// page: the response is a page of items (Query, Scan, BatchGetItem),
	// each decoded from its own copy so that one kept item does not keep
	// the page.
	page bool
	// table: the response is BatchGetItem's, whose items and unprocessed
	// keys are grouped by table; only this table's are read (the request
	// names no other).
	table string
	item  dynastore.Item   // Item or Attributes
	items []dynastore.Item // Items, or the table's Responses
	last  dynastore.Item   // LastEvaluatedKey
	// unprocessed are the table's UnprocessedKeys, to be asked again.
	unprocessed []dynastore.Item
	cc          capacity
}

func (o *wireOutput) decode(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	d := newDecoder(b)
	if !o.page {
		d.str = string(b)
	}
	// An array for TransactWriteItems, one object for the others.
	for more := d.open('{'); more; more = d.more('}') {
		switch string(d.key()) {
		case "Item", "Attributes":
			o.item = d.item()
		case "Items":
			o.items = []dynastore.Item{}
			for more := d.open('['); more; more = d.more(']') {
				o.items = append(o.items, d.ownItem())
			}
		case "LastEvaluatedKey":
			o.last = d.item()
		case "Responses":
			o.items = []dynastore.Item{}
			d.tables(o.table, func() {
				if d.null() {
					return
				}
				for more := d.open('['); more; more = d.more(']') {
					o.items = append(o.items, d.ownItem())
				}
			})
		case "UnprocessedKeys":
			d.tables(o.table, func() {
				if d.null() {
					return
				}
				for more := d.open('{'); more; more = d.more('}') {
					if string(d.key()) != "Keys" {
						d.skip()
						continue
					}
					if d.null() {
						continue
					}
					for more := d.open('['); more; more = d.more(']') {
						o.unprocessed = append(o.unprocessed, d.item())
					}
				}
			})
		case "ConsumedCapacity":
			if d.peek() == '[' {
				for more := d.open('['); more; more = d.more(']') {
					d.capacity(&o.cc)
				}
			} else if !d.null() {
				d.capacity(&o.cc)
			}
		default:
			d.skip()
		}
	}
	return d.err
}

// tables consumes an object keyed by table name (null: none), reading the
// value of table with read and skipping the others.
func (d *jsonDecoder) tables(table string, read func()) {
	if d.null() {
		return
	}
	for more := d.open('{'); more; more = d.more('}') {
		if string(d.key()) == table {
			read()
		} else {
			d.skip()
		}
	}
}

// capacity reads one ConsumedCapacity entry into c.
func (d *jsonDecoder) capacity(c *capacity) {
	var units, read, write float64
	split := false
	for more := d.open('{'); more; more = d.more('}') {
		switch string(d.key()) {
		case "CapacityUnits":
			units = d.number()
		case "ReadCapacityUnits":
			read, split = d.number(), true
		case "WriteCapacityUnits":
			write, split = d.number(), true
		default:
			d.skip()
		}
	}
	c.add(units, read, write, split)
}

// apiError is an error response: the code and message, and the data the
// errors redamo reads carry. It is what smithy.APIError is to the SDK path.
type apiError struct {
	code, message string
	item          dynastore.Item // ConditionalCheckFailedException's old item
	reasons       []txReason     // TransactionCanceledException's
}

var _ smithy.APIError = (*apiError)(nil)

func (e *apiError) ErrorCode() string             { return e.code }
func (e *apiError) ErrorMessage() string          { return e.message }
func (e *apiError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }
func (e *apiError) Error() string {
	return fmt.Sprintf("api error %s: %s", e.code, e.message)
}

// decodeError reads an error response as the SDK does: the code from the
// X-Amzn-ErrorType header, else the body's __type, else its code, with any
// namespace ("...#") and suffix (":...") cut off.
func decodeError(h http.Header, b []byte) (*apiError, error) {
	e := &apiError{}
	var typ, code string
	if len(bytes.TrimSpace(b)) > 0 {
		d := newDecoder(b)
		d.str = string(b)
		for more := d.open('{'); more; more = d.more('}') {
			switch k := d.key(); {
			case string(k) == "__type":
				typ = d.optString()
			case string(k) == "code" && d.peek() == '"':
				code = d.string()
			case strings.EqualFold(string(k), "message"):
				e.message = d.optString()
			case string(k) == "Item":
				e.item = d.item()
			case string(k) == "CancellationReasons":
				e.reasons = d.reasons()
			default:
				d.skip()
			}
		}
		if d.err != nil {
			return nil, fmt.Errorf("failed to decode response body, %w", d.err)
		}
	}
	e.code = "UnknownError"
	switch {
	case h.Get("X-Amzn-ErrorType") != "":
		e.code = sanitizeCode(h.Get("X-Amzn-ErrorType"))
	case typ != "":
		e.code = sanitizeCode(typ)
	case code != "":
		e.code = sanitizeCode(code)
	}
	return e, nil
}

func sanitizeCode(c string) string {
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	if i := strings.IndexByte(c, '#'); i >= 0 {
		c = c[i+1:]
	}
	return c
}

func (d *jsonDecoder) reasons() []txReason {
	if d.null() {
		return nil
	}
	out := []txReason{}
	for more := d.open('['); more; more = d.more(']') {
		var r txReason
		for more := d.open('{'); more; more = d.more('}') {
			switch string(d.key()) {
			case "Code":
				r.code = d.optString()
			case "Message":
				r.message = d.optString()
			case "Item":
				r.item = d.item()
			default:
				d.skip()
			}
		}
		out = append(out, r)
	}
	return out
}
