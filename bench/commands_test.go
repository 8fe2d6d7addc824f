package bench

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/resp"
	"github.com/redamo/redamo/scripting"
)

// env runs commands the way resp's dispatch does (resolve, label the
// context, run through Server.Run, encode with resp.Writer), minus the
// network, on a fresh memory store.
type env struct {
	srv  *commands.Server
	conn *commands.Conn
	w    *resp.Writer
}

func newEnv() *env {
	stats := dynastore.NewStats()
	table := commands.NewTable()
	scripting.Register(table)
	return &env{
		srv: &commands.Server{
			Store:    model.On(memory.New(memory.Options{Observer: stats})),
			Stats:    stats,
			Table:    table,
			Started:  time.Now(),
			Commands: commands.NewCommandStats(),
		},
		conn: &commands.Conn{Proto: 2, Authed: true},
		w:    resp.NewWriter(2),
	}
}

// do runs one command and returns its encoded reply (valid until the next do).
func (e *env) do(tb testing.TB, args ...[]byte) []byte {
	cmd, msg := e.srv.Table.Resolve(args)
	if msg != "" {
		tb.Fatalf("%s: %s", args[0], msg)
	}
	e.w.Reset()
	c := &commands.Ctx{
		Context: dynastore.WithLabel(context.Background(), cmd.Name),
		Args:    args,
		W:       e.w,
		Target:  e.srv.Store,
		Conn:    e.conn,
		Srv:     e.srv,
	}
	e.srv.Run(c, cmd)
	out := e.w.Bytes()
	if len(out) > 0 && out[0] == '-' {
		tb.Fatalf("%q: %s", bytes.Join(args, []byte(" ")), out)
	}
	return out
}

// keys returns n distinct keys.
func keys(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(prefix + strconv.Itoa(i))
	}
	return out
}

func b(s string) []byte { return []byte(s) }

// valueSizes are the value sizes every string benchmark runs at: a typical
// small value, 1 KB, and a value near the 400 KB item limit's order.
var valueSizes = []int{16, 1024, 64 * 1024}

// bySize runs body once per value size, as a sub-benchmark.
func bySize(bm *testing.B, body func(bm *testing.B, value []byte)) {
	for _, size := range valueSizes {
		bm.Run(fmt.Sprintf("value=%d", size), func(bm *testing.B) {
			body(bm, bytes.Repeat([]byte("x"), size))
		})
	}
}

const keySpace = 1000

func BenchmarkSET(bm *testing.B) {
	bySize(bm, func(bm *testing.B, value []byte) {
		e, ks := newEnv(), keys("k:", keySpace)
		bm.SetBytes(int64(len(value)))
		bm.ReportAllocs()
		bm.ResetTimer()
		for i := range bm.N {
			e.do(bm, b("SET"), ks[i%keySpace], value)
		}
	})
}

func BenchmarkGET(bm *testing.B) {
	bySize(bm, func(bm *testing.B, value []byte) {
		e, ks := newEnv(), keys("k:", keySpace)
		for _, k := range ks {
			e.do(bm, b("SET"), k, value)
		}
		bm.SetBytes(int64(len(value)))
		bm.ReportAllocs()
		bm.ResetTimer()
		for i := range bm.N {
			e.do(bm, b("GET"), ks[i%keySpace])
		}
	})
}

// BenchmarkGETParallel shows how the memory store's lock scales with clients.
func BenchmarkGETParallel(bm *testing.B) {
	shared := newEnv()
	ks := keys("k:", keySpace)
	for _, k := range ks {
		shared.do(bm, b("SET"), k, b("0123456789abcdef"))
	}
	bm.ReportAllocs()
	bm.ResetTimer()
	bm.RunParallel(func(pb *testing.PB) {
		// One connection (and writer) per goroutine, one server.
		e := &env{srv: shared.srv, conn: &commands.Conn{Proto: 2, Authed: true}, w: resp.NewWriter(2)}
		i := 0
		for pb.Next() {
			e.do(bm, b("GET"), ks[i%keySpace])
			i++
		}
	})
}

