package dynamo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// directClient sends each request on the calling goroutine: it takes a kept-
// alive connection, writes the request, reads the response header and hands
// the body over; the connection goes back to the pool when the body has been
// read to its end and closed.
//
// Why not net/http's Transport: it moves every request through two more
// goroutines (a writer and a reader per connection) and hands the response
// back over a channel, and each hand-over can wake a sleeping thread. With
// one client doing one request at a time, as a Redis client waiting for its
// reply does, those wake-ups are a large part of the latency (on DynamoDB
// Local, at least). DynamoDB's API is plain HTTP/1.1 requests with a
// Content-Length, so the standard library's request writer and response
// reader are all it needs.
//
// Requests through a proxy (HTTP_PROXY/HTTPS_PROXY), or with a scheme other
// than http and https, go to the SDK's client instead, which directClient
// also takes its TLS settings (AWS_CA_BUNDLE) and timeouts from.
type directClient struct {
	fallback aws.HTTPClient
	dialer   *net.Dialer
	tls      *tls.Config
	proxy    func(*http.Request) (*url.URL, error)

	tlsHandshakeTimeout time.Duration
	idleTimeout         time.Duration
	maxIdlePerHost      int

	mu   sync.Mutex
	idle map[string][]*persistConn // by scheme://host:port, most recently used last
}

// persistConn is one kept-alive connection.
type persistConn struct {
	conn net.Conn
	// raw is the TCP connection under conn (conn itself without TLS), whose
	// socket isIdleAlive peeks at.
	raw  net.Conn
	br   *bufio.Reader
	used time.Time // when it was last put back
}

// doDetached sends req through hc with a body of its own. The direct path
// reuses a request's buffer for its next attempt and pools it afterwards,
// which only directClient allows: it has written the whole body when Do
// returns, where net/http's Transport may go on reading a body after
// RoundTrip returned (its contract says so), and would then send bytes of
// another request.
func doDetached(hc aws.HTTPClient, req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return hc.Do(req)
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	own := req.Clone(req.Context())
	own.Body = io.NopCloser(bytes.NewReader(b))
	own.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return hc.Do(own)
}

func newDirectClient(sdk *awshttp.BuildableClient) *directClient {
	tr := sdk.GetTransport()
	c := &directClient{
		fallback:            sdk.Freeze(),
		dialer:              sdk.GetDialer(),
		proxy:               tr.Proxy,
		tlsHandshakeTimeout: tr.TLSHandshakeTimeout,
		idleTimeout:         tr.IdleConnTimeout,
		maxIdlePerHost:      tr.MaxIdleConnsPerHost,
		idle:                map[string][]*persistConn{},
	}
	if tr.TLSClientConfig != nil {
		c.tls = tr.TLSClientConfig.Clone()
	} else {
		c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// HTTP/1.1 only: the connection speaks what http.ReadResponse reads.
	c.tls.NextProtos = []string{"http/1.1"}
	return c
}

// Do implements aws.HTTPClient.
func (c *directClient) Do(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return doDetached(c.fallback, req)
	}
	if c.proxy != nil {
		u, err := c.proxy(req)
		if err != nil {
			return nil, err
		}
		if u != nil {
			return doDetached(c.fallback, req)
		}
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := req.URL.Scheme + "://" + hostPort(req.URL)
	pc, reused, err := c.get(ctx, key, req.URL)
	if err != nil {
		return nil, err
	}
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: pc.conn, Reused: reused})
	}
	// The context's deadline bounds the exchange; its cancellation cuts it
	// short by moving the deadline to the past.
	deadline, _ := ctx.Deadline()
	_ = pc.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = pc.conn.SetDeadline(time.Unix(1, 0)) })

	wreq := req
	if trace != nil && trace.WroteRequest != nil {
		// Request.Write reports WroteRequest itself, once the request is in
		// the buffer: the report that counts comes after the flush.
		wreq = req.WithContext(context.Background())
	}
	err = writeRequest(pc.conn, wreq)
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{Err: err})
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err != nil {
		stop()
		_ = pc.conn.Close()
		return nil, contextCause(ctx, deadline, err)
	}
	resp.Body = &directBody{
		ReadCloser: resp.Body,
		c:          c,
		key:        key,
		pc:         pc,
		stop:       stop,
		keep:       !resp.Close && !req.Close,
	}
	return resp, nil
}

