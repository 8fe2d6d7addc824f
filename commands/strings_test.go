package commands

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

func TestParseStringOpts(t *testing.T) {
	for _, tc := range []struct {
		args   string
		forSet bool
		flags  uint16
		expire string
		err    string
	}{
		{"", true, 0, "", ""},
		{"NX", true, setNX, "", ""},
		{"nx nx", true, setNX, "", ""},
		{"NX XX", true, 0, "", MsgSyntax},
		{"XX NX", true, 0, "", MsgSyntax},
		{"GET GET XX", true, setGet | setXX, "", ""},
		{"EX 10", true, setEX, "10", ""},
		{"EX 10 EX 20", true, setEX, "20", ""},
		{"EX 10 PX 20", true, 0, "", MsgSyntax},
		{"PXAT 5 EXAT 5", true, 0, "", MsgSyntax},
		{"KEEPTTL EX 1", true, 0, "", MsgSyntax},
		{"PX 1 KEEPTTL", true, 0, "", MsgSyntax},
		{"KEEPTTL KEEPTTL", true, setKeepTTL, "", ""},
		{"EX", true, 0, "", MsgSyntax},
		{"PERSIST", true, 0, "", MsgSyntax},
		{"PERSIST", false, setPersist, "", ""},
		{"PERSIST EX 1", false, 0, "", MsgSyntax},
		{"EX 1 PERSIST", false, 0, "", MsgSyntax},
		{"NX", false, 0, "", MsgSyntax},
		{"GET", false, 0, "", MsgSyntax},
		{"KEEPTTL", false, 0, "", MsgSyntax},
		{"PXAT 7", false, setPXAT, "7", ""},
	} {
		var args [][]byte
		for _, a := range strings.Fields(tc.args) {
			args = append(args, []byte(a))
		}
		flags, expire, msg := parseStringOpts(args, tc.forSet)
		require.Equal(t, tc.err, msg, tc.args)
		if msg == "" {
			require.Equal(t, tc.flags, flags, tc.args)
			require.Equal(t, tc.expire, string(expire), tc.args)
		}
	}
}

func TestExpireDeadline(t *testing.T) {
	const now = 1_700_000_000_000
	inv := fmt.Sprintf(MsgInvalidExpire, "set")
	for _, tc := range []struct {
		arg   string
		flags uint16
		want  int64
		err   string
	}{
		{"10", setEX, now + 10_000, ""},
		{"10", setPX, now + 10, ""},
		{"10", setEXAT, 10_000, ""},
		{"10", setPXAT, 10, ""},
		{"0", setEX, 0, inv},
		{"-1", setPX, 0, inv},
		{"abc", setEX, 0, MsgNotInt},
		{"+1", setEX, 0, MsgNotInt},
		{"9223372036854775", setEXAT, 9223372036854775000, ""},
		{"9223372036854776", setEXAT, 0, inv},
		{"9223372036854775", setEX, 0, inv}, // the addition overflows
		{strconv.FormatInt(math.MaxInt64, 10), setPXAT, math.MaxInt64, ""},
		{strconv.FormatInt(math.MaxInt64, 10), setPX, 0, inv},
	} {
		got, msg := expireDeadline([]byte(tc.arg), tc.flags, now, "set")
		require.Equal(t, tc.err, msg, tc.arg)
		require.Equal(t, tc.want, got, tc.arg)
	}
}

func TestSubstring(t *testing.T) {
	v := []byte("This is a string")
	for _, tc := range []struct {
		start, end int64
		want       string
	}{
		{0, 3, "This"}, {-3, -1, "ing"}, {0, -1, "This is a string"}, {10, 100, "string"},
		{5, 3, ""}, {-1, -5, ""}, {-100, -50, "T"}, {-100, 2, "Thi"}, {100, 200, ""},
		{math.MaxInt64, math.MinInt64, ""}, {math.MinInt64, math.MaxInt64, "This is a string"},
	} {
		require.Equal(t, tc.want, string(substring(v, tc.start, tc.end)), "%d %d", tc.start, tc.end)
	}
	require.Equal(t, "", string(substring(nil, 0, -1)))
}

