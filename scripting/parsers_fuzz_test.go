package scripting

import (
	"bytes"
	"testing"
)

// FuzzParseNumkeys feeds EVAL's numkeys check arbitrary argument lists
// (the input split at spaces, with the arguments EVAL's arity
// guarantees): it may not panic, whatever the arguments. It was one of
// commands' FuzzArgParsers until scripting became a package of its own.
func FuzzParseNumkeys(f *testing.F) {
	for _, s := range []string{"numkeys", "1 \x00 2", "k 0 1 1 -1", "-1", "9223372036854775807 a", "2 a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := append([][]byte{[]byte("eval")}, bytes.Split([]byte(s), []byte(" "))...)
		for len(args) < 3 {
			args = append(args, []byte("x"))
		}
		parseNumkeys(args)
	})
}
