package main

// The shell CLI: `redamo <verb> [arguments] [flags]` runs one redamo
// command and exits with a code a script can branch on. Each verb is one
// command of the table (cli_verbs.go): run in-process against the
// DynamoDB table through the same handlers and model as the server
// (commands.Server.Do), or sent over RESP3 to a running redamo with
// --server. Nothing here decides what a command does; the verbs only build
// its arguments and read its reply.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/redamo/redamo/commands"
)

// Exit codes of the CLI.
const (
	exitOK = 0
	// exitNo: the command ran and its answer is no (no such key, the
	// condition did not hold, not the owner, not the leader).
	exitNo = 1
	// exitUsage: invalid arguments or flags, or a command redamo refused
	// as invalid (a syntax error, WRONGTYPE, not an integer).
	exitUsage = 2
	// exitStore: the store or the server could not be reached or failed
	// (throttling, permissions, a missing table), after bounded retries.
	exitStore = 3
	// exitHeld: a lock or leadership is held by someone else (after --wait).
	exitHeld = 4
	// exitInterrupted: SIGINT or SIGTERM, as shells report a signal.
	exitInterrupted = 130
)

// Output formats (--format).
const (
	formatJSON  = "json"
	formatText  = "text"
	formatValue = "value"
	// formatKeys: list's keys, one a line (--format value's, by the name
	// a key-value store's CLI gives it).
	formatKeys = "keys"
)

// flagDef is one flag: global (with an environment variable) or a verb's.
type flagDef struct {
	name   string
	env    string
	isBool bool
	def    string
	arg    string // placeholder in help: D, N, ID
	usage  string
}

// globalFlags apply to every verb; each has an environment variable, and a
// flag on the command line wins over its variable.
var globalFlags = []flagDef{
	{name: "server", env: "REDAMO_SERVER", arg: "ADDR",
		usage: "a running redamo to send the command to (host:port, or redis://[:password@]host:port), instead of the DynamoDB table"},
	{name: "table", env: "REDAMO_TABLE", def: "redamo", arg: "NAME", usage: "DynamoDB table"},
	{name: "region", env: "REDAMO_REGION", arg: "REGION", usage: "AWS region (default: the SDK's chain: AWS_REGION, the profile's region)"},
	{name: "endpoint", env: "REDAMO_ENDPOINT", arg: "URL", usage: "DynamoDB endpoint URL, e.g. DynamoDB Local's http://127.0.0.1:8000 (default: AWS)"},
	{name: "profile", env: "AWS_PROFILE", arg: "NAME", usage: "AWS shared configuration profile for credentials and region"},
	{name: "create-table", env: "REDAMO_CREATE_TABLE", isBool: true, usage: "create the table when it does not exist, and turn its TTL on (as the server's --create-table)"},
	{name: "format", env: "REDAMO_FORMAT", def: formatJSON, arg: "FMT",
		usage: "json (one object per result), text (one human line), value (the bare value, for $(...)) or keys (list's keys, one a line)"},
	{name: "quiet", env: "REDAMO_QUIET", isBool: true, usage: "print no result and no notes, only errors: the exit code tells"},
	{name: "verbose", env: "REDAMO_VERBOSE", isBool: true, usage: "print the redamo command, where it ran, its time and DynamoDB requests on stderr"},
}

// tableFlags only make sense when the CLI opens the table itself.
var tableFlags = []string{"table", "region", "endpoint", "profile", "create-table"}

// globals are the global settings of one run.
type globals struct {
	server, table, region, endpoint, profile, format string
	createTable, quiet, verbose                      bool
}

// cli is one run of the CLI.
type cli struct {
	getenv      func(string) string
	out, errOut io.Writer
	g           globals
	be          backend
}

// isCLI reports whether the first argument names a verb, a category or
// help: anything else (flags, nothing) starts the server.
func isCLI(arg string) bool {
	if arg == "help" {
		return true
	}
	for _, v := range verbs {
		if v.name == arg || (v.category() != "" && v.category() == arg) {
			return true
		}
	}
	return false
}