func TestKVPairsLastValueWins(t *testing.T) {
	keys, vals := kvPairs([][]byte{[]byte("a"), []byte("1"), []byte("b"), []byte("2"), []byte("a"), []byte("3")})
	require.Equal(t, [][]byte{[]byte("a"), []byte("b")}, keys)
	require.Equal(t, [][]byte{[]byte("3"), []byte("2")}, vals)
}

// TestStringRequestCounts holds the string commands to DESIGN.md's request
// targets, reading the store's counters per command.
func TestStringRequestCounts(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		requireReply(t, h, "+OK", "SET", "seed", "v")
		requireReply(t, h, "+OK", "SET", "n", "10")
		requireReply(t, h, ":3", "APPEND", "chunked", "abc")
		for _, tc := range []struct {
			args []string
			ops  map[string]int64
		}{
			{[]string{"GET", "seed"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"GET", "missing"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"STRLEN", "seed"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"GETRANGE", "seed", "0", "-1"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"SET", "k", "v"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SET", "k", "v", "NX", "PX", "30000"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SET", "k", "v", "XX", "EX", "10"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SET", "k", "v", "GET"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SET", "k", "v", "NX", "GET"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SET", "k", "v", "KEEPTTL"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"SET", "k", "v", "KEEPTTL", "XX", "GET"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"SET", "k", "v", "EXAT", "1"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SETNX", "k", "v"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"SETEX", "k", "10", "v"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"PSETEX", "k", "10000", "v"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"GETSET", "k", "v"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"GETEX", "k"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"GETEX", "k", "EX", "100"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"GETEX", "k", "PERSIST"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"GETEX", "k", "PXAT", "1"}, map[string]int64{dynastore.OpDeleteItem: 1}},
			{[]string{"GETDEL", "seed"}, map[string]int64{dynastore.OpDeleteItem: 1}},
			{[]string{"INCR", "n"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"INCR", "newcounter"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"DECR", "n"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"INCRBY", "n", "5"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"DECRBY", "n", "5"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"APPEND", "chunked", "def"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"APPEND", "newappend", "x"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"INCRBYFLOAT", "n", "1.5"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
			{[]string{"SETRANGE", "chunked", "1", "X"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
			{[]string{"MSET", "a", "1"}, map[string]int64{dynastore.OpPutItem: 1}},
			{[]string{"MSET", "a", "1", "b", "2", "c", "3"}, map[string]int64{dynastore.OpTransactWriteItems: 1}},
			{[]string{"MSETNX", "x1", "1", "x2", "2"}, map[string]int64{dynastore.OpTransactWriteItems: 1}},
			{[]string{"MGET", "a", "b", "c", "a"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
		} {
			b.stats.Reset()
			h.doS(tc.args...)
			require.Equal(t, tc.ops, opsOf(b.stats, strings.ToLower(tc.args[0])), "%q", tc.args)
		}
		// MGET of n keys: ceil(n/100) batched reads.
		args := []string{"MGET"}
		for i := 0; i < 250; i++ {
			args = append(args, "key:"+strconv.Itoa(i))
		}
		b.stats.Reset()
		h.doS(args...)
		require.Equal(t, map[string]int64{dynastore.OpBatchGetItem: 3}, opsOf(b.stats, "mget"))
	})
}

func TestValueSizeLimits(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		big := strings.Repeat("x", 390*1024)
		requireReply(t, h, "+OK", "SET", "big", big)
		requireReply(t, h, strconv.Quote(big), "GET", "big")
		requireReply(t, h, ":"+strconv.Itoa(len(big)), "STRLEN", "big")

		// Past an item a value is a big value (model/bigvalue.go): every
		// write of it works as in Redis, up to proto-max-bulk-len.
		huge := strings.Repeat("y", dynastore.MaxItemSize+1)
		requireReply(t, h, "+OK", "SET", "huge", huge)
		requireReply(t, h, ":1", "EXISTS", "huge")
		requireReply(t, h, strconv.Quote(big), "GETSET", "big", huge)
		requireReply(t, h, ":"+strconv.Itoa(len(huge)), "STRLEN", "big")
		requireReply(t, h, "+OK", "SET", "big", big, "KEEPTTL")
		requireReply(t, h, "+OK", "MSET", "m1", "a", "m2", huge)
		requireReply(t, h, ":2", "EXISTS", "m1", "m2")
		requireReply(t, h, ":"+strconv.Itoa(len(big)+20*1024), "APPEND", "big", strings.Repeat("z", 20*1024))
		requireReply(t, h, ":"+strconv.Itoa(len(big)+20*1024), "SETRANGE", "big", strconv.Itoa(dynastore.MaxItemSize), "z")
		requireReply(t, h, "-"+MsgStringTooLong, "SETRANGE", "fresh", "536870912", "z")
		requireReply(t, h, ":0", "EXISTS", "fresh")
		h.srv.SetProtoMaxBulkLen(1 << 20) // the least CONFIG SET allows
		requireReply(t, h, "-"+MsgStringTooLong, "SETRANGE", "fresh", strconv.Itoa(1<<20), "z")
		requireReply(t, h, ":"+strconv.Itoa(1<<20), "SETRANGE", "fresh", strconv.Itoa(1<<20-1), "z")
		requireReply(t, h, ":5", "APPEND", "small", "hello")
		requireReply(t, h, ":"+strconv.Itoa(5+len(huge)), "APPEND", "small", huge)
		requireReply(t, h, "-"+MsgStringTooLong, "APPEND", "small", huge+huge+huge)
		requireReply(t, h, ":"+strconv.Itoa(5+len(huge)), "STRLEN", "small")

		// Keys: up to model.MaxKeyLen bytes work, longer ones cannot be written.
		okKey := strings.Repeat("k", model.MaxKeyLen)
		requireReply(t, h, "+OK", "SET", okKey, "v")
		requireReply(t, h, `"v"`, "GET", okKey)
		tooLong := okKey + "k"
		requireReply(t, h, "-"+MsgKeyTooLong, "SET", tooLong, "v")
		requireReply(t, h, "nil", "GET", tooLong)
		requireReply(t, h, ":0", "EXISTS", tooLong)
		requireReply(t, h, "-"+MsgKeyTooLong, "INCR", tooLong)
		requireReply(t, h, "-"+MsgKeyTooLong, "MSET", "a", "1", tooLong, "2")
		requireReply(t, h, ":0", "EXISTS", "a")
		requireReply(t, h, ":0", "DEL", tooLong)
		requireReply(t, h, "-"+MsgKeyTooLong, "RENAME", okKey, tooLong)
		requireReply(t, h, `"v"`, "GET", okKey)
	})
}

func TestMSetTransactionLimit(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		args := []string{"MSET"}
		for i := 0; i < dynastore.MaxTxActions; i++ {
			args = append(args, "k"+strconv.Itoa(i), "v")
		}
		requireReply(t, h, "+OK", args...)
		requireReply(t, h, ":100", "DBSIZE")
		requireReply(t, h, "-"+MsgTxTooLarge, append(args, "one-more", "v")...)
		requireReply(t, h, ":0", "EXISTS", "one-more")
		// Repeated keys count once, as in Redis the last value wins.
		requireReply(t, h, "+OK", append(args, "k0", "last")...)
		requireReply(t, h, `"last"`, "GET", "k0")
		nx := append([]string{"MSETNX"}, args[1:]...)
		requireReply(t, h, "-"+MsgTxTooLarge, append(nx, "one-more", "v")...)
	})
}

