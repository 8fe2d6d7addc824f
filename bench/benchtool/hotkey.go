package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// runHotKey measures one hot key: every client of a run sends its
// commands to the same key, spread over one or several instances served
// in this process on one shared store, for each workload, store, instance
// count and client count. A store holds one partition per key as DynamoDB
// does, so what one key can serve is capped by one partition's units
// unless an instance makes fewer requests than it serves commands. Per
// command it prints throughput, latency, and the store's requests and
// units per command; a workload of several commands also gets a row per
// cycle (a message pushed, popped and acknowledged; an element pushed and
// popped), whose units are all the run's, whatever label the requests
// carried.
func runHotKey(args []string) error {
	fs := flag.NewFlagSet("hotkey", flag.ExitOnError)
	storeList := fs.String("stores", "limited,faithful", "stores: limited (embedded, DynamoDB's per-partition limit), faithful (AWS-faithful mode)")
	instanceList := fs.String("instances", "1,3", "instance counts")
	clientList := fs.String("clients", "1,16,64,256", "client counts")
	workList := fs.String("workloads", strings.Join(hotWorkloadNames(), ","), "workloads")
	duration := fs.Duration("duration", 2*time.Second, "measured time per cell")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "unmeasured time before each cell, which spends the burst capacity the key's partition saved between cells")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stores := strings.Split(*storeList, ",")
	for _, s := range stores {
		if s != "limited" && s != "faithful" {
			return fmt.Errorf("-stores: no store %q (have limited,faithful)", s)
		}
	}
	instances, err := parseInts(*instanceList)
	if err != nil {
		return fmt.Errorf("-instances: %w", err)
	}
	clients, err := parseInts(*clientList)
	if err != nil {
		return fmt.Errorf("-clients: %w", err)
	}
	var works []hotWorkload
	for _, name := range strings.Split(*workList, ",") {
		i := slices.IndexFunc(hotWorkloads, func(w hotWorkload) bool { return w.name == name })
		if i < 0 {
			return fmt.Errorf("-workloads: no workload %q (have %s)", name, strings.Join(hotWorkloadNames(), ","))
		}
		works = append(works, hotWorkloads[i])
	}

	fmt.Printf("one key per workload; %s measured per cell after %s of warm-up; clients spread over the instances, one connection each\n", *duration, *warmup)
	fmt.Println("limited:  embedded store, each partition limited to DynamoDB's 1,000 write / 3,000 read units per second")
	fmt.Println("faithful: embedded store in its AWS-faithful mode (latency, conflicts, partition and table capacity, rare faults)")
	fmt.Println("ops/s: commands answered without an error; p50/p99: of every reply; err/10k: error replies per 10,000 commands")
	fmt.Println("req, RU, WU: the store's requests, read and write units per command answered without an error")
	fmt.Println("(cycle): an element pushed and popped, a message pushed, popped and acknowledged; per cycle, every request of the run")
	fmt.Println()
	fmt.Printf(hotHeader, "store", "inst", "clients", "command", "ops/s", "p50 ms", "p99 ms", "req/op", "RU/op", "WU/op", "err/10k")
	var errorKinds []string
	for _, st := range stores {
		for _, n := range instances {
			if err := hotKeyStore(st, n, clients, works, *duration, *warmup, &errorKinds); err != nil {
				return err
			}
		}
	}
	fmt.Println("\nerror replies by kind:")
	if len(errorKinds) == 0 {
		fmt.Println("  none")
	}
	for _, l := range errorKinds {
		fmt.Println("  " + l)
	}
	return nil
}

// hotKeyStore runs every workload at every client count on n instances of
// a store of kind st, a fresh one per workload: the faithful mode keeps
// state of the whole table (its peak, the retry quota) that one
// workload's throttling would otherwise leave to the next.
func hotKeyStore(st string, n int, clients []int, works []hotWorkload, d, warmup time.Duration, errorKinds *[]string) error {
	for _, w := range works {
		stats := dynastore.NewStats()
		var store dynastore.Store
		if st == "faithful" {
			store, _ = faithfulStore(stats)
		} else {
			store = memory.New(memory.Options{Observer: stats, PartitionLimit: &memory.DynamoDBPartitionLimit})
		}
		addrs, stop, err := serveInstances(store, stats, n)
		if err != nil {
			return err
		}
		// One key, kept across the client counts.
		key := "hot:" + w.name
		for _, c := range clients {
			cell, err := hotKeyCell(addrs, stats, w, key, c, d, warmup)
			if err != nil {
				stop()
				return fmt.Errorf("%s, %d instances, %s, %d clients: %w", st, n, w.name, c, err)
			}
			cell.print(st, n, c)
			for _, cmd := range cell.rec.commands() {
				for kind, k := range cell.rec.summary(cmd).kinds {
					*errorKinds = append(*errorKinds, fmt.Sprintf("%s, %d instances, %d clients, %s: %d × %s", st, n, c, cmd, k, kind))
				}
			}
		}
		stop()
	}
	return nil
}

