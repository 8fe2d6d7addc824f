package coord

// Work queues: priorities, delays, at-least-once delivery with visibility
// timeouts and receipts, deduplication and dead letters.
//
// A queue spreads its messages over Shards partitions, one item per
// message:
//
//	pk  'q', shard, queue name
//	sk  state (1 live, 2 dead), priority (8 bytes, sign flipped), visible
//	    at (8 bytes, Unix ms), id (16 bytes: push time ns, random); or
//	    0, slot: the shard's counters (pushed, acked, ...)
//	p   payload; v visible at (ms: the truth, sk's copy only orders);
//	    n deliveries; r the nonce of the last delivery
//
// A shard's live messages are thus in the order a queue serves them:
// priority, then the time they became visible, then push order, and the
// ready ones (v <= now) of a priority before its invisible ones, so a pop
// finds the next message in the first page of one Query. Popping moves
// the message (one transaction: delete it, put it back visible at now +
// VT with a fresh nonce), so a redelivery after the timeout sorts by the
// time it became visible again. A receipt names the delivered item and
// its nonce: acknowledging is one conditional delete, and a receipt goes
// stale when its message is delivered again (moved, with another nonce).
// Priority order holds per shard: a pop serves the best message of the
// first shard it finds one in.
//
// A write's counters are in the partition it writes, spread over
// counterSlots items, so that a busy queue's transactions neither share one
// partition's throughput nor all conflict on one item. Each queue has a
// partition of its own for its configuration (cached) and deduplication
// records:
//
//	pk  'Q', queue name
//	sk  0: configuration; 2, dedup id: a dedup record

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Queue defaults and bounds.
const (
	DefaultVT          = 30 * time.Second
	DefaultDedupWindow = 5 * time.Minute
	// DefaultShards spreads a queue over four partitions: about 4,000 WCU/s
	// before DynamoDB's per-partition limit, while a pop of a queue with few
	// messages reads at most four pages.
	DefaultShards = 4
	MaxShards     = 64
	// MaxPopCount bounds QUEUE.POP COUNT: two actions per message in one
	// transaction of at most 100.
	MaxPopCount = dynastore.MaxTxActions/2 - 1
	// configTTL is how long an instance uses a queue's configuration
	// before reading it again: CONFIG SET through another instance takes
	// effect within it.
	configTTL    = 2 * time.Second
	counterSlots = 8
)

// Queue errors.
var (
	ErrBadReceipt = errors.New("coord: invalid receipt")
	ErrSameQueue  = errors.New("coord: a queue cannot be its own dead-letter queue")
)

// Message and queue item attributes.
const (
	attrPayload    = "p"
	attrVisible    = "v"
	attrDeliveries = "n"
	attrNonce      = "r"
	attrPushed     = "t"
	// configuration
	attrVT          = "vt"
	attrMaxReceives = "mr"
	attrDLQ         = "dlq"
	attrDedupWindow = "dw"
	attrShards      = "sh"
	attrMaxShards   = "msh"
	// dedup record: the message id
	attrMessageID = "m"
)

// Queue counters, as QUEUE.STATS names them.
var queueCounters = []string{"pushed", "acked", "nacked", "deadlettered", "deduplicated"}

const (
	stateLive = 1
	stateDead = 2
)

// QueueConfig is a queue's configuration.
type QueueConfig struct {
	VT          time.Duration
	MaxReceives int64 // 0: no limit
	DLQ         []byte
	DedupWindow time.Duration
	Shards      int
	// maxShards is the most shards the queue ever had: pops read them all.
	maxShards int
}

// DefaultQueueConfig is the configuration of a queue nobody configured.
func DefaultQueueConfig() QueueConfig {
	return QueueConfig{VT: DefaultVT, DedupWindow: DefaultDedupWindow, Shards: DefaultShards, maxShards: DefaultShards}
}

// Queues is one process's queue state: the configurations it read lately
// and its counters. Nothing correctness depends on lives here.
type Queues struct {
	mu        sync.Mutex
	configs   map[string]cachedConfig
	delivered deliveredCache
	// rr spreads this process's pushes over a queue's shards in turn;
	// lastID is the time part of the last message id given.
	rr, lastID atomic.Uint64
	statQueues atomic.Int64
	// stats counts this process's operations per queue (name -> *QueueStats).
	stats sync.Map
}

// QueueStats counts this process's operations on one queue.
type QueueStats struct {
	Pushed, Delivered, Redelivered, Acked, Nacked, DeadLettered, Deduplicated atomic.Int64
}

// maxStatQueues bounds the queues counted apart; the others are counted
// together under the empty name.
const maxStatQueues = 1000

