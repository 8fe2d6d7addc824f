package rdb

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCompress(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string // "" for nil
	}{
		{"nothing", "", 10, ""},
		{"no room", "abc", 0, ""},
		{"literals only", "abcdef", 10, "\x05abcdef"},
		{"literals that do not fit", "abcdef", 6, ""},
		// A copy ends two bytes before the end at the latest.
		{"a run", strings.Repeat("a", 10), 10, "\x01aa\x80\x00\x01aa"},
		// A match at the first byte is never taken (ref must be > 0).
		{"repeat of the first bytes", "abcabc", 10, "\x05abcabc"},
		{"33 literals", "abcdefghijklmnopqrstuvwxyz0123456", 40, "\x1fabcdefghijklmnopqrstuvwxyz012345\x006"},
		// The encoder wants 3 bytes to spare before the last two.
		{"literals with no room to spare", "abcdef", 7, ""},
		{"literals with room to spare", "abcdef", 8, "\x05abcdef"},
	} {
		got := Compress([]byte(tc.in), tc.max)
		if string(got) != tc.want || (got == nil) != (tc.want == "") {
			t.Errorf("%s: Compress = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDecompress(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
		err      error
	}{
		{"empty", "", 0, "", nil},
		{"literal", "\x02abc", 3, "abc", nil},
		{"short copy", "\x02abc\x20\x02", 6, "abcabc", nil},
		{"long copy", "\x00a\xe0\x01\x00", 11, strings.Repeat("a", 11), nil},
		{"longest copy", "\x00a\xe0\xff\x00", 265, strings.Repeat("a", 265), nil},
		{"copy 8192 back", "\x00a" + strings.Repeat("\xe0\xff\x00", 32) + "\x3f\xff", 8452, strings.Repeat("a", 8452), nil},
		{"literal cut short", "\x02ab", 3, "", ErrLZF},
		{"literal too long", "\x02abc", 2, "", ErrLZF},
		{"copy without offset", "\x00a\x20", 3, "", ErrLZF},
		{"long copy without length", "\x00a\xe0", 3, "", ErrLZF},
		{"long copy without offset", "\x00a\xe0\x01", 3, "", ErrLZF},
		{"copy before the start", "\x00a\x20\x01", 3, "", ErrLZF},
		{"copy too long", "\x00a\x20\x00", 2, "", ErrLZF},
		{"shorter than announced", "\x00a", 2, "", ErrLZF},
	} {
		got, err := Decompress([]byte(tc.in), tc.n)
		if string(got) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: Decompress = %.40q, %v; want %.40q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestLZFRoundTrip: whatever Compress writes, Decompress reads back,
// over inputs from random bytes to long runs.
func TestLZFRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		in := mixedBytes(r, 1+r.IntN(5000))
		c := Compress(in, roomy(len(in)))
		if c == nil {
			t.Fatalf("input %d (%d bytes) did not compress", i, len(in))
		}
		out, err := Decompress(c, len(in))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("input %d (%d bytes): round trip gave %d bytes, %v", i, len(in), len(out), err)
		}
		if tight := Compress(in, len(c)-1); tight != nil {
			t.Fatalf("input %d: %d bytes compressed into %d, but also into %d", i, len(in), len(c), len(tight))
		}
	}
}

// roomy is room enough for n bytes compressed (or not).
func roomy(n int) int { return n + n/16 + 16 }

// mixedBytes is n bytes of random literals from a random alphabet and
// copies of earlier bytes.
func mixedBytes(r *rand.Rand, n int) []byte {
	alphabet := []int{1, 2, 4, 16, 256}[r.IntN(5)]
	b := make([]byte, 0, n+300)
	for len(b) < n {
		if len(b) > 0 && r.IntN(3) == 0 {
			from := len(b) - 1 - r.IntN(min(len(b), 10000))
			for k := range 1 + r.IntN(300) {
				b = append(b, b[from+k])
			}
			continue
		}
		for range 1 + r.IntN(40) {
			b = append(b, byte(r.IntN(alphabet)))
		}
	}
	return b[:n]
}

func FuzzLZF(f *testing.F) {
	f.Add([]byte(strings.Repeat("a", 300)))
	f.Add([]byte(severalLib))
	f.Fuzz(func(t *testing.T, in []byte) {
		if c := Compress(in, roomy(len(in))); len(in) > 0 {
			if out, err := Decompress(c, len(in)); err != nil || !bytes.Equal(out, in) {
				t.Fatalf("round trip of %q: %q, %v", in, out, err)
			}
		}
		Decompress(in, 1000) // must not panic
	})
}

func BenchmarkCompress(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{100, 10000, 100000} {
		in := mixedBytes(r, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				Compress(in, n)
			}
		})
	}
}
