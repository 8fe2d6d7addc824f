package model

// The size a stream node's listpack has in Redis 7.0 (listpack.c's
// element encodings over t_stream.c's node layout), which decides where
// XADD starts a new node under stream-node-max-bytes (stream.go, "Nodes").

import (
	"encoding/binary"
	"hash/fnv"
)

// lpMaxSize is STREAM_LISTPACK_MAX_SIZE, the cap of stream-node-max-bytes.
const lpMaxSize = 1 << 30

// lpBacklen is the size of an element's back length for an element of n
// bytes.
func lpBacklen(n int64) int64 {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	}
	return 5
}

// lpIntSize is the size of an integer element (encoding and back length).
func lpIntSize(v int64) int64 {
	var n int64
	switch {
	case v >= 0 && v <= 127:
		n = 1
	case v >= -4096 && v <= 4095:
		n = 2
	case v >= -32768 && v <= 32767:
		n = 3
	case v >= -8388608 && v <= 8388607:
		n = 4
	case v >= -2147483648 && v <= 2147483647:
		n = 5
	default:
		n = 9
	}
	return n + lpBacklen(n)
}

// lpStringSize is the size of a string element: an integer when it reads
// as one (lpStringToInt64, string2ll's rules), else its bytes with a
// length header.
func lpStringSize(s []byte) int64 {
	if v, ok := String2ll(s); ok {
		return lpIntSize(v)
	}
	l := int64(len(s))
	var n int64
	switch {
	case l <= 63:
		n = 1 + l
	case l <= 4095:
		n = 2 + l
	default:
		n = 5 + l
	}
	return n + lpBacklen(n)
}

// lpBytes is the node's listpack size: its recorded bytes plus the master
// entry's count and deleted integers.
func (n *streamNode) lpBytes() int64 {
	return n.bytes + lpIntSize(n.live) + lpIntSize(n.total-n.live)
}

// masterBytes is a new node's listpack but for the master's count and
// deleted: the header and end byte, the master entry's field count, field
// names and terminating zero.
func masterBytes(names [][]byte) int64 {
	n := int64(6+1) + lpIntSize(int64(len(names))) + lpIntSize(0)
	for _, f := range names {
		n += lpStringSize(f)
	}
	return n
}

// entryBytes is the size of one entry in a node whose master id is
// master: flags, id deltas, the field count and names unless they are the
// master's (same), the values, and the entry's element count.
func entryBytes(id, master StreamID, fields [][]byte, same bool) int64 {
	numFields := int64(len(fields) / 2)
	flags := int64(0)
	if same {
		flags = 2 // STREAM_ITEM_FLAG_SAMEFIELDS
	}
	n := lpIntSize(flags) + lpIntSize(int64(id.Ms-master.Ms)) + lpIntSize(int64(id.Seq-master.Seq))
	count := numFields + 3
	if !same {
		n += lpIntSize(numFields)
		count += numFields + 1
	}
	for i, f := range fields {
		if i%2 == 0 && same {
			continue
		}
		n += lpStringSize(f)
	}
	return n + lpIntSize(count)
}

// fieldsDigest digests a master entry's field names (never 0).
func fieldsDigest(names [][]byte) uint64 {
	h := fnv.New64a()
	var buf [binary.MaxVarintLen64]byte
	h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(names)))])
	for _, f := range names {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(f)))])
		h.Write(f)
	}
	return h.Sum64() | 1
}
