package main

// The CLI's queue verbs: redamo queue OPERATION NAME, each one QUEUE.*
// command.

import (
	"fmt"

	"github.com/redamo/redamo/commands"
)

// The examples run in this order on an empty store; "$receipt" stands
// for the receipt the pop before printed (TestCLIHelpExamples passes it).
var queueVerbs = []verb{
	{name: "queue config", group: "queue", args: "NAME", minArgs: 1, maxArgs: 1,
		flags: []string{"visibility-timeout", "max-receives", "dlq", "dedup-window", "shards"},
		runs:  "QUEUE.CONFIG NAME SET [VT ms] [MAXRECEIVES n] [DLQ q] [DEDUPWINDOW ms] [SHARDS n], then QUEUE.CONFIG NAME GET",
		summary: "Change the queue's settings (none given: only show them). Every queue exists from its first use, " +
			"with the defaults.",
		example: "queue config jobs --shards 1 --max-receives 5 --dlq jobs-dead",
		output:  `{"queue":"jobs","visibility_timeout_ms":30000,"max_receives":5,"dlq":"jobs-dead","dedup_window_ms":300000,"shards":1}`,
		value:   "shards", build: buildQueueConfig},
	{name: "queue push", group: "queue", args: "NAME PAYLOAD", minArgs: 2, maxArgs: 2, flags: []string{"priority", "delay", "dedup-id"},
		runs:    "QUEUE.PUSH NAME PAYLOAD [PRIORITY p] [DELAY ms] [DEDUP id]",
		summary: "Push a message; prints its id (with --dedup-id seen before: the first message's id, and nothing is pushed).",
		example: "queue push jobs resize-17 --priority 1", output: `{"queue":"jobs","message_id":"18ebb0c4a2e1d0f07c1e9a3b5d2f4e6a"}`,
		value: "message_id", build: buildQueuePush},
	{name: "queue size", group: "queue", args: "NAME", minArgs: 1, maxArgs: 1,
		runs: "QUEUE.LEN NAME", summary: "How many messages are ready; exit 1 when none is.",
		example: "queue size jobs", output: `{"queue":"jobs","ready":1}`,
		value: "ready", build: buildQueueSize},
	{name: "queue peek", group: "queue", args: "NAME", minArgs: 1, maxArgs: 1, flags: []string{"count"},
		flagHelp: map[string]string{"count": "up to N messages (default 1)"},
		runs:     "QUEUE.PEEK NAME [COUNT n]", summary: "The next ready messages, changing nothing; exit 1 when none is ready.",
		example: "queue peek jobs", output: `{"queue":"jobs","messages":[{"message_id":"18ebb0c4a2e1d0f07c1e9a3b5d2f4e6a","payload":"resize-17","deliveries":0}]}`,
		value: "messages", build: buildQueuePeek},
	{name: "queue pop", group: "queue", args: "NAME", minArgs: 1, maxArgs: 1, flags: []string{"count", "visibility-timeout", "wait"},
		flagHelp: map[string]string{"count": "up to N messages (a list in the output)", "wait": "how long to wait for a message (default: one try)"},
		runs:     "QUEUE.POP NAME [COUNT n] [VT ms] [BLOCK ms]",
		summary: "Receive the next message: invisible to others for the visibility timeout, then delivered again unless " +
			"acknowledged with its receipt. Exit 1 when the queue is empty (after --wait).",
		example: "queue pop jobs --visibility-timeout 1m",
		output:  `{"queue":"jobs","message_id":"18ebb0c4a2e1d0f07c1e9a3b5d2f4e6a","receipt":"AAGAAAAAAAAAAQAAAZrT","payload":"resize-17","deliveries":1}`,
		value:   "payload", build: buildQueuePop},
	{name: "queue extend", group: "queue", args: "NAME RECEIPT", minArgs: 2, maxArgs: 2, flags: []string{"visibility-timeout"},
		runs: "QUEUE.EXTEND NAME RECEIPT VT ms", summary: "Keep a received message invisible for longer; exit 1 when the receipt is stale.",
		example: `queue extend jobs $receipt --visibility-timeout 5m`, output: `{"queue":"jobs","extended":true}`,
		value: "extended", build: buildQueueReceipt("QUEUE.EXTEND", "extended")},
	{name: "queue nack", group: "queue", args: "NAME RECEIPT", minArgs: 2, maxArgs: 2, flags: []string{"delay"},
		runs: "QUEUE.NACK NAME RECEIPT [DELAY ms]", summary: "Hand a received message back (visible again after --delay); exit 1 when the receipt is stale.",
		example: `queue nack jobs $receipt`, output: `{"queue":"jobs","nacked":true}`,
		value: "nacked", build: buildQueueReceipt("QUEUE.NACK", "nacked")},
	{name: "queue ack", group: "queue", args: "NAME RECEIPT", minArgs: 2, maxArgs: 2,
		runs: "QUEUE.ACK NAME RECEIPT", summary: "Acknowledge (delete) a received message; exit 1 when the receipt is stale (delivered again since).",
		example: `queue ack jobs $receipt`, output: `{"queue":"jobs","acked":true}`,
		value: "acked", build: buildQueueReceipt("QUEUE.ACK", "acked")},
	{name: "queue stats", group: "queue", args: "NAME", minArgs: 1, maxArgs: 1,
		runs: "QUEUE.STATS NAME", summary: "Messages by state and the queue's counters.",
		example: "queue stats jobs",
		output:  `{"queue":"jobs","ready":0,"delayed":0,"inflight":0,"dead":0,"pushed":1,"acked":1,"nacked":1,"deadlettered":0,"deduplicated":0,"oldest_ready_ms":0}`,
		value:   "ready", build: buildQueueStats},
}

