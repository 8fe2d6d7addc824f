package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redamo/redamo/commands"
)

// Store names accepted by --store.
const (
	storeMemory   = "memory"
	storeDynamoDB = "dynamodb"
)

// The --bus settings beside an address.
const (
	busAuto = "auto"
	busOff  = "off"
)

// DynamoDB clients accepted by --dynamodb-client.
const (
	// clientDirect sends the hot requests through redamo's own DynamoDB
	// JSON path (dynastore/dynamo's wire.go) and the rest through the SDK.
	clientDirect = "direct"
	// clientSDK sends every request through the AWS SDK's client: the
	// fallback should an environment need something only the SDK does.
	clientSDK = "sdk"
)

// Redis's own bounds for proto-max-bulk-len: 512 MB by default, at least 1 MB.
const (
	defaultProtoMaxBulkLen = 512 << 20
	minProtoMaxBulkLen     = 1 << 20
	// A poll interval below the first backoff step would only burn
	// requests; one above a minute would make cross-instance wake-ups
	// useless for any real timeout.
	minBlockingPoll = 10 * time.Millisecond
	maxBlockingPoll = time.Minute
)

// config is the process configuration, from flags and REDAMO_* variables.
type config struct {
	Addr        string
	RequirePass string
	Store       string
	Table       string
	Region      string
	// Profile is the AWS shared configuration profile (the CLI's
	// --profile; the server leaves it to AWS_PROFILE).
	Profile         string
	Endpoint        string
	CreateTable     bool
	DynamoDBClient  string
	MetricsAddr     string
	TLSCert         string
	TLSKey          string
	ProtoMaxBulkLen int64
	// BlockingPoll is the longest pause between two store polls of a key
	// that blocked clients (BLPOP, ...) wait on.
	BlockingPoll time.Duration
	// PartitionLimit makes the embedded store throttle each partition
	// past DynamoDB's per-partition throughput.
	PartitionLimit bool
	// AWSFaithful runs the embedded store in its AWS-faithful mode
	// (dynastore/faithful).
	AWSFaithful bool
	// ProtectedMode refuses non-loopback clients while no password is set.
	ProtectedMode yesNo
	// Bus is where the bus to the other instances on the table listens:
	// busAuto, busOff or host:port (bus/).
	Bus string
	// BusAddr is the address other instances dial (empty: the listener's).
	BusAddr string
	// BusSecret keys the bus's handshake (empty: derived from RequirePass).
	BusSecret   string
	ShowVersion bool
}

// option describes one flag and its environment variable.
type option struct {
	flag, env, usage string
	// dynamoOnly options make no sense with the memory store: giving one
	// there is an error rather than a setting silently ignored.
	dynamoOnly bool
	define     func(fs *flag.FlagSet, name, usage string)
}

// sizeValue is a flag.Value for byte sizes written as Redis writes them in
// redis.conf: 1048576, 512mb, 1gb, 64k.
type sizeValue int64

func (s *sizeValue) String() string { return strconv.FormatInt(int64(*s), 10) }

func (s *sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeValue(n)
	return nil
}

// yesNo is a flag.Value for Redis-style booleans: yes or no (true and false
// too, as Go flags spell them).
type yesNo bool

func (b *yesNo) String() string {
	if *b {
		return "yes"
	}
	return "no"
}

func (b *yesNo) Set(v string) error {
	switch strings.ToLower(v) {
	case "yes", "true":
		*b = true
	case "no", "false":
		*b = false
	default:
		return fmt.Errorf("%q: must be yes or no", v)
	}
	return nil
}

// parseSize parses a byte count with Redis's unit suffixes (k, kb, m, mb, g,
// gb; k is 1000 and kb 1024, as in redis.conf).
func parseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	units := []struct {
		suffix string
		mul    int64
	}{
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000},
		{"b", 1},
	}
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, fmt.Errorf("%q is not a size in bytes (e.g. 1048576, 512mb)", v)
	}
	return n * mul, nil
}

