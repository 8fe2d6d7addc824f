// Package dynamo is the dynastore.Store backend on Amazon DynamoDB, built on
// aws-sdk-go-v2. It is the only package in redamo that imports the AWS SDK.
//
// Data-plane requests (single items, transactions, queries, batched reads,
// scans) take a direct path (wire.go) that writes DynamoDB's JSON itself
// and uses only the SDK's signer, credentials and endpoint resolution;
// table management goes through the SDK's client.
//
// It renders typed conditions and updates to expression strings, converts
// values both ways, maps DynamoDB's errors to dynastore's sentinels, retries
// transient failures itself (fast and bounded, never repeating a write that
// may already have been applied), reports every request to a
// dynastore.Observer, can create its table, and measures how far the local
// clock is from DynamoDB's from the Date of its responses (clock.go).
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/retry"
)

// Defaults of Config's retry and timeout settings.
const (
	DefaultMaxAttempts         = retry.DefaultMaxAttempts
	DefaultRequestTimeout      = retry.DefaultAttemptTimeout
	DefaultRetryBudget         = retry.DefaultBudget
	DefaultBackoffBase         = retry.DefaultBase
	DefaultBackoffMax          = retry.DefaultCap
	DefaultThrottleBackoffBase = retry.DefaultThrottleBase
	DefaultThrottleBackoffMax  = retry.DefaultThrottleCap
	// TxInProgressRetry is how long after its first attempt a transaction
	// answered TransactionInProgressException (its ClientRequestToken is
	// still being processed) is retried: DynamoDB's API reference asks
	// for at least one retry after 5 s have passed since the first
	// attempt, which is what completes the transaction in progress. It
	// extends the retry budget for that request only.
	TxInProgressRetry = 5 * time.Second
	// DefaultLocalRegion is the region used with an endpoint on this
	// machine (DynamoDB Local) when none is configured: DynamoDB Local keeps
	// tables per region.
	DefaultLocalRegion = "us-east-1"
	// LocalAccessKey is the access key used with an endpoint on this
	// machine when the environment has no credentials. DynamoDB Local keeps
	// tables per access key, so every redamo process and test on it uses
	// this one.
	LocalAccessKey = "redamo"
)

// Config configures a Store.
type Config struct {
	// Table is the table name (3-255 of [a-zA-Z0-9_.-]).
	Table string
	// Region is the AWS region; empty: the SDK's default chain (AWS_REGION,
	// shared config), or DefaultLocalRegion when the endpoint is on this
	// machine (loadAWSConfig).
	Region string
	// Profile is the shared configuration profile to take credentials and
	// settings from; empty: the SDK's default (AWS_PROFILE, or "default").
	Profile string
	// Endpoint is a custom endpoint URL such as DynamoDB Local's
	// http://127.0.0.1:8000; empty: AWS.
	Endpoint string
	// CreateTable creates the table if it does not exist (pk B hash, sk B
	// range, on-demand billing, TTL on "ttl") and waits until it is active;
	// on an existing table with TTL off it turns TTL on. Without it, a
	// missing table or one with TTL off is an error (prepareTable).
	CreateTable bool
	// VerifyChecksum verifies X-Amz-Crc32 with a custom Endpoint too (it
	// is always verified on AWS). Off by default there because DynamoDB
	// Local's error responses lack the header, which the SDK's check takes
	// for a mismatch and logs a warning for, on every failed condition.
	VerifyChecksum bool
	// Observer receives every request (nil: none).
	Observer dynastore.Observer
	// HTTPClient sends the requests (nil: NewHTTPClient()). Tests wrap it to
	// inject faults.
	HTTPClient aws.HTTPClient
	// MaxAttempts bounds the attempts of one request (0: DefaultMaxAttempts).
	MaxAttempts int
	// RequestTimeout bounds one attempt (0: DefaultRequestTimeout).
	RequestTimeout time.Duration
	// RetryBudget bounds one request across all its attempts and backoff
	// (0: DefaultRetryBudget).
	RetryBudget time.Duration
	// BackoffBase and BackoffMax shape the jittered exponential backoff
	// between attempts (0: DefaultBackoffBase, DefaultBackoffMax).
	BackoffBase, BackoffMax time.Duration
	// ThrottleBackoffBase and ThrottleBackoffMax shape the backoff after
	// throttling (0: DefaultThrottleBackoffBase, DefaultThrottleBackoffMax).
	ThrottleBackoffBase, ThrottleBackoffMax time.Duration
	// RetryQuota is the retry quota the store's retries draw from (nil:
	// retry.ProcessQuota, shared by the process).
	RetryQuota *retry.Quota
	// Logger receives the few events worth a log line (nil: slog.Default()).
	Logger *slog.Logger
	// SDKOnly sends every request through the SDK's client, as before the
	// direct path (wire.go) existed: a way back, and what that path is
	// measured against.
	SDKOnly bool
	// ClockProbes lets the store send requests of its own (labelled
	// ClockLabel) to measure DynamoDB's clock: a few at start, so that
	// the estimate is sharp within seconds, and one a minute while no
	// other request is made (clock.go). Without it the estimate rests on
	// the responses to other requests alone. Off by default so that a
	// store built for a test or a tool makes no request it was not asked
	// for; the server turns it on.
	ClockProbes bool
}

