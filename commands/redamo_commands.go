package commands

// redamoCommands holds the metadata of the commands redamo reports other
// than redis-server 7.0.15 does (redisCommands): Register takes a
// command's metadata from here first.
//
// CLIENT SETINFO is Redis 7.2's, which clients (go-redis, redis-py) send
// as they connect; redamo answers it as Redis 7.2 does.
var redamoCommands = map[string]*Command{
	"client|setinfo": {
		Arity: 4, Flags: []string{FlagNoScript, FlagLoading, FlagStale}, Categories: []string{"slow", "connection"},
		Summary: "Set client or connection specific info", Since: "7.2.0", Group: "connection", Complexity: "O(1)",
		Args: []Arg{{Name: "attr", Type: "oneof", Args: []Arg{
			{Name: "libname", Type: "string", Token: "LIB-NAME"},
			{Name: "libver", Type: "string", Token: "LIB-VER"},
		}}},
	},
}
