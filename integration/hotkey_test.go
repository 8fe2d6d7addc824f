package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
)

// Hot keys: many clients on one key through several instances, the load
// under which an instance coalesces the commands it holds for one key into
// shared requests. Whatever an instance batches, every command must still
// look as if it took effect alone at one instant between its call and its
// reply (principle 2 of DESIGN.md): each INCR its own value, each pop its
// own element, each SADD its own 1 or 0.

// hotOp is one command on the hot key: cmd is its name in lower case
// ("snap" reads the whole value: GET, LRANGE 0 -1 or SMEMBERS), arg an
// element, a member or a value, n an amount.
type hotOp struct {
	cmd string
	arg string
	n   int64
}

// hotOut is a command's reply. unknown: an error reply whose command may
// or may not have taken effect (its answer says nothing else).
type hotOut struct {
	unknown bool
	null    bool
	n       int64
	s       string
}

// hotFamily is one data type's commands on the hot key: how a client
// draws and sends them, and the sequential model they are checked
// against. apply is the model: the state after op and the reply op must
// get in state. States are comparable values.
type hotFamily struct {
	name string
	// clients per instance: enough that an instance holds several of the
	// key's commands while a request is in flight, few enough that
	// porcupine need not try too many orders of the changes in flight
	// together (see hotWriter).
	clients int
	init    any
	draw    func(rng *rand.Rand, client, seq int) hotOp
	args    func(key string, op hotOp) []any
	read    func(op hotOp, v any) (hotOut, error)
	apply   func(state any, op hotOp) (any, hotOut)
	// stateOf is the state a snapshot's reply shows.
	stateOf func(out hotOut) any
}

// model is f's porcupine model starting from init. A command whose
// outcome is unknown leads to both states, with and without its effect.
func (f hotFamily) model(init any) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{init} },
		Step: func(state, input, output any) []any {
			op, out := input.(hotOp), output.(hotOut)
			next, want := f.apply(state, op)
			switch {
			case out.unknown:
				return []any{state, next}
			case out == want:
				return []any{next}
			}
			return nil
		},
		Equal:             func(a, b any) bool { return a == b },
		DescribeOperation: describeHotOp,
		DescribeState:     func(s any) string { return fmt.Sprintf("%v", s) },
	}
	return nm.ToModel()
}

func describeHotOp(input, output any) string {
	op, out := input.(hotOp), output.(hotOut)
	s := op.cmd
	if op.arg != "" {
		s += " " + op.arg
	}
	if op.cmd == "incrby" || op.cmd == "decrby" || op.cmd == "set" && op.arg == "" || strings.HasPrefix(op.cmd, "zadd") || op.cmd == "zincrby" {
		s += " " + strconv.FormatInt(op.n, 10)
	}
	switch {
	case out.unknown:
		return s + " -> ?"
	case out.null:
		return s + " -> nil"
	case out.s != "":
		return s + " -> " + out.s
	}
	return s + " -> " + strconv.FormatInt(out.n, 10)
}

// counter is a key holding an integer: INCR, INCRBY, DECRBY, GET, and SET
// of a number.
type counter struct {
	exists bool
	n      int64
}

var counterFamily = hotFamily{
	name:    "counter",
	clients: 8,
	init:    counter{},
	draw: func(rng *rand.Rand, _, _ int) hotOp {
		switch r := rng.IntN(100); {
		case r < 35:
			return hotOp{cmd: "incr"}
		case r < 50:
			return hotOp{cmd: "incrby", n: 1 + rng.Int64N(5)}
		case r < 60:
			return hotOp{cmd: "decrby", n: 1 + rng.Int64N(5)}
		case r < 95:
			return hotOp{cmd: "get"}
		default:
			return hotOp{cmd: "set", n: rng.Int64N(1000000)}
		}
	},
	args: func(key string, op hotOp) []any {
		switch op.cmd {
		case "incr", "get":
			return []any{op.cmd, key}
		case "snap":
			return []any{"get", key}
		}
		return []any{op.cmd, key, op.n}
	},
	read: func(op hotOp, v any) (hotOut, error) {
		switch op.cmd {
		case "set":
			return hotOut{}, nil
		case "get", "snap":
			if v == nil {
				return hotOut{null: true}, nil
			}
			n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
			return hotOut{n: n}, err
		}
		n, ok := v.(int64)
		if !ok {
			return hotOut{}, fmt.Errorf("%s answered %v", op.cmd, v)
		}
		return hotOut{n: n}, nil
	},
	apply: func(state any, op hotOp) (any, hotOut) {
		s := state.(counter)
		switch op.cmd {
		case "incr":
			return counter{true, s.n + 1}, hotOut{n: s.n + 1}
		case "incrby":
			return counter{true, s.n + op.n}, hotOut{n: s.n + op.n}
		case "decrby":
			return counter{true, s.n - op.n}, hotOut{n: s.n - op.n}
		case "set":
			return counter{true, op.n}, hotOut{}
		}
		return s, hotOut{null: !s.exists, n: s.n}
	},
	stateOf: func(out hotOut) any { return counter{!out.null, out.n} },
}

