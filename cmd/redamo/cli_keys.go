package main

// The key verbs that take conditions or read counters, expiries and
// prefixes: what a script written against a key-value store's CLI expects
// (get --default, delete --if-value, inc without --create, get-counter,
// list --limit, expire, ttl, ltrim).

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redamo/redamo/commands"
)

// deleteIfValueScript deletes KEYS[1] when it holds ARGV[1]: 1 when it did,
// 0 when the key holds another value, -1 when there is none. It is the
// compare-and-delete shape redamo runs as one conditional DeleteItem
// (scripting/scriptfast.go).
const deleteIfValueScript = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  return redis.call('DEL', KEYS[1])
elseif v == false then
  return -1
else
  return 0
end`

// stepIfExistsScript runs ARGV[1] (INCRBY or DECRBY) KEYS[1] ARGV[2] when
// the key exists, and answers nil otherwise: a missing counter is not
// created, in one atomic unit.
const stepIfExistsScript = `if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call(ARGV[1], KEYS[1], ARGV[2])
end
return false`

// eval runs a script on keys and argv by its SHA1 first, and sends its
// body only when redamo lacks it (NOSCRIPT): EVAL stores the body in the
// table, a write on every run of a new process, where EVALSHA reads it.
func (x *invocation) eval(script string, keys []string, argv ...string) (commands.Reply, error) {
	sum := sha1.Sum([]byte(script))
	args := append([]string{"EVALSHA", hex.EncodeToString(sum[:]), strconv.Itoa(len(keys))}, keys...)
	args = append(args, argv...)
	r, err := x.do(args...)
	var re *replyError
	if errors.As(err, &re) && strings.HasPrefix(re.msg, "NOSCRIPT") {
		args[0], args[1] = "EVAL", script
		return x.do(args...)
	}
	return r, err
}

func buildGet(x *invocation) (func() result, error) {
	key := x.pos[0]
	def, hasDef := x.flag("default")
	return func() result {
		r, err := x.do("GET", key)
		switch {
		case err != nil:
			return failed(err)
		case r.IsNull() && hasDef:
			return answer(object{{"key", key}, {"value", def}, {"default", true}}, true)
		case r.IsNull():
			return answer(object{{"key", key}, {"value", nil}}, false)
		}
		return answer(object{{"key", key}, {"value", r.Str}}, true)
	}, nil
}

func buildDelete(x *invocation) (func() result, error) {
	key := x.pos[0]
	want, cond := x.flag("if-value")
	if !cond {
		return keyInt("DEL", "deleted", true)(x)
	}
	return func() result {
		r, err := x.eval(deleteIfValueScript, []string{key}, want)
		if err != nil {
			return failed(err)
		}
		o := object{{"key", key}, {"deleted", r.Int == 1}}
		switch r.Int {
		case 1:
			return answer(o, true)
		case 0:
			return result{obj: o, code: exitNo, note: fmt.Sprintf("%s holds another value than %q: nothing deleted", key, want)}
		}
		return result{obj: o, code: exitNo, note: fmt.Sprintf("no key %s: nothing deleted", key)}
	}, nil
}

// counter is inc or dec: one and by are the commands for a step of 1 and
// of N (with --create; without it the step goes through a script that
// leaves a missing key alone).
func counter(one, by string) func(x *invocation) (func() result, error) {
	return func(x *invocation) (func() result, error) {
		key := x.pos[0]
		n, err := x.intFlag("by", 1, false)
		if err != nil {
			return nil, err
		}
		_, given := x.flag("by")
		create := x.boolFlag("create")
		return func() result {
			var r commands.Reply
			var err error
			switch {
			case create && given:
				r, err = x.do(by, key, itoa(n))
			case create:
				r, err = x.do(one, key)
			default:
				r, err = x.eval(stepIfExistsScript, []string{key}, by, itoa(n))
			}
			var re *replyError
			if errors.As(err, &re) {
				// INCRBY's own refusal, without the script's position.
				re.msg, _, _ = strings.Cut(re.msg, " script: ")
			}
			if err != nil {
				return failed(err)
			}
			if r.IsNull() {
				return result{obj: object{{"key", key}, {"value", nil}}, code: exitNo,
					note: fmt.Sprintf("no counter %s: nothing changed (--create starts it at 0)", key)}
			}
			return answer(object{{"key", key}, {"value", r.Int}}, true)
		}, nil
	}
}

func buildGetCounter(x *invocation) (func() result, error) {
	key := x.pos[0]
	return func() result {
		r, err := x.do("GET", key)
		if err != nil {
			return failed(err)
		}
		if r.IsNull() {
			return answer(object{{"key", key}, {"value", nil}, {"type", "counter"}}, false)
		}
		n, perr := strconv.ParseInt(r.Str, 10, 64)
		if perr != nil {
			return result{obj: object{{"key", key}, {"value", nil}, {"type", "counter"}}, code: exitNo,
				note: fmt.Sprintf("%s holds %q, which is not an integer counter", key, r.Str)}
		}
		return answer(object{{"key", key}, {"value", n}, {"type", "counter"}}, true)
	}, nil
}

func buildList(x *invocation) (func() result, error) {
	prefix := ""
	if len(x.pos) > 0 {
		prefix = x.pos[0]
	}
	_, limited := x.flag("limit")
	limit, err := x.intFlag("limit", 0, true)
	if err != nil {
		return nil, err
	}
	return func() result {
		seen := map[string]bool{}
		cursor := "0"
		for !limited || int64(len(seen)) < limit {
			r, err := x.do("SCAN", cursor, "MATCH", globEscape(prefix)+"*", "COUNT", "1000")
			if err != nil {
				return failed(err)
			}
			if len(r.Elems) != 2 {
				return failed(fmt.Errorf("unexpected SCAN reply %s", replyString(r)))
			}
			for _, k := range r.Elems[1].Elems {
				seen[k.Str] = true
			}
			if cursor = replyString(r.Elems[0]); cursor == "0" {
				break
			}
		}
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if limited && int64(len(keys)) > limit {
			keys = keys[:limit]
		}
		return answer(object{{"prefix", prefix}, {"keys", keys}}, true)
	}, nil
}

func buildExpire(x *invocation) (func() result, error) {
	key := x.pos[0]
	ms, err := parseDuration("expire", x.pos[1], false)
	if err != nil {
		// The duration is an argument here, not a flag.
		return nil, usageErr("expire %s", strings.TrimPrefix(err.Error(), "--expire "))
	}
	return func() result {
		r, err := x.do("PEXPIRE", key, itoa(ms))
		if err != nil {
			return failed(err)
		}
		if r.Int == 0 {
			return answer(object{{"key", key}, {"expires", false}}, false)
		}
		return answer(object{{"key", key}, {"expires", true}, {"ttl_ms", ms}}, true)
	}, nil
}

func buildTTL(x *invocation) (func() result, error) {
	key := x.pos[0]
	return func() result {
		r, err := x.do("PTTL", key)
		if err != nil {
			return failed(err)
		}
		switch r.Int {
		case -2:
			return answer(object{{"key", key}, {"exists", false}}, false)
		case -1:
			return answer(object{{"key", key}, {"exists", true}, {"pttl_ms", nil}}, true)
		}
		return answer(object{{"key", key}, {"exists", true}, {"pttl_ms", r.Int}}, true)
	}, nil
}

func buildLtrim(x *invocation) (func() result, error) {
	key := x.pos[0]
	idx := make([]int64, 2)
	for i, s := range x.pos[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, usageErr("ltrim: %q is not an index (an integer; negative counts from the end)", s)
		}
		idx[i] = n
	}
	return func() result {
		if _, err := x.do("LTRIM", key, x.pos[1], x.pos[2]); err != nil {
			return failed(err)
		}
		return answer(object{{"key", key}, {"start", idx[0]}, {"stop", idx[1]}}, true)
	}, nil
}
