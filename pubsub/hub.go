package pubsub

import (
	"context"
	"sort"
	"sync"

	"github.com/redamo/redamo/internal/glob"
)

// Kind is what a subscription is to: a channel, a pattern or a shard
// channel.
type Kind uint8

const (
	Channel Kind = iota
	Pattern
	Shard
	kinds
)

// Subscriber is one subscribed client. Push hands it a message to send; it
// must not block (the client's connection queues it, or drops the client
// when its output buffer is over the limit). pattern is nil unless the
// message matched a pattern subscription.
type Subscriber interface {
	Push(ctx context.Context, kind Kind, pattern, channel, payload []byte)
}

// Hub is one process's subscriptions and their delivery. Its zero value is
// not usable: NewHub.
type Hub struct {
	mu sync.RWMutex
	// subs holds, per kind, each name's subscribers in subscription order.
	subs [kinds]map[string][]Subscriber
	// clients holds each subscriber's own subscriptions, per kind, in the
	// order made: UNSUBSCRIBE without arguments answers in that order
	// (Redis in its dict's order, which no client can rely on).
	clients map[Subscriber]*client

	peers Peers
}

type client struct {
	names [kinds][]string
}

// The bus answers the other instances through the Hub.
var _ Local = (*Hub)(nil)

// NewHub returns a Hub serving this process alone until SetPeers.
func NewHub() *Hub {
	h := &Hub{clients: map[Subscriber]*client{}}
	for k := range h.subs {
		h.subs[k] = map[string][]Subscriber{}
	}
	return h
}

// SetPeers plugs in the other instances (the bus); nil: this process alone.
// Set it before serving clients.
func (h *Hub) SetPeers(p Peers) {
	h.mu.Lock()
	h.peers = p
	h.mu.Unlock()
}

func (h *Hub) getPeers() Peers {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.peers
}

// Subscribe adds s's subscription of kind k to name; false if it had it.
func (h *Hub) Subscribe(s Subscriber, k Kind, name []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cl := h.clients[s]
	if cl == nil {
		cl = &client{}
		h.clients[s] = cl
	}
	n := string(name)
	for _, have := range cl.names[k] {
		if have == n {
			return false
		}
	}
	cl.names[k] = append(cl.names[k], n)
	h.subs[k][n] = append(h.subs[k][n], s)
	return true
}

// Unsubscribe removes s's subscription of kind k to name; false if it had
// none.
func (h *Hub) Unsubscribe(s Subscriber, k Kind, name []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unsubscribe(s, k, string(name))
}

func (h *Hub) unsubscribe(s Subscriber, k Kind, n string) bool {
	cl := h.clients[s]
	if cl == nil {
		return false
	}
	i := indexOf(cl.names[k], n)
	if i < 0 {
		return false
	}
	cl.names[k] = append(cl.names[k][:i], cl.names[k][i+1:]...)
	subs := h.subs[k][n]
	if j := indexOf(subs, s); j >= 0 {
		subs = append(subs[:j:j], subs[j+1:]...)
	}
	if len(subs) == 0 {
		delete(h.subs[k], n)
	} else {
		h.subs[k][n] = subs
	}
	if len(cl.names[Channel])+len(cl.names[Pattern])+len(cl.names[Shard]) == 0 {
		delete(h.clients, s)
	}
	return true
}

func indexOf[T comparable](xs []T, x T) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// Names returns s's subscriptions of kind k, in the order made.
func (h *Hub) Names(s Subscriber, k Kind) [][]byte {
	h.mu.RLock()
	defer h.mu.RUnlock()
	cl := h.clients[s]
	if cl == nil {
		return nil
	}
	out := make([][]byte, len(cl.names[k]))
	for i, n := range cl.names[k] {
		out[i] = []byte(n)
	}
	return out
}

// Count returns how many subscriptions of kind k s has.
func (h *Hub) Count(s Subscriber, k Kind) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if cl := h.clients[s]; cl != nil {
		return len(cl.names[k])
	}
	return 0
}

// Leave removes every subscription of s (RESET, QUIT, a closed
// connection).
func (h *Hub) Leave(s Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cl := h.clients[s]
	if cl == nil {
		return
	}
	for k := range cl.names {
		for _, n := range append([]string(nil), cl.names[k]...) {
			h.unsubscribe(s, Kind(k), n)
		}
	}
}

// Totals returns this process's active channels, patterns and shard
// channels (INFO's pubsub_channels, pubsub_patterns, pubsubshard_channels).
func (h *Hub) Totals() (channels, patterns, shards int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[Channel]), len(h.subs[Pattern]), len(h.subs[Shard])
}

// Publish delivers m to this process's subscribers and through the peers
// to the other instances', and returns how many clients received it. A
// peer's failure does not take back the local delivery: it is reported
// with the local count (delivery is at most once, as in Redis).
func (h *Hub) Publish(ctx context.Context, m Message) (int64, error) {
	n := h.deliver(ctx, m)
	p := h.getPeers()
	if p == nil {
		return n, nil
	}
	more, err := p.Publish(ctx, m)
	return n + more, err
}

