package commands

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

func TestParseCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"+0", 0, true}, {"-0", 0, true}, {"42", 42, true},
		{"-1", math.MaxUint64, true}, {"18446744073709551615", math.MaxUint64, true},
		{"12\x00junk", 12, true},
		{"18446744073709551616", 0, false}, {" 0", 0, false}, {"0 ", 0, false}, {"abc", 0, false},
		{"-", 0, false}, {"+", 0, false}, {"0x10", 0, false}, {"1.5", 0, false},
	} {
		got, ok := parseCursor([]byte(tc.in))
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestParseExpireOpts(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		flags uint8
		err   string
	}{
		{nil, 0, ""},
		{[]string{"nx"}, expNX, ""},
		{[]string{"XX", "GT"}, expXX | expGT, ""},
		{[]string{"lt", "xx", "lt"}, expLT | expXX, ""},
		{[]string{"nx", "xx"}, 0, MsgNXXXGTLT},
		{[]string{"gt", "nx"}, 0, MsgNXXXGTLT},
		{[]string{"gt", "lt"}, 0, MsgGTAndLT},
		{[]string{"foo"}, 0, "ERR Unsupported option foo"},
		{[]string{"fo\x00o"}, 0, "ERR Unsupported option fo"},
		{[]string{"\nfo\r\nx"}, 0, "ERR Unsupported option  fo  x"},
		{[]string{"fo\r\n"}, 0, "ERR Unsupported option fo"},
		{[]string{"nx", "foo", "xx"}, 0, "ERR Unsupported option foo"},
	} {
		var args [][]byte
		for _, a := range tc.args {
			args = append(args, []byte(a))
		}
		f, msg := parseExpireOpts(args)
		require.Equal(t, tc.err, msg, "%q", tc.args)
		require.Equal(t, tc.flags, f, "%q", tc.args)
	}
}

