package fuzz

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redamo/redamo/model"
)

// After a case the keyspace must read back consistently: KEYS, SCAN and
// DBSIZE agree; every key has a type, and exactly the reads of that type
// succeed on it (the others answer WRONGTYPE); a collection's length
// agrees with its range reads and its SCAN, and is never zero; a sorted
// set is in score order; a stream's ids increase.

// numDBs is how many databases SELECT reaches.
const numDBs = 16

// maxScanCalls bounds a SCAN iteration: one that goes on longer is a
// finding, not a hang of the fuzzer.
const maxScanCalls = 1000

// checkKeyspace checks the databases dbs and returns the inconsistencies
// it finds; err is a failure to talk to the server.
func checkKeyspace(c *conn, dbs []int) (problems []string, err error) {
	var cmds []command
	for _, db := range dbs {
		cmds = append(cmds, cmdOf("SELECT", strconv.Itoa(db)), cmdOf("KEYS", "*"))
	}
	vs, err := c.pipeline(cmds)
	if err != nil {
		return nil, err
	}
	for i, db := range dbs {
		keys := vs[2*i+1]
		if keys.isError() {
			problems = append(problems, fmt.Sprintf("db %d: KEYS *: %s", db, keys.text()))
			continue
		}
		if len(keys.elems) == 0 {
			// An empty database must say so everywhere.
			p, err := checkDB(c, db, nil)
			if err != nil {
				return problems, err
			}
			problems = append(problems, p...)
			continue
		}
		// Keys that expire while they are checked would make every
		// check racy: take their TTLs away first (a key that has just
		// expired is simply gone).
		persist := []command{cmdOf("SELECT", strconv.Itoa(db))}
		for _, k := range keys.elems {
			persist = append(persist, command{[]byte("PERSIST"), k.str})
		}
		if _, err := c.pipeline(persist); err != nil {
			return problems, err
		}
		p, err := checkDB(c, db, keys.elems)
		if err != nil {
			return problems, err
		}
		problems = append(problems, p...)
	}
	return problems, nil
}

// checkDB checks one database, whose keys were listed (and persisted).
func checkDB(c *conn, db int, listed []*value) ([]string, error) {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("db %d: ", db)+fmt.Sprintf(format, args...))
	}
	vs, err := c.pipeline([]command{cmdOf("SELECT", strconv.Itoa(db)), cmdOf("KEYS", "*"), cmdOf("DBSIZE")})
	if err != nil {
		return nil, err
	}
	keys := set(vs[1])
	n, ok := strictInt(vs[2].str)
	if vs[2].kind != ':' || !ok {
		bad("DBSIZE: %s", vs[2].text())
	}
	if listed == nil && len(keys) == 0 && n == 0 {
		return problems, nil
	}
	if int(n) != len(keys) {
		bad("DBSIZE %d, KEYS * lists %d", n, len(keys))
	}
	if listed != nil && len(keys) > len(listed) {
		bad("KEYS * lists %d keys after PERSIST, %d before", len(keys), len(listed))
	}
	scanned, err := scanAll(c, cmdOf("SCAN"), 1)
	if err != nil {
		bad("SCAN: %v", err)
	} else if d := diff(keys, scanned); d != "" {
		bad("KEYS * and SCAN differ: %s", d)
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var cmds []command
	for _, k := range names {
		cmds = append(cmds, keyReads(k)...)
	}
	if len(cmds) == 0 {
		return problems, nil
	}
	vs, err = c.pipeline(cmds)
	if err != nil {
		return problems, err
	}
	per := len(keyReads(""))
	for i, k := range names {
		for _, p := range checkKey(c, k, vs[i*per:(i+1)*per]) {
			bad("key %q: %s", cut(k, 60), p)
		}
	}
	return problems, nil
}

// typeReads are, per type, the reads keyReads sends that succeed on it.
var typeReads = map[string][]int{
	"string": {3, 4}, "list": {5, 6}, "hash": {7, 8}, "set": {9, 10}, "zset": {11, 12, 13}, "stream": {14, 15},
}

