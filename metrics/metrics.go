// Package metrics exposes redamo's Prometheus metrics: per-command counts and
// latencies (fed by resp's OnCommand hook), connected clients (OnConn), and
// every DynamoDB request by command and operation with its retries, errors
// and consumed capacity (a dynastore.Observer), so the cost of each Redis
// command is visible to operators.
//
// Metrics live in their own registry rather than Prometheus's global one, so
// several servers in one test process do not collide.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redamo/redamo/dynastore"
)

const namespace = "redamo"

// Label values used when the real one is not a command redamo knows.
const (
	// UnknownCommand replaces names that are not in the command table, so a
	// client sending random command names cannot create unbounded series.
	UnknownCommand = "unknown"
	// NoCommand labels store requests made outside any command (background
	// work without a dynastore.WithLabel).
	NoCommand = "none"
)

// Error kinds of the redamo_dynamodb_errors_total metric.
const (
	KindConditionFailed = "condition_failed"
	KindTxConflict      = "tx_conflict"
	KindTxCanceled      = "tx_canceled"
	KindThrottled       = "throttled"
	KindUnavailable     = "unavailable"
	KindOutcomeUnknown  = "outcome_unknown"
	KindItemTooLarge    = "item_too_large"
	KindTxTooLarge      = "tx_too_large"
	KindKeyTooLarge     = "key_too_large"
	KindInvalid         = "invalid"
	KindCanceled        = "canceled"
	KindTimeout         = "timeout"
	KindOther           = "other"
)

// Options configure New.
type Options struct {
	// KnownCommand reports whether a command name passed to OnCommand is a
	// real command ("get", "client|list"). Other names are counted as
	// UnknownCommand. Nil accepts every name.
	KnownCommand func(name string) bool
	// NoRuntime leaves out the Go runtime and process collectors (tests that
	// compare whole scrapes).
	NoRuntime bool
	// Coordination, when set, reports the coordination counters (LOCK.*,
	// LEADER.*) at each scrape, as coord.Service.Each does.
	Coordination func(f func(family, outcome string, n int64))
}

// Metrics holds redamo's collectors and the registry they are served from.
// It is safe for concurrent use.
type Metrics struct {
	reg   *prometheus.Registry
	known func(string) bool

	commands     *prometheus.CounterVec
	commandErrs  *prometheus.CounterVec
	commandTime  *prometheus.HistogramVec
	connected    prometheus.Gauge
	connAccepted prometheus.Counter

	ddbRequests *prometheus.CounterVec
	ddbRetries  *prometheus.CounterVec
	ddbErrors   *prometheus.CounterVec
	ddbRCU      *prometheus.CounterVec
	ddbWCU      *prometheus.CounterVec
	ddbTime     *prometheus.HistogramVec

	// byCommand caches each command's children: OnCommand runs once per
	// command, and a sync.Map hit is cheaper than three label lookups.
	byCommand sync.Map // string -> *commandMetrics
}

type commandMetrics struct {
	calls, errs prometheus.Counter
	latency     prometheus.Observer
}

// Latency buckets in seconds: from the embedded store's tens of microseconds
// to DynamoDB calls that retried for seconds.
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

// New returns metrics registered in a fresh registry.
func New(o Options) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		known: o.KnownCommand,
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "commands_total",
			Help: "Commands processed, by command.",
		}, []string{"command"}),
		commandErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "command_errors_total",
			Help: "Commands answered with an error reply, by command.",
		}, []string{"command"}),
		commandTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "command_duration_seconds",
			Help:    "Time to execute a command, by command.",
			Buckets: latencyBuckets,
		}, []string{"command"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "connected_clients",
			Help: "Client connections currently open.",
		}),
		connAccepted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "connections_received_total",
			Help: "Client connections accepted.",
		}),
		ddbRequests: ddbCounter("requests_total",
			"Storage requests (after retries), by command and DynamoDB operation."),
		ddbRetries: ddbCounter("retries_total",
			"Retried storage attempts, by command and DynamoDB operation."),
		ddbErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "dynamodb", Name: "errors_total",
			Help: "Storage requests that ended in an error, by command, DynamoDB operation and kind. " +
				"condition_failed is a normal outcome (e.g. SET NX on an existing key).",
		}, []string{"command", "operation", "kind"}),
		ddbRCU: ddbCounter("consumed_read_capacity_units_total",
			"Read capacity units consumed, by command and DynamoDB operation."),
		ddbWCU: ddbCounter("consumed_write_capacity_units_total",
			"Write capacity units consumed, by command and DynamoDB operation."),
		ddbTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "dynamodb", Name: "request_duration_seconds",
			Help:    "Time of a storage request including its retries, by DynamoDB operation.",
			Buckets: latencyBuckets,
		}, []string{"operation"}),
	}
	m.reg.MustRegister(
		m.commands, m.commandErrs, m.commandTime, m.connected, m.connAccepted,
		m.ddbRequests, m.ddbRetries, m.ddbErrors, m.ddbRCU, m.ddbWCU, m.ddbTime,
	)
	if o.Coordination != nil {
		m.reg.MustRegister(coordCollector(o.Coordination))
	}
	if !o.NoRuntime {
		m.reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	return m
}

// coordCollector reports the coordination counters, read at each scrape.
type coordCollector func(f func(family, outcome string, n int64))

