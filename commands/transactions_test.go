package commands_test

// Server tests of MULTI, EXEC, DISCARD, WATCH and UNWATCH over real TCP with
// go-redis, for what the compat case files (compat/testdata/transactions.txt,
// one connection per server) cannot express: a second connection, a second
// instance on the same store, and concurrency.
//
// Every test runs first against a real redis-server (skipped when none is
// installed), which proves that what it expects is Redis's behaviour, then
// against redamo on every backend. For redamo, "another instance" is a
// second server in this process on the same store: it shares nothing with
// the first but the store, as two redamo processes on one table share
// nothing but the table. Against redis-server both are the same server.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/model"
)

// txPair is where a transaction test connects: two instances serving the
// same data (one and the same address for redis-server).
type txPair struct {
	a, b string
	// redamo is false for redis-server.
	redamo bool
}

// forEachTxServer runs f against redis-server, then against redamo on each
// backend with two instances on one store.
func forEachTxServer(t *testing.T, f func(t *testing.T, p txPair)) {
	t.Helper()
	forEachTxServerOn(t, testserver.Stores(t), f)
}

// forEachTxServerOn is forEachTxServer on the given backends (the tests
// across instances take testserver.Instances).
func forEachTxServerOn(t *testing.T, backends []testserver.Backend, f func(t *testing.T, p txPair)) {
	t.Helper()
	t.Run("redis-server", func(t *testing.T) {
		addr := testserver.RedisServer(t)
		f(t, txPair{a: addr, b: addr})
	})
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			f(t, txPair{a: b.Start(t).Addr, b: b.Start(t).Addr, redamo: true})
		})
	}
}

// txClient is a go-redis client (a pool) for addr, closed when the test
// ends; proto 0 is go-redis's default (RESP3).
func txClient(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1, PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// txConn is one dedicated connection: MULTI's queue and the WATCH set belong
// to a connection, so a transaction must not be spread over a pool.
func txConn(t *testing.T, addr string, proto int) *redis.Conn {
	t.Helper()
	conn := txClient(t, addr, proto).Conn()
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// txDo sends one command on a connection and returns go-redis's reading of
// the reply: a null is redis.Nil, a null inside an array is nil, an error
// inside an array is an error value.
func txDo(conn *redis.Conn, args ...any) (any, error) {
	ctx := context.Background()
	c := redis.NewCmd(ctx, args...)
	_ = conn.Process(ctx, c)
	return c.Result()
}

// txMust sends one command that must not fail and returns its reply.
func txMust(t *testing.T, conn *redis.Conn, args ...any) any {
	t.Helper()
	v, err := txDo(conn, args...)
	require.NoError(t, err, "%v", args)
	return v
}

// txRun sends one command that must not fail; a null reply is fine.
func txRun(t *testing.T, conn *redis.Conn, args ...any) {
	t.Helper()
	_, err := txDo(conn, args...)
	if !errors.Is(err, redis.Nil) {
		require.NoError(t, err, "%v", args)
	}
}

// txQueue sends MULTI and then each command, requiring +OK and +QUEUED.
func txQueue(t *testing.T, conn *redis.Conn, cmds ...[]any) {
	t.Helper()
	require.Equal(t, "OK", txMust(t, conn, "MULTI"))
	for _, c := range cmds {
		require.Equal(t, "QUEUED", txMust(t, conn, c...), "%v", c)
	}
}

// txCmd builds one command line for txQueue.
func txCmd(args ...any) []any { return args }

// txRequireAborted checks that EXEC replied null (a watched key changed).
func txRequireAborted(t *testing.T, conn *redis.Conn, msgAndArgs ...any) {
	t.Helper()
	v, err := txDo(conn, "EXEC")
	require.ErrorIs(t, err, redis.Nil, append([]any{"EXEC replied %v, want the null reply"}, append([]any{v}, msgAndArgs...)...)...)
}

// txRequireExec checks that EXEC ran and returns its replies.
func txRequireExec(t *testing.T, conn *redis.Conn, msgAndArgs ...any) []any {
	t.Helper()
	v, err := txDo(conn, "EXEC")
	require.NoError(t, err, msgAndArgs...)
	out, ok := v.([]any)
	require.True(t, ok, "EXEC replied %T %v, want an array", v, v)
	return out
}

// txGet returns a string key's value, or "<nil>" when absent.
func txGet(t *testing.T, conn *redis.Conn, key string) string {
	t.Helper()
	v, err := txDo(conn, "GET", key)
	if errors.Is(err, redis.Nil) {
		return "<nil>"
	}
	require.NoError(t, err)
	return v.(string)
}

// The basics over both protocols: +OK and +QUEUED while queueing, EXEC's
// array of replies (runtime errors in place), EXECABORT after a queue-time
// error, DISCARD.
func TestTxQueueAndExecOverTCP(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		for _, proto := range []int{2, 3} {
			t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
				c := txConn(t, p.a, proto)
				txMust(t, c, "FLUSHALL")

				txQueue(t, c, txCmd("SET", "k", "v"), txCmd("INCR", "n"), txCmd("GET", "k"), txCmd("INCR", "k"), txCmd("SADD", "s", "x"), txCmd("BLPOP", "nolist", 0))
				got := txRequireExec(t, c)
				require.Len(t, got, 6)
				require.Equal(t, []any{"OK", int64(1), "v"}, got[:3])
				require.EqualError(t, got[3].(error), "ERR value is not an integer or out of range")
				require.Equal(t, int64(1), got[4])
				require.Nil(t, got[5], "BLPOP inside MULTI does not block: its timeout reply")

				txQueue(t, c, txCmd("SET", "k", "v2"))
				_, err := txDo(c, "SET", "k")
				require.EqualError(t, err, "ERR wrong number of arguments for 'set' command")
				_, err = txDo(c, "EXEC")
				require.EqualError(t, err, "EXECABORT Transaction discarded because of previous errors.")
				require.Equal(t, "v", txGet(t, c, "k"))

				txQueue(t, c, txCmd("SET", "k", "v3"))
				require.Equal(t, "OK", txMust(t, c, "DISCARD"))
				require.Equal(t, "v", txGet(t, c, "k"))
				_, err = txDo(c, "EXEC")
				require.EqualError(t, err, "ERR EXEC without MULTI")

				// Empty EXEC; EXEC's null after a broken WATCH in this protocol.
				txQueue(t, c)
				require.Empty(t, txRequireExec(t, c))
				require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
				txMust(t, c, "SET", "k", "changed")
				txQueue(t, c, txCmd("SET", "j", "v"))
				txRequireAborted(t, c)
			})
		}
	})
}