// hotCell is what one cell measured.
type hotCell struct {
	rec    *recorder
	took   time.Duration
	units  map[string]dynastore.StatRow
	total  dynastore.StatRow
	cycles int64
	multi  bool // the workload has several commands: a cycle row too
}

// The table's columns: fixed widths, so that rows are printed as each
// cell ends.
const (
	hotHeader = "%-8s %4s %7s %-11s %8s %8s %8s %7s %7s %7s %7s\n"
	hotRow    = "%-8s %4d %7d %-11s %8.0f %8.1f %8.1f %7.2f %7.2f %7.2f %7.0f\n"
	hotCycle  = "%-8s %4d %7d %-11s %8.0f %8s %8s %7.2f %7.2f %7.2f %7s\n"
)

func (c hotCell) print(st string, n, clients int) {
	cmds := c.rec.commands()
	for _, cmd := range cmds {
		s := c.rec.summary(cmd)
		u := c.units[cmd]
		if !c.multi {
			// The only command: every request of the run is its own,
			// whatever label a shared request carried.
			u = c.total
		}
		// Throughput and cost are of the commands answered without an
		// error: a throttled reply comes fast and costs nothing.
		ok := s.count - s.errors
		per := func(x float64) float64 { return x / float64(max(ok, 1)) }
		fmt.Printf(hotRow, st, n, clients, cmd, float64(ok)/c.took.Seconds(), ms(s.p50), ms(s.p99),
			per(float64(u.Requests)), per(u.RCU), per(u.WCU), 10000*float64(s.errors)/float64(max(s.count, 1)))
	}
	if c.multi {
		per := func(x float64) float64 { return x / float64(max(c.cycles, 1)) }
		fmt.Printf(hotCycle, st, n, clients, "(cycle)", float64(c.cycles)/c.took.Seconds(), "", "",
			per(float64(c.total.Requests)), per(c.total.RCU), per(c.total.WCU), "")
	}
}

// hotKeyCell runs w on key from nClients clients for warmup, then for d
// measured.
func hotKeyCell(addrs []string, stats *dynastore.Stats, w hotWorkload, key string, nClients int, d, warmup time.Duration) (hotCell, error) {
	ctx := context.Background()
	cs := make([]*redis.Client, nClients)
	for i := range cs {
		// No client-side retries: every error reply is counted.
		cs[i] = redis.NewClient(&redis.Options{Addr: addrs[i%len(addrs)], PoolSize: 1, MinIdleConns: 1,
			MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	}
	defer func() {
		for _, c := range cs {
			_ = c.Close()
		}
	}()
	if w.setup != nil {
		if err := w.setup(ctx, cs[0], key); err != nil {
			return hotCell{}, fmt.Errorf("setup: %w", err)
		}
	}
	// The warm-up's commands are recorded apart and dropped.
	warm, run := &familyRun{rec: newRecorder()}, &familyRun{rec: newRecorder()}
	var measuring atomic.Bool
	var cycles atomic.Int64
	var fatal error
	var fatalMu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(warmup + d)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(end.UnixNano())))
			for time.Now().Before(end) {
				r := warm
				if measuring.Load() {
					r = run
				}
				done, err := w.step(ctx, c, key, rng, r)
				if err != nil {
					fatalMu.Lock()
					fatal = errors.Join(fatal, err)
					fatalMu.Unlock()
					return
				}
				if done && r == run {
					cycles.Add(1)
				}
			}
		}()
	}
	time.Sleep(warmup)
	before := stats.Snapshot()
	start := time.Now()
	measuring.Store(true)
	wg.Wait()
	took := time.Since(start)
	units := unitsSince(before, stats.Snapshot())
	var total dynastore.StatRow
	for _, u := range units {
		total.Requests += u.Requests
		total.RCU += u.RCU
		total.WCU += u.WCU
	}
	if fatal != nil {
		return hotCell{}, fatal
	}
	return hotCell{rec: run.rec, took: took, units: units, total: total, cycles: cycles.Load(), multi: w.multi}, nil
}