func keyReads(k string) []command {
	return []command{
		cmdOf("TYPE", k), cmdOf("EXISTS", k), cmdOf("TTL", k),
		cmdOf("GET", k), cmdOf("STRLEN", k),
		cmdOf("LLEN", k), cmdOf("LRANGE", k, "0", "-1"),
		cmdOf("HLEN", k), cmdOf("HGETALL", k),
		cmdOf("SCARD", k), cmdOf("SMEMBERS", k),
		cmdOf("ZCARD", k), cmdOf("ZRANGE", k, "0", "-1", "WITHSCORES"), cmdOf("ZCOUNT", k, "-inf", "+inf"),
		cmdOf("XLEN", k), cmdOf("XRANGE", k, "-", "+"),
	}
}

func checkKey(c *conn, k string, vs []*value) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	typ := string(vs[0].str)
	if vs[0].kind != '+' {
		return []string{"TYPE: " + vs[0].text()}
	}
	if n, _ := strictInt(vs[1].str); vs[1].kind != ':' || n != 1 {
		bad("listed by KEYS but EXISTS answers %s", vs[1].text())
	}
	if n, _ := strictInt(vs[2].str); vs[2].kind != ':' || n != -1 {
		bad("TTL %s after PERSIST", vs[2].text())
	}
	ok, known := typeReads[typ]
	if !known {
		bad("listed by KEYS but TYPE is %q", typ)
		return problems
	}
	succeeds := map[int]bool{}
	for _, i := range ok {
		succeeds[i] = true
	}
	reads := keyReads(k)
	for i := 3; i < len(vs); i++ {
		switch {
		case succeeds[i] && vs[i].isError():
			bad("TYPE %s, but %s fails: %s", typ, reads[i].name(), vs[i].text())
		case !succeeds[i] && vs[i].class() != "WRONGTYPE":
			bad("TYPE %s, but %s answers %s, not WRONGTYPE", typ, reads[i].name(), vs[i].text())
		}
	}
	if len(problems) > 0 {
		return problems
	}
	length := func(v *value) int64 { n, _ := strictInt(v.str); return n }
	switch typ {
	case "string":
		if int64(len(vs[3].str)) != length(vs[4]) || vs[3].null {
			bad("STRLEN %s, GET %d bytes", vs[4].text(), len(vs[3].str))
		}
	case "list":
		if n := length(vs[5]); n != int64(len(vs[6].elems)) || n == 0 {
			bad("LLEN %d, LRANGE 0 -1 %d elements", n, len(vs[6].elems))
		}
	case "hash":
		fields := pairs(vs[8])
		if n := length(vs[7]); n != int64(len(fields)) || n == 0 {
			bad("HLEN %d, HGETALL %d fields", n, len(fields))
		}
		if d := distinct(keysOf(fields)); d != "" {
			bad("HGETALL repeats %s", d)
		}
		if p := checkScan(c, "HSCAN", k, keysOf(fields), 2); p != "" {
			bad("%s", p)
		}
	case "set":
		members := strs(vs[10].elems)
		if n := length(vs[9]); n != int64(len(members)) || n == 0 {
			bad("SCARD %d, SMEMBERS %d members", n, len(members))
		}
		if d := distinct(members); d != "" {
			bad("SMEMBERS repeats %s", d)
		}
		if p := checkScan(c, "SSCAN", k, members, 1); p != "" {
			bad("%s", p)
		}
	case "zset":
		entries := zpairs(vs[12])
		n := length(vs[11])
		if n != int64(len(entries)) || n == 0 || length(vs[13]) != n {
			bad("ZCARD %d, ZRANGE %d members, ZCOUNT -inf +inf %s", n, len(entries), vs[13].text())
		}
		var members []string
		for i, e := range entries {
			members = append(members, e.member)
			if i > 0 {
				p := entries[i-1]
				if e.score < p.score || e.score == p.score && e.member <= p.member && !digestOrdered(p.member, e.member) {
					bad("ZRANGE out of order at %d: %q %v after %q %v", i, e.member, e.score, p.member, p.score)
					break
				}
			}
			if math.IsNaN(e.score) {
				bad("member %q has score NaN", e.member)
			}
		}
		if p := checkScan(c, "ZSCAN", k, members, 2); p != "" {
			bad("%s", p)
		}
	case "stream":
		n := length(vs[14])
		if n != int64(len(vs[15].elems)) {
			bad("XLEN %d, XRANGE - + %d entries", n, len(vs[15].elems))
		}
		var last [2]uint64
		for i, e := range vs[15].elems {
			if len(e.elems) != 2 {
				bad("XRANGE entry %d: %s", i, e.text())
				break
			}
			id, ok := parseID(string(e.elems[0].str))
			if !ok || i > 0 && (id[0] < last[0] || id[0] == last[0] && id[1] <= last[1]) {
				bad("XRANGE id %q after %d-%d", e.elems[0].str, last[0], last[1])
				break
			}
			last = id
		}
	}
	return problems
}