// statsOf returns queue name's counters.
func (q *Queues) statsOf(name []byte) *QueueStats {
	if st, ok := q.stats.Load(string(name)); ok {
		return st.(*QueueStats)
	}
	if q.statQueues.Load() >= maxStatQueues {
		name = nil
	}
	st, loaded := q.stats.LoadOrStore(string(name), &QueueStats{})
	if !loaded {
		q.statQueues.Add(1)
	}
	return st.(*QueueStats)
}

// EachQueue calls f with the counters of every queue this process served.
func (q *Queues) EachQueue(f func(name string, st *QueueStats)) {
	q.stats.Range(func(k, v any) bool {
		f(k.(string), v.(*QueueStats))
		return true
	})
}

// Each calls f with every counter of st, by operation name.
func (st *QueueStats) Each(f func(op string, n int64)) {
	for _, c := range []struct {
		op string
		n  *atomic.Int64
	}{
		{"pushed", &st.Pushed}, {"delivered", &st.Delivered}, {"redelivered", &st.Redelivered},
		{"acked", &st.Acked}, {"nacked", &st.Nacked}, {"deadlettered", &st.DeadLettered}, {"deduplicated", &st.Deduplicated},
	} {
		f(c.op, c.n.Load())
	}
}

// deliveredCache remembers the messages this process delivered lately, by
// receipt, so that a NACK through the same instance can move its message
// without reading it first. An entry is a hint: the move is conditioned on
// the delivery's nonce, and a message's payload never changes.
type deliveredCache struct {
	mu   sync.Mutex
	m    map[string]Message
	ring []string
	next int
}

const deliveredCacheSize = 4096

func (c *deliveredCache) put(m Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]Message{}
		c.ring = make([]string, deliveredCacheSize)
	}
	delete(c.m, c.ring[c.next])
	c.ring[c.next] = m.Receipt
	c.next = (c.next + 1) % len(c.ring)
	m.item = nil
	c.m[m.Receipt] = m
}

func (c *deliveredCache) take(receipt string) (Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[receipt]
	delete(c.m, receipt)
	return m, ok
}

type cachedConfig struct {
	cfg QueueConfig
	at  time.Time
}

func queueMetaPK(name []byte) []byte { return append([]byte{model.NsQueueMeta}, name...) }

func shardPK(name []byte, shard int) []byte {
	return append([]byte{model.NsQueue, byte(shard)}, name...)
}

func checkQueueName(name []byte) error {
	if len(name)+2 > dynastore.MaxPKSize {
		return ErrNameTooLong
	}
	return nil
}

// Config returns queue name's configuration, read at most configTTL ago.
func (q *Queues) Config(ctx context.Context, st dynastore.Store, name []byte) (QueueConfig, error) {
	if err := checkQueueName(name); err != nil {
		return QueueConfig{}, err
	}
	q.mu.Lock()
	c, ok := q.configs[string(name)]
	q.mu.Unlock()
	if ok && time.Since(c.at) < configTTL {
		return c.cfg, nil
	}
	it, err := st.Get(ctx, dynastore.Key{PK: queueMetaPK(name), SK: []byte{0}})
	if err != nil {
		return QueueConfig{}, err
	}
	cfg, err := decodeConfig(it)
	if err != nil {
		return QueueConfig{}, err
	}
	q.remember(name, cfg)
	return cfg, nil
}

func (q *Queues) remember(name []byte, cfg QueueConfig) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.configs == nil {
		q.configs = map[string]cachedConfig{}
	}
	q.configs[string(name)] = cachedConfig{cfg: cfg, at: time.Now()}
}

func decodeConfig(it dynastore.Item) (QueueConfig, error) {
	cfg := DefaultQueueConfig()
	num := func(attr string) (int64, bool, error) {
		v := it.Get(attr)
		if v == nil {
			return 0, false, nil
		}
		n, err := model.NumberInt(v)
		return n, true, err
	}
	for _, f := range []struct {
		attr string
		set  func(int64)
	}{
		{attrVT, func(n int64) { cfg.VT = time.Duration(n) * time.Millisecond }},
		{attrMaxReceives, func(n int64) { cfg.MaxReceives = n }},
		{attrDedupWindow, func(n int64) { cfg.DedupWindow = time.Duration(n) * time.Millisecond }},
		{attrShards, func(n int64) { cfg.Shards = int(n) }},
		{attrMaxShards, func(n int64) { cfg.maxShards = int(n) }},
	} {
		n, ok, err := num(f.attr)
		if err != nil {
			return cfg, fmt.Errorf("coord: queue configuration %s: %w", f.attr, err)
		}
		if ok {
			f.set(n)
		}
	}
	cfg.DLQ, _ = it.Get(attrDLQ).(dynastore.B)
	cfg.maxShards = max(cfg.maxShards, cfg.Shards)
	return cfg, nil
}