// hotWorkload is the commands one client sends in a loop on the hot key.
// step reports whether a whole cycle was done; an error ends the run (a
// reply the workload cannot read, not an error reply, which is counted).
type hotWorkload struct {
	name  string
	multi bool
	setup func(ctx context.Context, c *redis.Client, key string) error
	step  func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error)
}

// hotSetMembers bounds the hot set's members, so that it stays the size
// of a set of, say, feature flags rather than growing for the whole run;
// hotZSetMembers a small leaderboard's, which stays inline, and
// hotLargeZSetMembers a large one's.
const (
	hotSetMembers       = 100
	hotZSetMembers      = 50
	hotLargeZSetMembers = 1000
)

var hotWorkloads = []hotWorkload{
	{name: "incr", step: func(ctx context.Context, c *redis.Client, key string, _ *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "incr", "INCR", key)
		return err == nil, nil
	}},
	{name: "get", setup: func(ctx context.Context, c *redis.Client, key string) error {
		return c.Set(ctx, key, strings.Repeat("v", 100), 0).Err()
	}, step: func(ctx context.Context, c *redis.Client, key string, _ *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "get", "GET", key)
		return err == nil, nil
	}},
	{name: "set", step: func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "set", "SET", key, strconv.FormatUint(rng.Uint64(), 36))
		return err == nil, nil
	}},
	{name: "lpush+rpop", multi: true, step: func(ctx context.Context, c *redis.Client, key string, _ *rand.Rand, r *familyRun) (bool, error) {
		if _, err := r.do(ctx, c, "lpush", "LPUSH", key, "job"); err != nil {
			return false, nil
		}
		v, err := r.do(ctx, c, "rpop", "RPOP", key)
		return err == nil && v != nil, nil
	}},
	{name: "sadd", step: func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "sadd", "SADD", key, "m"+strconv.Itoa(rng.IntN(hotSetMembers)))
		return err == nil, nil
	}},
	{name: "zadd", step: func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error) {
		// A leaderboard: a member's score set anew.
		_, err := r.do(ctx, c, "zadd", "ZADD", key, rng.IntN(1000000), "m"+strconv.Itoa(rng.IntN(hotZSetMembers)))
		return err == nil, nil
	}},
	{name: "zincrby", step: func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "zincrby", "ZINCRBY", key, 1, "m"+strconv.Itoa(rng.IntN(hotZSetMembers)))
		return err == nil, nil
	}},
	{name: "zadd-large", setup: func(ctx context.Context, c *redis.Client, key string) error {
		// Too many members to be inline: one item per member. Each cell
		// runs the setup; the set is made once.
		if n, err := c.ZCard(ctx, key).Result(); err != nil || n > 0 {
			return err
		}
		zs := make([]redis.Z, hotLargeZSetMembers)
		for i := range zs {
			zs[i] = redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}
		}
		return c.ZAdd(ctx, key, zs...).Err()
	}, step: func(ctx context.Context, c *redis.Client, key string, rng *rand.Rand, r *familyRun) (bool, error) {
		_, err := r.do(ctx, c, "zadd(large)", "ZADD", key, rng.IntN(1000000), "m"+strconv.Itoa(rng.IntN(hotLargeZSetMembers)))
		return err == nil, nil
	}},
	{name: "queue", multi: true, step: func(ctx context.Context, c *redis.Client, key string, _ *rand.Rand, r *familyRun) (bool, error) {
		if _, err := r.do(ctx, c, "queue.push", "QUEUE.PUSH", key, strings.Repeat("x", 200)); err != nil {
			return false, nil
		}
		v, err := r.do(ctx, c, "queue.pop", "QUEUE.POP", key, "VT", 60000)
		msgs, _ := v.([]any)
		if err != nil || len(msgs) == 0 {
			return false, nil
		}
		m, _ := msgs[0].([]any)
		if len(m) < 4 {
			return false, fmt.Errorf("QUEUE.POP: unexpected reply %v", v)
		}
		n, err := r.do(ctx, c, "queue.ack", "QUEUE.ACK", key, m[3])
		return err == nil && n == int64(1), nil
	}},
	{name: "throttle", step: func(ctx context.Context, c *redis.Client, key string, _ *rand.Rand, r *familyRun) (bool, error) {
		// A bucket generous enough that most calls are allowed: each
		// allowed call changes the key.
		_, err := r.do(ctx, c, "cl.throttle", "CL.THROTTLE", key, 1000000, 1000000, 1)
		return err == nil, nil
	}},
}

func hotWorkloadNames() []string {
	out := make([]string, len(hotWorkloads))
	for i, w := range hotWorkloads {
		out[i] = w.name
	}
	return out
}
