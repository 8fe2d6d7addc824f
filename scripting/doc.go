// Package scripting runs Lua in redamo: EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO and SCRIPT (scripting.go), FUNCTION and FCALL (functions.go,
// functions_dump.go), the Lua bridge (lua.go: the sandbox, redis.call and
// redis.pcall, Redis's conversions between replies and Lua values), a
// run's memory budget (luamem.go), and the fast paths that run a lock
// library's compare-and-act script as one conditional request
// (scriptfast.go recognizes them; model/scriptcas.go makes the requests).
//
// Dependencies: scripting imports commands, never the other way round.
// commands owns the command table and the dispatcher, and a script runs
// commands (redis.call) through them, so scripting sits above commands,
// beside resp (the other direction would have scripting define
// interfaces of its own for the context, the writer and the table it
// runs commands through). commands' NewTable does not know scripting:
// Register adds the scripting rows to a table explicitly, where a
// server's table is built (cmd/redamo, resp.New's default,
// internal/testserver, the bench and fuzz tables), and commands exports the little a script needs
// (Ctx.CallFromScript, the rows and their flags, the Writer and the
// recorded Reply: commands/scripting_api.go). Scripting never reaches the
// store itself: script bodies, libraries and the fast paths' requests are
// model's (model/scripts.go, functions.go, scriptcas.go), and a script
// runs as one model.Unit, as EXEC does.
package scripting

import "github.com/redamo/redamo/commands"

// Register adds the scripting commands to t. The rows share one engine:
// the process's compiled scripts and libraries and its running scripts
// (SCRIPT KILL), so a table serves one server, as every table does.
func Register(t *commands.Table) {
	e := &engine{}
	e.registerScripting(t)
	e.registerFunctions(t)
}

// engine is a server's scripting state: nothing correctness depends on
// (script bodies and libraries are in the table), only what this process
// compiled and what it runs now.
type engine struct {
	// scripts are the scripts this process compiled.
	scripts scriptCache
	// functions are the function libraries this process compiled.
	functions functionCache
	// running are the scripts and functions running now (SCRIPT KILL).
	running runningScripts
}