// Queued commands are invisible to everyone until EXEC, and they run
// against the data as it is at EXEC, not as it was when they were queued.
func TestTxQueuedCommandsRunAtExec(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		c := txConn(t, p.a, 0)
		other := txConn(t, p.b, 0)
		txMust(t, c, "FLUSHALL")

		txQueue(t, c, txCmd("SET", "k", "v"), txCmd("GET", "seen"), txCmd("BLPOP", "l", 0), txCmd("INCR", "n"))
		require.Equal(t, "<nil>", txGet(t, other, "k"), "a queued SET is not visible before EXEC")
		txMust(t, other, "SET", "seen", "late")
		txMust(t, other, "RPUSH", "l", "a")
		txMust(t, other, "SET", "n", "41")
		got := txRequireExec(t, c)
		require.Equal(t, []any{"OK", "late", []any{"l", "a"}, int64(42)}, got)
		require.Equal(t, "v", txGet(t, other, "k"))
		require.EqualValues(t, 0, txMust(t, other, "EXISTS", "l"))
	})
}

// A connection that closes inside MULTI runs nothing, and its watched keys
// die with it.
func TestTxConnectionCloseDiscards(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		rdb := txClient(t, p.b, 0)
		ctx := context.Background()
		require.NoError(t, rdb.FlushAll(ctx).Err())

		c := txClient(t, p.a, 0).Conn()
		txQueue(t, c, txCmd("SET", "k", "v"))
		require.NoError(t, c.Close())
		// Nothing may ever appear: wait a little in case a server ran it late.
		time.Sleep(100 * time.Millisecond)
		require.ErrorIs(t, rdb.Get(ctx, "k").Err(), redis.Nil)
	})
}

// txWrite is what another client does between WATCH and EXEC.
type txWrite struct {
	name string
	cmds [][]any
	// aborts: EXEC must reply null; otherwise it must commit.
	aborts bool
}

