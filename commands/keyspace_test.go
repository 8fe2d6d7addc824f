package commands

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

func TestString2ll(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123", 123, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {"01", 0, false},
		{"-0", 0, false}, {"00", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1.0", 0, false}, {"1e3", 0, false}, {"0x10", 0, false}, {"1\x00", 0, false},
		{"123456789012345678901", 0, false},
	} {
		got, ok := model.String2ll([]byte(tc.in))
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
		if ok {
			require.Equal(t, tc.in, strconv.FormatInt(got, 10), "only canonical forms parse")
		}
	}
}

func TestArgIs(t *testing.T) {
	for _, tc := range []struct {
		arg, opt string
		want     bool
	}{
		{"nx", "nx", true}, {"NX", "nx", true}, {"Nx", "nx", true}, {"nx\x00junk", "nx", true},
		{"n", "nx", false}, {"nxx", "nx", false}, {"", "nx", false}, {"\x00nx", "nx", false},
		{"KEEPTTL", "keepttl", true}, {"ſet", "set", false},
	} {
		require.Equal(t, tc.want, argIs([]byte(tc.arg), tc.opt), "%q vs %q", tc.arg, tc.opt)
	}
}

func TestEncodeValueAndEncoding(t *testing.T) {
	long := "012345678901234567890123456789012345678901234" // 45 bytes
	for _, tc := range []struct {
		val    string
		origin model.StrOrigin
		kind   dynastore.Kind
		enc    string
	}{
		{"123", model.OriginArg, dynastore.KindN, model.EncInt},
		{"-9223372036854775808", model.OriginArg, dynastore.KindN, model.EncInt},
		{"9223372036854775808", model.OriginArg, dynastore.KindB, model.EncEmbstr},
		{"007", model.OriginArg, dynastore.KindB, model.EncEmbstr},
		{"", model.OriginArg, dynastore.KindB, model.EncEmbstr},
		{"hello", model.OriginArg, dynastore.KindB, model.EncEmbstr},
		{long[:44], model.OriginArg, dynastore.KindB, model.EncEmbstr},
		{long, model.OriginArg, dynastore.KindB, model.EncRaw},
		{"3", model.OriginFloat, dynastore.KindN, model.EncEmbstr},
		{"3.5", model.OriginFloat, dynastore.KindB, model.EncEmbstr},
		{"12", model.OriginEdited, dynastore.KindN, model.EncRaw},
		{"hi", model.OriginEdited, dynastore.KindB, model.EncRaw},
		{long, model.OriginEdited, dynastore.KindB, model.EncRaw},
	} {
		it := model.StringItem(0, []byte("k"), []byte(tc.val), tc.origin, 0)
		require.Equal(t, tc.kind, it.Get(model.AttrValue).Kind(), "%q", tc.val)
		require.Equal(t, tc.enc, model.StringEncoding(it), "%q", tc.val)
		got, err := model.DecodeValue(it.Get(model.AttrValue))
		require.NoError(t, err)
		require.Equal(t, tc.val, string(got))
	}
	// Chunked values: one chunk is APPEND to a missing key, encoded like SET.
	one := dynastore.Item{{Name: model.AttrValue, Value: dynastore.L{dynastore.B("12")}}}
	require.Equal(t, model.EncInt, model.StringEncoding(one))
	two := dynastore.Item{{Name: model.AttrValue, Value: dynastore.L{dynastore.B("1"), dynastore.B("2")}}}
	require.Equal(t, model.EncRaw, model.StringEncoding(two))
	v, err := model.DecodeValue(two.Get(model.AttrValue))
	require.NoError(t, err)
	require.Equal(t, "12", string(v))
	require.EqualValues(t, 2, model.ValueLen(two.Get(model.AttrValue)))
}

func TestDecodeKeyExpiry(t *testing.T) {
	it := model.StringItem(3, []byte("k"), []byte("v"), model.OriginArg, 1000)
	ks, err := model.DecodeKey(it, 999)
	require.NoError(t, err)
	require.True(t, ks.Live)
	require.True(t, ks.HasExpiry)
	require.EqualValues(t, 1000, ks.Expiry)
	ks, err = model.DecodeKey(it, 1000)
	require.NoError(t, err)
	require.False(t, ks.Live, "an item expires at its deadline")
	require.NotNil(t, ks.Raw, "the raw item is kept for guards")
	db, key, ok := model.RedisKeyOf(it.Get(dynastore.AttrPK).(dynastore.B))
	require.True(t, ok)
	require.Equal(t, 3, db)
	require.Equal(t, "k", string(key))
	require.Equal(t, dynastore.N("2"), it.Get(dynastore.AttrTTL), "GC seconds are never early")
}

// ---- the store-backed harness ----------------------------------------------------------

// backend is one store to run a behaviour test on, with its request counters.
type backend struct {
	name  string
	store dynastore.Store
	stats *dynastore.Stats
	mem   *memory.Store // nil for DynamoDB
}

// backends returns a memory store, and a fresh DynamoDB Local table when
// REDAMO_TEST_DYNAMODB_ENDPOINT is set (required with REDAMO_TEST_REQUIRE_DYNAMODB=1).
func backends(t *testing.T) []backend {
	st := dynastore.NewStats()
	mem := memory.New(memory.Options{Observer: st})
	out := []backend{{name: "memory", store: mem, stats: st, mem: mem}}
	if os.Getenv(dynamotest.EnvEndpoint) != "" || os.Getenv(dynamotest.EnvRequire) == "1" {
		st := dynastore.NewStats()
		out = append(out, backend{name: "dynamodb", store: dynamotest.NewStore(t, dynamo.Config{Observer: st}), stats: st})
	}
	return out
}

// forBackends runs body on each backend with a fresh harness.
func forBackends(t *testing.T, body func(t *testing.T, b backend, h *harness)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			body(t, b, newHarness(b.store))
		})
	}
}

// requireReply runs a command and checks its rendered reply.
func requireReply(t *testing.T, h *harness, want string, args ...string) {
	t.Helper()
	require.Equal(t, want, renderBytes(t, h.doS(args...), false), "%q", args)
}

// opsOf returns the requests made under label, by operation.
func opsOf(st *dynastore.Stats, label string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range st.Snapshot() {
		if k.Label == label {
			out[k.Op] = v.Requests
		}
	}
	return out
}

func TestReadKeyOfImpossibleKey(t *testing.T) {
	st := dynastore.NewStats()
	h := newHarness(memory.New(memory.Options{Observer: st}))
	c := &Ctx{Context: context.Background(), Target: h.srv.Store, Conn: h.conn, Srv: h.srv}
	ks, err := readKey(c, make([]byte, model.MaxKeyLen+1))
	require.NoError(t, err)
	require.False(t, ks.Live)
	require.Empty(t, st.Snapshot(), "a key that cannot exist is not looked up")
}
