package scripting

// The memory of a script: what one run may hold (lua-memory-limit). Lua
// in Redis allocates until the machine says no, and then fails with "not
// enough memory"; in redamo the machine saying no is the end of the
// process (Go cannot refuse an allocation), so each run has a budget and
// fails as Lua does when it would pass it.
//
// gopher-lua gives no allocator to count with. The run counts, before
// they are made, what the script's code makes: concatenations and table
// slots (seen between instructions, lua51.Growth), and the strings and
// tables of the functions that make them (string.rep, table.concat,
// gsub, the libraries' encoders and decoders, redis.call's replies,
// coroutines), each an upper bound. That count passes what the script
// holds as soon as it drops what it made; so when it reaches the limit,
// the garbage is collected and the count starts again from what the
// instance's heap grew by since the run began: only a script holding
// that much fails (or half as much again, at most, between two
// collections).

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"

	"github.com/redamo/redamo/internal/lua51"
)

// msgNotEnoughMemory is Lua's error when its allocator fails (LUA_ERRMEM):
// pcall returns it, and a script it ends replies msgScriptMemory.
const (
	msgNotEnoughMemory = "not enough memory"
	msgScriptMemory    = "ERR Error running script %s, not enough memory"
)

// Costs counted for what gopher-lua makes that has no length: a table's
// slot, a table, a coroutine (its registry and call frames, as the main
// state's options make them).
const (
	luaSlotBytes      = 32
	luaTableBytes     = 128
	luaCoroutineBytes = 128 << 10
	// luaDecodeFactor bounds the memory a decoder (cjson, cmsgpack) makes
	// per byte of input: a table of two bytes ("[]") at most.
	luaDecodeFactor = luaTableBytes / 2
)

// luaMemory is the budget of one run.
type luaMemory struct {
	limit int64
	// counted is what the run has made since the count last started
	// (its start, or a collection).
	counted int64
	// next is the count at which the garbage is collected and the count
	// starts again.
	next int64
	// heapAtStart is the instance's live heap when the run began.
	heapAtStart int64
	// refused is set when an allocation was refused and its error not
	// yet seen by a handler, pcall or the reply (which then word it as
	// Lua does, with no position).
	refused bool
}

func newLuaMemory(limit int64) *luaMemory {
	return &luaMemory{limit: limit, next: limit, heapAtStart: liveHeap()}
}

// liveHeap is the live heap as of the last garbage collection.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// allow counts n more bytes, reporting false (and counting nothing) when
// the run would hold more than its limit.
func (m *luaMemory) allow(n int64) bool {
	if m == nil || m.limit <= 0 || n <= 0 {
		return true
	}
	if n > m.limit {
		m.refused = true
		return false
	}
	if m.counted+n > m.next {
		runtime.GC()
		m.counted = max(liveHeap()-m.heapAtStart, 0)
		if m.counted+n > m.limit {
			m.refused = true
			return false
		}
		// A run holding close to its limit would collect at every step:
		// the next collection waits for half the limit more at least,
		// so a run may hold up to half as much again between two.
		m.next = max(m.limit, m.counted+m.limit/2)
	}
	m.counted += n
	return true
}

// charge counts n bytes the Go function running in L is about to make,
// raising Lua's memory error, which has no position, when the run may not.
func (m *luaMemory) charge(L *lua.LState, n int64) {
	if !m.allow(n) {
		L.Error(lua.LString(msgNotEnoughMemory), 0)
	}
}

// errorValue is what a handler sees of the error v: Lua's memory error as
// Lua words it when the run refused memory (gopher-lua raises the one a
// hook refuses with a position).
func (m *luaMemory) errorValue(v lua.LValue) lua.LValue {
	if m != nil && m.refused {
		m.refused = false
		return lua.LString(msgNotEnoughMemory)
	}
	return v
}

// errNotEnoughMemory ends an instruction whose growth the run refused.
var errNotEnoughMemory = errors.New(msgNotEnoughMemory)

// closedChan is a channel that is closed: a Done that fires at once.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// memoryContext is the context a state runs in: its parent's (the time
// limit, SCRIPT KILL), and, since gopher-lua asks it whether to stop
// before each instruction, the place the instruction's growth is counted.
type memoryContext struct {
	context.Context
	L   *lua.LState
	mem *luaMemory
	// stopped: Done fired for memory; Err says so, once.
	stopped atomic.Bool
}

func (c *memoryContext) Done() <-chan struct{} {
	if !c.mem.allow(lua51.Growth(c.L, luaSlotBytes)) {
		c.stopped.Store(true)
		return closedChan
	}
	return c.Context.Done()
}

func (c *memoryContext) Err() error {
	if c.stopped.CompareAndSwap(true, false) {
		return errNotEnoughMemory
	}
	return c.Context.Err()
}

// setMemoryContext makes L (the run's state or a coroutine of it) run in
// ctx and count its growth against mem.
func setMemoryContext(L *lua.LState, ctx context.Context, mem *luaMemory) {
	L.SetContext(&memoryContext{Context: ctx, L: L, mem: mem})
}