// Deliver implements Local: a message from another instance.
func (h *Hub) Deliver(m Message) int64 { return h.deliver(context.Background(), m) }

// DeliverLocal delivers a message to this process's subscribers alone: a
// keyspace notification, which every instance publishes for itself from
// the key events it receives (events.Publisher).
func (h *Hub) DeliverLocal(channel, payload []byte) {
	h.deliver(context.Background(), Message{Channel: channel, Payload: payload})
}

// DeliverLocalFrom is DeliverLocal of a notification that a command of
// from (a subscriber) raised: from puts it among its own replies, before
// that command's reply, as Redis sends it.
func (h *Hub) DeliverLocalFrom(from Subscriber, channel, payload []byte) {
	h.deliver(WithPublisher(context.Background(), from), Message{Channel: channel, Payload: payload})
}

// deliver pushes m to its subscribers while holding the read lock, so
// that two publishes of one publisher reach every subscriber in order.
func (h *Hub) deliver(ctx context.Context, m Message) int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var n int64
	if m.Shard {
		for _, s := range h.subs[Shard][string(m.Channel)] {
			s.Push(ctx, Shard, nil, m.Channel, m.Payload)
			n++
		}
		return n
	}
	for _, s := range h.subs[Channel][string(m.Channel)] {
		s.Push(ctx, Channel, nil, m.Channel, m.Payload)
		n++
	}
	for pat, subs := range h.subs[Pattern] {
		if !glob.Match([]byte(pat), m.Channel) {
			continue
		}
		for _, s := range subs {
			s.Push(ctx, Pattern, []byte(pat), m.Channel, m.Payload)
			n++
		}
	}
	return n
}

// LocalChannels implements Local.
func (h *Hub) LocalChannels(pattern []byte, shard bool) [][]byte {
	k := Channel
	if shard {
		k = Shard
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out [][]byte
	for n := range h.subs[k] {
		if pattern == nil || glob.Match(pattern, []byte(n)) {
			out = append(out, []byte(n))
		}
	}
	return out
}

// LocalNumSub implements Local.
func (h *Hub) LocalNumSub(channels [][]byte, shard bool) []int64 {
	k := Channel
	if shard {
		k = Shard
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]int64, len(channels))
	for i, c := range channels {
		out[i] = int64(len(h.subs[k][string(c)]))
	}
	return out
}

// LocalNumPat implements Local. Like Redis it counts distinct patterns,
// not pattern subscriptions.
func (h *Hub) LocalNumPat() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return int64(len(h.subs[Pattern]))
}

// Channels answers PUBSUB CHANNELS / SHARDCHANNELS across instances.
func (h *Hub) Channels(ctx context.Context, pattern []byte, shard bool) ([][]byte, error) {
	out := h.LocalChannels(pattern, shard)
	p := h.getPeers()
	if p == nil {
		return out, nil
	}
	more, err := p.Channels(ctx, pattern, shard)
	if err != nil {
		return out, err
	}
	seen := make(map[string]bool, len(out))
	for _, c := range out {
		seen[string(c)] = true
	}
	for _, c := range more {
		if !seen[string(c)] {
			seen[string(c)] = true
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i]) < string(out[j]) })
	return out, nil
}

// NumSub answers PUBSUB NUMSUB / SHARDNUMSUB across instances.
func (h *Hub) NumSub(ctx context.Context, channels [][]byte, shard bool) ([]int64, error) {
	out := h.LocalNumSub(channels, shard)
	p := h.getPeers()
	if p == nil || len(channels) == 0 {
		return out, nil
	}
	more, err := p.NumSub(ctx, channels, shard)
	if err != nil {
		return out, err
	}
	for i := range out {
		if i < len(more) {
			out[i] += more[i]
		}
	}
	return out, nil
}

// NumPat answers PUBSUB NUMPAT across instances (each instance's distinct
// patterns, summed).
func (h *Hub) NumPat(ctx context.Context) (int64, error) {
	n := h.LocalNumPat()
	p := h.getPeers()
	if p == nil {
		return n, nil
	}
	more, err := p.NumPat(ctx)
	return n + more, err
}

type publisherKey struct{}

// WithPublisher marks ctx as a publish by s itself, so that s can put the
// message among its own replies where Redis does (before PUBLISH's reply).
func WithPublisher(ctx context.Context, s Subscriber) context.Context {
	return context.WithValue(ctx, publisherKey{}, s)
}

// Publisher returns the subscriber WithPublisher set on ctx, or nil.
func Publisher(ctx context.Context) Subscriber {
	s, _ := ctx.Value(publisherKey{}).(Subscriber)
	return s
}