// register is a key holding a string: SET and GET.
type register struct {
	exists bool
	s      string
}

var registerFamily = hotFamily{
	name:    "register",
	clients: 4,
	init:    register{},
	draw: func(rng *rand.Rand, client, seq int) hotOp {
		if registerWriter(client) {
			return hotOp{cmd: "set", arg: fmt.Sprintf("c%d.%d", client, seq)}
		}
		return hotOp{cmd: "get"}
	},
	args: func(key string, op hotOp) []any {
		if op.cmd == "set" {
			return []any{"set", key, op.arg}
		}
		return []any{"get", key}
	},
	read: func(op hotOp, v any) (hotOut, error) {
		switch {
		case op.cmd == "set":
			return hotOut{}, nil
		case v == nil:
			return hotOut{null: true}, nil
		}
		s, ok := v.(string)
		if !ok {
			return hotOut{}, fmt.Errorf("GET answered %v", v)
		}
		return hotOut{s: s}, nil
	},
	apply: func(state any, op hotOp) (any, hotOut) {
		s := state.(register)
		if op.cmd == "set" {
			return register{true, op.arg}, hotOut{}
		}
		return s, hotOut{null: !s.exists, s: s.s}
	},
	stateOf: func(out hotOut) any { return register{!out.null, out.s} },
}

// listFamily is a list of unique elements (the state: its elements
// joined by commas): LPUSH, RPUSH, LPOP, RPOP, LLEN.
var listFamily = hotFamily{
	name:    "list",
	clients: 4,
	init:    "",
	draw: func(rng *rand.Rand, client, seq int) hotOp {
		if !hotWriter(client) {
			if rng.IntN(2) == 0 {
				return hotOp{cmd: "llen"}
			}
			return hotOp{cmd: "snap"}
		}
		e := fmt.Sprintf("c%d.%d", client, seq)
		switch rng.IntN(4) {
		case 0:
			return hotOp{cmd: "lpush", arg: e}
		case 1:
			return hotOp{cmd: "rpush", arg: e}
		case 2:
			return hotOp{cmd: "lpop"}
		default:
			return hotOp{cmd: "rpop"}
		}
	},
	args: func(key string, op hotOp) []any {
		switch op.cmd {
		case "lpush", "rpush":
			return []any{op.cmd, key, op.arg}
		case "snap":
			return []any{"lrange", key, 0, -1}
		}
		return []any{op.cmd, key}
	},
	read: func(op hotOp, v any) (hotOut, error) {
		switch op.cmd {
		case "lpop", "rpop":
			if v == nil {
				return hotOut{null: true}, nil
			}
			return hotOut{s: fmt.Sprint(v)}, nil
		case "snap":
			l, ok := v.([]any)
			if !ok {
				return hotOut{}, fmt.Errorf("LRANGE answered %v", v)
			}
			es := make([]string, len(l))
			for i, e := range l {
				es[i] = fmt.Sprint(e)
			}
			return hotOut{s: strings.Join(es, ",")}, nil
		}
		n, ok := v.(int64)
		if !ok {
			return hotOut{}, fmt.Errorf("%s answered %v", op.cmd, v)
		}
		return hotOut{n: n}, nil
	},
	apply: func(state any, op hotOp) (any, hotOut) {
		var l []string
		if s := state.(string); s != "" {
			l = strings.Split(s, ",")
		}
		switch op.cmd {
		case "lpush":
			l = append([]string{op.arg}, l...)
			return strings.Join(l, ","), hotOut{n: int64(len(l))}
		case "rpush":
			l = append(l, op.arg)
			return strings.Join(l, ","), hotOut{n: int64(len(l))}
		case "lpop", "rpop":
			if len(l) == 0 {
				return state, hotOut{null: true}
			}
			e := l[0]
			if op.cmd == "lpop" {
				l = l[1:]
			} else {
				e, l = l[len(l)-1], l[:len(l)-1]
			}
			return strings.Join(l, ","), hotOut{s: e}
		case "llen":
			return state, hotOut{n: int64(len(l))}
		}
		return state, hotOut{s: state.(string)}
	},
	stateOf: func(out hotOut) any { return out.s },
}

