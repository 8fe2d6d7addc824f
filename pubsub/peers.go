// Package pubsub is one redamo process's publish/subscribe: the
// subscriptions of its connections (channels, patterns, shard channels),
// delivery of a message to the local subscribers it matches, and the
// instances of the same table it fans a message out to (Peers).
//
// The command layer (SUBSCRIBE, PUBLISH, PUBSUB ...) speaks to a Hub; how
// instances reach each other is behind Peers (package bus implements it).
package pubsub

import "context"

// Message is one published message as it travels between instances.
type Message struct {
	// Shard is set for SPUBLISH (shard channels: no pattern matches them).
	Shard   bool
	Channel []byte
	Payload []byte
}

// Peers is how a Hub reaches the other instances on the same table. Every
// method covers the other instances only; the Hub adds its own clients.
type Peers interface {
	// Publish delivers m to the subscribers of every other instance and
	// returns how many clients received it there.
	Publish(ctx context.Context, m Message) (int64, error)
	// Channels returns the active channels (shard channels when shard is
	// set) of the other instances that match pattern (nil: all), without
	// duplicates.
	Channels(ctx context.Context, pattern []byte, shard bool) ([][]byte, error)
	// NumSub returns, for each channel, its subscriber count on the other
	// instances (shard channels when shard is set).
	NumSub(ctx context.Context, channels [][]byte, shard bool) ([]int64, error)
	// NumPat returns the number of pattern subscriptions on the other
	// instances.
	NumPat(ctx context.Context) (int64, error)
}

// Local is what an instance answers for itself when a peer asks: the
// Hub implements it, and the bus calls it for requests from other
// instances.
type Local interface {
	// Deliver delivers m to this instance's matching subscribers and
	// returns how many clients received it.
	Deliver(m Message) int64
	// LocalChannels, LocalNumSub and LocalNumPat are Peers' questions
	// answered for this instance alone.
	LocalChannels(pattern []byte, shard bool) [][]byte
	LocalNumSub(channels [][]byte, shard bool) []int64
	LocalNumPat() int64
}
