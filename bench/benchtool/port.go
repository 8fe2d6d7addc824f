package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
)

// runPort prints a port nothing is bound to. It picks below Linux's
// ephemeral range (32768 and up), so the kernel does not hand the same port
// to an outgoing connection before the server binds it, and it checks by
// binding, which also sees ports held by sockets that do not listen.
func runPort() error {
	for range 200 {
		p := 20000 + rand.IntN(32768-20000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		fmt.Println(p)
		return nil
	}
	return errors.New("no free port found")
}