// TestFailedWritesLeaveNothingHalfDone injects a storage failure into the
// write step of commands that read first or touch several keys: the command
// reports the error and the keys are as they were.
func TestFailedWritesLeaveNothingHalfDone(t *testing.T) {
	b := backends(t)[0]
	h := newHarness(b.store)
	boom := fmt.Errorf("injected: %w", dynastore.ErrUnavailable)
	requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2", "s", "hello")

	b.mem.FailNext(dynastore.OpTransactWriteItems, boom)
	requireReply(t, h, "-"+MsgUnavailable, "MSET", "a", "10", "b", "20", "c", "30")
	requireReply(t, h, `["1", "2", nil]`, "MGET", "a", "b", "c")

	b.mem.FailNext(dynastore.OpTransactWriteItems, boom)
	requireReply(t, h, "-"+MsgUnavailable, "RENAME", "a", "z")
	requireReply(t, h, `["1", nil]`, "MGET", "a", "z")

	b.mem.FailNext(dynastore.OpTransactWriteItems, boom)
	requireReply(t, h, "-"+MsgUnavailable, "DEL", "a", "b")
	requireReply(t, h, ":2", "EXISTS", "a", "b")

	b.mem.FailNext(dynastore.OpTransactWriteItems, boom)
	requireReply(t, h, "-"+MsgUnavailable, "COPY", "a", "c")
	requireReply(t, h, ":0", "EXISTS", "c")

	b.mem.FailNext(dynastore.OpPutItem, boom)
	requireReply(t, h, "-"+MsgUnavailable, "SETRANGE", "s", "0", "J")
	requireReply(t, h, `"hello"`, "GET", "s")

	b.mem.FailNext(dynastore.OpPutItem, boom)
	requireReply(t, h, "-"+MsgUnavailable, "INCRBYFLOAT", "a", "1")
	requireReply(t, h, `"1"`, "GET", "a")

	// APPEND to a plain value: the fast path fails its condition, the
	// rewrite fails: the value is unchanged.
	b.mem.FailNext(dynastore.OpPutItem, boom)
	requireReply(t, h, "-"+MsgUnavailable, "APPEND", "s", " world")
	requireReply(t, h, `"hello"`, "GET", "s")

	b.mem.FailNext(dynastore.OpUpdateItem, boom)
	requireReply(t, h, "-"+MsgUnavailable, "INCR", "a")
	requireReply(t, h, `"1"`, "GET", "a")

	b.mem.FailNext(dynastore.OpPutItem, fmt.Errorf("injected: %w", dynastore.ErrThrottled))
	requireReply(t, h, "-"+MsgTryAgain, "SET", "a", "2", "NX", "PX", "100")
	requireReply(t, h, `"1"`, "GET", "a")
	requireReply(t, h, ":-1", "TTL", "a")
}

