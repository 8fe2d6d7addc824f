package model_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/model"
)

// xaddS is XADD of fields to key with id ms-1 (0: an id the stream
// makes).
func xaddS(key string, ms uint64, fields ...[]byte) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		a := model.XAddArgs{Fields: fields}
		if ms != 0 {
			a.ID, a.IDGiven, a.SeqGiven = model.StreamID{Ms: ms, Seq: 1}, true, true
		}
		id, _, _, _, err := model.XAdd(s, []byte(key), a)
		return id, err
	}
}

// xrangeS is XRANGE key - + (XREVRANGE when rev) of at most count
// entries.
func xrangeS(key string, rev bool, count int64) func(s model.Scope) (any, error) {
	return func(s model.Scope) (any, error) {
		es, _, err := model.XRange(s, []byte(key), model.StreamID{}, model.MaxStreamID, rev, count)
		return es, err
	}
}

// encodedLen is the bytes an entry's fields take in its chunks.
func encodedLen(fields [][]byte) int {
	n := 0
	for _, f := range fields {
		n += binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(len(f))) + len(f)
	}
	return n
}

// chunksOf is how many chunks an entry of these fields is kept in.
func chunksOf(fields [][]byte) int {
	return (encodedLen(fields) + bigChunkBytes - 1) / bigChunkBytes
}

// A stream entry with a 10 MB field: XADD stages its chunks (the registry
// entry, BatchWriteItems of 8 chunks) before the stream's own requests,
// whose transaction publishes them; XRANGE reads the key item, the member
// and BatchGetItems of 8 chunks; XLEN reads no chunk.
func TestBigStreamEntryRequests(t *testing.T) {
	forStores(t, func(t *testing.T, e *keysEnv) {
		big := randomBytes(11, 10<<20)
		fields := [][]byte{[]byte("f"), big}
		id := model.StreamID{Ms: 5, Seq: 1}
		runSteps(t, e, []step{
			{name: "xadd big into a new stream", run: xaddS("s", 5, fields...), want: id, ops: map[string]int64{get: 1, putOp: 2, bw: 4, tx: 2}},
			{name: "xrange big", run: xrangeS("s", false, -1), want: []model.StreamEntry{{ID: id, Fields: fields}}, ops: map[string]int64{get: 1, dynastore.OpQuery: 1, batch: 4}},
			{name: "xlen", run: func(s model.Scope) (any, error) { return model.XLen(s, []byte("s")) }, want: int64(1), ops: map[string]int64{get: 1}},
		})
		for _, label := range []string{"xadd big into a new stream", "xrange big"} {
			var r, w float64
			for k, v := range e.stats.Snapshot() {
				if k.Label == label {
					r, w = r+v.RCU, w+v.WCU
				}
			}
			t.Logf("%s (10 MB field): %v requests, %.0f read units, %.0f write units", label, e.ops(label), r, w)
		}
	})
}

