package main

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// TestBusTLSPinsTheCertificate: the bus's TLS accepts exactly the
// instance's own certificate on the other side, in both directions; a
// peer with another certificate (even a valid one) is refused.
func TestBusTLSPinsTheCertificate(t *testing.T) {
	load := func() tls.Certificate {
		certFile, keyFile, _ := testserver.SelfSigned(t, t.TempDir())
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err)
		return c
	}
	ours, theirs := load(), load()
	handshake := func(server, client tls.Certificate) error {
		sc, _ := busTLS(server)
		_, cc := busTLS(client)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		errc := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			s := tls.Server(c, sc)
			err = s.Handshake()
			if err == nil {
				// TLS 1.3 verifies the client's certificate after the
				// client's handshake returns: read to see the refusal.
				buf := make([]byte, 1)
				if _, err = s.Read(buf); err == nil {
					_, err = s.Write(buf) // echoed: the link works
				}
			}
			errc <- err
		}()
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		cl := tls.Client(conn, cc)
		cerr := cl.Handshake()
		if cerr == nil {
			_, cerr = cl.Write([]byte("x"))
			if cerr == nil {
				_, cerr = cl.Read(make([]byte, 1)) // the echo, or the refusal's alert
			}
		}
		serr := <-errc
		if cerr != nil {
			return cerr
		}
		return serr
	}
	for _, tc := range []struct {
		name           string
		server, client tls.Certificate
		ok             bool
	}{
		{"same certificate", ours, ours, true},
		{"client with another", ours, theirs, false},
		{"server with another", theirs, ours, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := handshake(tc.server, tc.client)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
