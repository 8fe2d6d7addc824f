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
// priority, then the time they were pushed to become visible, then push
// order, and a pushed message with a delay after the ready ones of its
// priority, so a pop finds the next message in the first page of one
// Query.
//
// Popping claims a message in place: one conditional UpdateItem sets it
// visible again at now + VT with a fresh nonce, on the condition that it
// is still as the pop read it (the same nonce, or none) and visible. Its
// sort key stays, so a receipt (the item and the nonce) names it for good:
// acknowledging is one conditional delete, NACK and EXTEND one conditional
// update, and a receipt goes stale when its message is delivered again or
// handed back (another nonce, or none). A message thus costs a write unit
// to push, one to pop and one to acknowledge, DynamoDB's floor, where
// moving it to a new place on each delivery took a transaction of two
// items (four units). The price is in reads: a delivered message keeps its
// place among the ready ones, and a pop's Query reads past the messages in
// flight ahead of the first ready one (Query bills what it reads, the
// filtered-out items included: about 25 small messages per read unit), and
// a message whose visibility timeout lapses, or that was handed back, is
// served again from its first place, before younger ones. A pop reads as
// many messages more as this process's other pops are claiming on the
// shard, and skips theirs, so that its concurrent workers do not all race
// for the head (a failed conditional write bills a unit too).
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
	mu       sync.Mutex
	configs  map[string]cachedConfig
	claiming claimSet
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

// claimSet is the messages this process's pops are claiming right now,
// by shard partition and sort key, so that concurrent pops of one queue
// through this process each claim another message instead of racing for
// the first ready one.
type claimSet struct {
	mu sync.Mutex
	// m holds the claimed messages' keys; n counts them per shard
	// partition.
	m map[string]bool
	n map[string]int
}

func claimKey(pk, sk []byte) string { return string(pk) + "\x00" + string(sk) }

// busy is how many messages of shard partition pk are being claimed.
func (s *claimSet) busy(pk []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[string(pk)]
}

// reserve returns up to n of msgs (shard partition pk's) that no other pop
// of this process is claiming, marked as this one's.
func (s *claimSet) reserve(pk []byte, msgs []Message, n int) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m, s.n = map[string]bool{}, map[string]int{}
	}
	var out []Message
	for _, m := range msgs {
		if len(out) == n {
			break
		}
		if k := claimKey(pk, m.sk); !s.m[k] {
			s.m[k] = true
			out = append(out, m)
		}
	}
	s.n[string(pk)] += len(out)
	return out
}

// release ends the claims of msgs (shard partition pk's).
func (s *claimSet) release(pk []byte, msgs []Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		delete(s.m, claimKey(pk, m.sk))
	}
	if s.n[string(pk)] -= len(msgs); s.n[string(pk)] <= 0 {
		delete(s.n, string(pk))
	}
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
	shards := shardOrder(cfg.maxShards)
	// A pop that lost every message it tried to another worker reads
	// again on the same shard, after the retry policy's wait; what was
	// taken stays taken.
	err = model.RetryConflicts(c, func(int) error {
		for ; len(shards) > 0; shards = shards[1:] {
			pk := shardPK(name, shards[0])
			for len(out) < count {
				t := now()
				need := count - len(out)
				msgs, err := readyPage(c, name, shards[0], need+q.claiming.busy(pk), t.UnixMilli())
				if err != nil {
					return err
				}
				if len(msgs) == 0 {
					break
				}
				mine := q.claiming.reserve(pk, msgs, need)
				var got []Message
				progress := false
				if len(mine) > 0 {
					got, progress, err = q.take(c, name, cfg, dlqShards, mine, vt, t)
					q.claiming.release(pk, mine)
				}
				out = append(out, got...)
				if err != nil {
					return err
				}
				if !progress {
					return model.ErrConflict
				}
			}
			if len(out) == count {
				return nil
			}
		}
		return nil
	})
	if len(out) > 0 {
		// Messages taken before a failure are delivered: not returning
		// them would only hide them for their visibility timeout.
		return out, nil
	}
	return out, err
}

// unchanged is the condition that a message item is still as msg was
// read, and visible at nowMS: not taken by another worker since.
func unchanged(m Message, nowMS int64) dynastore.Cond {
	cond := dynastore.Cond(dynastore.NotExists{Attr: attrNonce})
	if nonce := m.item.Get(attrNonce); nonce != nil {
		cond = dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}
	}
	return dynastore.And{dynastore.Exists{Attr: dynastore.AttrPK}, cond, ready(nowMS)}
}

