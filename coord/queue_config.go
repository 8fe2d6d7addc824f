package coord

// A queue's configuration: stored in its meta partition, cached per
// process for configTTL.

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
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

type cachedConfig struct {
	cfg QueueConfig
	at  time.Time
}

func queueMetaPK(name []byte) []byte { return append([]byte{model.NsQueueMeta}, name...) }

func checkQueueName(name []byte) error {
	if len(name)+2 > dynastore.MaxPKSize {
		return ErrNameTooLong
	}
	return nil
}

// Config returns queue name's configuration, read at most configTTL ago.
func (q *Queues) Config(c model.Scope, name []byte) (QueueConfig, error) {
	st := c.Data()
	if err := checkQueueName(name); err != nil {
		return QueueConfig{}, err
	}
	q.mu.Lock()
	cached, ok := q.configs[string(name)]
	q.mu.Unlock()
	if ok && time.Since(cached.at) < configTTL {
		return cached.cfg, nil
	}
	it, err := st.Get(c, dynastore.Key{PK: queueMetaPK(name), SK: []byte{0}})
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
func (q *Queues) Configure(c model.Scope, name []byte, s QueueSettings) (QueueConfig, error) {
	st := c.Data()
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
		old, err := q.Config(c, name)
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
		return q.Config(c, name)
	}
	it, err := st.Update(c, dynastore.Key{PK: queueMetaPK(name), SK: []byte{0}}, u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllNew})
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