// hotMembers is the set family's members m0..m7: few, so that adds and
// removals of one member meet; the state is a bit per member.
const hotMembers = 8

var setFamily = hotFamily{
	name:    "set",
	clients: 4,
	init:    uint8(0),
	draw: func(rng *rand.Rand, client, _ int) hotOp {
		m := "m" + strconv.Itoa(rng.IntN(hotMembers))
		if !hotWriter(client) {
			return drawRead(rng, "scard", "sismember", m)
		}
		if rng.IntN(2) == 0 {
			return hotOp{cmd: "sadd", arg: m}
		}
		return hotOp{cmd: "srem", arg: m}
	},
	args: func(key string, op hotOp) []any {
		switch op.cmd {
		case "scard":
			return []any{op.cmd, key}
		case "snap":
			return []any{"smembers", key}
		}
		return []any{op.cmd, key, op.arg}
	},
	read: func(op hotOp, v any) (hotOut, error) {
		if op.cmd == "snap" {
			l, ok := v.([]any)
			if !ok {
				return hotOut{}, fmt.Errorf("SMEMBERS answered %v", v)
			}
			ms := make([]string, len(l))
			for i, m := range l {
				ms[i] = fmt.Sprint(m)
			}
			sort.Strings(ms)
			return hotOut{s: strings.Join(ms, ",")}, nil
		}
		n, ok := v.(int64)
		if !ok {
			return hotOut{}, fmt.Errorf("%s answered %v", op.cmd, v)
		}
		return hotOut{n: n}, nil
	},
	apply: func(state any, op hotOp) (any, hotOut) {
		s := state.(uint8)
		var bit uint8
		if op.arg != "" {
			i, _ := strconv.Atoi(op.arg[1:])
			bit = 1 << i
		}
		b2i := func(b bool) int64 {
			if b {
				return 1
			}
			return 0
		}
		switch op.cmd {
		case "sadd":
			return s | bit, hotOut{n: b2i(s&bit == 0)}
		case "srem":
			return s &^ bit, hotOut{n: b2i(s&bit != 0)}
		case "sismember":
			return s, hotOut{n: b2i(s&bit != 0)}
		case "scard":
			n := int64(0)
			for i := range hotMembers {
				n += int64(s >> i & 1)
			}
			return s, hotOut{n: n}
		}
		var ms []string
		for i := range hotMembers {
			if s>>i&1 == 1 {
				ms = append(ms, "m"+strconv.Itoa(i))
			}
		}
		return s, hotOut{s: strings.Join(ms, ",")}
	},
	stateOf: func(out hotOut) any {
		var s uint8
		if out.s != "" {
			for _, m := range strings.Split(out.s, ",") {
				i, _ := strconv.Atoi(m[1:])
				s |= 1 << i
			}
		}
		return s
	},
}

// hotWriter tells the clients that change a list or a set from those
// that only read it: the first hotWriters of each instance's clients, so
// that three of an instance's commands can be in flight together (one
// request in flight, a batch of two waiting) and one client reads. A
// change whose reply does not fix its place among the others (a push's
// length, an SADD's 0 or 1) multiplies the orders porcupine must try by
// the changes in flight with it, and a read of a value set long before
// sends its search back to the start: hence a few clients per instance.
// Increments need no such care: each one's reply fixes its place.
func hotWriter(client int) bool { return client/hotInstances < hotWriters }

const hotWriters = 3

// registerWriter: a SET's reply says nothing of its place at all, and
// nine of them in flight together are more orders than porcupine tries in
// minutes. The writers are three clients of the first instance, which
// batches their SETs, and the other clients read, through every instance.
func registerWriter(client int) bool {
	return client%hotInstances == 0 && client/hotInstances < hotWriters
}

// zsetMembers is the sorted-set family's members m0..m3, whose scores are
// small integers; the state is each member's presence and score.
const zsetMembers = 4

type zentry struct {
	in    bool
	score int64
}

type zstate [zsetMembers]zentry

