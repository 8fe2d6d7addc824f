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
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// gzipProxy stands between redamo and DynamoDB Local and answers as AWS
// does: a body gzip-compressed when the request accepts gzip (always, with
// force) and X-Amz-Crc32 over the bytes it sends, compressed or not. It
// serves both as an HTTP proxy (absolute request URIs) and as the
// endpoint itself.
type gzipProxy struct {
	*httptest.Server
	upstream *url.URL
	force    bool
	client   *http.Client

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
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(rb)), 10))
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

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
