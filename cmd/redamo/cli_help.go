package main

import (
	"fmt"
	"io"
	"strings"
)

// groups are the help's sections, in order.
var groups = []struct{ name, title string }{
	{"keys", "Keys and counters"},
	{"sets", "Sets"},
	{"lists", "Lists"},
	{"lock", "Locks: redamo lock OPERATION NAME"},
	{"leader", "Leader election: redamo leader OPERATION POOL"},
	{"queue", "Work queues: redamo queue OPERATION NAME"},
	{"transaction", "Transactions"},
	{"watch", "Key events"},
	{"migrate", "Copying keys from and to Redis"},
	{"table", "Table setup (on the DynamoDB table itself, never --server)"},
	{"exec", "Any command"},
}

const helpIntro = `redamo runs one redamo command from the shell and exits with a code to branch on:

  if redamo lock acquire deploy --ttl 5m --wait 1m; then
    ./deploy.sh
    redamo lock release deploy
  fi

Usage:
  redamo VERB [ARGUMENTS] [FLAGS]     flags may come before or after the arguments
  redamo help [VERB | CATEGORY]       this text, or one part of it
  redamo [SERVER FLAGS]               run the server (redamo -help lists its flags)

By default the command runs in this process on the DynamoDB table (--table,
--region, --endpoint, AWS credentials from the SDK's chain), through the same
command handlers as the server, so every guarantee of the server holds; with
--server (REDAMO_SERVER) it is sent to a running redamo instead. Each verb
below is one redamo command ("runs:"); results are one JSON object on stdout.
`

const helpExits = `Exit codes:
  0  done, the answer is yes
  1  the answer is no: no such key or member, an empty list, --if-absent on a
     key that exists, --if-value on a key that holds another value, a missing
     counter without --create, a transaction whose condition failed, a lock
     or leadership that is not (or no longer) yours, a leader watch that
     timed out, describe-table of a missing or unusable table
     (redamo watch runs until SIGINT or SIGTERM, then exits 0)
  2  invalid arguments or flags, or a command redamo refused (syntax,
     WRONGTYPE, not an integer), keyspace notifications off for watch --server
  3  the store or server failed or is unreachable (throttling, permissions, a
     missing table, no region), after bounded retries; create-table on a
     table redamo cannot use
  4  the lock or leadership is held by someone else (after --wait)
`

// help prints the whole help, or one verb's or category's.
func (c *cli) help(args []string) int {
	topic := strings.Join(args, " ")
	if topic == "" {
		printHelp(c.out, "")
		return exitOK
	}
	for i := range verbs {
		if verbs[i].name == topic {
			printVerbHelp(c.out, &verbs[i])
			return exitOK
		}
	}
	for _, g := range groups {
		if g.name == topic {
			printHelp(c.out, topic)
			return exitOK
		}
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.name)
	}
	fmt.Fprintf(c.errOut, "redamo: no help on %q: try a verb (get, lock acquire, ...) or one of %s\n", topic, strings.Join(names, ", "))
	return exitUsage
}

// printHelp writes the help: everything, or one group's verbs.
func printHelp(w io.Writer, group string) {
	if group == "" {
		fmt.Fprint(w, helpIntro)
	}
	for _, g := range groups {
		if group != "" && g.name != group {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", g.title)
		for i := range verbs {
			if verbs[i].group == g.name {
				writeVerb(w, &verbs[i])
			}
		}
	}
	fmt.Fprintln(w)
	writeFlags(w)
	fmt.Fprintln(w)
	fmt.Fprint(w, helpExits)
}

// printVerbHelp writes one verb's help, the global flags and exit codes.
func printVerbHelp(w io.Writer, v *verb) {
	writeVerb(w, v)
	fmt.Fprintln(w)
	writeFlags(w)
	fmt.Fprintln(w)
	fmt.Fprint(w, helpExits)
}

func writeVerb(w io.Writer, v *verb) {
	usage := []string{"redamo", v.name}
	if v.args != "" {
		usage = append(usage, v.args)
	}
	for _, name := range v.flags {
		if strings.Contains(v.args, "--"+name+" ") {
			continue // required, in the arguments' usage
		}
		usage = append(usage, "["+flagUsage(verbFlags[name])+"]")
	}
	fmt.Fprintf(w, "\n  %s\n", strings.Join(usage, " "))
	fmt.Fprintf(w, "      %s\n", v.summary)
	fmt.Fprintf(w, "      runs: %s\n", v.runs)
	for _, name := range v.flags {
		f := verbFlags[name]
		text := f.usage
		if h, ok := v.flagHelp[name]; ok {
			text = h
		}
		fmt.Fprintf(w, "      %-14s %s\n", flagUsage(f), text)
	}
	if v.value != "" {
		fmt.Fprintf(w, "      --format value prints %s\n", v.value)
	}
	if v.stdin != "" {
		fmt.Fprintf(w, "      $ echo '%s' |\n        redamo %s\n", v.stdin, v.example)
	} else {
		fmt.Fprintf(w, "      $ redamo %s\n", v.example)
	}
	if len(v.meanwhile) > 0 {
		fmt.Fprintf(w, "      # meanwhile, in another shell: redamo %s; then Ctrl-C\n", strings.Join(v.meanwhile, "; redamo "))
	}
	if v.note != "" {
		fmt.Fprintf(w, "      (stderr) redamo: %s\n", v.note)
	}
	fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(v.output, "\n", "\n      "))
}

func flagUsage(f flagDef) string {
	if f.isBool {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.arg
}

func writeFlags(w io.Writer) {
	fmt.Fprintln(w, "Flags of every verb (a flag wins over its environment variable):")
	for _, f := range globalFlags {
		def := ""
		if f.def != "" {
			def = " (default " + f.def + ")"
		}
		fmt.Fprintf(w, "  %-18s %-20s %s%s\n", flagUsage(f), f.env, f.usage, def)
	}
	fmt.Fprintln(w, "  --help                                  this verb's help")
	fmt.Fprintln(w, "Defaults from the environment (a flag wins): REDAMO_DEFAULT_TTL for set's --ttl,")
	fmt.Fprintln(w, "REDAMO_LOCK_TTL for lock acquire's and extend's --ttl, REDAMO_QUEUE_VISIBILITY for")
	fmt.Fprintln(w, "queue pop's --visibility-timeout.")
	fmt.Fprintln(w, "Durations are written 30s, 5m, 1500ms. The lock owner and leader id default to")
	fmt.Fprintln(w, "$REDAMO_OWNER, else user@host:PID of the calling shell (each script its own).")
}