// Stream entries too big for an item (a big value, a big field name) are
// kept in chunks: every command that returns entries returns them whole,
// in MULTI too; DUMP and RESTORE, COPY and RENAME keep them; a refused
// XADD deletes its chunks at once; XDEL, XTRIM and DEL leave them to the
// sweeper, which deletes them past its grace, and only them.
func TestBigStreamEntries(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		s := e.scope("test", 0)
		bigVal := randomBytes(12, 3*bigChunkBytes+1)
		bigName := randomBytes(13, 420<<10)
		small := [][]byte{[]byte("a"), []byte("1")}
		withVal := [][]byte{[]byte("small"), []byte("s"), []byte("f"), bigVal}
		withName := [][]byte{bigName, []byte("v")}
		want := []model.StreamEntry{
			{ID: model.StreamID{Ms: 1, Seq: 1}, Fields: small},
			{ID: model.StreamID{Ms: 2, Seq: 1}, Fields: withVal},
			{ID: model.StreamID{Ms: 3, Seq: 1}, Fields: withName},
		}
		for _, w := range want {
			_, err := xaddS("s", w.ID.Ms, w.Fields...)(s)
			require.NoError(t, err)
		}
		perStream := chunksOf(withVal) + chunksOf(withName)
		require.Equal(t, perStream, countChunks(t, e))
		entries := func(key string) []model.StreamEntry {
			t.Helper()
			es, err := xrangeS(key, false, -1)(s)
			require.NoError(t, err)
			return es.([]model.StreamEntry)
		}
		require.Equal(t, want, entries("s"))
		es, err := xrangeS("s", true, 2)(s)
		require.NoError(t, err)
		require.Equal(t, []model.StreamEntry{want[2], want[1]}, es)

		rs := &model.XReadState{Keys: [][]byte{[]byte("s")}, IDs: [][]byte{[]byte("1-1")}}
		read, err := model.XRead(s, rs, 0, false)
		require.NoError(t, err)
		require.Equal(t, want[1:], read[0].Entries)

		info, err := model.XInfo(s, []byte("s"))
		require.NoError(t, err)
		require.Equal(t, want[0], *info.First)
		require.Equal(t, want[2], *info.Last)
		full, err := model.XInfoFull(s, []byte("s"), 0)
		require.NoError(t, err)
		require.Equal(t, want, full.Entries)

		// The group commands return the entries whole.
		require.NoError(t, model.XGroupCreate(s, []byte("s"), []byte("g"), model.XGroupArgs{ID: []byte("0")}))
		gs := &model.XReadGroupState{Keys: [][]byte{[]byte("s")}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte("c1")}
		got, err := model.XReadGroup(s, gs, 0, false)
		require.NoError(t, err)
		require.Equal(t, want, got[0].Entries)
		gs = &model.XReadGroupState{Keys: [][]byte{[]byte("s")}, IDs: [][]byte{[]byte("0")}, Group: []byte("g"), Consumer: []byte("c1")}
		got, err = model.XReadGroup(s, gs, 0, false)
		require.NoError(t, err)
		require.Equal(t, want, got[0].Entries, "the consumer's pending entries")
		claimed, _, err := model.XClaim(s, []byte("s"), []byte("g"), []byte("c2"), func() (model.XClaimArgs, error) {
			return model.XClaimArgs{IDs: []model.StreamID{want[1].ID}, RetryCount: -1}, nil
		})
		require.NoError(t, err)
		require.Equal(t, want[1:2], claimed)
		auto, err := model.XAutoClaim(s, []byte("s"), []byte("g"), []byte("c3"), 0, model.StreamID{}, 10, false)
		require.NoError(t, err)
		require.Equal(t, want, auto.Claimed)

		// DUMP and RESTORE, COPY and RENAME: each copy has chunks of its
		// own, a renamed key keeps its own past the sweeper's grace.
		payload, err := model.Dump(s, []byte("s"), model.DumpOptions{})
		require.NoError(t, err)
		obj, err := rdb.Restore(payload)
		require.NoError(t, err)
		_, err = model.Restore(s, []byte("r"), model.RestoreArgs{Object: obj})
		require.NoError(t, err)
		require.Equal(t, want, entries("r"))
		copied, err := model.CopyKey(s, []byte("s"), 0, []byte("c"), false)
		require.NoError(t, err)
		require.True(t, copied)
		_, err = model.MoveKey(s, []byte("c"), 0, []byte("m"), false)
		require.NoError(t, err)
		require.Equal(t, 3*perStream, countChunks(t, e))

		// An XADD refused (its id is too small) deletes its chunks at once.
		_, err = xaddS("s", 1, withVal...)(s)
		require.ErrorIs(t, err, model.ErrStreamIDTooSmall)
		require.Equal(t, 3*perStream, countChunks(t, e))

		// In MULTI: a big entry added and read in one unit.
		fourth := model.StreamEntry{ID: model.StreamID{Ms: 4, Seq: 1}, Fields: withVal}
		_, err = model.Unit{Keys: [][]byte{[]byte("m")}, Work: func(txn *model.Txn) error {
			ts := &scope{Context: s.Context, st: txn, proc: s.proc, now: s.now}
			if _, err := xaddS("m", 4, fourth.Fields...)(ts); err != nil {
				return err
			}
			es, err := xrangeS("m", true, 1)(ts)
			if err != nil {
				return err
			}
			require.Equal(t, []model.StreamEntry{fourth}, es)
			return nil
		}}.Run(s)
		require.NoError(t, err)
		require.Equal(t, append(want[:3:3], fourth), entries("m"))

		sweep, _ := pastGrace(t, e.store, s)
		sweep()
		require.Equal(t, 3*perStream+chunksOf(withVal), countChunks(t, e), "the sweeper keeps every published entry's chunks")
		require.Equal(t, append(want[:3:3], fourth), entries("m"))

		// XDEL: the entry's chunks go, the others stay.
		n, err := model.XDel(s, []byte("s"), [][]byte{[]byte("2-1")})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		sweep()
		require.Equal(t, 3*perStream+chunksOf(withVal)-chunksOf(withVal), countChunks(t, e))
		require.Equal(t, []model.StreamEntry{want[0], want[2]}, entries("s"))

		// XTRIM: the trimmed entries' chunks go once their members are
		// deleted.
		trimmed, sc, err := model.XTrim(s, []byte("m"), model.StreamTrim{Strategy: model.TrimMaxLen, MaxLen: 1})
		require.NoError(t, err)
		require.EqualValues(t, 3, trimmed)
		if sc != nil {
			require.NoError(t, sc.Run(s.NowMS))
		}
		sweep()
		require.Equal(t, 2*perStream, countChunks(t, e))
		require.Equal(t, []model.StreamEntry{fourth}, entries("m"))

		// DEL: all of a stream's chunks go.
		for _, k := range []string{"s", "r", "m"} {
			_, err := model.DeleteKey(s, []byte(k))
			require.NoError(t, err)
		}
		sweep()
		sweep()
		require.Zero(t, countChunks(t, e))
	})
}

