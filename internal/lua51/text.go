package lua51

import (
	"regexp"
	"strings"
)

// gopher-lua's wording of runtime errors whose text alone says enough to
// word them as Lua 5.1 does (though Lua would also name the variable,
// which only the frames tell: see Handler).
var (
	textArith   = regexp.MustCompile(`cannot perform (?:add|sub|mul|div|mod|pow|unm) operation between (\w+) and (\w+)`)
	textConcat  = regexp.MustCompile(`cannot perform concat operation between (\w+) and (\w+)`)
	textCompare = regexp.MustCompile(`attempt to compare (\w+) with (\w+)`)
	textBadArg  = regexp.MustCompile(`bad argument #(\d+) to (\w+) \(`)
	textIndex   = regexp.MustCompile(`attempt to index a non-table object\((\w+)\) with key '[^']*'`)
	textFor     = strings.NewReplacer(
		"for statement init must be a number", "'for' initial value must be a number",
		"for statement limit must be a number", "'for' limit must be a number",
		"for statement step must be a number", "'for' step must be a number",
		// gopher-lua's stack of values is its registry, whose limit is
		// the stack's.
		"registry overflow", "stack overflow",
	)
)

// Text rewords the runtime error msg of gopher-lua as Lua 5.1 does, as
// far as the text alone allows (no variable names): for an error met
// where the frames it happened in are gone.
func Text(msg string) string {
	msg = blameOperand(textArith, msg, "attempt to perform arithmetic on a ")
	msg = blameOperand(textConcat, msg, "attempt to concatenate a ")
	msg = textCompare.ReplaceAllStringFunc(msg, func(m string) string {
		t := textCompare.FindStringSubmatch(m)
		if t[1] == t[2] {
			return "attempt to compare two " + t[1] + " values"
		}
		return m
	})
	msg = textIndex.ReplaceAllString(msg, "attempt to index a $1 value")
	msg = textFor.Replace(msg)
	return textBadArg.ReplaceAllString(msg, "bad argument #$1 to '$2' (")
}

// blameOperand rewords each match of re (two operand types) in msg as
// what " value" follows: Lua blames the first operand unless it is a
// number (or a string, which it may convert), then the second.
func blameOperand(re *regexp.Regexp, msg, what string) string {
	return re.ReplaceAllStringFunc(msg, func(m string) string {
		t := re.FindStringSubmatch(m)
		bad := t[1]
		if bad == "number" || bad == "string" {
			bad = t[2]
		}
		return what + bad + " value"
	})
}
