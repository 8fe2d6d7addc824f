package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/scripting"
)

// backend runs one redamo command: in-process on the table, or on a
// running redamo. An error is a failure to get any reply (exit 3); error
// replies come back as replies.
type backend interface {
	Do(ctx context.Context, args [][]byte) (commands.Reply, error)
	// Where names where commands run, for --verbose.
	Where() string
	// Requests sums up the store requests so far, for --verbose ("" when
	// not known).
	Requests() string
	Close() error
}

// open connects to --server, or opens the table.
func (c *cli) open(ctx context.Context) (backend, error) {
	if c.g.server != "" {
		return dialServer(c.g.server)
	}
	return c.openTable(ctx)
}

// ---- in-process, on the table ----------------------------------------------------------

// local runs commands in this process through the server's own command
// table, handlers and model (commands.Server.Do), on the DynamoDB table.
type local struct {
	srv   *commands.Server
	store dynastore.Store
	stats *dynastore.Stats
	where string
	close func() error
}

// openTable opens the DynamoDB table as the server does (openStore), and
// builds the same command state over it.
func (c *cli) openTable(ctx context.Context) (backend, error) {
	cfg := config{
		Store:          storeDynamoDB,
		Table:          c.g.table,
		Region:         c.g.region,
		Profile:        c.g.profile,
		Endpoint:       c.g.endpoint,
		CreateTable:    c.g.createTable,
		DynamoDBClient: clientDirect,
		BlockingPoll:   commands.DefaultBlockingPoll,
	}
	level := slog.LevelWarn
	if c.g.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(c.errOut, &slog.HandlerOptions{Level: level}))
	stats := dynastore.NewStats()
	store, err := openStore(ctx, cfg, stats, logger)
	if err != nil {
		return nil, c.tableError(err)
	}
	table := commands.NewTable()
	scripting.Register(table)
	l := &local{
		srv:   newCommandServer(cfg, store, stats, table, ""),
		store: store,
		stats: stats,
		where: fmt.Sprintf("table %s, %s", c.g.table, c.where()),
		close: func() error { return nil },
	}
	closeStore := l.close
	if cl, ok := store.(io.Closer); ok {
		closeStore = cl.Close
	}
	// A queue verb's counters are tallied in the process (QUEUE.STATS):
	// written before it ends.
	l.close = func() error {
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := l.srv.Coord.Queues.FlushCounters(dynastore.WithLabel(fctx, "queue.counters"), store, nil)
		return errors.Join(err, closeStore())
	}
	return l, nil
}

// tableError is the CLI's error for a failure to open the table: what is
// wrong and what to set.
func (c *cli) tableError(err error) error {
	switch {
	case errors.Is(err, dynamo.ErrTableName):
		return usageErr("--table %q: not a DynamoDB table name (3-255 characters of a-z, A-Z, 0-9, _ . -)", c.g.table)
	case errors.Is(err, dynamo.ErrNoRegion) && c.g.endpoint != "":
		return &cliError{code: exitStore, msg: fmt.Sprintf("no AWS region configured for --endpoint %s, which is not on this machine "+
			"(a VPC endpoint or proxy reaches a region of AWS): set --region (REDAMO_REGION or AWS_REGION)", c.g.endpoint)}
	case errors.Is(err, dynamo.ErrNoRegion):
		return &cliError{code: exitStore, msg: "no AWS region configured, so there is no DynamoDB to reach: " +
			"set --region (REDAMO_REGION or AWS_REGION) and AWS credentials, --endpoint (REDAMO_ENDPOINT) for DynamoDB Local, " +
			"or --server (REDAMO_SERVER) to use a running redamo"}
	case errors.Is(err, dynamo.ErrNoCredentials):
		return &cliError{code: exitStore, msg: "no AWS credentials found for " + c.where() + ": " +
			"set AWS_PROFILE (or --profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where a role provides them; " +
			"or use a running redamo with --server (REDAMO_SERVER)"}
	case errors.Is(err, dynamo.ErrNoTable):
		return &cliError{code: exitStore, msg: c.noTableMessage()}
	case errors.Is(err, dynamo.ErrTableSchema), errors.Is(err, dynamo.ErrTableTTL), errors.Is(err, dynamo.ErrTTLOff):
		return &cliError{code: exitStore, msg: err.Error()}
	}
	return &cliError{code: exitStore, msg: c.storeMessage(err.Error())}
}

func (l *local) Do(ctx context.Context, args [][]byte) (commands.Reply, error) {
	return l.srv.Do(ctx, args...), nil
}

func (l *local) Where() string { return l.where }

func (l *local) Requests() string {
	var n int64
	ops := map[string]int64{}
	for k, row := range l.stats.Snapshot() {
		n += row.Requests
		ops[k.Op] += row.Requests
	}
	names := make([]string, 0, len(ops))
	for op, k := range ops {
		names = append(names, fmt.Sprintf("%s %d", op, k))
	}
	sort.Strings(names)
	return fmt.Sprintf("; DynamoDB requests so far: %d (%s)", n, strings.Join(names, ", "))
}

func (l *local) Close() error { return l.close() }

// ---- over RESP3, on a running redamo --------------------------------------------------

