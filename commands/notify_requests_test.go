package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/events"
)

// TestKeyspaceEventsCostNoRequests: with every keyspace event class on
// (new and keymiss included), each write makes the same store requests as
// with notifications off: what an event needs (was the key new, did a pop
// empty its list) comes back from the requests the command makes anyway.
func TestKeyspaceEventsCostNoRequests(t *testing.T) {
	script := [][]string{
		{"SET", "s", "v"}, {"SET", "s", "w", "GET"}, {"SET", "s2", "v", "KEEPTTL"}, {"SETNX", "s3", "v"},
		{"SETEX", "s4", "10", "v"}, {"MSET", "m1", "1", "m2", "2"}, {"MSETNX", "m3", "1"},
		{"INCR", "n"}, {"INCR", "n"}, {"INCRBY", "n2", "5"}, {"INCRBYFLOAT", "f", "1.5"},
		{"APPEND", "a", "x"}, {"APPEND", "a", "y"}, {"SETRANGE", "r", "2", "x"},
		{"GETEX", "s", "EX", "100"}, {"GETEX", "s", "PERSIST"}, {"GETDEL", "s"}, {"GET", "nokey"},
		{"EXPIRE", "s2", "100"}, {"PERSIST", "s2"}, {"DEL", "s2"}, {"DEL", "m1", "m2", "nokey"},
		{"RENAME", "s3", "s5"}, {"COPY", "s5", "s6"},
		{"LPUSH", "l", "a", "b"}, {"RPOP", "l"}, {"LPOP", "l"}, {"RPUSH", "l2", "x"}, {"LMOVE", "l2", "l3", "LEFT", "RIGHT"},
		{"SADD", "set", "a", "b"}, {"SREM", "set", "a"}, {"SPOP", "set"}, {"SADD", "set2", "x"}, {"SMOVE", "set2", "set3", "x"},
		{"HSET", "h", "f", "v"}, {"HINCRBY", "h", "n", "1"}, {"HDEL", "h", "f", "n"},
		{"ZADD", "z", "1", "a"}, {"ZINCRBY", "z", "1", "a"}, {"ZPOPMIN", "z"},
		{"XADD", "x", "1-1", "f", "v"}, {"XDEL", "x", "1-1"},
	}
	run := func(flags events.Class) []map[string]int64 {
		st := dynastore.NewStats()
		h := newHarness(memory.New(memory.Options{Observer: st}))
		h.srv.KeyEvents().ApplyFlags(flags)
		var out []map[string]int64
		for _, args := range script {
			st.Reset()
			h.doS(args...)
			ops := opsOf(st, strings.ToLower(args[0]))
			require.NotEmpty(t, ops, "%q", args)
			out = append(out, ops)
		}
		return out
	}
	off := run(0)
	on := run(events.All | events.New | events.KeyMiss | events.Keyspace | events.Keyevent)
	for i, args := range script {
		require.Equal(t, off[i], on[i], "%q", args)
	}
}
