package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

func newDoServer() *commands.Server {
	stats := dynastore.NewStats()
	return &commands.Server{
		Store:    model.On(memory.New(memory.Options{Observer: stats})),
		Stats:    stats,
		Table:    commands.NewTable(),
		Commands: commands.NewCommandStats(),
	}
}

func bulk(s string) commands.Reply { return commands.Reply{Kind: commands.ReplyBulk, Str: s} }
func integer(n int64) commands.Reply {
	return commands.Reply{Kind: commands.ReplyInt, Int: n}
}

func cmdArgs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// Do runs each command as a fresh RESP3 connection would, one after the
// other on one server, and hands back the reply tree.
func TestServerDo(t *testing.T) {
	s := newDoServer()
	ctx := context.Background()
	for _, tc := range []struct {
		cmd  []string
		want commands.Reply
	}{
		{[]string{"GET", "k"}, commands.Reply{Kind: commands.ReplyNil}},
		{[]string{"SET", "k", "v"}, commands.Reply{Kind: commands.ReplySimple, Str: "OK"}},
		{[]string{"get", "k"}, bulk("v")},
		{[]string{"INCRBY", "n", "5"}, integer(5)},
		{[]string{"INCR", "k"}, commands.Reply{Kind: commands.ReplyError, Str: "ERR value is not an integer or out of range"}},
		{[]string{"GET"}, commands.Reply{Kind: commands.ReplyError, Str: "ERR wrong number of arguments for 'get' command"}},
		{[]string{"NOPE", "x"}, commands.Reply{Kind: commands.ReplyError, Str: "ERR unknown command 'NOPE', with args beginning with: 'x' "}},
		{[]string{"HSET", "h", "f", "1"}, integer(1)},
		// RESP3: a map stays a map, a set a set.
		{[]string{"HGETALL", "h"}, commands.Reply{Kind: commands.ReplyMap, Elems: []commands.Reply{bulk("f"), bulk("1")}}},
		{[]string{"SADD", "s", "a"}, integer(1)},
		{[]string{"SMEMBERS", "s"}, commands.Reply{Kind: commands.ReplySet, Elems: []commands.Reply{bulk("a")}}},
		{[]string{"RPUSH", "l", "x", "y"}, integer(2)},
		{[]string{"LRANGE", "l", "0", "-1"}, commands.Reply{Kind: commands.ReplyArray, Elems: []commands.Reply{bulk("x"), bulk("y")}}},
		{[]string{"LRANGE", "none", "0", "-1"}, commands.Reply{Kind: commands.ReplyArray}},
		{[]string{"LOCK.ACQUIRE", "deploy", "me", "PX", "60000"}, integer(1)},
		{[]string{"LOCK.ACQUIRE", "deploy", "you"}, commands.Reply{Kind: commands.ReplyNil}},
		{[]string{"LOCK.RELEASE", "deploy", "you"}, commands.Reply{Kind: commands.ReplyError, Str: commands.MsgNotOwner}},
		// A MULTI does not outlive its call: the next command runs at once.
		{[]string{"MULTI"}, commands.Reply{Kind: commands.ReplySimple, Str: "OK"}},
		{[]string{"GET", "k"}, bulk("v")},
	} {
		got := s.Do(ctx, cmdArgs(tc.cmd...)...)
		require.Equal(t, tc.want, got, "%q", tc.cmd)
	}
	require.Equal(t, int64(1), s.Stats.Requests("incrby"), "store requests are labelled with the command")

	check := s.Do(ctx, cmdArgs("LOCK.CHECK", "deploy")...)
	require.Equal(t, commands.ReplyMap, check.Kind)
	owner, ok := check.Field("owner")
	require.True(t, ok)
	require.Equal(t, bulk("me"), owner)
	token, _ := check.Field("token")
	require.Equal(t, integer(1), token)
	_, ok = check.Field("nope")
	require.False(t, ok)
}

// HELLO switches the protocol before its reply: Do returns the reply alone.
func TestServerDoHello(t *testing.T) {
	s := newDoServer()
	r := s.Do(context.Background(), cmdArgs("HELLO", "2")...)
	require.Equal(t, commands.ReplyArray, r.Kind, "HELLO 2 replies in RESP2")
	v, ok := r.Field("proto")
	require.True(t, ok)
	require.Equal(t, integer(2), v)
}

// A blocking command waits within Do and gives up when its context ends.
func TestServerDoBlocking(t *testing.T) {
	s := newDoServer()
	ctx := context.Background()
	require.Equal(t, integer(1), s.Do(ctx, cmdArgs("LOCK.ACQUIRE", "l", "a", "PX", "200")...))
	start := time.Now()
	// The wait is long and its bound far below it, so that a busy
	// machine's pauses do not decide whether b got the lock when a's
	// lease ended or at the end of its wait.
	require.Equal(t, integer(2), s.Do(ctx, cmdArgs("LOCK.ACQUIRE", "l", "b", "WAIT", "120000")...),
		"b gets the lock once a's lease ends")
	require.Less(t, time.Since(start), time.Minute)

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	r := s.Do(cctx, cmdArgs("LOCK.ACQUIRE", "l", "c", "WAIT", "60000")...)
	require.True(t, r.IsError(), "a cancelled wait is an error: %+v", r)
}

// A handler that panics or breaks the one-reply rule gives the error reply
// the network server sends, and the caller keeps running.
func TestServerDoBadHandler(t *testing.T) {
	s := newDoServer()
	s.Table.Add(
		&commands.Command{Name: "boom", Arity: 1, Run: func(*commands.Ctx) { panic("boom") }},
		&commands.Command{Name: "twice", Arity: 1, Run: func(c *commands.Ctx) { c.W.Int(1); c.W.Int(2) }},
	)
	ctx := context.Background()
	require.Equal(t, commands.Reply{Kind: commands.ReplyError, Str: "ERR internal error in 'boom'"}, s.Do(ctx, cmdArgs("boom")...))
	require.Equal(t, commands.Reply{Kind: commands.ReplyError, Str: "ERR internal error in 'twice': malformed reply"}, s.Do(ctx, cmdArgs("twice")...))
	require.Equal(t, int64(1), s.Panics.Load(), "the panic is counted")
}