// zsetFamilyOf is a sorted set's family: ZADD with and without NX XX GT
// CH INCR, ZINCRBY, ZREM, ZSCORE, ZCARD, and ZRANGE 0 -1 WITHSCORES as the
// snapshot. A writer's command is "zadd" and its flags, or "zincrby" or
// "zrem". Member i is "m" and i followed by pad: a long pad makes the set
// large (an item per member). snaps: readers send the snapshot too, not
// only ZCARD and ZSCORE.
func zsetFamilyOf(name, pad string, snaps bool) hotFamily {
	return hotFamily{
		name:    name,
		clients: 4,
		init:    zstate{},
		draw: func(rng *rand.Rand, client, _ int) hotOp {
			m := "m" + strconv.Itoa(rng.IntN(zsetMembers)) + pad
			if !hotWriter(client) {
				r := drawRead(rng, "zcard", "zscore", m)
				if r.cmd == "snap" && !snaps {
					r = hotOp{cmd: "zcard"}
				}
				return r
			}
			cmds := []string{"zadd", "zadd xx ch", "zadd gt ch", "zadd nx incr", "zadd incr", "zincrby", "zrem"}
			cmd := cmds[rng.IntN(len(cmds))]
			n := rng.Int64N(10)
			if strings.Contains(cmd, "incr") {
				n = rng.Int64N(6) - 2
			}
			return hotOp{cmd: cmd, arg: m, n: n}
		},
		args: func(key string, op hotOp) []any {
			f := strings.Fields(op.cmd)
			switch f[0] {
			case "zcard":
				return []any{"zcard", key}
			case "snap":
				return []any{"zrange", key, 0, -1, "withscores"}
			case "zscore", "zrem":
				return []any{f[0], key, op.arg}
			}
			args := []any{f[0], key}
			for _, fl := range f[1:] {
				args = append(args, fl)
			}
			return append(args, op.n, op.arg)
		},
		read: func(op hotOp, v any) (hotOut, error) {
			switch {
			case op.cmd == "snap":
				l, ok := v.([]any)
				if !ok || len(l)%2 != 0 {
					return hotOut{}, fmt.Errorf("ZRANGE answered %v", v)
				}
				var es []string
				for i := 0; i < len(l); i += 2 {
					es = append(es, fmt.Sprintf("%v=%v", l[i], l[i+1]))
				}
				return hotOut{s: strings.Join(es, ",")}, nil
			case v == nil:
				return hotOut{null: true}, nil
			}
			if n, ok := v.(int64); ok {
				return hotOut{n: n}, nil
			}
			// A score, an integer here.
			n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
			return hotOut{n: n}, err
		},
		apply: func(state any, op hotOp) (any, hotOut) {
			s := state.(zstate)
			i := 0
			if op.arg != "" {
				i = zmember(op.arg)
			}
			e := s[i]
			f := strings.Fields(op.cmd)
			has := func(fl string) bool { return slices.Contains(f[1:], fl) }
			incr := has("incr") || f[0] == "zincrby"
			refused := hotOut{}
			if incr {
				refused = hotOut{null: true}
			}
			switch f[0] {
			case "zcard":
				n := int64(0)
				for _, e := range s {
					if e.in {
						n++
					}
				}
				return s, hotOut{n: n}
			case "zscore":
				return s, hotOut{null: !e.in, n: e.score}
			case "zrem":
				s[i] = zentry{}
				if e.in {
					return s, hotOut{n: 1}
				}
				return s, hotOut{}
			case "snap":
				var es []string
				order := make([]int, 0, zsetMembers)
				for j, e := range s {
					if e.in {
						order = append(order, j)
					}
				}
				sort.SliceStable(order, func(a, b int) bool { return s[order[a]].score < s[order[b]].score })
				for _, j := range order {
					es = append(es, fmt.Sprintf("m%d%s=%d", j, pad, s[j].score))
				}
				return s, hotOut{s: strings.Join(es, ",")}
			}
			switch {
			case !e.in && has("xx"), e.in && has("nx"):
				return s, refused
			case !e.in:
				s[i] = zentry{true, op.n}
				if incr {
					return s, hotOut{n: op.n}
				}
				return s, hotOut{n: 1}
			}
			score := op.n
			if incr {
				score += e.score
			}
			if has("gt") && score <= e.score {
				return s, refused
			}
			s[i].score = score
			switch {
			case incr:
				return s, hotOut{n: score}
			case has("ch") && score != e.score:
				return s, hotOut{n: 1}
			}
			return s, hotOut{}
		},
		stateOf: func(out hotOut) any {
			var s zstate
			if out.s != "" {
				for _, e := range strings.Split(out.s, ",") {
					m, score, _ := strings.Cut(e, "=")
					n, _ := strconv.ParseInt(score, 10, 64)
					s[zmember(m)] = zentry{true, n}
				}
			}
			return s
		},
	}
}

