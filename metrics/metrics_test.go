package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// scrape fetches /metrics over HTTP, as Prometheus would, and parses it.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.NewHTTPServer("").Handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value returns the sample of family name whose labels are exactly labels
// (counter, gauge, or a histogram's sample count), and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

type sample struct {
	name   string
	labels map[string]string
	want   float64
}

func known(name string) bool {
	switch name {
	case "get", "set", "incr", "client|setname":
		return true
	}
	return false
}

func TestScrape(t *testing.T) {
	cmd := func(c string) map[string]string { return map[string]string{"command": c} }
	op := func(c, o string) map[string]string { return map[string]string{"command": c, "operation": o} }
	kind := func(c, o, k string) map[string]string {
		return map[string]string{"command": c, "operation": o, "kind": k}
	}
	ctx := context.Background()
	cond := fmt.Errorf("put: %w", &dynastore.ConditionFailedError{})

	tests := []struct {
		name string
		feed func(m *Metrics)
		want []sample
		// absent are families that must have no series at all.
		absent []string
	}{
		{
			name: "commands by name with errors and latency",
			feed: func(m *Metrics) {
				m.OnCommand("get", time.Millisecond, false)
				m.OnCommand("GET", time.Millisecond, false)
				m.OnCommand("set", time.Millisecond, true)
				m.OnCommand("client|setname", time.Millisecond, false)
			},
			want: []sample{
				{"redamo_commands_total", cmd("get"), 2},
				{"redamo_commands_total", cmd("set"), 1},
				{"redamo_commands_total", cmd("client|setname"), 1},
				{"redamo_command_errors_total", cmd("get"), 0},
				{"redamo_command_errors_total", cmd("set"), 1},
				{"redamo_command_duration_seconds", cmd("get"), 2},
			},
		},
		{
			name: "names outside the table share one series",
			feed: func(m *Metrics) {
				m.OnCommand("nosuch", time.Millisecond, true)
				m.OnCommand("whatever", time.Millisecond, true)
				m.OnCommand("NoSuch", time.Millisecond, true)
			},
			want: []sample{
				{"redamo_commands_total", cmd(UnknownCommand), 3},
				{"redamo_command_errors_total", cmd(UnknownCommand), 3},
			},
		},
		{
			name: "connections",
			feed: func(m *Metrics) {
				m.OnConn(1)
				m.OnConn(1)
				m.OnConn(1)
				m.OnConn(-1)
			},
			want: []sample{
				{"redamo_connected_clients", nil, 2},
				{"redamo_connections_received_total", nil, 3},
			},
		},
		{
			name: "dynamodb requests, retries, capacity",
			feed: func(m *Metrics) {
				m.Observe(ctx, dynastore.Request{Label: "get", Op: dynastore.OpGetItem, Attempts: 1, RCU: 1})
				m.Observe(ctx, dynastore.Request{Label: "get", Op: dynastore.OpGetItem, Attempts: 3, RCU: 0.5})
				m.Observe(ctx, dynastore.Request{Label: "incr", Op: dynastore.OpUpdateItem, Attempts: 1, WCU: 1})
				m.Observe(ctx, dynastore.Request{Op: dynastore.OpScan, Attempts: 1, RCU: 4})
				m.Observe(ctx, dynastore.Request{Label: "sweeper", Op: dynastore.OpQuery, Attempts: 1})
			},
			want: []sample{
				{"redamo_dynamodb_requests_total", op("get", "GetItem"), 2},
				{"redamo_dynamodb_retries_total", op("get", "GetItem"), 2},
				{"redamo_dynamodb_consumed_read_capacity_units_total", op("get", "GetItem"), 1.5},
				{"redamo_dynamodb_requests_total", op("incr", "UpdateItem"), 1},
				{"redamo_dynamodb_consumed_write_capacity_units_total", op("incr", "UpdateItem"), 1},
				{"redamo_dynamodb_requests_total", op(NoCommand, "Scan"), 1},
				{"redamo_dynamodb_consumed_read_capacity_units_total", op(NoCommand, "Scan"), 4},
				{"redamo_dynamodb_requests_total", op("sweeper", "Query"), 1},
				{"redamo_dynamodb_request_duration_seconds", map[string]string{"operation": "GetItem"}, 2},
			},
			absent: []string{"redamo_dynamodb_errors_total"},
		},
		{
			name: "dynamodb errors by kind",
			feed: func(m *Metrics) {
				m.Observe(ctx, dynastore.Request{Label: "set", Op: dynastore.OpPutItem, Attempts: 1, Err: cond})
				m.Observe(ctx, dynastore.Request{Label: "set", Op: dynastore.OpPutItem, Attempts: 1, Err: cond})
				m.Observe(ctx, dynastore.Request{Label: "set", Op: dynastore.OpPutItem, Attempts: 5,
					Err: fmt.Errorf("put: %w", dynastore.ErrThrottled)})
			},
			want: []sample{
				{"redamo_dynamodb_requests_total", op("set", "PutItem"), 3},
				{"redamo_dynamodb_retries_total", op("set", "PutItem"), 4},
				{"redamo_dynamodb_errors_total", kind("set", "PutItem", KindConditionFailed), 2},
				{"redamo_dynamodb_errors_total", kind("set", "PutItem", KindThrottled), 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Options{KnownCommand: known, NoRuntime: true})
			tt.feed(m)
			fams := scrape(t, m)
			for _, s := range tt.want {
				got, ok := value(fams, s.name, s.labels)
				require.True(t, ok, "no sample %s%v", s.name, s.labels)
				require.InDelta(t, s.want, got, 1e-9, "%s%v", s.name, s.labels)
			}
			for _, name := range tt.absent {
				require.Empty(t, fams[name].GetMetric(), name)
			}
		})
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&dynastore.ConditionFailedError{}, KindConditionFailed},
		{fmt.Errorf("x: %w", dynastore.ErrConditionFailed), KindConditionFailed},
		{&dynastore.TxCanceledError{Reasons: []dynastore.TxReason{{Code: dynastore.ReasonNone}, {Code: dynastore.ReasonConflict}}}, KindTxConflict},
		{&dynastore.TxCanceledError{Reasons: []dynastore.TxReason{{Code: dynastore.ReasonConditionalFailed}}}, KindTxCanceled},
		{fmt.Errorf("x: %w", dynastore.ErrTxConflict), KindTxConflict},
		{fmt.Errorf("x: %w", dynastore.ErrThrottled), KindThrottled},
		{fmt.Errorf("x: %w", dynastore.ErrUnavailable), KindUnavailable},
		{fmt.Errorf("x: %w: %w", dynastore.ErrOutcomeUnknown, dynastore.ErrUnavailable), KindOutcomeUnknown},
		{fmt.Errorf("x: %w: %w", dynastore.ErrOutcomeUnknown, dynastore.ErrThrottled), KindOutcomeUnknown},
		{&dynastore.TxCanceledError{Reasons: []dynastore.TxReason{{Code: dynastore.ReasonConflict}, {Code: dynastore.ReasonThrottled}}}, KindThrottled},
		{fmt.Errorf("x: %w", dynastore.ErrItemTooLarge), KindItemTooLarge},
		{fmt.Errorf("x: %w", dynastore.ErrTxTooLarge), KindTxTooLarge},
		{fmt.Errorf("x: %w", dynastore.ErrKeyTooLarge), KindKeyTooLarge},
		{fmt.Errorf("x: %w", dynastore.ErrInvalid), KindInvalid},
		{fmt.Errorf("x: %w", context.Canceled), KindCanceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), KindTimeout},
		{errors.New("boom"), KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			require.Equal(t, tt.want, ErrorKind(tt.err))
		})
	}
}

