package dynamo

import (
	"bytes"
	"compress/gzip"
	"context"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// gzipProxy stands between redamo and DynamoDB Local and answers as AWS
// does: a body gzip-compressed when the request accepts gzip (always, with
// force) and X-Amz-Crc32 over the bytes it sends, compressed or not. It
// serves both as an HTTP proxy (absolute request URIs) and as the
// endpoint itself.
// crcMode is what X-Amz-Crc32 a gzipProxy sends.
type crcMode int32

const (
	crcAsSent crcMode = iota // over the bytes sent, as AWS does
	// crcPlain is over the uncompressed body, as from a proxy that
	// compresses on its own and leaves the header as it was.
	crcPlain
	crcNone // no header
)

type gzipProxy struct {
	*httptest.Server
	upstream *url.URL
	force    bool
	client   *http.Client
	crc      atomic.Int32 // a crcMode

	mu       sync.Mutex
	accepted map[string]int // Accept-Encoding of the requests seen
	gzipped  int            // responses sent compressed
}

func newGzipProxy(t *testing.T, upstream string, force bool) *gzipProxy {
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	p := &gzipProxy{
		upstream: u,
		force:    force,
		// Its own requests upstream ask for nothing: DynamoDB Local's
		// answers come back as they are.
		client:   &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}},
		accepted: map[string]int{},
	}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.Close()
		p.client.CloseIdleConnections()
	})
	return p
}

func (p *gzipProxy) serve(w http.ResponseWriter, r *http.Request) {
	ae := r.Header.Get("Accept-Encoding")
	p.mu.Lock()
	p.accepted[ae]++
	p.mu.Unlock()

	target := *p.upstream
	if r.URL.IsAbs() {
		target = *r.URL
	} else {
		target.Path, target.RawQuery = r.URL.Path, r.URL.RawQuery
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, v := range r.Header {
		if k != "Proxy-Connection" && k != "Accept-Encoding" {
			out.Header[k] = v
		}
	}
	out.Host = r.Host // signed
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, v := range resp.Header {
		switch k {
		case "Content-Length", "Content-Encoding", "X-Amz-Crc32":
		default:
			w.Header()[k] = v
		}
	}
	crc := crc32.ChecksumIEEE(rb)
	if p.force || strings.Contains(ae, "gzip") {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(rb)
		_ = zw.Close()
		rb = zb.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
		p.mu.Lock()
		p.gzipped++
		p.mu.Unlock()
	}
	switch crcMode(p.crc.Load()) {
	case crcAsSent:
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(rb)), 10))
	case crcPlain:
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc), 10))
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(rb)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rb)
}

func (p *gzipProxy) seen() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	acc := map[string]int{}
	for k, v := range p.accepted {
		acc[k] = v
	}
	return acc, p.gzipped
}

// Behind a proxy that compresses bodies, as AWS does when asked, every
// request asks for identity, and a body compressed anyway is checked
// against X-Amz-Crc32 as received, then decompressed: table management
// (the SDK's client), every data-plane request and error responses.
func TestGzipProxy(t *testing.T) {
	ep := localEndpoint(t)
	cases := []struct {
		name string
		// asEndpoint: the proxy is the endpoint (the direct client's own
		// connections); otherwise an HTTP proxy (net/http's Transport).
		asEndpoint bool
		force      bool // compress even what asked for identity
		sdkOnly    bool
	}{
		{name: "http proxy"},
		{name: "http proxy, sdk", sdkOnly: true},
		{name: "http proxy, gzip anyway", force: true},
		{name: "http proxy, gzip anyway, sdk", force: true, sdkOnly: true},
		{name: "endpoint, gzip anyway", asEndpoint: true, force: true},
		{name: "endpoint", asEndpoint: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newGzipProxy(t, ep, tc.force)
			cfg := Config{
				Region:         DefaultLocalRegion,
				VerifyChecksum: true,
				SDKOnly:        tc.sdkOnly,
				Logger:         slog.New(slog.DiscardHandler),
			}
			if tc.asEndpoint {
				cfg.Endpoint = p.URL
			} else {
				cfg.Endpoint = ep
				pu, err := url.Parse(p.URL)
				require.NoError(t, err)
				cfg.HTTPClient = newDirectClient(sdkHTTPClient().WithTransportOptions(func(tr *http.Transport) {
					tr.Proxy = http.ProxyURL(pu)
				}))
			}
			ctx := context.Background()
			s, err := NewTemp(ctx, cfg)
			require.NoError(t, err)
			defer func() {
				require.NoError(t, s.DeleteTable(ctx))
				_ = s.Close()
			}()
			exerciseThroughProxy(t, s)

			// A checksum that does not match the bytes received fails
			// the request, on both clients (an uncompressed body's
			// matches either way); a missing one is not checked.
			get := func() error {
				_, err := s.Get(ctx, dynastore.Key{PK: []byte("counter"), SK: []byte{0}})
				return err
			}
			describe := func() error {
				_, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
				return err
			}
			p.crc.Store(int32(crcNone))
			require.NoError(t, get())
			require.NoError(t, describe())
			p.crc.Store(int32(crcPlain))
			err, derr := get(), describe()
			p.crc.Store(int32(crcAsSent))
			if tc.force {
				require.ErrorIs(t, err, dynastore.ErrUnavailable)
				require.ErrorContains(t, derr, "did not match expected checksum")
			} else {
				require.NoError(t, err)
				require.NoError(t, derr)
			}

			acc, gzipped := p.seen()
			require.Equal(t, []string{"identity"}, keys(acc), "Accept-Encoding of every request")
			if tc.force {
				require.Equal(t, acc["identity"], gzipped, "every response compressed")
			} else {
				require.Zero(t, gzipped)
			}
		})
	}
}

