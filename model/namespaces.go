package model

// The first byte of every partition key says what lives under it. Every
// namespace of the table is declared here; a byte not listed is free.
// KEYS, SCAN, DEL and FLUSHDB/FLUSHALL act on NsKey alone, so nothing a
// user does to keys reaches the others (a fencing token or a leader's term
// never goes backwards, whatever a user deletes).
//
//   - NsKey 'k', db, key: a Redis key's key item (sk KeyItemSK; keyitem.go):
//     its type, value or inline collection, expiry, version, and for a large
//     collection its generation and count.
//   - NsMembers 'm', generation id: a large collection's partition
//     (collection.go, members.go): its member items, order items (a sorted
//     set's scores) and pending writes, told apart by the first byte of the
//     sort key.
//   - NsChunks 'b', generation id, chunk number: one chunk of a big value
//     (bigvalue.go), each in its own partition.
//   - nsGens 'G', shard: the generation registry (sk the generation id),
//     which the sweeper reads to delete generations no key item points to.
//   - NsCursor 'c', cursor id: a SCAN cursor's position (cursors.go).
//   - nsCollScan 's', cursor id: an SSCAN/HSCAN/ZSCAN cursor's position.
//   - NsScript 'L', SHA1 hex: a Lua script's body (scripts.go).
//   - NsFunctions 'F': the one item holding every function library
//     (functions.go).
//   - NsLock 'l', name: a lock's lease (coord/lock.go).
//   - NsLeader 'e', name: an election's lease (coord/leader.go).
//   - NsQueue 'q', shard, name: a queue's messages, one shard per
//     partition (coord/queue.go).
//   - NsQueueMeta 'Q', name: a queue's configuration, counters and dedup
//     records (coord/queue_config.go).
//   - NsBus 'B': the bus's membership, one partition (sk an instance id):
//     each running instance's bus address and heartbeat (bus/member.go), read
//     by every instance with one Query to find the others; and, under sk
//     "settings", the table's settings (settings.go), read by that Query.
//   - NsExpiry 'x': the expiry index (expiry.go): under 'x', shard, minute
//     the keys whose TTL passes in that minute, sk due ms and a hash of the
//     key; under 'x' alone (sk 0) the lease of the instance that reaps them
//     and how far it got (expiry_reaper.go).
const (
	NsKey       = 'k'
	NsMembers   = 'm'
	NsChunks    = 'b'
	nsGens      = 'G'
	NsCursor    = 'c'
	nsCollScan  = 's'
	NsScript    = 'L'
	NsFunctions = 'F'
	NsLock      = 'l'
	NsLeader    = 'e'
	NsQueue     = 'q'
	NsQueueMeta = 'Q'
	NsBus       = 'B'
	NsExpiry    = 'x'
)
