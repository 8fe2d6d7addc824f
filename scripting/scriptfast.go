package scripting

// Fast paths of scripts: a script whose whole effect is one conditional
// write of one key runs as that one conditional DynamoDB request, without
// reading the key first. The script is recognized by what its syntax tree
// does, not by its text, so re-indented or renamed variants are fast too.
//
// The shape recognized is the compare-and-act of lock libraries (redsync's
// release and extend, Redlock's in Redis's documentation):
//
//	[local v = redis.call('GET', KEYS[1])]
//	if <the GET, or v> == ARGV[t] then
//	    return redis.call('DEL' | 'UNLINK', KEYS[1])
//	    -- or redis.call('PEXPIRE', KEYS[1], ARGV[m])
//	[elseif <the GET, or v> == false then return M]
//	else return N end
//
// node-redlock's acquire, extend and release, loops over KEYS, are the
// same with one key (recognizeKeysLoop). Redisson's RLock renewal (its
// watchdog's script, sent every 10 s per held lock) is the same on a
// hash field (recognizeHashExtend):
//
//	if redis.call('hexists', KEYS[1], ARGV[f]) == 1 then
//	    redis.call('pexpire', KEYS[1], ARGV[m]); return N
//	end; return M
//
// It runs as DeleteItem (UpdateItem of the expiry, PutItem of a SET)
// conditioned on the key holding the string ARGV[t] (on nothing being
// there, for an acquire); when the condition fails, the item it hands
// back decides between M (absent) and N (another value). Anything the fast
// path cannot decide exactly (a value of another type, which makes GET
// fail; an expiry PEXPIRE or SET would refuse) runs the script itself.
// This file recognizes the scripts and replies; the requests are model's
// (model/scriptcas.go).

