// Package lua51 words the errors of scripts run by gopher-lua as Lua 5.1,
// the Lua of Redis 7.0.15, words them.
//
// gopher-lua runs Lua 5.1 code but says its own things when code fails:
// "attempt to call a non-function object" where Lua says "attempt to call
// local 'f' (a nil value)", "syntax error" where Lua names the token it
// expected. Scripts and clients may match on Redis's text, so redamo gives
// Lua's:
//
//   - Runtime errors: an error function for LState.PCall (Handler) rewords
//     an error while the frames it happened in are still on the stack. It
//     finds the instruction that failed and names the value involved the
//     way Lua's ldebug.c does, by symbolic execution of the function's
//     bytecode (gopher-lua's instruction set is Lua 5.1's, with a few
//     additions). Text rewords what needs no frame.
//   - Syntax errors: Check is a Lua 5.1 parser that only checks: its lexer
//     and recursive descent follow llex.c and lparser.c, and it reports the
//     first error with Lua's message. gopher-lua still compiles the code;
//     Check only words its refusal (Syntax).
//   - SyntaxChunkID and RuntimeChunkID name a chunk in messages as
//     luaO_chunkid does.
//   - Dump writes a function as a Lua 5.1 binary chunk (string.dump).
//
// Where the package cannot be sure of Lua's wording it leaves gopher-lua's.
package lua51
