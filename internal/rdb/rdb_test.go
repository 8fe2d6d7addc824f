package rdb

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Payloads redis-server 7.0.15 wrote, as redis-cli --no-raw prints them.
var redisPayloads = []struct {
	name    string
	build   func() []byte
	payload string
}{
	{"FUNCTION DUMP, no library", func() []byte { return AppendTrailer(nil) },
		"\n\x00]\x9b\\@\x0f\x7f\xa2\xda"},
	{"FUNCTION DUMP, a library stored raw", func() []byte { return AppendTrailer(AppendString([]byte{OpFunction2}, []byte(helloLib))) },
		"\xf5@V#!lua name=mylib\nredis.register_function('f', function(keys, args) return 'hello' end)\n\x00\xafs\xb8\xdf\xf4\x82O\xd8"},
	{"FUNCTION DUMP, a library compressed", func() []byte { return AppendTrailer(AppendString([]byte{OpFunction2}, []byte(severalLib))) },
		"\xf5\xc3@\x8dA-\x1f#!lua name=several\nredis.registe\x11r_function('get', \xe0\x00\x0f\x11keys, args) return \x06@:\bcall('GET -@$\b[1]) end)\xe0\x11Z\x00s\xe0$Z\x00S\xe0\x03Z\x80\x82\xe0\x1ac\x02del \x90\xe0\x1f\xbe\x02DEL -\xe0\x03\xbe\x01)\n\n\x00\xfe@\xc6^\xfa\xc5\xc6t"},
	{"DUMP of a string of 21 bytes", func() []byte { return AppendTrailer(AppendString([]byte{TypeString}, []byte(strings.Repeat("a", 21)))) },
		"\x00\xc3\x06\x15\x01aa\xe0\n\x00\n\x00\xfd\x0c\xb3h\aA?h"},
	{"DUMP of -2147483648", func() []byte { return AppendTrailer(AppendString([]byte{TypeString}, []byte("-2147483648"))) },
		"\x00\xc2\x00\x00\x00\x80\n\x00\xc7O\x87>3U\x81\x87"},
	{"DUMP of 300", func() []byte { return AppendTrailer(AppendString([]byte{TypeString}, []byte("300"))) },
		"\x00\xc1,\x01\n\x00\x95Ba\xf2e\x82\\\x10"},
}

func TestRedisPayloadBytes(t *testing.T) {
	for _, tc := range redisPayloads {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.build(); string(got) != tc.payload {
				t.Errorf("payload %q\nredis-server's %q", got, tc.payload)
			}
			if _, ok := CheckTrailer([]byte(tc.payload)); !ok {
				t.Error("CheckTrailer refuses redis-server's payload")
			}
		})
	}
}

func TestCRC64(t *testing.T) {
	lorem := "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore " +
		"et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip " +
		"ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu " +
		"fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt " +
		"mollit anim id est laborum.\x00"
	// The check values of crc64.c's own test (which counts lorem's NUL).
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"123456789", 0xe9c6d914c4b8d9ca},
		{lorem, 0xc7794709e69683b3},
	} {
		if got := CRC64(0, []byte(tc.in)); got != tc.want {
			t.Errorf("CRC64(%.20q) = %#x, want %#x", tc.in, got, tc.want)
		}
		for i := range len(tc.in) {
			if got := CRC64(CRC64(0, []byte(tc.in[:i])), []byte(tc.in[i:])); got != tc.want {
				t.Fatalf("CRC64 of %.20q in two parts at %d = %#x, want %#x", tc.in, i, got, tc.want)
			}
		}
	}
}

func TestLen(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "\x00"},
		{63, "\x3f"},
		{64, "\x40\x40"},
		{16383, "\x7f\xff"},
		{16384, "\x80\x00\x00\x40\x00"},
		{1<<32 - 1, "\x80\xff\xff\xff\xff"},
		{1 << 32, "\x81\x00\x00\x00\x01\x00\x00\x00\x00"},
		{1<<64 - 1, "\x81\xff\xff\xff\xff\xff\xff\xff\xff"},
	} {
		got := AppendLen(nil, tc.n)
		if string(got) != tc.want {
			t.Errorf("AppendLen(%d) = %q, want %q", tc.n, got, tc.want)
		}
		r := NewReader(got)
		if n, enc, err := r.ReadLen(); n != tc.n || enc || err != nil || r.Len() != 0 {
			t.Errorf("ReadLen(%q) = %d, %v, %v", got, n, enc, err)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", "\x00"},
		{"a", "\x01a"},
		{"0", "\xc0\x00"},
		{"-1", "\xc0\xff"},
		{"127", "\xc0\x7f"},
		{"128", "\xc1\x80\x00"},
		{"-32768", "\xc1\x00\x80"},
		{"32768", "\xc2\x00\x80\x00\x00"},
		{"2147483647", "\xc2\xff\xff\xff\x7f"},
		{"2147483648", "\x0a2147483648"}, // beyond 32 bits
		{"-0", "\x02-0"},                 // not as Redis prints a number
		{"01", "\x0201"},
		{"+1", "\x02+1"},
		{strings.Repeat("a", 20), "\x14" + strings.Repeat("a", 20)}, // too short to compress
		{strings.Repeat("a", 21), "\xc3\x06\x15\x01aa\xe0\n\x00"},
		{"abcdefghijklmnopqrstuvwxyz", "\x1aabcdefghijklmnopqrstuvwxyz"}, // compression does not pay
	} {
		got := AppendString(nil, []byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("AppendString(%q) = %q, want %q", tc.in, got, tc.want)
		}
		r := NewReader(got)
		if s, err := r.ReadString(); string(s) != tc.in || err != nil || r.Len() != 0 {
			t.Errorf("ReadString(%q) = %q, %v", got, s, err)
		}
	}
}

func TestReadStringErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // the string read; "" with err set
		err      error
	}{
		{"nothing", "", "", ErrShort},
		{"raw cut short", "\x05abc", "", ErrShort},
		{"14-bit length cut short", "\x41", "", ErrShort},
		{"32-bit length cut short", "\x80\x00\x00", "", ErrShort},
		{"64-bit length cut short", "\x81\x00\x00\x00\x00\x00\x00\x00", "", ErrShort},
		{"huge raw length", "\x81\xff\xff\xff\xff\xff\xff\xff\xffabc", "", ErrShort},
		{"unknown length encoding", "\x82abc", "", ErrCorrupt},
		{"unknown string encoding", "\xc4abc", "", ErrCorrupt},
		{"int8 cut short", "\xc0", "", ErrShort},
		{"int16 cut short", "\xc1\x00", "", ErrShort},
		{"int32 cut short", "\xc2\x00\x00\x00", "", ErrShort},
		{"int8 negative", "\xc0\x80", "-128", nil},
		{"int16 negative", "\xc1\xff\xff", "-1", nil},
		{"int32 negative", "\xc2\x00\x00\x00\x80", "-2147483648", nil},
		{"lzf cut short", "\xc3\x05\x10\x00ab", "", ErrShort},
		{"lzf without its lengths", "\xc3\x05", "", ErrShort},
		{"lzf longer than announced", "\xc3\x04\x02\x02abc", "", ErrLZF},
		{"lzf shorter than announced", "\xc3\x04\x04\x02abc", "", ErrLZF},
		{"lzf copy before the start", "\xc3\x04\x05\x00a\x20\x01", "", ErrLZF},
		{"lzf announcing 0 bytes", "\xc3\x04\x00\x02abc", "", nil},
		{"lzf of 0 bytes announcing 0", "\xc3\x00\x00", "", nil},
		{"lzf lengths as encoding markers", "\xc3\xc4\xc3\x02abc", "abc", nil},
		{"lzf overlapping copy", "\xc3\x04\x05\x00a\x40\x00", "aaaaa", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewReader([]byte(tc.in)).ReadString()
			if !errors.Is(err, tc.err) || string(s) != tc.want {
				t.Errorf("ReadString(%q) = %q, %v; want %q, %v", tc.in, s, err, tc.want, tc.err)
			}
		})
	}
}

func TestCheckTrailer(t *testing.T) {
	good := AppendTrailer([]byte("\xf5\x01x"))
	older := []byte("\xf5\x01x\x09\x00")
	older = append(older, make([]byte, 8)...)
	crc := CRC64(0, older[:len(older)-8])
	for i := range 8 {
		older[len(older)-8+i] = byte(crc >> (8 * i))
	}
	newer := bytes.Clone(good)
	newer[len(newer)-10] = Version + 1
	for _, tc := range []struct {
		name    string
		in      []byte
		version uint16
		ok      bool
	}{
		{"good", good, Version, true},
		{"empty payload", AppendTrailer(nil), Version, true},
		{"older version", older, 9, true},
		{"later version", newer, Version + 1, false},
		{"wrong checksum", append(good[:len(good)-1:len(good)-1], good[len(good)-1]^1), Version, false},
		{"9 bytes", good[len(good)-9:], 0, false},
		{"nothing", nil, 0, false},
	} {
		if v, ok := CheckTrailer(tc.in); v != tc.version || ok != tc.ok {
			t.Errorf("%s: CheckTrailer = %d, %v; want %d, %v", tc.name, v, ok, tc.version, tc.ok)
		}
	}
}

// FuzzReadString: any input is read without a panic, and a string read
// is written back to something that reads the same.
func FuzzReadString(f *testing.F) {
	for _, tc := range redisPayloads {
		f.Add([]byte(tc.payload[1:]))
	}
	f.Add([]byte("\xc3\x04\x05\x00a\x40\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := NewReader(in).ReadString()
		if err != nil {
			return
		}
		again, err := NewReader(AppendString(nil, s)).ReadString()
		if err != nil || !bytes.Equal(again, s) {
			t.Fatalf("%q read as %q, written and read back as %q, %v", in, s, again, err)
		}
	})
}
