package rdb

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

var recordRedis = flag.String("record-redis", "", "host:port of a throwaway redis-server 7.0.15 to record "+redisVectorsFile+" from")

// redisVectorsFile holds, for each vector, the length and checksum of the
// DUMP payload redis-server 7.0.15 produced for it (the checksum, the
// payload's last 8 bytes, stands for the payload).
const redisVectorsFile = "testdata/redis-7.0.15-dump.txt"

// vector is a string DUMP encodes: a string key's value or a library's
// code (FUNCTION DUMP of that library alone).
type vector struct {
	name     string
	function bool
	value    []byte
}

// payload is the DUMP payload of v as this package writes it.
func (v vector) payload() []byte {
	typ := byte(TypeString)
	if v.function {
		typ = OpFunction2
	}
	return AppendTrailer(AppendString([]byte{typ}, v.value))
}

// vectors are the recorded cases: integer-like strings, strings around
// each length encoding and around the compression threshold, runs,
// random bytes, and many strings of random literals and copies (which
// exercise every path of the LZF encoder), plus a few libraries.
func vectors() []vector {
	var vs []vector
	add := func(name string, b []byte) { vs = append(vs, vector{name: name, value: b}) }
	for _, s := range []string{"", "a", "0", "-0", "00", "01", "+1", " 1", "1 ", "-1", "127", "128", "-128", "-129",
		"32767", "32768", "-32768", "-32769", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"12345678901", "-1234567890", "9223372036854775807", "99999999999999999999"} {
		add("int "+strconv.Quote(s), []byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n, alphabet int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(alphabet))
		}
		return b
	}
	randLetters := func(n int) []byte {
		b := randBytes(n, 26)
		for i := range b {
			b[i] += 'a'
		}
		return b
	}
	for _, n := range []int{20, 21, 22, 23, 24, 25, 26, 30, 35, 36, 37, 38, 63, 64, 100, 264, 265, 266, 267, 1000, 16383, 16384, 70000} {
		add(fmt.Sprintf("run %d", n), []byte(strings.Repeat("a", n)))
	}
	for _, n := range []int{21, 63, 64, 100, 16383, 16384, 70000} {
		add(fmt.Sprintf("random %d", n), randBytes(n, 256))
	}
	for i := range 400 {
		n := 21 + r.IntN(3000)
		if i%20 == 0 {
			n = 21 + r.IntN(30000)
		}
		alphabet := []int{2, 4, 16, 64, 256}[r.IntN(5)]
		b := make([]byte, 0, n)
		for len(b) < n {
			if len(b) > 0 && r.IntN(3) == 0 {
				back := 1 + r.IntN(min(len(b), 12000))
				from := len(b) - back
				for k := range 1 + r.IntN(300) {
					b = append(b, b[from+k])
				}
				continue
			}
			b = append(b, randBytes(1+r.IntN(40), alphabet)...)
		}
		add(fmt.Sprintf("mixed %d", i), b[:n])
	}
	lib := func(name, code string) {
		vs = append(vs, vector{name: "function " + name, function: true, value: []byte(code)})
	}
	lib("hello", helloLib)
	lib("several", severalLib)
	var big strings.Builder
	big.WriteString("#!lua name=big\n")
	for i := range 500 {
		fmt.Fprintf(&big, "-- %s\nredis.register_function('f%d', function(keys, args) return redis.call('GET', keys[1]) .. '%d' end)\n",
			randLetters(1+r.IntN(60)), i, r.IntN(1000))
	}
	lib("big", big.String())
	return vs
}

const (
	helloLib   = "#!lua name=mylib\nredis.register_function('f', function(keys, args) return 'hello' end)"
	severalLib = "#!lua name=several\n" +
		"redis.register_function('get', function(keys, args) return redis.call('GET', keys[1]) end)\n" +
		"redis.register_function('set', function(keys, args) return redis.call('SET', keys[1], args[1]) end)\n" +
		"redis.register_function('del', function(keys, args) return redis.call('DEL', keys[1]) end)\n"
)

// TestRedisPayloads compares each vector's payload with redis-server's
// (or, with -record-redis, records redis-server's).
func TestRedisPayloads(t *testing.T) {
	vs := vectors()
	if *recordRedis != "" {
		record(t, vs)
	}
	f, err := os.Open(redisVectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && line[0] != '#' {
			name, fp, _ := strings.Cut(line, "\t")
			want[name] = fp
		}
	}
	if len(want) != len(vs) {
		t.Fatalf("%s has %d vectors, want %d: record it again", redisVectorsFile, len(want), len(vs))
	}
	for _, v := range vs {
		if got := fingerprint(v.payload()); got != want[v.name] {
			t.Errorf("%s: payload %s, redis-server's %s", v.name, got, want[v.name])
		}
	}
}

// fingerprint is a payload's length and checksum.
func fingerprint(p []byte) string {
	return fmt.Sprintf("%d %x", len(p), p[len(p)-8:])
}

func record(t *testing.T, vs []vector) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *recordRedis})
	defer c.Close()
	var b strings.Builder
	b.WriteString("# DUMP payloads of redis-server 7.0.15 (rdbcompression yes): name, then length and\n" +
		"# last 8 bytes (the checksum) in hex. go test -run TestRedisPayloads -record-redis host:port\n" +
		"# writes this file again.\n")
	for _, v := range vs {
		var p string
		var err error
		if v.function {
			if err = c.FunctionFlush(ctx).Err(); err == nil {
				if err = c.FunctionLoad(ctx, string(v.value)).Err(); err == nil {
					p, err = c.FunctionDump(ctx).Result()
				}
			}
		} else if err = c.Set(ctx, "k", v.value, 0).Err(); err == nil {
			p, err = c.Dump(ctx, "k").Result()
		}
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		fmt.Fprintf(&b, "%s\t%s\n", v.name, fingerprint([]byte(p)))
	}
	if err := os.WriteFile(redisVectorsFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
