package resp_test

import (
	"testing"

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
