package resp

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// discardConn is a client connection whose replies go nowhere.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }
func (discardConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }
func (discardConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }

// The allocations of a pipelined batch of hot commands on the memory
// store, over the whole path from the read buffer to the reply: GET and
// PING allocate nothing, INCR only the objects of the item it stores: its
// attribute list, and the bytes and box of its version (a counter below
// 10000 is a shared box). Each batch also boxes the slice header of each
// buffer it lends back to bufPool (two, 48 bytes a batch).
func TestPipelineAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cases := []struct {
		name, value string // value: what each key holds first
		req         func(key string) string
		perRequest  float64
	}{
		{"PING", "x", func(string) string { return "*1\r\n$4\r\nPING\r\n" }, 0},
		{"GET", "value", func(k string) string { return fmt.Sprintf("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(k), k) }, 0},
		{"INCR", "7", func(k string) string { return fmt.Sprintf("*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n", len(k), k) }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stats := dynastore.NewStats()
			srv := &commands.Server{Store: model.On(memory.New(memory.Options{Observer: stats})), Stats: stats, Table: commands.NewTable(), Started: time.Now()}
			c := newConn(New(srv, Options{}), discardConn{})
			run := func(batch []byte) {
				c.buf, c.pos = batch, 0
				c.process()
				putBuf(c.w.take())
			}
			const depth = 16
			var batch strings.Builder
			for i := range depth {
				k := fmt.Sprintf("key:%d", i)
				run(fmt.Appendf(nil, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(tc.value), tc.value))
				batch.WriteString(tc.req(k))
			}
			reqs := []byte(batch.String())
			c.buf, c.pos = reqs, 0
			require.True(t, c.process())
			out := c.w.take()
			require.NotContains(t, string(out), "-", "no error replies")
			putBuf(out)
			allocs := testing.AllocsPerRun(50, func() { run(reqs) })
			require.LessOrEqual(t, allocs, depth*tc.perRequest+2)
		})
	}
}
