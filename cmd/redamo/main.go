// Command redamo is a Redis-protocol server whose data lives in Amazon
// DynamoDB (--store dynamodb) or, by default, in an embedded in-memory store.
//
// Every setting is a flag with a REDAMO_* environment variable (see -help);
// AWS credentials come from the SDK's default chain. SIGINT or SIGTERM stops
// it gracefully: no new connections, commands in flight finish, exit 0.
//
// Given a verb first (redamo get KEY, redamo lock acquire NAME, redamo
// help), it runs that one command instead and exits: the shell CLI
// (cli.go), on the DynamoDB table in-process or on a running redamo.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"github.com/redamo/redamo/pubsub"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/redamo/redamo/bus"
	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/retry"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/metrics"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/resp"
	"github.com/redamo/redamo/scripting"
)

// version is set at build time: -ldflags "-X main.version=...".
var version = "dev"

// shutdownGrace is how long a shutdown waits for commands in flight (a
// blocking command may wait longer; it is then cancelled).
const shutdownGrace = 5 * time.Second

func main() {
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func realMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isCLI(args[0]) {
		return runCLI(args, getenv, stdout, stderr)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "redamo:", err)
		return 2
	}
	if cfg.ShowVersion {
		fmt.Fprintf(stdout, "redamo %s (Redis %s protocol)\n", version, commands.Version)
		return 0
	}
	tuneRuntime(getenv)
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("redamo stopped", "err", err)
		return 1
	}
	return 0
}

// run serves until ctx is done (a signal) or a client sent SHUTDOWN, then
// shuts down gracefully.
func run(ctx context.Context, cfg config, logger *slog.Logger) error {
	a, err := start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	var serveErr error
	select {
	case <-a.ctx.Done():
		logger.Info("shutting down", "grace", shutdownGrace)
	case serveErr = <-a.errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return errors.Join(serveErr, a.shutdown(sctx))
}

// app is one running redamo: the protocol server, its store and, when
// configured, the metrics endpoint.
type app struct {
	log        *slog.Logger
	srv        *commands.Server
	resp       *resp.Server
	ln         net.Listener
	metricsSrv *http.Server
	metricsLn  net.Listener
	closeStore func() error
	// bus links this instance to the others on the table (nil: none).
	bus *bus.Bus
	// errc receives the first serving error (the listeners failing).
	errc chan error
	// ctx is done once a signal came or a client sent SHUTDOWN (stop):
	// both stop the instance the same way.
	ctx  context.Context
	stop context.CancelFunc
}

// start builds the store and servers and starts serving in the background.
func start(ctx context.Context, cfg config, logger *slog.Logger) (a *app, err error) {
	a = &app{log: logger, errc: make(chan error, 2), closeStore: func() error { return nil }}
	ctx, a.stop = context.WithCancel(ctx)
	a.ctx = ctx
	defer func() {
		if err != nil {
			a.stop()
			a.closeAll()
		}
	}()

	stats := dynastore.NewStats()
	table := commands.NewTable()
	scripting.Register(table)
	var m *metrics.Metrics
	observer := dynastore.Observers{stats}
	if cfg.MetricsAddr != "" {
		m = metrics.New(metrics.Options{
			KnownCommand: knownCommand(table),
			// Scrapes begin once the server is built (below).
			Coordination: func(f func(family, outcome string, n int64)) { a.srv.Coord.Each(f) },
		})
		observer = append(observer, m)
	}

	store, err := openStore(ctx, cfg, observer, logger)
	if err != nil {
		return a, err
	}
	if c, ok := store.(io.Closer); ok {
		a.closeStore = c.Close
	}

	cert, err := loadCert(cfg)
	if err != nil {
		return a, err
	}
	ln, err := listen(cfg, cert)
	if err != nil {
		return a, err
	}
	a.ln = ln
	if m != nil {
		if a.metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return a, fmt.Errorf("metrics: listen on %s: %w", cfg.MetricsAddr, err)
		}
		a.metricsSrv = m.NewHTTPServer(cfg.MetricsAddr)
	}

	a.srv = newCommandServer(cfg, store, stats, table, ln.Addr().String())
	a.srv.OnShutdown = a.stop
	startExpiredEvents(ctx, a.srv, store)
	if a.bus, err = startBus(ctx, cfg, store, a.srv.PubSub, a.srv.KeyEvents(), ln.Addr().String(), cert, logger); err != nil {
		return a, err
	}
	if a.bus != nil {
		a.srv.PubSub.SetPeers(a.bus)
		a.srv.KeyEvents().SetPeers(a.bus)
	} else if cfg.Store == storeDynamoDB {
		// An embedded store is new with the process: it holds no settings.
		if err := applyTableSettings(ctx, store, a.srv.KeyEvents()); err != nil && ctx.Err() == nil {
			return a, err
		}
	}
	opts := resp.Options{
		Logf: func(format string, args ...any) { logger.Error(fmt.Sprintf(format, args...)) },
	}
	if m != nil {
		opts.OnCommand, opts.OnConn = m.OnCommand, m.OnConn
	}
	a.resp = resp.New(a.srv, opts)
	// Every instance sweeps dead collection generations; the sweeper is safe
	// to run concurrently everywhere and rate-limits itself. Its requests are
	// counted under the label "sweeper".
	go (&model.Sweeper{Store: store}).Run(ctx)
	// Queue operations tally the table's queue counters in the process
	// (coord/queue_stats.go); this writes them.
	go a.srv.Coord.Queues.RunCounterFlusher(ctx, store)

	go func() {
		if err := a.resp.Serve(ln); err != nil {
			a.errc <- fmt.Errorf("serving %s: %w", ln.Addr(), err)
		}
	}()
	if a.metricsSrv != nil {
		go func() {
			if err := a.metricsSrv.Serve(a.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.errc <- fmt.Errorf("serving metrics on %s: %w", a.metricsLn.Addr(), err)
			}
		}()
	}

	attrs := []any{"version", version, "addr", ln.Addr().String(), "tls", cfg.tls(), "store", cfg.Store}
	if cfg.Store == storeDynamoDB {
		attrs = append(attrs, "table", cfg.Table,
			"region", orDefault(cfg.Region, "(SDK default)"),
			"endpoint", orDefault(cfg.Endpoint, "(AWS)"),
			"dynamodb_client", cfg.DynamoDBClient)
	}
	if cfg.AWSFaithful {
		attrs = append(attrs, "aws_faithful", true)
	}
	if a.metricsLn != nil {
		attrs = append(attrs, "metrics", "http://"+a.metricsLn.Addr().String()+"/metrics")
	}
	logger.Info("redamo ready", attrs...)
	return a, nil
}