// runCLI runs one verb and returns the process's exit code.
func runCLI(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{getenv: getenv, out: stdout, errOut: stderr}
	return c.run(ctx, args)
}

func (c *cli) run(ctx context.Context, args []string) int {
	switch args[0] {
	case "help":
		return c.help(args[1:])
	}
	v, rest, err := findVerb(args)
	if err != nil {
		return c.usageError(err)
	}
	if v == nil { // a category alone, or with --help
		if len(rest) > 0 && isHelpFlag(rest[0]) {
			printHelp(c.out, args[0])
			return exitOK
		}
		fmt.Fprintf(c.errOut, "redamo: %s needs an operation: %s (see `redamo %s --help`)\n", args[0], strings.Join(operations(args[0]), ", "), args[0])
		return exitUsage
	}
	allowed := map[string]flagDef{}
	for _, f := range globalFlags {
		allowed[f.name] = f
	}
	for _, name := range v.flags {
		allowed[name] = verbFlags[name]
	}
	pos, set, help, err := parseArgs(rest, allowed)
	if help {
		printVerbHelp(c.out, v)
		return exitOK
	}
	if err != nil {
		return c.usageError(fmt.Errorf("%w (see `redamo %s --help`)", err, v.name))
	}
	if len(pos) < v.minArgs || (v.maxArgs >= 0 && len(pos) > v.maxArgs) {
		return c.usageError(fmt.Errorf("usage: redamo %s %s (see `redamo %s --help`)", v.name, v.args, v.name))
	}
	if c.g, err = c.globals(set); err != nil {
		return c.usageError(err)
	}
	if c.g.format == formatKeys && v.value != "keys" {
		return c.usageError(fmt.Errorf("%s keys: only for list (see `redamo %s --help` for its formats)", sourceOf(set, "format"), v.name))
	}
	x := &invocation{ctx: ctx, cli: c, verb: v, pos: pos, flags: set}
	// Arguments are checked before anything is opened: a typo costs no
	// request, and exits 2 whatever the store's state.
	runVerb, err := v.build(x)
	if err != nil {
		return c.fail(err)
	}
	if !v.table {
		be, err := c.open(ctx)
		if err != nil {
			return c.fail(err)
		}
		defer be.Close()
		c.be = be
	}
	res := runVerb()
	if ctx.Err() != nil && !x.untilSignal {
		fmt.Fprintln(c.errOut, "redamo: interrupted")
		return exitInterrupted
	}
	if res.err != nil {
		return c.fail(res.err)
	}
	if !c.g.quiet {
		if res.obj != nil {
			c.print(v, res.obj)
		}
		if res.note != "" {
			fmt.Fprintln(c.errOut, "redamo:", res.note)
		}
	}
	return res.code
}

func isHelpFlag(a string) bool { return a == "--help" || a == "-help" || a == "-h" || a == "help" }

// findVerb finds the verb args name: one word ("get") or a category and an
// operation ("lock acquire"). It returns a nil verb for a category without
// a known operation when the operation is missing or a help flag.
func findVerb(args []string) (*verb, []string, error) {
	name := args[0]
	for i := range verbs {
		if verbs[i].name == name {
			return &verbs[i], args[1:], nil
		}
	}
	if len(args) == 1 || isHelpFlag(args[1]) || strings.HasPrefix(args[1], "-") {
		return nil, args[1:], nil
	}
	full := name + " " + args[1]
	for i := range verbs {
		if verbs[i].name == full {
			return &verbs[i], args[2:], nil
		}
	}
	return nil, nil, fmt.Errorf("%s has no operation %q: it has %s (see `redamo %s --help`)", name, args[1], strings.Join(operations(name), ", "), name)
}

// operations lists the operations of a category.
func operations(category string) []string {
	var out []string
	for _, v := range verbs {
		if v.category() == category {
			out = append(out, strings.TrimPrefix(v.name, category+" "))
		}
	}
	return out
}

// looksLikeFlag tells a flag from a positional argument: a negative number
// ("-1" in lrange) and a lone "-" are positional.
func looksLikeFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if c := a[1]; c >= '0' && c <= '9' || c == '.' {
		return false
	}
	return true
}

