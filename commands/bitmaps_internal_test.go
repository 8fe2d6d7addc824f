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
		// Growth past one item makes a big value (model/bigvalue.go).
		pastItem := strconv.Itoa(8 * dynastore.MaxItemSize)
		requireReply(t, h, "+OK", "SET", "k", "abc")
		// Reading past the end is no growth.
		requireReply(t, h, ":0", "GETBIT", "k", pastItem)
		requireReply(t, h, "[:0]", "BITFIELD_RO", "k", "GET", "u8", pastItem)
		requireReply(t, h, ":0", "SETBIT", "k", pastItem, "1")
		requireReply(t, h, ":"+strconv.Itoa(dynastore.MaxItemSize+1), "STRLEN", "k")
		requireReply(t, h, ":1", "GETBIT", "k", pastItem)
		requireReply(t, h, ":0", "SETBIT", "fresh", pastItem, "1")
		requireReply(t, h, "[:97, :0]", "BITFIELD", "k", "GET", "u8", "0", "SET", "u8", strconv.Itoa(8*dynastore.MaxItemSize+8), "1")
		requireReply(t, h, "[:0]", "BITFIELD", "k", "GET", "u8", strconv.Itoa(8*dynastore.MaxItemSize+16))
		requireReply(t, h, ":12", "BITCOUNT", "k")
		requireReply(t, h, "-"+MsgBitOffset, "SETBIT", "k", "4294967296", "1")

		big := strings.Repeat("\x0f", dynastore.MaxItemSize-1024)
		requireReply(t, h, "+OK", "SET", "big", big)
		requireReply(t, h, ":"+strconv.Itoa(4*len(big)), "BITCOUNT", "big")
		requireReply(t, h, ":"+strconv.Itoa(len(big)), "BITOP", "NOT", "dst", "big")
		requireReply(t, h, ":0", "SETBIT", "big", strconv.Itoa(8*len(big)-1024), "1")
		requireReply(t, h, ":0", "SETBIT", "big", strconv.Itoa(8*len(big)+8*2048), "1")
		requireReply(t, h, ":"+strconv.Itoa(len(big)+2049), "STRLEN", "big")
		// BITOP's result is still one item at most.
		requireReply(t, h, "-"+MsgValueTooLarge, "BITOP", "NOT", "dst", "k")
	})
}
