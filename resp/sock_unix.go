//go:build unix

package resp

import (
	"crypto/tls"
	"net"
	"syscall"
)

// socketOf returns the socket beneath c (beneath TLS too), nil if it has
// none.
func socketOf(c net.Conn) syscall.RawConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// sysRead reads the socket fd without blocking (EAGAIN when nothing is there).
func sysRead(fd uintptr, p []byte) (int, error) { return syscall.Read(int(fd), p) }

// sysPeek reads the socket fd's next bytes without consuming them or
// blocking (EAGAIN when nothing is there; 0 at the end of the stream).
func sysPeek(fd uintptr, p []byte) (int, error) {
	n, _, err := syscall.Recvfrom(int(fd), p, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
