package dynamo

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/redamo/redamo/dynastore"
)

// cannedClient answers every request with a fixed response per operation,
// after reading the request body as a transport would, so that benchmarks
// measure only the client's own CPU.
type cannedClient struct {
	bodies map[string]string // operation -> response body
}

func (c *cannedClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	body, ok := c.bodies[op]
	if !ok {
		body = wellFormedTable[op]
	}
	return cannedResponse(req, body), nil
}

// The shapes of the hot commands' requests and of DynamoDB's answers: GET's
// GetItem, SET's conditional PutItem, INCR's guarded UpdateItem ADD.
const (
	cannedCapacity = `"ConsumedCapacity":{"TableName":"bench","CapacityUnits":1.0}`
	cannedGet      = `{"Item":{"pk":{"B":"AGtleTowMDAwMDA="},"sk":{"B":"AA=="},"t":{"S":"string"},"v":{"B":"MDEyMzQ1Njc4OWFiY2RlZg=="},"ver":{"B":"AQIDBAUGBwg="}},` + cannedCapacity + `}`
	cannedPut      = `{` + cannedCapacity + `}`
	cannedUpdate   = `{"Attributes":{"t":{"S":"string"},"v":{"N":"42"},"ver":{"B":"AQIDBAUGBwg="}},` + cannedCapacity + `}`
)

// benchBatchKeys are an MGET of ten keys; cannedBatchGet answers it with
// every item, as GET's answer has them.
var (
	benchBatchKeys = func() []dynastore.Key {
		keys := make([]dynastore.Key, 10)
		for i := range keys {
			keys[i] = dynastore.Key{PK: fmt.Appendf(nil, "\x00key:%06d", i), SK: []byte{0}}
		}
		return keys
	}()
	cannedBatchGet = func() string {
		b := []byte(`{"Responses":{"bench":[`)
		for i, k := range benchBatchKeys {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"pk":{"B":"%s"},"sk":{"B":"AA=="},"t":{"S":"string"},"v":{"B":"MDEyMzQ1Njc4OWFiY2RlZg=="},"ver":{"B":"AQIDBAUGBwg="}}`,
				base64.StdEncoding.EncodeToString(k.PK))
		}
		return string(append(b, `]},"UnprocessedKeys":{},"ConsumedCapacity":[{"TableName":"bench","CapacityUnits":5.0}]}`...))
	}()
)

func benchStore(b *testing.B, sdkOnly bool) *Store {
	b.Helper()
	s, err := New(context.Background(), Config{
		SDKOnly:  sdkOnly,
		Table:    "bench",
		Endpoint: "http://127.0.0.1:1",
		Logger:   slog.New(slog.DiscardHandler),
		HTTPClient: &cannedClient{bodies: map[string]string{
			"GetItem": cannedGet, "PutItem": cannedPut, "UpdateItem": cannedUpdate, "BatchGetItem": cannedBatchGet,
		}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if !sdkOnly && s.wire == nil {
		b.Fatal("no direct path")
	}
	return s
}

// benchRequests are the benchmarked calls, by name.
var benchRequests = []struct {
	name string
	call func(ctx context.Context, s *Store) error
}{
	{"get", func(ctx context.Context, s *Store) error {
		_, err := s.Get(ctx, dynastore.Key{PK: []byte("\x00key:000000"), SK: []byte{0}})
		return err
	}},
	{"put", func(ctx context.Context, s *Store) error {
		_, err := s.Put(ctx, dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B("\x00key:000000")}, {Name: dynastore.AttrSK, Value: dynastore.B{0}},
			{Name: "t", Value: dynastore.S("string")}, {Name: "v", Value: dynastore.B("0123456789abcdef")}, {Name: "ver", Value: dynastore.B("\x01\x02\x03\x04\x05\x06\x07\x08")},
		}, dynastore.WriteOptions{
			Cond:         dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.Compare{Attr: "x", Op: dynastore.OpLE, Val: dynastore.N("1700000000000")}},
			OldOnFailure: true,
		})
		return err
	}},
	{"update", func(ctx context.Context, s *Store) error {
		_, err := s.Update(ctx, dynastore.Key{PK: []byte("\x00key:000000"), SK: []byte{0}}, dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: "t", Val: dynastore.S("string")},
				{Attr: "ver", Val: dynastore.B("\x01\x02\x03\x04\x05\x06\x07\x08")},
			},
			Add:    []dynastore.AttrValue{{Attr: "v", Val: dynastore.N("1")}},
			Remove: []string{"e"},
		}, dynastore.WriteOptions{
			Cond: dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{
				dynastore.Or{dynastore.NotExists{Attr: "x"}, dynastore.Compare{Attr: "x", Op: dynastore.OpGT, Val: dynastore.N("1700000000000")}},
				dynastore.Compare{Attr: "v", Op: dynastore.OpLE, Val: dynastore.N("9223372036854775806")},
			}},
			Return:       dynastore.ReturnUpdatedNew,
			OldOnFailure: true,
		})
		return err
	}},
	{"batch-get", func(ctx context.Context, s *Store) error {
		items, err := s.BatchGet(ctx, benchBatchKeys)
		if err == nil && items[len(items)-1] == nil {
			err = fmt.Errorf("batch-get: item %d missing", len(items)-1)
		}
		return err
	}},
}

// BenchmarkRequest measures the client CPU of one request on each path
// (go test -run '^$' -bench Request -cpu 1 -benchmem).
func BenchmarkRequest(b *testing.B) {
	ctx := context.Background()
	for _, path := range []string{"sdk", "direct"} {
		for _, r := range benchRequests {
			b.Run(path+"/"+r.name, func(b *testing.B) {
				s := benchStore(b, path == "sdk")
				b.ReportAllocs()
				for b.Loop() {
					if err := r.call(ctx, s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