func buildQueueConfig(x *invocation) (func() result, error) {
	name := x.pos[0]
	args := []string{"QUEUE.CONFIG", name, "SET"}
	for _, f := range []struct{ flag, opt string }{{"visibility-timeout", "VT"}, {"dedup-window", "DEDUPWINDOW"}} {
		if ms, ok, err := x.ms(f.flag, 0, f.flag == "visibility-timeout"); err != nil {
			return nil, err
		} else if ok {
			args = append(args, f.opt, itoa(ms))
		}
	}
	for _, f := range []struct{ flag, opt string }{{"max-receives", "MAXRECEIVES"}, {"shards", "SHARDS"}} {
		if _, ok := x.flag(f.flag); ok {
			n, err := x.intFlag(f.flag, 0, f.flag == "shards")
			if err != nil {
				return nil, err
			}
			args = append(args, f.opt, itoa(n))
		}
	}
	if dlq, ok := x.flag("dlq"); ok {
		args = append(args, "DLQ", dlq)
	}
	return func() result {
		if len(args) > 3 {
			if _, err := x.do(args...); err != nil {
				return failed(err)
			}
		}
		r, err := x.do("QUEUE.CONFIG", name, "GET")
		if err != nil {
			return failed(err)
		}
		return answer(object{{"queue", name}, {"visibility_timeout_ms", fieldValue(r, "vt")}, {"max_receives", fieldValue(r, "maxreceives")},
			{"dlq", fieldValue(r, "dlq")}, {"dedup_window_ms", fieldValue(r, "dedupwindow")}, {"shards", fieldValue(r, "shards")}}, true)
	}, nil
}

func buildQueuePush(x *invocation) (func() result, error) {
	name, payload := x.pos[0], x.pos[1]
	args := []string{"QUEUE.PUSH", name, payload}
	if _, ok := x.flag("priority"); ok {
		p, err := x.intFlag("priority", 0, false)
		if err != nil {
			return nil, err
		}
		args = append(args, "PRIORITY", itoa(p))
	}
	if ms, ok, err := x.ms("delay", 0, true); err != nil {
		return nil, err
	} else if ok {
		args = append(args, "DELAY", itoa(ms))
	}
	if id, ok := x.flag("dedup-id"); ok {
		args = append(args, "DEDUP", id)
	}
	return func() result {
		r, err := x.do(args...)
		if err != nil {
			return failed(err)
		}
		return answer(object{{"queue", name}, {"message_id", r.Str}}, true)
	}, nil
}

