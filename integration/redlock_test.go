package integration

// Redlock libraries, unchanged, against redamo (issue 16): redsync (Go,
// go-redis v9 pool) here, node-redlock (npm redlock with ioredis) through
// compat/clients/node/redlock.js. Each runs first against a real
// redis-server, which proves the test itself right, then against redamo:
// three instances on one memory store in this process, and three redamo
// processes on one DynamoDB Local table.
//
// Every client is given ONE address. Several redamo instances on one table
// are one lock service, not independent Redlock nodes: giving redsync the
// three addresses as three pools would only make one lock take three
// requests, and add no safety. So each worker's redsync has one pool, and
// the workers are spread over the instances.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hashicorp/go-multierror"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// lockTarget is where a Redlock test runs: start returns three addresses
// (the same one three times for a single redis-server).
type lockTarget struct {
	name  string
	start func(t *testing.T) []string
}

var lockTargets = []lockTarget{
	{"redis", func(t *testing.T) []string {
		addr := testserver.RedisServer(t)
		return []string{addr, addr, addr}
	}},
	{"redamo-memory", func(t *testing.T) []string {
		// Three servers on one memory store: the in-process stand-in for
		// instances on one table.
		stats := dynastore.NewStats()
		st := memory.New(memory.Options{Observer: stats})
		addrs := make([]string, 3)
		for i := range addrs {
			addrs[i] = testserver.Start(t, st, testserver.WithStats(stats)).Addr
		}
		return addrs
	}},
	{"redamo-dynamodb", func(t *testing.T) []string {
		cs := cluster(t, 3)
		addrs := make([]string, len(cs))
		for i, c := range cs {
			addrs[i] = c.Options().Addr
		}
		return addrs
	}},
}

// lockClient is a go-redis client for one address, closed when the test
// ends; go-redis does not retry, so what redsync sees is what the server
// answered.
func lockClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newRedsync is redsync given one address, and the client behind it.
func newRedsync(t *testing.T, addr string) (*redsync.Redsync, *redis.Client) {
	c := lockClient(t, addr)
	return redsync.New(goredis.NewPool(c)), c
}

func TestRedlockRedsync(t *testing.T) {
	for _, tg := range lockTargets {
		t.Run(tg.name, func(t *testing.T) {
			addrs := tg.start(t)
			t.Run("MutualExclusion", func(t *testing.T) { redsyncMutualExclusion(t, addrs) })
			t.Run("Extend", func(t *testing.T) { redsyncExtend(t, addrs) })
			t.Run("ReleaseErrors", func(t *testing.T) { redsyncReleaseErrors(t, addrs) })
			t.Run("VanishedHolder", func(t *testing.T) { redsyncVanishedHolder(t, addrs) })
			t.Run("Requests", func(t *testing.T) { redsyncRequests(t, addrs) })
		})
	}
}