func TestKeyRequestCounts(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
		for _, tc := range []struct {
			args []string
			ops  map[string]int64
		}{
			{[]string{"EXISTS", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"EXISTS", "a", "b", "zz"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
			{[]string{"TOUCH", "a", "b"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
			{[]string{"TYPE", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"TTL", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"PTTL", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"EXPIRETIME", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
			{[]string{"EXPIRE", "a", "100"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"PEXPIRE", "a", "100000", "GT"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"EXPIREAT", "a", "4000000000", "XX"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"PERSIST", "a"}, map[string]int64{dynastore.OpUpdateItem: 1}},
			{[]string{"EXPIRE", "e", "-1"}, map[string]int64{dynastore.OpDeleteItem: 1}},
			{[]string{"DEL", "d"}, map[string]int64{dynastore.OpDeleteItem: 1}},
			{[]string{"UNLINK", "nokey"}, map[string]int64{dynastore.OpDeleteItem: 1}},
			{[]string{"DEL", "a", "b", "zz"}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
			{[]string{"DEL", "c", "zz"}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpDeleteItem: 1}},
			{[]string{"DEL", "zz", "yy"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
		} {
			b.stats.Reset()
			h.doS(tc.args...)
			require.Equal(t, tc.ops, opsOf(b.stats, strings.ToLower(tc.args[0])), "%q", tc.args)
		}
		requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2")
		for _, args := range [][]string{{"RENAME", "a", "a2"}, {"RENAMENX", "a2", "a3"}, {"COPY", "b", "b2"}, {"MOVE", "b2", "4"}} {
			b.stats.Reset()
			h.doS(args...)
			require.Equal(t, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1},
				opsOf(b.stats, strings.ToLower(args[0])), "%q", args)
		}
	})
}

// TestExpiryToTheMillisecond drives the server clock: a key is live until
// the millisecond of its deadline and absent from then on, for every command.
func TestExpiryToTheMillisecond(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		requireReply(t, h, "+OK", "SET", "k", "v", "PX", "50")
		requireReply(t, h, ":50", "PTTL", "k")
		h.now = h.now.Add(49 * time.Millisecond)
		requireReply(t, h, ":1", "PTTL", "k")
		requireReply(t, h, `"v"`, "GET", "k")
		h.now = h.now.Add(time.Millisecond)
		requireReply(t, h, "nil", "GET", "k")
		requireReply(t, h, ":-2", "PTTL", "k")
		requireReply(t, h, ":0", "EXISTS", "k")
		requireReply(t, h, "+none", "TYPE", "k")
		requireReply(t, h, ":0", "EXPIRE", "k", "100")
		requireReply(t, h, ":0", "PERSIST", "k")
		requireReply(t, h, "-"+MsgNoSuchKey, "RENAME", "k", "j")
		requireReply(t, h, "[]", "KEYS", "*")
		requireReply(t, h, ":0", "DBSIZE")
		// An expired key is taken over by SET NX in one request.
		b.stats.Reset()
		requireReply(t, h, "+OK", "SET", "k", "w", "NX", "PX", "1000")
		require.Equal(t, map[string]int64{dynastore.OpPutItem: 1}, opsOf(b.stats, "set"))
		requireReply(t, h, ":1000", "PTTL", "k")
		// INCR on an expired counter starts from zero, without its old expiry.
		requireReply(t, h, "+OK", "SET", "n", "41", "PX", "10")
		h.now = h.now.Add(10 * time.Millisecond)
		requireReply(t, h, ":1", "INCR", "n")
		requireReply(t, h, ":-1", "PTTL", "n")
		// PEXPIREAT to the current millisecond deletes.
		requireReply(t, h, ":1", "PEXPIREAT", "n", strconv.FormatInt(h.now.UnixMilli(), 10))
		requireReply(t, h, ":0", "EXISTS", "n")
		// GT and LT against an exact deadline.
		requireReply(t, h, "+OK", "SET", "g", "v", "PX", "1000")
		requireReply(t, h, ":0", "PEXPIRE", "g", "1000", "GT")
		requireReply(t, h, ":1", "PEXPIRE", "g", "1001", "GT")
		requireReply(t, h, ":0", "PEXPIRE", "g", "1001", "LT")
		requireReply(t, h, ":1", "PEXPIRE", "g", "1000", "LT")
		requireReply(t, h, ":1000", "PTTL", "g")
		requireReply(t, h, ":"+strconv.FormatInt(h.now.UnixMilli()+1000, 10), "PEXPIRETIME", "g")
		// GETEX PERSIST on a key without expiry: its condition fails, nothing is written.
		requireReply(t, h, "+OK", "SET", "p", "v")
		b.stats.Reset()
		requireReply(t, h, `"v"`, "GETEX", "p", "PERSIST")
		require.Equal(t, map[string]int64{dynastore.OpUpdateItem: 1}, opsOf(b.stats, "getex"))
		requireReply(t, h, ":-1", "TTL", "p")
	})
}

func TestDelAtomicLimit(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		args := []string{"MSET"}
		del := []string{"DEL"}
		for i := 0; i < dynastore.MaxTxActions; i++ {
			args = append(args, "k"+strconv.Itoa(i), "v")
			del = append(del, "k"+strconv.Itoa(i))
		}
		requireReply(t, h, "+OK", args...)
		requireReply(t, h, "+OK", "SET", "extra", "v")
		requireReply(t, h, "-"+MsgTxTooLarge, append(del, "extra")...)
		requireReply(t, h, ":101", "DBSIZE")
		// Absent keys do not count against the limit.
		requireReply(t, h, ":100", append(del, "absent1", "absent2", "k0")...)
		requireReply(t, h, ":1", "DBSIZE")
	})
}

// scanAllKeys iterates SCAN to the end, alternating between harnesses (as a
// client would between instances behind a load balancer).
func scanAllKeys(t *testing.T, hs []*harness, extra ...string) ([]string, int) {
	t.Helper()
	keys, cursors := scanFamily(t, hs, []string{"SCAN"}, extra...)
	return keys, len(cursors)
}

// scanFamily iterates a SCAN-family command (head: its name, and its key but
// for SCAN) to the end, alternating between harnesses, and returns the
// elements met and the cursor of every reply. It sends each cursor as a
// JavaScript client would: through a double.
func scanFamily(t *testing.T, hs []*harness, head []string, extra ...string) (elems, cursors []string) {
	t.Helper()
	cursor := "0"
	for {
		h := hs[len(cursors)%len(hs)]
		args := append(append(append([]string{}, head...), cursor), extra...)
		reply := h.doS(args...)
		v, err := readRESP(bufio.NewReader(bytes.NewReader(reply)))
		require.NoError(t, err)
		require.Equal(t, byte('*'), v.kind, "%q", reply)
		require.Len(t, v.elems, 2)
		cursor = v.elems[0].str
		for _, e := range v.elems[1].elems {
			elems = append(elems, e.str)
		}
		cursors = append(cursors, cursor)
		if cursor == "0" {
			return elems, cursors
		}
		n, err := strconv.ParseUint(cursor, 10, 64)
		require.NoError(t, err)
		cursor = strconv.FormatFloat(float64(n), 'f', -1, 64)
		require.Less(t, len(cursors), 10000)
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func TestScanIteration(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		other := newHarness(b.store)
		other.now = h.now
		var want []string
		args := []string{"MSET"}
		for i := 0; i < 90; i++ {
			k := fmt.Sprintf("key:%03d", i)
			if i%10 == 0 {
				k += "\x00\xff binary"
			}
			want = append(want, k)
			args = append(args, k, "v")
		}
		requireReply(t, h, "+OK", args...)
		requireReply(t, h, ":1", "SADD", "aset", "m")
		want = append(want, "aset")
		requireReply(t, h, "+OK", "SET", "gone", "v", "PX", "10")
		h.conn.DB = 1
		requireReply(t, h, "+OK", "SET", "elsewhere", "v")
		h.conn.DB = 0
		h.now = h.now.Add(10 * time.Millisecond)
		other.now = h.now

		got, calls := scanAllKeys(t, []*harness{h, other}, "COUNT", "7")
		sort.Strings(got)
		sort.Strings(want)
		require.Equal(t, want, got, "every live key of db 0, once")
		require.Greater(t, calls, 5, "COUNT 7 makes it take several calls")

		got, _ = scanAllKeys(t, []*harness{other, h}, "COUNT", "5", "MATCH", "key:00*")
		sort.Strings(got)
		require.Equal(t, []string{"key:000\x00\xff binary", "key:001", "key:002", "key:003", "key:004", "key:005", "key:006", "key:007", "key:008", "key:009"}, got)

		got, _ = scanAllKeys(t, []*harness{h}, "TYPE", "SET", "COUNT", "50")
		require.Equal(t, []string{"aset"}, got)

		requireReply(t, h, "-"+MsgInvalidCursor, "SCAN", "123456789")
		other.conn.DB = 1
		got, _ = scanAllKeys(t, []*harness{other})
		require.Equal(t, []string{"elsewhere"}, got)
	})
}

// TestScanCursorsFitADouble: every cursor SCAN, SSCAN, HSCAN and ZSCAN hand
// out is below 2^53, so a JavaScript client, which keeps it as a double,
// sends back the same number; and a whole iteration with a small COUNT,
// alternating between instances, returns every key, member and field.
func TestScanCursorsFitADouble(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		other := newHarness(b.store)
		other.now = h.now
		const n = 300 // past the inline limits: the collections are large
		sadd, hset, zadd := []string{"SADD", "s"}, []string{"HSET", "h"}, []string{"ZADD", "z"}
		var keys, members, pairs []string
		for i := 0; i < n; i++ {
			k, m, v := "x:"+strconv.Itoa(i), "m"+strconv.Itoa(i), strconv.Itoa(i)
			requireReply(t, h, "+OK", "SET", k, "v")
			sadd = append(sadd, m)
			hset = append(hset, m, v)
			zadd = append(zadd, v, m)
			keys, members, pairs = append(keys, k), append(members, m), append(pairs, m+"="+v)
		}
		requireReply(t, h, ":300", sadd...)
		requireReply(t, h, ":300", hset...)
		requireReply(t, h, ":300", zadd...)
		for _, tc := range []struct {
			head, extra []string
			want        []string
			pairs       bool
		}{
			{[]string{"SCAN"}, []string{"MATCH", "x:*", "COUNT", "10"}, keys, false},
			{[]string{"SSCAN", "s"}, []string{"COUNT", "7"}, members, false},
			{[]string{"HSCAN", "h"}, []string{"COUNT", "7"}, pairs, true},
			{[]string{"ZSCAN", "z"}, []string{"COUNT", "7"}, pairs, true},
		} {
			t.Run(tc.head[0], func(t *testing.T) {
				elems, cursors := scanFamily(t, []*harness{h, other}, tc.head, tc.extra...)
				require.Greater(t, len(cursors), 1, "a small COUNT takes several calls")
				for _, c := range cursors {
					id, err := strconv.ParseUint(c, 10, 64)
					require.NoError(t, err)
					require.Less(t, id, uint64(1)<<53, "cursor %s", c)
				}
				seen := map[string]bool{}
				for i := 0; i < len(elems); i++ {
					if tc.pairs {
						seen[elems[i]+"="+elems[i+1]] = true
						i++
						continue
					}
					seen[elems[i]] = true
				}
				got := make([]string, 0, len(seen))
				for e := range seen {
					got = append(got, e)
				}
				sort.Strings(got)
				want := append([]string(nil), tc.want...)
				sort.Strings(want)
				require.Equal(t, want, got)
			})
		}
	})
}