// WATCH k, then another connection (through the other instance) does
// something: EXEC is null exactly when Redis says the key was touched.
func TestTxWatchBrokenByAnotherConnection(t *testing.T) {
	writes := []txWrite{
		{"set", [][]any{{"SET", "k", "2"}}, true},
		{"set same value", [][]any{{"SET", "k", "1"}}, true},
		{"incr", [][]any{{"INCR", "k"}}, true},
		{"incrby 0", [][]any{{"INCRBY", "k", 0}}, true},
		{"append", [][]any{{"APPEND", "k", "x"}}, true},
		{"del", [][]any{{"DEL", "k"}}, true},
		{"unlink", [][]any{{"UNLINK", "k"}}, true},
		{"getdel", [][]any{{"GETDEL", "k"}}, true},
		{"expire", [][]any{{"EXPIRE", "k", 100}}, true},
		{"rename away", [][]any{{"RENAME", "k", "k2"}}, true},
		{"rename onto", [][]any{{"SET", "src", "x"}, {"RENAME", "src", "k"}}, true},
		{"move", [][]any{{"MOVE", "k", 1}}, true},
		{"copy onto", [][]any{{"SET", "src", "x"}, {"COPY", "src", "k", "REPLACE"}}, true},
		{"flushall", [][]any{{"FLUSHALL"}}, true},
		{"flushdb", [][]any{{"FLUSHDB"}}, true},
		{"set then restore", [][]any{{"SET", "k", "2"}, {"SET", "k", "1"}}, true},

		{"nothing", nil, false},
		{"get", [][]any{{"GET", "k"}, {"EXISTS", "k"}, {"TTL", "k"}, {"STRLEN", "k"}}, false},
		{"failed setnx", [][]any{{"SET", "k", "2", "NX"}}, false},
		{"other key", [][]any{{"SET", "other", "2"}, {"DEL", "other"}}, false},
		{"persist without ttl", [][]any{{"PERSIST", "k"}}, false},
		{"same key in db 1", [][]any{{"SELECT", 1}, {"SET", "k", "2"}, {"DEL", "k"}, {"SELECT", 0}}, false},
		{"flushdb of db 1", [][]any{{"SELECT", 1}, {"SET", "k", "2"}, {"FLUSHDB"}, {"SELECT", 0}}, false},
	}
	forEachTxServer(t, func(t *testing.T, p txPair) {
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				c := txConn(t, p.a, 0)
				other := txConn(t, p.b, 0)
				txMust(t, c, "FLUSHALL")
				txMust(t, c, "SET", "k", "1")

				require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
				for _, args := range w.cmds {
					txRun(t, other, args...)
				}
				txQueue(t, c, txCmd("SET", "j", "done"))
				if w.aborts {
					txRequireAborted(t, c)
					require.Equal(t, "<nil>", txGet(t, other, "j"))
				} else {
					require.Equal(t, []any{"OK"}, txRequireExec(t, c))
					require.Equal(t, "done", txGet(t, other, "j"))
				}
				// EXEC forgot the watch either way: the next one commits.
				txMust(t, other, "SET", "k", "again")
				txQueue(t, c, txCmd("SET", "j2", "done"))
				require.Equal(t, []any{"OK"}, txRequireExec(t, c))
			})
		}
	})
}

// A watched key that does not exist: creating it (even if it is deleted
// again before EXEC) breaks the watch; deleting the absent key does not.
func TestTxWatchAbsentKeyAcrossConnections(t *testing.T) {
	writes := []txWrite{
		{"created", [][]any{{"SET", "k", "v"}}, true},
		{"created and deleted", [][]any{{"SET", "k", "v"}, {"DEL", "k"}}, true},
		{"created and deleted by GETDEL", [][]any{{"SET", "k", "v"}, {"GETDEL", "k"}}, true},
		{"getdel of the absent key", [][]any{{"GETDEL", "k"}}, false},
		{"created with expiry", [][]any{{"SET", "k", "v", "PX", 60000}}, true},
		{"list created", [][]any{{"RPUSH", "k", "a"}}, true},
		{"nothing", nil, false},
		{"del of the absent key", [][]any{{"DEL", "k"}}, false},
		{"read", [][]any{{"GET", "k"}, {"LRANGE", "k", 0, -1}}, false},
		{"flushall", [][]any{{"SET", "other", "x"}, {"FLUSHALL"}}, false},
	}
	forEachTxServer(t, func(t *testing.T, p txPair) {
		for _, w := range writes {
			t.Run(w.name, func(t *testing.T) {
				c := txConn(t, p.a, 0)
				other := txConn(t, p.b, 0)
				txMust(t, c, "FLUSHALL")
				require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
				for _, args := range w.cmds {
					txRun(t, other, args...)
				}
				txQueue(t, c, txCmd("SET", "j", "done"))
				if w.aborts {
					txRequireAborted(t, c)
				} else {
					require.Equal(t, []any{"OK"}, txRequireExec(t, c))
				}
			})
		}
	})
}