// applyTableSettings applies the table's notify-keyspace-events (one
// GetItem) for an instance without a bus, which reads it only at start: a
// CONFIG SET through another process on the table reaches it at its next
// start.
func applyTableSettings(ctx context.Context, store dynastore.Store, ev *events.Dispatcher) error {
	s, err := model.ReadSettings(model.StoreScope(dynastore.WithLabel(ctx, "settings"), store))
	if err != nil {
		return fmt.Errorf("reading the table's settings: %w", err)
	}
	if c, ok := events.ParseFlags(s.KeyspaceEvents); ok {
		ev.ApplyFlags(c)
	}
	return nil
}

// newCommandServer is the state every command of this process shares: the
// server's connections, or the CLI's one command (addr empty).
func newCommandServer(cfg config, store dynastore.Store, stats *dynastore.Stats, table *commands.Table, addr string) *commands.Server {
	srv := &commands.Server{
		Store: model.On(store),
		Stats: stats,
		Table: table,
		// This process's pub/sub. The bus to the other instances on the
		// table plugs in with srv.PubSub.SetPeers(bus) before serving; the
		// bus answers the others' requests through srv.PubSub (pubsub.Local).
		PubSub: pubsub.NewHub(),
		Config: commands.Config{
			Addr:            addr,
			RequirePass:     cfg.RequirePass,
			StoreName:       cfg.Store,
			Region:          cfg.Region,
			Endpoint:        cfg.Endpoint,
			ProtoMaxBulkLen: cfg.ProtoMaxBulkLen,
			BlockingPoll:    cfg.BlockingPoll,
			Unprotected:     !bool(cfg.ProtectedMode),
			RedamoVersion:   version,
		},
	}
	if cfg.Store == storeDynamoDB {
		srv.Config.TableName = cfg.Table
	}
	return srv
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// tuneRuntime sets the collector's target and the number of Ps, each unless
// its environment variable is set.
func tuneRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		// Every command allocates short-lived request and reply values, and
		// each collection marks the whole heap, which on the embedded store
		// holds every key: at Go's default of 100 the collector took a large
		// share of the CPU under pipelined load. A higher target collects
		// less often, and serves more requests per second, for a heap that
		// may grow to 5x the live data. On DynamoDB the heap holds no data,
		// so the headroom costs little.
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMAXPROCS") == "" {
		// Each pipeline costs a read and a write system call, and with one
		// P per CPU the scheduler kept parking and waking its threads under
		// many pipelining clients, and the cores sat idle while clients
		// waited. With two per CPU an idle P's thread is already waiting on
		// the network poller: fewer switches, less idle time, and more
		// requests per second for SET, GET and INCR at no more CPU per
		// request. Setting GOMAXPROCS stops the runtime from following
		// later changes of a container's CPU limit; the limit at start
		// counts.
		runtime.GOMAXPROCS(procsPerCPU * startProcs)
	}
}

// procsPerCPU is the number of Ps per CPU when GOMAXPROCS is not set.
const procsPerCPU = 2

