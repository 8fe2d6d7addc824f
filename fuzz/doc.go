// Package fuzz is redamo's whole-surface fuzzer. It draws commands from
// redamo's own command table (arity, flags and the argument trees COMMAND
// DOCS reports), fills their arguments with plausible and hostile values
// (numbers at the edges, binary and empty strings, keys of every type,
// options repeated or contradictory, Lua scripts from a small grammar),
// and sends them to a redamo process over RESP2 and RESP3, one at a
// time, pipelined and inside MULTI/EXEC, on the memory store and on
// DynamoDB Local.
//
// Its oracle: the process never dies, every reply is well-formed RESP
// (read strictly), one reply per command, nothing blocks past a deadline,
// the keyspace reads back consistently afterwards, no panic was recovered
// (INFO redamo recovered_panics), and where a real Redis 7.0 answers an
// error redamo answers an error of the same class.
//
// It lives in a package of its own, apart from compat (which diffs case
// files byte for byte) and integration (several processes on one table,
// DynamoDB only): it runs a built binary, since a Go fatal error cannot be
// caught in-process, on every store, and its long runs (make fuzz) are not
// part of either suite. Everything is in its tests: `go test ./fuzz` is the
// short run with fixed seeds; REDAMO_FUZZ_DURATION makes it a long one
// (scripts/fuzz.sh).
package fuzz