// A watched key is a (db, key) pair, whichever db each connection has
// selected.
func TestTxWatchAcrossDatabases(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		c := txConn(t, p.a, 0)
		other := txConn(t, p.b, 0)
		txMust(t, c, "FLUSHALL")

		// Watched in db 1, written in db 0: commits.
		txMust(t, c, "SELECT", 1)
		require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
		txMust(t, other, "SET", "k", "db0")
		txQueue(t, c, txCmd("SET", "j", "v"))
		require.Equal(t, []any{"OK"}, txRequireExec(t, c))

		// Watched in db 1, written in db 1: aborts.
		require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
		txMust(t, other, "SELECT", 1)
		txMust(t, other, "SET", "k", "db1")
		txQueue(t, c, txCmd("SET", "j", "v2"))
		txRequireAborted(t, c)
		require.Equal(t, "v", txGet(t, other, "j"))

		// Watched in db 1, then the watcher moves to db 0: still db 1's key.
		require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
		txMust(t, c, "SELECT", 0)
		txMust(t, other, "SET", "k", "db1 again")
		txQueue(t, c, txCmd("SET", "j", "v3"))
		txRequireAborted(t, c)
		require.Equal(t, "<nil>", txGet(t, c, "j"))
	})
}

// A key alive at WATCH that expires before EXEC breaks the watch, even if
// no client touches it; a key that had expired before WATCH does not.
func TestTxWatchExpiryAcrossInstances(t *testing.T) {
	forEachTxServerOn(t, testserver.Instances(t), func(t *testing.T, p txPair) {
		c := txConn(t, p.a, 0)
		other := txConn(t, p.b, 0)
		txMust(t, c, "FLUSHALL")

		// The key must still be alive when WATCH runs, which a busy
		// machine may not get to within a short expiry: PTTL after
		// WATCH proves it was, else the try is made again with a
		// longer one.
		for px := 150 * time.Millisecond; ; px *= 2 {
			require.Less(t, px, time.Minute, "WATCH never ran before the key expired")
			set := time.Now()
			txMust(t, other, "SET", "k", "v", "PX", px.Milliseconds())
			require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
			if txMust(t, c, "PTTL", "k").(int64) > 0 {
				time.Sleep(2 * px)
				break
			}
			require.GreaterOrEqual(t, time.Since(set), px, "the key expired before its PX")
			require.Equal(t, "OK", txMust(t, c, "UNWATCH"))
		}
		txQueue(t, c, txCmd("SET", "j", "v"))
		txRequireAborted(t, c)

		txMust(t, other, "SET", "k", "v", "PX", 10)
		time.Sleep(50 * time.Millisecond)
		require.Equal(t, "OK", txMust(t, c, "WATCH", "k"))
		txQueue(t, c, txCmd("SET", "j", "v"))
		require.Equal(t, []any{"OK"}, txRequireExec(t, c))
	})
}