// redsyncMutualExclusion: workers spread over the instances, each with its
// own client and redsync, take one lock over a thousand times in total and
// inside it change a counter by GET, sleep, SET. A lost update or two
// workers inside at once is a broken lock.
func redsyncMutualExclusion(t *testing.T, addrs []string) {
	const (
		workersPerInstance = 3
		acquisitions       = 1200
		key                = "redlock:mutex"
		counterKey         = "redlock:counter"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var budget, done, inside, overlaps, failedLocks atomic.Int64
	budget.Store(acquisitions)
	var errs firstErrors
	var wg sync.WaitGroup
	start := time.Now()
	workers := workersPerInstance * len(addrs)
	for w := range workers {
		rs, c := newRedsync(t, addrs[w%len(addrs)])
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := rs.NewMutex(key,
				redsync.WithExpiry(10*time.Second),
				redsync.WithTries(50),
				redsync.WithRetryDelayFunc(func(int) time.Duration {
					return time.Duration(10+rand.IntN(30)) * time.Millisecond
				}))
			for budget.Add(-1) >= 0 && !errs.stopped() {
				for {
					err := m.LockContext(ctx)
					if err == nil {
						break
					}
					var taken *redsync.ErrTaken
					if ctx.Err() != nil {
						errs.add("worker %d: no lock before the deadline: %v", w, err)
						return
					}
					if !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
						errs.add("worker %d: Lock: %v", w, err)
						return
					}
					failedLocks.Add(1) // all tries lost to other workers: try again
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				v, err := c.Get(ctx, counterKey).Int64()
				if err != nil && !errors.Is(err, redis.Nil) {
					errs.add("worker %d: GET: %v", w, err)
					return
				}
				time.Sleep(time.Millisecond)
				if err := c.Set(ctx, counterKey, v+1, 0).Err(); err != nil {
					errs.add("worker %d: SET: %v", w, err)
					return
				}
				inside.Add(-1)
				if ok, err := m.UnlockContext(ctx); !ok || err != nil {
					errs.add("worker %d: Unlock = %v, %v", w, ok, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	errs.require(t)
	require.Zero(t, overlaps.Load(), "two workers inside the lock at once")
	require.Equal(t, int64(acquisitions), done.Load())
	for i, addr := range addrs {
		got, err := lockClient(t, addr).Get(ctx, counterKey).Int64()
		require.NoError(t, err)
		require.Equal(t, done.Load(), got, "instance %d: the counter lost updates", i)
	}
	t.Logf("redsync: %d workers over %d addresses, %d acquisitions, counter %d, %d Lock calls lost all tries, %v (%.1f acquisitions/s)",
		workers, len(addrs), done.Load(), done.Load(), failedLocks.Load(), elapsed.Round(time.Millisecond),
		float64(done.Load())/elapsed.Seconds())
}

// redsyncExtend: Extend resets the key's expiry (PTTL grows back), keeps
// the value, moves Until; another value cannot extend it; WithSetNXOnExtend
// re-creates a missing lock.
func redsyncExtend(t *testing.T, addrs []string) {
	ctx := context.Background()
	rs, _ := newRedsync(t, addrs[0])
	rs1, _ := newRedsync(t, addrs[1])
	other := lockClient(t, addrs[2])
	const key = "redlock:extend"

	// The expiry is long and what Extend did is bracketed by the time
	// before it, so that a busy machine's pauses decide nothing; skew
	// allows for the instances' clocks (Extend and PTTL go to different
	// ones), far less than the 700 ms Extend gives back.
	const lease, skew = 10 * time.Second, 100 * time.Millisecond
	m := rs.NewMutex(key, redsync.WithExpiry(lease))
	require.NoError(t, m.Lock())
	until := m.Until()
	time.Sleep(700 * time.Millisecond)
	before, err := other.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.True(t, before > 0 && before <= lease-700*time.Millisecond, "PTTL before Extend: %v", before)
	extended := time.Now()
	ok, err := m.Extend()
	require.NoError(t, err)
	require.True(t, ok)
	after, err := other.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.True(t, after >= lease-time.Since(extended)-skew && after <= lease+skew, "PTTL after Extend: %v", after)
	require.True(t, m.Until().After(until), "Until moved")
	require.Equal(t, m.Value(), other.Get(ctx, key).Val())

	// Another value (another owner) cannot extend it.
	intruder := rs1.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithValue("not-the-owner"))
	ok, err = intruder.Extend()
	require.False(t, ok)
	var taken *redsync.ErrTaken
	require.ErrorAs(t, err, &taken)
	require.Equal(t, []int{0}, taken.Nodes)
	pttl := other.PTTL(ctx, key).Val()
	require.True(t, pttl > 0 && pttl <= lease+skew, "the owner's expiry is untouched: %v", pttl)
	require.Equal(t, m.Value(), other.Get(ctx, key).Val())
	ok, err = m.Unlock()
	require.NoError(t, err)
	require.True(t, ok)

	// WithSetNXOnExtend: extending a lock whose key is gone takes it again
	// (SET NX inside the script); held by another value it still fails.
	nx := rs.NewMutex("redlock:extend-nx", redsync.WithExpiry(lease), redsync.WithSetNXOnExtend(),
		redsync.WithValue("nx-owner"))
	extended = time.Now()
	ok, err = nx.Extend()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "nx-owner", other.Get(ctx, "redlock:extend-nx").Val())
	pttl = other.PTTL(ctx, "redlock:extend-nx").Val()
	require.True(t, pttl >= lease-time.Since(extended)-skew && pttl <= lease+skew, "PTTL: %v", pttl)
	nxIntruder := rs1.NewMutex("redlock:extend-nx", redsync.WithSetNXOnExtend(), redsync.WithValue("not-the-owner"))
	ok, err = nxIntruder.Extend()
	require.False(t, ok)
	require.ErrorAs(t, err, &taken)
	require.Equal(t, "nx-owner", other.Get(ctx, "redlock:extend-nx").Val())
}

// redsyncReleaseErrors: redsync v4.13.0 reports an expired (or already
// released) lock as a *multierror.Error holding ErrLockAlreadyExpired (its
// release script returned -1: no key), and a lock held by another value as
// *ErrTaken (the script returned 0), leaving the owner's lock alone.
func redsyncReleaseErrors(t *testing.T, addrs []string) {
	ctx := context.Background()
	rs, _ := newRedsync(t, addrs[0])
	rs1, _ := newRedsync(t, addrs[1])
	other := lockClient(t, addrs[2])

	expired := rs.NewMutex("redlock:expired", redsync.WithExpiry(300*time.Millisecond), redsync.WithTimeoutFactor(0.5))
	require.NoError(t, expired.Lock())
	time.Sleep(500 * time.Millisecond)
	require.Zero(t, other.Exists(ctx, "redlock:expired").Val(), "expired")
	ok, err := expired.Unlock()
	require.False(t, ok)
	requireAlreadyExpired(t, err)

	owner := rs.NewMutex("redlock:foreign", redsync.WithExpiry(5*time.Second))
	require.NoError(t, owner.Lock())
	intruder := rs1.NewMutex("redlock:foreign", redsync.WithValue("not-the-owner"))
	ok, err = intruder.Unlock()
	require.False(t, ok)
	var taken *redsync.ErrTaken
	require.ErrorAs(t, err, &taken)
	require.Equal(t, []int{0}, taken.Nodes)
	require.EqualError(t, err, "lock already taken, locked nodes: [0]")
	require.Equal(t, owner.Value(), other.Get(ctx, "redlock:foreign").Val(), "the owner's lock is untouched")
	pttl := other.PTTL(ctx, "redlock:foreign").Val()
	require.Greater(t, pttl, 3*time.Second, "the owner's expiry is untouched")

	ok, err = owner.Unlock()
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, other.Exists(ctx, "redlock:foreign").Val(), "released")
	// Released twice: the key is gone, as for an expired lock.
	ok, err = owner.Unlock()
	require.False(t, ok)
	requireAlreadyExpired(t, err)
}

func requireAlreadyExpired(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, redsync.ErrLockAlreadyExpired)
	var merr *multierror.Error
	require.ErrorAs(t, err, &merr)
	require.Equal(t, []error{redsync.ErrLockAlreadyExpired}, merr.Errors)
}

// redsyncVanishedHolder: a holder takes a 500 ms lock through one instance
// and vanishes (no Unlock, connection closed); a contender on another
// instance is refused while the lock lives and gets it once it expired.
func redsyncVanishedHolder(t *testing.T, addrs []string) {
	ctx := context.Background()
	const key, ttl = "redlock:vanish", 500 * time.Millisecond
	holderRS, holderClient := newRedsync(t, addrs[0])
	holder := holderRS.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTimeoutFactor(0.5))
	require.NoError(t, holder.Lock())
	acquired := time.Now()
	require.NoError(t, holderClient.Close())

	rs, c := newRedsync(t, addrs[2])
	if time.Since(acquired) < 300*time.Millisecond {
		err := rs.NewMutex(key).TryLock()
		var taken *redsync.ErrTaken
		require.ErrorAs(t, err, &taken, "the lock is still held")
		require.Equal(t, holder.Value(), c.Get(ctx, key).Val())
	} else {
		t.Logf("slow machine: %v passed before the contender's first try; not checking it is refused", time.Since(acquired))
	}
	contender := rs.NewMutex(key, redsync.WithExpiry(5*time.Second), redsync.WithTries(200),
		redsync.WithRetryDelay(20*time.Millisecond))
	require.NoError(t, contender.Lock())
	waited := time.Since(acquired)
	require.GreaterOrEqual(t, waited, ttl-100*time.Millisecond, "taken over before the TTL ran out")
	require.Less(t, waited, 5*time.Second)
	require.Equal(t, contender.Value(), c.Get(ctx, key).Val())
	ok, err := contender.Unlock()
	require.NoError(t, err)
	require.True(t, ok)
	t.Logf("a %v lock whose holder vanished was taken over after %v", ttl, waited.Round(time.Millisecond))
}