// parseArgs splits args into positional arguments and flags, which may
// come in any order (--name value, --name=value, -name; a bool flag takes
// no value unless written --name=false). "--" ends the flags: everything
// after it is positional, for values that start with "-".
func parseArgs(args []string, allowed map[string]flagDef) (pos []string, set map[string]string, help bool, err error) {
	set = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !looksLikeFlag(a) {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			help = true
			continue
		}
		d, ok := allowed[name]
		if !ok {
			return nil, nil, false, fmt.Errorf("unknown flag %s (to pass a value that starts with -, put -- before it)", a)
		}
		if _, dup := set[name]; dup {
			return nil, nil, false, fmt.Errorf("--%s given twice", name)
		}
		switch {
		case d.isBool && !hasVal:
			val = "true"
		case d.isBool:
			if _, perr := strconv.ParseBool(val); perr != nil {
				return nil, nil, false, fmt.Errorf("--%s=%s: must be true or false", name, val)
			}
		case !hasVal:
			if i+1 == len(args) || looksLikeFlag(args[i+1]) {
				return nil, nil, false, fmt.Errorf("--%s needs a value (--%s %s; --%s=%s for one that starts with -)", name, name, d.arg, name, d.arg)
			}
			i++
			val = args[i]
		}
		set[name] = val
	}
	return pos, set, help, nil
}

// globals resolves the global flags: the command line, else the
// environment, else the default.
func (c *cli) globals(set map[string]string) (globals, error) {
	val := map[string]string{}
	for _, f := range globalFlags {
		v, ok := set[f.name]
		if !ok {
			v = c.getenv(f.env)
		}
		if v == "" {
			v = f.def
		}
		val[f.name] = v
	}
	g := globals{
		server: val["server"], table: val["table"], region: val["region"],
		endpoint: val["endpoint"], profile: val["profile"], format: val["format"],
	}
	for _, b := range []struct {
		name string
		p    *bool
	}{{"create-table", &g.createTable}, {"quiet", &g.quiet}, {"verbose", &g.verbose}} {
		if val[b.name] == "" {
			continue
		}
		on, err := strconv.ParseBool(val[b.name])
		if err != nil {
			return g, fmt.Errorf("%s=%q: must be true or false", sourceOf(set, b.name), val[b.name])
		}
		*b.p = on
	}
	switch g.format {
	case formatJSON, formatText, formatValue, formatKeys:
	default:
		return g, fmt.Errorf("%s %q: must be json, text, value or keys", sourceOf(set, "format"), g.format)
	}
	if g.server != "" {
		for _, name := range tableFlags {
			if _, ok := set[name]; ok {
				return g, fmt.Errorf("--%s applies to the DynamoDB table, but %s names a running redamo, which uses its own store: give one or the other",
					name, sourceOf(set, "server"))
			}
		}
	}
	return g, nil
}

// sourceOf names where a global flag's value came from, for messages.
func sourceOf(set map[string]string, name string) string {
	if _, ok := set[name]; ok {
		return "--" + name
	}
	for _, f := range globalFlags {
		if f.name == name {
			return f.env
		}
	}
	return "--" + name
}

// defaultIdentity is the lock owner and leader id when none is given:
// REDAMO_OWNER, else user@host:PID of the calling shell. The shell's PID
// keeps two scripts of one user on one host apart (LOCK.ACQUIRE lets an
// owner take a lock it holds again, so a shared default would let both
// in), while every redamo a script starts sees the same one, so its
// release matches its acquire.
func defaultIdentity(getenv func(string) string) string {
	if v := getenv("REDAMO_OWNER"); v != "" {
		return v
	}
	name := getenv("USER")
	if name == "" {
		name = getenv("USERNAME")
	}
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s@%s:%d", name, host, os.Getppid())
}

// ---- errors ----------------------------------------------------------------------

// cliError ends a run with an exit code and one line on stderr.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// replyError is an error reply from redamo.
type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