// TestOptimisticLoopGivesUp makes every conditional rewrite lose its race:
// the command ends with a conflict error instead of spinning forever.
func TestOptimisticLoopGivesUp(t *testing.T) {
	b := backends(t)[0]
	h := newHarness(b.store)
	requireReply(t, h, "+OK", "SET", "s", "hello")
	defer model.SetRetryBudget(model.SetRetryBudget(100 * time.Millisecond))
	// More lost races than fit in the budget (each waits at least 1 ms).
	for range 200 {
		b.mem.FailNext(dynastore.OpPutItem, &dynastore.ConditionFailedError{Old: model.StringItem(0, []byte("s"), []byte("other"), model.OriginArg, 0)})
	}
	requireReply(t, h, "-"+MsgConflict, "SETRANGE", "s", "0", "J")
	requireReply(t, h, `"hello"`, "GET", "s")
	require.True(t, errors.Is(model.ErrGaveUp, dynastore.ErrTxConflict))
}

// TestCounterConcurrency: many goroutines (as if on several instances: each
// harness is a separate server over the same store) INCR one key; the total
// is exact. Then rounds of SET NX PX from many clients have one winner each.
func TestCounterConcurrency(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h0 *harness) {
		const workers, each = 8, 25
		hs := []*harness{h0, newHarness(b.store), newHarness(b.store)}
		var wg sync.WaitGroup
		errs := make(chan string, workers*each)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(h *harness) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if r := string(h.doS("INCR", "counter")); !strings.HasPrefix(r, ":") {
						errs <- r
					}
				}
			}(hs[w%len(hs)].client())
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("INCR failed: %q", e)
		}
		requireReply(t, h0, `"`+strconv.Itoa(workers*each)+`"`, "GET", "counter")

		for round := 0; round < 5; round++ {
			var winners sync.Map
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int, h *harness) {
					defer wg.Done()
					if string(h.doS("SET", "lock", strconv.Itoa(w), "NX", "PX", "5000")) == "+OK\r\n" {
						winners.Store(w, true)
					}
				}(w, hs[w%len(hs)].client())
			}
			wg.Wait()
			n := 0
			winners.Range(func(any, any) bool { n++; return true })
			require.Equal(t, 1, n, "round %d", round)
			for _, h := range hs {
				h.now = h.now.Add(5 * time.Second) // the lock expires: the next round may take it
			}
		}
	})
}