// drawRead is a reader's command on a collection: its count (cmd
// count), member m's (cmd member) or the whole of it.
func drawRead(rng *rand.Rand, count, member, m string) hotOp {
	switch rng.IntN(3) {
	case 0:
		return hotOp{cmd: count}
	case 1:
		return hotOp{cmd: member, arg: m}
	}
	return hotOp{cmd: "snap"}
}

// zmember is the index of a sorted-set family's member.
func zmember(m string) int { return int(m[1] - '0') }

// The sorted-set families: a small set (inline) and a large one, whose
// readers send no ZRANGE while it changes: a query of its order items is
// not isolated from a transaction that moves a member from one order item
// to another, and may see neither (a one-page read is not validated
// against the key item), which is no matter of coalescing.
var (
	zsetFamily      = zsetFamilyOf("zset", "", true)
	largeZSetFamily = zsetFamilyOf("zset-large", strings.Repeat("l", 64), false)
)

var hotFamilies = []hotFamily{counterFamily, registerFamily, listFamily, setFamily, zsetFamily, largeZSetFamily}

// Sizes of a hot-key history: instances, rounds, and commands per client
// and round. A round ends when every command of it has been answered,
// with a read of the whole value: the history is checked round by round,
// each from the state the previous round's read showed, so that each
// check is over a few dozen to a few hundred commands.
const (
	hotInstances         = 3
	hotRounds            = 8
	hotOpsPerClientRound = 3
)

// hotSend sends op and reads its reply; gone is set when the command
// surely did not take effect (TRYAGAIN: throttled or lost a race, nothing
// written), and an error reply of any other kind is an unknown outcome.
func hotSend(ctx context.Context, c *redis.Client, f hotFamily, key string, op hotOp) (out hotOut, gone bool, err error) {
	v, err := c.Do(ctx, f.args(key, op)...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		v, err = nil, nil
	case err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN"):
		return hotOut{}, true, nil
	case err != nil:
		return hotOut{unknown: true}, false, nil
	}
	out, err = f.read(op, v)
	return out, false, err
}

// TestHotKeyLinearizable: clients on three instances (eight on each for
// the counter, four for the others) send a family's commands to one key;
// the history is checked with
// porcupine against the family's sequential model. An error reply other
// than TRYAGAIN may have taken effect or not (the model allows both, up to
// the round's end); TRYAGAIN did not.
func TestHotKeyLinearizable(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			var cs []*redis.Client
			for range hotInstances {
				cs = append(cs, b.Start(t).Client(t, func(o *redis.Options) {
					o.PoolSize, o.Protocol = counterFamily.clients, 2
				}))
			}
			for _, f := range hotFamilies {
				t.Run(f.name, func(t *testing.T) { hotLinearizable(t, cs, f) })
			}
		})
	}
}

