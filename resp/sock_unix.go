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
