package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/redis/go-redis/v9"
)

// parseInts parses a comma-separated list of positive integers: the
// entries one build command adds, one build each (100 and 1,000 are more
// than one transaction holds once a sorted set's order items, or 1,000 of
// anything, count, so such builds measure writes that do not fit one).
func parseInts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// buildTimeout is how long one build command may take: a 1,000-member
// command on DynamoDB Local under the other builds takes seconds.
const buildTimeout = 2 * time.Minute

// kinds are the collection types fill builds, in report order.
var kinds = []string{"list", "set", "hash", "zset"}

// reportBuild prints how long fill took for each kind.
func reportBuild(who string, n, batch int, took map[string]time.Duration) {
	fmt.Printf("%s: built a list, a set, a hash and a sorted set of %d entries (%d per command, the four in parallel):", who, n, batch)
	for _, k := range kinds {
		fmt.Printf(" %s %s", k, took[k].Round(time.Millisecond))
	}
	fmt.Println()
}

// rawUpdate is the raw side of every collection command: one UpdateItem
// (an ADD on a key item), the request issue 4 measures them against.
func (c *comparer) rawUpdate(kind string, keys int) func(rawSide) op {
	return func(rs rawSide) op {
		return func(i int) error {
			_, err := c.ddb.UpdateItem(c.ctx, &dynamodb.UpdateItemInput{
				TableName:                 &c.table,
				Key:                       keyOf(c.rawPK(rs, kind, i%keys)),
				UpdateExpression:          aws.String("ADD #v :one"),
				ExpressionAttributeNames:  map[string]string{"#v": c.lay.intAttr},
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
				ReturnValues:              types.ReturnValueUpdatedNew,
				ReturnConsumedCapacity:    rs.cc,
			})
			return err
		}
	}
}

// collectionPairs measures single-member commands on small collections:
// many keys, each staying a few entries long, so they keep the inline layout.
func (c *comparer) collectionPairs() []pair {
	ctx, rdb := c.ctx, c.rdb
	key := func(kind string, i int) string { return c.redisKey(kind, i%smallKeys) }
	ok := func(err error) error {
		if err == redis.Nil {
			return nil
		}
		return err
	}
	return []pair{
		{command: "LPUSH", request: "UpdateItem ADD (counter)", raw: c.rawUpdate("cl", smallKeys),
			redamo: func(i int) error { return rdb.LPush(ctx, key("list", i), c.value).Err() }},
		// RPOP runs right after LPUSH's chunk on the same keys: it pops
		// what was pushed, so the lists stay small.
		{command: "RPOP", request: "UpdateItem ADD (counter)", raw: c.rawUpdate("cl", smallKeys),
			redamo: func(i int) error { return ok(rdb.RPop(ctx, key("list", i)).Err()) }},
		{command: "SADD", request: "UpdateItem ADD (counter)", raw: c.rawUpdate("cs", smallKeys),
			redamo: func(i int) error { return rdb.SAdd(ctx, key("set", i), "m"+strconv.Itoa(i)).Err() }},
		{command: "HSET", request: "UpdateItem ADD (counter)", raw: c.rawUpdate("ch", smallKeys),
			redamo: func(i int) error { return rdb.HSet(ctx, key("hash", i), "f"+strconv.Itoa(i), c.value).Err() }},
	}
}

// smallKeys is how many keys the small-collection commands spread over.
const smallKeys = 20

// collLayout is what a same-change raw request needs of one collection
// type's key item, learnt from an item redamo wrote: the item without its
// partition key and entries, and the attribute holding the entries
// (members, field names or elements).
type collLayout struct {
	base    map[string]types.AttributeValue
	entries string
}

