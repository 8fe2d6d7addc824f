// Package bus is how redamo instances sharing one table find and talk to
// each other, with nothing but the table and their own TCP ports: it
// implements pubsub.Peers and events.Peers.
//
// Membership. Every instance owns one item in the NsBus partition
// (member.go): its bus address, its instance id (the sort key), its start
// time and its heartbeat expiry. It renews the item every Heartbeat and
// reads the whole partition with one Query at the same time; a member whose
// expiry passed is dropped, a new one is picked up, and Close deletes the
// item (DynamoDB's TTL only collects the items of instances that died). An
// instance also learns a new member the moment it connects in, so a joiner
// is reached before the next read of the table. An idle instance spends two
// requests per Heartbeat on membership and nothing else.
//
// Links. Each instance keeps one TCP connection to each member, opened as
// soon as the member is known and reopened with backoff when it breaks
// (peer.go). Requests (Publish, Channels, NumSub, NumPat) are frames on that
// connection, written in the order they were made and handled by the
// receiver in the order they arrive, so messages from one publishing
// connection on one channel arrive in order. The receiver answers with
// pubsub.Local. A publisher waits for each peer at most PeerTimeout: a peer
// that is not connected counts 0 at once, one that does not answer in time
// counts 0 and its connection is dropped, so a hung instance stalls
// publishers once, not on every message.
//
// Key events (events.go) are frames nobody answers: a write goes on
// without waiting for any peer (unless a peer's queue is full: then for at
// most PeerTimeout, after which that peer loses its connection), and each
// peer gets the events of one instance in the order they were sent. They go to every peer while
// keyspace notifications are on, else only to the peers that declared an
// interest (those with consumers: client tracking, a watch); declarations
// are acknowledged, kept on the receiver's entry for the declarer, and
// sent again by both sides of every new connection. An event costs no
// store request.
//
// The table's settings (model/settings.go: notify-keyspace-events) are an
// item of the members' partition under a sort key no instance id takes, so
// the heartbeat's Query reads them at no extra request: the bus applies
// them at Start, before the instance serves, and whenever a read finds
// this instance's differ (unless they changed while the read ran).
// CONFIG SET writes the item and tells the connected peers (kindFlags)
// before it replies; one that missed it, or got two crossing CONFIG SETs
// in the other order, settles on the table's value at its next heartbeat. An idle cluster's requests are the membership's alone.
//
// Authentication (auth.go). A connection starts with a challenge-response
// handshake both ways, HMAC-SHA256 keyed by the Secret (derived from
// requirepass by SecretFromPassword, or given on its own): a client that
// lacks it is disconnected before any request is read, and a dialer checks
// that the listener knows the secret and is the member it meant to reach,
// so nothing is sent to an impostor at a stale address. With TLS configured
// the bus runs inside TLS as well, so the messages cannot be read on the
// wire; without TLS they travel in clear, as the RESP port's traffic (and
// its AUTH password) does.
//
// Why not DynamoDB Streams: a stream shard serves about two concurrent
// readers, and every instance would have to read every shard to see every
// message, so a fan-out through the table would cap a cluster at two
// instances (or need a relay, which is infrastructure); it would also bill
// a write per message and add the stream's delay (typically hundreds of
// milliseconds). Messages are best-effort in Redis, so they need not be
// durable: they go instance to instance and the table only holds who is
// there.
package bus
