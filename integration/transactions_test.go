package integration

// MULTI/EXEC across instances (issue 15): every write of one EXEC becomes
// visible at once to every client of every instance, WATCH notices changes
// made through any instance, and a mixed history of single commands and
// transactions is linearizable.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// firstErrors keeps the first few errors of concurrent workers, in the order
// they happened: after one failure a pooled connection may be out of step,
// so later errors are often consequences, not causes.
type firstErrors struct {
	mu   sync.Mutex
	errs []string
	stop atomic.Bool
}

func (f *firstErrors) add(format string, args ...any) {
	f.stop.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) < 10 {
		f.errs = append(f.errs, fmt.Sprintf(format, args...))
	}
}

func (f *firstErrors) stopped() bool { return f.stop.Load() }

func (f *firstErrors) require(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		t.Fatalf("%d+ errors, first:\n  %s", len(f.errs), strings.Join(f.errs, "\n  "))
	}
}

func accountKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "acct:" + strconv.Itoa(i)
	}
	return keys
}

// sumOf adds up string replies (GET's or MGET's); ok is false when one is
// missing or not a number.
func sumOf(vals []any) (sum int64, ok bool) {
	for _, v := range vals {
		s, isStr := v.(string)
		if !isStr {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += n
	}
	return sum, true
}

// TestTxTransfersKeepTotal moves money between accounts through three
// instances, with two kinds of transfer: blind (MULTI; DECRBY a x; INCRBY b
// x; EXEC) and checked (WATCH a b; GET a; GET b; MULTI; SET a ..; SET b ..;
// EXEC, retried while EXEC is null). Readers on every instance read all
// accounts in one MULTI and with one MGET and must always see the same
// total; at the end every account holds exactly what the committed
// transfers say.
func TestTxTransfersKeepTotal(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const accounts, initial = 8, 1000
		const total = accounts * initial
		keys := accountKeys(accounts)

		// The accounts are opened in one transaction.
		_, err := cs[0].TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Set(ctx, k, initial, 0)
			}
			return nil
		})
		require.NoError(t, err, "opening the accounts in one MULTI/EXEC")

		const perWorker = 40
		deadline := time.Now().Add(8 * time.Second)
		var fails firstErrors
		var mu sync.Mutex
		change := make([]int64, accounts) // committed net change per account
		var blind, checked, retries, reads atomic.Int64
		commit := func(from, to int, amount int64) {
			mu.Lock()
			change[from] -= amount
			change[to] += amount
			mu.Unlock()
		}

		var writers sync.WaitGroup
		// Blind transfers: two per instance.
		for w := range 6 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				c := cs[w%3]
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for range perWorker {
					if fails.stopped() || time.Now().After(deadline) {
						return
					}
					from, to := rng.IntN(accounts), rng.IntN(accounts-1)
					if to >= from {
						to++
					}
					amount := 1 + rng.Int64N(50)
					cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.DecrBy(ctx, keys[from], amount)
						p.IncrBy(ctx, keys[to], amount)
						return nil
					})
					if gaveUp(err) {
						retries.Add(1)
						continue
					}
					if err != nil {
						fails.add("blind transfer on instance %d: %v", w%3, err)
						return
					}
					if len(cmds) != 2 {
						fails.add("blind transfer on instance %d: %d replies", w%3, len(cmds))
						return
					}
					commit(from, to, amount)
					blind.Add(1)
				}
			}()
		}
		// Checked transfers (WATCH, never below zero): one per instance.
		for w := range 3 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				c := cs[w]
				rng := rand.New(rand.NewPCG(uint64(w), 2))
				for range perWorker {
					if fails.stopped() || time.Now().After(deadline) {
						return
					}
					from, to := rng.IntN(accounts), rng.IntN(accounts-1)
					if to >= from {
						to++
					}
					amount := 1 + rng.Int64N(50)
					for attempt := 0; ; attempt++ {
						if attempt == 200 {
							fails.add("checked transfer on instance %d: no commit after 200 attempts", w)
							return
						}
						moved := int64(0)
						err := c.Watch(ctx, func(tx *redis.Tx) error {
							a, err := tx.Get(ctx, keys[from]).Int64()
							if err != nil {
								return err
							}
							b, err := tx.Get(ctx, keys[to]).Int64()
							if err != nil {
								return err
							}
							moved = min(amount, max(a, 0))
							_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
								p.Set(ctx, keys[from], a-moved, 0)
								p.Set(ctx, keys[to], b+moved, 0)
								return nil
							})
							return err
						}, keys[from], keys[to])
						if errors.Is(err, redis.TxFailedErr) {
							retries.Add(1)
							continue
						}
						if err != nil {
							fails.add("checked transfer on instance %d: %v", w, err)
							return
						}
						commit(from, to, moved)
						checked.Add(1)
						break
					}
				}
			}()
		}

		done := make(chan struct{})
		var readers sync.WaitGroup
		for r := range 3 {
			readers.Add(1)
			go func() {
				defer readers.Done()
				c := cs[r]
				for {
					select {
					case <-done:
						return
					default:
					}
					if fails.stopped() {
						return
					}
					// MULTI; GET each account; EXEC: one consistent state.
					// (MGET is linearizable per key but reads its keys as
					// one BatchGetItem, which DynamoDB does not make a
					// snapshot: it is no reader for this invariant.)
					cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						for _, k := range keys {
							p.Get(ctx, k)
						}
						return nil
					})
					if gaveUp(err) {
						retries.Add(1)
						continue
					}
					if err != nil {
						fails.add("reader on instance %d: MULTI GET...: %v", r, err)
						return
					}
					vals := make([]any, len(cmds))
					for j, cmd := range cmds {
						vals[j] = cmd.(*redis.StringCmd).Val()
					}
					if sum, ok := sumOf(vals); !ok || sum != total {
						fails.add("reader on instance %d: MULTI GET %d accounts EXEC = %v: total %d, want %d", r, accounts, vals, sum, total)
						return
					}
					reads.Add(1)
				}
			}()
		}
		writers.Wait()
		close(done)
		readers.Wait()
		fails.require(t)

		for i, c := range cs {
			vals, err := c.MGet(ctx, keys...).Result()
			require.NoError(t, err)
			for j, v := range vals {
				require.Equal(t, strconv.FormatInt(initial+change[j], 10), v, "instance %d, %s", i, keys[j])
			}
		}
		t.Logf("%d blind and %d checked transfers committed (%d WATCH retries), %d consistent reads",
			blind.Load(), checked.Load(), retries.Load(), reads.Load())
		require.Positive(t, blind.Load())
		require.Positive(t, checked.Load())
	})
}

