// Package integration runs several real redamo processes against one shared
// DynamoDB Local table and checks what principle 1 and 2 of DESIGN.md promise:
// instances are interchangeable and every command is atomic and linearizable
// per key across them.
package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redamo-integration")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redamo")
	build := exec.Command("go", "build", "-o", binary, "../cmd/redamo")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building redamo:", err)
		os.Exit(1)
	}
	// A test that leaves a redamo (or any child) running fails the run.
	os.Exit(testproc.Main(m, func() { os.RemoveAll(dir) }))
}

// endpoint returns DynamoDB Local's endpoint, skipping (or failing, in make
// test) when there is none.
func endpoint(t *testing.T) string {
	t.Helper()
	ep := os.Getenv("REDAMO_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		if os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" {
			t.Fatal("REDAMO_TEST_DYNAMODB_ENDPOINT is not set")
		}
		t.Skip("REDAMO_TEST_DYNAMODB_ENDPOINT not set: no DynamoDB Local")
	}
	return ep
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// cluster starts n redamo processes on one fresh table and returns a client
// per instance.
func cluster(t *testing.T, n int) []*redis.Client {
	t.Helper()
	ep := endpoint(t)
	table := fmt.Sprintf("it_%d_%d", time.Now().UnixNano(), rand.IntN(1e6))
	clients := make([]*redis.Client, n)
	for i := range n {
		addr := freeAddr(t)
		args := []string{"--store", "dynamodb", "--endpoint", ep, "--region", "us-east-1",
			"--table", table, "--addr", addr}
		if i == 0 {
			// One instance creates the table; the others start once it exists.
			args = append(args, "--create-table")
		}
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=redamotest", "AWS_SECRET_ACCESS_KEY=redamotest")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		p := testproc.Start(t, cmd)
		// Registered after Start's own kill, so it runs first.
		t.Cleanup(func() {
			require.NoError(t, p.Stop(syscall.SIGTERM, 10*time.Second), "redamo %s should exit 0 on SIGTERM", addr)
		})
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		require.Eventually(t, func() bool {
			return c.Ping(context.Background()).Err() == nil
		}, 20*time.Second, 50*time.Millisecond, "instance %d never answered PING", i)
		clients[i] = c
	}
	return clients
}

func TestClusterIncrExactTotal(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const workers, each = 50, 20
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := cs[w%len(cs)]
				for range each {
					if err := c.Incr(ctx, "counter").Err(); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for _, c := range cs {
			got, err := c.Get(ctx, "counter").Int()
			require.NoError(t, err)
			require.Equal(t, workers*each, got)
		}
	})
}

func TestClusterSetNXOneWinnerPerRound(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const rounds, contenders = 25, 15
		for r := range rounds {
			key := "lock:" + strconv.Itoa(r)
			var wg sync.WaitGroup
			var mu sync.Mutex
			winners := 0
			for i := range contenders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := cs[i%len(cs)].SetNX(ctx, key, "owner"+strconv.Itoa(i), 5*time.Second).Result()
					if err != nil {
						t.Errorf("round %d: %v", r, err)
						return
					}
					if ok {
						mu.Lock()
						winners++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.Equal(t, 1, winners, "round %d", r)
			pttl, err := cs[r%len(cs)].PTTL(ctx, key).Result()
			require.NoError(t, err)
			require.Greater(t, pttl, time.Duration(0), "the lock must carry its expiry")
		}
	})
}

// regInput is one operation of the linearizability check on a single key.
type regInput struct {
	op  string // set, get, incr
	val int64
}

type regOutput struct {
	ok  bool // get: the key existed
	val int64
}

type regState struct {
	exists bool
	val    int64
}

// registerModel is a key holding an integer: SET, GET and INCR.
var registerModel = porcupine.Model{
	Init: func() interface{} { return regState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		next := s
		switch in.op {
		case "set":
			next = regState{exists: true, val: in.val}
		case "incr":
			next = regState{exists: true, val: s.val + 1}
			return out.val == next.val, next
		case "get":
			return out.ok == s.exists && (!s.exists || out.val == s.val), s
		}
		return true, next
	},
	Equal: func(a, b interface{}) bool { return a == b },
}

func TestClusterLinearizable(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const workers, ops = 9, 60
		start := time.Now()
		var mu sync.Mutex
		var history []porcupine.Operation
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 42))
				c := cs[w%len(cs)]
				for range ops {
					in := regInput{}
					switch rng.IntN(3) {
					case 0:
						in = regInput{op: "set", val: rng.Int64N(1000)}
					case 1:
						in = regInput{op: "incr"}
					default:
						in = regInput{op: "get"}
					}
					call := time.Since(start).Nanoseconds()
					var out regOutput
					var err error
					switch in.op {
					case "set":
						err = c.Set(ctx, "reg", in.val, 0).Err()
					case "incr":
						out.val, err = c.Incr(ctx, "reg").Result()
					case "get":
						out.val, err = c.Get(ctx, "reg").Int64()
						out.ok = err == nil
						if errors.Is(err, redis.Nil) {
							err = nil
						}
					}
					ret := time.Since(start).Nanoseconds()
					if err != nil {
						// An errored write may or may not have happened, which
						// this model cannot express: no error is expected here.
						t.Errorf("%s: %v", in.op, err)
						return
					}
					mu.Lock()
					history = append(history, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		res := porcupine.CheckOperationsTimeout(registerModel, history, 60*time.Second)
		require.Equal(t, porcupine.Ok, res, "history of %d operations is not linearizable", len(history))
	})
}
