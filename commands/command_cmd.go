package commands

import (
	"sort"
	"strings"

	"github.com/redamo/redamo/model"
)

// COMMAND and its subcommands, generated from the command table's metadata
// (command.go) as Redis 7.0.15 reports it.

func cmdCommandAll(c *Ctx) {
	all := c.Srv.Table.All()
	c.W.Array(len(all))
	for _, cmd := range all {
		writeCommandInfo(c.W, cmd)
	}
}

func cmdCommandCount(c *Ctx) { c.W.Int(int64(len(c.Srv.Table.All()))) }

// lookupFullName finds "name" or "container|sub".
func (t *Table) lookupFullName(name string) *Command {
	parent, sub, isSub := strings.Cut(name, "|")
	cmd := t.Lookup(parent)
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.Subcommand([]byte(sub))
}

func cmdCommandInfo(c *Ctx) {
	if len(c.Args) == 2 {
		cmdCommandAll(c)
		return
	}
	names := c.Args[2:]
	c.W.Array(len(names))
	for _, n := range names {
		if cmd := c.Srv.Table.lookupFullName(string(n)); cmd != nil {
			writeCommandInfo(c.W, cmd)
		} else {
			c.W.Nil()
		}
	}
}

// writeCommandInfo writes one command's COMMAND INFO entry, as Redis's
// addReplyCommandInfo does.
func writeCommandInfo(w Writer, cmd *Command) {
	w.Array(10)
	w.BulkString(cmd.Name)
	w.Int(int64(cmd.Arity))
	w.Set(len(cmd.Flags))
	for _, f := range cmd.Flags {
		w.Simple(f)
	}
	w.Int(int64(cmd.FirstKey))
	w.Int(int64(cmd.LastKey))
	w.Int(int64(cmd.Step))
	w.Set(len(cmd.Categories))
	for _, cat := range cmd.Categories {
		w.Simple("@" + cat)
	}
	w.Set(len(cmd.Tips))
	for _, tip := range cmd.Tips {
		w.BulkString(tip)
	}
	specs := cmd.KeySpecs
	w.Set(len(specs))
	for _, ks := range specs {
		writeKeySpec(w, ks)
	}
	if len(cmd.Subcommands) == 0 {
		w.Set(0)
		return
	}
	subs := sortedSubcommands(cmd)
	w.Array(len(subs))
	for _, sub := range subs {
		writeCommandInfo(w, sub)
	}
}