// QueueSettings are the changes of QUEUE.CONFIG SET (nil: unchanged).
type QueueSettings struct {
	VT          *time.Duration
	MaxReceives *int64
	DLQ         []byte // nil: unchanged; empty: none
	DedupWindow *time.Duration
	Shards      *int
}

// Configure changes queue name's configuration and returns it.
func (q *Queues) Configure(ctx context.Context, st dynastore.Store, name []byte, s QueueSettings) (QueueConfig, error) {
	if err := checkQueueName(name); err != nil {
		return QueueConfig{}, err
	}
	if s.DLQ != nil && bytes.Equal(s.DLQ, name) {
		return QueueConfig{}, ErrSameQueue
	}
	u := dynastore.Update{}
	ms := func(d time.Duration) dynastore.N { return model.NInt(d.Milliseconds()) }
	if s.VT != nil {
		u.Set = append(u.Set, dynastore.SetAction{Attr: attrVT, Val: ms(*s.VT)})
	}
	if s.MaxReceives != nil {
		u.Set = append(u.Set, dynastore.SetAction{Attr: attrMaxReceives, Val: model.NInt(*s.MaxReceives)})
	}
	if s.DedupWindow != nil {
		u.Set = append(u.Set, dynastore.SetAction{Attr: attrDedupWindow, Val: ms(*s.DedupWindow)})
	}
	switch {
	case s.DLQ == nil:
	case len(s.DLQ) == 0:
		u.Remove = append(u.Remove, attrDLQ)
	default:
		u.Set = append(u.Set, dynastore.SetAction{Attr: attrDLQ, Val: dynastore.B(s.DLQ)})
	}
	var cond dynastore.Cond
	if s.Shards != nil {
		// Pops read every shard the queue ever had: the high-water mark
		// only grows (a condition keeps two changes from lowering it).
		old, err := q.Config(ctx, st, name)
		if err != nil {
			return QueueConfig{}, err
		}
		hw := max(old.maxShards, *s.Shards)
		u.Set = append(u.Set,
			dynastore.SetAction{Attr: attrShards, Val: model.NInt(int64(*s.Shards))},
			dynastore.SetAction{Attr: attrMaxShards, Val: model.NInt(int64(hw))})
		cond = dynastore.Or{
			dynastore.NotExists{Attr: attrMaxShards},
			dynastore.Compare{Attr: attrMaxShards, Op: dynastore.OpLE, Val: model.NInt(int64(hw))},
		}
	}
	if len(u.Set) == 0 && len(u.Remove) == 0 {
		return q.Config(ctx, st, name)
	}
	it, err := st.Update(ctx, dynastore.Key{PK: queueMetaPK(name), SK: []byte{0}}, u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllNew})
	if errors.Is(err, dynastore.ErrConditionFailed) {
		return QueueConfig{}, fmt.Errorf("coord: queue shards changed concurrently: %w", dynastore.ErrTxConflict)
	}
	if err != nil {
		return QueueConfig{}, err
	}
	cfg, err := decodeConfig(it)
	if err == nil {
		q.remember(name, cfg)
	}
	return cfg, err
}

// ---- messages ----------------------------------------------------------------------

// Message is one message as a queue holds it.
type Message struct {
	ID         string
	Payload    []byte
	Deliveries int64
	// Receipt is set on a delivered message.
	Receipt string
	// VisibleMS is when it became (or becomes) visible; PushedMS when it
	// was pushed.
	VisibleMS, PushedMS int64
	shard               int
	sk                  []byte
	item                dynastore.Item
}

func messageSK(state byte, prio, visibleMS int64, id []byte) []byte {
	sk := make([]byte, 0, 33)
	sk = append(sk, state)
	sk = binary.BigEndian.AppendUint64(sk, uint64(prio)^(1<<63))
	sk = binary.BigEndian.AppendUint64(sk, uint64(max(visibleMS, 0)))
	return append(sk, id...)
}

func skPriority(sk []byte) int64 { return int64(binary.BigEndian.Uint64(sk[1:9]) ^ (1 << 63)) }
func skID(sk []byte) []byte      { return sk[17:] }

// newMessageID returns a message id: a time in ns, never the same twice
// in this process and growing with each push (so messages pushed at one
// instant, one EXEC's, keep their push order), and 8 random bytes.
func (q *Queues) newMessageID(now time.Time) []byte {
	ns := uint64(now.UnixNano())
	for {
		last := q.lastID.Load()
		next := max(ns, last+1)
		if q.lastID.CompareAndSwap(last, next) {
			ns = next
			break
		}
	}
	id := binary.BigEndian.AppendUint64(make([]byte, 0, 16), ns)
	var r [8]byte
	_, _ = rand.Read(r[:])
	return append(id, r[:]...)
}