// isNotOwner reports whether err is redamo's NOTOWNER reply.
func isNotOwner(err error) bool {
	var re *replyError
	return errors.As(err, &re) && strings.HasPrefix(re.msg, "NOTOWNER")
}

// replyExit is the exit code for an error reply: the store failing (its
// errors as the server words them) is 3, NOTOWNER (not the owner) 1, and
// anything else redamo refused (syntax, WRONGTYPE, not an integer) 2.
func replyExit(msg string) int {
	switch {
	case strings.HasPrefix(msg, "NOTOWNER"):
		return exitNo
	case strings.HasPrefix(msg, "TRYAGAIN"), msg == commands.MsgUnavailable, msg == commands.MsgOutcomeUnknown,
		strings.HasPrefix(msg, "ERR dynamo"), strings.HasPrefix(msg, "ERR dynastore"),
		strings.HasPrefix(msg, "ERR context"), strings.HasPrefix(msg, "LOADING"), strings.HasPrefix(msg, "NOAUTH"),
		strings.HasPrefix(msg, "WRONGPASS"):
		return exitStore
	}
	return exitUsage
}

func (c *cli) usageError(err error) int {
	fmt.Fprintln(c.errOut, "redamo:", err)
	return exitUsage
}

// fail prints err as one line saying what went wrong and how to fix it,
// and returns its exit code.
func (c *cli) fail(err error) int {
	var ce *cliError
	var re *replyError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(c.errOut, "redamo:", ce.msg)
		return ce.code
	case errors.As(err, &re):
		code := replyExit(re.msg)
		msg := re.msg
		if code == exitStore {
			msg = c.storeMessage(re.msg)
		}
		fmt.Fprintln(c.errOut, "redamo:", msg)
		return code
	}
	fmt.Fprintln(c.errOut, "redamo:", err)
	return exitStore
}

// storeMessage is the line for a store failure: what failed and what to
// check.
func (c *cli) storeMessage(msg string) string {
	if c.g.server != "" {
		return fmt.Sprintf("%s (from the redamo at %s: see its log)", msg, c.g.server)
	}
	if strings.Contains(msg, "ResourceNotFoundException") || strings.Contains(msg, "non-existent table") {
		return c.noTableMessage()
	}
	return fmt.Sprintf("%s: check --table (%s), --region, --endpoint and the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID), or use a running redamo with --server (REDAMO_SERVER)",
		msg, c.g.table)
}

// noTableMessage is the line for a table that does not exist.
func (c *cli) noTableMessage() string {
	return fmt.Sprintf("table %q does not exist in %s: create it with --create-table, pick another with --table (REDAMO_TABLE), or use a running redamo with --server (REDAMO_SERVER)",
		c.g.table, c.where())
}

// where names the table's region and endpoint, for messages.
func (c *cli) where() string {
	return fmt.Sprintf("region %s, endpoint %s", orDefault(c.g.region, "(SDK default)"), orDefault(c.g.endpoint, "(AWS)"))
}

// ---- results -------------------------------------------------------------------------

// field is one key of a result; object keeps its fields in order, so the
// JSON reads as documented.
type field struct {
	key string
	val any
}

type object []field

func (o object) get(key string) (any, bool) {
	for _, f := range o {
		if f.key == key {
			return f.val, true
		}
	}
	return nil, false
}

// print writes a result in the chosen format.
func (c *cli) print(v *verb, o object) {
	var b bytes.Buffer
	switch c.g.format {
	case formatJSON:
		writeJSON(&b, o)
		b.WriteByte('\n')
	case formatText:
		for i, f := range o {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f.key)
			b.WriteByte('=')
			writeText(&b, f.val)
		}
		b.WriteByte('\n')
	case formatValue, formatKeys:
		val, ok := o.get(v.value)
		if !ok {
			break
		}
		writeValue(&b, val)
	}
	_, _ = c.out.Write(b.Bytes())
}