// collLayoutOf has redamo create a collection with write and reads its key
// item raw: the attribute of type entryType holds the entries; attributes
// holding value (hash fields) are left out of the base too.
func (c *comparer) collLayoutOf(key string, write func(key string) error, entryType func(types.AttributeValue) bool) (collLayout, error) {
	lay := collLayout{base: map[string]types.AttributeValue{}}
	if err := write(key); err != nil {
		return lay, err
	}
	out, err := c.ddb.GetItem(c.ctx, &dynamodb.GetItemInput{
		TableName: &c.table, Key: keyOf(append([]byte{'k', 0}, key...)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return lay, fmt.Errorf("reading redamo's collection item %q raw: %w", key, err)
	}
	for k, v := range out.Item {
		switch b, isB := v.(*types.AttributeValueMemberB); {
		case k == "pk":
		case entryType(v):
			lay.entries = k
		case isB && string(b.Value) == string(c.value):
		default:
			lay.base[k] = v
		}
	}
	if lay.entries == "" {
		return lay, fmt.Errorf("no entries attribute in redamo's item %q: %v", key, out.Item)
	}
	return lay, nil
}

// sameChangePairs measures the small-collection commands against the raw
// UpdateItem that makes the same change to an item of redamo's layout
// (ADD a member; SET a field and ADD its name; prepend an element; REMOVE
// the last one), without the version bump and the condition redamo adds:
// what redamo costs over the change itself. Each raw key starts as redamo's
// key item holds it beside its entries (with an empty list for lists).
func (c *comparer) sameChangePairs() ([]pair, error) {
	ctx, rdb := c.ctx, c.rdb
	isBS := func(v types.AttributeValue) bool { _, ok := v.(*types.AttributeValueMemberBS); return ok }
	isL := func(v types.AttributeValue) bool { _, ok := v.(*types.AttributeValueMemberL); return ok }
	set, err := c.collLayoutOf(c.redisKey("layout-set", 0), func(k string) error { return rdb.SAdd(ctx, k, "m").Err() }, isBS)
	if err != nil {
		return nil, err
	}
	hash, err := c.collLayoutOf(c.redisKey("layout-hash", 0), func(k string) error { return rdb.HSet(ctx, k, "f", c.value).Err() }, isBS)
	if err != nil {
		return nil, err
	}
	list, err := c.collLayoutOf(c.redisKey("layout-list", 0), func(k string) error { return rdb.LPush(ctx, k, c.value).Err() }, isL)
	if err != nil {
		return nil, err
	}
	list.base[list.entries] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	for _, rs := range rawSides {
		for i := 0; i < smallKeys; i++ {
			for kind, lay := range map[string]collLayout{"xs": set, "xh": hash, "xl": list} {
				item := maps.Clone(lay.base)
				item["pk"] = &types.AttributeValueMemberB{Value: c.rawPK(rs, kind, i)}
				if _, err := c.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: item}); err != nil {
					return nil, fmt.Errorf("creating raw collection items: %w", err)
				}
			}
		}
	}
	key := func(kind string, i int) string { return c.redisKey(kind, i%smallKeys) }
	update := func(rs rawSide, kind string, i int, expr string, names map[string]string, vals map[string]types.AttributeValue) error {
		_, err := c.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &c.table, Key: keyOf(c.rawPK(rs, kind, i%smallKeys)), UpdateExpression: aws.String(expr),
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals, ReturnConsumedCapacity: rs.cc,
		})
		return err
	}
	// lens tracks the raw lists' lengths (this client is their only writer),
	// for RPOP's REMOVE of the last element.
	lens := map[string]int{}
	bin := func(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
	const req = "UpdateItem, same change"
	return []pair{
		{command: "LPUSH", request: req,
			redamo: func(i int) error { return rdb.LPush(ctx, key("xlist", i), c.value).Err() },
			raw: func(rs rawSide) op {
				return func(i int) error {
					lens[rs.tag+strconv.Itoa(i%smallKeys)]++
					return update(rs, "xl", i, "SET #l = list_append(:e, #l)", map[string]string{"#l": list.entries},
						map[string]types.AttributeValue{":e": &types.AttributeValueMemberL{Value: []types.AttributeValue{bin(c.value)}}})
				}
			}},
		{command: "RPOP", request: req,
			redamo: func(i int) error { return rdb.RPop(ctx, key("xlist", i)).Err() },
			raw: func(rs rawSide) op {
				return func(i int) error {
					k := rs.tag + strconv.Itoa(i%smallKeys)
					if lens[k] == 0 {
						return fmt.Errorf("raw list %s is empty", k)
					}
					lens[k]--
					return update(rs, "xl", i, "REMOVE #l["+strconv.Itoa(lens[k])+"]", map[string]string{"#l": list.entries}, nil)
				}
			}},
		{command: "SADD", request: req,
			redamo: func(i int) error { return rdb.SAdd(ctx, key("xset", i), "m"+strconv.Itoa(i)).Err() },
			raw: func(rs rawSide) op {
				return func(i int) error {
					return update(rs, "xs", i, "ADD #m :m", map[string]string{"#m": set.entries},
						map[string]types.AttributeValue{":m": &types.AttributeValueMemberBS{Value: [][]byte{[]byte("m" + strconv.Itoa(i))}}})
				}
			}},
		{command: "HSET", request: req,
			redamo: func(i int) error { return rdb.HSet(ctx, key("xhash", i), "f"+strconv.Itoa(i), c.value).Err() },
			raw: func(rs rawSide) op {
				return func(i int) error {
					f := "f" + strconv.Itoa(i)
					return update(rs, "xh", i, "SET #f = :v ADD #n :n", map[string]string{"#f": f, "#n": hash.entries},
						map[string]types.AttributeValue{":v": bin(c.value), ":n": &types.AttributeValueMemberBS{Value: [][]byte{[]byte(f)}}})
				}
			}},
	}, nil
}

