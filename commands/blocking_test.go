package commands_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/internal/testserver"
)

// pipeConn is a raw client: requests go out in one write, replies are read
// one at a time, each with a deadline.
type pipeConn struct {
	t  *testing.T
	c  net.Conn
	r  *bufio.Reader
	id int64 // the server's id for it
}

func dialPipe(t *testing.T, s *testserver.Server) *pipeConn {
	t.Helper()
	c := s.Dial(t)
	p := &pipeConn{t: t, c: c, r: bufio.NewReader(c)}
	p.send([]string{"CLIENT", "ID"})
	id, err := strconv.ParseInt(strings.Trim(p.reply(), ":\r\n"), 10, 64)
	require.NoError(t, err)
	p.id = id
	return p
}

// send writes the requests in one write.
func (p *pipeConn) send(reqs ...[]string) {
	p.t.Helper()
	var b strings.Builder
	for _, args := range reqs {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	_, err := p.c.Write([]byte(b.String()))
	require.NoError(p.t, err)
}

// reply reads the next reply.
func (p *pipeConn) reply() string {
	p.t.Helper()
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := testserver.ReadReply(p.r)
	require.NoError(p.t, err, "no reply")
	return string(got)
}

// waitGone waits until s no longer serves p's connection.
func (p *pipeConn) waitGone(s *testserver.Server) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		return !slices.ContainsFunc(s.Srv.Clients.List(), func(cn *commands.Conn) bool { return cn.ID == p.id })
	}, 10*time.Second, time.Millisecond, "the closed connection is still served")
}

// Every kind of wait sends the replies of the requests before it as it
// starts waiting, as Redis does when it blocks a client: a client that
// pipelines a PING and a blocking command has its PONG at once.
func TestBlockingWaitSendsRepliesBefore(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range []struct {
			name  string
			setup []any    // run first, by another client
			wait  []string // the request that waits
			serve []any    // what ends the wait, by another client
			want  string   // a regexp of the waiting request's reply
		}{
			{"blpop", nil, []string{"BLPOP", "l1", "0"}, []any{"RPUSH", "l1", "x"}, `^\*2\r\n\$2\r\nl1\r\n\$1\r\nx\r\n$`},
			{"blmove", nil, []string{"BLMOVE", "l2", "d2", "LEFT", "RIGHT", "0"}, []any{"RPUSH", "l2", "x"}, `^\$1\r\nx\r\n$`},
			{"bzpopmin", nil, []string{"BZPOPMIN", "z3", "0"}, []any{"ZADD", "z3", "1", "m"}, `^\*3\r\n\$2\r\nz3\r\n\$1\r\nm\r\n\$1\r\n1\r\n$`},
			{"xread", nil, []string{"XREAD", "BLOCK", "0", "STREAMS", "s4", "$"}, []any{"XADD", "s4", "1-1", "f", "v"}, `^\*1\r\n\*2\r\n\$2\r\ns4\r\n\*1\r\n\*2\r\n\$3\r\n1-1\r\n`},
			{"lock.acquire", []any{"LOCK.ACQUIRE", "lk5", "holder", "PX", "60000"}, []string{"LOCK.ACQUIRE", "lk5", "me", "WAIT", "60000"}, []any{"LOCK.RELEASE", "lk5", "holder"}, `^:\d+\r\n$`},
			{"leader.elect", []any{"LEADER.ELECT", "e6", "holder"}, []string{"LEADER.ELECT", "e6", "me", "WAIT", "60000"}, []any{"LEADER.RESIGN", "e6", "holder"}, `^:\d+\r\n$`},
			{"leader.watch", []any{"LEADER.ELECT", "e7", "holder"}, []string{"LEADER.WATCH", "e7", "1", "BLOCK", "60000"}, []any{"LEADER.RESIGN", "e7", "holder"}, `^\*8\r\n\$6\r\nleader\r\n\$-1\r\n`},
			{"queue.pop", nil, []string{"QUEUE.POP", "q8", "BLOCK", "0"}, []any{"QUEUE.PUSH", "q8", "hello"}, `^\*1\r\n\*8\r\n`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.setup != nil {
					require.NoError(t, c.Do(ctx, tc.setup...).Err())
				}
				p := dialPipe(t, s)
				p.send([]string{"PING"}, tc.wait, []string{"ECHO", "after"})
				require.Equal(t, "+PONG\r\n", p.reply())
				require.NoError(t, c.Do(ctx, tc.serve...).Err())
				require.Regexp(t, tc.want, p.reply())
				require.Equal(t, "$5\r\nafter\r\n", p.reply())
			})
		}
	})
}

