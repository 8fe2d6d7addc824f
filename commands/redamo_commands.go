package commands

// redamoCommands holds the metadata of the commands redamo reports other
// than redis-server 7.0.15 does (redisCommands): Register takes a
// command's metadata from here first.
//
// CLIENT SETINFO is Redis 7.2's, which clients (go-redis, redis-py) send
// as they connect; redamo answers it as Redis 7.2 does.
//
// CL.THROTTLE is redis-cell's (a module), reported as Redis 7.0 reports
// it with redis-cell loaded: arity -1 (redis-cell counts its arguments
// itself, with its own usage error), flags write and module, group
// "module", a key spec made from its key range (1, 1, 1), since the
// redis-cell release that named it. Redis gives a
// module command no ACL categories; redamo gives the ones Redis derives
// for any command flagged write and not fast, as clients expect some.
var redamoCommands = map[string]*Command{
	"cl.throttle": {
		Arity: -1, Flags: []string{FlagWrite, "module"}, Categories: []string{"write", "slow"},
		FirstKey: 1, LastKey: 1, Step: 1,
		KeySpecs: []KeySpec{{Flags: []string{"RW", "access", "update"}, Index: 1, KeyStep: 1}},
		Summary:  "Applies a quantity to a key's rate limit (redis-cell's generic cell rate algorithm)",
		Since:    "0.2.0", Group: "module", Complexity: "O(1)",
		Args: []Arg{
			{Name: "key", Type: "key"},
			{Name: "max_burst", Type: "integer"},
			{Name: "count_per_period", Type: "integer"},
			{Name: "period", Type: "integer"},
			{Name: "quantity", Type: "integer", Flags: []string{"optional"}},
		},
	},
	"client|setinfo": {
		Arity: 4, Flags: []string{FlagNoScript, FlagLoading, FlagStale}, Categories: []string{"slow", "connection"},
		Summary: "Set client or connection specific info", Since: "7.2.0", Group: "connection", Complexity: "O(1)",
		Args: []Arg{{Name: "attr", Type: "oneof", Args: []Arg{
			{Name: "libname", Type: "string", Token: "LIB-NAME"},
			{Name: "libver", Type: "string", Token: "LIB-VER"},
		}}},
	},
}
