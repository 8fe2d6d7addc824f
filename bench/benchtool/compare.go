package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/redis/go-redis/v9"
)

// rawDB is the Redis db number whose key space the raw side writes into, so
// its items have the shape of real key items without touching db 0.
const rawDB = 15

// layout is what the raw side needs to know about redamo's key items. It is
// discovered from items redamo itself wrote (see discover), so the raw
// requests write the same attributes redamo does, whatever the backend's
// attribute names are.
type layout struct {
	strItem map[string]types.AttributeValue // a string key item, as a PutItem template
	intAttr string                          // the Number attribute INCR adds to
	expAttr string                          // the expiry deadline in ms
}

type comparer struct {
	ctx context.Context
	// run makes this run's keys unique, so the tool can run again on the
	// same table while the previous run's SET NX PX keys are still alive.
	run   string
	rdb   *redis.Client
	ddb   *dynamodb.Client
	table string
	lay   layout
	value []byte
	// batches are the entries per command of the -large builds.
	batches []int
}

// op is one measured operation on key index i.
type op func(i int) error

// rawSide is one way of sending the raw requests. redamo asks DynamoDB for
// the capacity every request consumed (it counts it per command), so the
// raw request that does what redamo's does asks for it too; the side
// without it shows what that costs. On DynamoDB Local it costs writes a
// read of the old item, on DynamoDB nothing measurable.
type rawSide struct {
	name string
	// tag keeps each side's raw keys apart, so that conditional requests
	// (SET NX) of one side never meet the other side's items.
	tag string
	cc  types.ReturnConsumedCapacity
}

var rawSides = []rawSide{
	{name: "with consumed capacity", tag: "c", cc: types.ReturnConsumedCapacityTotal},
	{name: "without", tag: "n", cc: types.ReturnConsumedCapacityNone},
}

type pair struct {
	command, request string
	redamo           op
	raw              func(rawSide) op
}

