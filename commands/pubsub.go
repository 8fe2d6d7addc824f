package commands

import (
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/pubsub"
)

// Publish/subscribe (Redis's pubsub.c): the subscriptions live in the
// process's pubsub.Hub, which also fans a message out to the other
// instances (pubsub.Peers); a connection's resp side is its Subscriber.

func registerPubSub(t *Table) {
	t.Register([]Row{
		{Name: "publish", Run: cmdPublish, MayReplicate: true},
		{Name: "spublish", Run: cmdSpublish, MayReplicate: true},
		{Name: "subscribe", Run: func(c *Ctx) { subscribe(c, pubsub.Channel) }, InSubscribed: true, SeveralReplies: true},
		{Name: "psubscribe", Run: func(c *Ctx) { subscribe(c, pubsub.Pattern) }, InSubscribed: true, SeveralReplies: true},
		{Name: "ssubscribe", Run: func(c *Ctx) { subscribe(c, pubsub.Shard) }, InSubscribed: true, SeveralReplies: true},
		{Name: "unsubscribe", Run: func(c *Ctx) { unsubscribe(c, pubsub.Channel) }, InSubscribed: true, SeveralReplies: true},
		{Name: "punsubscribe", Run: func(c *Ctx) { unsubscribe(c, pubsub.Pattern) }, InSubscribed: true, SeveralReplies: true},
		{Name: "sunsubscribe", Run: func(c *Ctx) { unsubscribe(c, pubsub.Shard) }, InSubscribed: true, SeveralReplies: true},
		{Name: "pubsub|channels", Run: func(c *Ctx) { pubsubChannels(c, false) }},
		{Name: "pubsub|shardchannels", Run: func(c *Ctx) { pubsubChannels(c, true) }},
		{Name: "pubsub|numsub", Run: func(c *Ctx) { pubsubNumsub(c, false) }},
		{Name: "pubsub|shardnumsub", Run: func(c *Ctx) { pubsubNumsub(c, true) }},
		{Name: "pubsub|numpat", Run: cmdPubsubNumpat},
		{Name: "pubsub|help", Run: cmdPubsubHelp},
	})
}

// Hub returns the process's pub/sub hub, made on first use when the server
// was built without one.
func (s *Server) Hub() *pubsub.Hub {
	s.hubOnce.Do(s.initHub)
	return s.PubSub
}

// KeyEvents returns the process's key event dispatcher, made with the hub
// on first use when the server was built without one.
func (s *Server) KeyEvents() *events.Dispatcher {
	s.hubOnce.Do(s.initHub)
	return s.Events
}

func (s *Server) initHub() {
	if s.PubSub == nil {
		s.PubSub = pubsub.NewHub()
	}
	if s.Events == nil {
		s.Events = &events.Dispatcher{}
	}
	s.Events.SetPublisher(notifications{s.PubSub})
}

// subscriber is the connection's Subscriber (nil for a script or the CLI,
// which cannot subscribe).
func subscriber(c *Ctx) pubsub.Subscriber {
	if c.Conn == nil {
		return nil
	}
	return c.Conn.Sub
}

// subCounts returns the connection's channel, pattern and shard channel
// subscriptions (CLIENT LIST's sub, psub, ssub).
func (s *Server) subCounts(cn *Conn) (sub, psub, ssub int) {
	if cn == nil || cn.Sub == nil {
		return 0, 0, 0
	}
	h := s.Hub()
	return h.Count(cn.Sub, pubsub.Channel), h.Count(cn.Sub, pubsub.Pattern), h.Count(cn.Sub, pubsub.Shard)
}

// resubscribed records whether the connection still holds a subscription.
func resubscribed(c *Ctx) {
	sub, psub, ssub := c.Srv.subCounts(c.Conn)
	c.Conn.subscribed = sub+psub+ssub > 0
}

// Leave drops every subscription of the connection (RESET, QUIT, close).
func (s *Server) Leave(cn *Conn) {
	s.untrack(cn)
	s.monitors.remove(cn)
	if cn != nil && cn.Sub != nil {
		s.Hub().Leave(cn.Sub)
		cn.subscribed = false
	}
}

