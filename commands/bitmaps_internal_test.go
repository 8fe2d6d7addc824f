package commands

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redamo/redamo/dynastore"
)

// TestBitmapValueSizeLimits: SETBIT, BITFIELD and BITOP that would grow a
// string past what one item holds answer the value-too-large error and
// change nothing (Redis would grow it up to proto-max-bulk-len); past
// proto-max-bulk-len the offset is out of range, as in Redis.
func TestBitmapValueSizeLimits(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend, h *harness) {
		pastItem := strconv.Itoa(8 * dynastore.MaxItemSize)
		requireReply(t, h, "+OK", "SET", "k", "abc")
		requireReply(t, h, "-"+MsgValueTooLarge, "SETBIT", "k", pastItem, "1")
		requireReply(t, h, "-"+MsgValueTooLarge, "SETBIT", "fresh", pastItem, "1")
		requireReply(t, h, "-"+MsgValueTooLarge, "SETBIT", "k", "4294967295", "1")
		requireReply(t, h, "-"+MsgValueTooLarge, "BITFIELD", "k", "GET", "u8", "0", "SET", "u8", pastItem, "1")
		requireReply(t, h, "-"+MsgValueTooLarge, "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "i8", pastItem, "1000")
		requireReply(t, h, `"abc"`, "GET", "k")
		requireReply(t, h, ":0", "EXISTS", "fresh")
		// Reading past the end is no growth.
		requireReply(t, h, ":0", "GETBIT", "k", pastItem)
		requireReply(t, h, "[:0]", "BITFIELD_RO", "k", "GET", "u8", pastItem)
		requireReply(t, h, "-"+MsgBitOffset, "SETBIT", "k", "4294967296", "1")

		big := strings.Repeat("\x0f", dynastore.MaxItemSize-1024)
		requireReply(t, h, "+OK", "SET", "big", big)
		requireReply(t, h, ":"+strconv.Itoa(4*len(big)), "BITCOUNT", "big")
		requireReply(t, h, ":"+strconv.Itoa(len(big)), "BITOP", "NOT", "dst", "big")
		requireReply(t, h, ":0", "SETBIT", "big", strconv.Itoa(8*len(big)-1024), "1")
		requireReply(t, h, "-"+MsgValueTooLarge, "SETBIT", "big", strconv.Itoa(8*len(big)+8*2048), "1")
		requireReply(t, h, ":"+strconv.Itoa(len(big)), "STRLEN", "big")
	})
}