func BenchmarkINCR(bm *testing.B) {
	e, ks := newEnv(), keys("counter:", keySpace)
	bm.ReportAllocs()
	bm.ResetTimer()
	for i := range bm.N {
		e.do(bm, b("INCR"), ks[i%keySpace])
	}
}

// BenchmarkSETNXPX is lock acquisition: every key is new, so every SET wins.
func BenchmarkSETNXPX(bm *testing.B) {
	e, ks := newEnv(), keys("lock:", bm.N)
	bm.ReportAllocs()
	bm.ResetTimer()
	for i := range bm.N {
		if out := e.do(bm, b("SET"), ks[i], b("owner-token-1234"), b("NX"), b("PX"), b("30000")); string(out) != "+OK\r\n" {
			bm.Fatalf("SET NX PX on a new key: %q", out)
		}
	}
}

func BenchmarkEXPIRE(bm *testing.B) {
	e, ks := newEnv(), keys("k:", keySpace)
	for _, k := range ks {
		e.do(bm, b("SET"), k, b("0123456789abcdef"))
	}
	bm.ReportAllocs()
	bm.ResetTimer()
	for i := range bm.N {
		e.do(bm, b("EXPIRE"), ks[i%keySpace], b("1000"))
	}
}

// BenchmarkDEL deletes existing keys (set up before the timer starts).
func BenchmarkDEL(bm *testing.B) {
	e, ks := newEnv(), keys("k:", bm.N)
	for _, k := range ks {
		e.do(bm, b("SET"), k, b("0123456789abcdef"))
	}
	bm.ReportAllocs()
	bm.ResetTimer()
	for i := range bm.N {
		if out := e.do(bm, b("DEL"), ks[i]); string(out) != ":1\r\n" {
			bm.Fatalf("DEL of an existing key: %q", out)
		}
	}
}

func BenchmarkMGET(bm *testing.B) {
	for _, n := range []int{10, 100} {
		bm.Run(fmt.Sprintf("keys=%d", n), func(bm *testing.B) {
			e, ks := newEnv(), keys("k:", n)
			for _, k := range ks {
				e.do(bm, b("SET"), k, b("0123456789abcdef"))
			}
			args := append([][]byte{b("MGET")}, ks...)
			bm.ReportAllocs()
			bm.ResetTimer()
			for range bm.N {
				e.do(bm, args...)
			}
		})
	}
}

// BenchmarkLargeReadRoundTrips reads a large hash and set whole (HGETALL,
// SMEMBERS) on a store that takes a millisecond per request, as a remote
// one does: ns/op counts the round trips a command waits for in a row. A
// collection the instance knows is read in one (key item and first page
// of members at once), a small one in one, a large one it does not know
// yet in two.
func BenchmarkLargeReadRoundTrips(bm *testing.B) {
	const latency = time.Millisecond
	for _, tc := range []struct {
		name    string
		entries int
		known   bool
	}{
		{"large-known", 1000, true},
		{"large-unknown", 1000, false},
		{"small", 10, true},
	} {
		bm.Run(tc.name, func(bm *testing.B) {
			e := newEnv()
			args := [][]byte{b("HSET"), b("h")}
			members := [][]byte{b("SADD"), b("s")}
			for i := range tc.entries {
				f := b("f" + strconv.Itoa(i))
				args = append(args, f, f)
				members = append(members, f)
			}
			e.do(bm, args...)
			e.do(bm, members...)
			e.srv.Store.Data().(*memory.Store).SetLatency(latency)
			bm.ResetTimer()
			for i := range bm.N {
				if !tc.known {
					// Another instance's view: no cached generation.
					bm.StopTimer()
					e = &env{srv: cloneServer(e.srv), conn: e.conn, w: e.w}
					bm.StartTimer()
				}
				if i%2 == 0 {
					e.do(bm, b("HGETALL"), b("h"))
				} else {
					e.do(bm, b("SMEMBERS"), b("s"))
				}
			}
		})
	}
}

// cloneServer returns a server on srv's store with empty caches, as
// another redamo instance on the same table.
func cloneServer(srv *commands.Server) *commands.Server {
	return &commands.Server{
		Store:    srv.Store,
		Stats:    srv.Stats,
		Table:    srv.Table,
		Started:  srv.Started,
		Commands: commands.NewCommandStats(),
	}
}