// TestIncrContendedFallback: INCR on values that need the read-then-write
// path (text values after APPEND) stays exact under contention.
func TestIncrContendedFallback(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		requireReply(t, h, ":1", "APPEND", "c", "1")
		requireReply(t, h, ":2", "APPEND", "c", "0")
		var wg sync.WaitGroup
		var mu sync.Mutex
		done := 0
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(h *harness) {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					r := string(h.doS("INCRBYFLOAT", "c", "1"))
					if strings.HasPrefix(r, "$") {
						mu.Lock()
						done++
						mu.Unlock()
					} else {
						// Only losing every one of the bounded attempts may fail it.
						require.Equal(t, "-"+MsgConflict+"\r\n", r)
					}
				}
			}(h.client())
		}
		wg.Wait()
		require.Positive(t, done)
		requireReply(t, h, strconv.Quote(strconv.Itoa(10+done)), "GET", "c")
	})
}

// BenchmarkHotCommands runs the hot string commands through the command
// table on the memory store (no network): the cost redamo adds per command.
func BenchmarkHotCommands(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"GET", []string{"GET", "k"}},
		{"SET", []string{"SET", "k", "value"}},
		{"SET-NX-PX", []string{"SET", "lock", "me", "NX", "PX", "30000"}},
		{"INCR", []string{"INCR", "n"}},
		{"EXPIRE", []string{"EXPIRE", "k", "100"}},
		{"MGET-10", []string{"MGET", "k", "a", "b", "c", "d", "e", "f", "g", "h", "i"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(memory.New(memory.Options{}))
			h.doS("SET", "k", "value")
			args := toBytes(bc.args)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.do(args...)
			}
		})
	}
}

// TestRetryReadsTheClockAgain: a command that lost a race decides its next
// attempt as of when that attempt runs. Here the key it read expires
// between the attempts, so the retry finds it absent, as Redis would at
// that moment, instead of editing the expired value.
func TestRetryReadsTheClockAgain(t *testing.T) {
	b := backends(t)[0]
	h := newHarness(b.store)
	requireReply(t, h, "+OK", "SET", "s", "hello", "PX", "100")
	cur, err := b.store.Get(context.Background(), model.ItemKey(0, []byte("s")))
	require.NoError(t, err)
	start, reads := h.now, 0
	h.srv.Clock = func() time.Time {
		reads++
		return start.Add(time.Duration(reads-1) * 150 * time.Millisecond)
	}
	b.mem.FailNext(dynastore.OpPutItem, &dynastore.ConditionFailedError{Old: cur})
	requireReply(t, h, ":1", "SETRANGE", "s", "0", "J")
	h.srv.Clock = func() time.Time { return start }
	requireReply(t, h, `"J"`, "GET", "s")
	requireReply(t, h, ":-1", "PTTL", "s")
}