func TestHTTPServer(t *testing.T) {
	m := New(Options{})
	srv := httptest.NewServer(m.NewHTTPServer("").Handler)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, err = http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The runtime collectors are on by default: RSS and goroutines are what
	// an operator looks at first.
	require.Contains(t, string(body), "\ngo_goroutines ")
	require.Contains(t, string(body), "\nprocess_resident_memory_bytes ")
	require.Contains(t, string(body), "\nredamo_connected_clients 0\n")
}

// BenchmarkOnCommand is the per-command cost resp pays on its hot path.
func BenchmarkOnCommand(b *testing.B) {
	m := New(Options{KnownCommand: known, NoRuntime: true})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.OnCommand("get", 50*time.Microsecond, false)
		}
	})
}

// TestCoordinationCounters: the counters Options.Coordination reports are
// read at every scrape, labelled by family and outcome.
func TestCoordinationCounters(t *testing.T) {
	var granted atomic.Int64
	m := New(Options{NoRuntime: true, Coordination: func(f func(family, outcome string, n int64)) {
		f("lock", "granted", granted.Load())
		f("leader", "notowner", 2)
	}})
	for _, want := range []float64{0, 5} {
		fams := scrape(t, m)
		fam := fams["redamo_coordination_total"]
		require.NotNil(t, fam)
		got := map[string]float64{}
		for _, mt := range fam.GetMetric() {
			got[mt.GetLabel()[0].GetValue()+"/"+mt.GetLabel()[1].GetValue()] = mt.GetCounter().GetValue()
		}
		require.Equal(t, map[string]float64{"lock/granted": want, "leader/notowner": 2}, got)
		granted.Store(5)
	}
}
