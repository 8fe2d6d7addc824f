package main

// redamo transaction --file F: a JSON array of operations run as one
// atomic unit. It is one EVAL of txScript: redamo runs a script as one
// transaction (its reads checked and its writes committed together, on
// every instance), so either every operation applies or none does. The
// script checks every condition and every type first, against the keys as
// they were before the transaction, and writes nothing when one fails:
// a command failing halfway through a script keeps the writes before it,
// as in Redis, so nothing may fail once writing starts.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// txMaxOps is the most operations one transaction takes: DynamoDB's
// TransactWriteItems holds 100 items, and each operation writes at least
// one.
const txMaxOps = 100

// cliStdin is what --file - reads (tests replace it).
var cliStdin io.Reader = os.Stdin

var txVerb = verb{name: "transaction", group: "transaction", args: "--file F", minArgs: 0, maxArgs: 0, flags: []string{"file"},
	runs: "EVALSHA (EVAL the first time) of one script that checks every condition, then applies every operation (one atomic transaction)",
	summary: "Run the operations of a JSON file (- for standard input) as one transaction: all apply or none does. " +
		`Each is {"op": set|inc|dec|delete|sadd|srem|lpush|rpush|expire, "key": K, and "value" (set), "by" (inc, dec), ` +
		`"members" (sadd, srem, lpush, rpush), "ttl" (expire; set, optional: "30s" or milliseconds), ` +
		`"condition": "absent"|"exists"|{"equals": V}}. Conditions are checked against the keys before the transaction. ` +
		"A failed condition exits 1 naming the operation, nothing applied; more than 100 operations exit 2.",
	stdin:   `[{"op":"set","key":"order:1","value":"new","condition":"absent"},{"op":"inc","key":"orders"},{"op":"sadd","key":"open","members":["order:1"]}]`,
	example: "transaction --file -",
	output:  `{"applied":true,"results":[{"op":"set","key":"order:1","result":"OK"},{"op":"inc","key":"orders","result":1},{"op":"sadd","key":"open","result":1}]}`,
	build:   buildTransaction}

func init() {
	verbFlags["file"] = flagDef{name: "file", arg: "F", usage: "the JSON array of operations (- reads standard input)"}
}

// txOp is one operation of the file.
type txOp struct {
	Op        string          `json:"op"`
	Key       *string         `json:"key"`
	Value     json.RawMessage `json:"value"`
	By        *int64          `json:"by"`
	Members   []string        `json:"members"`
	TTL       json.RawMessage `json:"ttl"`
	Condition json.RawMessage `json:"condition"`
}

// txScript's ARGV is, per operation (KEYS[i] its key): the command, the
// type the key must have ("" any, or "string", "integer", "set", "list",
// each also satisfied by no key), the condition ("", absent, exists,
// equals), the value compared, the number of arguments, the arguments.
// It answers {0, result...} when it applied everything, or {i, why}.
const txScript = `local ops, a = {}, 1
for i = 1, #KEYS do
  local n = tonumber(ARGV[a + 4])
  local op = {cmd = ARGV[a], typ = ARGV[a + 1], cond = ARGV[a + 2], want = ARGV[a + 3], args = {}}
  for j = 1, n do op.args[j] = ARGV[a + 4 + j] end
  a = a + 5 + n
  ops[i] = op
end
for i, op in ipairs(ops) do
  local k = KEYS[i]
  local t = redis.call('TYPE', k).ok
  if op.cond == 'absent' and t ~= 'none' then return {i, 'exists'} end
  if op.cond == 'exists' and t == 'none' then return {i, 'absent'} end
  if op.cond == 'equals' then
    if t ~= 'string' then return {i, 'type ' .. t} end
    if redis.call('GET', k) ~= op.want then return {i, 'differs'} end
  end
  if op.typ ~= '' and t ~= 'none' then
    if op.typ == 'integer' then
      if t ~= 'string' or not string.match(redis.call('GET', k), '^-?%d+$') then return {i, 'notint'} end
    elseif t ~= op.typ then
      return {i, 'wrongtype'}
    end
  end
end
local out = {0}
for i, op in ipairs(ops) do
  out[i + 1] = redis.call(op.cmd, KEYS[i], unpack(op.args))
end
return out`

