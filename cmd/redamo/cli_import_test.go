package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/compat"
	"github.com/redamo/redamo/internal/rdb"
)

// startRedis starts a throwaway redis-server for the test.
func startRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	srv, err := compat.StartRedis()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(srv.Stop)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	return c, srv.Addr
}

// fillRedis writes n keys of every type into c, a third with a TTL.
func fillRedis(ctx context.Context, t *testing.T, c *redis.Client, n int) {
	t.Helper()
	p := c.Pipeline()
	for i := range n {
		k := "k:" + strconv.Itoa(i)
		switch i % 6 {
		case 0:
			p.Set(ctx, k, "value "+strconv.Itoa(i), 0)
		case 1:
			p.HSet(ctx, k, "a", i, "b", "x")
		case 2:
			p.RPush(ctx, k, "x", i, strings.Repeat("y", i%100))
		case 3:
			p.SAdd(ctx, k, i, i+1, "m")
		case 4:
			p.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "a"}, redis.Z{Score: 1.5, Member: "b"})
		case 5:
			p.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: "1-1", Values: []any{"f", i}})
		}
		if i%3 == 0 {
			p.PExpire(ctx, k, time.Hour)
		}
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
}

// sameKeys requires b to hold a's keys with the same content and expiry
// (to the second).
func sameKeys(ctx context.Context, t *testing.T, a, b *redis.Client) {
	t.Helper()
	ka, err := a.Keys(ctx, "*").Result()
	require.NoError(t, err)
	kb, err := b.Keys(ctx, "*").Result()
	require.NoError(t, err)
	slices.Sort(ka)
	slices.Sort(kb)
	require.Equal(t, ka, kb)
	for _, k := range ka {
		pa, err := a.Dump(ctx, k).Result()
		require.NoError(t, err)
		pb, err := b.Dump(ctx, k).Result()
		require.NoError(t, err)
		oa, err := rdb.Restore([]byte(pa))
		require.NoError(t, err)
		ob, err := rdb.Restore([]byte(pb))
		require.NoError(t, err)
		require.Equal(t, rdb.Canonical(oa), rdb.Canonical(ob), k)
		ta, tb := a.PTTL(ctx, k).Val(), b.PTTL(ctx, k).Val()
		require.InDelta(t, ta.Seconds(), tb.Seconds(), 60, k)
	}
}

// TestCLIImportExport runs the import and export examples on every path,
// then copies keys of every type from one redis-server into the table and
// from the table into another, which ends up with the same keys, values
// and expiries.
func TestCLIImportExport(t *testing.T) {
	ctx := context.Background()
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			src, srcAddr := startRedis(t)
			dst, dstAddr := startRedis(t)
			dir := t.TempDir()
			run := func(args ...string) (int, string, string) {
				return cliRun(t, nil, append(append(args, p.flags...), "--checkpoint", filepath.Join(dir, "cp.json"))...)
			}
			require.NoError(t, src.Set(ctx, "user:1", "Ada", 0).Err())
			require.NoError(t, src.HSet(ctx, "user:2", "name", "Bob").Err())
			require.NoError(t, src.PExpire(ctx, "user:2", time.Hour).Err())
			require.NoError(t, src.Set(ctx, "other", "x", 0).Err())
			for _, v := range migrateVerbs {
				url := srcAddr
				if v.name == "export" {
					url = dstAddr
				}
				args := strings.Fields(strings.ReplaceAll(v.example, "127.0.0.1:6380", url))
				code, out, errOut := run(args...)
				require.Equal(t, exitOK, code, "redamo %s: %s", v.example, errOut)
				require.Equal(t, v.output+"\n", out, "redamo %s", v.example)
				require.Empty(t, errOut, "redamo %s", v.example)
			}
			require.Equal(t, "Ada", dst.Get(ctx, "user:1").Val())
			require.Equal(t, "Bob", dst.HGet(ctx, "user:2", "name").Val())
			require.InDelta(t, 3600, dst.TTL(ctx, "user:2").Val().Seconds(), 60)
			require.Equal(t, int64(0), dst.Exists(ctx, "other").Val())
			_, err := os.Stat(filepath.Join(dir, "cp.json"))
			require.True(t, errors.Is(err, os.ErrNotExist), "the checkpoint is removed once done")

			// Every type, more than one batch, both ways.
			require.NoError(t, src.FlushAll(ctx).Err())
			require.NoError(t, dst.FlushAll(ctx).Err())
			fillRedis(ctx, t, src, 2500)
			code, out, errOut := run("import", "--from", "redis://"+srcAddr, "--workers", "8")
			require.Equal(t, exitOK, code, errOut)
			require.Equal(t, `{"imported":2500,"skipped":0,"failed":0}`+"\n", out)
			code, out, errOut = run("export", "--to", "redis://"+dstAddr, "--match", "k:*")
			require.Equal(t, exitOK, code, errOut)
			require.Contains(t, out, `"skipped":0,"failed":0}`)
			sameKeys(ctx, t, src, dst)
		})
	}
}

func TestCLIImportUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"import"}, "import needs --from redis://"},
		{[]string{"import", "--from", "http://x"}, `--from "http://x"`},
		{[]string{"export", "--to", "redis://127.0.0.1:1", "--workers", "0"}, "--workers 0: must be positive"},
		{[]string{"import", "--from", "redis://127.0.0.1:1", "--db", "-1"}, "--db -1: must not be negative"},
	} {
		code, _, errOut := cliRun(t, nil, tc.args...)
		require.Equal(t, exitUsage, code, "%v", tc.args)
		require.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}

// fakeSide is a source of batches of keys, or a target that records what
// it was given and can fail once.
type fakeSide struct {
	batches [][]string
	written []string
	failAt  int // the write of this batch fails (0: none)
	writes  int
}

func (f *fakeSide) scan(_ context.Context, cursor, _ string) (string, []string, error) {
	i, _ := strconv.Atoi(cursor)
	next := strconv.Itoa(i + 1)
	if i+1 == len(f.batches) {
		next = "0"
	}
	return next, f.batches[i], nil
}

func (f *fakeSide) read(_ context.Context, keys []string, _ int64) ([]dumped, error) {
	out := make([]dumped, len(keys))
	for i, k := range keys {
		out[i] = dumped{key: k, payload: "p" + k}
	}
	return out, nil
}

func (f *fakeSide) write(_ context.Context, ds []dumped, failed func(key, msg string)) error {
	f.writes++
	if f.writes == f.failAt {
		return errors.New("target lost")
	}
	for _, d := range ds {
		if d.key == "bad" {
			failed(d.key, "ERR Bad data format")
			continue
		}
		f.written = append(f.written, d.key)
	}
	return nil
}

func (f *fakeSide) size(context.Context) int64 { return -1 }

// TestMigrationResumes: a pass that stops at a batch resumes at that batch
// when run again, and counts the keys of both runs.
func TestMigrationResumes(t *testing.T) {
	cp := filepath.Join(t.TempDir(), "cp.json")
	var errOut strings.Builder
	x := &invocation{ctx: context.Background(), cli: &cli{errOut: &errOut}, verb: &migrateVerbs[0]}
	src := &fakeSide{batches: [][]string{{"a", "b"}, {"c", "bad"}, {"d"}}}
	dst := &fakeSide{failAt: 2}
	m := &migration{x: x, src: src, dst: dst, match: "*", id: "pass", checkpoint: cp, countName: "imported"}
	res := m.run()
	require.Error(t, res.err)
	require.Equal(t, []string{"a", "b"}, dst.written)
	b, err := os.ReadFile(cp)
	require.NoError(t, err)
	require.Contains(t, string(b), `"cursor":"1","done":2`)

	res = m.run()
	require.NoError(t, res.err)
	require.Equal(t, exitNo, res.code, "a key was refused")
	require.Equal(t, []string{"a", "b", "c", "d"}, dst.written)
	require.Equal(t, `{"imported":4,"skipped":0,"failed":1}`, fmt.Sprint(jsonOf(res.obj)))
	require.Contains(t, errOut.String(), "resuming the import")
	require.Contains(t, errOut.String(), `"bad" not copied: ERR Bad data format`)
	_, err = os.Stat(cp)
	require.True(t, errors.Is(err, os.ErrNotExist))

	// Another pass's checkpoint is not taken for this one's.
	require.NoError(t, saveCheckpoint(cp, checkpointState{ID: "another", Cursor: "2"}))
	dst.written = nil
	require.NoError(t, m.run().err)
	require.Equal(t, []string{"a", "b", "c", "d"}, dst.written)
}

func jsonOf(o object) string {
	var b bytes.Buffer
	writeJSON(&b, o)
	return b.String()
}
