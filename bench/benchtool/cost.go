package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandCost is what one command cost over a run, from INFO.
type commandCost struct {
	calls, requests int64
	rcu, wcu        float64
	byOp            []string // "Operation=requests"
}

// runCost prints, for every command a redamo instance served, the
// DynamoDB requests and capacity units it consumed per call and what a
// million calls cost at on-demand prices, beside the floor: one write unit
// for a write command (one item of up to 1 KB), one read unit for a
// read-only one (a strongly consistent read of up to 4 KB). The units are
// those DynamoDB reported (ReturnConsumedCapacity), as INFO redamo counts
// them; a transaction's are twice its items'. DynamoDB Local reports a
// transaction's units once: with -local they are counted twice, as AWS
// bills them.
func runCost(args []string) error {
	fs := flag.NewFlagSet("cost", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "redamo address (running on --store dynamodb)")
	local := fs.Bool("local", false, "redamo runs on DynamoDB Local, which reports a transaction's units once where AWS bills them twice")
	cycles := fs.Int("queue", 0, "first push, pop and acknowledge this many messages (one client, a fresh queue), for the queue's figures")
	_ = fs.Parse(args)
	txFactor := 1.0
	if *local {
		txFactor = 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 1, Protocol: 2})
	defer rdb.Close()

	if err := queueCycles(ctx, rdb, *cycles); err != nil {
		return err
	}
	costs, err := readCosts(ctx, rdb, txFactor)
	if err != nil {
		return err
	}
	infos, err := rdb.Command(ctx).Result()
	if err != nil {
		return fmt.Errorf("COMMAND: %w", err)
	}
	names := make([]string, 0, len(costs))
	for name, c := range costs {
		if c.calls > 0 && c.requests > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)

	fmt.Printf("On-demand, us-east-1: $%.3f per million write units, $%.3f per million read units.\n",
		dollarsPerMillionWCU, dollarsPerMillionRCU)
	if *local {
		fmt.Println("DynamoDB Local reports a transaction's units once; they are counted twice here, as AWS bills them.")
	}
	fmt.Println("Floor: one write unit for a write command, one read unit for a read-only one (one key of up to 1 KB / 4 KB; multi-key commands take one per key).")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "command\tcalls\treq/call\tRU/call\tWU/call\t$/M ops\tfloor RU\tfloor WU\tfloor $/M\tx floor\t requests by operation")
	for _, name := range names {
		c := costs[name]
		n := float64(c.calls)
		ru, wu := c.rcu/n, c.wcu/n
		var fru, fwu float64
		if info := infos[name]; info != nil {
			switch {
			case slices.Contains(info.Flags, "write"):
				fwu = 1
			case info.ReadOnly || slices.Contains(info.Flags, "readonly"):
				fru = 1
			}
		}
		dollars, floor := dollarsPerMillion(ru, wu), dollarsPerMillion(fru, fwu)
		times := "-"
		if floor > 0 {
			times = fmt.Sprintf("%.1f", dollars/floor)
		}
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t%.0f\t%.0f\t%.3f\t%s\t %s\n",
			name, c.calls, float64(c.requests)/n, ru, wu, dollars, fru, fwu, floor, times, strings.Join(c.byOp, " "))
	}
	return w.Flush()
}

// queueCycles pushes, pops and acknowledges n messages of 200 bytes, one
// at a time, on a queue of its own.
func queueCycles(ctx context.Context, rdb *redis.Client, n int) error {
	q := fmt.Sprintf("bench:cost:%d", time.Now().UnixNano())
	payload := strings.Repeat("x", 200)
	for range n {
		if err := rdb.Do(ctx, "QUEUE.PUSH", q, payload).Err(); err != nil {
			return fmt.Errorf("QUEUE.PUSH: %w", err)
		}
		res, err := rdb.Do(ctx, "QUEUE.POP", q, "VT", 60000).Slice()
		if err != nil || len(res) != 1 {
			return fmt.Errorf("QUEUE.POP: %v %w", res, err)
		}
		msg, _ := res[0].([]any)
		if len(msg) < 4 {
			return fmt.Errorf("QUEUE.POP: unexpected reply %v", res)
		}
		if err := rdb.Do(ctx, "QUEUE.ACK", q, msg[3]).Err(); err != nil {
			return fmt.Errorf("QUEUE.ACK: %w", err)
		}
	}
	return nil
}

// readCosts gathers calls (INFO commandstats) and the store's requests
// and units (INFO redamo, store_cmd_<command>@<operation> rows) per command,
// a transaction's units multiplied by txFactor.
func readCosts(ctx context.Context, rdb *redis.Client, txFactor float64) (map[string]*commandCost, error) {
	costs := map[string]*commandCost{}
	of := func(name string) *commandCost {
		c := costs[name]
		if c == nil {
			c = &commandCost{}
			costs[name] = c
		}
		return c
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	for _, line := range strings.Split(stats, "\r\n") {
		name, fields, ok := infoRow(line, "cmdstat_")
		if ok {
			of(name).calls, _ = strconv.ParseInt(fields["calls"], 10, 64)
		}
	}
	store, err := rdb.Info(ctx, "redamo").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO redamo: %w", err)
	}
	for _, line := range strings.Split(store, "\r\n") {
		label, fields, ok := infoRow(line, "store_cmd_")
		if !ok {
			continue
		}
		name, op, _ := strings.Cut(label, "@")
		c := of(name)
		n, _ := strconv.ParseInt(fields["requests"], 10, 64)
		rcu, _ := strconv.ParseFloat(fields["rcu"], 64)
		wcu, _ := strconv.ParseFloat(fields["wcu"], 64)
		if strings.HasPrefix(op, "Transact") {
			rcu, wcu = rcu*txFactor, wcu*txFactor
		}
		c.requests += n
		c.rcu += rcu
		c.wcu += wcu
		c.byOp = append(c.byOp, op+"="+fields["requests"])
	}
	return costs, nil
}

// infoRow splits an INFO line "<prefix><name>:k=v,k=v" into name and fields.
func infoRow(line, prefix string) (string, map[string]string, bool) {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", nil, false
	}
	name, list, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, false
	}
	fields := map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			fields[k] = v
		}
	}
	return name, fields, true
}