// Store is a dynastore.Store on one DynamoDB table. It is safe for concurrent use.
type Store struct {
	db *dynamodb.Client
	// wire is the direct path for the hot requests; nil: the SDK client
	// sends everything.
	wire   *wire
	table  string
	obs    dynastore.Observer
	policy retry.Policy
	log    *slog.Logger
	http   aws.HTTPClient
	// clock measures DynamoDB's clock against the local one (clock.go).
	clock *clockEstimator
	// stopClock stops the clock's probes and waits for them (nil: none);
	// calibrated is closed once their first calibration is over.
	stopClock  func()
	calibrated chan struct{}
	// count caches the table's item count (count.go).
	count itemCount
	// provisioned is the capacity createTable gives the table (nil:
	// on-demand); set by CreateTable (admin.go).
	provisioned *types.ProvisionedThroughput
}

var (
	_ dynastore.Store          = (*Store)(nil)
	_ dynastore.SnapshotReader = (*Store)(nil)
	_ dynastore.Clocked        = (*Store)(nil)
)

var tableNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// Configuration errors of New, for callers that tell the user which
// setting to fix.
var (
	ErrTableName = errors.New("dynamo: invalid table name")
	ErrNoRegion  = errors.New("dynamo: no AWS region configured (set the region or AWS_REGION)")
	// ErrNoCredentials: the SDK's default chain found no credentials for
	// an endpoint that is not on this machine.
	ErrNoCredentials = errors.New("dynamo: no AWS credentials found (the SDK's default chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, web identity, container or EC2 instance role)")
)

// New returns a Store on cfg.Table, creating the table first when
// cfg.CreateTable is set, and checks the table's key schema and TTL
// setting (prepareTable). Region and credentials are resolved by
// loadAWSConfig: a missing one is an error at once, not at the first
// request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.prepareTable(ctx, cfg.CreateTable); err != nil {
		return nil, err
	}
	s.calibrated = make(chan struct{})
	if cfg.ClockProbes {
		s.startClockProbes()
	} else {
		close(s.calibrated)
	}
	return s, nil
}

// open builds a Store on cfg's table without looking at the table.
func open(ctx context.Context, cfg Config) (*Store, error) {
	if !tableNameRE.MatchString(cfg.Table) {
		return nil, fmt.Errorf("%w %q (3-255 characters of a-z, A-Z, 0-9, _ . -)", ErrTableName, cfg.Table)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	awsCfg, endpoint, err := loadAWSConfig(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = awsCfg.HTTPClient
		if b, ok := hc.(*awshttp.BuildableClient); ok {
			hc = newDirectClient(b)
		}
		awsCfg.HTTPClient = hc
	}
	// Every DynamoDB response tells the time (clock.go); only DynamoDB's,
	// so the sampler wraps the client of DynamoDB's requests alone, not
	// that of the configuration (credentials endpoints).
	clock := newClockEstimator(time.Now())
	hc = &clockClient{next: hc, clock: clock}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		if endpoint != "" && !cfg.VerifyChecksum {
			// DynamoDB Local's error responses carry no CRC32 header,
			// which the SDK's check takes for a mismatch.
			o.DisableValidateResponseChecksum = true
		}
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 0
		o.HTTPClient = hc
		o.APIOptions = append(o.APIOptions, addGunzip)
	})
	s := &Store{
		db:    db,
		table: cfg.Table,
		obs:   cfg.Observer,
		log:   log,
		http:  hc,
		clock: clock,
		policy: retry.Policy{
			MaxAttempts:    orDefault(cfg.MaxAttempts, DefaultMaxAttempts),
			AttemptTimeout: orDefault(cfg.RequestTimeout, DefaultRequestTimeout),
			Budget:         orDefault(cfg.RetryBudget, DefaultRetryBudget),
			Base:           orDefault(cfg.BackoffBase, DefaultBackoffBase),
			Cap:            orDefault(cfg.BackoffMax, DefaultBackoffMax),
			ThrottleBase:   orDefault(cfg.ThrottleBackoffBase, DefaultThrottleBackoffBase),
			ThrottleCap:    orDefault(cfg.ThrottleBackoffMax, DefaultThrottleBackoffMax),
			Quota:          cfg.RetryQuota,
			Describe:       errorDetail,
		},
	}
	if s.policy.Quota == nil {
		s.policy.Quota = retry.ProcessQuota
	}
	if s.obs == nil {
		s.obs = dynastore.Observers(nil)
	}
	if !cfg.SDKOnly {
		var why string
		if s.wire, why = newWire(db, cfg.Table, hc); s.wire == nil {
			s.log.Info("DynamoDB requests go through the SDK client", "reason", why)
		}
	}
	return s, nil
}