// startProcs is the runtime's own GOMAXPROCS at start: the CPUs, a
// container's CPU limit included. Read once, so that calling tuneRuntime
// again does not multiply it again.
var startProcs = runtime.GOMAXPROCS(0)

// gcPercent is the garbage collector's target when GOGC is not set.
const gcPercent = 400

// memoryTTLInterval paces the embedded store's TTL sweep (a slice of items a tick).
const memoryTTLInterval = time.Second

// openStore builds the configured store; its requests go to observer.
func openStore(ctx context.Context, cfg config, observer dynastore.Observer, logger *slog.Logger) (dynastore.Store, error) {
	switch cfg.Store {
	case storeMemory:
		if cfg.AWSFaithful {
			// The process's retry quota, which INFO reports, as the
			// DynamoDB backend draws on it.
			policy := faithful.DefaultPolicy
			policy.Quota = retry.ProcessQuota
			f := faithful.New(faithful.Options{
				Observer: observer,
				Seed:     uint64(time.Now().UnixNano()),
				Faults:   faithful.DefaultFaults,
				Policy:   &policy,
			})
			go f.Memory().RunTTL(ctx, memoryTTLInterval, memoryTTLGrace)
			return f, nil
		}
		o := memory.Options{Observer: observer}
		if cfg.PartitionLimit {
			o.PartitionLimit = &memory.DynamoDBPartitionLimit
		}
		m := memory.New(o)
		// The embedded store drops items whose ttl has passed, as DynamoDB's
		// TTL does, so keys written with an expiry do not pile up forever.
		go m.RunTTL(ctx, memoryTTLInterval, memoryTTLGrace)
		return m, nil
	case storeDynamoDB:
		s, err := dynamo.New(ctx, dynamo.Config{
			Table:       cfg.Table,
			Region:      cfg.Region,
			Profile:     cfg.Profile,
			Endpoint:    cfg.Endpoint,
			CreateTable: cfg.CreateTable,
			SDKOnly:     cfg.DynamoDBClient == clientSDK,
			Observer:    observer,
			Logger:      logger,
			ClockProbes: true,
		})
		switch {
		case errors.Is(err, dynamo.ErrNoTable):
			err = fmt.Errorf("%w; or start with --create-table (REDAMO_CREATE_TABLE)", err)
		case errors.Is(err, dynamo.ErrTTLOff):
			err = fmt.Errorf("%w; or start with --create-table (REDAMO_CREATE_TABLE), which turns TTL on", err)
		}
		if err != nil {
			return nil, fmt.Errorf("opening DynamoDB table %s: %w", cfg.Table, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("unknown store %q", cfg.Store)
	}
}

// listen opens the client listener, wrapped in TLS when a certificate is
// configured.
// loadCert loads the TLS certificate clients (and the bus) are served
// with, nil without TLS.
func loadCert(cfg config) (*tls.Certificate, error) {
	if !cfg.tls() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	return &cert, nil
}

func listen(cfg config, cert *tls.Certificate) (net.Listener, error) {
	var tlsConf *tls.Config
	if cert != nil {
		tlsConf = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	return ln, nil
}

// knownCommand tells the metrics which names are commands ("get",
// "client|list"), so nothing else can create a metrics series.
func knownCommand(t *commands.Table) func(string) bool {
	return func(name string) bool {
		parent, sub, isSub := strings.Cut(name, "|")
		c := t.Lookup(parent)
		if c == nil {
			return false
		}
		return !isSub || c.Subcommand([]byte(sub)) != nil
	}
}

// shutdown stops accepting, lets commands in flight finish (until ctx
// ends), then closes the metrics endpoint and the store.
func (a *app) shutdown(ctx context.Context) error {
	a.stop()
	var errs []error
	if a.resp != nil {
		if err := a.resp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping the server: %w", err))
		}
	}
	if a.bus != nil {
		// Clients are gone: nobody here receives messages any more.
		if err := a.bus.Close(); err != nil {
			errs = append(errs, fmt.Errorf("leaving the bus: %w", err))
		}
	}
	if a.srv != nil {
		// Commands are over: what they tallied goes to the table.
		if err := a.srv.Coord.Queues.FlushCounters(dynastore.WithLabel(ctx, "queue.counters"), a.srv.Store.Data(), nil); err != nil {
			errs = append(errs, err)
		}
	}
	if a.metricsSrv != nil {
		if err := a.metricsSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping the metrics server: %w", err))
		}
	}
	if err := a.closeStore(); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	return errors.Join(errs...)
}

// closeAll releases what a failed start had opened.
func (a *app) closeAll() {
	if a.ln != nil {
		a.ln.Close()
	}
	if a.metricsLn != nil {
		a.metricsLn.Close()
	}
	if a.bus != nil {
		_ = a.bus.Close()
	}
	_ = a.closeStore()
}