// Two blocking pops in one write with one element there: the first takes
// it and is answered at once, the second waits for the next element.
func TestPipelinedBlockingPops(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range []struct {
			name          string
			pop           []string
			push          func(v string) []any
			first, second string
		}{
			{"blpop", []string{"BLPOP", "p1", "0"}, func(v string) []any { return []any{"RPUSH", "p1", v} },
				"*2\r\n$2\r\np1\r\n$1\r\na\r\n", "*2\r\n$2\r\np1\r\n$1\r\nb\r\n"},
			{"brpoplpush", []string{"BRPOPLPUSH", "p2", "active", "0"}, func(v string) []any { return []any{"RPUSH", "p2", v} },
				"$1\r\na\r\n", "$1\r\nb\r\n"},
			{"bzpopmin", []string{"BZPOPMIN", "p3", "0"}, func(v string) []any { return []any{"ZADD", "p3", "1", v} },
				"*3\r\n$2\r\np3\r\n$1\r\na\r\n$1\r\n1\r\n", "*3\r\n$2\r\np3\r\n$1\r\nb\r\n$1\r\n1\r\n"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, c.Do(ctx, tc.push("a")...).Err())
				p := dialPipe(t, s)
				p.send(tc.pop, tc.pop)
				require.Equal(t, tc.first, p.reply())
				waitBlocked(t, s, 1)
				require.NoError(t, c.Do(ctx, tc.push("b")...).Err())
				require.Equal(t, tc.second, p.reply())
			})
		}
		// BRPOPLPUSH pushes at the head.
		require.Equal(t, []string{"b", "a"}, c.LRange(ctx, "active", 0, -1).Val())
	})
}

// A worker (BullMQ's) that pipelines blocking moves and closes its
// connection takes no job: once the client is gone, nothing of what it
// sent runs, wherever the close came in what it sent. Redis reads a
// blocked client's socket, sees the end and frees the client with its
// pending requests.
func TestClosedClientTakesNoJob(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		move := func(src string) []string { return []string{"BRPOPLPUSH", src, "active", "0"} }
		for i, tc := range []struct {
			name string
			// leave sends what the worker sends and closes its
			// connection; a job is waiting from the start when early.
			early bool
			leave func(p *pipeConn, waiting string)
		}{
			{"closed while blocked", false, func(p *pipeConn, waiting string) {
				p.send(move(waiting))
				waitBlocked(t, s, 1)
				require.NoError(t, p.c.Close())
			}},
			{"closed with a move sent after the blocked one", false, func(p *pipeConn, waiting string) {
				p.send(move(waiting))
				waitBlocked(t, s, 1)
				p.send(move(waiting))
				require.NoError(t, p.c.Close())
			}},
			{"closed with a move pipelined behind the blocked one", true, func(p *pipeConn, waiting string) {
				p.send(move(waiting+":empty"), move(waiting))
				require.NoError(t, p.c.Close())
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				waiting := fmt.Sprintf("waiting%d", i)
				if tc.early {
					require.NoError(t, c.RPush(ctx, waiting, "job").Err())
				}
				p := dialPipe(t, s)
				tc.leave(p, waiting)
				p.waitGone(s)
				if !tc.early {
					require.NoError(t, c.RPush(ctx, waiting, "job").Err())
				}
				require.Equal(t, []string{"job"}, c.LRange(ctx, waiting, 0, -1).Val())
				require.EqualValues(t, 0, c.Exists(ctx, "active").Val())
				require.Zero(t, s.Srv.BlockedClients())
			})
		}
	})
}