func runCompare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "redamo address (running on --store dynamodb)")
	endpoint := fs.String("endpoint", "", "DynamoDB endpoint redamo uses (e.g. DynamoDB Local)")
	region := fs.String("region", "us-east-1", "AWS region redamo uses")
	table := fs.String("table", "redamo", "table redamo uses")
	ops := fs.Int("ops", 500, "measured operations per command and side")
	chunk := fs.Int("chunk", 5, "operations per command and side in a row before switching sides")
	warmup := fs.Int("warmup", 50, "unmeasured operations per command and side first")
	valueSize := fs.Int("value-size", 16, "value size in bytes")
	large := fs.Int("large", 0, "also measure LPUSH/RPOP/SADD/HSET/ZADD/ZPOPMIN on a list, set, hash and sorted set of this many entries (0: skip)")
	redisAddr := fs.String("redis-addr", "", "a real redis-server: also time reads of 1,000-entry collections on both (empty: skip)")
	batchList := fs.String("batches", "1000", "entries per command building the -large collections, one build each (comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	batches, err := parseInts(*batchList)
	if err != nil {
		return fmt.Errorf("-batches: %w", err)
	}
	if *chunk < 1 || *ops < *chunk {
		return errors.New("need 1 <= -chunk <= -ops")
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(*region))
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if *endpoint != "" {
			o.BaseEndpoint = aws.String(*endpoint)
			// DynamoDB Local's error replies carry no CRC32 header.
			o.DisableValidateResponseChecksum = true
		}
	})
	// One connection: the comparison is one client, one request at a time.
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 1, MaxRetries: -1})
	defer rdb.Close()

	c := &comparer{
		ctx: ctx, rdb: rdb, ddb: ddb, table: *table, batches: batches,
		run:   strconv.FormatInt(time.Now().UnixNano(), 36),
		value: bytes.Repeat([]byte("v"), *valueSize),
	}
	if c.lay, err = c.discover(); err != nil {
		return err
	}
	pairs := append(c.pairs(), c.collectionPairs()...)
	same, err := c.sameChangePairs()
	if err != nil {
		return err
	}
	pairs = append(pairs, same...)
	if *large > 0 {
		more, err := c.largePairs(*large)
		if err != nil {
			return err
		}
		pairs = append(pairs, more...)
	}
	// sides: redamo, then the raw ones in rawSides' order.
	// Both indexed by pair: a command may appear with several raw requests.
	nSides := 1 + len(rawSides)
	lat := make([][][]time.Duration, len(pairs))
	sides := make([][]op, len(pairs))
	for j, p := range pairs {
		lat[j] = make([][]time.Duration, nSides)
		sides[j] = []op{p.redamo}
		for _, rs := range rawSides {
			sides[j] = append(sides[j], p.raw(rs))
		}
	}
	sideName := func(p pair, side int) string {
		if side == 0 {
			return "redamo"
		}
		return p.request + ", " + rawSides[side-1].name
	}
	// The first rounds warm up every path (connections, DynamoDB Local's
	// JIT) and are not recorded. The sides take turns in short chunks, and
	// rotate which goes first, so that changes in DynamoDB Local's speed
	// (its GC, other load on the machine) fall on all sides equally.
	warm := (*warmup + *chunk - 1) / *chunk
	rounds := warm + *ops / *chunk
	for r := 0; r < rounds; r++ {
		for j, p := range pairs {
			for k := range nSides {
				side := (r + k) % nSides
				f := sides[j][side]
				for i := r * *chunk; i < (r+1)**chunk; i++ {
					start := time.Now()
					if err := f(i); err != nil {
						return fmt.Errorf("%s (%s): %w", p.command, sideName(p, side), err)
					}
					if r >= warm {
						lat[j][side] = append(lat[j][side], time.Since(start))
					}
				}
			}
		}
	}

	fmt.Printf("One client, %d ops per command per side (sides taking turns every %d), %d-byte values, DynamoDB at %s\n",
		(rounds-warm)**chunk, *chunk, *valueSize, orDefault(*endpoint, "AWS "+*region))
	fmt.Println("raw request: the one request the command maps to, sent with the SDK; cc: with ReturnConsumedCapacity=TOTAL,")
	fmt.Println("as redamo sends it (it counts consumed capacity); no-cc: without. ratio: redamo ops/s / raw ops/s;")
	fmt.Println("p50 ratio: raw p50 / redamo p50 (less sensitive to load spikes). \"same change\": the raw UpdateItem that")
	fmt.Println("makes the command's change to an item of redamo's layout, without redamo's version bump and condition")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "command\tredamo ops/s\tp50 ms\tp99 ms\t\traw request\tcc ops/s\tp50 ms\tp99 ms\tratio\tp50 ratio\t\tno-cc ops/s\tp50 ms\tratio\tp50 ratio\t")
	for j, p := range pairs {
		a, b, n := summarize(lat[j][0]), summarize(lat[j][1]), summarize(lat[j][2])
		fmt.Fprintf(tw, "%s\t%.0f\t%.3f\t%.3f\t\t%s\t%.0f\t%.3f\t%.3f\t%.2f\t%.2f\t\t%.0f\t%.3f\t%.2f\t%.2f\t\n",
			p.command, a.opsPerSec, a.p50, a.p99, p.request, b.opsPerSec, b.p50, b.p99,
			a.opsPerSec/b.opsPerSec, b.p50/a.p50, n.opsPerSec, n.p50, a.opsPerSec/n.opsPerSec, n.p50/a.p50)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *redisAddr != "" {
		return c.readSizes(*redisAddr, *ops/5)
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type summary struct {
	opsPerSec, p50, p99 float64 // p50 and p99 in ms
}

// summarize turns one client's sequential latencies into a rate and
// percentiles; with one client the rate is 1 / mean latency.
func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var total time.Duration
	for _, x := range s {
		total += x
	}
	pct := func(p int) float64 {
		i := (len(s)*p + 99) / 100 // nearest rank
		return float64(s[max(i-1, 0)]) / float64(time.Millisecond)
	}
	return summary{
		opsPerSec: float64(len(s)) / total.Seconds(),
		p50:       pct(50),
		p99:       pct(99),
	}
}

// ---- the two sides ----------------------------------------------------------

func (c *comparer) redisKey(kind string, i int) string {
	return "bench:" + c.run + ":" + kind + ":" + strconv.Itoa(i)
}

// rawPK is the partition key of raw key i of side rs: redamo's key-item
// layout ('k', db, key) in db rawDB.
func (c *comparer) rawPK(rs rawSide, kind string, i int) []byte {
	return append([]byte{'k', rawDB}, "raw:"+c.run+":"+rs.tag+":"+kind+":"+strconv.Itoa(i)...)
}

func keyOf(pk []byte) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberB{Value: pk},
		"sk": &types.AttributeValueMemberB{Value: []byte{0}},
	}
}

