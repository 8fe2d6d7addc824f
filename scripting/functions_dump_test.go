package scripting_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/scripting"
)

// The compat cases (compat/testdata/functions.txt) hold DUMP and RESTORE
// against redis-server byte for byte; these tests cover what they cannot
// say: a DUMP fed back to RESTORE, the payload's order, and the writes.

func libCode(name, fn, ret string) string {
	return fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function(keys, args) return '%s' end)", name, fn, ret)
}

// dump returns FUNCTION DUMP's payload.
func dump(t *testing.T, h *harness) []byte {
	t.Helper()
	v := h.do("FUNCTION", "DUMP")
	require.Equal(t, byte('$'), v.kind, "FUNCTION DUMP: %+v", v)
	return []byte(v.str)
}

// payloadCodes reads a payload's libraries.
func payloadCodes(t *testing.T, p []byte) []string {
	t.Helper()
	_, ok := rdb.CheckTrailer(p)
	require.True(t, ok, "payload %q", p)
	r := rdb.NewReader(p[:len(p)-10])
	var codes []string
	for r.Len() > 0 {
		op, err := r.ReadByte()
		require.NoError(t, err)
		require.Equal(t, byte(rdb.OpFunction2), op)
		code, err := r.ReadString()
		require.NoError(t, err)
		codes = append(codes, string(code))
	}
	return codes
}

func TestFunctionDumpRestoreRoundTrip(t *testing.T) {
	forBackends(t, func(t *testing.T, b testserver.Backend, h *harness) {
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		requireReply(t, h, "+OK", "FUNCTION", "RESTORE", string(dump(t, h)))
		requireReply(t, h, "[]", "FUNCTION", "LIST")

		// A long library goes compressed, a short one raw; both in
		// name order whatever the order of loading.
		long := "#!lua name=b\n"
		for i := range 20 {
			long += fmt.Sprintf("redis.register_function('f%d', function(keys, args) return redis.call('GET', keys[1]) end)\n", i)
		}
		requireReply(t, h, `"b"`, "FUNCTION", "LOAD", long)
		requireReply(t, h, `"a"`, "FUNCTION", "LOAD", libCode("a", "g", "from a"))
		p := dump(t, h)
		require.Equal(t, []string{libCode("a", "g", "from a"), long}, payloadCodes(t, p))
		require.Less(t, len(p), len(long)/2, "the long library is compressed")

		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		requireReply(t, h, "+OK", "FUNCTION", "RESTORE", string(p))
		requireReply(t, h, `"from a"`, "FCALL", "g", "0")
		requireReply(t, h, "nil", "FCALL", "f19", "1", "k")
		require.Equal(t, p, dump(t, h))
	})
}

func TestFunctionRestorePolicies(t *testing.T) {
	forBackends(t, func(t *testing.T, b testserver.Backend, h *harness) {
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		requireReply(t, h, `"a"`, "FUNCTION", "LOAD", libCode("a", "f", "new a"))
		requireReply(t, h, `"c"`, "FUNCTION", "LOAD", libCode("c", "h", "new c"))
		payload := string(dump(t, h))
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		requireReply(t, h, `"a"`, "FUNCTION", "LOAD", libCode("a", "f", "old a"))
		requireReply(t, h, `"b"`, "FUNCTION", "LOAD", libCode("b", "g", "old b"))

		// APPEND fails on a; REPLACE swaps a; neither touches b.
		requireReply(t, h, "-ERR Library a already exists", "FUNCTION", "RESTORE", payload)
		requireReply(t, h, "-ERR Library a already exists", "FUNCTION", "RESTORE", payload, "append")
		requireReply(t, h, "-"+scripting.MsgFunctionNotFound, "FCALL", "h", "0")
		requireReply(t, h, "+OK", "FUNCTION", "RESTORE", payload, "Replace")
		requireReply(t, h, `"new a"`, "FCALL", "f", "0")
		requireReply(t, h, `"old b"`, "FCALL", "g", "0")
		requireReply(t, h, `"new c"`, "FCALL", "h", "0")

		// A function of another library refuses the payload even with
		// REPLACE; FLUSH drops that library first.
		requireReply(t, h, "+OK", "FUNCTION", "DELETE", "c")
		requireReply(t, h, "+OK", "FUNCTION", "DELETE", "b")
		requireReply(t, h, `"b"`, "FUNCTION", "LOAD", libCode("b", "H", "old b"))
		requireReply(t, h, "-ERR Function h already exists", "FUNCTION", "RESTORE", payload, "REPLACE")
		requireReply(t, h, "+OK", "FUNCTION", "RESTORE", payload, "FLUSH")
		requireReply(t, h, `"new c"`, "FCALL", "h", "0")
		require.Equal(t, []byte(payload), dump(t, h))
	})
}

// TestFunctionRestoreWrites: a RESTORE is one conditional write of the
// libraries item, none when it is refused, and a failed write changes
// nothing.
func TestFunctionRestoreWrites(t *testing.T) {
	forBackends(t, func(t *testing.T, b testserver.Backend, h *harness) {
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		requireReply(t, h, `"a"`, "FUNCTION", "LOAD", libCode("a", "f", "a"))
		requireReply(t, h, `"b"`, "FUNCTION", "LOAD", libCode("b", "g", "b"))
		payload := string(dump(t, h))
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")

		before := testserver.RequestsSince(nil, b.Stats.Snapshot(), "function|restore")
		requireReply(t, h, "+OK", "FUNCTION", "RESTORE", payload)
		after := testserver.RequestsSince(nil, b.Stats.Snapshot(), "function|restore")
		require.Equal(t, int64(1), after[dynastore.OpPutItem]-before[dynastore.OpPutItem])
		requireReply(t, h, "-ERR Library a already exists", "FUNCTION", "RESTORE", payload)
		require.Equal(t, after[dynastore.OpPutItem], testserver.RequestsSince(nil, b.Stats.Snapshot(), "function|restore")[dynastore.OpPutItem])

		if mem, ok := b.Store.(*memory.Store); ok {
			requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
			mem.FailNext(dynastore.OpPutItem, fmt.Errorf("injected: %w", dynastore.ErrUnavailable))
			requireReply(t, h, "-"+commands.MsgUnavailable, "FUNCTION", "RESTORE", payload)
			requireReply(t, h, "[]", "FUNCTION", "LIST")
		}
	})
}

// TestFunctionRestoreTimeout: a payload's library whose code does not
// return is stopped as FUNCTION LOAD stops it (Redis restores without a
// limit and hangs), and nothing is restored.
func TestFunctionRestoreTimeout(t *testing.T) {
	forBackends(t, func(t *testing.T, b testserver.Backend, h *harness) {
		requireReply(t, h, "+OK", "FUNCTION", "FLUSH")
		var p []byte
		for _, code := range []string{libCode("a", "fa", "1"), "#!lua name=b\nwhile 1 do end"} {
			p = rdb.AppendString(append(p, rdb.OpFunction2), []byte(code))
		}
		requireReply(t, h, "-ERR Error registering functions: ERR FUNCTION LOAD timeout", "FUNCTION", "RESTORE", string(rdb.AppendTrailer(p)))
		requireReply(t, h, "[]", "FUNCTION", "LIST")
	})
}