// credentialsTimeout bounds the first retrieval of credentials at start
// (the SDK's chain may ask the instance metadata service, or STS).
const credentialsTimeout = 10 * time.Second

// loadAWSConfig loads the SDK's configuration for cfg and settles region
// and credentials, never replacing configured ones:
//   - the region comes from cfg.Region, AWS_REGION or the profile; for an
//     endpoint on this machine (DynamoDB Local, see onThisMachine) without
//     one, DefaultLocalRegion, said in a log line; anywhere else (AWS, a
//     VPC endpoint, a proxy) a missing region is ErrNoRegion, since it
//     chooses where the data lives and what requests are signed for;
//   - credentials come from the SDK's default chain (environment,
//     profile, web identity, container and instance roles); only for an
//     endpoint on this machine whose environment configures none does the
//     static LocalAccessKey stand in, said in a log line. Elsewhere they
//     are retrieved once here, so that missing ones are ErrNoCredentials
//     at start and not an error on every command.
//
// It returns the endpoint requests go to: cfg.Endpoint, one from the
// environment (AWS_ENDPOINT_URL_DYNAMODB), or empty for AWS.
func loadAWSConfig(ctx context.Context, cfg Config, log *slog.Logger) (aws.Config, string, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if cfg.HTTPClient == nil {
		// Handed to the loader so that it can apply AWS_CA_BUNDLE.
		opts = append(opts, config.WithHTTPClient(sdkHTTPClient()))
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, "", fmt.Errorf("dynamo: loading AWS configuration: %w", err)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = aws.ToString(dynamodb.NewFromConfig(awsCfg).Options().BaseEndpoint)
	}
	local := onThisMachine(endpoint)
	if awsCfg.Region == "" {
		switch {
		case local:
			awsCfg.Region = DefaultLocalRegion
			log.Info("no AWS region configured; using the default region for a local endpoint",
				"region", DefaultLocalRegion, "endpoint", endpoint)
		case endpoint != "":
			return aws.Config{}, "", fmt.Errorf("%w: endpoint %s is not on this machine (a VPC endpoint or a proxy reaches a region of AWS), so requests must be signed for the region the table lives in",
				ErrNoRegion, endpoint)
		default:
			return aws.Config{}, "", ErrNoRegion
		}
	}
	if local {
		if !haveCredentials(ctx, awsCfg, cfg.Profile != "") {
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider(LocalAccessKey, LocalAccessKey, "")
			log.Info("no AWS credentials configured; signing for a local endpoint with the local access key",
				"access_key", LocalAccessKey, "endpoint", endpoint)
		}
		return awsCfg, endpoint, nil
	}
	if awsCfg.Credentials == nil {
		return aws.Config{}, "", fmt.Errorf("%w: no credentials provider", ErrNoCredentials)
	}
	rctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
	defer cancel()
	if _, err := awsCfg.Credentials.Retrieve(rctx); err != nil {
		return aws.Config{}, "", fmt.Errorf("%w: %w", ErrNoCredentials, err)
	}
	return awsCfg, endpoint, nil
}

// onThisMachine reports whether endpoint is on this machine: a loopback
// address or localhost, where DynamoDB Local runs and where requests cannot
// reach AWS.
func onThisMachine(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// haveCredentials reports whether the environment configures credentials
// that resolve (profile: a profile was named in the configuration).
// Without any hint of them it does not ask the chain at all:
// its last resort, the EC2 instance metadata service, takes seconds to time
// out on a laptop or CI machine.
func haveCredentials(ctx context.Context, cfg aws.Config, profile bool) bool {
	hint := profile
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		if os.Getenv(v) != "" {
			hint = true
		}
	}
	if f := os.Getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
		hint = hint || fileExists(f)
	} else if home, err := os.UserHomeDir(); err == nil {
		hint = hint || fileExists(filepath.Join(home, ".aws", "credentials"))
	}
	if !hint || cfg.Credentials == nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := cfg.Credentials.Retrieve(rctx)
	return err == nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// NewHTTPClient returns the HTTP client a Store uses by default (see
// directClient), minus what New adds from the SDK's configuration (a CA
// bundle). Tests wrap it to inject faults.
func NewHTTPClient() aws.HTTPClient {
	return newDirectClient(sdkHTTPClient())
}