var coordDesc = prometheus.NewDesc(namespace+"_coordination_total",
	"Outcomes of LOCK.*, LEADER.* and QUEUE.* in this process, by family and outcome "+
		"(locks and leaders: granted, renewed, refused, waited, expired, released, extended, lapsed, notowner; "+
		"queues: pushed, delivered, redelivered, acked, nacked, deadlettered, deduplicated).",
	[]string{"family", "outcome"}, nil)

func (c coordCollector) Describe(ch chan<- *prometheus.Desc) { ch <- coordDesc }

func (c coordCollector) Collect(ch chan<- prometheus.Metric) {
	c(func(family, outcome string, n int64) {
		ch <- prometheus.MustNewConstMetric(coordDesc, prometheus.CounterValue, float64(n), family, outcome)
	})
}

// ddbCounter is a DynamoDB counter by command and operation.
func ddbCounter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "dynamodb", Name: name, Help: help,
	}, []string{"command", "operation"})
}

// Registry returns the registry the metrics are registered in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// commandName maps a name to its label value: lower case, and UnknownCommand
// for names the table does not know.
func (m *Metrics) commandName(name string) string {
	name = strings.ToLower(name)
	if m.known != nil && !m.known(name) {
		return UnknownCommand
	}
	return name
}

func (m *Metrics) command(name string) *commandMetrics {
	// ToLower does not allocate for a name already in lower case (the usual).
	name = strings.ToLower(name)
	if cm, ok := m.byCommand.Load(name); ok {
		return cm.(*commandMetrics)
	}
	label := m.commandName(name)
	cm := &commandMetrics{
		calls:   m.commands.WithLabelValues(label),
		errs:    m.commandErrs.WithLabelValues(label),
		latency: m.commandTime.WithLabelValues(label),
	}
	// Only cache known names: unknown ones would grow the map without bound.
	if label != UnknownCommand {
		actual, _ := m.byCommand.LoadOrStore(name, cm)
		cm = actual.(*commandMetrics)
	}
	return cm
}

// OnCommand records one executed command; it has the signature of
// resp.Options.OnCommand.
func (m *Metrics) OnCommand(name string, d time.Duration, failed bool) {
	cm := m.command(name)
	cm.calls.Inc()
	if failed {
		cm.errs.Inc()
	}
	cm.latency.Observe(d.Seconds())
}

// OnConn records connections opening (delta > 0) and closing (delta < 0); it
// has the signature of resp.Options.OnConn.
func (m *Metrics) OnConn(delta int) {
	m.connected.Add(float64(delta))
	if delta > 0 {
		m.connAccepted.Add(float64(delta))
	}
}

// Observe implements dynastore.Observer.
func (m *Metrics) Observe(_ context.Context, r dynastore.Request) {
	// Labels come from code (dynastore.WithLabel: a resolved command name or
	// a background task such as "sweeper"), never from clients, so they are
	// bounded and kept as they are.
	cmd := r.Label
	if cmd == "" {
		cmd = NoCommand
	}
	m.ddbRequests.WithLabelValues(cmd, r.Op).Inc()
	if r.Attempts > 1 {
		m.ddbRetries.WithLabelValues(cmd, r.Op).Add(float64(r.Attempts - 1))
	}
	if r.Err != nil {
		m.ddbErrors.WithLabelValues(cmd, r.Op, ErrorKind(r.Err)).Inc()
	}
	if r.RCU > 0 {
		m.ddbRCU.WithLabelValues(cmd, r.Op).Add(r.RCU)
	}
	if r.WCU > 0 {
		m.ddbWCU.WithLabelValues(cmd, r.Op).Add(r.WCU)
	}
	m.ddbTime.WithLabelValues(r.Op).Observe(r.Duration.Seconds())
}

var _ dynastore.Observer = (*Metrics)(nil)

// ErrorKind classifies a storage error for the errors metric. The order
// matters: a canceled transaction that conflicted is a conflict.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, dynastore.ErrConditionFailed):
		return KindConditionFailed
	case errors.Is(err, dynastore.ErrOutcomeUnknown):
		// Before the kinds it comes with: a write that may have been
		// applied is counted apart from one that certainly was not.
		return KindOutcomeUnknown
	case errors.Is(err, dynastore.ErrThrottled):
		// Before the cancellations: a throttled transaction is no
		// conflict and no failed condition.
		return KindThrottled
	case errors.Is(err, dynastore.ErrTxConflict):
		return KindTxConflict
	case errors.Is(err, dynastore.ErrTxCanceled):
		return KindTxCanceled
	case errors.Is(err, dynastore.ErrUnavailable):
		return KindUnavailable
	case errors.Is(err, dynastore.ErrItemTooLarge):
		return KindItemTooLarge
	case errors.Is(err, dynastore.ErrTxTooLarge):
		return KindTxTooLarge
	case errors.Is(err, dynastore.ErrKeyTooLarge):
		return KindKeyTooLarge
	case errors.Is(err, dynastore.ErrInvalid):
		return KindInvalid
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	default:
		return KindOther
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:          m.reg, // counts its own scrape errors
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// NewHTTPServer returns a server for addr answering /metrics (anything else
// is 404). The caller runs Serve/ListenAndServe and Shutdown.
func (m *Metrics) NewHTTPServer(addr string) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return &http.Server{
		Addr:              addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}
