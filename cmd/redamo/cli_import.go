package main

// redamo import and redamo export: copy keys with their TTLs between a
// running Redis (or anything that speaks DUMP and RESTORE) and the table.
//
// One pass of the source's SCAN: each batch of keys is read with DUMP and
// PTTL (pipelined in one MULTI from Redis, so a key's value and expiry are
// of one moment), then written with RESTORE KEY DEADLINE PAYLOAD REPLACE
// ABSTTL by several workers at once, the deadline being the source's
// expiry as an absolute time. A key that expires or goes in between is
// skipped; a key RESTORE refuses (a module type, a value redamo cannot
// hold) is counted as failed and named on stderr, and the copy goes on.
//
// Resuming: after each batch the SCAN cursor and the counts so far are
// written to a checkpoint file (--checkpoint, by default in the user's
// cache directory, named after the source, the target and the options), and
// removed when the pass completes. A run that finds one starts from its
// cursor. SCAN returns every key that exists for the whole scan, so a pass
// resumed after a crash still copies every such key; a batch cut short is
// restored again, which REPLACE makes harmless. A Redis SCAN cursor is a
// position in that server's hash table and a redamo one lives in the
// table for a day: a checkpoint is for the same source, soon after.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redamo/redamo/commands"
)

var migrateVerbs = []verb{
	{name: "import", group: "migrate", args: "--from URL", minArgs: 0, maxArgs: 0,
		flags:    []string{"from", "match", "db", "workers", "checkpoint", "restart"},
		flagHelp: map[string]string{"db": "the source database to copy (default: the one --from names, else 0)"},
		runs: "on the source, SCAN CURSOR MATCH PATTERN COUNT 1000 and, per batch, MULTI, DUMP and PTTL of each key, EXEC; " +
			"here RESTORE KEY DEADLINE PAYLOAD REPLACE ABSTTL per key",
		summary: "Copy the keys of a running Redis (--from redis://[:password@]host:port[/db]) with their TTLs into the table " +
			"(or the redamo --server names), replacing keys of the same names. Prints the counts; a progress bar on stderr when it is a terminal. " +
			"Interrupted or failed, it resumes where it was when run again with the same arguments (--checkpoint; --restart starts over). " +
			"Exit 1 when some keys could not be restored (named on stderr).",
		example: "import --from redis://127.0.0.1:6380 --match user:*", external: true,
		output: `{"imported":2,"skipped":0,"failed":0}`, value: "imported", build: buildImport},
	{name: "export", group: "migrate", args: "--to URL", minArgs: 0, maxArgs: 0,
		flags:    []string{"to", "match", "db", "workers", "checkpoint", "restart"},
		flagHelp: map[string]string{"db": "the target database to write (default: the one --to names, else 0)"},
		runs: "here SCAN CURSOR MATCH PATTERN COUNT 1000 and, per key, DUMP and PTTL in one script (EVALSHA); " +
			"on the target, per batch, RESTORE KEY DEADLINE PAYLOAD REPLACE ABSTTL of each key (pipelined)",
		summary: "Copy the table's keys (or those of the redamo --server names) with their TTLs to a running Redis " +
			"(--to redis://[:password@]host:port[/db]), replacing keys of the same names. Resumable and reported as import.",
		example: "export --to redis://127.0.0.1:6380 --match user:*", external: true,
		output: `{"exported":2,"skipped":0,"failed":0}`, value: "exported", build: buildExport},
}

func init() {
	verbFlags["from"] = flagDef{name: "from", arg: "URL", usage: "the Redis to copy from: redis://[:password@]host:port[/db] (rediss:// for TLS)"}
	verbFlags["to"] = flagDef{name: "to", arg: "URL", usage: "the Redis to copy to: redis://[:password@]host:port[/db] (rediss:// for TLS)"}
	verbFlags["match"] = flagDef{name: "match", arg: "PATTERN", usage: "only the keys that match PATTERN (a glob, as SCAN's MATCH; default: every key)"}
	verbFlags["workers"] = flagDef{name: "workers", arg: "N", usage: "keys copied at once (default 16)"}
	verbFlags["checkpoint"] = flagDef{name: "checkpoint", arg: "FILE",
		usage: "where the progress of an unfinished pass is kept (default: a file under the user's cache directory named after the arguments)"}
	verbFlags["restart"] = flagDef{name: "restart", isBool: true, usage: "ignore an unfinished pass's checkpoint and start over"}
}

// migrateBatch is how many keys a SCAN call asks for, and so a batch.
const migrateBatch = 1000

// dumped is one key as read from the source: its payload and its expiry
// (Unix ms, 0 for none).
type dumped struct {
	key      string
	payload  string
	expireAt int64
}

