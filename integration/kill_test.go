package integration

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// instance is one redamo process that can be killed and restarted on the
// same table. Every process it starts is killed when the test ends, however
// it ends (testproc).
type instance struct {
	t    *testing.T
	args []string
	proc *testproc.Proc
	addr string
}

func (in *instance) start() *redis.Client {
	in.t.Helper()
	in.addr = freeAddr(in.t)
	cmd := exec.Command(binary, append(in.args, "--addr", in.addr)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=redamotest", "AWS_SECRET_ACCESS_KEY=redamotest")
	in.proc = testproc.Start(in.t, cmd)
	// A big value's write on a busy DynamoDB Local takes seconds: the
	// test server's clients' read timeout (a killed instance closes its
	// connections at once, it needs none).
	c := redis.NewClient(&redis.Options{Addr: in.addr, MaxRetries: -1, PoolSize: 8, ReadTimeout: testserver.ClientReadTimeout})
	in.t.Cleanup(func() { _ = c.Close() })
	require.Eventually(in.t, func() bool {
		return c.Ping(context.Background()).Err() == nil
	}, 20*time.Second, 20*time.Millisecond)
	return c
}

// kill ends the process with SIGKILL: no shutdown, no flushing, whatever
// request it was in the middle of.
func (in *instance) kill() { in.proc.Kill() }

// TestKillMidMultiKeyCommands kills redamo at random moments while clients
// move elements between keys (SMOVE, LMOVE, RPOPLPUSH, SUNIONSTORE, a
// script that moves a sorted set member, ZUNIONSTORE, ZINCRBY there and
// back), then restarts it on the same table: no element is ever lost or
// duplicated, and a sorted set's order agrees with its members' scores.
func TestKillMidMultiKeyCommands(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		in := b.node(t)
		ctx := context.Background()

		// 150 members: more than an inline collection holds, so both layouts'
		// transactions are exercised as members move and the sizes change.
		const n = 150
		members := make([]string, n)
		for i := range members {
			members[i] = "m" + strconv.Itoa(i)
		}
		c := in.start()
		require.NoError(t, c.SAdd(ctx, "sa", toAny(members)...).Err())
		require.NoError(t, c.RPush(ctx, "la", toAny(members)...).Err())
		zs := make([]redis.Z, n)
		for i, m := range members {
			zs[i] = redis.Z{Score: float64(i), Member: m}
		}
		require.NoError(t, c.ZAdd(ctx, "za", zs...).Err())
		require.NoError(t, c.Close())
		in.kill()

		moved := false
		b.faulty()
		killRounds(in, rand.New(rand.NewPCG(7, 11)), 12, func(c *redis.Client, r *rand.Rand) {
			i := r.IntN(n)
			m := members[i]
			switch r.IntN(9) {
			case 5:
				c.Eval(ctx, zmoveScript, []string{"za", "zb"}, m)
			case 6:
				c.Eval(ctx, zmoveScript, []string{"zb", "za"}, m)
			case 7:
				c.ZUnionStore(ctx, "zu", &redis.ZStore{Keys: []string{"za", "zb"}})
			case 8:
				// A score change moves the member's order item; the
				// script puts the score back in the same run. Only a
				// member of za: ZINCRBY of one that moved to zb would
				// add it to za again, at score 0, as Redis does.
				c.Eval(ctx, `if redis.call('zscore', KEYS[1], ARGV[1]) then redis.call('zincrby', KEYS[1], 1000, ARGV[1]) return redis.call('zincrby', KEYS[1], -1000, ARGV[1]) end`, []string{"za"}, m)
			case 0:
				c.SMove(ctx, "sa", "sb", m)
			case 1:
				c.SMove(ctx, "sb", "sa", m)
			case 2:
				c.LMove(ctx, "la", "lb", "LEFT", "RIGHT")
			case 3:
				c.RPopLPush(ctx, "lb", "la")
			default:
				c.SUnionStore(ctx, "su", "sa", "sb")
			}
		}, func(c *redis.Client, round int) {
			sa, err := c.SMembers(ctx, "sa").Result()
			require.NoError(t, err)
			sb, err := c.SMembers(ctx, "sb").Result()
			require.NoError(t, err)
			require.Equal(t, members, sorted(append(sa, sb...)), "round %d: sets lost or duplicated a member", round)
			if su, err := c.SMembers(ctx, "su").Result(); err == nil && len(su) > 0 {
				require.Equal(t, members, sorted(su), "round %d: SUNIONSTORE stored a partial union", round)
			}
			la, err := c.LRange(ctx, "la", 0, -1).Result()
			require.NoError(t, err)
			lb, err := c.LRange(ctx, "lb", 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, members, sorted(append(la, lb...)), "round %d: lists lost or duplicated an element", round)
			za := zsetChecked(t, c, "za", round)
			zb := zsetChecked(t, c, "zb", round)
			require.Equal(t, members, sorted(append(za, zb...)), "round %d: sorted sets lost or duplicated a member", round)
			if zu := zsetChecked(t, c, "zu", round); len(zu) > 0 {
				require.Equal(t, members, sorted(zu), "round %d: ZUNIONSTORE stored a partial union", round)
			}
			moved = moved || len(sb) > 0 || len(lb) > 0 || len(zb) > 0
		})
		require.True(t, moved, "no element ever moved: the workload did not run")
	})
}

