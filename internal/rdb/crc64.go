package rdb

import "hash/crc64"

// jones is the table of the CRC-64 Redis uses (crc64.c): the Jones
// polynomial 0xad93d23594c935a9, bits reflected.
var jones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// CRC64 extends crc, Redis's CRC-64 of some bytes (0 for none), with p:
// the checksum of DUMP payloads and RDB files. Redis's variant starts
// from crc as is and does not invert its result; hash/crc64 inverts both
// ends, so the inversions are undone around it.
func CRC64(crc uint64, p []byte) uint64 {
	return ^crc64.Update(^crc, jones, p)
}