func newNonce() dynastore.S {
	return model.NewVer()
}

func decodeMessage(shard int, it dynastore.Item) (Message, error) {
	m := Message{shard: shard, item: it}
	if sk, ok := it.Get(dynastore.AttrSK).(dynastore.B); ok && len(sk) == 33 {
		m.sk = sk
		m.ID = hex.EncodeToString(skID(sk))
	} else {
		return m, fmt.Errorf("coord: malformed message item")
	}
	m.PushedMS = pushedOf(it, 0)
	m.Payload, _ = it.Get(attrPayload).(dynastore.B)
	if m.Payload == nil {
		m.Payload = []byte{}
	}
	var err error
	if v := it.Get(attrDeliveries); v != nil {
		if m.Deliveries, err = model.NumberInt(v); err != nil {
			return m, err
		}
	}
	if v := it.Get(attrVisible); v != nil {
		if m.VisibleMS, err = model.NumberInt(v); err != nil {
			return m, err
		}
	}
	return m, nil
}

func messageItem(pk, sk, payload []byte, visibleMS, deliveries int64, nonce dynastore.Value, pushedMS int64) dynastore.Item {
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(pk)},
		{Name: dynastore.AttrSK, Value: dynastore.B(sk)},
		{Name: attrPayload, Value: dynastore.B(payload)},
		{Name: attrVisible, Value: model.NInt(visibleMS)},
		{Name: attrDeliveries, Value: model.NInt(deliveries)},
		{Name: attrPushed, Value: model.NInt(pushedMS)},
	}
	if nonce != nil {
		it = append(it, dynastore.Attr{Name: attrNonce, Value: nonce})
	}
	return it
}

// receipt is what a receipt string encodes: the delivered item and the
// delivery's nonce.
func encodeReceipt(shard int, sk []byte, nonce dynastore.S) string {
	b := append([]byte{byte(shard)}, sk...)
	b = append(b, nonce...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeReceipt(name []byte, r []byte) (dynastore.Key, dynastore.S, error) {
	b, err := base64.RawURLEncoding.DecodeString(string(r))
	if err != nil || len(b) < 1+33+1 || b[1] != stateLive {
		return dynastore.Key{}, "", ErrBadReceipt
	}
	return dynastore.Key{PK: shardPK(name, int(b[0])), SK: b[1:34]}, dynastore.S(b[34:]), nil
}

// counterUpdate adds n to counter of a queue, on a random slot of the
// shard partition pk.
func counterUpdate(pk []byte, counter string, n int64) dynastore.TxAction {
	return dynastore.TxAction{
		Op:     dynastore.TxUpdate,
		Key:    dynastore.Key{PK: pk, SK: []byte{0, byte(mrand.IntN(counterSlots))}},
		Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: counter, Val: model.NInt(n)}}},
	}
}

// PushOptions are QUEUE.PUSH's options.
type PushOptions struct {
	Priority int64
	Delay    time.Duration
	Dedup    []byte // nil: none
}

// Push adds a message to queue name and returns its id: with a dedup id
// seen on the queue within its dedup window, the first message's id, and
// nothing pushed.
func (q *Queues) Push(ctx context.Context, st dynastore.Store, name, payload []byte, o PushOptions, now time.Time) (id string, dup bool, err error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return "", false, err
	}
	nowMS := now.UnixMilli()
	rawID := q.newMessageID(now)
	id = hex.EncodeToString(rawID)
	visible := nowMS + o.Delay.Milliseconds()
	pk := shardPK(name, int(q.rr.Add(1)%uint64(cfg.Shards)))
	msg := messageItem(pk, messageSK(stateLive, o.Priority, visible, rawID), payload, visible, 0, nil, nowMS)
	acts := []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: msg, Cond: dynastore.NotExists{Attr: dynastore.AttrPK}},
		counterUpdate(pk, "pushed", 1),
	}
	if o.Dedup != nil {
		exp := nowMS + cfg.DedupWindow.Milliseconds()
		rec := dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(queueMetaPK(name))},
			{Name: dynastore.AttrSK, Value: dynastore.B(append([]byte{2}, o.Dedup...))},
			{Name: attrMessageID, Value: dynastore.S(id)},
			{Name: model.AttrExpiry, Value: model.NInt(exp)},
			{Name: dynastore.AttrTTL, Value: model.TTLSeconds(exp)},
		}
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: rec, OldOnFailure: true, Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.Compare{Attr: model.AttrExpiry, Op: dynastore.OpLE, Val: model.NInt(nowMS)},
		}})
	}
	err = st.Transact(ctx, acts)
	var tc *dynastore.TxCanceledError
	if o.Dedup != nil && errors.As(err, &tc) && len(tc.Reasons) == 3 && tc.Reasons[2].Code == dynastore.ReasonConditionalFailed {
		first, _ := tc.Reasons[2].Old.Get(attrMessageID).(dynastore.S)
		q.statsOf(name).Deduplicated.Add(1)
		return string(first), true, st.Transact(ctx, []dynastore.TxAction{counterUpdate(pk, "deduplicated", 1)})
	}
	if err != nil {
		return "", false, err
	}
	q.statsOf(name).Pushed.Add(1)
	return id, false, nil
}

