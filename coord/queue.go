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
// A queue's counters are in its shard partitions, spread over
// counterSlots items, and written apart from the operations they count
// (queue_stats.go). Each queue has a
// partition of its own for its configuration (cached) and deduplication
// records:
//
//	pk  'Q', queue name
//	sk  0: configuration; 2, dedup id: a dedup record

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
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

const (
	stateLive = 1
	stateDead = 2
)

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
	// tallies are the table counters' counts not yet written, by queue
	// name (queue_stats.go).
	tallyMu sync.Mutex
	tallies map[string]*tally
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

func shardPK(name []byte, shard int) []byte {
	return append([]byte{model.NsQueue, byte(shard)}, name...)
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
func (q *Queues) Push(c model.Scope, name, payload []byte, o PushOptions, now time.Time) (id string, dup bool, err error) {
	st := c.Data()
	cfg, err := q.Config(c, name)
	if err != nil {
		return "", false, err
	}
	nowMS := now.UnixMilli()
	rawID := q.newMessageID(now)
	id = hex.EncodeToString(rawID)
	visible := nowMS + o.Delay.Milliseconds()
	pk := shardPK(name, int(q.rr.Add(1)%uint64(cfg.Shards)))
	msg := messageItem(pk, messageSK(stateLive, o.Priority, visible, rawID), payload, visible, 0, nil, nowMS)
	acts, counted := q.count(st, []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: msg, Cond: dynastore.NotExists{Attr: dynastore.AttrPK}},
	}, name, pk, "pushed", 1)
	dedupAt := -1 // the dedup record's action
	if o.Dedup != nil {
		exp := nowMS + cfg.DedupWindow.Milliseconds()
		rec := dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(queueMetaPK(name))},
			{Name: dynastore.AttrSK, Value: dynastore.B(append([]byte{2}, o.Dedup...))},
			{Name: attrMessageID, Value: dynastore.S(id)},
			{Name: model.AttrExpiry, Value: model.NInt(exp)},
			{Name: dynastore.AttrTTL, Value: model.TTLSeconds(exp)},
		}
		dedupAt = len(acts)
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: rec, OldOnFailure: true, Cond: dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.Compare{Attr: model.AttrExpiry, Op: dynastore.OpLE, Val: model.NInt(nowMS)},
		}})
	}
	err = model.WriteActions(c, acts)
	r, failed := model.ConditionsFailed(err)
	if old, dup := r.Failed(dedupAt); failed && dedupAt >= 0 && r.Actions() == len(acts) && dup {
		first, _ := old.Get(attrMessageID).(dynastore.S)
		q.statsOf(name).Deduplicated.Add(1)
		dacts, dcounted := q.count(st, nil, name, pk, "deduplicated", 1)
		if err = model.WriteActions(c, dacts); err == nil {
			dcounted()
		}
		return string(first), true, err
	}
	if err != nil {
		return "", false, err
	}
	counted()
	q.statsOf(name).Pushed.Add(1)
	return id, false, nil
}

// ready is the filter of a shard's messages that are ready at nowMS.
func ready(nowMS int64) dynastore.Cond {
	return dynastore.Compare{Attr: attrVisible, Op: dynastore.OpLE, Val: model.NInt(nowMS)}
}

// readySlack is how many items more than it needs the first page of
// ready messages reads: a Query bills every item it reads, the
// filtered-out ones included, so a page reads few; the slack lets one page
// step over a few messages not yet visible of a better priority. Each
// further page reads twice as many as the one before, up to
// maxReadyPage, so that many such messages take few requests.
const (
	readySlack   = 4
	maxReadyPage = 1000
)