// sdkHTTPClient configures the SDK's client, which directClient takes its
// settings from: keep-alive connections, enough idle ones per host for many
// concurrent clients, and dial and TLS handshake timeouts (each attempt's
// context bounds the rest).
func sdkHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) {
			d.Timeout = 2 * time.Second
			d.KeepAlive = 30 * time.Second
		}).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = 0 // no global limit; MaxIdleConnsPerHost bounds it
			tr.MaxIdleConnsPerHost = 1024
			// Shorter than servers' idle timeouts, so a request rarely goes
			// out on a connection the server is closing (such a failure
			// cannot be told apart from one the server received).
			tr.IdleConnTimeout = 25 * time.Second
			tr.TLSHandshakeTimeout = 3 * time.Second
		})
}

// Table returns the table name.
func (s *Store) Table() string { return s.table }

// Close stops the clock's probes and releases idle connections. The
// Store must not be used afterwards.
func (s *Store) Close() error {
	if s.stopClock != nil {
		s.stopClock()
	}
	if c, ok := s.http.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}

// ---- request plumbing ----------------------------------------------------------

// call runs one logical request with retries, maps its error and reports it
// to the Observer exactly once. fn makes one attempt and adds the capacity
// it consumed to r.
func (s *Store) call(ctx context.Context, op string, mode retry.Mode, fn func(ctx context.Context, r *dynastore.Request) error) error {
	start := time.Now()
	r := dynastore.Request{Label: dynastore.Label(ctx), Op: op}
	n, err := s.policy.Run(ctx, op, mode, func(actx context.Context) error { return attempt(actx, &r, fn) })
	if err != nil {
		err = mapErr(op, err)
	}
	r.Attempts, r.Duration, r.Err = n, time.Since(start), err
	s.obs.Observe(ctx, r)
	return err
}

// attempt makes one attempt of a request and classifies its error.
func attempt(ctx context.Context, r *dynastore.Request, fn func(ctx context.Context, r *dynastore.Request) error) error {
	// Once the whole request is written the server may act on it; a
	// failure before that proves it was not applied.
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		},
	})
	err := fn(ctx, r)
	if err == nil {
		return nil
	}
	var f *retry.Failure
	if errors.As(err, &f) {
		return err
	}
	return classify(err, ctx, wrote.Load())
}

var storeErrors = []error{
	dynastore.ErrConditionFailed, dynastore.ErrTxCanceled, dynastore.ErrTxConflict,
	dynastore.ErrItemTooLarge, dynastore.ErrTxTooLarge, dynastore.ErrKeyTooLarge,
	dynastore.ErrThrottled, dynastore.ErrUnavailable, dynastore.ErrOutcomeUnknown, dynastore.ErrInvalid,
}

func mapErr(op string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		old, cerr := fromItem(ccf.Item)
		if cerr != nil {
			return cerr
		}
		return &dynastore.ConditionFailedError{Old: old}
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.code == codeConditionFailed {
		return &dynastore.ConditionFailedError{Old: ae.item}
	}
	for _, se := range storeErrors {
		if errors.Is(err, se) {
			return err
		}
	}
	return mapFinal(op, err)
}