func buildQueueSize(x *invocation) (func() result, error) {
	name := x.pos[0]
	return func() result {
		r, err := x.do("QUEUE.LEN", name)
		if err != nil {
			return failed(err)
		}
		return answer(object{{"queue", name}, {"ready", r.Int}}, r.Int > 0)
	}, nil
}

// message is a popped or peeked message as a result.
func message(m commands.Reply) object {
	o := object{{"message_id", fieldValue(m, "id")}}
	if _, ok := m.Field("receipt"); ok {
		o = append(o, field{"receipt", fieldValue(m, "receipt")})
	}
	return append(o, field{"payload", fieldValue(m, "payload")}, field{"deliveries", fieldValue(m, "deliveries")})
}

func buildQueuePeek(x *invocation) (func() result, error) {
	name := x.pos[0]
	n, err := x.intFlag("count", 1, true)
	if err != nil {
		return nil, err
	}
	return func() result {
		r, err := x.do("QUEUE.PEEK", name, "COUNT", itoa(n))
		if err != nil {
			return failed(err)
		}
		msgs := []any{}
		for _, m := range r.Elems {
			msgs = append(msgs, message(m))
		}
		return answer(object{{"queue", name}, {"messages", msgs}}, len(msgs) > 0)
	}, nil
}

func buildQueuePop(x *invocation) (func() result, error) {
	name := x.pos[0]
	args := []string{"QUEUE.POP", name}
	_, many := x.flag("count")
	if many {
		n, err := x.intFlag("count", 1, true)
		if err != nil {
			return nil, err
		}
		args = append(args, "COUNT", itoa(n))
	}
	if ms, ok, err := x.msEnv("visibility-timeout", envQueueVisibility, 0, true); err != nil {
		return nil, err
	} else if ok {
		args = append(args, "VT", itoa(ms))
	}
	if ms, ok, err := x.ms("wait", 0, false); err != nil {
		return nil, err
	} else if ok {
		args = append(args, "BLOCK", itoa(ms))
		x.waitMS = ms
	}
	return func() result {
		r, err := x.do(args...)
		if err != nil {
			return failed(err)
		}
		if many {
			msgs := []any{}
			for _, m := range r.Elems {
				msgs = append(msgs, message(m))
			}
			return answer(object{{"queue", name}, {"messages", msgs}}, len(msgs) > 0)
		}
		if r.IsNull() || len(r.Elems) == 0 {
			return answer(object{{"queue", name}, {"message_id", nil}}, false)
		}
		return answer(append(object{{"queue", name}}, message(r.Elems[0])...), true)
	}, nil
}

// buildQueueReceipt builds ACK, NACK and EXTEND: one receipt, 1 or 0.
func buildQueueReceipt(cmd, key string) func(x *invocation) (func() result, error) {
	return func(x *invocation) (func() result, error) {
		name, receipt := x.pos[0], x.pos[1]
		args := []string{cmd, name, receipt}
		switch cmd {
		case "QUEUE.EXTEND":
			ms, ok, err := x.ms("visibility-timeout", 0, true)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, usageErr("queue extend needs --visibility-timeout")
			}
			args = append(args, "VT", itoa(ms))
		case "QUEUE.NACK":
			if ms, ok, err := x.ms("delay", 0, true); err != nil {
				return nil, err
			} else if ok {
				args = append(args, "DELAY", itoa(ms))
			}
		}
		return func() result {
			r, err := x.do(args...)
			if err != nil {
				return failed(err)
			}
			o := object{{"queue", name}, {key, r.Int == 1}}
			if r.Int != 1 {
				return result{obj: o, code: exitNo, note: fmt.Sprintf("the receipt is stale: its message was delivered again, handed back or acknowledged since (or the receipt is of another queue than %s)", name)}
			}
			return answer(o, true)
		}, nil
	}
}

func buildQueueStats(x *invocation) (func() result, error) {
	name := x.pos[0]
	return func() result {
		r, err := x.do("QUEUE.STATS", name)
		if err != nil {
			return failed(err)
		}
		o := object{{"queue", name}}
		for _, f := range []string{"ready", "delayed", "inflight", "dead", "pushed", "acked", "nacked", "deadlettered", "deduplicated", "oldest_ready_ms"} {
			o = append(o, field{f, fieldValue(r, f)})
		}
		return answer(o, true)
	}, nil
}