// zmoveScript moves ARGV[1] from the sorted set KEYS[1] to KEYS[2] with
// its score.
const zmoveScript = `local s = redis.call('zscore', KEYS[1], ARGV[1])
if s then redis.call('zrem', KEYS[1], ARGV[1]) redis.call('zadd', KEYS[2], s, ARGV[1]) end`

// zsetChecked returns the members of the sorted set key, after checking
// that its order (ZRANGE WITHSCORES, read from the order items) holds
// exactly its members' scores (ZMSCORE, read from the member items), each
// member m<i> scoring i, and that ZCARD counts them.
func zsetChecked(t *testing.T, c *redis.Client, key string, round int) []string {
	t.Helper()
	ctx := context.Background()
	zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
	require.NoError(t, err)
	ms := make([]string, len(zs))
	for i, z := range zs {
		ms[i] = z.Member.(string)
		want, _ := strconv.Atoi(ms[i][1:])
		require.EqualValues(t, want, z.Score, "round %d: %s: %s has the wrong score in the order", round, key, ms[i])
		if i > 0 {
			require.Less(t, zs[i-1].Score, z.Score, "round %d: %s out of order", round, key)
		}
	}
	require.EqualValues(t, len(zs), c.ZCard(ctx, key).Val(), "round %d: %s: ZCARD", round, key)
	if len(ms) > 0 {
		scores, err := c.ZMScore(ctx, key, ms...).Result()
		require.NoError(t, err)
		for i, s := range scores {
			require.Equal(t, zs[i].Score, s, "round %d: %s: %s's member item disagrees with its order item", round, key, ms[i])
		}
	}
	return ms
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// sorted orders members as members[] is ordered: by their number.
func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i][1:])
		b, _ := strconv.Atoi(out[j][1:])
		return a < b
	})
	return out
}

// TestKillMidExec kills redamo at random moments while clients run
// MULTI/EXEC blocks (transfers between counters, members moved between two
// large sets, a union of both stored, which stages a new generation inside
// the transaction), then restarts it on the same table: every EXEC took
// effect whole or not at all.
func TestKillMidExec(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		in := b.node(t)
		ctx := context.Background()

		const n, accounts, initial = 150, 6, 1000
		members := make([]string, n)
		for i := range members {
			members[i] = "m" + strconv.Itoa(i)
		}
		c := in.start()
		require.NoError(t, c.SAdd(ctx, "sa", toAny(members)...).Err())
		for i := range accounts {
			require.NoError(t, c.Set(ctx, "acct"+strconv.Itoa(i), initial, 0).Err())
		}
		require.NoError(t, c.Close())
		in.kill()

		var committed atomic.Int64
		b.faulty()
		killRounds(in, rand.New(rand.NewPCG(3, 5)), 10, func(c *redis.Client, r *rand.Rand) {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				switch r.IntN(4) {
				case 0, 1:
					from, to := r.IntN(accounts), r.IntN(accounts)
					amount := int64(1 + r.IntN(20))
					p.DecrBy(ctx, "acct"+strconv.Itoa(from), amount)
					p.IncrBy(ctx, "acct"+strconv.Itoa(to), amount)
				case 2:
					p.SMove(ctx, "sa", "sb", members[r.IntN(n)])
					p.SMove(ctx, "sb", "sa", members[r.IntN(n)])
				default:
					p.SUnionStore(ctx, "su", "sa", "sb")
					p.Incr(ctx, "unions")
				}
				return nil
			})
			if err == nil {
				committed.Add(1)
			}
		}, func(c *redis.Client, round int) {
			var sum int64
			for i := range accounts {
				v, err := c.Get(ctx, "acct"+strconv.Itoa(i)).Int64()
				require.NoError(t, err)
				sum += v
			}
			require.Equal(t, int64(accounts*initial), sum, "round %d: a transfer was applied in part", round)
			sa, err := c.SMembers(ctx, "sa").Result()
			require.NoError(t, err)
			sb, err := c.SMembers(ctx, "sb").Result()
			require.NoError(t, err)
			require.Equal(t, members, sorted(append(sa, sb...)), "round %d: sets lost or duplicated a member", round)
			su, err := c.SMembers(ctx, "su").Result()
			require.NoError(t, err)
			unions, err := c.Get(ctx, "unions").Int64()
			if err == redis.Nil {
				unions = 0
			} else {
				require.NoError(t, err)
			}
			// The union and its counter were written by the same EXECs.
			require.Equal(t, unions > 0, len(su) > 0, "round %d: SUNIONSTORE and INCR of one EXEC disagree", round)
			if len(su) > 0 {
				require.Equal(t, members, sorted(su), "round %d: SUNIONSTORE stored a partial union", round)
			}
		})
		require.Positive(t, committed.Load(), "no EXEC ever committed: the workload did not run")
	})
}

// killRounds runs rounds of: start in, let 4 workers send op in a loop
// (their errors are expected once the process is killed), kill the process
// at a random moment, restart it and check what it left.
func killRounds(in node, rng *rand.Rand, rounds int, op func(c *redis.Client, r *rand.Rand), check func(c *redis.Client, round int)) {
	for round := range rounds {
		c := in.start()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					op(c, r)
				}
			}()
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		in.kill()
		close(stop)
		wg.Wait()
		_ = c.Close()

		c = in.start()
		check(c, round)
		_ = c.Close()
		in.kill()
	}
}