// addCapacity adds the SDK's consumed capacity to r (see capacity.addTo).
func addCapacity(r *dynastore.Request, cc *types.ConsumedCapacity, write bool) {
	if cc == nil {
		return
	}
	var c capacity
	c.add(aws.ToFloat64(cc.CapacityUnits), aws.ToFloat64(cc.ReadCapacityUnits), aws.ToFloat64(cc.WriteCapacityUnits),
		cc.ReadCapacityUnits != nil || cc.WriteCapacityUnits != nil)
	c.addTo(r, write)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// ---- single items ----------------------------------------------------------------

// Get implements dynastore.Store.
func (s *Store) Get(ctx context.Context, k dynastore.Key) (dynastore.Item, error) {
	if err := dynastore.ValidateKey(k); err != nil {
		return nil, err
	}
	return s.sendItem(ctx, &itemRequest{op: dynastore.OpGetItem, key: k})
}

// Put implements dynastore.Store. A handed-over item is sent as it is
// (made canonical in place) instead of being copied first.
func (s *Store) Put(ctx context.Context, it dynastore.Item, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := dynastore.ValidateReturn(o.Return, false); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateCond(o.Cond); err != nil {
		return nil, err
	}
	normalize := dynastore.NormalizeItemSize
	if o.Handover {
		normalize = dynastore.AdoptItem
	}
	norm, _, err := normalize(it)
	if err != nil {
		return nil, err
	}
	e := newExprs()
	cond, err := e.Cond(o.Cond)
	if err != nil {
		return nil, err
	}
	return s.sendItem(ctx, &itemRequest{op: dynastore.OpPutItem, item: norm, cond: cond, e: e,
		ret: o.Return, oldOnFail: o.OldOnFailure && cond != ""})
}

// Update implements dynastore.Store.
func (s *Store) Update(ctx context.Context, k dynastore.Key, u dynastore.Update, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := dynastore.ValidateKey(k); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateReturn(o.Return, true); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateUpdate(u); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateCond(o.Cond); err != nil {
		return nil, err
	}
	e := newExprs()
	upd, err := e.Update(u)
	if err != nil {
		return nil, err
	}
	cond, err := e.Cond(o.Cond)
	if err != nil {
		return nil, err
	}
	return s.sendItem(ctx, &itemRequest{op: dynastore.OpUpdateItem, key: k, update: upd, cond: cond, e: e,
		ret: o.Return, oldOnFail: o.OldOnFailure && cond != ""})
}

// Delete implements dynastore.Store.
func (s *Store) Delete(ctx context.Context, k dynastore.Key, o dynastore.WriteOptions) (dynastore.Item, error) {
	if err := dynastore.ValidateKey(k); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateReturn(o.Return, false); err != nil {
		return nil, err
	}
	if err := dynastore.ValidateCond(o.Cond); err != nil {
		return nil, err
	}
	e := newExprs()
	cond, err := e.Cond(o.Cond)
	if err != nil {
		return nil, err
	}
	return s.sendItem(ctx, &itemRequest{op: dynastore.OpDeleteItem, key: k, cond: cond, e: e,
		ret: o.Return, oldOnFail: o.OldOnFailure && cond != ""})
}

// sendItem sends a single-item request and returns the item (GetItem) or
// attributes (writes) of its answer. Writes are retried only when they
// certainly were not applied.
func (s *Store) sendItem(ctx context.Context, r *itemRequest) (dynastore.Item, error) {
	write := r.op != dynastore.OpGetItem
	mode := retry.Read
	if write {
		mode = retry.Once
	}
	var ret dynastore.Item
	if s.wire == nil {
		send, err := s.sdkItem(r)
		if err != nil {
			return nil, err
		}
		err = s.call(ctx, r.op, mode, func(ctx context.Context, rq *dynastore.Request) error {
			attrs, cc, err := send(ctx)
			if err != nil {
				return err
			}
			addCapacity(rq, cc, write)
			ret, err = fromItem(attrs)
			return err
		})
		return ret, err
	}
	wr := newWireRequest(r.op)
	defer wr.release()
	var err error
	if *wr.buf, err = r.appendJSON(*wr.buf, s.table, false); err != nil {
		return nil, err
	}
	wr.seal()
	err = s.call(ctx, r.op, mode, func(ctx context.Context, rq *dynastore.Request) error {
		var out wireOutput
		if err := s.wire.send(ctx, wr, &out); err != nil {
			return err
		}
		out.cc.addTo(rq, write)
		ret = out.item
		return nil
	})
	return ret, err
}

// ---- batches ----------------------------------------------------------------------

// batchParallel bounds the BatchGetItem requests one BatchGet has in flight.
const batchParallel = 4

// BatchGet implements dynastore.Store. Duplicate keys are asked once
// (DynamoDB rejects duplicates in a request); each request of up to
// MaxBatchGet distinct keys is one logical request whose unprocessed keys
// are asked again.
func (s *Store) BatchGet(ctx context.Context, keys []dynastore.Key) ([]dynastore.Item, error) {
	if len(keys) == 0 {
		return []dynastore.Item{}, nil
	}
	var uniq []dynastore.Key
	index := make(map[string]int, len(keys))
	for _, k := range keys {
		if err := dynastore.ValidateKey(k); err != nil {
			return nil, err
		}
		ks := keyString(k)
		if _, ok := index[ks]; !ok {
			index[ks] = len(uniq)
			uniq = append(uniq, k)
		}
	}
	found := make([]dynastore.Item, len(uniq))
	var chunks [][2]int
	for lo := 0; lo < len(uniq); lo += dynastore.MaxBatchGet {
		chunks = append(chunks, [2]int{lo, min(lo+dynastore.MaxBatchGet, len(uniq))})
	}
	errs := make([]error, len(chunks))
	if len(chunks) == 1 {
		errs[0] = s.batchChunk(ctx, uniq, found, index)
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, batchParallel)
		for i, c := range chunks {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				errs[i] = s.batchChunk(ctx, uniq[c[0]:c[1]], found, index)
			}()
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]dynastore.Item, len(keys))
	for i, k := range keys {
		out[i] = found[index[keyString(k)]]
	}
	// Two equal keys must not share one item: callers may modify what they get.
	seen := make(map[int]bool, len(uniq))
	for i, k := range keys {
		j := index[keyString(k)]
		if seen[j] && out[i] != nil {
			out[i] = dynastore.CloneItem(out[i])
		}
		seen[j] = true
	}
	return out, nil
}

