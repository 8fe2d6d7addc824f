package bus

import (
	"fmt"
	"net"
	"strconv"
)

// portOffset is where the bus port sits from the RESP port, as Redis
// Cluster places its bus: operators already open "port + 10000" for it.
const portOffset = 10000

// ListenFor returns the bus's default listen address for a RESP listen
// address: the same host, the port + 10000. cmd/redamo uses it when no
// bus port is given.
func ListenFor(respAddr string) (string, error) {
	host, port, err := net.SplitHostPort(respAddr)
	if err != nil {
		return "", fmt.Errorf("bus: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p+portOffset > 65535 {
		return "", fmt.Errorf("bus: no bus port for RESP port %q (it must be at most %d; give the bus port)", port, 65535-portOffset)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+portOffset)), nil
}

// Rejected returns how many connections failed the handshake since start:
// for INFO, a sign of a misconfigured secret or of someone knocking.
func (b *Bus) Rejected() int64 { return b.rejected.Load() }