// readyPage reads up to limit ready live messages of one shard, in order.
func readyPage(c model.Scope, name []byte, shard, limit int, nowMS int64) ([]Message, error) {
	pk := shardPK(name, shard)
	var out []dynastore.Item
	var after []byte
	for read := limit + readySlack; ; read = min(2*read, maxReadyPage) {
		page, err := c.Data().Query(c, dynastore.Query{PK: pk, Op: dynastore.SKBeginsWith, A: []byte{stateLive},
			Filter: ready(nowMS), Limit: read, After: after})
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

// QueueVT asks Pop for the queue's own visibility timeout.
const QueueVT time.Duration = -1

// Pop delivers up to count ready messages of queue name, invisible for vt
// (0: deleted at once; QueueVT: the queue's). Messages received MaxReceives times go to the
// dead-letter queue (or are held as dead) instead, in the same write.
func (q *Queues) Pop(c model.Scope, name []byte, count int, vt time.Duration, now func() time.Time) ([]Message, error) {
	cfg, err := q.Config(c, name)
	if err != nil {
		return nil, err
	}
	if vt == QueueVT {
		vt = cfg.VT
	}
	// Dead letters go to the DLQ's shards, as its own pushes do.
	dlqShards := 0
	if cfg.DLQ != nil {
		dcfg, err := q.Config(c, cfg.DLQ)
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
			msgs, err := readyPage(c, name, shard, count-len(out), t.UnixMilli())
			if err != nil {
				return out, err
			}
			if len(msgs) == 0 {
				break
			}
			got, lost, err := q.take(c, name, cfg, dlqShards, msgs, vt, t)
			out = append(out, got...)
			if err != nil {
				return out, err
			}
			if lost {
				if err := c.LostRace(&retry); err != nil {
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
func (q *Queues) take(c model.Scope, name []byte, cfg QueueConfig, dlqShards int, msgs []Message, vt time.Duration, now time.Time) ([]Message, bool, error) {
	st := c.Data()
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
			nonce := model.NewVer()
			visible := nowMS + vt.Milliseconds()
			sk := messageSK(stateLive, prio, visible, id)
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut,
				Item: messageItem(pk, sk, m.Payload, visible, m.Deliveries+1, nonce, pushed)})
			m.Deliveries++
			m.Receipt = encodeReceipt(m.shard, sk, nonce)
			out = append(out, m)
		}
	}
	counted := []func(){}
	if dead > 0 {
		var done func()
		acts, done = q.count(st, acts, name, shardPK(name, msgs[0].shard), "deadlettered", dead)
		counted = append(counted, done)
		if dpk != nil {
			acts, done = q.count(st, acts, cfg.DLQ, dpk, "pushed", dead)
			counted = append(counted, done)
		}
	}
	err := model.WriteActions(c, acts)
	if err != nil {
		// Another worker took or moved one of them first. A throttled
		// or unavailable store is no lost race: running again at once
		// would only add load, so the error goes to the client.
		if errors.Is(model.Refused(err, nil), model.ErrConflict) {
			return nil, true, nil
		}
		return nil, false, err
	}
	for _, done := range counted {
		done()
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
func (q *Queues) Ack(c model.Scope, name []byte, receipts [][]byte) (int64, error) {
	st := c.Data()
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
			acts, counted := q.count(st, acts, name, acts[0].Key.PK, "acked", n)
			err := model.WriteActions(c, acts)
			if r, ok := model.ConditionsFailed(err); ok {
				// Drop the stale receipts and try the rest again: each
				// pass drops one at least, so the loop ends.
				j, dropped := 0, false
				for i := range batch {
					if live[i] {
						if _, stale := r.Failed(j); stale {
							live[i], dropped = false, true
						}
						j++
					}
				}
				if dropped {
					continue
				}
			}
			if err != nil {
				return 0, err
			}
			counted()
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
func (q *Queues) Nack(c model.Scope, name, receipt []byte, delay time.Duration, now time.Time) (bool, error) {
	st := c.Data()
	k, nonce, err := decodeReceipt(name, receipt)
	if err != nil {
		return false, err
	}
	m, ok := q.delivered.take(string(receipt))
	if !ok {
		it, err := st.Get(c, k)
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
	acts, counted := q.count(st, []dynastore.TxAction{
		{Op: dynastore.TxDelete, Key: k, Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}},
		{Op: dynastore.TxPut, Item: moved},
	}, name, k.PK, "nacked", 1)
	err = model.WriteActions(c, acts)
	if _, stale := model.ConditionsFailed(err); stale {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	counted()
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
func (q *Queues) Extend(c model.Scope, name, receipt []byte, vt time.Duration, now time.Time) (bool, error) {
	st := c.Data()
	k, nonce, err := decodeReceipt(name, receipt)
	if err != nil {
		return false, err
	}
	_, err = st.Update(c, k, dynastore.Update{Set: []dynastore.SetAction{
		{Attr: attrVisible, Val: model.NInt(now.UnixMilli() + vt.Milliseconds())},
	}}, dynastore.WriteOptions{Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}})
	if errors.Is(err, dynastore.ErrConditionFailed) {
		return false, nil
	}
	return err == nil, err
}

func queueWakeKey(name []byte) string { return "q" + string(name) }

// Push is Queues.Push, waking this process's clients blocked on the queue.
func (s *Service) Push(c model.Scope, name, payload []byte, o PushOptions, now time.Time) (string, bool, error) {
	id, dup, err := s.Queues.Push(c, name, payload, o, now)
	if err == nil && !dup {
		s.wake.notify(queueWakeKey(name))
	}
	return id, dup, err
}

// Pop is Queues.Pop waiting up to wait (negative: without limit) for a
// message: polling with backoff, woken at once by a push through this
// process.
func (s *Service) Pop(c model.Scope, name []byte, count int, vt, wait time.Duration, now func() time.Time) ([]Message, error) {
	if wait < 0 {
		wait = time.Duration(1<<63 - 1)
	}
	var out []Message
	_, _, err := s.poll(c, queueWakeKey(name), wait, true, func() (bool, time.Time, error) {
		var err error
		out, err = s.Queues.Pop(c, name, count, vt, now)
		return len(out) > 0, time.Time{}, err
	})
	return out, err
}

// Woken tells this process's clients blocked on queue name that messages
// may have become ready (a NACK, a redrive).
func (s *Service) Woken(name []byte) { s.wake.notify(queueWakeKey(name)) }
