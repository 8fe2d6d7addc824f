package scripting

// FUNCTION DUMP and FUNCTION RESTORE: the libraries as Redis 7.0.15's
// payload, one RDB string of code per library (internal/rdb), so that a
// payload moves between redamo and Redis either way.
//
// DUMP writes the libraries in name order (Redis walks a hash table whose
// order depends on a seed). RESTORE reads and compiles the payload's
// libraries before it looks at the table, then changes the libraries in
// one conditional write, as FUNCTION LOAD does.

import (
	"slices"
	"strings"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/internal/rdb"
)

// FUNCTION RESTORE's replies, as Redis 7.0.15 sends them. The reasons a
// payload's libraries are refused come without their ERR code, as
// compileLibrary's do.
const (
	MsgDumpPayload    = "ERR DUMP payload version or checksum are wrong"
	MsgRestorePolicy  = "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
	msgNotFunction    = "given type is not a function"
	msgBadLibrary     = "Failed loading library payload"
	msgBadOldName     = "Failed loading library name"
	msgBadOldEngine   = "Failed loading engine name"
	msgBadOldDescFlag = "Failed loading library description indicator"
	msgBadOldDesc     = "Failed loading library description"
	msgBadOldBlob     = "Failed loading library blob"
)

// restorePolicy is what RESTORE does with the libraries there are.
type restorePolicy int

const (
	restoreAppend  restorePolicy = iota // keep them; a name in both fails
	restoreReplace                      // keep them, but the payload's win
	restoreFlush                        // drop them all
)

func (e *engine) cmdFunctionDump(c *commands.Ctx) {
	set, err := e.libraries(c)
	if err != nil {
		c.Fail(err)
		return
	}
	libs := make([]*library, 0, len(set.libs))
	for _, lib := range set.libs {
		libs = append(libs, lib)
	}
	slices.SortFunc(libs, func(a, b *library) int { return strings.Compare(a.name, b.name) })
	var p []byte
	for _, lib := range libs {
		p = rdb.AppendString(append(p, rdb.OpFunction2), lib.code)
	}
	c.W.Bulk(rdb.AppendTrailer(p))
}

func (e *engine) cmdFunctionRestore(c *commands.Ctx) {
	if len(c.Args) > 4 {
		c.W.Error(commands.ErrSubcommandSyntax("function", string(c.Args[1])))
		return
	}
	policy := restoreAppend
	if len(c.Args) == 4 {
		switch arg := c.Args[3]; {
		case commands.ArgIs(arg, "append"):
		case commands.ArgIs(arg, "replace"):
			policy = restoreReplace
		case commands.ArgIs(arg, "flush"):
			policy = restoreFlush
		default:
			c.W.Error(MsgRestorePolicy)
			return
		}
	}
	if _, ok := rdb.CheckTrailer(c.Args[2]); !ok {
		c.W.Error(MsgDumpPayload)
		return
	}
	restored, msg := readLibraries(c.Args[2])
	if msg != "" {
		c.W.Error("ERR " + msg)
		return
	}
	err := e.changeLibraries(c, func(set *librarySet, libs map[string][]byte) error {
		if policy == restoreFlush {
			clear(libs)
		}
		for _, lib := range restored {
			if _, ok := libs[lib.name]; ok {
				if policy != restoreReplace {
					return commands.ErrorReply("ERR Library " + lib.name + " already exists")
				}
				delete(libs, lib.name)
			}
		}
		// A function of a library that stays refuses the restore.
		kept := func(owner string) bool { _, ok := libs[owner]; return ok }
		for _, lib := range restored {
			if err := set.clash(lib, kept); err != nil {
				return err
			}
		}
		for _, lib := range restored {
			libs[lib.name] = lib.code
		}
		return nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Simple("OK")
}

// readLibraries reads and compiles the libraries of a payload whose
// trailer has been checked, as Redis does: one after the other while more
// than the trailer's 10 bytes are left, each refused if its name or one
// of its functions' comes earlier in the payload; msg is the first error.
func readLibraries(payload []byte) (libs []*library, msg string) {
	r := rdb.NewReader(payload)
	names := map[string]bool{}
	funcs := map[string]bool{} // lower-case names
	for r.Len() > 10 {
		var code []byte
		switch op, _ := r.ReadByte(); op {
		case rdb.OpFunction2:
			var err error
			if code, err = r.ReadString(); err != nil {
				return nil, msgBadLibrary
			}
		case rdb.OpFunction:
			if code, msg = readOldLibrary(r); msg != "" {
				return nil, msg
			}
		default:
			return nil, msgNotFunction
		}
		name, body, msg := libraryMeta(code)
		if msg != "" {
			return nil, msg
		}
		if names[name] {
			return nil, "Library '" + name + "' already exists"
		}
		lib, msg := compileBody(code, name, body)
		if msg != "" {
			return nil, msg
		}
		for _, f := range lib.funcs {
			if funcs[strings.ToLower(f.name)] {
				return nil, "Function " + f.name + " already exists"
			}
		}
		for _, f := range lib.funcs {
			funcs[strings.ToLower(f.name)] = true
		}
		names[name] = true
		libs = append(libs, lib)
	}
	return libs, ""
}

// readOldLibrary reads a library as Redis 7.0's release candidates wrote
// it (rdb.OpFunction) and returns its code with the shebang Redis makes
// for it. Redis formats the shebang with C strings, so each part ends at
// its first NUL byte.
func readOldLibrary(r *rdb.Reader) (code []byte, msg string) {
	name, err := r.ReadString()
	if err != nil {
		return nil, msgBadOldName
	}
	engine, err := r.ReadString()
	if err != nil {
		return nil, msgBadOldEngine
	}
	hasDesc, _, err := r.ReadLen()
	if err != nil {
		return nil, msgBadOldDescFlag
	}
	if hasDesc != 0 {
		if _, err := r.ReadString(); err != nil {
			return nil, msgBadOldDesc
		}
	}
	blob, err := r.ReadString()
	if err != nil {
		return nil, msgBadOldBlob
	}
	code = append([]byte("#!"), commands.CPrefix(engine, len(engine))...)
	code = append(append(code, " name="...), commands.CPrefix(name, len(name))...)
	return append(append(code, '\n'), commands.CPrefix(blob, len(blob))...), ""
}
