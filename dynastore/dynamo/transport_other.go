//go:build !unix

package dynamo

import "net"

// isIdleAlive cannot peek at a socket off Unix: an idle connection is
// taken as alive, as net/http would without its reader goroutine.
func isIdleAlive(net.Conn) bool { return true }