// batchChunk fetches keys (at most MaxBatchGet, distinct) into found at the
// positions index gives. Chunks write disjoint positions.
func (s *Store) batchChunk(ctx context.Context, keys []dynastore.Key, found []dynastore.Item, index map[string]int) error {
	if s.wire == nil {
		return s.sdkBatchChunk(ctx, keys, found, index)
	}
	wr := newWireRequest(dynastore.OpBatchGetItem)
	defer wr.release()
	*wr.buf = appendBatchGet(*wr.buf, s.table, keys)
	wr.seal()
	pending := len(keys)
	return s.call(ctx, dynastore.OpBatchGetItem, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		out := wireOutput{page: true, table: s.table}
		if err := s.wire.send(ctx, wr, &out); err != nil {
			return err
		}
		out.cc.addTo(r, false)
		for _, it := range out.items {
			if err := place(it, found, index); err != nil {
				return err
			}
		}
		if len(out.unprocessed) == 0 {
			return nil
		}
		// The next attempt asks for the unprocessed keys as DynamoDB
		// returned them, as the SDK path does.
		b, err := appendBatchGetAgain((*wr.buf)[:0], s.table, out.unprocessed)
		*wr.buf = b
		if err != nil {
			return err
		}
		wr.seal()
		err = unprocessed(len(out.unprocessed), pending)
		pending = len(out.unprocessed)
		return err
	})
}

// sdkBatchChunk is batchChunk through the SDK.
func (s *Store) sdkBatchChunk(ctx context.Context, keys []dynastore.Key, found []dynastore.Item, index map[string]int) error {
	pending := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		pending[i] = keyAV(k)
	}
	return s.call(ctx, dynastore.OpBatchGetItem, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				s.table: {Keys: pending, ConsistentRead: aws.Bool(true)},
			},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return err
		}
		for i := range out.ConsumedCapacity {
			addCapacity(r, &out.ConsumedCapacity[i], false)
		}
		for _, m := range out.Responses[s.table] {
			it, err := fromItem(m)
			if err != nil {
				return err
			}
			if err := place(it, found, index); err != nil {
				return err
			}
		}
		unp := out.UnprocessedKeys[s.table].Keys
		if len(unp) == 0 {
			return nil
		}
		err = unprocessed(len(unp), len(pending))
		pending = unp
		return err
	})
}

// BatchWrite implements dynastore.BatchWriter: one BatchWriteItem request
// per dynastore.MaxBatchWrite writes, whose unprocessed writes are sent
// again within the retry policy. It goes through the SDK: it is not on a
// hot command's path.
func (s *Store) BatchWrite(ctx context.Context, puts []dynastore.Item, deletes []dynastore.Key) error {
	chunks, err := dynastore.BatchWrites(puts, deletes)
	if err != nil {
		return err
	}
	for _, ops := range chunks {
		pending := make([]types.WriteRequest, len(ops))
		for i, op := range ops {
			if op.Item == nil {
				pending[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyAV(op.Key)}}
				continue
			}
			norm, _, err := dynastore.NormalizeItemSize(op.Item)
			if err != nil {
				return err
			}
			av, err := toItem(norm)
			if err != nil {
				return err
			}
			pending[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
		}
		err := s.call(ctx, dynastore.OpBatchWriteItem, retry.Idempotent, func(ctx context.Context, r *dynastore.Request) error {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems:           map[string][]types.WriteRequest{s.table: pending},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if err != nil {
				return err
			}
			for i := range out.ConsumedCapacity {
				addCapacity(r, &out.ConsumedCapacity[i], true)
			}
			unp := out.UnprocessedItems[s.table]
			if len(unp) == 0 {
				return nil
			}
			err = unprocessed(len(unp), len(pending))
			pending = unp
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// place puts a BatchGetItem's item where index says its key goes.
func place(it dynastore.Item, found []dynastore.Item, index map[string]int) error {
	j, ok := index[keyString(it.Key())]
	if !ok {
		return fmt.Errorf("dynamo: BatchGetItem returned an item that was not asked for")
	}
	found[j] = it
	return nil
}

// unprocessed asks for another attempt at a batch's n unprocessed keys, of
// the pending keys the last attempt asked for.
func unprocessed(n, pending int) error {
	// DynamoDB returns part of a batch when it throttles or when the
	// response would pass 16 MB; only the former needs backoff.
	return &retry.Failure{
		Err:      fmt.Errorf("%d unprocessed keys", n),
		Class:    retry.Unapplied,
		Kind:     dynastore.ErrThrottled,
		Progress: n < pending,
	}
}

// appendBatchGet appends a BatchGetItem request's JSON body for keys.
func appendBatchGet(b []byte, table string, keys []dynastore.Key) []byte {
	b = appendBatchGetStart(b, table)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, k)
	}
	return appendBatchGetEnd(b)
}

// appendBatchGetAgain appends the body that asks again for unprocessed keys.
func appendBatchGetAgain(b []byte, table string, keys []dynastore.Item) ([]byte, error) {
	b = appendBatchGetStart(b, table)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendItem(b, k); err != nil {
			return b, fmt.Errorf("unprocessed key: %w", err)
		}
	}
	return appendBatchGetEnd(b), nil
}

func appendBatchGetStart(b []byte, table string) []byte {
	b = append(b, `{"RequestItems":{`...)
	b = appendString(b, table)
	return append(b, `:{"Keys":[`...)
}

func appendBatchGetEnd(b []byte) []byte {
	return append(b, `],"ConsistentRead":true}},"ReturnConsumedCapacity":"TOTAL"}`...)
}

func keyString(k dynastore.Key) string {
	return strconv.Itoa(len(k.PK)) + ":" + string(k.PK) + string(k.SK)
}

// ---- queries ---------------------------------------------------------------------

func limit32(n int) (*int32, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: negative limit %d", dynastore.ErrInvalid, n)
	case n == 0:
		return nil, nil
	case n > math.MaxInt32:
		n = math.MaxInt32
	}
	return aws.Int32(int32(n)), nil
}

