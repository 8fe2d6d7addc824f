package lua51

import (
	"fmt"
	"regexp"
	"strings"
)

// Check parses src as Lua 5.1 does and returns its first syntax error,
// worded as Lua words it ("user_script:1: '=' expected near 'x'"), or nil.
// source is the chunk's name as Lua is given it ("@user_script", or the
// source itself for loadstring): messages start with its ChunkID.
//
// Check builds nothing: it follows lparser.c's grammar and the checks
// that refuse code while parsing (a break outside a loop, '...' outside
// a vararg function, an assignment to a value, an ambiguous call). It
// leaves out the limits Lua meets generating code (more than 200 locals,
// 60 upvalues, 255 registers).
func Check(src, source string) (err error) {
	p := &parser{lx: newLexer(src, SyntaxChunkID(source))}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(errSyntax)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	p.fs = &funcState{vararg: true} // the main chunk is vararg
	p.lx.nextToken()
	p.chunk()
	p.check(tkEOS)
	return nil
}

// Syntax is how Lua 5.1 refuses src, loaded from source, which
// gopher-lua refused with msg: the first error Check finds. Should Check
// find none (gopher-lua refusing code Lua takes), it is msg, reworded
// where gopher-lua and Lua agree on what went wrong.
func Syntax(src, source, msg string) string {
	if err := Check(src, source); err != nil {
		return err.Error()
	}
	chunk := SyntaxChunkID(source)
	if m := gopherNear.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s:%s: unexpected symbol near '%s'", chunk, m[1], m[2])
	}
	if m := gopherEOF.FindStringSubmatch(msg); m != nil {
		what := "unexpected symbol"
		if m[1] == "unterminated string" {
			what = "unfinished string"
		}
		return fmt.Sprintf("%s:%d: %s near '<eof>'", chunk, strings.Count(src, "\n")+1, what)
	}
	return msg
}

// gopher-lua's syntax errors, after its chunk name.
var (
	gopherNear = regexp.MustCompile(`^(?s:.*?) line:(\d+)\(column:\d+\) near '(.*)':\s+(?:syntax|parse) error\s*$`)
	gopherEOF  = regexp.MustCompile(`^(?s:.*?) at EOF:\s+(syntax error|parse error|unterminated string)\s*$`)
)

// maxLevels is LUAI_MAXCCALLS: how deep chunks and expressions may nest
// (counted from 0, as when Redis compiles a script).
const maxLevels = 200

type parser struct {
	lx     *lexer
	fs     *funcState
	levels int
}

// funcState is what the checks need of the function being parsed.
type funcState struct {
	prev   *funcState
	vararg bool
	// blocks are the enclosing blocks, true for a loop (breakable).
	blocks []bool
}

// expKind is what an expression is, as far as the checks care.
type expKind int

const (
	expValue expKind = iota // a value: nothing may be assigned to it
	expVar                  // a local, upvalue, global or indexed variable
	expCall                 // a function call
)

func (p *parser) tok() token { return p.lx.tok }

func (p *parser) next() { p.lx.nextToken() }

func (p *parser) testNext(t token) bool {
	if p.tok() == t {
		p.next()
		return true
	}
	return false
}

func (p *parser) errorExpected(t token) {
	p.lx.syntaxError(fmt.Sprintf("'%s' expected", tokenString(t)))
}

func (p *parser) check(t token) {
	if p.tok() != t {
		p.errorExpected(t)
	}
}

func (p *parser) checkNext(t token) {
	p.check(t)
	p.next()
}

// checkMatch expects what, closing who opened at line where.
func (p *parser) checkMatch(what, who token, where int) {
	if p.testNext(what) {
		return
	}
	if where == p.lx.line {
		p.errorExpected(what)
	}
	p.lx.syntaxError(fmt.Sprintf("'%s' expected (to close '%s' at line %d)", tokenString(what), tokenString(who), where))
}

func (p *parser) checkName() {
	p.check(tkName)
	p.next()
}

func (p *parser) enterLevel() {
	p.levels++
	if p.levels > maxLevels {
		p.lx.fail("chunk has too many syntax levels", 0)
	}
}

func (p *parser) leaveLevel() { p.levels-- }