// go-redis's optimistic-locking idiom (Watch + TxPipelined, retried on
// TxFailedErr) through two instances: concurrent read-modify-write
// increments lose nothing, and a change made inside the callback by another
// client makes the transaction fail with TxFailedErr.
func TestTxWatchOptimisticIncrements(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		ctx := context.Background()
		clients := []*redis.Client{txClient(t, p.a, 0), txClient(t, p.b, 2)}
		require.NoError(t, clients[0].FlushAll(ctx).Err())

		// The change inside the callback.
		err := clients[0].Watch(ctx, func(tx *redis.Tx) error {
			if err := tx.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if err := clients[1].Set(ctx, "k", "theirs", 0).Err(); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Set(ctx, "k", "mine", 0)
				return nil
			})
			return err
		}, "k")
		require.ErrorIs(t, err, redis.TxFailedErr)
		require.Equal(t, "theirs", clients[0].Get(ctx, "k").Val())

		const workers, each = 8, 15
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		conflicts := 0
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rdb := clients[w%2]
				for range each {
					for attempt := 0; ; attempt++ {
						if attempt == 1000 {
							mu.Lock()
							errs = append(errs, fmt.Errorf("worker %d: no commit after 1000 attempts", w))
							mu.Unlock()
							return
						}
						err := rdb.Watch(ctx, func(tx *redis.Tx) error {
							n, err := tx.Get(ctx, "counter").Int()
							if err != nil && !errors.Is(err, redis.Nil) {
								return err
							}
							_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
								pipe.Set(ctx, "counter", n+1, 0)
								return nil
							})
							return err
						}, "counter")
						if errors.Is(err, redis.TxFailedErr) {
							mu.Lock()
							conflicts++
							mu.Unlock()
							continue
						}
						if err != nil {
							mu.Lock()
							errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
							mu.Unlock()
							return
						}
						break
					}
				}
			}()
		}
		wg.Wait()
		require.Empty(t, errs)
		n, err := clients[1].Get(ctx, "counter").Int()
		require.NoError(t, err)
		require.Equal(t, workers*each, n, "a committed increment was lost (%d conflicts retried)", conflicts)
		t.Logf("%d increments, %d conflicts retried", workers*each, conflicts)
	})
}

// Without WATCH, an EXEC is still one atomic step: concurrent
// MULTI/INCR/INCR/GET/EXEC through two instances each see their two
// increments back to back, and readers never see half of a transfer.
// TestTxReadOnlyExecUnderWrites: on AWS a TransactGetItems is canceled by
// any write in flight on its items, so while clients INCR a key on and on
// a read-only EXEC (or EVAL_RO) of it never gets its snapshot, and a
// second reading of plain reads always finds the counter changed. Such a
// read still answers: it reads the counter alone, between the readings of
// the other keys (only on the faithful store: DynamoDB Local never
// cancels a TransactGetItems).
func TestTxReadOnlyExecUnderWrites(t *testing.T) {
	b := testserver.Faithful(t, 7)
	a, z := b.Start(t), b.Start(t)
	ctx := context.Background()
	require.NoError(t, a.Client(t).MSet(ctx, "k", 0, "j", 0).Err())
	writer := a.Client(t)
	stop := make(chan struct{})
	var writers sync.WaitGroup
	var writeErrs atomic.Int64
	for range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := writer.Incr(ctx, "k").Err(); err != nil {
					writeErrs.Add(1)
				}
			}
		}()
	}
	defer func() {
		close(stop)
		writers.Wait()
		require.Zero(t, writeErrs.Load())
	}()
	conn := z.Client(t).Conn()
	t.Cleanup(func() { _ = conn.Close() })
	for _, r := range []struct {
		name string
		read func() (any, error)
	}{
		{"EXEC", func() (any, error) {
			txQueue(t, conn, txCmd("GET", "k"), txCmd("GET", "j"))
			return txDo(conn, "EXEC")
		}},
		{"EVAL_RO", func() (any, error) {
			return txDo(conn, "EVAL_RO", "return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}", 2, "k", "j")
		}},
	} {
		last := int64(-1)
		for i := range 10 {
			v, err := r.read()
			require.NoError(t, err, "read-only %s %d", r.name, i)
			n, err := strconv.ParseInt(v.([]any)[0].(string), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, last, "%s %d read k going back", r.name, i)
			last = n
		}
	}
	t.Logf("EXEC requests %v, EVAL_RO requests %v", opsFor(b.Stats, "exec"), opsFor(b.Stats, "eval_ro"))
}