// take delivers msgs (read from one shard at now): each claimed in place,
// visible again at now + vt with a fresh nonce, or deleted when vt is 0,
// with one single-item write each, all at once; those received MaxReceives
// times are dead-lettered in one transaction. It returns what it took, in
// msgs' order: a message another worker took first is left out, and so is
// one whose write's outcome is unknown (if it was taken, it is visible
// again after vt, as an undelivered message is). The error is the first
// failure other than a lost race.
func (q *Queues) take(c model.Scope, name []byte, cfg QueueConfig, dlqShards int, msgs []Message, vt time.Duration, now time.Time) (out []Message, progress bool, err error) {
	st := c.Data()
	nowMS := now.UnixMilli()
	var dead, live []Message
	for _, m := range msgs {
		if cfg.MaxReceives > 0 && m.Deliveries >= cfg.MaxReceives {
			dead = append(dead, m)
		} else {
			live = append(live, m)
		}
	}
	taken := make([]bool, len(live))
	errs := make([]error, len(live)+1)
	claim := func(i int) {
		m := &live[i]
		k := dynastore.Key{PK: shardPK(name, m.shard), SK: m.sk}
		o := dynastore.WriteOptions{Cond: unchanged(*m, nowMS)}
		var err error
		if vt == 0 {
			_, err = st.Delete(c, k, o)
		} else {
			nonce := model.NewVer()
			_, err = st.Update(c, k, dynastore.Update{
				Set: []dynastore.SetAction{{Attr: attrVisible, Val: model.NInt(nowMS + vt.Milliseconds())}, {Attr: attrNonce, Val: nonce}},
				Add: []dynastore.AttrValue{{Attr: attrDeliveries, Val: model.NInt(1)}},
			}, o)
			m.Receipt = encodeReceipt(m.shard, m.sk, nonce)
		}
		m.Deliveries++
		if errors.Is(model.Refused(err, nil), model.ErrConflict) {
			return // another worker took it first
		}
		taken[i], errs[i] = err == nil, err
	}
	if len(live) == 1 || inTxn(st) {
		// One request needs no goroutine; a transaction buffer records
		// its writes in order.
		for i := range live {
			claim(i)
		}
	} else {
		var wg sync.WaitGroup
		for i := range live {
			wg.Add(1)
			go func() {
				defer wg.Done()
				claim(i)
			}()
		}
		wg.Wait()
	}
	if len(dead) > 0 {
		progress, errs[len(live)] = q.deadLetter(c, name, cfg, dlqShards, dead, nowMS)
	}
	counts := q.statsOf(name)
	for i, m := range live {
		if !taken[i] {
			continue
		}
		out = append(out, m)
		counts.Delivered.Add(1)
		if m.Deliveries > 1 {
			counts.Redelivered.Add(1)
		}
	}
	progress = progress || len(out) > 0
	for _, err := range errs {
		if err != nil {
			return out, progress, err
		}
	}
	return out, progress, nil
}

// deadLetter moves msgs, received MaxReceives times, to the queue's
// dead-letter queue (or holds them as dead), in one transaction, and
// reports whether it did: a message another worker took first leaves them
// all where they are.
func (q *Queues) deadLetter(c model.Scope, name []byte, cfg QueueConfig, dlqShards int, msgs []Message, nowMS int64) (bool, error) {
	st := c.Data()
	var dpk []byte // the DLQ shard these dead letters go to
	if cfg.DLQ != nil {
		dpk = shardPK(cfg.DLQ, mrand.IntN(dlqShards))
	}
	var acts []dynastore.TxAction
	for _, m := range msgs {
		pk := shardPK(name, m.shard)
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: dynastore.Key{PK: pk, SK: m.sk}, Cond: unchanged(m, nowMS)})
		prio, id := skPriority(m.sk), skID(m.sk)
		it := messageItem(pk, messageSK(stateDead, prio, nowMS, id), m.Payload, nowMS, m.Deliveries, nil, m.PushedMS)
		if dpk != nil {
			it = messageItem(dpk, messageSK(stateLive, prio, nowMS, id), m.Payload, nowMS, 0, nil, m.PushedMS)
		}
		acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: it})
	}
	n := int64(len(msgs))
	acts, counted := q.count(st, acts, name, shardPK(name, msgs[0].shard), "deadlettered", n)
	done := []func(){counted}
	if dpk != nil {
		acts, counted = q.count(st, acts, cfg.DLQ, dpk, "pushed", n)
		done = append(done, counted)
	}
	err := model.WriteActions(c, acts)
	if errors.Is(model.Refused(err, nil), model.ErrConflict) {
		// Another worker took or moved one of them first. A throttled
		// or unavailable store is no lost race: that error goes to the
		// client.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, f := range done {
		f()
	}
	q.statsOf(name).DeadLettered.Add(n)
	return true, nil
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
// for a stale receipt. The message keeps its place in the order, and
// loses its nonce, so its receipt is stale from then on and QUEUE.STATS
// counts it as waiting, not in flight.
func (q *Queues) Nack(c model.Scope, name, receipt []byte, delay time.Duration, now time.Time) (bool, error) {
	st := c.Data()
	k, nonce, err := decodeReceipt(name, receipt)
	if err != nil {
		return false, err
	}
	acts, counted := q.count(st, []dynastore.TxAction{{Op: dynastore.TxUpdate, Key: k,
		Update: &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: attrVisible, Val: model.NInt(now.UnixMilli() + delay.Milliseconds())}},
			Remove: []string{attrNonce},
		},
		Cond: dynastore.Compare{Attr: attrNonce, Op: dynastore.OpEQ, Val: nonce}},
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