// fill builds a list, a set, a hash and a sorted set of n entries under
// prefix, batch entries per command, the four in parallel.
func fill(ctx context.Context, rdb *redis.Client, prefix string, n, batch int) (map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(kinds))
	add := map[string]func(args []any) error{
		"list": func(args []any) error { return rdb.RPush(ctx, prefix+"list", args...).Err() },
		"set":  func(args []any) error { return rdb.SAdd(ctx, prefix+"set", args...).Err() },
		"hash": func(args []any) error {
			kv := make([]any, 0, 2*len(args))
			for _, a := range args {
				kv = append(kv, a, a)
			}
			return rdb.HSet(ctx, prefix+"hash", kv...).Err()
		},
		"zset": func(args []any) error {
			zs := make([]redis.Z, len(args))
			for i, a := range args {
				n, _ := strconv.Atoi(a.(string)[1:])
				zs[i] = redis.Z{Score: float64(n), Member: a}
			}
			return rdb.ZAdd(ctx, prefix+"zset", zs...).Err()
		},
	}
	for kind, f := range add {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			for from := 0; from < n; from += batch {
				args := make([]any, 0, batch)
				for i := from; i < min(from+batch, n); i++ {
					args = append(args, "e"+strconv.Itoa(i))
				}
				if err := f(args); err != nil {
					errs <- fmt.Errorf("filling %s%s: %w", prefix, kind, err)
					return
				}
			}
			mu.Lock()
			took[kind] = time.Since(start)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	return took, <-errs
}

// largePairs measures the same commands on collections of n entries.
func (c *comparer) largePairs(n int) ([]pair, error) {
	ctx, rdb := c.ctx, c.rdb
	// The measured client has one connection; the fills run in parallel
	// on their own. The commands are measured on the last build.
	bulk := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, PoolSize: len(kinds), MaxRetries: -1, ReadTimeout: buildTimeout})
	defer bulk.Close()
	var prefix string
	for _, b := range c.batches {
		prefix = c.redisKey("big"+strconv.Itoa(b), n) + ":"
		took, err := fill(ctx, bulk, prefix, n, b)
		if err != nil {
			return nil, err
		}
		reportBuild("redamo on DynamoDB Local", n, b, took)
	}
	label := func(cmd string) string { return cmd + " (" + strconv.Itoa(n) + ")" }
	return []pair{
		{command: label("LPUSH"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bl", 1),
			redamo: func(i int) error { return rdb.LPush(ctx, prefix+"list", c.value).Err() }},
		{command: label("RPOP"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bl", 1),
			redamo: func(i int) error { return rdb.RPop(ctx, prefix+"list").Err() }},
		{command: label("SADD"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bs", 1),
			redamo: func(i int) error { return rdb.SAdd(ctx, prefix+"set", "x"+strconv.Itoa(i)).Err() }},
		{command: label("HSET"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bh", 1),
			redamo: func(i int) error { return rdb.HSet(ctx, prefix+"hash", "x"+strconv.Itoa(i), c.value).Err() }},
		{command: label("ZADD"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bz", 1),
			redamo: func(i int) error {
				return rdb.ZAdd(ctx, prefix+"zset", redis.Z{Score: float64(i), Member: "x" + strconv.Itoa(i)}).Err()
			}},
		{command: label("ZPOPMIN"), request: "UpdateItem ADD (counter)", raw: c.rawUpdate("bz", 1),
			redamo: func(i int) error { return rdb.ZPopMin(ctx, prefix+"zset").Err() }},
	}, nil
}

// readSizes times LRANGE 0 99 and HGETALL/SMEMBERS of 1,000 entries on
// redamo and on a real redis-server, one client, side by side.
func (c *comparer) readSizes(redisAddr string, ops int) error {
	ctx := c.ctx
	real := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 1})
	defer real.Close()
	prefix := c.redisKey("read", 0) + ":"
	for _, rdb := range []*redis.Client{c.rdb, real} {
		if _, err := fill(ctx, rdb, prefix, 1000, 100); err != nil {
			return err
		}
	}
	reads := []struct {
		name string
		do   func(rdb *redis.Client) error
	}{
		{"LRANGE 0 99 (of 1000)", func(rdb *redis.Client) error { return rdb.LRange(ctx, prefix+"list", 0, 99).Err() }},
		{"HGETALL (1000)", func(rdb *redis.Client) error { return rdb.HGetAll(ctx, prefix+"hash").Err() }},
		{"SMEMBERS (1000)", func(rdb *redis.Client) error { return rdb.SMembers(ctx, prefix+"set").Err() }},
	}
	fmt.Printf("Reads of 1,000-entry collections, one client, %d ops each\n", ops)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "command\tredamo p50 ms\tp99 ms\t\tredis p50 ms\tp99 ms\t")
	for _, r := range reads {
		var lat [2][]time.Duration
		for i := 0; i < ops; i++ {
			for side, rdb := range []*redis.Client{c.rdb, real} {
				start := time.Now()
				if err := r.do(rdb); err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
				lat[side] = append(lat[side], time.Since(start))
			}
		}
		a, b := summarize(lat[0]), summarize(lat[1])
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t\t%.3f\t%.3f\t\n", r.name, a.p50, a.p99, b.p50, b.p99)
	}
	return tw.Flush()
}