func TestRandomKey(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		requireReply(t, h, "nil", "RANDOMKEY")
		requireReply(t, h, "+OK", "SET", "old", "v", "PX", "5")
		h.now = h.now.Add(5 * time.Millisecond)
		requireReply(t, h, "nil", "RANDOMKEY")
		h.conn.DB = 2
		requireReply(t, h, "+OK", "SET", "other-db", "v")
		h.conn.DB = 0
		requireReply(t, h, "nil", "RANDOMKEY")
		requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2", "c", "3", "d", "4")
		seen := map[string]bool{}
		for i := 0; i < 60; i++ {
			v, err := readRESP(bufio.NewReader(bytes.NewReader(h.doS("RANDOMKEY"))))
			require.NoError(t, err)
			require.Contains(t, []string{"a", "b", "c", "d"}, v.str)
			seen[v.str] = true
		}
		require.Greater(t, len(seen), 1, "RANDOMKEY returns more than one key")
	})
}

func TestFlush(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		for db := 0; db < 3; db++ {
			h.conn.DB = db
			requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2")
			requireReply(t, h, "+OK", "SET", "x", "1", "EX", "100")
			requireReply(t, h, ":1", "SADD", "s", "m")
		}
		h.conn.DB = 0
		requireReply(t, h, "+OK", "SET", "gone", "v", "PX", "1")
		h.now = h.now.Add(time.Millisecond)
		// A SCAN cursor lives outside the keyspace and survives flushes.
		reply := h.doS("SCAN", "0", "COUNT", "1")
		v, err := readRESP(bufio.NewReader(bytes.NewReader(reply)))
		require.NoError(t, err)
		cursor := v.elems[0].str

		require.Equal(t, []string{":4\r\n", ":4\r\n", ":4\r\n"}, dbSizes(h, 3))

		h.conn.DB = 1
		requireReply(t, h, "+OK", "FLUSHDB")
		require.Equal(t, []string{":4\r\n", ":0\r\n", ":4\r\n"}, dbSizes(h, 3))

		requireReply(t, h, "+OK", "FLUSHALL", "ASYNC")
		require.Equal(t, []string{":0\r\n", ":0\r\n", ":0\r\n"}, dbSizes(h, 3))
		if cursor != "0" {
			reply := string(h.doS("SCAN", cursor))
			require.NotContains(t, reply, MsgInvalidCursor)
		}
		if b.mem != nil {
			requireReply(t, h, "+OK", "MSET", "a", "1", "b", "2")
			b.mem.FailNext(dynastore.OpDeleteItem, fmt.Errorf("injected: %w", dynastore.ErrUnavailable))
			requireReply(t, h, "-"+MsgUnavailable, "FLUSHDB")
		}
	})
}

