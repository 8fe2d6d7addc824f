//go:build !unix

package resp

import (
	"errors"
	"net"
	"syscall"
)

// socketOf has no raw socket to offer off Unix: connections are read
// through net.Conn.
func socketOf(net.Conn) syscall.RawConn { return nil }

func sysRead(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