// parseConfig reads flags from args and REDAMO_* variables from getenv; a
// flag on the command line wins over its variable. usageOut receives -help.
func parseConfig(args []string, getenv func(string) string, usageOut io.Writer) (config, error) {
	c := config{ProtoMaxBulkLen: defaultProtoMaxBulkLen, BlockingPoll: commands.DefaultBlockingPoll, ProtectedMode: true}
	fs := flag.NewFlagSet("redamo", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() {
		fmt.Fprintln(usageOut, "Usage: redamo [FLAGS]            serve the Redis protocol (the flags below)")
		fmt.Fprintln(usageOut, "       redamo VERB [ARGS] [FLAGS] run one command from the shell (see redamo help)")
		fs.PrintDefaults()
	}

	bulk := sizeValue(c.ProtoMaxBulkLen)
	str := func(p *string, def string) func(*flag.FlagSet, string, string) {
		return func(fs *flag.FlagSet, name, usage string) { fs.StringVar(p, name, def, usage) }
	}
	opts := []option{
		{"addr", "REDAMO_ADDR", "listen address (host:port)", false,
			str(&c.Addr, "127.0.0.1:6379")},
		{"requirepass", "REDAMO_REQUIREPASS", "password clients must AUTH with (empty: none)", false,
			str(&c.RequirePass, "")},
		{"store", "REDAMO_STORE", "where data lives: memory (embedded, not persisted) or dynamodb", false,
			str(&c.Store, storeMemory)},
		{"table", "REDAMO_TABLE", "DynamoDB table name", true,
			str(&c.Table, "redamo")},
		{"region", "REDAMO_REGION", "AWS region (empty: the SDK's default chain, e.g. AWS_REGION; required unless the endpoint is on this machine, such as DynamoDB Local)", true,
			str(&c.Region, "")},
		{"endpoint", "REDAMO_ENDPOINT", "DynamoDB endpoint URL, e.g. http://127.0.0.1:8000 for DynamoDB Local (empty: AWS)", true,
			str(&c.Endpoint, "")},
		{"create-table", "REDAMO_CREATE_TABLE", "create the table (pk/sk binary, on-demand, TTL on ttl) if it does not exist, and turn TTL on where it is off (without it, start fails on such a table)", true,
			func(fs *flag.FlagSet, name, usage string) { fs.BoolVar(&c.CreateTable, name, false, usage) }},
		{"dynamodb-client", "REDAMO_DYNAMODB_CLIENT", "how requests reach DynamoDB: direct (redamo's own JSON path for the hot requests, signed by the SDK) or sdk (the AWS SDK's client for all)", true,
			str(&c.DynamoDBClient, clientDirect)},
		{"metrics-addr", "REDAMO_METRICS_ADDR", "address serving Prometheus /metrics (empty: off)", false,
			str(&c.MetricsAddr, "")},
		{"tls-cert", "REDAMO_TLS_CERT", "PEM certificate file; with --tls-key, clients must connect with TLS", false,
			str(&c.TLSCert, "")},
		{"tls-key", "REDAMO_TLS_KEY", "PEM private key file for --tls-cert", false,
			str(&c.TLSKey, "")},
		{"proto-max-bulk-len", "REDAMO_PROTO_MAX_BULK_LEN", "largest bulk string accepted, in bytes (units: kb, mb, gb)", false,
			func(fs *flag.FlagSet, name, usage string) { fs.Var(&bulk, name, usage) }},
		{"protected-mode", "REDAMO_PROTECTED_MODE", "yes: without --requirepass, accept clients from the loopback interface only (as Redis)", false,
			func(fs *flag.FlagSet, name, usage string) { fs.Var(&c.ProtectedMode, name, usage) }},
		{"partition-limit", "REDAMO_PARTITION_LIMIT", "embedded store only: throttle each partition past DynamoDB's per-partition limit (1,000 WCU, 3,000 RCU per second), to measure hot keys and sharded queues", false,
			func(fs *flag.FlagSet, name, usage string) { fs.BoolVar(&c.PartitionLimit, name, false, usage) }},
		{"aws-faithful", "REDAMO_AWS_FAITHFUL", "embedded store only: answer as DynamoDB on AWS does (latency per call, transaction conflicts, per-partition and on-demand table throttling, rare 5xx and timeouts), to test clients and redamo against what DynamoDB Local never does", false,
			func(fs *flag.FlagSet, name, usage string) { fs.BoolVar(&c.AWSFaithful, name, false, usage) }},
		{"bus", "REDAMO_BUS", "where the bus to the other instances on the table listens (pub/sub and key events reach their clients through it): auto (on with --store dynamodb: the RESP port + 10000 when free, else any port; off with the embedded store, which no other process shares), off, or host:port", false,
			str(&c.Bus, busAuto)},
		{"bus-addr", "REDAMO_BUS_ADDR", "host:port the other instances dial to reach this one's bus (empty: the bus listener's address, a wildcard host replaced by this host's first non-loopback IPv4)", false,
			str(&c.BusAddr, "")},
		{"bus-secret", "REDAMO_BUS_SECRET", "secret every instance of the table shares to join the bus (empty: derived from --requirepass; no password, no secret: an open bus, as the RESP port is open)", false,
			str(&c.BusSecret, "")},
		{"blocking-poll", "REDAMO_BLOCKING_POLL", "longest pause between polls of a key blocked clients wait on; writes through other instances are seen within it", false,
			func(fs *flag.FlagSet, name, usage string) {
				fs.DurationVar(&c.BlockingPoll, name, commands.DefaultBlockingPoll, usage)
			}},
	}
	for _, o := range opts {
		o.define(fs, o.flag, fmt.Sprintf("%s (env %s)", o.usage, o.env))
	}
	fs.BoolVar(&c.ShowVersion, "version", false, "print the version and exit")

	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (all settings are flags, see -help)", fs.Arg(0))
	}
	// given maps each flag that was set to where it came from, for messages.
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = "--" + f.Name })
	for _, o := range opts {
		v := getenv(o.env)
		if _, onCommandLine := given[o.flag]; onCommandLine || v == "" {
			continue
		}
		if err := fs.Set(o.flag, v); err != nil {
			return config{}, fmt.Errorf("%s=%q: %w", o.env, v, err)
		}
		given[o.flag] = o.env
	}
	c.ProtoMaxBulkLen = int64(bulk)

	if c.ShowVersion {
		return c, nil
	}
	return c, c.validate(opts, given)
}