import (
	"math"
	"strings"

	"github.com/yuin/gopher-lua/ast"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// casAct is what a compare-and-act script does to the key.
type casAct uint8

const (
	casDelete casAct = iota + 1
	casPExpire
	// casSetPX: SET key ARGV[tok] PX ARGV[ms] when it holds ARGV[tok].
	casSetPX
	// casSetNXPX: SET key ARGV[tok] PX ARGV[ms] when nothing is there.
	casSetNXPX
	// casHashPExpire: PEXPIRE key ARGV[ms] when the hash at key has the
	// field ARGV[tok].
	casHashPExpire
	// casHashLock: HINCRBY key ARGV[tok] 1 and PEXPIRE key ARGV[ms] when
	// there is no key or its hash has the field ARGV[tok]; else PTTL.
	casHashLock
	// casHashUnlock: HINCRBY key ARGV[tok] -1, then DEL key when that
	// leaves nothing, PEXPIRE key ARGV[ms] otherwise; nil without the field.
	casHashUnlock
)

// casScript is a recognized compare-and-act script.
type casScript struct {
	act casAct
	// tok and ms are 1-based ARGV indexes: the value compared and
	// PEXPIRE's milliseconds.
	tok, ms int
	// onMissing and onOther are the replies when the key holds no string
	// (GET returned false) and another value; onHit the reply of
	// casHashPExpire's write (the others reply 1, as the command does).
	onMissing, onOther, onHit int64
	// perKey: the script loops over KEYS (node-redlock's); with exactly
	// one key it is this one write.
	perKey bool
}

// recognizeCAS returns the compare-and-act a script's statements do, nil
// when they do anything else.
func recognizeCAS(chunk []ast.Stmt) *casScript {
	if cas := recognizeKeysLoop(chunk); cas != nil {
		return cas
	}
	if cas := recognizeHashExtend(chunk); cas != nil {
		return cas
	}
	if cas := recognizeHashLock(chunk); cas != nil {
		return cas
	}
	if cas := recognizeHashUnlock(chunk); cas != nil {
		return cas
	}
	local := ""
	if len(chunk) == 2 {
		la, ok := chunk[0].(*ast.LocalAssignStmt)
		if !ok || len(la.Names) != 1 || len(la.Exprs) != 1 || !isGetKey1(la.Exprs[0]) {
			return nil
		}
		local, chunk = la.Names[0], chunk[1:]
	}
	if len(chunk) != 1 {
		return nil
	}
	ifs, ok := chunk[0].(*ast.IfStmt)
	if !ok {
		return nil
	}
	value := func(e ast.Expr) bool {
		if local != "" {
			id, ok := e.(*ast.IdentExpr)
			return ok && id.Value == local
		}
		return isGetKey1(e)
	}
	cas := &casScript{}
	if cas.tok = comparedArg(ifs.Condition, value); cas.tok == 0 {
		return nil
	}
	if !cas.readAct(ifs.Then) {
		return nil
	}
	rest := ifs.Else
	if len(rest) == 1 {
		if elif, ok := rest[0].(*ast.IfStmt); ok {
			rel, ok := elif.Condition.(*ast.RelationalOpExpr)
			if !ok || rel.Operator != "==" || !(value(rel.Lhs) && isFalse(rel.Rhs) || isFalse(rel.Lhs) && value(rel.Rhs)) {
				return nil
			}
			if cas.onMissing, ok = returnsNumber(elif.Then); !ok {
				return nil
			}
			if cas.onOther, ok = returnsNumber(elif.Else); !ok {
				return nil
			}
			return cas
		}
	}
	if cas.onOther, ok = returnsNumber(rest); !ok {
		return nil
	}
	cas.onMissing = cas.onOther
	return cas
}

// readAct reads the then-branch: the return of DEL/UNLINK/PEXPIRE of KEYS[1].
func (cas *casScript) readAct(then []ast.Stmt) bool {
	if len(then) != 1 {
		return false
	}
	ret, ok := then[0].(*ast.ReturnStmt)
	if !ok || len(ret.Exprs) != 1 {
		return false
	}
	name, args, ok := redisCallOf(ret.Exprs[0])
	if !ok || len(args) == 0 || !isArrayItem(args[0], "KEYS", 1) {
		return false
	}
	switch {
	case (strings.EqualFold(name, "del") || strings.EqualFold(name, "unlink")) && len(args) == 1:
		cas.act = casDelete
	case strings.EqualFold(name, "pexpire") && len(args) == 2:
		cas.act = casPExpire
		if cas.ms = argvIndex(args[1]); cas.ms == 0 {
			return false
		}
	default:
		return false
	}
	return true
}

// comparedArg is t when cond is `<value> == ARGV[t]` (either order).
func comparedArg(cond ast.Expr, value func(ast.Expr) bool) int {
	rel, ok := cond.(*ast.RelationalOpExpr)
	if !ok || rel.Operator != "==" {
		return 0
	}
	switch {
	case value(rel.Lhs):
		return argvIndex(rel.Rhs)
	case value(rel.Rhs):
		return argvIndex(rel.Lhs)
	}
	return 0
}

// redisCallOf returns the command name and arguments of redis.call(...).
func redisCallOf(e ast.Expr) (string, []ast.Expr, bool) {
	call, ok := e.(*ast.FuncCallExpr)
	if !ok || call.Receiver != nil || len(call.Args) == 0 {
		return "", nil, false
	}
	fn, ok := call.Func.(*ast.AttrGetExpr)
	if !ok {
		return "", nil, false
	}
	obj, ok1 := fn.Object.(*ast.IdentExpr)
	key, ok2 := fn.Key.(*ast.StringExpr)
	name, ok3 := call.Args[0].(*ast.StringExpr)
	if !ok1 || !ok2 || !ok3 || obj.Value != "redis" || key.Value != "call" {
		return "", nil, false
	}
	return name.Value, call.Args[1:], true
}

// isGetKey1 reports whether e is redis.call('GET', KEYS[1]).
func isGetKey1(e ast.Expr) bool {
	name, args, ok := redisCallOf(e)
	return ok && strings.EqualFold(name, "get") && len(args) == 1 && isArrayItem(args[0], "KEYS", 1)
}

// isArrayItem reports whether e is table[i] for a global table.
func isArrayItem(e ast.Expr, table string, i int) bool {
	return arrayIndex(e, table) == i
}

func argvIndex(e ast.Expr) int { return arrayIndex(e, "ARGV") }

// arrayIndex is i when e is table[i] (i >= 1), 0 otherwise.
func arrayIndex(e ast.Expr, table string) int {
	g, ok := e.(*ast.AttrGetExpr)
	if !ok {
		return 0
	}
	obj, ok := g.Object.(*ast.IdentExpr)
	if !ok || obj.Value != table {
		return 0
	}
	n, ok := g.Key.(*ast.NumberExpr)
	if !ok {
		return 0
	}
	i, ok := model.String2ll([]byte(n.Value))
	if !ok || i < 1 || i > math.MaxInt32 {
		return 0
	}
	return int(i)
}

func isFalse(e ast.Expr) bool {
	_, ok := e.(*ast.FalseExpr)
	return ok
}

// returnsNumber reads a branch that is `return <integer>`.
func returnsNumber(stmts []ast.Stmt) (int64, bool) {
	if len(stmts) != 1 {
		return 0, false
	}
	ret, ok := stmts[0].(*ast.ReturnStmt)
	if !ok || len(ret.Exprs) != 1 {
		return 0, false
	}
	e, neg := ret.Exprs[0], false
	if m, ok := e.(*ast.UnaryMinusOpExpr); ok {
		e, neg = m.Expr, true
	}
	n, ok := e.(*ast.NumberExpr)
	if !ok {
		return 0, false
	}
	v, ok := model.String2ll([]byte(n.Value))
	if !ok {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// recognizeKeysLoop recognizes node-redlock's scripts, which loop over
// KEYS and, with one key, come down to one conditional write:
//
//	release: local n = 0; for _, k in ipairs(KEYS) do
//	           if redis.call('get', k) == ARGV[t] then redis.pcall('del', k); n = n + 1 end
//	         end; return n
//	extend:  for _, k in ipairs(KEYS) do if redis.call('get', k) ~= ARGV[t] then return 0 end end
//	         for _, k in ipairs(KEYS) do redis.call('set', k, ARGV[t], 'PX', ARGV[m]) end
//	         return #KEYS
//	acquire: the same with `redis.call('exists', k) == 1` as the refusal.
func recognizeKeysLoop(chunk []ast.Stmt) *casScript {
	if len(chunk) == 3 {
		if cas := recognizeRelease(chunk); cas != nil {
			return cas
		}
		return recognizeSetLoop(chunk)
	}
	return nil
}

// recognizeRelease reads node-redlock's release.
func recognizeRelease(chunk []ast.Stmt) *casScript {
	la, ok := chunk[0].(*ast.LocalAssignStmt)
	if !ok || len(la.Names) != 1 || len(la.Exprs) != 1 || !isNumber(la.Exprs[0], "0") {
		return nil
	}
	count := la.Names[0]
	key, body, ok := loopOverKeys(chunk[1])
	if !ok || len(body) != 1 {
		return nil
	}
	ifs, ok := body[0].(*ast.IfStmt)
	if !ok || len(ifs.Else) != 0 || len(ifs.Then) != 2 {
		return nil
	}
	tok := comparedArg(ifs.Condition, func(e ast.Expr) bool { return isCallOnKey(e, "get", key) })
	del, ok := ifs.Then[0].(*ast.FuncCallStmt)
	if tok == 0 || !ok || !isCallOnKey(del.Expr, "del", key) {
		return nil
	}
	inc, ok := ifs.Then[1].(*ast.AssignStmt)
	if !ok || len(inc.Lhs) != 1 || len(inc.Rhs) != 1 || !isIdent(inc.Lhs[0], count) {
		return nil
	}
	add, ok := inc.Rhs[0].(*ast.ArithmeticOpExpr)
	if !ok || add.Operator != "+" || !isIdent(add.Lhs, count) || !isNumber(add.Rhs, "1") {
		return nil
	}
	ret, ok := chunk[2].(*ast.ReturnStmt)
	if !ok || len(ret.Exprs) != 1 || !isIdent(ret.Exprs[0], count) {
		return nil
	}
	return &casScript{act: casDelete, tok: tok, perKey: true}
}

// recognizeSetLoop reads node-redlock's acquire and extend.
func recognizeSetLoop(chunk []ast.Stmt) *casScript {
	key, body, ok := loopOverKeys(chunk[0])
	if !ok || len(body) != 1 {
		return nil
	}
	ifs, ok := body[0].(*ast.IfStmt)
	if !ok || len(ifs.Else) != 0 {
		return nil
	}
	if n, ok := returnsNumber(ifs.Then); !ok || n != 0 {
		return nil
	}
	cas := &casScript{perKey: true}
	rel, ok := ifs.Condition.(*ast.RelationalOpExpr)
	switch {
	case !ok:
		return nil
	case rel.Operator == "~=":
		cas.act = casSetPX
		eq := *rel
		eq.Operator = "=="
		if cas.tok = comparedArg(&eq, func(e ast.Expr) bool { return isCallOnKey(e, "get", key) }); cas.tok == 0 {
			return nil
		}
	case rel.Operator == "==" && isCallOnKey(rel.Lhs, "exists", key) && isNumber(rel.Rhs, "1"):
		cas.act = casSetNXPX
	default:
		return nil
	}
	key, body, ok = loopOverKeys(chunk[1])
	if !ok || len(body) != 1 {
		return nil
	}
	set, ok := body[0].(*ast.FuncCallStmt)
	if !ok {
		return nil
	}
	name, args, ok := redisCallOf(set.Expr)
	if !ok || !strings.EqualFold(name, "set") || len(args) != 4 || !isIdent(args[0], key) {
		return nil
	}
	px, ok := args[2].(*ast.StringExpr)
	val, ms := argvIndex(args[1]), argvIndex(args[3])
	if !ok || !strings.EqualFold(px.Value, "px") || val == 0 || ms == 0 || (cas.act == casSetPX && val != cas.tok) {
		return nil
	}
	cas.tok, cas.ms = val, ms
	ret, ok := chunk[2].(*ast.ReturnStmt)
	if !ok || len(ret.Exprs) != 1 {
		return nil
	}
	n, ok := ret.Exprs[0].(*ast.UnaryLenOpExpr)
	if !ok || !isIdent(n.Expr, "KEYS") {
		return nil
	}
	return cas
}

// recognizeHashExtend reads Redisson's renewal: if the hash at KEYS[1] has
// the field ARGV[f], PEXPIRE it by ARGV[m] and return N, else return M.
func recognizeHashExtend(chunk []ast.Stmt) *casScript {
	if len(chunk) != 2 {
		return nil
	}
	ifs, ok := chunk[0].(*ast.IfStmt)
	if !ok || len(ifs.Else) != 0 || len(ifs.Then) != 2 {
		return nil
	}
	cas := &casScript{act: casHashPExpire, tok: fieldTest(ifs.Condition, "1"), ms: pexpireOf(ifs.Then[0])}
	if cas.tok == 0 || cas.ms == 0 {
		return nil
	}
	if cas.onHit, ok = returnsNumber(ifs.Then[1:]); !ok {
		return nil
	}
	if cas.onMissing, ok = returnsNumber(chunk[1:]); !ok {
		return nil
	}
	cas.onOther = cas.onMissing
	return cas
}

// recognizeHashLock reads Redisson's RLock acquire (see the file comment).
func recognizeHashLock(chunk []ast.Stmt) *casScript {
	if len(chunk) != 2 {
		return nil
	}
	ifs, ok := chunk[0].(*ast.IfStmt)
	if !ok || len(ifs.Else) != 0 || len(ifs.Then) != 3 || !returnsNil(ifs.Then[2:]) {
		return nil
	}
	or, ok := ifs.Condition.(*ast.LogicalOpExpr)
	if !ok || or.Operator != "or" {
		return nil
	}
	free, ok := or.Lhs.(*ast.RelationalOpExpr)
	if !ok || free.Operator != "==" || !isNumber(free.Rhs, "0") {
		return nil
	}
	if args, ok := keyCall(free.Lhs, "exists"); !ok || len(args) != 0 {
		return nil
	}
	cas := &casScript{act: casHashLock, tok: fieldTest(or.Rhs, "1"), ms: pexpireOf(ifs.Then[1])}
	if cas.tok == 0 || cas.ms == 0 || hincrbyOf(callExpr(ifs.Then[0]), "1") != cas.tok {
		return nil
	}
	last, ok := chunk[1].(*ast.ReturnStmt)
	if !ok || len(last.Exprs) != 1 {
		return nil
	}
	if args, ok := keyCall(last.Exprs[0], "pttl"); !ok || len(args) != 0 {
		return nil
	}
	return cas
}

// recognizeHashUnlock reads Redisson's RLock release:
//
//	if redis.call('hexists', KEYS[1], ARGV[f]) == 0 then return nil end
//	local n = redis.call('hincrby', KEYS[1], ARGV[f], -1)
//	if n > 0 then redis.call('pexpire', KEYS[1], ARGV[m]); return N0
//	else redis.call('del', KEYS[1]); [redis.call('publish', ...)]; return N1 end
//	return nil
//
// The PUBLISH has no effect to keep: redamo has no subscribers.
func recognizeHashUnlock(chunk []ast.Stmt) *casScript {
	if len(chunk) != 4 || !returnsNil(chunk[3:]) {
		return nil
	}
	// 1: no field, nil.
	guard, ok := chunk[0].(*ast.IfStmt)
	if !ok || len(guard.Else) != 0 || !returnsNil(guard.Then) {
		return nil
	}
	cas := &casScript{act: casHashUnlock, tok: fieldTest(guard.Condition, "0")}
	if cas.tok == 0 {
		return nil
	}
	// 2: the decrement.
	la, ok := chunk[1].(*ast.LocalAssignStmt)
	if !ok || len(la.Names) != 1 || len(la.Exprs) != 1 || hincrbyOf(la.Exprs[0], "-1") != cas.tok {
		return nil
	}
	// 3: keep it (PEXPIRE) or delete it.
	ifs, ok := chunk[2].(*ast.IfStmt)
	if !ok || len(ifs.Then) != 2 || (len(ifs.Else) != 2 && len(ifs.Else) != 3) {
		return nil
	}
	rel, ok := ifs.Condition.(*ast.RelationalOpExpr)
	if !ok || rel.Operator != ">" || !isIdent(rel.Lhs, la.Names[0]) || !isNumber(rel.Rhs, "0") {
		return nil
	}
	if cas.ms = pexpireOf(ifs.Then[0]); cas.ms == 0 {
		return nil
	}
	if cas.onOther, ok = returnsNumber(ifs.Then[1:]); !ok {
		return nil
	}
	if args, ok := keyCall(callExpr(ifs.Else[0]), "del"); !ok || len(args) != 0 {
		return nil
	}
	if len(ifs.Else) == 3 {
		if name, _, ok := redisCallOf(callExpr(ifs.Else[1])); !ok || !strings.EqualFold(name, "publish") {
			return nil
		}
	}
	if cas.onHit, ok = returnsNumber(ifs.Else[len(ifs.Else)-1:]); !ok {
		return nil
	}
	return cas
}

// returnsNil reports whether stmts are `return nil`.
func returnsNil(stmts []ast.Stmt) bool {
	if len(stmts) != 1 {
		return false
	}
	ret, ok := stmts[0].(*ast.ReturnStmt)
	if !ok || len(ret.Exprs) != 1 {
		return false
	}
	_, isNil := ret.Exprs[0].(*ast.NilExpr)
	return isNil
}

// keyCall returns the arguments after KEYS[1] when e is
// redis.call(cmd, KEYS[1], ...).
func keyCall(e ast.Expr, cmd string) ([]ast.Expr, bool) {
	name, args, ok := redisCallOf(e)
	if !ok || !strings.EqualFold(name, cmd) || len(args) == 0 || !isArrayItem(args[0], "KEYS", 1) {
		return nil, false
	}
	return args[1:], true
}

// fieldTest is f when cond is redis.call('hexists', KEYS[1], ARGV[f]) ==
// n (either order), 0 otherwise.
func fieldTest(cond ast.Expr, n string) int {
	rel, ok := cond.(*ast.RelationalOpExpr)
	if !ok || rel.Operator != "==" {
		return 0
	}
	call, num := rel.Lhs, rel.Rhs
	if isNumber(call, n) {
		call, num = num, call
	}
	args, ok := keyCall(call, "hexists")
	if !ok || len(args) != 1 || !isNumber(num, n) {
		return 0
	}
	return argvIndex(args[0])
}

// callExpr is the call of a call statement, nil for another statement.
func callExpr(st ast.Stmt) ast.Expr {
	if call, ok := st.(*ast.FuncCallStmt); ok {
		return call.Expr
	}
	return nil
}

// pexpireOf is m when st is redis.call('pexpire', KEYS[1], ARGV[m]), 0
// otherwise.
func pexpireOf(st ast.Stmt) int {
	args, ok := keyCall(callExpr(st), "pexpire")
	if !ok || len(args) != 1 {
		return 0
	}
	return argvIndex(args[0])
}

// hincrbyOf is f when e is redis.call('hincrby', KEYS[1], ARGV[f], by),
// 0 otherwise.
func hincrbyOf(e ast.Expr, by string) int {
	args, ok := keyCall(e, "hincrby")
	if !ok || len(args) != 2 {
		return 0
	}
	if m, neg := args[1].(*ast.UnaryMinusOpExpr); neg {
		if by[0] != '-' || !isNumber(m.Expr, by[1:]) {
			return 0
		}
	} else if !isNumber(args[1], by) {
		return 0
	}
	return argvIndex(args[0])
}

// loopOverKeys reads `for _, key in ipairs(KEYS) do body end`.
func loopOverKeys(st ast.Stmt) (key string, body []ast.Stmt, ok bool) {
	loop, ok := st.(*ast.GenericForStmt)
	if !ok || len(loop.Names) != 2 || len(loop.Exprs) != 1 {
		return "", nil, false
	}
	call, ok := loop.Exprs[0].(*ast.FuncCallExpr)
	if !ok || call.Receiver != nil || !isIdent(call.Func, "ipairs") || len(call.Args) != 1 || !isIdent(call.Args[0], "KEYS") {
		return "", nil, false
	}
	return loop.Names[1], loop.Stmts, true
}

// isCallOnKey reports whether e is redis.call (or redis.pcall) of cmd on
// the variable key alone.
func isCallOnKey(e ast.Expr, cmd, key string) bool {
	call, ok := e.(*ast.FuncCallExpr)
	if !ok || call.Receiver != nil || len(call.Args) != 2 {
		return false
	}
	fn, ok := call.Func.(*ast.AttrGetExpr)
	if !ok || !isIdent(fn.Object, "redis") {
		return false
	}
	method, ok1 := fn.Key.(*ast.StringExpr)
	name, ok2 := call.Args[0].(*ast.StringExpr)
	return ok1 && ok2 && (method.Value == "call" || method.Value == "pcall") &&
		strings.EqualFold(name.Value, cmd) && isIdent(call.Args[1], key)
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && id.Value == name
}

func isNumber(e ast.Expr, n string) bool {
	num, ok := e.(*ast.NumberExpr)
	return ok && num.Value == n
}

// run tries the fast path (model.CompareAndAct, HashLock, HashUnlock);
// done is false when the script must run itself (nothing was written
// then).
func (cas *casScript) run(c *commands.Ctx, keys, argv [][]byte) (done bool) {
	if len(keys) == 0 || (cas.perKey && len(keys) != 1) || cas.tok > len(argv) || cas.ms > len(argv) {
		return false
	}
	key, token := keys[0], argv[cas.tok-1]
	var ms int64
	if cas.act != casDelete {
		var ok bool
		// PEXPIRE's and SET's own refusals of the expiry are the
		// script's to give.
		if ms, ok = model.String2ll(argv[cas.ms-1]); !ok {
			return false
		}
	}
	var out model.CASOutcome
	var err error
	switch cas.act {
	case casHashLock:
		var pttl int64
		out, pttl, err = model.HashLock(c, c.Srv.Inline(model.TypeHash), key, token, ms)
		switch {
		case err != nil:
			c.Fail(err)
		case out == model.CASDone:
			c.Notify(events.Hash, "hincrby", key)
			c.Notify(events.Generic, "expire", key)
			c.W.Nil()
		case out == model.CASOther:
			c.W.Int(pttl)
		}
		return err != nil || out != model.CASUndecided
	case casHashUnlock:
		out, err = model.HashUnlock(c, key, token, ms)
		switch {
		case err != nil:
			c.Fail(err)
		case out == model.CASDone:
			c.Notify(events.Hash, "hincrby", key)
			c.Notify(events.Generic, "del", key)
			c.W.Int(cas.onHit)
		case out == model.CASKept:
			c.Notify(events.Hash, "hincrby", key)
			c.Notify(events.Generic, "expire", key)
			c.W.Int(cas.onOther)
		case out == model.CASMissing:
			c.W.Nil()
		}
		return err != nil || out != model.CASUndecided
	}
	out, err = model.CompareAndAct(c, casWrites[cas.act], key, token, ms)
	if err == nil && out == model.CASDone {
		cas.notify(c, key)
	}
	switch {
	case err != nil:
		c.Fail(err)
	case out == model.CASDone && cas.act == casHashPExpire:
		c.W.Int(cas.onHit)
	case out == model.CASDone:
		c.W.Int(1)
	case out == model.CASMissing:
		c.W.Int(cas.onMissing)
	case out == model.CASOther && cas.act == casSetNXPX:
		c.W.Int(0) // EXISTS found a key, of whatever type
	case out == model.CASOther:
		c.W.Int(cas.onOther)
	}
	return err != nil || out != model.CASUndecided
}

// notify reports the events of the write the script made, as its
// redis.call would have.
func (cas *casScript) notify(c *commands.Ctx, key []byte) {
	switch cas.act {
	case casDelete:
		c.Notify(events.Generic, "del", key)
	case casPExpire, casHashPExpire:
		c.Notify(events.Generic, "expire", key)
	case casSetNXPX:
		c.KeyCreated(key)
		fallthrough
	case casSetPX:
		c.Notify(events.String, "set", key)
		c.Notify(events.Generic, "expire", key)
	}
}

// casWrites are the acts model.CompareAndAct makes.
var casWrites = map[casAct]model.CASAct{
	casDelete: model.CASDelete, casPExpire: model.CASPExpire, casSetPX: model.CASSetPX,
	casSetNXPX: model.CASSetNXPX, casHashPExpire: model.CASHashPExpire,
}