// pastGrace is a sweeper of st on a clock of its own, and a sweep in s
// that runs it until what was dead at its start is deleted, its clock
// moved past the grace.
func pastGrace(t *testing.T, st dynastore.Store, s model.Scope) (sweep func(), sw *model.Sweeper) {
	clock := time.Now()
	sw = &model.Sweeper{Store: st, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
	return func() {
		t.Helper()
		for range 2 {
			require.NoError(t, sw.SweepOnce(s))
			clock = clock.Add(2 * time.Minute)
		}
		require.NoError(t, sw.SweepOnce(s))
	}, sw
}

// gatedTransact holds a store's first transaction until open is closed,
// and says on held that it is held.
type gatedTransact struct {
	dynastore.Store
	once       sync.Once
	held, open chan struct{}
}

func (g *gatedTransact) Transact(ctx context.Context, acts []dynastore.TxAction) error {
	g.once.Do(func() {
		close(g.held)
		<-g.open
	})
	return g.Store.Transact(ctx, acts)
}

func (g *gatedTransact) BatchWrite(ctx context.Context, puts []dynastore.Item, dels []dynastore.Key) error {
	return dynastore.BatchWrite(ctx, g.Store, puts, dels)
}

// An entry whose chunks were staged so long before XADD published them
// that the sweeper took them for dead (no member named them yet) and is
// about to condemn them: the publication wins, the condemnation fails, and
// the entry stays whole.
func TestBigStreamEntryPublishedWhileCondemned(t *testing.T) {
	forAllStores(t, func(t *testing.T, e *keysEnv) {
		big := randomBytes(14, 2*bigChunkBytes)
		fields := [][]byte{[]byte("f"), big}
		gate := &gatedTransact{Store: e.store, held: make(chan struct{}), open: make(chan struct{})}
		writer := newScope(gate)
		added := make(chan error, 1)
		go func() {
			_, err := xaddS("s", 7, fields...)(writer)
			added <- err
		}()
		<-gate.held // staged, its publication held

		clock := time.Now()
		s := e.scope("sweeper", 0)
		// The sweeper's condemning transaction lets the publication
		// through first.
		sweepStore := &raceOnce{Store: e.store, race: func() {
			close(gate.open)
			require.NoError(t, <-added)
		}}
		sw := &model.Sweeper{Store: sweepStore, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		require.NoError(t, sw.SweepOnce(s))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(s))
		for range 2 {
			clock = clock.Add(2 * time.Minute)
			require.NoError(t, sw.SweepOnce(s))
		}
		es, err := xrangeS("s", false, -1)(s)
		require.NoError(t, err)
		require.Equal(t, []model.StreamEntry{{ID: model.StreamID{Ms: 7, Seq: 1}, Fields: fields}}, es)
		require.Equal(t, chunksOf(fields), countChunks(t, e))
	})
}