// ready is the filter of a shard's messages that are ready at nowMS.
func ready(nowMS int64) dynastore.Cond {
	return dynastore.Compare{Attr: attrVisible, Op: dynastore.OpLE, Val: model.NInt(nowMS)}
}

// readyPage reads up to limit ready live messages of one shard, in order.
func readyPage(ctx context.Context, st dynastore.Store, name []byte, shard, limit int, nowMS int64) ([]Message, error) {
	pk := shardPK(name, shard)
	var out []dynastore.Item
	var after []byte
	for {
		page, err := st.Query(ctx, dynastore.Query{PK: pk, Op: dynastore.SKBeginsWith, A: []byte{stateLive},
			Filter: ready(nowMS), Limit: max(limit, 100), After: after})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(out) >= limit || page.Next == nil {
			break
		}
		after = page.Next
	}
	msgs := make([]Message, 0, min(len(out), limit))
	for _, it := range out[:min(len(out), limit)] {
		m, err := decodeMessage(shard, it)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// shardOrder is the order in which a pop visits the shards: from a random
// one, so that workers spread over them.
func shardOrder(n int) []int {
	start := mrand.IntN(n)
	out := make([]int, n)
	for i := range out {
		out[i] = (start + i) % n
	}
	return out
}

// Pop delivers up to count ready messages of queue name, invisible for vt
// (0: deleted at once). Messages received MaxReceives times go to the
// dead-letter queue (or are held as dead) instead, in the same write.
func (q *Queues) Pop(ctx context.Context, st dynastore.Store, name []byte, count int, vt time.Duration, now func() time.Time) ([]Message, error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return nil, err
	}
	// Dead letters go to the DLQ's shards, as its own pushes do.
	dlqShards := 0
	if cfg.DLQ != nil {
		dcfg, err := q.Config(ctx, st, cfg.DLQ)
		if err != nil {
			return nil, err
		}
		dlqShards = dcfg.Shards
	}
	var out []Message
	var retry model.Retry
	for _, shard := range shardOrder(cfg.maxShards) {
		for len(out) < count {
			t := now()
			msgs, err := readyPage(ctx, st, name, shard, count-len(out), t.UnixMilli())
			if err != nil {
				return out, err
			}
			if len(msgs) == 0 {
				break
			}
			got, lost, err := q.take(ctx, st, name, cfg, dlqShards, msgs, vt, t)
			out = append(out, got...)
			if err != nil {
				return out, err
			}
			if lost {
				if err := retry.Lost(ctx); err != nil {
					return out, err
				}
			}
		}
		if len(out) == count {
			break
		}
	}
	return out, nil
}

// take delivers msgs in one transaction: each moved to visible at now +
// vt with a fresh nonce (deleted when vt is 0), or dead-lettered. It
// reports lost when another worker changed one first (nothing taken).
func (q *Queues) take(ctx context.Context, st dynastore.Store, name []byte, cfg QueueConfig, dlqShards int, msgs []Message, vt time.Duration, now time.Time) ([]Message, bool, error) {
	nowMS := now.UnixMilli()
	var dpk []byte // the DLQ shard this take's dead letters go to
	if cfg.DLQ != nil {
		dpk = shardPK(cfg.DLQ, mrand.IntN(dlqShards))
	}
	var acts []dynastore.TxAction
	var out []Message
	dead := int64(0)
	for _, m := range msgs {
		pk := shardPK(name, m.shard)
		cond := dynastore.Cond(dynastore.NotExists{Attr: attrNonce})
		if nonce := m.item.Get(attrNonce); nonce != nil {
			cond = dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}
		}
		cond = dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, cond}
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: dynastore.Key{PK: pk, SK: m.sk}, Cond: cond})
		prio, id, pushed := skPriority(m.sk), skID(m.sk), m.PushedMS
		switch {
		case cfg.MaxReceives > 0 && m.Deliveries >= cfg.MaxReceives:
			dead++
			if dpk != nil {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut,
					Item: messageItem(dpk, messageSK(stateLive, prio, nowMS, id), m.Payload, nowMS, 0, nil, pushed)})
			} else {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut,
					Item: messageItem(pk, messageSK(stateDead, prio, nowMS, id), m.Payload, nowMS, m.Deliveries, nil, pushed)})
			}
		case vt == 0:
			m.Deliveries++
			out = append(out, m)
		default:
			nonce := newNonce()
			visible := nowMS + vt.Milliseconds()
			sk := messageSK(stateLive, prio, visible, id)
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut,
				Item: messageItem(pk, sk, m.Payload, visible, m.Deliveries+1, nonce, pushed)})
			m.Deliveries++
			m.Receipt = encodeReceipt(m.shard, sk, nonce)
			out = append(out, m)
		}
	}
	if dead > 0 {
		acts = append(acts, counterUpdate(shardPK(name, msgs[0].shard), "deadlettered", dead))
		if dpk != nil {
			acts = append(acts, counterUpdate(dpk, "pushed", dead))
		}
	}
	err := st.Transact(ctx, acts)
	if err != nil {
		if errors.Is(err, dynastore.ErrTxCanceled) || errors.Is(err, dynastore.ErrTxConflict) {
			return nil, true, nil
		}
		return nil, false, err
	}
	counts := q.statsOf(name)
	counts.DeadLettered.Add(dead)
	for _, m := range out {
		if m.Receipt != "" {
			q.delivered.put(m)
		}
		counts.Delivered.Add(1)
		if m.Deliveries > 1 {
			counts.Redelivered.Add(1)
		}
	}
	return out, len(out) == 0 && dead == 0, nil
}