func hotLinearizable(t *testing.T, cs []*redis.Client, f hotFamily) {
	ctx := context.Background()
	key := "hot:" + f.name
	clients := len(cs) * f.clients
	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	state := f.init
	ops, unknown := 0, 0
	batches0, commands0 := coalesced(t, cs)
	for round := range hotRounds {
		var mu sync.Mutex
		var history []porcupine.Operation
		var fails firstErrors
		var wg sync.WaitGroup
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
				c := cs[w%len(cs)]
				for i := range hotOpsPerClientRound {
					op := f.draw(rng, w, round*hotOpsPerClientRound+i)
					call := now()
					out, gone, err := hotSend(ctx, c, f, key, op)
					ret := now()
					if err != nil {
						fails.add("client %d: %s: %v", w, op.cmd, err)
						return
					}
					if gone {
						continue
					}
					mu.Lock()
					history = append(history, porcupine.Operation{ClientId: w, Input: op, Call: call, Output: out, Return: ret})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		fails.require(t)
		// A command whose outcome is unknown may take effect until the
		// round ends: every reply is in, nothing else is in flight.
		end := now()
		for i := range history {
			if history[i].Output.(hotOut).unknown {
				history[i].Return = end
				unknown++
			}
		}
		snap := hotOp{cmd: "snap"}
		var out hotOut
		var call, ret int64
		for try := 0; ; try++ {
			// Reads are throttled too on a hot partition: TRYAGAIN is
			// tried again.
			call = now()
			o, gone, err := hotSend(ctx, cs[round%len(cs)], f, key, snap)
			ret = now()
			require.NoError(t, err)
			if !gone && !o.unknown {
				out = o
				break
			}
			require.Less(t, try, 100, "round %d: the whole value could not be read", round)
			time.Sleep(10 * time.Millisecond)
		}
		history = append(history, porcupine.Operation{ClientId: clients, Input: snap, Call: call, Output: out, Return: ret})
		ops += len(history)
		checkHot(t, f, state, history, round)
		state = f.stateOf(out)
	}
	batches, commands := coalesced(t, cs)
	t.Logf("%s: %d commands in %d rounds, %d of unknown outcome: linearizable; the instances coalesced %d commands into %d batches",
		f.name, ops, hotRounds, unknown, commands-commands0, batches-batches0)
}

// coalesced sums the batches of more than one command the instances ran
// and the commands those held, as INFO redamo counts them (0 where it does
// not).
func coalesced(t *testing.T, cs []*redis.Client) (batches, commands int64) {
	t.Helper()
	for _, c := range cs {
		info, err := c.Info(context.Background(), "redamo").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\r\n") {
			name, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch name {
			case "coalesced_batches":
				batches += n
			case "coalesced_commands":
				commands += n
			}
		}
	}
	return batches, commands
}

// hotCheckTimeout bounds one round's check. A round is small enough that
// porcupine decides it far sooner; running out of time (Unknown) is no
// verdict on the history, so the round is checked again with far more
// time, and only a round still undecided then fails, as one the test
// cannot judge.
const hotCheckTimeout = 30 * time.Second

// checkHot checks one round's history from state, and on a violation logs
// the commands in call order and keeps a visualization.
func checkHot(t *testing.T, f hotFamily, state any, history []porcupine.Operation, round int) {
	t.Helper()
	m := f.model(state)
	res, info := porcupine.CheckOperationsVerbose(m, history, hotCheckTimeout)
	if res == porcupine.Unknown {
		t.Logf("round %d: undecided after %s; checking again with ten times as long", round, hotCheckTimeout)
		res, info = porcupine.CheckOperationsVerbose(m, history, 10*hotCheckTimeout)
	}
	if res == porcupine.Ok {
		return
	}
	if f, err := os.CreateTemp("", "redamo-hotkey-linearizability-*.html"); err == nil {
		_ = f.Close()
		if err := porcupine.VisualizePath(m, info, f.Name()); err == nil {
			t.Logf("visualization: %s", f.Name())
		}
	}
	sorted := slices.Clone(history)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		fmt.Fprintf(&b, "  [%9.3f ms .. %9.3f ms] client %2d: %s\n", float64(op.Call)/1e6, float64(op.Return)/1e6,
			op.ClientId, describeHotOp(op.Input, op.Output))
	}
	t.Logf("round %d from state %v:\n%s", round, state, b.String())
	require.Equal(t, porcupine.Ok, res, "%s, round %d: %d commands on one key are not linearizable", f.name, round, len(history))
}

