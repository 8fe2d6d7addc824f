package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestTableSettingsThroughTheBus: the instances of one DynamoDB table share
// notify-keyspace-events. With the bus, CONFIG SET through one holds on
// the other before it replies, and a write through one is published on
// the other; with --bus off, an instance started later reads the setting
// at start.
func TestTableSettingsThroughTheBus(t *testing.T) {
	ep := os.Getenv("REDAMO_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		if os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" {
			t.Fatal("REDAMO_TEST_DYNAMODB_ENDPOINT is not set")
		}
		t.Skip("REDAMO_TEST_DYNAMODB_ENDPOINT not set: no DynamoDB Local")
	}
	ctx := context.Background()
	cfg := testConfig()
	cfg.Store, cfg.Endpoint, cfg.Region, cfg.CreateTable = storeDynamoDB, ep, "us-east-1", true
	cfg.Table = fmt.Sprintf("cmd_%d", time.Now().UnixNano())
	cfg.Bus = "127.0.0.1:0"
	a, _ := startApp(t, cfg)
	z, _ := startApp(t, cfg)
	ca := client(t, &redis.Options{Addr: a.ln.Addr().String()})
	cz := client(t, &redis.Options{Addr: z.ln.Addr().String()})
	sub := cz.Subscribe(ctx, "__keyevent@0__:set")
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.bus.Linked() && z.bus.Linked() && len(a.bus.Members()) == 1 }, 20*time.Second, 10*time.Millisecond)

	require.NoError(t, ca.ConfigSet(ctx, "notify-keyspace-events", "E$").Err())
	require.Equal(t, map[string]string{"notify-keyspace-events": "$E"}, cz.ConfigGet(ctx, "notify-keyspace-events").Val())
	require.NoError(t, ca.Set(ctx, "k", "v", 0).Err())
	select {
	case m := <-sub.Channel():
		require.Equal(t, "k", m.Payload)
	case <-time.After(20 * time.Second):
		t.Fatal("the write through the other instance was not published")
	}

	cfg.Bus = busOff
	cfg.CreateTable = false
	off, _ := startApp(t, cfg)
	require.Nil(t, off.bus)
	coff := client(t, &redis.Options{Addr: off.ln.Addr().String()})
	require.Equal(t, map[string]string{"notify-keyspace-events": "$E"}, coff.ConfigGet(ctx, "notify-keyspace-events").Val(), "read at start")
}