// contextCause returns err, wrapping the context's error when the context
// ended the exchange: its cancellation, or its deadline, which the
// connection's own deadline may have reached a moment before ctx noticed.
func contextCause(ctx context.Context, deadline time.Time, err error) error {
	cerr := ctx.Err()
	if cerr == nil && errors.Is(err, os.ErrDeadlineExceeded) && !deadline.IsZero() && !time.Now().Before(deadline) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

// hostPort is u's host with the scheme's default port when it names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// get returns an idle connection to key that is still open, or a new one.
func (c *directClient) get(ctx context.Context, key string, u *url.URL) (*persistConn, bool, error) {
	for {
		pc := c.takeIdle(key)
		if pc == nil {
			break
		}
		if isIdleAlive(pc.raw) {
			return pc, true, nil
		}
		_ = pc.conn.Close()
	}
	pc, err := c.dial(ctx, key, u)
	return pc, false, err
}

func (c *directClient) takeIdle(key string) *persistConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	conns := c.dropExpired(key)
	if len(conns) == 0 {
		return nil
	}
	pc := conns[len(conns)-1]
	conns[len(conns)-1] = nil
	c.idle[key] = conns[:len(conns)-1]
	return pc
}

// put keeps pc for the next request to key, unless the pool is full.
func (c *directClient) put(key string, pc *persistConn) {
	pc.used = time.Now()
	c.mu.Lock()
	conns := c.dropExpired(key)
	if len(conns) < c.maxIdlePerHost {
		c.idle[key] = append(conns, pc)
		pc = nil
	}
	c.mu.Unlock()
	if pc != nil {
		_ = pc.conn.Close()
	}
}

// dropExpired closes key's connections idle for longer than idleTimeout
// (they sit at the front: the pool is used last in, first out) and returns
// the rest. The caller holds mu.
func (c *directClient) dropExpired(key string) []*persistConn {
	conns := c.idle[key]
	if c.idleTimeout <= 0 {
		return conns
	}
	n := 0
	for n < len(conns) && time.Since(conns[n].used) > c.idleTimeout {
		_ = conns[n].conn.Close()
		n++
	}
	if n > 0 {
		conns = append(conns[:0], conns[n:]...)
		c.idle[key] = conns
	}
	return conns
}

func (c *directClient) dial(ctx context.Context, key string, u *url.URL) (*persistConn, error) {
	addr := hostPort(u)
	raw, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := raw
	if u.Scheme == "https" {
		cfg := c.tls.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(raw, cfg)
		hctx := ctx
		if c.tlsHandshakeTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, c.tlsHandshakeTimeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = raw.Close()
			// Like a failed dial: nothing was sent, so a retry is safe.
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raw.RemoteAddr(), Err: err}
		}
		conn = tc
	}
	return &persistConn{conn: conn, raw: raw, br: bufio.NewReader(conn)}, nil
}

// CloseIdleConnections closes every idle connection (Store.Close).
func (c *directClient) CloseIdleConnections() {
	c.mu.Lock()
	idle := c.idle
	c.idle = map[string][]*persistConn{}
	c.mu.Unlock()
	for _, conns := range idle {
		for _, pc := range conns {
			_ = pc.conn.Close()
		}
	}
	if f, ok := c.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// directBody is a response body; closing it returns the connection to the
// pool when the response was read to its end.
type directBody struct {
	io.ReadCloser
	c      *directClient
	key    string
	pc     *persistConn
	stop   func() bool
	keep   bool // the connection may carry another request
	eof    bool
	closed bool
}

func (b *directBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// drainMax bounds what Close reads of an unread rest to keep the connection.
const drainMax = 4 << 10

func (b *directBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.eof && b.keep {
		if _, err := io.CopyN(io.Discard, b.ReadCloser, drainMax); err == io.EOF {
			b.eof = true
		}
	}
	err := b.ReadCloser.Close()
	// stop is false once the context's cancellation has poisoned the
	// connection's deadline.
	if b.stop() && b.eof && b.keep {
		_ = b.pc.conn.SetDeadline(time.Time{})
		b.c.put(b.key, b.pc)
	} else {
		_ = b.pc.conn.Close()
	}
	return err
}

// reqBufs holds the buffers requests are assembled in.
var reqBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxKeptReqBuf bounds the buffers kept for reuse, so that one large batch
// does not pin its size.
const maxKeptReqBuf = 64 << 10

// writeRequest sends req in a single write. Request.Write into a
// bufio.Writer sends the header on its own before a body it does not know
// to be in memory (the SDK's never is): two segments, so the server wakes
// twice and each write costs a loopback round of its own.
func writeRequest(conn net.Conn, req *http.Request) error {
	buf := reqBufs.Get().(*bytes.Buffer)
	buf.Reset()
	err := req.Write(buf)
	if err == nil {
		_, err = conn.Write(buf.Bytes())
	}
	if buf.Cap() <= maxKeptReqBuf {
		reqBufs.Put(buf)
	}
	return err
}
