package lua51

import "strings"

// Room Lua 5.1 gives a chunk's name: LUA_IDSIZE in runtime errors,
// MAXSRC (llex.c) in syntax errors.
const (
	idSizeRuntime = 60
	idSizeLexer   = 80
)

// SyntaxChunkID is how Lua 5.1 names the chunk loaded from source in
// its syntax errors (luaO_chunkid): "=name" as name, "@file" as file
// (its end when long), and code as [string "its first line"], cut with
// "..." where it does not fit.
func SyntaxChunkID(source string) string { return chunkID(source, idSizeLexer) }

// RuntimeChunkID is the same name in runtime errors, where Lua gives it
// less room (LUA_IDSIZE): what to give gopher-lua as a chunk's name, since
// it puts that name as it is before its messages.
func RuntimeChunkID(source string) string { return chunkID(source, idSizeRuntime) }

// chunkID is luaO_chunkid with a buffer of size bytes. Lua handles the
// source as a C string: it ends at the first NUL.
func chunkID(source string, size int) string {
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	if rest, ok := strings.CutPrefix(source, "="); ok {
		if len(rest) > size-1 {
			rest = rest[:size-1]
		}
		return rest
	}
	if rest, ok := strings.CutPrefix(source, "@"); ok {
		room := size - len(" '...' ") - 1
		if len(rest) > room {
			return "..." + rest[len(rest)-room:]
		}
		return rest
	}
	room := size - len(" [string \"...\"] ") - 1
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	n = min(n, room)
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}