// The models must reject what a coalescing instance could get wrong, or
// the check above proves nothing: two increments answered with the same
// value, a read that missed a write answered before it was sent, one
// element popped twice, a member added twice, a lost push. And they must
// accept what concurrency allows: concurrent increments answered in
// either order, a command of unknown outcome counted or not. This needs
// no store.
func TestHotKeyModelsRejectAnomalies(t *testing.T) {
	type call struct {
		call, ret int64
		op        hotOp
		out       hotOut
	}
	for _, tc := range []struct {
		name string
		f    hotFamily
		h    []call
		ok   bool
	}{
		{"concurrent INCRs in either order", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{n: 2}}, {1, 11, hotOp{cmd: "incr"}, hotOut{n: 1}}}, true},
		{"two INCRs answered alike", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{n: 1}}, {1, 11, hotOp{cmd: "incr"}, hotOut{n: 1}}}, false},
		{"INCRBY's own sum", counterFamily, []call{
			{0, 10, hotOp{cmd: "incrby", n: 3}, hotOut{n: 3}}, {1, 11, hotOp{cmd: "decrby", n: 1}, hotOut{n: 2}},
			{12, 13, hotOp{cmd: "get"}, hotOut{n: 2}}}, true},
		{"a GET that missed an answered INCR", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{n: 1}}, {11, 12, hotOp{cmd: "get"}, hotOut{null: true}}}, false},
		{"an unknown INCR counted", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{unknown: true}}, {11, 12, hotOp{cmd: "incr"}, hotOut{n: 2}}}, true},
		{"an unknown INCR not counted", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{unknown: true}}, {11, 12, hotOp{cmd: "incr"}, hotOut{n: 1}}}, true},
		{"an unknown INCR counted twice", counterFamily, []call{
			{0, 10, hotOp{cmd: "incr"}, hotOut{unknown: true}}, {11, 12, hotOp{cmd: "incr"}, hotOut{n: 3}}}, false},
		{"SET then INCR", counterFamily, []call{
			{0, 1, hotOp{cmd: "set", n: 40}, hotOut{}}, {2, 3, hotOp{cmd: "incr"}, hotOut{n: 41}}}, true},
		{"a GET of an overwritten value", registerFamily, []call{
			{0, 1, hotOp{cmd: "set", arg: "a"}, hotOut{}}, {2, 3, hotOp{cmd: "set", arg: "b"}, hotOut{}},
			{4, 5, hotOp{cmd: "get"}, hotOut{s: "a"}}}, false},
		{"concurrent SETs, the last one read", registerFamily, []call{
			{0, 5, hotOp{cmd: "set", arg: "a"}, hotOut{}}, {1, 6, hotOp{cmd: "set", arg: "b"}, hotOut{}},
			{7, 8, hotOp{cmd: "get"}, hotOut{s: "a"}}}, true},
		{"one element popped twice", listFamily, []call{
			{0, 1, hotOp{cmd: "rpush", arg: "x"}, hotOut{n: 1}}, {2, 5, hotOp{cmd: "lpop"}, hotOut{s: "x"}},
			{3, 6, hotOp{cmd: "rpop"}, hotOut{s: "x"}}}, false},
		{"concurrent pushes, lengths in either order", listFamily, []call{
			{0, 5, hotOp{cmd: "lpush", arg: "a"}, hotOut{n: 2}}, {1, 6, hotOp{cmd: "rpush", arg: "b"}, hotOut{n: 1}},
			{7, 8, hotOp{cmd: "snap"}, hotOut{s: "a,b"}}}, true},
		{"a lost push", listFamily, []call{
			{0, 5, hotOp{cmd: "lpush", arg: "a"}, hotOut{n: 1}}, {1, 6, hotOp{cmd: "lpush", arg: "b"}, hotOut{n: 2}},
			{7, 8, hotOp{cmd: "llen"}, hotOut{n: 1}}}, false},
		{"a member added twice", setFamily, []call{
			{0, 5, hotOp{cmd: "sadd", arg: "m1"}, hotOut{n: 1}}, {1, 6, hotOp{cmd: "sadd", arg: "m1"}, hotOut{n: 1}}}, false},
		{"two ZINCRBYs answered alike", zsetFamily, []call{
			{0, 5, hotOp{cmd: "zincrby", arg: "m1", n: 2}, hotOut{n: 2}}, {1, 6, hotOp{cmd: "zincrby", arg: "m1", n: 2}, hotOut{n: 2}}}, false},
		{"concurrent ZINCRBYs in either order", zsetFamily, []call{
			{0, 5, hotOp{cmd: "zincrby", arg: "m1", n: 2}, hotOut{n: 5}}, {1, 6, hotOp{cmd: "zadd incr", arg: "m1", n: 3}, hotOut{n: 3}},
			{7, 8, hotOp{cmd: "snap"}, hotOut{s: "m1=5"}}}, true},
		{"a ZADD NX INCR refused on an absent member", zsetFamily, []call{
			{0, 1, hotOp{cmd: "zadd nx incr", arg: "m0", n: 1}, hotOut{null: true}}}, false},
		{"a ZADD GT CH that lowered a score", zsetFamily, []call{
			{0, 1, hotOp{cmd: "zadd", arg: "m2", n: 5}, hotOut{n: 1}}, {2, 3, hotOp{cmd: "zadd gt ch", arg: "m2", n: 3}, hotOut{n: 0}},
			{4, 5, hotOp{cmd: "zscore", arg: "m2"}, hotOut{n: 3}}}, false},
		{"a ZREM of a member ZADD XX CH kept", zsetFamily, []call{
			{0, 1, hotOp{cmd: "zadd", arg: "m3", n: 1}, hotOut{n: 1}}, {2, 5, hotOp{cmd: "zrem", arg: "m3"}, hotOut{n: 1}},
			{3, 6, hotOp{cmd: "zadd xx ch", arg: "m3", n: 4}, hotOut{n: 1}}, {7, 8, hotOp{cmd: "zcard"}, hotOut{n: 0}}}, true},
		{"a member added, removed, counted", setFamily, []call{
			{0, 5, hotOp{cmd: "sadd", arg: "m1"}, hotOut{n: 1}}, {1, 6, hotOp{cmd: "srem", arg: "m1"}, hotOut{n: 0}},
			{7, 8, hotOp{cmd: "scard"}, hotOut{n: 1}}, {9, 10, hotOp{cmd: "snap"}, hotOut{s: "m1"}}}, true},
	} {
		h := make([]porcupine.Operation, len(tc.h))
		for i, c := range tc.h {
			h[i] = porcupine.Operation{ClientId: i, Input: c.op, Call: c.call, Output: c.out, Return: c.ret}
		}
		require.Equal(t, tc.ok, porcupine.CheckOperations(tc.f.model(tc.f.init), h), tc.name)
	}
}

