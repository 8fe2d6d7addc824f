package dynamo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingServer is a test server that counts the connections it accepted
// and tells of each one it closed.
type countingServer struct {
	*httptest.Server
	conns  atomic.Int32
	closed chan struct{}
}

func newCountingServer(t *testing.T, tlsOn bool, h http.HandlerFunc, configure ...func(*http.Server)) *countingServer {
	s := &countingServer{Server: httptest.NewUnstartedServer(h), closed: make(chan struct{}, 64)}
	for _, f := range configure {
		f(s.Config)
	}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed:
			select {
			case s.closed <- struct{}{}:
			default:
			}
		}
	}
	if tlsOn {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// send does one POST through c and returns the body it read.
func send(t *testing.T, c *directClient, ctx context.Context, u string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestDirectClientKeepsConnections(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		// readBody false: the caller closes the body unread.
		readBody  bool
		wantConns int32
	}{
		{"read to the end", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}, true, 1},
		{"small rest drained on close", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
		}, false, 1},
		{"chunked", func(w http.ResponseWriter, _ *http.Request) {
			for range 3 {
				_, _ = io.WriteString(w, strings.Repeat("y", 10))
				w.(http.Flusher).Flush()
			}
		}, true, 1},
		{"large unread rest closes", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
		}, false, 3},
		{"connection close", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		}, true, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newCountingServer(t, false, tc.handler)
			c := newDirectClient(sdkHTTPClient())
			defer c.CloseIdleConnections()
			for range 3 {
				req, err := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(`{"a":1}`))
				require.NoError(t, err)
				resp, err := c.Do(req)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				if tc.readBody {
					_, err = io.ReadAll(resp.Body)
					require.NoError(t, err)
				}
				require.NoError(t, resp.Body.Close())
			}
			require.Equal(t, tc.wantConns, s.conns.Load())
		})
	}
}

func TestDirectClientReplacesConnectionsTheServerClosed(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") },
		func(hs *http.Server) { hs.IdleTimeout = 20 * time.Millisecond })
	c := newDirectClient(sdkHTTPClient())
	defer c.CloseIdleConnections()
	for range 3 {
		got, err := send(t, c, context.Background(), s.URL)
		require.NoError(t, err)
		require.Equal(t, "ok", got)
		// The server closes the idle connection (it has closed the
		// socket when it reports the state), however late it gets to it.
		select {
		case <-s.closed:
		case <-time.After(time.Minute):
			t.Fatal("the server never closed the idle connection")
		}
	}
	require.Equal(t, int32(3), s.conns.Load())
}

func TestDirectClientContext(t *testing.T) {
	release := make(chan struct{})
	s := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	})
	defer close(release)
	c := newDirectClient(sdkHTTPClient())
	defer c.CloseIdleConnections()

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := send(t, c, ctx, s.URL+"/slow")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := send(t, c, ctx, s.URL+"/slow")
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := send(t, c, ctx, s.URL)
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("a connection cut short is not reused", func(t *testing.T) {
		before := s.conns.Load()
		got, err := send(t, c, context.Background(), s.URL)
		require.NoError(t, err)
		require.Equal(t, "ok", got)
		require.Equal(t, before+1, s.conns.Load())
	})
}

func TestDirectClientTrace(t *testing.T) {
	s := newCountingServer(t, false, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	c := newDirectClient(sdkHTTPClient())
	defer c.CloseIdleConnections()
	var reused []bool
	wrote := 0
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			require.NoError(t, i.Err)
			wrote++
		},
	})
	for range 2 {
		_, err := send(t, c, ctx, s.URL)
		require.NoError(t, err)
	}
	require.Equal(t, []bool{false, true}, reused)
	require.Equal(t, 2, wrote)

	// A refused connection fails as a dial, before anything is written.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = send(t, c, ctx, "http://"+addr)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "dial", op.Op)
	require.Equal(t, 2, wrote)
}

func TestDirectClientTLS(t *testing.T) {
	s := newCountingServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "HTTP/1.1", r.Proto)
		_, _ = io.WriteString(w, "secure")
	})
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	trusting := sdkHTTPClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	})

	c := newDirectClient(trusting)
	defer c.CloseIdleConnections()
	for range 3 {
		got, err := send(t, c, context.Background(), s.URL)
		require.NoError(t, err)
		require.Equal(t, "secure", got)
	}
	require.Equal(t, int32(1), s.conns.Load())

	// Without the CA the handshake fails, as a dial does.
	untrusting := newDirectClient(sdkHTTPClient())
	_, err := send(t, untrusting, context.Background(), s.URL)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "dial", op.Op)
}

func TestDirectClientProxyGoesThroughTheSDKClient(t *testing.T) {
	var sawURI atomic.Value
	proxy := newCountingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		sawURI.Store(r.RequestURI)
		_, _ = io.WriteString(w, "via proxy")
	})
	pu, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	proxied := sdkHTTPClient().WithTransportOptions(func(tr *http.Transport) { tr.Proxy = http.ProxyURL(pu) })
	c := newDirectClient(proxied)
	defer c.CloseIdleConnections()
	got, err := send(t, c, context.Background(), "http://dynamodb.example.invalid/")
	require.NoError(t, err)
	require.Equal(t, "via proxy", got)
	// A proxy receives the absolute URI.
	require.Equal(t, "http://dynamodb.example.invalid/", sawURI.Load())
}

func TestDirectClientPoolBounds(t *testing.T) {
	c := newDirectClient(sdkHTTPClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 1
		tr.IdleConnTimeout = time.Minute
	}))
	pipe := func() (*persistConn, net.Conn) {
		a, b := net.Pipe()
		return &persistConn{conn: a, raw: a}, b
	}
	first, peer1 := pipe()
	second, peer2 := pipe()
	c.put("k", first)
	c.put("k", second) // over the bound: closed
	_, err := peer2.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF), "the second connection is closed: %v", err)
	require.Same(t, first, c.takeIdle("k"))
	require.Nil(t, c.takeIdle("k"))

	// An expired connection is closed rather than handed out.
	first.used = time.Now().Add(-2 * time.Minute)
	c.mu.Lock()
	c.idle["k"] = []*persistConn{first}
	c.mu.Unlock()
	require.Nil(t, c.takeIdle("k"))
	_, err = peer1.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF), "the expired connection is closed: %v", err)
}

// writesConn records each Write it is given.
type writesConn struct {
	net.Conn
	writes []string
}

func (w *writesConn) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func TestWriteRequestIsOneWrite(t *testing.T) {
	for _, size := range []int{7, 5000, 200 << 10} {
		body := strings.Repeat("b", size)
		// A body net/http does not know to be in memory (as the SDK's is
		// not) is what made Request.Write flush the header on its own.
		req, err := http.NewRequest(http.MethodPost, "http://example.test/", io.MultiReader(strings.NewReader(body)))
		require.NoError(t, err)
		req.ContentLength = int64(size)
		w := &writesConn{}
		require.NoError(t, writeRequest(w, req))
		require.Len(t, w.writes, 1, "size %d", size)
		require.True(t, strings.HasPrefix(w.writes[0], "POST / HTTP/1.1\r\n"))
		require.True(t, strings.HasSuffix(w.writes[0], "\r\n\r\n"+body))
	}
}
