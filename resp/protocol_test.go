package resp_test

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// The scripts hold Redis's own replies: running them against redis-server
// too proves the expectations, not just redamo's consistency with them.
func TestProtocolScript(t *testing.T) {
	t.Run("redamo", func(t *testing.T) {
		s := testserver.Start(t, nil)
		testserver.RunScript(t, s.Addr, "testdata/protocol.txt", false)
	})
	t.Run("redis-server", func(t *testing.T) {
		testserver.RunScript(t, testserver.RedisServer(t), "testdata/protocol.txt", true)
	})
}

func TestAuthScript(t *testing.T) {
	t.Run("redamo", func(t *testing.T) {
		s := testserver.Start(t, nil, testserver.WithRequirePass("sekret"))
		testserver.RunScript(t, s.Addr, "testdata/auth.txt", false)
	})
	t.Run("redis-server", func(t *testing.T) {
		testserver.RunScript(t, testserver.RedisServer(t, "requirepass", "sekret"), "testdata/auth.txt", true)
	})
}

// BenchmarkPipeline measures the whole path of pipelined requests over TCP
// on the memory store, as redis-benchmark -P 16 drives it: per request,
// the server's time and allocations (the client's side allocates nothing).
func BenchmarkPipeline(b *testing.B) {
	for _, tc := range []struct {
		name, req, reply string
	}{
		{"GET", "*2\r\n$3\r\nGET\r\n$5\r\nkey:1\r\n", "$5\r\nvalue\r\n"},
		{"SET", "*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$5\r\nvalue\r\n", "+OK\r\n"},
		{"PING", "*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := testserver.Start(b, nil)
			c, err := net.Dial("tcp", s.Addr)
			require.NoError(b, err)
			defer c.Close()
			_, err = c.Write([]byte("*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$5\r\nvalue\r\n"))
			require.NoError(b, err)
			_, err = io.ReadFull(c, make([]byte, 5))
			require.NoError(b, err)
			const depth = 16
			batch := []byte(strings.Repeat(tc.req, depth))
			replies := make([]byte, depth*len(tc.reply))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				if _, err := c.Write(batch); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, replies); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			require.Equal(b, strings.Repeat(tc.reply, depth), string(replies))
		})
	}
}
