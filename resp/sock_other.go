//go:build !unix

package resp

import (
	"errors"
	"net"
	"syscall"
)

// socketOf has no raw socket to offer off Unix: connections are read
// through net.Conn, and blocked clients are not watched for hang-ups.
func socketOf(net.Conn) syscall.RawConn { return nil }

func sysRead(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }

func sysPeek(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }
