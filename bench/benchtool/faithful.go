package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faithful"
	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/resp"
	"github.com/redamo/redamo/scripting"
)

// runFaithful drives each command family through several redamo instances
// served in this process on one shared embedded store in its AWS-faithful
// mode (the only way instances share an embedded store), at each client
// count, and prints throughput, latency, error replies and capacity units
// per command, then checks each family's invariant on what was written.
func runFaithful(args []string) error {
	fs := flag.NewFlagSet("faithful", flag.ExitOnError)
	instances := fs.Int("instances", 3, "redamo instances sharing the store")
	clientList := fs.String("clients", "1,16,64", "client counts to measure")
	duration := fs.Duration("duration", 3*time.Second, "time per family and client count")
	familyList := fs.String("families", strings.Join(familyNames(), ","), "families to run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var counts []int
	for _, s := range strings.Split(*clientList, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-clients: %q is not a client count", s)
		}
		counts = append(counts, n)
	}
	var fams []family
	for _, name := range strings.Split(*familyList, ",") {
		i := slices.IndexFunc(families, func(f family) bool { return f.name == name })
		if i < 0 {
			return fmt.Errorf("-families: no family %q (have %s)", name, strings.Join(familyNames(), ","))
		}
		fams = append(fams, families[i])
	}

	stats := dynastore.NewStats()
	store, describe := faithfulStore(stats)
	addrs, stop, err := serveInstances(store, stats, *instances)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("store: %s; %d instances; %s per run\n\n", describe, *instances, *duration)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "family\tclients\tcommand\tops/s\tp50 ms\tp99 ms\terrors/10k\tRCU/op\tWCU/op\t$/M ops\t\n")
	var invariants, errorKinds []string
	for _, f := range fams {
		for _, n := range counts {
			ctx := context.Background()
			run := &familyRun{name: fmt.Sprintf("%s:%d:%d", f.name, n, time.Now().UnixNano()), rec: newRecorder()}
			clients := make([]*redis.Client, n)
			for i := range clients {
				// One connection each, spread over the instances; no
				// client-side retries, so every error reply is counted.
				clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i%len(addrs)], PoolSize: 1,
					MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
			}
			before := stats.Snapshot()
			start := time.Now()
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
					for time.Since(start) < *duration {
						f.step(ctx, c, run, rng)
					}
				}()
			}
			wg.Wait()
			took := time.Since(start)
			units := unitsSince(before, stats.Snapshot())
			verdict := "ok"
			if err := f.check(ctx, clients[0], run); err != nil {
				verdict = "VIOLATED: " + err.Error()
			}
			invariants = append(invariants, fmt.Sprintf("%s, %d clients: %s", f.name, n, verdict))
			for _, cmd := range run.rec.commands() {
				s := run.rec.summary(cmd)
				u := units[cmd]
				perOp := func(x float64) float64 { return x / float64(max(s.count, 1)) }
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.3f\t\n",
					f.name, n, cmd, float64(s.count)/took.Seconds(), ms(s.p50), ms(s.p99),
					10000*float64(s.errors)/float64(max(s.count, 1)), perOp(u.RCU), perOp(u.WCU),
					dollarsPerMillion(perOp(u.RCU), perOp(u.WCU)))
				for kind, k := range s.kinds {
					errorKinds = append(errorKinds, fmt.Sprintf("%s %s, %d clients: %d × %s", f.name, cmd, n, k, kind))
				}
			}
			for _, c := range clients {
				_ = c.Close()
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println("\ninvariants:")
	for _, l := range invariants {
		fmt.Println("  " + l)
	}
	sort.Strings(errorKinds)
	fmt.Println("error replies by kind:")
	if len(errorKinds) == 0 {
		fmt.Println("  none")
	}
	for _, l := range errorKinds {
		fmt.Println("  " + l)
	}
	for _, l := range invariants {
		if strings.Contains(l, "VIOLATED") {
			return errors.New("an invariant was violated")
		}
	}
	return nil
}

// On-demand prices, us-east-1 (DESIGN.md, "Cost is a figure").
const (
	dollarsPerMillionWCU = 0.625
	dollarsPerMillionRCU = 0.125
)

// dollarsPerMillion is what a million operations of rcu and wcu units cost.
func dollarsPerMillion(rcu, wcu float64) float64 {
	return rcu*dollarsPerMillionRCU + wcu*dollarsPerMillionWCU
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// unitsSince sums capacity units per command label between two snapshots.
func unitsSince(before, after map[dynastore.StatKey]dynastore.StatRow) map[string]dynastore.StatRow {
	out := map[string]dynastore.StatRow{}
	for k, a := range after {
		b := before[k]
		r := out[k.Label]
		r.Requests += a.Requests - b.Requests
		r.RCU += a.RCU - b.RCU
		r.WCU += a.WCU - b.WCU
		out[k.Label] = r
	}
	return out
}

// serveInstances serves n redamo instances of store on free loopback
// ports; stop shuts them down.
func serveInstances(store dynastore.Store, stats *dynastore.Stats, n int) (addrs []string, stop func(), err error) {
	var servers []*resp.Server
	var done []chan error
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i, s := range servers {
			_ = s.Shutdown(ctx)
			<-done[i]
		}
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			stop()
			return nil, nil, err
		}
		table := commands.NewTable()
		scripting.Register(table)
		srv := &commands.Server{
			Store:   model.On(store),
			Stats:   stats,
			Table:   table,
			Config:  commands.Config{StoreName: "memory", Addr: ln.Addr().String()},
			Started: time.Now(),
		}
		rs := resp.New(srv, resp.Options{})
		ch := make(chan error, 1)
		go func() { ch <- rs.Serve(ln) }()
		servers, done = append(servers, rs), append(done, ch)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, stop, nil
}

// familyRun is one family's run at one client count: its key prefix and
// what it recorded.
type familyRun struct {
	name string
	rec  *recorder

	mu sync.Mutex
	// Confirmed effects the check compares the store with.
	pushed, acked, incrs int64
}

func (r *familyRun) key(kind string, i int) string { return fmt.Sprintf("%s:%s:%d", r.name, kind, i) }

// do sends one command and records its latency and error under name.
func (r *familyRun) do(ctx context.Context, c *redis.Client, name string, args ...any) (any, error) {
	start := time.Now()
	v, err := c.Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	r.rec.add(name, time.Since(start), err)
	return v, err
}

func (r *familyRun) count(field *int64, n int64) {
	r.mu.Lock()
	*field += n
	r.mu.Unlock()
}

// family is one command family's workload and the invariant it keeps.
type family struct {
	name  string
	step  func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand)
	check func(ctx context.Context, c *redis.Client, r *familyRun) error
}

const (
	hotKeys  = 10 // keys a family's clients share, so that they contend
	accounts = 20
)

var families = []family{
	{name: "strings", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		k := r.key("k", rng.IntN(hotKeys))
		if _, err := r.do(ctx, c, "incr", "INCR", r.key("n", rng.IntN(hotKeys))); err == nil {
			r.count(&r.incrs, 1)
		}
		_, _ = r.do(ctx, c, "set", "SET", k, "v")
		_, _ = r.do(ctx, c, "get", "GET", k)
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		return checkSum(ctx, c, r, "n", hotKeys, r.incrs, r.incrs+r.rec.errCount("incr"))
	}},
	{name: "lists", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		k := r.key("l", rng.IntN(hotKeys))
		if _, err := r.do(ctx, c, "lpush", "LPUSH", k, "x"); err == nil {
			r.count(&r.pushed, 1)
		}
		if v, err := r.do(ctx, c, "rpop", "RPOP", k); err == nil && v != nil {
			r.count(&r.acked, 1)
		}
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		left := int64(0)
		for i := range hotKeys {
			n, err := c.LLen(ctx, r.key("l", i)).Result()
			if err != nil {
				return err
			}
			left += n
		}
		// A push or pop that failed may still have been applied.
		return within("entries left", left, r.pushed-r.acked-r.rec.errCount("rpop"), r.pushed-r.acked+r.rec.errCount("lpush"))
	}},
	{name: "transactions", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		a, b := rng.IntN(accounts), rng.IntN(accounts-1)
		if b >= a {
			b++
		}
		start := time.Now()
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.DecrBy(ctx, r.key("acct", a), 1)
			p.IncrBy(ctx, r.key("acct", b), 1)
			return nil
		})
		r.rec.add("exec", time.Since(start), err)
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		// A transfer applies whole or not at all: the total stays 0.
		return checkSum(ctx, c, r, "acct", accounts, 0, 0)
	}},
	{name: "locks", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		k := r.key("lock", rng.IntN(hotKeys))
		owner := strconv.FormatUint(rng.Uint64(), 36)
		tok, err := r.do(ctx, c, "lock.acquire", "LOCK.ACQUIRE", k, owner, "PX", 10000)
		if err == nil && tok != nil {
			_, _ = r.do(ctx, c, "lock.release", "LOCK.RELEASE", k, owner)
		}
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		// Every lock was released by its owner: none may still be held,
		// but for those whose acquire or release failed.
		held := int64(0)
		for i := range hotKeys {
			v, err := c.Do(ctx, "LOCK.CHECK", r.key("lock", i)).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if v != nil {
				held++
			}
		}
		return within("locks still held", held, 0, r.rec.errCount("lock.acquire")+r.rec.errCount("lock.release"))
	}},
	{name: "queues", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		q := r.key("q", 0)
		if _, err := r.do(ctx, c, "queue.push", "QUEUE.PUSH", q, "job"); err == nil {
			r.count(&r.pushed, 1)
		}
		v, err := r.do(ctx, c, "queue.pop", "QUEUE.POP", q, "VT", 60000)
		msgs, _ := v.([]any)
		if err != nil || len(msgs) == 0 {
			return
		}
		m, _ := msgs[0].([]any)
		if len(m) < 4 {
			return
		}
		if n, err := r.do(ctx, c, "queue.ack", "QUEUE.ACK", q, m[3]); err == nil && n == int64(1) {
			r.count(&r.acked, 1)
		}
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		// Each push confirmed is acked once or still waiting or in flight.
		v, err := c.Do(ctx, "QUEUE.STATS", r.key("q", 0)).Result()
		if err != nil {
			return err
		}
		ready, inflight := statField(v, "ready"), statField(v, "inflight")
		// An ACK whose outcome is unknown may have deleted its message.
		if acks := r.acked + r.rec.errCount("queue.ack"); acks+ready+inflight < r.pushed {
			return fmt.Errorf("%d pushed, %d acked (%d more maybe), %d ready, %d in flight: messages lost",
				r.pushed, r.acked, acks-r.acked, ready, inflight)
		}
		// A receipt deletes its message once: no message is acked twice.
		return within("messages acked", r.acked, 0, r.pushed+r.rec.errCount("queue.push"))
	}},
	{name: "scripts", step: func(ctx context.Context, c *redis.Client, r *familyRun, rng *rand.Rand) {
		// A read-modify-write the script makes atomic.
		const body = "local v = tonumber(redis.call('GET', KEYS[1]) or '0'); redis.call('SET', KEYS[1], v + 1); return v + 1"
		if _, err := r.do(ctx, c, "eval", "EVAL", body, 1, r.key("s", rng.IntN(hotKeys))); err == nil {
			r.count(&r.incrs, 1)
		}
	}, check: func(ctx context.Context, c *redis.Client, r *familyRun) error {
		return checkSum(ctx, c, r, "s", hotKeys, r.incrs, r.incrs+r.rec.errCount("eval"))
	}},
}

func familyNames() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}

// checkSum checks that the sum of n integer keys is within [lo, hi].
func checkSum(ctx context.Context, c *redis.Client, r *familyRun, kind string, n int, lo, hi int64) error {
	sum := int64(0)
	for i := range n {
		v, err := c.Get(ctx, r.key(kind, i)).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		sum += v
	}
	return within("sum", sum, lo, hi)
}

// within checks got against the bounds what was confirmed and what failed
// (and so may or may not have been applied) allow.
func within(what string, got, lo, hi int64) error {
	if got < lo || got > hi {
		return fmt.Errorf("%s %d, want %d..%d", what, got, lo, hi)
	}
	return nil
}

// statField reads one field of QUEUE.STATS's flat reply.
func statField(v any, name string) int64 {
	l, _ := v.([]any)
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == name {
			n, _ := l[i+1].(int64)
			return n
		}
	}
	return 0
}

// recorder keeps latencies and error replies per command.
type recorder struct {
	mu  sync.Mutex
	lat map[string][]time.Duration
	err map[string]map[string]int
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, err: map[string]map[string]int{}}
}

func (r *recorder) add(cmd string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat[cmd] = append(r.lat[cmd], d)
	if err != nil {
		if r.err[cmd] == nil {
			r.err[cmd] = map[string]int{}
		}
		r.err[cmd][errorKind(err)]++
	}
}

// errorKind is an error reply without what varies between replies.
func errorKind(err error) string {
	msg := err.Error()
	if i := strings.IndexAny(msg, ":(0123456789"); i > 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	return msg
}

func (r *recorder) commands() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for c := range r.lat {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// errCount is how many of cmd's replies were errors.
func (r *recorder) errCount(cmd string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.err[cmd] {
		n += k
	}
	return int64(n)
}

type cmdSummary struct {
	count, errors int
	p50, p99      time.Duration
	kinds         map[string]int
}

func (r *recorder) summary(cmd string) cmdSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := slices.Clone(r.lat[cmd])
	slices.Sort(lat)
	s := cmdSummary{count: len(lat), kinds: r.err[cmd]}
	for _, n := range s.kinds {
		s.errors += n
	}
	if len(lat) > 0 {
		s.p50 = lat[len(lat)/2]
		s.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return s
}

// faithfulStore is the store the instances share: AWS's latencies,
// conflicts, partition and table capacity, and its rare faults.
func faithfulStore(stats *dynastore.Stats) (dynastore.Store, string) {
	return faithful.New(faithful.Options{Observer: stats, Seed: 1, Faults: faithful.DefaultFaults}),
		"embedded, AWS-faithful (latency, conflicts, partition and table capacity, rare faults)"
}