// dbSizes is the DBSIZE reply of databases 0 to n-1 (exact on every
// backend, where INFO's keyspace is DynamoDB's estimate), leaving db 0
// selected.
func dbSizes(h *harness, n int) []string {
	var out []string
	for db := 0; db < n; db++ {
		h.conn.DB = db
		out = append(out, string(h.doS("DBSIZE")))
	}
	h.conn.DB = 0
	return out
}

// TestRenameCopyCollections: RENAME and COPY of a set large enough to keep
// its members outside the key item.
func TestRenameCopyCollections(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		args := []string{"SADD", "big"}
		for i := 0; i < 300; i++ {
			args = append(args, "member:"+strconv.Itoa(i))
		}
		requireReply(t, h, ":300", args...)
		requireReply(t, h, ":1", "COPY", "big", "copy")
		requireReply(t, h, ":1", "SADD", "copy", "extra")
		requireReply(t, h, ":301", "SCARD", "copy")
		requireReply(t, h, ":300", "SCARD", "big")
		requireReply(t, h, "+OK", "RENAME", "big", "moved")
		requireReply(t, h, ":0", "EXISTS", "big")
		requireReply(t, h, ":300", "SCARD", "moved")
		requireReply(t, h, ":1", "SISMEMBER", "moved", "member:299")
		requireReply(t, h, "+set", "TYPE", "moved")
		requireReply(t, h, ":1", "COPY", "moved", "copy", "DB", "3")
		h.conn.DB = 3
		requireReply(t, h, ":300", "SCARD", "copy")
	})
}