func (p *parser) enterBlock(breakable bool) { p.fs.blocks = append(p.fs.blocks, breakable) }

func (p *parser) leaveBlock() { p.fs.blocks = p.fs.blocks[:len(p.fs.blocks)-1] }

func blockFollow(t token) bool {
	switch t {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

// chunk -> { stat [';'] }
func (p *parser) chunk() {
	p.enterLevel()
	for last := false; !last && !blockFollow(p.tok()); {
		last = p.statement()
		p.testNext(';')
	}
	p.leaveLevel()
}

func (p *parser) block() {
	p.enterBlock(false)
	p.chunk()
	p.leaveBlock()
}

// statement parses one statement; true for one that must be last
// (return, break).
func (p *parser) statement() bool {
	line := p.lx.line
	switch p.tok() {
	case tkIf:
		p.ifStat(line)
	case tkWhile:
		p.next()
		p.expr()
		p.enterBlock(true)
		p.checkNext(tkDo)
		p.block()
		p.checkMatch(tkEnd, tkWhile, line)
		p.leaveBlock()
	case tkDo:
		p.next()
		p.block()
		p.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		p.forStat(line)
	case tkRepeat:
		p.enterBlock(true)
		p.enterBlock(false)
		p.next()
		p.chunk()
		p.checkMatch(tkUntil, tkRepeat, line)
		p.expr()
		p.leaveBlock()
		p.leaveBlock()
	case tkFunction:
		p.next()
		p.checkName() // funcname -> NAME {'.' NAME} [':' NAME]
		for p.tok() == '.' {
			p.next()
			p.checkName()
		}
		self := p.tok() == ':'
		if self {
			p.next()
			p.checkName()
		}
		p.body(self, line)
	case tkLocal:
		p.next()
		if p.testNext(tkFunction) {
			p.checkName()
			p.body(false, p.lx.line)
			break
		}
		p.checkName()
		for p.testNext(',') {
			p.checkName()
		}
		if p.testNext('=') {
			p.exprList()
		}
	case tkReturn:
		p.next()
		if !blockFollow(p.tok()) && p.tok() != ';' {
			p.exprList()
		}
		return true
	case tkBreak:
		p.next()
		breakable := false
		for _, b := range p.fs.blocks {
			breakable = breakable || b
		}
		if !breakable {
			p.lx.syntaxError("no loop to break")
		}
		return true
	default:
		if kind := p.primaryExp(); kind != expCall {
			p.assignment(kind)
		}
	}
	return false
}

func (p *parser) ifStat(line int) {
	p.testThenBlock()
	for p.tok() == tkElseif {
		p.testThenBlock()
	}
	if p.tok() == tkElse {
		p.next()
		p.block()
	}
	p.checkMatch(tkEnd, tkIf, line)
}

// testThenBlock -> [IF | ELSEIF] cond THEN block
func (p *parser) testThenBlock() {
	p.next()
	p.expr()
	p.checkNext(tkThen)
	p.block()
}

func (p *parser) forStat(line int) {
	p.enterBlock(true)
	p.next()
	p.checkName()
	switch p.tok() {
	case '=':
		p.next()
		p.expr()
		p.checkNext(',')
		p.expr()
		if p.testNext(',') {
			p.expr()
		}
	case ',', tkIn:
		for p.testNext(',') {
			p.checkName()
		}
		p.checkNext(tkIn)
		p.exprList()
	default:
		p.lx.syntaxError("'=' or 'in' expected")
	}
	p.checkNext(tkDo) // forbody -> DO block
	p.enterBlock(false)
	p.block()
	p.leaveBlock()
	p.checkMatch(tkEnd, tkFor, line)
	p.leaveBlock()
}

// assignment -> {',' primaryexp} '=' explist1, after the first target
// of kind (each target must be a variable).
func (p *parser) assignment(kind expKind) {
	for {
		if kind != expVar {
			p.lx.syntaxError("syntax error")
		}
		if !p.testNext(',') {
			break
		}
		kind = p.primaryExp()
	}
	p.checkNext('=')
	p.exprList()
}

// body -> '(' parlist ')' chunk END
func (p *parser) body(self bool, line int) {
	p.fs = &funcState{prev: p.fs}
	p.checkNext('(')
	if p.tok() != ')' {
		for {
			switch p.tok() {
			case tkName:
				p.next()
			case tkDots:
				p.next()
				p.fs.vararg = true
			default:
				p.lx.syntaxError("<name> or '...' expected")
			}
			if p.fs.vararg || !p.testNext(',') {
				break
			}
		}
	}
	p.checkNext(')')
	p.chunk()
	p.checkMatch(tkEnd, tkFunction, line)
	p.fs = p.fs.prev
}

func (p *parser) exprList() {
	p.expr()
	for p.testNext(',') {
		p.expr()
	}
}

func (p *parser) funcArgs() {
	line := p.lx.line
	switch p.tok() {
	case '(':
		if line != p.lx.lastLine {
			p.lx.syntaxError("ambiguous syntax (function call x new statement)")
		}
		p.next()
		if p.tok() != ')' {
			p.exprList()
		}
		p.checkMatch(')', '(', line)
	case '{':
		p.constructor()
	case tkString:
		p.next()
	default:
		p.lx.syntaxError("function arguments expected")
	}
}

// primaryExp -> prefixexp { '.' NAME | '[' exp ']' | ':' NAME funcargs | funcargs }
func (p *parser) primaryExp() expKind {
	var kind expKind
	switch p.tok() {
	case '(':
		line := p.lx.line
		p.next()
		p.expr()
		p.checkMatch(')', '(', line)
		kind = expValue
	case tkName:
		p.next()
		kind = expVar
	default:
		p.lx.syntaxError("unexpected symbol")
	}
	for {
		switch p.tok() {
		case '.':
			p.next()
			p.checkName()
			kind = expVar
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			kind = expVar
		case ':':
			p.next()
			p.checkName()
			p.funcArgs()
			kind = expCall
		case '(', tkString, '{':
			p.funcArgs()
			kind = expCall
		default:
			return kind
		}
	}
}

// simpleExp -> NUMBER | STRING | NIL | true | false | ... | constructor |
// FUNCTION body | primaryexp
func (p *parser) simpleExp() {
	switch p.tok() {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
	case tkDots:
		if !p.fs.vararg {
			p.lx.syntaxError("cannot use '...' outside a vararg function")
		}
	case '{':
		p.constructor()
		return
	case tkFunction:
		p.next()
		p.body(false, p.lx.line)
		return
	default:
		p.primaryExp()
		return
	}
	p.next()
}

// Binary operators' priorities (left, right), and the unary operators'.
var priority = map[token][2]int{
	'+': {6, 6}, '-': {6, 6}, '*': {7, 7}, '/': {7, 7}, '%': {7, 7},
	'^': {10, 9}, tkConcat: {5, 4},
	tkEq: {3, 3}, tkNe: {3, 3}, '<': {3, 3}, tkLe: {3, 3}, '>': {3, 3}, tkGe: {3, 3},
	tkAnd: {2, 2}, tkOr: {1, 1},
}

const unaryPriority = 8

func (p *parser) expr() { p.subExpr(0) }

// subExpr -> (simpleexp | unop subexpr) { binop subexpr }, for binary
// operators binding tighter than limit; it returns the first operator
// it leaves.
func (p *parser) subExpr(limit int) token {
	p.enterLevel()
	if t := p.tok(); t == tkNot || t == '-' || t == '#' {
		p.next()
		p.subExpr(unaryPriority)
	} else {
		p.simpleExp()
	}
	op := p.tok()
	for prio, ok := priority[op]; ok && prio[0] > limit; prio, ok = priority[op] {
		p.next()
		op = p.subExpr(prio[1])
	}
	p.leaveLevel()
	return op
}

// constructor -> '{' [ field { (',' | ';') field } [ ',' | ';' ] ] '}'
func (p *parser) constructor() {
	line := p.lx.line
	p.checkNext('{')
	for {
		if p.tok() == '}' {
			break
		}
		switch p.tok() {
		case tkName:
			if p.lx.lookahead() != '=' {
				p.expr()
			} else {
				p.next()
				p.checkNext('=')
				p.expr()
			}
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			p.checkNext('=')
			p.expr()
		default:
			p.expr()
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
}