func sortedSubcommands(cmd *Command) []*Command {
	subs := append([]*Command(nil), cmd.Subcommands...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

func writeKeySpec(w Writer, ks KeySpec) {
	writeSparseMap(w, []mapEntry{
		{"notes", ks.Notes != "", bulk(w, ks.Notes)},
		{"flags", true, simpleSet(w, ks.Flags)},
		{"begin_search", true, func() {
			if ks.Unknown {
				writeTypedSpec(w, "unknown", nil)
				return
			}
			if ks.Keyword != "" {
				writeTypedSpec(w, "keyword", []mapEntry{
					{"keyword", true, bulk(w, ks.Keyword)},
					{"startfrom", true, integer(w, ks.StartFrom)},
				})
				return
			}
			writeTypedSpec(w, "index", []mapEntry{{"index", true, integer(w, ks.Index)}})
		}},
		{"find_keys", true, func() {
			if ks.Unknown {
				writeTypedSpec(w, "unknown", nil)
				return
			}
			if ks.KeyNum {
				writeTypedSpec(w, "keynum", []mapEntry{
					{"keynumidx", true, integer(w, ks.KeyNumIdx)},
					{"firstkey", true, integer(w, ks.FirstKey)},
					{"keystep", true, integer(w, ks.KeyStep)},
				})
				return
			}
			writeTypedSpec(w, "range", []mapEntry{
				{"lastkey", true, integer(w, ks.LastKey)},
				{"keystep", true, integer(w, ks.KeyStep)},
				{"limit", true, integer(w, ks.Limit)},
			})
		}},
	})
}

func cmdCommandDocs(c *Ctx) {
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = c.Srv.Table.All()
	} else {
		for _, n := range c.Args[2:] {
			if cmd := c.Srv.Table.lookupFullName(string(n)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.Name)
		writeCommandDocs(c.W, cmd)
	}
}

// writeCommandDocs writes one command's COMMAND DOCS map, as Redis's
// addReplyCommandDocs does.
func writeCommandDocs(w Writer, cmd *Command) {
	subs := sortedSubcommands(cmd)
	writeSparseMap(w, []mapEntry{
		{"summary", cmd.Summary != "", bulk(w, cmd.Summary)},
		{"since", cmd.Since != "", bulk(w, cmd.Since)},
		{"group", true, bulk(w, cmd.Group)},
		{"complexity", cmd.Complexity != "", bulk(w, cmd.Complexity)},
		{"doc_flags", len(cmd.DocFlags) > 0, simpleSet(w, cmd.DocFlags)},
		{"deprecated_since", cmd.DeprecatedSince != "", bulk(w, cmd.DeprecatedSince)},
		{"replaced_by", cmd.ReplacedBy != "", bulk(w, cmd.ReplacedBy)},
		{"history", len(cmd.History) > 0, func() {
			w.Set(len(cmd.History))
			for _, h := range cmd.History {
				w.Array(2)
				w.BulkString(h[0])
				w.BulkString(h[1])
			}
		}},
		{"arguments", len(cmd.Args) > 0, func() { writeArgs(w, cmd.Args) }},
		{"subcommands", len(subs) > 0, func() {
			w.Map(len(subs))
			for _, sub := range subs {
				w.BulkString(sub.Name)
				writeCommandDocs(w, sub)
			}
		}},
	})
}

func writeArgs(w Writer, args []Arg) {
	w.Array(len(args))
	for _, a := range args {
		nested := a.Type == "oneof" || a.Type == "block"
		writeSparseMap(w, []mapEntry{
			{"name", true, bulk(w, a.Name)},
			{"type", true, bulk(w, a.Type)},
			{"key_spec_index", a.Type == "key" || a.PatternKeys, func() { w.Int(int64(a.KeySpecIndex)) }},
			{"token", a.Token != "", bulk(w, a.Token)},
			{"summary", a.Summary != "", bulk(w, a.Summary)},
			{"since", a.Since != "", bulk(w, a.Since)},
			{"deprecated_since", a.DeprecatedSince != "", bulk(w, a.DeprecatedSince)},
			{"flags", len(a.Flags) > 0, simpleSet(w, a.Flags)},
			{"arguments", nested, func() { writeArgs(w, a.Args) }},
		})
	}
}

// mapEntry is one entry of a reply map that Redis sends only when present.
type mapEntry struct {
	name    string
	present bool
	value   func()
}

// writeSparseMap writes the present entries as a map, so that the count
// and the entries cannot disagree.
func writeSparseMap(w Writer, entries []mapEntry) {
	n := 0
	for _, e := range entries {
		if e.present {
			n++
		}
	}
	w.Map(n)
	for _, e := range entries {
		if e.present {
			w.BulkString(e.name)
			e.value()
		}
	}
}

// writeTypedSpec writes a key spec's begin_search or find_keys: its type
// and the spec's fields.
func writeTypedSpec(w Writer, typ string, spec []mapEntry) {
	w.Map(2)
	w.BulkString("type")
	w.BulkString(typ)
	w.BulkString("spec")
	writeSparseMap(w, spec)
}

func bulk(w Writer, s string) func() { return func() { w.BulkString(s) } }

func integer(w Writer, n int) func() { return func() { w.Int(int64(n)) } }

func simpleSet(w Writer, list []string) func() {
	return func() {
		w.Set(len(list))
		for _, x := range list {
			w.Simple(x)
		}
	}
}

func cmdCommandList(c *Ctx) {
	var match func(cmd *Command) bool
	switch {
	case len(c.Args) == 2:
	case len(c.Args) == 5 && strings.EqualFold(string(c.Args[2]), "filterby"):
		val := c.Args[4]
		switch strings.ToLower(string(c.Args[3])) {
		case "module":
			// redamo has no modules: no command belongs to one.
			match = func(*Command) bool { return false }
		case "aclcat":
			match = func(cmd *Command) bool {
				for _, cat := range cmd.Categories {
					if strings.EqualFold(cat, string(val)) {
						return true
					}
				}
				return false
			}
		case "pattern":
			pat := []byte(strings.ToLower(string(val)))
			match = func(cmd *Command) bool { return globMatch(pat, []byte(cmd.Name)) }
		default:
			c.W.Error(MsgSyntax)
			return
		}
	default:
		c.W.Error(MsgSyntax)
		return
	}
	var names []string
	add := func(cmd *Command) {
		if match == nil || match(cmd) {
			names = append(names, cmd.Name)
		}
	}
	for _, cmd := range c.Srv.Table.All() {
		add(cmd)
		for _, sub := range sortedSubcommands(cmd) {
			add(sub)
		}
	}
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// getKeysReply is COMMAND GETKEYS and GETKEYSANDFLAGS.
func getKeysReply(c *Ctx, withFlags bool) {
	args := c.Args[2:]
	cmd := lookup(c.Srv.Table, args[0])
	if cmd != nil && len(cmd.Subcommands) > 0 && len(args) >= 2 {
		cmd = cmd.Subcommand(args[1])
	}
	switch {
	case cmd == nil:
		c.W.Error(MsgGetkeysCommand)
		return
	case !cmd.hasKeys():
		c.W.Error(MsgGetkeysNoKeys)
		return
	case !cmd.ArityOK(len(args)):
		c.W.Error(MsgGetkeysArity)
		return
	}
	keys, ok := cmd.keysOf(args)
	if !ok || len(keys) == 0 {
		if !ok || !cmd.HasFlag("no_mandatory_keys") {
			c.W.Error(MsgGetkeysArgs)
			return
		}
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.W.Bulk(args[k.pos])
			continue
		}
		c.W.Array(2)
		c.W.Bulk(args[k.pos])
		c.W.Set(len(k.flags))
		for _, f := range k.flags {
			c.W.Simple(f)
		}
	}
}

// hasKeys is Redis's doesCommandHaveKeys: a key spec that is not not_key.
func (c *Command) hasKeys() bool {
	for _, ks := range c.KeySpecs {
		if !hasString(ks.Flags, "not_key") {
			return true
		}
	}
	return false
}

type keyRef struct {
	pos   int
	flags []string
}

// keysOf finds the keys of a full command (args[0] is its name) from its key
// specs, as Redis's getKeysUsingKeySpecs does; ok is false when the
// arguments contradict a spec (a numkeys that is not a count, a key range
// past the end).
func (c *Command) keysOf(args [][]byte) (keys []keyRef, ok bool) {
	argc := len(args)
	for _, ks := range c.KeySpecs {
		if hasString(ks.Flags, "not_key") {
			continue
		}
		if ks.Unknown {
			// Redis's specs fail here and its command's own function
			// finds the keys.
			if c.keysProc != nil {
				return c.keysProc(args), true
			}
			return nil, false
		}
		first := 0
		if ks.Keyword != "" {
			start, end := ks.StartFrom, argc-1
			if start <= 0 {
				start, end = argc+ks.StartFrom, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if strings.EqualFold(string(args[i]), ks.Keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue
			}
		} else {
			first = ks.Index
		}
		var last int
		step := max(ks.KeyStep, 1)
		if ks.KeyNum {
			if ks.KeyNumIdx >= argc || first+ks.KeyNumIdx >= argc {
				return nil, false
			}
			n, good := model.String2ll(args[first+ks.KeyNumIdx])
			if !good || n < 0 || n > int64(argc) {
				return nil, false
			}
			first += ks.FirstKey
			last = first + int(n) - 1
		} else {
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + ((argc-first)/ks.Limit + ks.LastKey)
			}
		}
		if last >= argc || last < first || first >= argc {
			return nil, false
		}
		for i := first; i <= last; i += step {
			keys = append(keys, keyRef{pos: i, flags: ks.Flags})
		}
	}
	return keys, true
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cmdCommandHelp(c *Ctx) {
	writeHelp(c, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	)
}
