package main

// The bus to the other redamo instances on the same table (package bus):
// what pub/sub and key events fan out through. Its settings come from --bus, --bus-addr
// and --bus-secret; this file turns them into a bus.Config.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/redamo/redamo/bus"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/pubsub"
)

// startBus opens and starts the bus for a server listening on respAddr,
// nil when the configuration has none. local answers the others' pub/sub,
// ev takes their key events and the table's notify-keyspace-events. cert
// is the server's TLS certificate (nil without TLS).
func startBus(ctx context.Context, cfg config, store dynastore.Store, local pubsub.Local, ev bus.Events, respAddr string, cert *tls.Certificate, logger *slog.Logger) (*bus.Bus, error) {
	if cfg.Bus == busOff || (cfg.Bus == busAuto && cfg.Store != storeDynamoDB) {
		return nil, nil
	}
	bc := bus.Config{Advertise: cfg.BusAddr, Secret: []byte(cfg.BusSecret), Events: ev}
	if cfg.BusSecret == "" {
		bc.Secret = bus.SecretFromPassword(cfg.RequirePass)
	}
	if cert != nil {
		bc.ServerTLS, bc.ClientTLS = busTLS(*cert)
	}
	b, err := openBus(cfg.Bus, respAddr, bc, store, local)
	if err != nil {
		return nil, err
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	logger.Info("bus ready", "addr", b.Addr(), "tls", cert != nil)
	return b, nil
}

// openBus listens where --bus says. auto prefers the RESP port + 10000 (the
// port operators open for it, as for Redis Cluster's bus) and takes any
// free port when that one is out of range or taken: peers find each
// other's addresses in the table, so only a firewall needs a fixed port,
// and then --bus names it.
func openBus(setting, respAddr string, bc bus.Config, store dynastore.Store, local pubsub.Local) (*bus.Bus, error) {
	if setting != busAuto {
		bc.Listen = setting
		return bus.New(bc, store, local)
	}
	var errs []error
	if addr, err := bus.ListenFor(respAddr); err == nil {
		bc.Listen = addr
		b, err := bus.New(bc, store, local)
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	host, _, err := net.SplitHostPort(respAddr)
	if err != nil {
		return nil, fmt.Errorf("bus: %w", err)
	}
	bc.Listen = net.JoinHostPort(host, "0")
	b, err := bus.New(bc, store, local)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	return b, nil
}

// busTLS is the bus's TLS: every instance of a table serves the same
// certificate (--tls-cert), so each side requires the other to present
// exactly that certificate. Someone without its private key can neither
// listen as a peer nor dial one, and a peer's address need not be among
// the certificate's names.
func busTLS(cert tls.Certificate) (server, client *tls.Config) {
	verify := func(rawCerts [][]byte) error {
		if len(rawCerts) == 0 || len(cert.Certificate) == 0 || !bytes.Equal(rawCerts[0], cert.Certificate[0]) {
			return errors.New("bus: the peer's certificate is not this instance's")
		}
		return nil
	}
	server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		ClientAuth:   tls.RequireAnyClientCert,
	}
	client = &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		// The chain is not checked against a CA: the certificate itself is
		// pinned, which is stricter.
		InsecureSkipVerify: true,
	}
	server.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error { return verify(raw) }
	client.VerifyPeerCertificate = server.VerifyPeerCertificate
	return server, client
}