// The linearizability check's model: a few integer registers. A single
// command is one operation; an EXEC is one operation that applies its
// queued commands in order, atomically.

const txKeys = 3

type kvCmd struct {
	op  string // set, get, incr
	key int
	val int64 // set
}

type kvReply struct {
	ok  bool // get: the key existed
	val int64
}

// kvInput is one operation: one command, or the commands of one EXEC.
type kvInput struct {
	multi bool
	cmds  []kvCmd
}

type kvOutput []kvReply

type kvState [txKeys]regState

func applyCmd(s kvState, c kvCmd, r kvReply) (bool, kvState) {
	cur := s[c.key]
	switch c.op {
	case "set":
		s[c.key] = regState{exists: true, val: c.val}
		return true, s
	case "incr":
		s[c.key] = regState{exists: true, val: cur.val + 1}
		return r.val == cur.val+1, s
	default: // get
		return r.ok == cur.exists && (!cur.exists || r.val == cur.val), s
	}
}

var kvModel = porcupine.Model{
	Init: func() interface{} { return kvState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		if len(out) != len(in.cmds) {
			return false, s
		}
		for i, c := range in.cmds {
			ok, next := applyCmd(s, c, out[i])
			if !ok {
				return false, state
			}
			s = next
		}
		return true, s
	},
	Equal: func(a, b interface{}) bool { return a == b },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(kvInput), output.(kvOutput)
		parts := make([]string, len(in.cmds))
		for i, c := range in.cmds {
			s := fmt.Sprintf("%s k%d", c.op, c.key)
			if c.op == "set" {
				s += " " + strconv.FormatInt(c.val, 10)
			}
			if i < len(out) && c.op != "set" {
				if c.op == "get" && !out[i].ok {
					s += " -> nil"
				} else {
					s += fmt.Sprintf(" -> %d", out[i].val)
				}
			}
			parts[i] = s
		}
		if in.multi {
			return "EXEC[" + strings.Join(parts, "; ") + "]"
		}
		return parts[0]
	},
	DescribeState: func(state interface{}) string {
		s := state.(kvState)
		parts := make([]string, len(s))
		for i, r := range s {
			if r.exists {
				parts[i] = fmt.Sprintf("k%d=%d", i, r.val)
			} else {
				parts[i] = fmt.Sprintf("k%d=nil", i)
			}
		}
		return strings.Join(parts, " ")
	},
}