// writeJSON writes v (string, int64, float64, bool, nil, []string, []any,
// object) as JSON, keys in order, without HTML escaping. Bytes that are
// not UTF-8 become U+FFFD, as encoding/json writes them.
func writeJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case object:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, f.key)
			b.WriteByte(':')
			writeJSON(b, f.val)
		}
		b.WriteByte('}')
	case []string:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, s)
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			writeJSON(b, formatFloat(v))
			return
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	default:
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			b.WriteString("null")
			return
		}
		b.Write(bytes.TrimSuffix(enc.Bytes(), []byte{'\n'}))
	}
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// writeText writes a value of a text line: strings bare unless they need
// quotes, aggregates as JSON.
func writeText(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case string:
		if v == "" || strings.ContainsAny(v, " \t\r\n\"=\\") || !utf8.ValidString(v) || !strconv.IsPrint(firstRune(v)) {
			b.WriteString(strconv.Quote(v))
			return
		}
		b.WriteString(v)
	case nil:
		b.WriteString("null")
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float64:
		b.WriteString(formatFloat(v))
	default:
		writeJSON(b, v)
	}
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// writeValue writes the bare value for --format value: a string as its
// bytes, a list one element a line, null as nothing.
func writeValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []string:
		for _, s := range v {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	case []any:
		for _, e := range v {
			writeValue(b, e)
		}
	case object:
		writeJSON(b, v)
		b.WriteByte('\n')
	default:
		writeText(b, v)
		b.WriteByte('\n')
	}
}

// replyValue is a reply as a result value: strings, integers, doubles,
// booleans, null, lists, and maps as objects with their keys sorted (a
// reply over RESP keeps no order of its map, so both paths sort); an
// error inside an aggregate becomes {"error": "..."}.
func replyValue(r commands.Reply) any {
	switch r.Kind {
	case commands.ReplyInt:
		return r.Int
	case commands.ReplyDouble:
		return r.Float
	case commands.ReplyBool:
		return r.Int != 0
	case commands.ReplyNil, commands.ReplyNilArray:
		return nil
	case commands.ReplyError:
		return object{{"error", r.Str}}
	case commands.ReplyArray, commands.ReplySet:
		out := make([]any, len(r.Elems))
		for i, e := range r.Elems {
			out[i] = replyValue(e)
		}
		return out
	case commands.ReplyMap:
		o := make(object, 0, len(r.Elems)/2)
		for i := 0; i+1 < len(r.Elems); i += 2 {
			o = append(o, field{replyString(r.Elems[i]), replyValue(r.Elems[i+1])})
		}
		sort.SliceStable(o, func(i, j int) bool { return o[i].key < o[j].key })
		return o
	}
	return r.Str
}

// replyString is a scalar reply as text (a map key, a member).
func replyString(r commands.Reply) string {
	switch r.Kind {
	case commands.ReplyInt:
		return strconv.FormatInt(r.Int, 10)
	case commands.ReplyDouble:
		return formatFloat(r.Float)
	case commands.ReplyBool:
		return strconv.FormatBool(r.Int != 0)
	case commands.ReplyNil, commands.ReplyNilArray:
		return ""
	case commands.ReplyArray, commands.ReplySet, commands.ReplyMap:
		var b bytes.Buffer
		writeJSON(&b, replyValue(r))
		return b.String()
	}
	return r.Str
}

// ---- durations ---------------------------------------------------------------------

// parseDuration reads a duration flag (30s, 5m, 1500ms) as whole
// milliseconds; zero only when allowZero.
func parseDuration(name, s string, allowZero bool) (int64, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, usageErr("--%s %s: a duration needs a unit, e.g. %ss, %sms or 5m", name, s, s, s)
		}
		return 0, usageErr("--%s %q: not a duration (write it as 30s, 5m or 1500ms)", name, s)
	}
	ms := d.Milliseconds()
	switch {
	case d < 0:
		return 0, usageErr("--%s %s: must not be negative", name, s)
	case ms == 0 && !(allowZero && d == 0):
		if allowZero {
			return 0, usageErr("--%s %s: must be 0 or at least 1ms", name, s)
		}
		return 0, usageErr("--%s %s: must be at least 1ms", name, s)
	case d%time.Millisecond != 0:
		return 0, usageErr("--%s %s: must be whole milliseconds", name, s)
	}
	return ms, nil
}