// Query implements dynastore.Store.
func (s *Store) Query(ctx context.Context, q dynastore.Query) (dynastore.QueryPage, error) {
	if err := checkQueryKeys(q); err != nil {
		return dynastore.QueryPage{}, err
	}
	if err := dynastore.ValidateCond(q.Filter); err != nil {
		return dynastore.QueryPage{}, err
	}
	lim, err := limit32(q.Limit)
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	e := newExprs()
	kc, err := e.KeyCond(q)
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	filter, err := e.Cond(q.Filter)
	if err != nil {
		return dynastore.QueryPage{}, err
	}
	if s.wire == nil {
		return s.sdkQuery(ctx, q, kc, filter, e, lim)
	}
	items, last, err := s.wirePage(ctx, dynastore.OpQuery, func(b []byte) ([]byte, error) {
		return appendQuery(b, s.table, q, kc, filter, e, lim)
	})
	page := dynastore.QueryPage{Items: items}
	if last != nil {
		page.Next = last.SK
	}
	return page, err
}

// wirePage sends a Query or Scan, whose body render appends, on the direct
// path: the page's items (never nil) and the key to go on after (nil at
// the end).
func (s *Store) wirePage(ctx context.Context, op string, render func([]byte) ([]byte, error)) ([]dynastore.Item, *dynastore.Key, error) {
	wr := newWireRequest(op)
	defer wr.release()
	var err error
	if *wr.buf, err = render(*wr.buf); err != nil {
		return nil, nil, err
	}
	wr.seal()
	var items []dynastore.Item
	var last *dynastore.Key
	err = s.call(ctx, op, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		out := wireOutput{page: true}
		if err := s.wire.send(ctx, wr, &out); err != nil {
			return err
		}
		out.cc.addTo(r, false)
		items, last = out.items, nil
		if items == nil {
			items = []dynastore.Item{}
		}
		if out.last != nil {
			k, err := keyOf(out.last)
			if err != nil {
				return err
			}
			last = &k
		}
		return nil
	})
	return items, last, err
}

// appendQuery appends a Query request's JSON body.
func appendQuery(b []byte, table string, q dynastore.Query, kc, filter string, e *exprs, lim *int32) ([]byte, error) {
	b, err := appendPageRequest(b, table, filter, e, lim)
	if err != nil {
		return b, err
	}
	b = append(b, `,"KeyConditionExpression":`...)
	b = appendString(b, kc)
	b = append(b, `,"ScanIndexForward":`...)
	b = strconv.AppendBool(b, !q.Reverse)
	if q.After != nil {
		b = append(b, `,"ExclusiveStartKey":`...)
		b = appendKey(b, dynastore.Key{PK: q.PK, SK: q.After})
	}
	return append(b, '}'), nil
}

// appendPageRequest opens the JSON body of a Query or Scan with what both
// carry: the table, filter, expression names and values, page limit,
// strong consistency and the capacity report.
func appendPageRequest(b []byte, table, filter string, e *exprs, lim *int32) ([]byte, error) {
	b = append(b, `{"TableName":`...)
	b = appendString(b, table)
	if filter != "" {
		b = append(b, `,"FilterExpression":`...)
		b = appendString(b, filter)
	}
	b, err := e.appendJSON(b)
	if err != nil {
		return b, err
	}
	if lim != nil {
		b = append(b, `,"Limit":`...)
		b = strconv.AppendInt(b, int64(*lim), 10)
	}
	return append(b, `,"ConsistentRead":true,"ReturnConsumedCapacity":"TOTAL"`...), nil
}