func (c config) validate(opts []option, given map[string]string) error {
	switch c.Store {
	case storeMemory:
		for _, o := range opts {
			if src, ok := given[o.flag]; ok && o.dynamoOnly {
				return fmt.Errorf("%s applies only to --store %s (the store is %s)", src, storeDynamoDB, storeMemory)
			}
		}
		if c.AWSFaithful && c.PartitionLimit {
			// The faithful mode's budget per partition replaces the plain
			// store's limiter.
			return fmt.Errorf("%s and %s: the AWS-faithful mode already limits each partition", given["aws-faithful"], given["partition-limit"])
		}
	case storeDynamoDB:
		if c.Table == "" {
			return errors.New("--table must not be empty")
		}
		if c.PartitionLimit {
			return fmt.Errorf("%s applies only to --store %s: DynamoDB limits its partitions itself", given["partition-limit"], storeMemory)
		}
		if c.AWSFaithful {
			return fmt.Errorf("%s applies only to --store %s: it imitates DynamoDB", given["aws-faithful"], storeMemory)
		}
		if c.DynamoDBClient != clientDirect && c.DynamoDBClient != clientSDK {
			return fmt.Errorf("--dynamodb-client %q: must be %s or %s", c.DynamoDBClient, clientDirect, clientSDK)
		}
	default:
		return fmt.Errorf("--store %q: must be %s or %s", c.Store, storeMemory, storeDynamoDB)
	}
	if c.Addr == "" {
		return errors.New("--addr must not be empty")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	if c.Bus == "" {
		return fmt.Errorf("--bus must be %s, %s or host:port", busAuto, busOff)
	}
	if c.Bus != busAuto && c.Bus != busOff {
		if _, _, err := net.SplitHostPort(c.Bus); err != nil {
			return fmt.Errorf("--bus %q: must be %s, %s or host:port", c.Bus, busAuto, busOff)
		}
		if c.Store != storeDynamoDB {
			return fmt.Errorf("--bus %s applies only to --store %s: no other process shares the embedded store", c.Bus, storeDynamoDB)
		}
	}
	if c.BlockingPoll < minBlockingPoll || c.BlockingPoll > maxBlockingPoll {
		return fmt.Errorf("--blocking-poll %s: must be between %s and %s", c.BlockingPoll, minBlockingPoll, maxBlockingPoll)
	}
	if c.ProtoMaxBulkLen < minProtoMaxBulkLen {
		return fmt.Errorf("--proto-max-bulk-len %d: must be at least %d (1mb), as in Redis", c.ProtoMaxBulkLen, minProtoMaxBulkLen)
	}
	return nil
}

// tls reports whether clients are served over TLS.
func (c config) tls() bool { return c.TLSCert != "" && c.TLSKey != "" }