// side is one end of a copy.
type side interface {
	// scan is one SCAN call.
	scan(ctx context.Context, cursor, match string) (next string, keys []string, err error)
	// read reads keys with DUMP and PTTL; a key that is gone is left out.
	read(ctx context.Context, keys []string, now int64) ([]dumped, error)
	// write restores ds, calling failed for each key refused; an error is
	// a failure to reach the side.
	write(ctx context.Context, ds []dumped, failed func(key, msg string)) error
	// size is the number of keys, for the progress bar (-1: unknown);
	// asked only when the bar is drawn.
	size(ctx context.Context) int64
}

// migration is one import or export.
type migration struct {
	x        *invocation
	src, dst side
	match    string
	// id names the pass in its checkpoint.
	id         string
	checkpoint string
	restart    bool
	countName  string
}

// checkpointState is what a checkpoint file holds.
type checkpointState struct {
	ID       string `json:"id"`
	Cursor   string `json:"cursor"`
	Done     int64  `json:"done"`
	Skipped  int64  `json:"skipped"`
	Failed   int64  `json:"failed"`
	Modified string `json:"modified"`
}

// redisURL parses a --from or --to URL, with --db over its database.
func redisURL(x *invocation, name string) (*redis.Options, error) {
	u, ok := x.flag(name)
	if !ok || u == "" {
		return nil, usageErr("%s needs --%s redis://[:password@]host:port[/db]", x.verb.name, name)
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		return nil, usageErr("--%s %q: %v (redis://[:password@]host:port[/db])", name, u, err)
	}
	if _, ok := x.flag("db"); ok {
		db, err := x.intFlag("db", 0, false)
		if err != nil {
			return nil, err
		}
		if db < 0 {
			return nil, usageErr("--db %d: must not be negative", db)
		}
		opts.DB = int(db)
	}
	opts.DisableIdentity = true
	opts.Protocol = 2
	return opts, nil
}

func buildImport(x *invocation) (func() result, error) {
	return buildMigration(x, "from", "imported", func(r *redisSide, here side) (side, side) { return r, here })
}

func buildExport(x *invocation) (func() result, error) {
	return buildMigration(x, "to", "exported", func(r *redisSide, here side) (side, side) { return here, r })
}

// buildMigration checks a migration's flags; ends orders the Redis side
// and redamo's as source and target.
func buildMigration(x *invocation, urlFlag, countName string, ends func(r *redisSide, here side) (side, side)) (func() result, error) {
	opts, err := redisURL(x, urlFlag)
	if err != nil {
		return nil, err
	}
	workers, err := x.intFlag("workers", 16, true)
	if err != nil {
		return nil, err
	}
	match, _ := x.flag("match")
	if match == "" {
		match = "*"
	}
	opts.PoolSize = int(workers) + 1
	x.forever = true
	m := &migration{x: x, match: match, restart: x.boolFlag("restart"), countName: countName}
	c := x.cli
	m.id = strings.Join([]string{x.verb.name, opts.Addr, strconv.Itoa(opts.DB), match, c.g.server, c.g.endpoint, c.g.region, c.g.table}, "\x00")
	if p, ok := x.flag("checkpoint"); ok && p != "" {
		m.checkpoint = p
	} else {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		sum := sha1.Sum([]byte(m.id))
		m.checkpoint = filepath.Join(dir, "redamo", x.verb.name+"-"+hex.EncodeToString(sum[:8])+".json")
	}
	return func() result {
		rc := redis.NewClient(opts)
		defer rc.Close()
		r := &redisSide{c: rc, addr: opts.Addr}
		here := &redamoSide{be: c.be, workers: int(workers)}
		if rm, ok := c.be.(*remote); ok {
			// One connection per worker.
			o := *rm.opts
			o.PoolSize = int(workers) + 1
			cl := &remote{rdb: redis.NewClient(&o), opts: &o, addr: rm.addr}
			defer cl.Close()
			here.be = cl
		}
		m.src, m.dst = ends(r, here)
		return m.run()
	}, nil
}

