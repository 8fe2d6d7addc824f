package coord

// Queue administration: peeking, redriving dead messages, purging.

import (
	"bytes"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Peek returns up to count ready messages of queue name, in the order a
// pop would take them from one shard, changing nothing.
func (q *Queues) Peek(c model.Scope, name []byte, count int, now time.Time) ([]Message, error) {
	cfg, err := q.Config(c, name)
	if err != nil {
		return nil, err
	}
	var all []Message
	for shard := range cfg.maxShards {
		msgs, err := readyPage(c, name, shard, count, now.UnixMilli())
		if err != nil {
			return nil, err
		}
		all = append(all, msgs...)
	}
	slices.SortFunc(all, func(a, b Message) int { return bytes.Compare(a.sk, b.sk) })
	return all[:min(len(all), count)], nil
}

// eachItem calls f with every item q reads, page after page.
func eachItem(c model.Scope, q dynastore.Query, f func(dynastore.Item) error) error {
	for {
		page, err := c.Data().Query(c, q)
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
func (q *Queues) Redrive(c model.Scope, src, dst []byte, count int64, now time.Time) (int64, error) {
	st := c.Data()
	srcCfg, err := q.Config(c, src)
	if err != nil {
		return 0, err
	}
	dstCfg, err := q.Config(c, dst)
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
			err := st.Transact(c, append(batch, counterUpdate(batch[1].Item.Key().PK, "pushed", int64(len(batch)/2))))
			if _, taken := model.ConditionsFailed(err); taken || errors.Is(err, dynastore.ErrTxConflict) {
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
		err := eachItem(c, dynastore.Query{PK: shardPK(src, shard)}, func(it dynastore.Item) error {
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
func (q *Queues) Purge(c model.Scope, name []byte) (int64, error) {
	st := c.Data()
	cfg, err := q.Config(c, name)
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
			err := st.Transact(c, batch)
			if err == nil {
				n += int64(len(batch))
			}
			batch = nil
			return err
		}
		err := eachItem(c, dynastore.Query{PK: shardPK(name, shard)}, func(it dynastore.Item) error {
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