// txPlan is one operation, checked and turned into script arguments.
type txPlan struct {
	op, key, cond, want string
	cmd, typ            string
	args                []string
}

// txCondition reads a condition: "absent", "exists" or {"equals": V}.
func txCondition(raw json.RawMessage) (cond, want string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "absent" || s == "exists" {
			return s, "", nil
		}
		return "", "", fmt.Errorf(`condition %q: must be "absent", "exists" or {"equals": V}`, s)
	}
	var eq map[string]json.RawMessage
	if json.Unmarshal(raw, &eq) != nil || len(eq) != 1 || eq["equals"] == nil {
		return "", "", fmt.Errorf(`condition %s: must be "absent", "exists" or {"equals": V}`, raw)
	}
	want, err = txScalar(eq["equals"])
	return "equals", want, err
}

// txScalar reads a value: a string, or a number or boolean as written.
func txScalar(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch v.(type) {
	case float64, bool:
		return string(bytes.TrimSpace(raw)), nil
	}
	return "", fmt.Errorf("value %s: must be a string or a number", raw)
}

// txTTL reads a ttl: a duration ("30s") or milliseconds.
func txTTL(raw json.RawMessage) (int64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return parseDuration("ttl", s, false)
	}
	var ms int64
	if err := json.Unmarshal(raw, &ms); err != nil || ms <= 0 {
		return 0, fmt.Errorf(`ttl %s: a duration ("30s") or a positive number of milliseconds`, raw)
	}
	return ms, nil
}

// plan checks one operation and builds its command.
func (o txOp) plan() (txPlan, error) {
	if o.Key == nil {
		return txPlan{}, fmt.Errorf(`no "key"`)
	}
	p := txPlan{op: o.Op, key: *o.Key}
	var err error
	if p.cond, p.want, err = txCondition(o.Condition); err != nil {
		return p, err
	}
	has := map[string]bool{"value": o.Value != nil, "by": o.By != nil, "members": o.Members != nil, "ttl": o.TTL != nil}
	allowed := map[string][]string{
		"set": {"value", "ttl"}, "inc": {"by"}, "dec": {"by"}, "delete": nil,
		"sadd": {"members"}, "srem": {"members"}, "lpush": {"members"}, "rpush": {"members"}, "expire": {"ttl"},
	}
	fields, ok := allowed[o.Op]
	if !ok {
		return p, fmt.Errorf(`op %q: must be one of set, inc, dec, delete, sadd, srem, lpush, rpush, expire`, o.Op)
	}
	for name, given := range has {
		if given && !strings.Contains(" "+strings.Join(fields, " ")+" ", " "+name+" ") {
			return p, fmt.Errorf(`%s takes no "%s"`, o.Op, name)
		}
	}
	switch o.Op {
	case "set":
		if o.Value == nil {
			return p, fmt.Errorf(`set needs a "value"`)
		}
		v, err := txScalar(o.Value)
		if err != nil {
			return p, err
		}
		p.cmd, p.args = "SET", []string{v}
		if o.TTL != nil {
			ms, err := txTTL(o.TTL)
			if err != nil {
				return p, err
			}
			p.args = append(p.args, "PX", itoa(ms))
		}
	case "inc", "dec":
		by := int64(1)
		if o.By != nil {
			by = *o.By
		}
		p.cmd, p.typ, p.args = "INCRBY", "integer", []string{itoa(by)}
		if o.Op == "dec" {
			p.cmd = "DECRBY"
		}
	case "delete":
		p.cmd = "DEL"
	case "sadd", "srem", "lpush", "rpush":
		if len(o.Members) == 0 {
			return p, fmt.Errorf(`%s needs "members" (a non-empty array of strings)`, o.Op)
		}
		p.cmd, p.args = strings.ToUpper(o.Op), o.Members
		p.typ = "list"
		if o.Op[0] == 's' {
			p.typ = "set"
		}
	case "expire":
		if o.TTL == nil {
			return p, fmt.Errorf(`expire needs a "ttl"`)
		}
		ms, err := txTTL(o.TTL)
		if err != nil {
			return p, err
		}
		p.cmd, p.args = "PEXPIRE", []string{itoa(ms)}
	}
	return p, nil
}