func TestTxExecIsAtomicWithoutWatch(t *testing.T) {
	forEachTxServer(t, func(t *testing.T, p txPair) {
		ctx := context.Background()
		require.NoError(t, txClient(t, p.a, 0).FlushAll(ctx).Err())
		const workers, each = 6, 15
		const total = 1000
		require.NoError(t, txClient(t, p.a, 0).MSet(ctx, "a", total, "b", 0).Err())

		var wg sync.WaitGroup
		var mu sync.Mutex
		var problems []string
		report := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			if len(problems) < 20 {
				problems = append(problems, fmt.Sprintf(format, args...))
			}
		}
		done := make(chan struct{})
		var writers sync.WaitGroup
		// Connections are opened here: t's helpers are not for goroutines.
		writerConns := make([]*redis.Conn, workers)
		for w := range writerConns {
			addr := p.a
			if w%2 == 1 {
				addr = p.b
			}
			writerConns[w] = txConn(t, addr, 2+w%2)
		}
		readerConns := []*redis.Conn{txConn(t, p.b, 0), txConn(t, p.a, 2)}
		for w := range workers {
			writers.Add(1)
			go func() {
				defer writers.Done()
				c := writerConns[w]
				for i := range each {
					if err := func() error {
						if _, err := txDo(c, "MULTI"); err != nil {
							return err
						}
						for _, args := range [][]any{{"INCR", "c"}, {"INCR", "c"}, {"GET", "c"}, {"DECRBY", "a", 7}, {"INCRBY", "b", 7}} {
							if _, err := txDo(c, args...); err != nil {
								return err
							}
						}
						v, err := txDo(c, "EXEC")
						if err != nil {
							return err
						}
						r, ok := v.([]any)
						if !ok || len(r) != 5 {
							return fmt.Errorf("EXEC replied %v", v)
						}
						first, _ := r[0].(int64)
						if r[1] != first+1 || r[2] != strconv.FormatInt(first+1, 10) {
							return fmt.Errorf("EXEC replied %v: another client's INCR ran inside the transaction", r)
						}
						return nil
					}(); err != nil {
						report("writer %d, transaction %d: %v", w, i, err)
						return
					}
				}
			}()
		}
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := readerConns[r]
				for {
					select {
					case <-done:
						return
					default:
					}
					// MULTI GET GET EXEC, not MGET: MGET is linearizable per
					// key, but on DynamoDB its BatchGetItem is no snapshot of
					// both (README, Transactions).
					if _, err := txDo(c, "MULTI"); err != nil {
						report("reader %d: MULTI: %v", r, err)
						return
					}
					_, _ = txDo(c, "GET", "a")
					_, _ = txDo(c, "GET", "b")
					v, err := txDo(c, "EXEC")
					if err != nil {
						report("reader %d: EXEC: %v", r, err)
						return
					}
					if got, ok := v.([]any); !ok || len(got) != 2 || txAtoi(got[0])+txAtoi(got[1]) != total {
						report("reader %d: MULTI GET a GET b EXEC = %v", r, v)
					}
				}
			}()
		}
		writers.Wait()
		close(done)
		wg.Wait()
		require.Empty(t, problems)
		rdb := txClient(t, p.b, 0)
		require.Equal(t, strconv.Itoa(2*workers*each), rdb.Get(ctx, "c").Val())
		require.Equal(t, strconv.Itoa(total-7*workers*each), rdb.Get(ctx, "a").Val())
		require.Equal(t, strconv.Itoa(7*workers*each), rdb.Get(ctx, "b").Val())
	})
}

// txAtoi reads a reply that should be a decimal string; anything else is a
// value no sum can reach.
func txAtoi(v any) int {
	s, ok := v.(string)
	if !ok {
		return -1 << 40
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1 << 40
	}
	return n
}

