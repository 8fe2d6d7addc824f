package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// runConns opens n connections, proves each one is served with a PING, prints
// "ready" and holds them until stdin is closed (or -hold passes), so the
// caller can measure the server while they sit idle.
func runConns(args []string) error {
	fs := flag.NewFlagSet("conns", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address")
	n := fs.Int("n", 1000, "connections to open")
	hold := fs.Duration("hold", 2*time.Minute, "how long to hold them at most")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conns := make([]net.Conn, 0, *n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range *n {
		c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
		if err := ping(c); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(*hold):
	}
	return nil
}

func ping(c net.Conn) error {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("PING answered " + fmt.Sprintf("%q", line))
	}
	return c.SetDeadline(time.Time{})
}