func kvKey(i int) string { return "lin:k" + strconv.Itoa(i) }

// randomCmd draws one command over the small key set.
func randomCmd(rng *rand.Rand) kvCmd {
	c := kvCmd{key: rng.IntN(txKeys)}
	switch rng.IntN(3) {
	case 0:
		c.op, c.val = "set", rng.Int64N(100)
	case 1:
		c.op = "incr"
	default:
		c.op = "get"
	}
	return c
}

// queueCmd adds c to a pipeline (a MULTI's queue or a single command).
func queueCmd(ctx context.Context, p redis.Pipeliner, c kvCmd) {
	switch c.op {
	case "set":
		p.Set(ctx, kvKey(c.key), c.val, 0)
	case "incr":
		p.Incr(ctx, kvKey(c.key))
	default:
		p.Get(ctx, kvKey(c.key))
	}
}

// replyOf reads one command's reply; a GET of an absent key is not an
// error.
func replyOf(c kvCmd, cmd redis.Cmder) (kvReply, error) {
	switch c.op {
	case "set":
		return kvReply{}, cmd.Err()
	case "incr":
		v, err := cmd.(*redis.IntCmd).Result()
		return kvReply{val: v}, err
	default:
		v, err := cmd.(*redis.StringCmd).Int64()
		if errors.Is(err, redis.Nil) {
			return kvReply{}, nil
		}
		return kvReply{ok: err == nil, val: v}, err
	}
}