// Ack deletes the messages of the receipts that are still valid and
// returns how many it deleted.
func (q *Queues) Ack(ctx context.Context, st dynastore.Store, name []byte, receipts [][]byte) (int64, error) {
	type target struct {
		k     dynastore.Key
		nonce dynastore.S
	}
	var ts []target
	seen := map[string]bool{}
	for _, r := range receipts {
		k, nonce, err := decodeReceipt(name, r)
		if err != nil {
			return 0, err
		}
		if !seen[string(k.PK)+"\x00"+string(k.SK)] {
			seen[string(k.PK)+"\x00"+string(k.SK)] = true
			ts = append(ts, target{k, nonce})
		}
	}
	total := int64(0)
	for start := 0; start < len(ts); start += dynastore.MaxTxActions - 1 {
		batch := ts[start:min(len(ts), start+dynastore.MaxTxActions-1)]
		live := make([]bool, len(batch))
		for i := range live {
			live[i] = true
		}
		for {
			var acts []dynastore.TxAction
			n := int64(0)
			for i, t := range batch {
				if live[i] {
					acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: t.k,
						Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: t.nonce}})
					n++
				}
			}
			if n == 0 {
				break
			}
			err := st.Transact(ctx, append(acts, counterUpdate(acts[0].Key.PK, "acked", n)))
			var tc *dynastore.TxCanceledError
			if errors.As(err, &tc) && !errors.Is(err, dynastore.ErrTxConflict) {
				// Drop the stale receipts and try the rest again.
				j := 0
				for i := range batch {
					if live[i] {
						if tc.Reasons[j].Code == dynastore.ReasonConditionalFailed {
							live[i] = false
						}
						j++
					}
				}
				continue
			}
			if err != nil {
				return 0, err
			}
			q.statsOf(name).Acked.Add(n)
			total += n
			break
		}
	}
	return total, nil
}

// Nack makes the message of receipt visible again after delay: 1, or 0
// for a stale receipt. The message moves to its new place in the order,
// so its receipt is stale from then on.
func (q *Queues) Nack(ctx context.Context, st dynastore.Store, name, receipt []byte, delay time.Duration, now time.Time) (bool, error) {
	k, nonce, err := decodeReceipt(name, receipt)
	if err != nil {
		return false, err
	}
	m, ok := q.delivered.take(string(receipt))
	if !ok {
		it, err := st.Get(ctx, k)
		if err != nil || it == nil || !nonceIs(it, nonce) {
			return false, err
		}
		if m, err = decodeMessage(0, it); err != nil {
			return false, err
		}
	}
	visible := now.UnixMilli() + delay.Milliseconds()
	// Without a nonce: waiting again, not in flight (QUEUE.STATS).
	moved := messageItem(k.PK, messageSK(stateLive, skPriority(k.SK), visible, skID(k.SK)), m.Payload, visible, m.Deliveries, nil, m.PushedMS)
	err = st.Transact(ctx, []dynastore.TxAction{
		{Op: dynastore.TxDelete, Key: k, Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}},
		{Op: dynastore.TxPut, Item: moved},
		counterUpdate(k.PK, "nacked", 1),
	})
	var tc *dynastore.TxCanceledError
	if errors.As(err, &tc) && !errors.Is(err, dynastore.ErrTxConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	q.statsOf(name).Nacked.Add(1)
	return true, nil
}

