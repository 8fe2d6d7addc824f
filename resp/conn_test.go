package resp

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bulk larger than the read buffer grows it as its bytes arrive: an
// announced size costs nothing until sent, and the buffer ends at about the
// request's size, not at the next power of two.
func TestReadBufferGrowsWithArrivingBytes(t *testing.T) {
	for _, size := range []int{100_000, 1 << 20, 3<<20 + 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := &conn{p: parser{maxBulk: func() int64 { return 1 << 30 }}}
			header := fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n", size)
			total := len(header) + size + 2
			sent := 0
			for {
				before := cap(c.buf)
				c.room()
				free := cap(c.buf) - len(c.buf)
				require.GreaterOrEqual(t, free, readSize/2)
				if before > 0 && cap(c.buf) != before {
					// Grown: to at most twice what arrived, plus a read.
					require.LessOrEqual(t, cap(c.buf), 2*sent+readSize)
				}
				n := min(free, total-sent)
				for i := range n {
					b := byte('x')
					if sent+i < len(header) {
						b = header[sent+i]
					}
					c.buf = append(c.buf, b)
				}
				sent += n
				args, m, err := c.p.next(c.buf[c.pos:])
				require.NoError(t, err)
				if m > 0 {
					require.Len(t, args, 2)
					require.Len(t, args[1], size)
					require.Equal(t, total, m)
					break
				}
			}
			require.LessOrEqual(t, cap(c.buf), total+readSize)
		})
	}
}