func (m *migration) run() result {
	x := m.x
	ctx := x.ctx
	st := checkpointState{ID: m.id, Cursor: "0"}
	if m.restart {
		_ = os.Remove(m.checkpoint)
	} else if b, err := os.ReadFile(m.checkpoint); err == nil {
		var saved checkpointState
		if json.Unmarshal(b, &saved) == nil && saved.ID == m.id {
			st = saved
			fmt.Fprintf(x.cli.errOut, "redamo: resuming the %s of %s (%d keys copied so far; --restart starts over)\n", x.verb.name, saved.Modified, saved.Done)
		}
	}
	bar := newProgress(x.cli.errOut, st.Done+st.Skipped+st.Failed)
	if bar.on && m.match == "*" {
		bar.total = m.src.size(ctx)
	}
	defer bar.finish()
	var failedShown atomic.Int64
	failed := func(key, msg string) {
		atomic.AddInt64(&st.Failed, 1)
		if failedShown.Add(1) <= 20 {
			bar.clear()
			fmt.Fprintf(x.cli.errOut, "redamo: %q not copied: %s\n", key, msg)
		}
	}
	cursor := st.Cursor
	for {
		next, keys, err := m.src.scan(ctx, cursor, m.match)
		if err != nil {
			return failed2(err)
		}
		ds, err := m.src.read(ctx, keys, time.Now().UnixMilli())
		if err != nil {
			return failed2(err)
		}
		before := st.Failed
		if err := m.dst.write(ctx, ds, failed); err != nil {
			return failed2(err)
		}
		st.Skipped += int64(len(keys) - len(ds))
		st.Done += int64(len(ds)) - (st.Failed - before)
		bar.set(st.Done + st.Skipped + st.Failed)
		if ctx.Err() != nil {
			return failed2(ctx.Err())
		}
		cursor = next
		if cursor == "0" {
			break
		}
		st.Cursor = cursor
		st.Modified = time.Now().UTC().Format(time.RFC3339)
		if err := saveCheckpoint(m.checkpoint, st); err != nil {
			return failed2(&cliError{code: exitStore, msg: "cannot write the checkpoint: " + err.Error()})
		}
	}
	_ = os.Remove(m.checkpoint)
	bar.finish()
	if x.cli.g.verbose {
		fmt.Fprintf(x.cli.errOut, "redamo: %s of %d keys took %s%s\n", x.verb.name, st.Done+st.Skipped+st.Failed,
			time.Since(bar.start).Round(time.Millisecond), x.cli.be.Requests())
	}
	o := object{{m.countName, st.Done}, {"skipped", st.Skipped}, {"failed", st.Failed}}
	if st.Failed > 0 {
		return result{obj: o, code: exitNo, note: fmt.Sprintf("%d keys could not be copied", st.Failed)}
	}
	return answer(o, true)
}

// failed2 is the result of a migration that stopped: its progress is in
// the checkpoint.
func failed2(err error) result {
	var ce *cliError
	if errors.As(err, &ce) {
		return failed(err)
	}
	return failed(&cliError{code: exitStore, msg: err.Error() + " (run it again to resume)"})
}

func saveCheckpoint(path string, st checkpointState) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(st)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// expireAt is the deadline of a key PTTL answered pttl for at now: 0 for
// none, -1 for a key that is gone.
func expireAt(pttl, now int64) int64 {
	switch {
	case pttl == -1:
		return 0
	case pttl < 0:
		return -1
	}
	return now + max(pttl, 1)
}

// ---- Redis -------------------------------------------------------------------------

// redisSide is a running Redis.
type redisSide struct {
	c    *redis.Client
	addr string
}

func (r *redisSide) lost(err error) error {
	return &cliError{code: exitStore, msg: fmt.Sprintf("redis at %s: %v (run it again to resume)", r.addr, err)}
}

func (r *redisSide) scan(ctx context.Context, cursor, match string) (string, []string, error) {
	cur, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint cursor %q: %w", cursor, err)
	}
	keys, next, err := r.c.Scan(ctx, cur, match, migrateBatch).Result()
	if err != nil {
		return "", nil, r.lost(err)
	}
	return strconv.FormatUint(next, 10), keys, nil
}

func (r *redisSide) read(ctx context.Context, keys []string, now int64) ([]dumped, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	dumps := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			dumps[i] = p.Dump(ctx, k)
			ttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, r.lost(err)
	}
	out := make([]dumped, 0, len(keys))
	for i, k := range keys {
		p, err := dumps[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, r.lost(err)
		}
		// go-redis reads PTTL's -1 and -2 as that many nanoseconds.
		d := ttls[i].Val()
		pttl := d.Milliseconds()
		if d < 0 {
			pttl = int64(d)
		}
		at := expireAt(pttl, now)
		if at < 0 {
			continue
		}
		out = append(out, dumped{key: k, payload: p, expireAt: at})
	}
	return out, nil
}

func (r *redisSide) write(ctx context.Context, ds []dumped, failed func(key, msg string)) error {
	if len(ds) == 0 {
		return nil
	}
	cmds := make([]*redis.StatusCmd, len(ds))
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range ds {
			// go-redis's RestoreReplace takes a relative TTL: ABSTTL by hand.
			cmds[i] = redis.NewStatusCmd(ctx, "restore", d.key, d.expireAt, d.payload, "REPLACE", "ABSTTL")
			_ = p.Process(ctx, cmds[i])
		}
		return nil
	})
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		return r.lost(err)
	}
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			if !errors.As(err, &re) {
				return r.lost(err)
			}
			failed(ds[i].key, err.Error())
		}
	}
	return nil
}

func (r *redisSide) size(ctx context.Context) int64 {
	n, err := r.c.DBSize(ctx).Result()
	if err != nil {
		return -1
	}
	return n
}