// exerciseThroughProxy sends each kind of data-plane request, and one
// answered with an error.
func exerciseThroughProxy(t *testing.T, s *Store) {
	ctx := context.Background()
	k := dynastore.Key{PK: []byte("counter"), SK: []byte{0}}
	n := func(it dynastore.Item) dynastore.Value { return it.Get("n") }
	it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)}, {Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: "n", Value: dynastore.N("41")}}
	_, err := s.Put(ctx, it, dynastore.WriteOptions{})
	require.NoError(t, err)
	add := dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}
	got, err := s.Update(ctx, k, add, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
	require.NoError(t, err)
	require.Equal(t, dynastore.N("42"), n(got))
	got, err = s.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, dynastore.N("42"), n(got))

	_, err = s.Put(ctx, it, dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true})
	var cf *dynastore.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	require.Equal(t, dynastore.N("42"), n(cf.Old))

	items, err := s.BatchGet(ctx, []dynastore.Key{k, {PK: []byte("missing"), SK: []byte{0}}})
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, dynastore.N("42"), n(items[0]))
	require.Nil(t, items[1])

	require.NoError(t, s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxUpdate, Key: k, Update: &add}}))
	page, err := s.Query(ctx, dynastore.Query{PK: k.PK, Op: dynastore.SKAll})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, dynastore.N("43"), n(page.Items[0]))
}

func TestReceive(t *testing.T) {
	plain := []byte(`{"Item":{}}`)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(plain)
	require.NoError(t, zw.Close())
	zipped := zb.Bytes()
	crc := func(b []byte) string { return strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10) }
	cases := []struct {
		name     string
		body     []byte
		encoding string
		crc      string
		verify   bool
		err      string
	}{
		{name: "identity", body: plain, crc: crc(plain), verify: true},
		{name: "identity named", body: plain, encoding: "identity", crc: crc(plain), verify: true},
		{name: "no checksum header", body: plain, verify: true},
		{name: "gzip, checksum of what was received", body: zipped, encoding: "gzip", crc: crc(zipped), verify: true},
		{name: "gzip, checksum of the plain body", body: zipped, encoding: "gzip", crc: crc(plain), verify: true, err: "did not match expected checksum"},
		{name: "gzip, checksum not verified", body: zipped, encoding: "GZIP", crc: crc(plain)},
		{name: "identity, wrong checksum", body: plain, crc: crc(zipped), verify: true, err: "did not match expected checksum"},
		{name: "corrupt gzip", body: plain, encoding: "gzip", crc: crc(plain), verify: true, err: "failed to decompress"},
		{name: "truncated gzip", body: zipped[:len(zipped)-4], encoding: "gzip", err: "failed to decompress"},
		{name: "unsupported encoding", body: plain, encoding: "br", crc: crc(plain), verify: true, err: `unsupported Content-Encoding "br"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.encoding != "" {
				h.Set("Content-Encoding", tc.encoding)
			}
			if tc.crc != "" {
				h.Set("X-Amz-Crc32", tc.crc)
			}
			b := append([]byte(nil), tc.body...)
			err := receive(h, &b, tc.verify)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, plain, b)
		})
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