// TestTxExecFaults injects DynamoDB failures into each request an EXEC
// makes: a failed read or commit ends EXEC with the store's error and
// writes nothing; a commit that loses its race runs the commands again;
// one that keeps losing gives up with a conflict error, writing nothing.
func TestTxExecFaults(t *testing.T) {
	throttled := fmt.Errorf("injected: %w", dynastore.ErrThrottled)
	canceled := &dynastore.TxCanceledError{Reasons: []dynastore.TxReason{
		{Code: dynastore.ReasonConditionalFailed}, {Code: dynastore.ReasonNone},
	}}
	cases := []struct {
		name  string
		fail  func(mem *memory.Store)
		reply string // EXEC's error, "" for success
		want  string // a's value afterwards
	}{
		{"read fails", func(mem *memory.Store) {
			mem.FailNext(dynastore.OpBatchGetItem, fmt.Errorf("injected: %w", dynastore.ErrUnavailable))
		}, commands.MsgUnavailable, "1"},
		{"commit throttled", func(mem *memory.Store) {
			mem.FailNext(dynastore.OpTransactWriteItems, throttled)
		}, commands.MsgTryAgain, "1"},
		{"commit loses one race", func(mem *memory.Store) {
			mem.FailNext(dynastore.OpTransactWriteItems, canceled)
		}, "", "2"},
		{"commit keeps losing", func(mem *memory.Store) {
			// More lost races than fit in the (shortened) retry budget.
			for range 200 {
				mem.FailNext(dynastore.OpTransactWriteItems, canceled)
			}
		}, commands.MsgConflict, "1"},
	}
	defer model.SetRetryBudget(model.SetRetryBudget(100 * time.Millisecond))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New(memory.Options{})
			addr := testserver.Start(t, mem).Addr
			c := txConn(t, addr, 2)
			txRun(t, c, "SET", "a", "1")
			tc.fail(mem)
			txQueue(t, c, txCmd("INCR", "a"), txCmd("SET", "b", "x"))
			_, err := txDo(c, "EXEC")
			if tc.reply == "" {
				require.NoError(t, err)
				require.Equal(t, "x", txGet(t, c, "b"))
			} else {
				require.EqualError(t, err, tc.reply)
				require.Equal(t, "<nil>", txGet(t, c, "b"), "a failed EXEC writes nothing")
			}
			require.Equal(t, tc.want, txGet(t, c, "a"))
			// The connection is out of MULTI either way.
			require.Equal(t, "PONG", txMust(t, c, "PING"))
		})
	}
}

// TestTxTooLarge: an EXEC whose commit would exceed DynamoDB's 100 items
// fails with an error naming the limit and writes nothing, on every
// backend; one of exactly 100 items commits.
func TestTxTooLarge(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := txConn(t, b.Start(t).Addr, 2)
			for _, n := range []int{101, 100} {
				cmds := make([][]any, n)
				for i := range cmds {
					cmds[i] = txCmd("SET", fmt.Sprintf("big%d:%d", n, i), "v")
				}
				txQueue(t, c, cmds...)
				_, err := txDo(c, "EXEC")
				if n > 100 {
					require.EqualError(t, err, commands.MsgTxTooLarge)
					require.Equal(t, "<nil>", txGet(t, c, "big101:0"))
					continue
				}
				require.NoError(t, err)
				require.Equal(t, "v", txGet(t, c, "big100:99"))
			}
		})
	}
}

// TestTxExecRequests counts the DynamoDB requests of typical EXECs: a
// transaction's writes are one request (one conditional write when there
// is one), blind writes read nothing, the keys a transaction reads are read
// in one request, and one that only reads is one snapshot.
func TestTxExecRequests(t *testing.T) {
	ctx := context.Background()
	stats := dynastore.NewStats()
	srv := testserver.Start(t, memory.New(memory.Options{Observer: stats}), testserver.WithStats(stats))
	c := srv.Client(t)
	for _, tc := range []struct {
		name string
		cmds [][]any
		want map[string]int64
	}{
		{"one blind write", [][]any{{"SET", "a", "1"}}, map[string]int64{dynastore.OpPutItem: 1}},
		{"blind writes", [][]any{{"SET", "a", "1"}, {"SET", "b", "2"}}, map[string]int64{dynastore.OpTransactWriteItems: 1}},
		{"blind writes of several keys", [][]any{{"MSET", "a", "1", "b", "2"}, {"SET", "c", "3"}}, map[string]int64{dynastore.OpTransactWriteItems: 1}},
		{"one command is as outside a transaction", [][]any{{"INCR", "a"}}, map[string]int64{dynastore.OpUpdateItem: 1}},
		{"reads in one request", [][]any{{"INCR", "a"}, {"INCR", "b"}}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		{"a blind write after a read", [][]any{{"INCR", "a"}, {"SET", "c", "x"}}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		{"only reads", [][]any{{"GET", "a"}, {"GET", "b"}}, map[string]int64{dynastore.OpTransactGetItems: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := stats.Snapshot()
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, cmd := range tc.cmds {
					p.Do(ctx, cmd...)
				}
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, tc.want, requestsSince(before, stats.Snapshot(), "exec"))
		})
	}
}