func nowMS() int64 { return time.Now().UnixMilli() }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// expect(reply, err)(want) checks a reply.
func expect(got any, err error) func(want any) error {
	return func(want any) error {
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
}

func (c *comparer) pairs() []pair {
	ctx, rdb := c.ctx, c.rdb
	return []pair{
		{
			command: "SET", request: "PutItem",
			redamo: func(i int) error {
				return expect(rdb.Set(ctx, c.redisKey("s", i), c.value, 0).Result())("OK")
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					item := c.itemFor(c.rawPK(rs, "s", i))
					_, err := c.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: &c.table, Item: item, ReturnConsumedCapacity: rs.cc})
					return err
				}
			},
		},
		{
			command: "GET", request: "GetItem",
			redamo: func(i int) error {
				return expect(rdb.Get(ctx, c.redisKey("s", i)).Result())(string(c.value))
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					out, err := c.ddb.GetItem(ctx, &dynamodb.GetItemInput{
						TableName: &c.table, Key: keyOf(c.rawPK(rs, "s", i)), ConsistentRead: aws.Bool(true),
						ReturnConsumedCapacity: rs.cc,
					})
					if err == nil && out.Item == nil {
						err = errors.New("item missing")
					}
					return err
				}
			},
		},
		{
			command: "SET NX PX", request: "PutItem (conditional)",
			redamo: func(i int) error {
				return expect(rdb.Do(ctx, "SET", c.redisKey("nx", i), c.value, "NX", "PX", "30000").Result())("OK")
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					now := nowMS()
					item := c.itemFor(c.rawPK(rs, "nx", i))
					item[c.lay.expAttr] = num(now + 30000)
					item["ttl"] = num((now+30000)/1000 + 1)
					_, err := c.ddb.PutItem(ctx, &dynamodb.PutItemInput{
						TableName:                 &c.table,
						Item:                      item,
						ConditionExpression:       aws.String("attribute_not_exists(pk) OR #e <= :now"),
						ExpressionAttributeNames:  map[string]string{"#e": c.lay.expAttr},
						ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now)},
						ReturnConsumedCapacity:    rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "INCR", request: "UpdateItem ADD",
			redamo: func(i int) error {
				return rdb.Incr(ctx, c.redisKey("counter", 0)).Err()
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					_, err := c.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName:                 &c.table,
						Key:                       keyOf(c.rawPK(rs, "counter", 0)),
						UpdateExpression:          aws.String("ADD #v :one"),
						ExpressionAttributeNames:  map[string]string{"#v": c.lay.intAttr},
						ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
						ReturnValues:              types.ReturnValueUpdatedNew,
						ReturnConsumedCapacity:    rs.cc,
					})
					return err
				}
			},
		},
		{
			// A transfer between two counters: redamo's EXEC reads both
			// key items (one BatchGetItem) and commits one
			// TransactWriteItems conditioned on them; the raw side is the
			// single TransactWriteItems of two ADDs, which DynamoDB makes
			// atomic without reading.
			command: "MULTI DECRBY INCRBY EXEC", request: "TransactWriteItems of 2 ADDs",
			redamo: func(i int) error {
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, c.redisKey("acct", 0), 1)
					p.IncrBy(ctx, c.redisKey("acct", 1), 1)
					return nil
				})
				return err
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					add := func(n int, d int64) types.TransactWriteItem {
						return types.TransactWriteItem{Update: &types.Update{
							TableName:                 &c.table,
							Key:                       keyOf(c.rawPK(rs, "acct", n)),
							UpdateExpression:          aws.String("ADD #v :d"),
							ExpressionAttributeNames:  map[string]string{"#v": c.lay.intAttr},
							ExpressionAttributeValues: map[string]types.AttributeValue{":d": num(d)},
						}}
					}
					_, err := c.ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
						TransactItems:          []types.TransactWriteItem{add(0, -1), add(1, 1)},
						ReturnConsumedCapacity: rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "EXPIRE", request: "UpdateItem",
			redamo: func(i int) error {
				return expect(rdb.Expire(ctx, c.redisKey("s", i), 1000*time.Second).Result())(true)
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					exp := nowMS() + 1000*1000
					_, err := c.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName:                 &c.table,
						Key:                       keyOf(c.rawPK(rs, "s", i)),
						UpdateExpression:          aws.String("SET #e = :e, #t = :t"),
						ConditionExpression:       aws.String("attribute_exists(pk)"),
						ExpressionAttributeNames:  map[string]string{"#e": c.lay.expAttr, "#t": "ttl"},
						ExpressionAttributeValues: map[string]types.AttributeValue{":e": num(exp), ":t": num(exp/1000 + 1)},
						ReturnConsumedCapacity:    rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "LOCK.ACQUIRE", request: "UpdateItem (conditional, ADD)",
			redamo: func(i int) error {
				return expect(rdb.Do(ctx, "LOCK.ACQUIRE", c.redisKey("lock", i), "owner", "PX", 60000).Result())(1)
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					now := nowMS()
					_, err := c.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName:                 &c.table,
						Key:                       keyOf(append([]byte{'l'}, c.rawPK(rs, "lock", i)...)),
						UpdateExpression:          aws.String("SET o = :o, x = :x, a = :now, h = :now ADD f :one"),
						ConditionExpression:       aws.String("attribute_not_exists(o) OR x <= :now"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberB{Value: []byte("owner")}, ":x": num(now + 60000), ":now": num(now), ":one": num(1)},
						ReturnValues:              types.ReturnValueAllOld,
						ReturnConsumedCapacity:    rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "LOCK.RELEASE", request: "UpdateItem (conditional, REMOVE)",
			redamo: func(i int) error {
				return expect(rdb.Do(ctx, "LOCK.RELEASE", c.redisKey("lock", i), "owner").Result())(1)
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					_, err := c.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName:                 &c.table,
						Key:                       keyOf(append([]byte{'l'}, c.rawPK(rs, "lock", i)...)),
						UpdateExpression:          aws.String("REMOVE o, x, a, h"),
						ConditionExpression:       aws.String("o = :o AND x > :now"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberB{Value: []byte("owner")}, ":now": num(nowMS())},
						ReturnValues:              types.ReturnValueAllOld,
						ReturnConsumedCapacity:    rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "QUEUE.PUSH", request: "PutItem (conditional)",
			redamo: func(i int) error {
				return rdb.Do(ctx, "QUEUE.PUSH", c.redisKey("queue", 0), c.value).Err()
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					pk := append([]byte{'q', 0}, c.rawPK(rs, "queue", 0)...)
					now := nowMS()
					sk := append([]byte{1}, []byte(fmt.Sprintf("%016x%016d", uint64(1)<<63, i))...)
					_, err := c.ddb.PutItem(ctx, &dynamodb.PutItemInput{
						TableName: &c.table, ConditionExpression: aws.String("attribute_not_exists(pk)"),
						Item: map[string]types.AttributeValue{
							"pk": &types.AttributeValueMemberB{Value: pk}, "sk": &types.AttributeValueMemberB{Value: sk},
							"p": &types.AttributeValueMemberB{Value: c.value}, "v": num(now), "n": num(0), "t": num(now),
						},
						ReturnConsumedCapacity: rs.cc,
					})
					return err
				}
			},
		},
		{
			command: "DEL", request: "DeleteItem",
			redamo: func(i int) error {
				return expect(rdb.Del(ctx, c.redisKey("s", i)).Result())(1)
			},
			raw: func(rs rawSide) op {
				return func(i int) error {
					out, err := c.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
						TableName: &c.table, Key: keyOf(c.rawPK(rs, "s", i)), ReturnValues: types.ReturnValueAllOld,
						ReturnConsumedCapacity: rs.cc,
					})
					if err == nil && out.Attributes == nil {
						err = errors.New("item missing")
					}
					return err
				}
			},
		},
	}
}

