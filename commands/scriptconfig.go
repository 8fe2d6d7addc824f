package commands

// The scripting settings CONFIG reads and changes (busy-reply-threshold,
// lua-memory-limit). They are the server's, as every CONFIG setting is;
// the scripting package, which runs scripts, reads them here.

import "time"

// DefaultScriptTimeLimit is how long a script may run unless CONFIG SET
// busy-reply-threshold says otherwise (Redis's default for it).
const DefaultScriptTimeLimit = 5 * time.Second

// ScriptTimeLimit is how long a script may run before it is stopped (0:
// no limit): CONFIG's busy-reply-threshold. Redis answers other clients
// BUSY past it and lets SCRIPT KILL stop the script; here a script blocks
// no other client, so it is stopped instead, with nothing written (SCRIPT
// KILL stops one sooner).
func (s *Server) ScriptTimeLimit() time.Duration {
	if p := s.scriptLimit.Load(); p != nil {
		return *p
	}
	return DefaultScriptTimeLimit
}

// SetScriptTimeLimit changes ScriptTimeLimit.
func (s *Server) SetScriptTimeLimit(d time.Duration) { s.scriptLimit.Store(&d) }

// DefaultLuaMemoryLimit is lua-memory-limit unless CONFIG SET changes it:
// far above what a script doing Redis work makes, far below what takes an
// instance down.
const DefaultLuaMemoryLimit = 256 << 20

// LuaMemoryLimit is the most a script may hold (0: no limit).
func (s *Server) LuaMemoryLimit() int64 {
	if p := s.luaMemLimit.Load(); p != nil {
		return *p
	}
	return DefaultLuaMemoryLimit
}

// SetLuaMemoryLimit changes LuaMemoryLimit.
func (s *Server) SetLuaMemoryLimit(n int64) { s.luaMemLimit.Store(&n) }