// ---- redamo ------------------------------------------------------------------------

// redamoSide is the table in-process, or a redamo through --server.
type redamoSide struct {
	be      backend
	workers int
}

func (s *redamoSide) do(ctx context.Context, args ...[]byte) (commands.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, callMargin)
	defer cancel()
	return s.be.Do(ctx, args)
}

func (s *redamoSide) scan(ctx context.Context, cursor, match string) (string, []string, error) {
	r, err := s.do(ctx, []byte("SCAN"), []byte(cursor), []byte("MATCH"), []byte(match), []byte("COUNT"), []byte(strconv.Itoa(migrateBatch)))
	if err != nil {
		return "", nil, err
	}
	if r.IsError() {
		return "", nil, &replyError{msg: r.Str}
	}
	if len(r.Elems) != 2 {
		return "", nil, fmt.Errorf("SCAN: unexpected reply")
	}
	keys := make([]string, len(r.Elems[1].Elems))
	for i, k := range r.Elems[1].Elems {
		keys[i] = k.Str
	}
	return r.Elems[0].Str, keys, nil
}

// each runs fn for every index below n, s.workers at a time, and returns
// the first error.
func (s *redamoSide) each(n int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range min(s.workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// dumpTTLScript reads a key's payload and expiry as of one moment, with
// one read of its key item.
const dumpTTLScript = "return {redis.call('DUMP', KEYS[1]), redis.call('PTTL', KEYS[1])}"

var dumpTTLSHA = func() string {
	sum := sha1.Sum([]byte(dumpTTLScript))
	return hex.EncodeToString(sum[:])
}()

func (s *redamoSide) read(ctx context.Context, keys []string, now int64) ([]dumped, error) {
	got := make([]*dumped, len(keys))
	err := s.each(len(keys), func(i int) error {
		k := []byte(keys[i])
		r, err := s.do(ctx, []byte("EVALSHA"), []byte(dumpTTLSHA), []byte("1"), k)
		if err == nil && r.IsError() && strings.HasPrefix(r.Str, "NOSCRIPT") {
			r, err = s.do(ctx, []byte("EVAL"), []byte(dumpTTLScript), []byte("1"), k)
		}
		switch {
		case err != nil:
			return err
		case r.IsError():
			return &replyError{msg: r.Str}
		case len(r.Elems) != 2:
			return fmt.Errorf("DUMP and PTTL of %q: unexpected reply", keys[i])
		case r.Elems[0].IsNull():
			return nil
		}
		if at := expireAt(r.Elems[1].Int, now); at >= 0 {
			got[i] = &dumped{key: keys[i], payload: r.Elems[0].Str, expireAt: at}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]dumped, 0, len(keys))
	for _, d := range got {
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, nil
}

func (s *redamoSide) write(ctx context.Context, ds []dumped, failed func(key, msg string)) error {
	return s.each(len(ds), func(i int) error {
		d := ds[i]
		r, err := s.do(ctx, []byte("RESTORE"), []byte(d.key), []byte(strconv.FormatInt(d.expireAt, 10)), []byte(d.payload),
			[]byte("REPLACE"), []byte("ABSTTL"))
		switch {
		case err != nil:
			return err
		case r.IsError() && ctx.Err() != nil:
			// Interrupted: the key is copied again when the pass resumes.
			return ctx.Err()
		case r.IsError():
			failed(d.key, r.Str)
		}
		return nil
	})
}

// size is unknown: DBSIZE is a Scan of the whole table, as costly as the
// pass itself.
func (s *redamoSide) size(context.Context) int64 { return -1 }

// ---- progress ---------------------------------------------------------------------------

// progress draws a progress bar on a terminal, at most every tenth of a
// second; on anything else it draws nothing.
type progress struct {
	w      io.Writer
	on     bool
	total  int64
	done   int64
	start  time.Time
	last   time.Time
	drawn  bool
	mu     sync.Mutex
	closed bool
}

func newProgress(w io.Writer, done int64) *progress {
	p := &progress{w: w, total: -1, done: done, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) set(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = done
	if !p.on || p.closed || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progress) draw() {
	const width = 30
	rate := float64(p.done) / max(time.Since(p.start).Seconds(), 0.001)
	if p.total > 0 {
		frac := min(float64(p.done)/float64(p.total), 1)
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d/%d keys, %.0f keys/s ", strings.Repeat("#", n), strings.Repeat("-", width-n), 100*frac, p.done, p.total, rate)
	} else {
		fmt.Fprintf(p.w, "\r%d keys, %.0f keys/s ", p.done, rate)
	}
	p.drawn = true
}

// clear removes the bar before a line of text.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on && !p.closed {
		p.draw()
		fmt.Fprintln(p.w)
	}
	p.closed = true
}