// pushedOf is the push time of a message item (def if it has none).
func pushedOf(it dynastore.Item, def int64) int64 {
	if v := it.Get(attrPushed); v != nil {
		if n, err := model.NumberInt(v); err == nil {
			return n
		}
	}
	return def
}

func nonceIs(it dynastore.Item, nonce dynastore.S) bool {
	n, ok := it.Get(attrNonce).(dynastore.S)
	return ok && n == nonce
}

// Extend keeps the message of receipt invisible for vt from now: 1, or 0
// for a stale receipt.
func (q *Queues) Extend(ctx context.Context, st dynastore.Store, name, receipt []byte, vt time.Duration, now time.Time) (bool, error) {
	k, nonce, err := decodeReceipt(name, receipt)
	if err != nil {
		return false, err
	}
	_, err = st.Update(ctx, k, dynastore.Update{Set: []dynastore.SetAction{
		{Attr: attrVisible, Val: model.NInt(now.UnixMilli() + vt.Milliseconds())},
	}}, dynastore.WriteOptions{Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}})
	if errors.Is(err, dynastore.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

// Peek returns up to count ready messages of queue name, in the order a
// pop would take them from one shard, changing nothing.
func (q *Queues) Peek(ctx context.Context, st dynastore.Store, name []byte, count int, now time.Time) ([]Message, error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return nil, err
	}
	var all []Message
	for shard := range cfg.maxShards {
		msgs, err := readyPage(ctx, st, name, shard, count, now.UnixMilli())
		if err != nil {
			return nil, err
		}
		all = append(all, msgs...)
	}
	slices.SortFunc(all, func(a, b Message) int { return bytes.Compare(a.sk, b.sk) })
	return all[:min(len(all), count)], nil
}

// QueueState is what QUEUE.STATS reports.
type QueueState struct {
	Ready, Delayed, InFlight, Dead int64
	// OldestReadyMS is how long the oldest ready message has been ready.
	OldestReadyMS int64
	Counters      map[string]int64
}

// State counts queue name's messages by state (reading all of them) and
// sums its counters.
func (q *Queues) State(ctx context.Context, st dynastore.Store, name []byte, now time.Time) (QueueState, error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return QueueState{}, err
	}
	nowMS := now.UnixMilli()
	s := QueueState{Counters: map[string]int64{}}
	for _, c := range queueCounters {
		s.Counters[c] = 0
	}
	oldest := int64(-1)
	for shard := range cfg.maxShards {
		err := eachItem(ctx, st, dynastore.Query{PK: shardPK(name, shard)}, func(it dynastore.Item) error {
			if isCounters(it) {
				return addCounters(s.Counters, it)
			}
			m, err := decodeMessage(shard, it)
			if err != nil {
				return err
			}
			switch {
			case m.sk[0] == stateDead:
				s.Dead++
			case m.VisibleMS <= nowMS:
				s.Ready++
				if oldest < 0 || m.VisibleMS < oldest {
					oldest = m.VisibleMS
				}
			case it.Has(attrNonce):
				s.InFlight++
			default:
				s.Delayed++
			}
			return nil
		})
		if err != nil {
			return s, err
		}
	}
	if oldest >= 0 {
		s.OldestReadyMS = nowMS - oldest
	}
	return s, nil
}

// isCounters reports whether a shard item is a counters item.
func isCounters(it dynastore.Item) bool {
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	return len(sk) > 0 && sk[0] == 0
}

// addCounters adds a counters item's counts to sums.
func addCounters(sums map[string]int64, it dynastore.Item) error {
	for _, c := range queueCounters {
		if v := it.Get(c); v != nil {
			n, err := model.NumberInt(v)
			if err != nil {
				return fmt.Errorf("coord: queue counter %s: %w", c, err)
			}
			sums[c] += n
		}
	}
	return nil
}

// eachItem calls f with every item q reads, page after page.
func eachItem(ctx context.Context, st dynastore.Store, q dynastore.Query, f func(dynastore.Item) error) error {
	for {
		page, err := st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := f(it); err != nil {
				return err
			}
		}
		if page.Next == nil {
			return nil
		}
		q.After = page.Next
	}
}