// itemFor returns a copy of redamo's string item template under another key.
func (c *comparer) itemFor(pk []byte) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, len(c.lay.strItem))
	for k, v := range c.lay.strItem {
		item[k] = v
	}
	item["pk"] = &types.AttributeValueMemberB{Value: pk}
	return item
}

// discover has redamo write a few keys and reads them back raw, to learn
// which attributes its key items use.
func (c *comparer) discover() (layout, error) {
	ctx, rdb := c.ctx, c.rdb
	read := func(key string) (map[string]types.AttributeValue, error) {
		out, err := c.ddb.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &c.table, Key: keyOf(append([]byte{'k', 0}, key...)), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("reading redamo's item %q raw (same table, region and credentials as redamo?): %w", key, err)
		}
		if out.Item == nil {
			return nil, fmt.Errorf("redamo's item %q not found in table %s: is redamo on --store dynamodb with this table?", key, c.table)
		}
		return out.Item, nil
	}
	var lay layout
	if err := rdb.Set(ctx, "bench:layout:str", c.value, 0).Err(); err != nil {
		return lay, err
	}
	if err := rdb.Set(ctx, "bench:layout:int", "987654321", 0).Err(); err != nil {
		return lay, err
	}
	if err := rdb.Set(ctx, "bench:layout:exp", "x", 100*time.Second).Err(); err != nil {
		return lay, err
	}
	var err error
	if lay.strItem, err = read("bench:layout:str"); err != nil {
		return lay, err
	}
	intItem, err := read("bench:layout:int")
	if err != nil {
		return lay, err
	}
	for k, v := range intItem {
		if n, ok := v.(*types.AttributeValueMemberN); ok && n.Value == "987654321" {
			lay.intAttr = k
		}
	}
	expItem, err := read("bench:layout:exp")
	if err != nil {
		return lay, err
	}
	now := nowMS()
	for k, v := range expItem {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil && ms > now && ms <= now+101_000 {
				lay.expAttr = k
			}
		}
	}
	if lay.intAttr == "" || lay.expAttr == "" {
		return lay, fmt.Errorf("could not find the integer value and expiry attributes in %v / %v", intItem, expItem)
	}
	return lay, nil
}
