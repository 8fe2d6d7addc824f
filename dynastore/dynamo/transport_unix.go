//go:build unix

package dynamo

import (
	"errors"
	"net"
	"syscall"
)

// isIdleAlive reports whether an idle connection can carry a request: the
// server has neither closed it nor sent anything unasked (a TLS close_notify,
// a 408). net/http notices that with a goroutine reading every idle
// connection; a peek at the socket before reuse does it without one.
func isIdleAlive(raw net.Conn) bool {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, perr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: no data and no end of stream. Never wait for readability.
		alive = errors.Is(perr, syscall.EAGAIN)
		return true
	})
	return err == nil && alive
}