// digestOrdered reports whether two members of equal score are ordered
// by digest rather than by their bytes, as redamo orders members too long
// for a DynamoDB sort key that agree on the part that fits (zorderSK in
// model/zset.go; README, "Collections at any size").
func digestOrdered(a, b string) bool {
	const plain = model.MaxPlainSK - sha256.Size
	return len(a) > plain && len(b) > plain && a[:plain] == b[:plain]
}

func parseID(s string) ([2]uint64, bool) {
	a, b, ok := strings.Cut(s, "-")
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return [2]uint64{x, y}, ok && err1 == nil && err2 == nil
}

// checkScan iterates a collection's SCAN and compares it with its members.
func checkScan(c *conn, verb, k string, members []string, stride int) string {
	got, err := scanAll(c, cmdOf(verb, k), stride)
	if err != nil {
		return fmt.Sprintf("%s: %v", verb, err)
	}
	if d := diff(toSet(members), got); d != "" {
		return fmt.Sprintf("%s differs from the members: %s", verb, d)
	}
	return ""
}

// scanAll runs a SCAN-like iteration to its end and returns what it
// returned (every stride-th element: the keys, the members or the fields).
func scanAll(c *conn, base command, stride int) (map[string]bool, error) {
	out := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls == maxScanCalls {
			return out, fmt.Errorf("not done after %d calls (cursor %q)", calls, cursor)
		}
		cmd := append(append(command{}, base...), []byte(cursor), []byte("COUNT"), []byte("1000"))
		v, err := c.do(cmd)
		if err != nil {
			return out, err
		}
		if v.isError() || len(v.elems) != 2 {
			return out, fmt.Errorf("reply %s", v.text())
		}
		for i, e := range v.elems[1].elems {
			if i%stride == 0 {
				out[string(e.str)] = true
			}
		}
		cursor = string(v.elems[0].str)
		if cursor == "0" {
			return out, nil
		}
	}
}

func set(v *value) map[string]bool { return toSet(strs(v.elems)) }

func toSet(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func strs(vs []*value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v.str)
	}
	return out
}

// pairs reads a map reply (RESP3) or a flat array of pairs (RESP2).
func pairs(v *value) [][2]string {
	var out [][2]string
	for i := 0; i+1 < len(v.elems); i += 2 {
		out = append(out, [2]string{string(v.elems[i].str), string(v.elems[i+1].str)})
	}
	return out
}

func keysOf(ps [][2]string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p[0]
	}
	return out
}

type zentry struct {
	member string
	score  float64
}

// zpairs reads ZRANGE WITHSCORES: member, score, ... in RESP2; [member,
// score] pairs in RESP3.
func zpairs(v *value) []zentry {
	var out []zentry
	add := func(m, s *value) {
		f, err := strconv.ParseFloat(string(s.str), 64)
		if err != nil {
			f = math.NaN()
		}
		out = append(out, zentry{string(m.str), f})
	}
	if len(v.elems) > 0 && v.elems[0].kind == '*' {
		for _, p := range v.elems {
			if len(p.elems) == 2 {
				add(p.elems[0], p.elems[1])
			}
		}
		return out
	}
	for i := 0; i+1 < len(v.elems); i += 2 {
		add(v.elems[i], v.elems[i+1])
	}
	return out
}

func distinct(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return strconv.Quote(cut(x, 40))
		}
		seen[x] = true
	}
	return ""
}

// diff describes how two sets differ, "" if they do not.
func diff(a, b map[string]bool) string {
	var onlyA, onlyB []string
	for k := range a {
		if !b[k] {
			onlyA = append(onlyA, strconv.Quote(cut(k, 40)))
		}
	}
	for k := range b {
		if !a[k] {
			onlyB = append(onlyB, strconv.Quote(cut(k, 40)))
		}
	}
	if len(onlyA)+len(onlyB) == 0 {
		return ""
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	var w bytes.Buffer
	fmt.Fprintf(&w, "only in the first: %v; only in the second: %v", head(onlyA), head(onlyB))
	return w.String()
}

func head(xs []string) []string {
	if len(xs) > 8 {
		return append(xs[:8:8], fmt.Sprintf("...(%d)", len(xs)))
	}
	return xs
}