func cmdPublish(c *Ctx)  { publish(c, false) }
func cmdSpublish(c *Ctx) { publish(c, true) }

func publish(c *Ctx, shard bool) {
	ctx := c.Context
	if s := subscriber(c); s != nil {
		ctx = pubsub.WithPublisher(ctx, s)
	}
	// A peer that could not be reached leaves the count of those reached:
	// delivery is at most once, as in Redis.
	n, _ := c.Srv.Hub().Publish(ctx, pubsub.Message{Shard: shard, Channel: c.Args[1], Payload: c.Args[2]})
	c.W.Int(n)
}

var subscribeReplies = [...]string{pubsub.Channel: "subscribe", pubsub.Pattern: "psubscribe", pubsub.Shard: "ssubscribe"}
var unsubscribeReplies = [...]string{pubsub.Channel: "unsubscribe", pubsub.Pattern: "punsubscribe", pubsub.Shard: "sunsubscribe"}

// pushHeader starts a push message of n elements (an array in RESP2).
func pushHeader(w Writer, n int) {
	if p, ok := w.(interface{ Push(n int) }); ok {
		p.Push(n)
		return
	}
	w.Array(n)
}

// count is the number Redis replies after a (un)subscription: a shard
// subscription counts shard channels, the others channels and patterns.
func count(h *pubsub.Hub, s pubsub.Subscriber, k pubsub.Kind) int64 {
	if k == pubsub.Shard {
		return int64(h.Count(s, pubsub.Shard))
	}
	return int64(h.Count(s, pubsub.Channel) + h.Count(s, pubsub.Pattern))
}

func subscribe(c *Ctx, k pubsub.Kind) {
	s := subscriber(c)
	if s == nil {
		c.W.Error("ERR " + subscribeReplies[k] + " isn't allowed for a DENY BLOCKING client")
		return
	}
	h := c.Srv.Hub()
	for _, name := range c.Args[1:] {
		h.Subscribe(s, k, name)
		pushHeader(c.W, 3)
		c.W.BulkString(subscribeReplies[k])
		c.W.Bulk(name)
		c.W.Int(count(h, s, k))
	}
	resubscribed(c)
}

func unsubscribe(c *Ctx, k pubsub.Kind) {
	s := subscriber(c)
	if s == nil {
		c.W.Error("ERR " + unsubscribeReplies[k] + " isn't allowed for a DENY BLOCKING client")
		return
	}
	h := c.Srv.Hub()
	names := c.Args[1:]
	if len(names) == 0 {
		names = h.Names(s, k)
		if len(names) == 0 {
			pushHeader(c.W, 3)
			c.W.BulkString(unsubscribeReplies[k])
			c.W.Nil()
			c.W.Int(count(h, s, k))
			return
		}
	}
	for _, name := range names {
		h.Unsubscribe(s, k, name)
		pushHeader(c.W, 3)
		c.W.BulkString(unsubscribeReplies[k])
		c.W.Bulk(name)
		c.W.Int(count(h, s, k))
	}
	resubscribed(c)
}

func pubsubChannels(c *Ctx, shard bool) {
	if len(c.Args) > 3 {
		c.W.Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try PUBSUB HELP.")
		return
	}
	var pat []byte
	if len(c.Args) == 3 {
		pat = c.Args[2]
	}
	chans, _ := c.Srv.Hub().Channels(c.Context, pat, shard)
	c.W.Array(len(chans))
	for _, ch := range chans {
		c.W.Bulk(ch)
	}
}

func pubsubNumsub(c *Ctx, shard bool) {
	chans := c.Args[2:]
	counts, _ := c.Srv.Hub().NumSub(c.Context, chans, shard)
	c.W.Array(2 * len(chans))
	for i, ch := range chans {
		c.W.Bulk(ch)
		c.W.Int(counts[i])
	}
}

func cmdPubsubNumpat(c *Ctx) {
	n, _ := c.Srv.Hub().NumPat(c.Context)
	c.W.Int(n)
}

func cmdPubsubHelp(c *Ctx) {
	writeHelp(c, "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
	)
}
