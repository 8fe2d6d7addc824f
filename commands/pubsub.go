package commands

// Publish/subscribe: redamo has no SUBSCRIBE (nothing can be subscribed to
// a channel), so PUBLISH, which Redis-based lock libraries send to wake
// waiters (Redisson's unlock script does), reaches no client and says so:
// 0, the number of clients that received the message.

func registerPubSub(t *Table) {
	t.Register([]Row{
		{Name: "publish", Run: cmdPublish, MayReplicate: true},
	})
}

func cmdPublish(c *Ctx) { c.W.Int(0) }