// remote sends commands to a running redamo over RESP3, so that maps come
// back as maps.
type remote struct {
	rdb  *redis.Client
	opts *redis.Options
	addr string
}

// Dialing is retried a few times (nothing was sent yet); a command is
// sent once: after a lost reply it may have taken effect.
const (
	dialAttempts = 3
	dialTimeout  = 2 * time.Second
	dialPause    = 200 * time.Millisecond
)

func dialServer(server string) (backend, error) {
	opts := &redis.Options{Addr: server}
	if strings.Contains(server, "://") {
		var err error
		if opts, err = redis.ParseURL(server); err != nil {
			return nil, usageErr("--server %q: %v (host:port, or redis://[:password@]host:port[/db])", server, err)
		}
	} else if _, _, err := net.SplitHostPort(server); err != nil {
		return nil, usageErr("--server %q: not host:port (e.g. 127.0.0.1:6379)", server)
	}
	opts.Protocol = 3
	opts.DisableIdentity = true
	opts.MaxRetries = -1
	opts.PoolSize = 1
	// Calls carry their own deadlines: a blocking command may wait long.
	opts.ReadTimeout, opts.WriteTimeout = -1, -1
	opts.ContextTimeoutEnabled = true
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: dialTimeout}
		var err error
		for i := 0; i < dialAttempts; i++ {
			var conn net.Conn
			if conn, err = d.DialContext(ctx, network, addr); err == nil {
				return conn, nil
			}
			if i+1 < dialAttempts {
				select {
				case <-time.After(dialPause << i):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return nil, err
	}
	return &remote{rdb: redis.NewClient(opts), opts: opts, addr: opts.Addr}, nil
}

func (r *remote) Do(ctx context.Context, args [][]byte) (commands.Reply, error) {
	a := make([]any, len(args))
	for i, b := range args {
		a[i] = b
	}
	type out struct {
		v   any
		err error
	}
	done := make(chan out, 1)
	go func() {
		v, err := r.rdb.Do(ctx, a...).Result()
		done <- out{v, err}
	}()
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		// go-redis only watches deadlines: a cancelled wait returns here,
		// and the server sees the connection close when the process ends.
		return commands.Reply{}, ctx.Err()
	}
	var re redis.Error
	switch {
	case errors.Is(o.err, redis.Nil):
		return commands.Reply{Kind: commands.ReplyNil}, nil
	case errors.As(o.err, &re):
		return commands.Reply{Kind: commands.ReplyError, Str: re.Error()}, nil
	case o.err != nil:
		return commands.Reply{}, r.lost(o.err)
	}
	return fromGoRedis(o.v), nil
}

// fromGoRedis converts a go-redis RESP3 value to a reply tree. RESP3 keeps
// no order in a map's go-redis form, so its keys are sorted.
func fromGoRedis(v any) commands.Reply {
	switch v := v.(type) {
	case nil:
		return commands.Reply{Kind: commands.ReplyNil}
	case string:
		return commands.Reply{Kind: commands.ReplyBulk, Str: v}
	case int64:
		return commands.Reply{Kind: commands.ReplyInt, Int: v}
	case float64:
		return commands.Reply{Kind: commands.ReplyDouble, Float: v}
	case bool:
		r := commands.Reply{Kind: commands.ReplyBool}
		if v {
			r.Int = 1
		}
		return r
	case *big.Int:
		return commands.Reply{Kind: commands.ReplyBigNumber, Str: v.String()}
	case redis.Error:
		return commands.Reply{Kind: commands.ReplyError, Str: v.Error()}
	case []any:
		r := commands.Reply{Kind: commands.ReplyArray, Elems: make([]commands.Reply, len(v))}
		for i, e := range v {
			r.Elems[i] = fromGoRedis(e)
		}
		return r
	case map[any]any:
		type kv struct {
			k, v commands.Reply
			s    string
		}
		kvs := make([]kv, 0, len(v))
		for k, e := range v {
			kr := fromGoRedis(k)
			kvs = append(kvs, kv{kr, fromGoRedis(e), replyString(kr)})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].s < kvs[j].s })
		r := commands.Reply{Kind: commands.ReplyMap, Elems: make([]commands.Reply, 0, 2*len(kvs))}
		for _, e := range kvs {
			r.Elems = append(r.Elems, e.k, e.v)
		}
		return r
	case error:
		return commands.Reply{Kind: commands.ReplyError, Str: v.Error()}
	}
	return commands.Reply{Kind: commands.ReplyBulk, Str: fmt.Sprint(v)}
}

// lost is the error for a server that could not be reached or dropped the
// connection.
func (r *remote) lost(err error) error {
	return &cliError{code: exitStore, msg: fmt.Sprintf(
		"cannot reach redamo at %s (--server, REDAMO_SERVER): %v; start it (make run), or point --server at a running one, or leave it unset to use the DynamoDB table directly",
		r.addr, err)}
}

// withDB is a connection to the same server in database db.
func (r *remote) withDB(db int) *remote {
	opts := *r.opts
	opts.DB = db
	return &remote{rdb: redis.NewClient(&opts), opts: &opts, addr: r.addr}
}

func (r *remote) Where() string    { return "redamo at " + r.addr }
func (r *remote) Requests() string { return "" }
func (r *remote) Close() error     { return r.rdb.Close() }