// TestTxLinearizable records a history of single SET/GET/INCR commands and
// MULTI/EXEC blocks of two to four of them over three keys, sent by clients
// spread over three instances, and checks it against the model in which an
// EXEC is one atomic step.
func TestTxLinearizable(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const workers, ops = 6, 40
		deadline := time.Now().Add(10 * time.Second)
		start := time.Now()
		var mu sync.Mutex
		var history []porcupine.Operation
		var fails firstErrors
		var execs atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 15))
				c := cs[w%len(cs)]
				for range ops {
					if fails.stopped() || time.Now().After(deadline) {
						return
					}
					in := kvInput{cmds: []kvCmd{randomCmd(rng)}}
					if rng.IntN(2) == 0 {
						in.multi = true
						for range 1 + rng.IntN(3) {
							in.cmds = append(in.cmds, randomCmd(rng))
						}
					}
					call := time.Since(start).Nanoseconds()
					var cmds []redis.Cmder
					var err error
					if in.multi {
						cmds, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
							for _, cmd := range in.cmds {
								queueCmd(ctx, p, cmd)
							}
							return nil
						})
					} else {
						cmds, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
							queueCmd(ctx, p, in.cmds[0])
							return nil
						})
					}
					ret := time.Since(start).Nanoseconds()
					// A pipeline's error is its first failed command's, and a
					// GET of an absent key "fails" with redis.Nil: read each
					// command's own outcome instead.
					if gaveUp(err) {
						continue // it did not happen
					}
					if err != nil && !errors.Is(err, redis.Nil) {
						// An errored operation may or may not have happened,
						// which this model cannot express: none is expected.
						fails.add("client %d on instance %d: %s: %v", w, w%len(cs), kvModel.DescribeOperation(in, kvOutput{}), err)
						return
					}
					if len(cmds) != len(in.cmds) {
						fails.add("client %d: %d replies for %d commands", w, len(cmds), len(in.cmds))
						return
					}
					out := make(kvOutput, len(in.cmds))
					for i, cmd := range in.cmds {
						r, err := replyOf(cmd, cmds[i])
						if err != nil {
							fails.add("client %d on instance %d: %s: %v", w, w%len(cs), kvModel.DescribeOperation(in, kvOutput{}), err)
							return
						}
						out[i] = r
					}
					if in.multi {
						execs.Add(1)
					}
					mu.Lock()
					history = append(history, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		fails.require(t)
		require.Positive(t, execs.Load(), "no EXEC in the history")

		res, info := porcupine.CheckOperationsVerbose(kvModel, history, 60*time.Second)
		if res != porcupine.Ok {
			// The visualization outlives the test, for a person to open.
			if f, err := os.CreateTemp("", "redamo-tx-linearizability-*.html"); err == nil {
				_ = f.Close()
				if err := porcupine.VisualizePath(kvModel, info, f.Name()); err == nil {
					t.Logf("visualization: %s", f.Name())
				}
			}
			// The operations, in call order, for the log.
			sorted := append([]porcupine.Operation(nil), history...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
			var b strings.Builder
			for _, op := range sorted {
				fmt.Fprintf(&b, "  [%8.3f ms .. %8.3f ms] client %d: %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6,
					op.ClientId, kvModel.DescribeOperation(op.Input, op.Output))
			}
			t.Logf("history:\n%s", b.String())
		}
		require.Equal(t, porcupine.Ok, res, "history of %d operations (%d EXECs) is not linearizable", len(history), execs.Load())
		t.Logf("%d operations, %d of them EXECs: linearizable", len(history), execs.Load())
	})
}

// The model must reject what a non-atomic EXEC produces, or the check above
// proves nothing: a reader that sees half of a two-key EXEC, and a command
// inside an EXEC that misses an earlier write of the same EXEC. This needs
// no DynamoDB.
func TestTxModelRejectsTornExec(t *testing.T) {
	op := func(client int, call, ret int64, in kvInput, out kvOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	write := kvInput{multi: true, cmds: []kvCmd{{op: "set", key: 0, val: 1}, {op: "set", key: 1, val: 1}}}
	read := kvInput{multi: true, cmds: []kvCmd{{op: "get", key: 0}, {op: "get", key: 1}}}
	for _, tc := range []struct {
		name string
		out  kvOutput
		ok   bool
	}{
		{"before", kvOutput{{}, {}}, true},
		{"after", kvOutput{{ok: true, val: 1}, {ok: true, val: 1}}, true},
		{"torn", kvOutput{{ok: true, val: 1}, {}}, false},
		{"torn the other way", kvOutput{{}, {ok: true, val: 1}}, false},
	} {
		h := []porcupine.Operation{op(0, 0, 10, write, kvOutput{{}, {}}), op(1, 5, 20, read, tc.out)}
		require.Equal(t, tc.ok, porcupine.CheckOperations(kvModel, h), tc.name)
	}

	own := kvInput{multi: true, cmds: []kvCmd{{op: "set", key: 2, val: 5}, {op: "incr", key: 2}, {op: "get", key: 2}}}
	require.True(t, porcupine.CheckOperations(kvModel, []porcupine.Operation{op(0, 0, 1, own, kvOutput{{}, {val: 6}, {ok: true, val: 6}})}))
	require.False(t, porcupine.CheckOperations(kvModel, []porcupine.Operation{op(0, 0, 1, own, kvOutput{{}, {val: 1}, {ok: true, val: 1}})}))
}

// gaveUp reports whether err is redamo's reply to a command or EXEC that
// kept losing races to other writers until its bounded retries ran out: a
// legitimate outcome under contention, after which nothing was written.
func gaveUp(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN concurrent update conflict")
}
