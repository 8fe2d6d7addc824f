package bus

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// The handshake, before any frame:
//
//	listener -> dialer: magic, listener's nonce (32 bytes)
//	dialer -> listener: dialer's nonce, dialer's id (16), uvarint len + its
//	                    advertised address, HMAC(secret, "c", both nonces, id, address)
//	listener -> dialer: listener's id, HMAC(secret, "s", both nonces, listener's id)
//
// The listener closes the connection on a wrong MAC without a word; the
// dialer drops the connection when the listener's MAC or id is not what it
// expected. Fresh nonces on both sides make a recorded handshake useless.
const (
	// magic's last byte is the protocol's version: 2 added the key event
	// frames, which a version 1 peer would drop the connection over, so
	// the two refuse each other at the handshake instead.
	magic     = "RDMB\x02"
	nonceSize = 32
	macSize   = sha256.Size
)

var errAuth = errors.New("bus: peer failed authentication")

// SecretFromPassword derives the bus secret from requirepass, so that an
// operator configures one password; the derivation keeps the bus key from
// being the password itself.
func SecretFromPassword(password string) []byte {
	m := hmac.New(sha256.New, []byte("redamo bus secret v1"))
	m.Write([]byte(password))
	return m.Sum(nil)
}

func handshakeMAC(secret []byte, side string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(side))
	for _, p := range parts {
		m.Write(appendBytes(nil, p))
	}
	return m.Sum(nil)
}

func nonce() []byte {
	b := make([]byte, nonceSize)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b
}

// acceptHandshake runs the listener's side; it returns the dialer's id and
// advertised address.
func acceptHandshake(c net.Conn, r *bufio.Reader, secret []byte, self ID) (ID, string, error) {
	ns := nonce()
	if _, err := c.Write(append([]byte(magic), ns...)); err != nil {
		return ID{}, "", err
	}
	nc := make([]byte, nonceSize)
	var id ID
	if _, err := io.ReadFull(r, nc); err != nil {
		return ID{}, "", err
	}
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return ID{}, "", err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return ID{}, "", err
	}
	if n > 1024 {
		return ID{}, "", errAuth
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(r, addr); err != nil {
		return ID{}, "", err
	}
	mac := make([]byte, macSize)
	if _, err := io.ReadFull(r, mac); err != nil {
		return ID{}, "", err
	}
	if !hmac.Equal(mac, handshakeMAC(secret, "c", ns, nc, id[:], addr)) {
		return ID{}, "", errAuth
	}
	reply := append(self[:0:0], self[:]...)
	reply = append(reply, handshakeMAC(secret, "s", ns, nc, self[:])...)
	if _, err := c.Write(reply); err != nil {
		return ID{}, "", err
	}
	return id, string(addr), nil
}

// dialHandshake runs the dialer's side against the member want.
func dialHandshake(c net.Conn, r *bufio.Reader, secret []byte, self ID, advertised string, want ID) error {
	hello := make([]byte, len(magic)+nonceSize)
	if _, err := io.ReadFull(r, hello); err != nil {
		return err
	}
	if string(hello[:len(magic)]) != magic {
		return fmt.Errorf("bus: not a redamo bus (or another version) at %s", c.RemoteAddr())
	}
	ns := hello[len(magic):]
	nc := nonce()
	msg := append(nc[:len(nc):len(nc)], self[:]...)
	msg = appendBytes(msg, []byte(advertised))
	msg = append(msg, handshakeMAC(secret, "c", ns, nc, self[:], []byte(advertised))...)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	var id ID
	mac := make([]byte, macSize)
	if _, err := io.ReadFull(r, id[:]); err != nil {
		return err
	}
	if _, err := io.ReadFull(r, mac); err != nil {
		return err
	}
	if id != want || !hmac.Equal(mac, handshakeMAC(secret, "s", ns, nc, id[:])) {
		return errAuth
	}
	return nil
}
