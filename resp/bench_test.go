package resp

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParser measures reading a pipeline of SET requests of several
// value sizes.
func BenchmarkParser(b *testing.B) {
	for _, size := range []int{16, 1024, 64 * 1024} {
		b.Run(fmt.Sprintf("value=%d", size), func(b *testing.B) {
			val := strings.Repeat("v", size)
			req := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$6\r\nkey:00\r\n$%d\r\n%s\r\n", size, val)
			in := []byte(strings.Repeat(req, 16))
			p := &parser{maxBulk: func() int64 { return 1 << 30 }}
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for i := 0; i < b.N; i++ {
				for pos := 0; pos < len(in); {
					args, n, err := p.next(in[pos:])
					if err != nil || n == 0 || len(args) != 3 {
						b.Fatal(err)
					}
					pos += n
				}
			}
		})
	}
}

// BenchmarkWriter measures encoding typical replies in both protocols.
func BenchmarkWriter(b *testing.B) {
	for _, proto := range []int{2, 3} {
		b.Run(fmt.Sprintf("RESP%d", proto), func(b *testing.B) {
			w := NewWriter(proto)
			val := []byte("some value of moderate size")
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.Reset()
				w.Array(4)
				w.Bulk(val)
				w.Int(int64(i))
				w.Nil()
				w.Double(3.25)
				if !w.Complete() {
					b.Fatal("incomplete")
				}
			}
		})
	}
}