// Redrive moves up to count (0: all) messages back to queue dst, ready at
// once and as never delivered: from src == dst, its dead messages; from
// another queue (a dead-letter queue), its dead and ready messages. It
// returns how many it moved.
func (q *Queues) Redrive(ctx context.Context, st dynastore.Store, src, dst []byte, count int64, now time.Time) (int64, error) {
	srcCfg, err := q.Config(ctx, st, src)
	if err != nil {
		return 0, err
	}
	dstCfg, err := q.Config(ctx, st, dst)
	if err != nil {
		return 0, err
	}
	nowMS := now.UnixMilli()
	moved := int64(0)
	for shard := range srcCfg.maxShards {
		var batch []dynastore.TxAction
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			// The destination counts them as pushed (on the shard of the
			// first).
			err := st.Transact(ctx, append(batch, counterUpdate(batch[1].Item.Key().PK, "pushed", int64(len(batch)/2))))
			if errors.Is(err, dynastore.ErrTxCanceled) {
				// A worker took one of them meanwhile: leave this batch
				// (the messages are not lost), count what moved before.
				batch = nil
				return nil
			}
			if err == nil {
				moved += int64(len(batch) / 2)
			}
			batch = nil
			return err
		}
		err := eachItem(ctx, st, dynastore.Query{PK: shardPK(src, shard)}, func(it dynastore.Item) error {
			if count > 0 && moved+int64(len(batch)/2) >= count {
				return errStop
			}
			if isCounters(it) {
				return nil
			}
			m, err := decodeMessage(shard, it)
			if err != nil {
				return err
			}
			dead := m.sk[0] == stateDead
			if !dead && (bytes.Equal(src, dst) || m.VisibleMS > nowMS) {
				return nil
			}
			cond := dynastore.Cond(dynastore.NotExists{Attr: attrNonce})
			if nonce := it.Get(attrNonce); nonce != nil {
				cond = dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}
			}
			batch = append(batch,
				dynastore.TxAction{Op: dynastore.TxDelete, Key: dynastore.Key{PK: shardPK(src, shard), SK: m.sk},
					Cond: dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, cond}},
				dynastore.TxAction{Op: dynastore.TxPut, Item: messageItem(shardPK(dst, mrand.IntN(dstCfg.Shards)),
					messageSK(stateLive, skPriority(m.sk), nowMS, skID(m.sk)), m.Payload, nowMS, 0, nil, m.PushedMS)})
			if len(batch) >= dynastore.MaxTxActions-2 {
				return flush()
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return moved, err
		}
		if err := flush(); err != nil {
			return moved, err
		}
	}
	return moved, nil
}

var errStop = errors.New("coord: stop")

// Purge deletes every message of queue name and returns how many.
func (q *Queues) Purge(ctx context.Context, st dynastore.Store, name []byte) (int64, error) {
	cfg, err := q.Config(ctx, st, name)
	if err != nil {
		return 0, err
	}
	n := int64(0)
	for shard := range cfg.maxShards {
		var batch []dynastore.TxAction
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := st.Transact(ctx, batch)
			if err == nil {
				n += int64(len(batch))
			}
			batch = nil
			return err
		}
		err := eachItem(ctx, st, dynastore.Query{PK: shardPK(name, shard)}, func(it dynastore.Item) error {
			if isCounters(it) {
				return nil // the counters count what happened, purges included
			}
			batch = append(batch, dynastore.TxAction{Op: dynastore.TxDelete, Key: it.Key()})
			if len(batch) == dynastore.MaxTxActions {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func queueWakeKey(name []byte) string { return "q" + string(name) }

// Push is Queues.Push, waking this process's clients blocked on the queue.
func (s *Service) Push(ctx context.Context, st dynastore.Store, name, payload []byte, o PushOptions, now time.Time) (string, bool, error) {
	id, dup, err := s.Queues.Push(ctx, st, name, payload, o, now)
	if err == nil && !dup {
		s.wake.notify(queueWakeKey(name))
	}
	return id, dup, err
}

// Pop is Queues.Pop waiting up to wait (negative: without limit) for a
// message: polling with backoff, woken at once by a push through this
// process.
func (s *Service) Pop(ctx context.Context, st dynastore.Store, name []byte, count int, vt, wait time.Duration, now func() time.Time) ([]Message, error) {
	if wait < 0 {
		wait = time.Duration(1<<63 - 1)
	}
	var out []Message
	_, _, err := s.poll(ctx, queueWakeKey(name), wait, true, func() (bool, time.Time, error) {
		var err error
		out, err = s.Queues.Pop(ctx, st, name, count, vt, now)
		return len(out) > 0, time.Time{}, err
	})
	return out, err
}

// Woken tells this process's clients blocked on queue name that messages
// may have become ready (a NACK, a redrive).
func (s *Service) Woken(name []byte) { s.wake.notify(queueWakeKey(name)) }