// sdkQuery sends a rendered query through the SDK.
func (s *Store) sdkQuery(ctx context.Context, q dynastore.Query, kc, filter string, e *exprs, lim *int32) (dynastore.QueryPage, error) {
	in := &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    &kc,
		FilterExpression:          optString(filter),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ScanIndexForward:          aws.Bool(!q.Reverse),
		Limit:                     lim,
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if q.After != nil {
		in.ExclusiveStartKey = keyAV(dynastore.Key{PK: q.PK, SK: q.After})
	}
	var page dynastore.QueryPage
	err := s.call(ctx, dynastore.OpQuery, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return err
		}
		addCapacity(r, out.ConsumedCapacity, false)
		items, next, err := fromPage(out.Items, out.LastEvaluatedKey)
		if err != nil {
			return err
		}
		page = dynastore.QueryPage{Items: items}
		if next != nil {
			page.Next = next.SK
		}
		return nil
	})
	return page, err
}

// checkQueryKeys applies the key rules to a query's partition key and sort
// key bounds, as DynamoDB does to the values of a key condition.
func checkQueryKeys(q dynastore.Query) error {
	bounds := [][]byte{}
	switch q.Op {
	case dynastore.SKAll:
	case dynastore.SKBetween:
		bounds = append(bounds, q.A, q.B)
	default:
		bounds = append(bounds, q.A)
	}
	if len(bounds) == 0 {
		bounds = append(bounds, []byte{0})
	}
	for _, b := range bounds {
		if err := dynastore.ValidateKey(dynastore.Key{PK: q.PK, SK: b}); err != nil {
			return err
		}
	}
	if q.After != nil {
		return dynastore.ValidateKey(dynastore.Key{PK: q.PK, SK: q.After})
	}
	return nil
}

// Scan implements dynastore.Store.
func (s *Store) Scan(ctx context.Context, sc dynastore.Scan) (dynastore.ScanPage, error) {
	if err := dynastore.ValidateCond(sc.Filter); err != nil {
		return dynastore.ScanPage{}, err
	}
	lim, err := limit32(sc.Limit)
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	if sc.Segments < 0 || sc.Segment < 0 || (sc.Segments > 0 && sc.Segment >= sc.Segments) || (sc.Segments == 0 && sc.Segment != 0) {
		return dynastore.ScanPage{}, fmt.Errorf("%w: segment %d of %d", dynastore.ErrInvalid, sc.Segment, sc.Segments)
	}
	e := newExprs()
	filter, err := e.Cond(sc.Filter)
	if err != nil {
		return dynastore.ScanPage{}, err
	}
	if sc.After != nil {
		if err := dynastore.ValidateKey(*sc.After); err != nil {
			return dynastore.ScanPage{}, err
		}
	}
	if s.wire == nil {
		return s.sdkScan(ctx, sc, filter, e, lim)
	}
	items, last, err := s.wirePage(ctx, dynastore.OpScan, func(b []byte) ([]byte, error) {
		return appendScan(b, s.table, sc, filter, e, lim)
	})
	return dynastore.ScanPage{Items: items, Next: last}, err
}

// appendScan appends a Scan request's JSON body.
func appendScan(b []byte, table string, sc dynastore.Scan, filter string, e *exprs, lim *int32) ([]byte, error) {
	b, err := appendPageRequest(b, table, filter, e, lim)
	if err != nil {
		return b, err
	}
	if sc.Segments > 0 {
		b = append(b, `,"Segment":`...)
		b = strconv.AppendInt(b, int64(sc.Segment), 10)
		b = append(b, `,"TotalSegments":`...)
		b = strconv.AppendInt(b, int64(sc.Segments), 10)
	}
	if sc.After != nil {
		b = append(b, `,"ExclusiveStartKey":`...)
		b = appendKey(b, *sc.After)
	}
	return append(b, '}'), nil
}

// sdkScan sends a rendered scan through the SDK.
func (s *Store) sdkScan(ctx context.Context, sc dynastore.Scan, filter string, e *exprs, lim *int32) (dynastore.ScanPage, error) {
	in := &dynamodb.ScanInput{
		TableName:                 &s.table,
		FilterExpression:          optString(filter),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		Limit:                     lim,
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if sc.Segments > 0 {
		in.Segment, in.TotalSegments = aws.Int32(int32(sc.Segment)), aws.Int32(int32(sc.Segments))
	}
	if sc.After != nil {
		in.ExclusiveStartKey = keyAV(*sc.After)
	}
	var page dynastore.ScanPage
	err := s.call(ctx, dynastore.OpScan, retry.Read, func(ctx context.Context, r *dynastore.Request) error {
		out, err := s.db.Scan(ctx, in)
		if err != nil {
			return err
		}
		addCapacity(r, out.ConsumedCapacity, false)
		items, next, err := fromPage(out.Items, out.LastEvaluatedKey)
		page = dynastore.ScanPage{Items: items, Next: next}
		return err
	})
	return page, err
}