// forHotBackends runs f as forBackends does, and first on the plain
// embedded store shared by in-process instances.
func forHotBackends(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("memory", func(t *testing.T) {
		stats := dynastore.NewStats()
		store := memory.New(memory.Options{Observer: stats})
		b := backend{name: "memory", faulty: func() {}, calm: func() {}}
		b.node = func(t *testing.T) node { return &inproc{t: t, store: store, stats: stats} }
		f(t, b)
	})
	forBackends(t, f)
}

// TestHotKeyKillCounter kills the three instances of a hot counter one
// after the other at random moments while eight clients on each send
// INCRBY to it, then restarts one: the counter holds every acknowledged
// increment and at most the unknown-outcome ones besides, and no two
// acknowledged increments were answered with the same value.
func TestHotKeyKillCounter(t *testing.T) {
	forHotBackends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		nodes := make([]node, hotInstances)
		for i := range nodes {
			nodes[i] = b.node(t)
		}
		rng := rand.New(rand.NewPCG(31, 7))
		var acked, unknown int64
		replies := map[int64]bool{}
		b.faulty()
		for round := range 6 {
			var mu sync.Mutex
			var killed [hotInstances]atomic.Bool
			var wg sync.WaitGroup
			stop := make(chan struct{})
			cs := make([]*redis.Client, len(nodes))
			for i, n := range nodes {
				cs[i] = n.start()
			}
			for w := range hotInstances * counterFamily.clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
					inst := w % hotInstances
					for {
						select {
						case <-stop:
							return
						default:
						}
						by := 1 + r.Int64N(9)
						v, err := cs[inst].IncrBy(ctx, "hot:counter", by).Result()
						mu.Lock()
						if err == nil {
							acked += by
							if replies[v] {
								t.Errorf("round %d: two acknowledged increments answered %d", round, v)
							}
							replies[v] = true
						} else {
							unknown += by
						}
						mu.Unlock()
						// Once its instance is dead, a client's commands
						// all fail: it stops at the first.
						if err != nil && killed[inst].Load() {
							return
						}
					}
				}()
			}
			for _, i := range rng.Perm(len(nodes)) {
				time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
				killed[i].Store(true)
				nodes[i].kill()
			}
			close(stop)
			wg.Wait()
			for _, c := range cs {
				_ = c.Close()
			}

			b.calm()
			c := nodes[round%len(nodes)].start()
			got, err := c.Get(ctx, "hot:counter").Int64()
			require.NoError(t, err)
			require.GreaterOrEqual(t, got, acked, "round %d: an acknowledged increment was lost", round)
			require.LessOrEqual(t, got, acked+unknown, "round %d: more was added than was sent", round)
			var highest int64
			for v := range replies {
				highest = max(highest, v)
			}
			require.LessOrEqual(t, highest, got, "round %d: an increment was answered with more than the counter holds", round)
			_ = c.Close()
			nodes[round%len(nodes)].kill()
			b.faulty()
			t.Logf("round %d: counter %d, acknowledged %d, unknown outcome %d", round, got, acked, unknown)
		}
		b.calm()
		require.Positive(t, acked, "no increment was ever acknowledged: the workload did not run")
	})
}
