package bus

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore/memory"
)

// testTLS returns a server and a client configuration trusting one
// self-signed certificate, both ways (mutual TLS).
func testTLS(t *testing.T) (server, client *tls.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "redamo-bus"},
		DNSNames:     []string{"redamo-bus"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	pair := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	server = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	client = &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: "redamo-bus"}
	return server, client
}

// TestTLS: buses with TLS deliver to each other; a bus without TLS (but
// with the secret) is not let in.
func TestTLS(t *testing.T) {
	st := memory.New(memory.Options{})
	clk := newClock()
	server, client := testTLS(t)
	cfg := testConfig(clk)
	cfg.ServerTLS, cfg.ClientTLS = server, client
	la, lb := newLocal(map[string]int64{"c": 1}), newLocal(map[string]int64{"c": 2})
	a := startBus(t, cfg, st, la)
	b := startBus(t, cfg, st, lb)
	beat(t, a, b)
	connected(t, a, b.id)
	n, err := a.Publish(context.Background(), testMessage("c", "over tls"))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"over tls"}, lb.payloads("c"))

	plain := testConfig(clk)
	lp := newLocal(map[string]int64{"c": 9})
	p := startBus(t, plain, st, lp)
	beat(t, a, b, p)
	n, err = p.Publish(context.Background(), testMessage("c", "plain"))
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = a.Publish(context.Background(), testMessage("c", "tls only"))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	require.Equal(t, []string{"over tls", "tls only"}, lb.payloads("c"))
	require.Empty(t, lp.payloads("c"))
}

// TestCloseLeavesNothing: once every bus is closed, none of their
// goroutines is left.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func TestCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	st := memory.New(memory.Options{})
	clk := newClock()
	var bs []*Bus
	for range 3 {
		b, err := New(testConfig(clk), st, newLocal(map[string]int64{"c": 1}))
		require.NoError(t, err)
		require.NoError(t, b.Start(context.Background()))
		bs = append(bs, b)
	}
	for _, b := range bs {
		require.NoError(t, b.beat(context.Background()))
	}
	connected(t, bs[0], bs[1].id, bs[2].id)
	_, err := bs[0].Publish(context.Background(), testMessage("c", "x"))
	require.NoError(t, err)
	for _, b := range bs {
		require.NoError(t, b.Close())
	}
	ms, _, err := members(context.Background(), st, clk.now())
	require.NoError(t, err)
	require.Empty(t, ms, "every item withdrawn")
	left := ""
	// Eventually runs the condition in a goroutine of its own.
	if !assert.Eventually(t, func() bool { left = stacks(); return runtime.NumGoroutine() <= before+1 }, 10*time.Second, 5*time.Millisecond) {
		t.Fatalf("goroutines left:\n%s", left)
	}
}