// readTx reads and checks the operations of the file (or stdin).
func readTx(file string) ([]txPlan, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(cliStdin)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, usageErr("transaction --file %s: %v", file, err)
	}
	var ops []txOp
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ops); err != nil {
		return nil, usageErr("transaction --file %s: not a JSON array of operations: %v", file, err)
	}
	switch {
	case len(ops) == 0:
		return nil, usageErr("transaction --file %s: no operations", file)
	case len(ops) > txMaxOps:
		return nil, usageErr("transaction --file %s: %d operations, but one transaction holds at most %d (DynamoDB's TransactWriteItems limit): split it",
			file, len(ops), txMaxOps)
	}
	plans := make([]txPlan, len(ops))
	for i, o := range ops {
		if plans[i], err = o.plan(); err != nil {
			return nil, usageErr("transaction --file %s: operation %d: %v", file, i+1, err)
		}
	}
	return plans, nil
}

func buildTransaction(x *invocation) (func() result, error) {
	file, ok := x.flag("file")
	if !ok {
		return nil, usageErr("transaction needs --file F (a JSON array of operations; - for standard input)")
	}
	plans, err := readTx(file)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(plans))
	for i, p := range plans {
		keys[i] = p.key
	}
	var args []string
	for _, p := range plans {
		args = append(args, p.cmd, p.typ, p.cond, p.want, strconv.Itoa(len(p.args)))
		args = append(args, p.args...)
	}
	return func() result {
		r, err := x.eval(txScript, keys, args...)
		if err != nil {
			return failed(err)
		}
		if len(r.Elems) == 0 {
			return failed(fmt.Errorf("unexpected reply %s", replyString(r)))
		}
		if i := r.Elems[0].Int; i > 0 && int(i) <= len(plans) {
			return txFailed(plans[i-1], int(i), replyString(r.Elems[1]))
		}
		results := make([]any, len(plans))
		for i, p := range plans {
			results[i] = object{{"op", p.op}, {"key", p.key}, {"result", replyValue(r.Elems[i+1])}}
		}
		return answer(object{{"applied", true}, {"results", results}}, true)
	}, nil
}

// txFailed is the result of a transaction whose operation i (1-based)
// could not apply: a condition that does not hold exits 1, a key of the
// wrong type 2; nothing was applied either way.
func txFailed(p txPlan, i int, why string) result {
	o := object{{"applied", false}, {"failed", int64(i)}, {"op", p.op}, {"key", p.key}}
	what := fmt.Sprintf("operation %d (%s %s)", i, p.op, p.key)
	switch {
	case why == "exists":
		return result{obj: o, code: exitNo, note: fmt.Sprintf("%s: condition absent failed: %s exists; nothing applied", what, p.key)}
	case why == "absent":
		return result{obj: o, code: exitNo, note: fmt.Sprintf("%s: condition exists failed: there is no %s; nothing applied", what, p.key)}
	case why == "differs" || strings.HasPrefix(why, "type "):
		held := "another value"
		if t, ok := strings.CutPrefix(why, "type "); ok {
			held = "no value"
			if t != "none" {
				held = "a " + t
			}
		}
		return result{obj: o, code: exitNo, note: fmt.Sprintf("%s: condition equals %q failed: %s holds %s; nothing applied", what, p.want, p.key, held)}
	case why == "notint":
		return result{obj: o, code: exitUsage, note: fmt.Sprintf("%s: %s is not an integer; nothing applied", what, p.key)}
	}
	return result{obj: o, code: exitUsage, note: fmt.Sprintf("%s: WRONGTYPE %s holds another kind of value; nothing applied", what, p.key)}
}