// redsyncRequests logs the DynamoDB requests (INFO redamo) and the commands
// (INFO commandstats, scripts' redis.call included) per redsync operation,
// measured sequentially through the first instance. Nothing is asserted:
// it is the cost, for the record. Skipped on redis-server.
func redsyncRequests(t *testing.T, addrs []string) {
	rs, c := newRedsync(t, addrs[0])
	ctx := context.Background()
	if len(storeRows(t, ctx, c)) == 0 {
		t.Skip("no INFO redamo store rows: not redamo")
	}
	const n = 20
	// Warm up: every script run once through this instance.
	warm := rs.NewMutex("redlock:measure:warm")
	require.NoError(t, warm.Lock())
	_, err := warm.Extend()
	require.NoError(t, err)
	_, err = warm.Unlock()
	require.NoError(t, err)

	ms := make([]*redsync.Mutex, n)
	for i := range ms {
		ms[i] = rs.NewMutex("redlock:measure:"+strconv.Itoa(i), redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	}
	intruders := make([]*redsync.Mutex, n)
	for i := range intruders {
		// Same instance as the owner, so that its INFO counts them.
		intruders[i] = rs.NewMutex("redlock:measure:"+strconv.Itoa(i), redsync.WithTries(1),
			redsync.WithValue("not-the-owner"))
	}
	each := func(what string, f func(i int) error) {
		t.Helper()
		before := snapshot(t, ctx, c)
		for i := range n {
			require.NoError(t, f(i), "%s %d", what, i)
		}
		after := snapshot(t, ctx, c)
		t.Logf("redsync %-20s %s", what+":", after.perOp(before, n))
	}
	each("acquire", func(i int) error { return ms[i].Lock() })
	each("acquire (held)", func(i int) error {
		var taken *redsync.ErrTaken
		if err := intruders[i].TryLock(); !errors.As(err, &taken) {
			return fmt.Errorf("TryLock of a held lock: %v", err)
		}
		return nil
	})
	each("extend", func(i int) error { return okErr(ms[i].Extend()) })
	each("release (foreign)", func(i int) error {
		var taken *redsync.ErrTaken
		if _, err := intruders[i].Unlock(); !errors.As(err, &taken) {
			return fmt.Errorf("Unlock of a foreign lock: %v", err)
		}
		return nil
	})
	each("release", func(i int) error { return okErr(ms[i].Unlock()) })
	each("release (expired)", func(i int) error {
		if _, err := ms[i].Unlock(); !errors.Is(err, redsync.ErrLockAlreadyExpired) {
			return fmt.Errorf("Unlock of a released lock: %v", err)
		}
		return nil
	})
}

func okErr(ok bool, err error) error {
	if err == nil && !ok {
		return errors.New("false without an error")
	}
	return err
}

var (
	storeRowRe = regexp.MustCompile(`(?m)^store_cmd_([^:]+):requests=(\d+),`)
	cmdstatRe  = regexp.MustCompile(`(?m)^cmdstat_([^:]+):calls=(\d+),`)
)

func infoCounts(t *testing.T, ctx context.Context, c *redis.Client, section string, re *regexp.Regexp) map[string]int64 {
	t.Helper()
	info, err := c.Info(ctx, section).Result()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, m := range re.FindAllStringSubmatch(info, -1) {
		n, err := strconv.ParseInt(m[2], 10, 64)
		require.NoError(t, err)
		out[m[1]] = n
	}
	return out
}

// storeRows reads INFO redamo's per-command DynamoDB requests:
// "evalsha@DeleteItem" -> requests.
func storeRows(t *testing.T, ctx context.Context, c *redis.Client) map[string]int64 {
	return infoCounts(t, ctx, c, "redamo", storeRowRe)
}

type infoSnapshot struct{ store, calls map[string]int64 }

func snapshot(t *testing.T, ctx context.Context, c *redis.Client) infoSnapshot {
	return infoSnapshot{storeRows(t, ctx, c), infoCounts(t, ctx, c, "commandstats", cmdstatRe)}
}

// perOp formats what happened since before, per operation of n.
func (s infoSnapshot) perOp(before infoSnapshot, n int) string {
	diff := func(after, before map[string]int64) (float64, string) {
		var keys []string
		var total int64
		for k, v := range after {
			if d := v - before[k]; d > 0 && k != "info" {
				keys = append(keys, k)
				total += d
			}
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %.2f", k, float64(after[k]-before[k])/float64(n))
		}
		return float64(total) / float64(n), strings.Join(parts, ", ")
	}
	req, reqs := diff(s.store, before.store)
	_, cmds := diff(s.calls, before.calls)
	return fmt.Sprintf("%.2f DynamoDB requests (%s); commands: %s", req, reqs, cmds)
}

// nodeSummary is what compat/clients/node/redlock.js prints.
type nodeSummary struct {
	Redlock string `json:"redlock"`
	IORedis string `json:"ioredis"`
	Ports   int    `json:"ports"`
	Mutex   struct {
		Workers        int `json:"workers"`
		Acquisitions   int `json:"acquisitions"`
		Counter        int `json:"counter"`
		Overlaps       int `json:"overlaps"`
		FailedAcquires int `json:"failedAcquires"`
		Ms             int `json:"ms"`
	} `json:"mutex"`
	Extend struct {
		PTTLBefore int `json:"pttlBefore"`
		PTTLAfter  int `json:"pttlAfter"`
	} `json:"extend"`
	Errors map[string]struct {
		Name     string `json:"name"`
		Message  string `json:"message"`
		Attempts int    `json:"attempts"`
		Reason   string `json:"reason"`
	} `json:"errors"`
	Vanished struct {
		TTLMs    int `json:"ttlMs"`
		WaitedMs int `json:"waitedMs"`
	} `json:"vanished"`
	Requests map[string]json.RawMessage `json:"requests"`
}

// TestRedlockNode runs compat/clients/node/redlock.js (npm redlock
// 5.0.0-beta.2 with ioredis, pinned in package-lock.json) against each
// target, given the three addresses; every Redlock in it has one client.
// The script asserts as it goes; its JSON summary is checked again here.
func TestRedlockNode(t *testing.T) {
	dir, err := filepath.Abs("../compat/clients/node")
	require.NoError(t, err)
	node := testserver.NodeModules(t, dir)
	for _, tg := range lockTargets {
		t.Run(tg.name, func(t *testing.T) {
			addrs := tg.start(t)
			args := []string{"redlock.js"}
			for _, a := range addrs {
				_, port, _ := strings.Cut(a, ":")
				args = append(args, port)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Dir = dir
			testproc.Prepare(cmd)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "node redlock.js against %s:\n%s%s", tg.name, out, stderr.String())
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var s nodeSummary
			require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &s), "%s", out)

			require.Equal(t, "5.0.0-beta.2", strings.TrimPrefix(s.Redlock, "v"))
			require.Equal(t, 3, s.Ports)
			require.Positive(t, s.Mutex.Acquisitions)
			require.Equal(t, s.Mutex.Acquisitions, s.Mutex.Counter, "lost updates")
			require.Zero(t, s.Mutex.Overlaps, "two workers inside the lock at once")
			require.True(t, s.Extend.PTTLBefore > 0 && s.Extend.PTTLBefore <= 1300, "PTTL before extend: %d", s.Extend.PTTLBefore)
			require.True(t, s.Extend.PTTLAfter > 2000 && s.Extend.PTTLAfter <= 3000, "PTTL after extend: %d", s.Extend.PTTLAfter)
			for _, k := range []string{"foreign", "foreignExtend", "expired"} {
				e := s.Errors[k]
				require.Equal(t, "ExecutionError", e.Name, k)
				require.Equal(t, "The operation was unable to achieve a quorum during its retry window.", e.Message, k)
				require.Equal(t, "The operation was applied to: 0 of the 1 requested resources.", e.Reason, k)
			}
			require.GreaterOrEqual(t, s.Vanished.WaitedMs, 400)
			t.Logf("node-redlock %s (ioredis %s): %d workers over %d addresses, %d acquisitions, counter %d, %d acquires ran out of retries, %d ms; extend PTTL %d -> %d ms; vanished 500 ms lock taken over after %d ms",
				s.Redlock, s.IORedis, s.Mutex.Workers, s.Ports, s.Mutex.Acquisitions, s.Mutex.Counter,
				s.Mutex.FailedAcquires, s.Mutex.Ms, s.Extend.PTTLBefore, s.Extend.PTTLAfter, s.Vanished.WaitedMs)
			for _, op := range []string{"acquire", "extend", "release"} {
				if r, ok := s.Requests[op]; ok {
					t.Logf("node-redlock %s per operation: %s", op, r)
				}
			}
		})
	}
}
