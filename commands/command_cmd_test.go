package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Key specs render as redis-server 7.0.15 renders EVAL's and MIGRATE's in
// COMMAND INFO (RESP2, "$n" lines left out). No command redamo has yet
// searches by keyword, so these are the specs for it.
func TestWriteKeySpec(t *testing.T) {
	cases := []struct {
		name string
		spec KeySpec
		want string
	}{
		{"keynum with notes", KeySpec{
			Notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
			Flags: []string{"RW", "access", "update"}, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1,
		}, "*8 notes We cannot tell how the keys will be used so we assume the worst, RW and UPDATE flags *3 +RW +access +update begin_search *4 type index spec *2 index :2 find_keys *4 type keynum spec *6 keynumidx :0 firstkey :1 keystep :1"},
		{"index and range", KeySpec{Flags: []string{"RW", "access", "delete"}, Index: 3, LastKey: 0, KeyStep: 1},
			"*6 flags *3 +RW +access +delete begin_search *4 type index spec *2 index :3 find_keys *4 type range spec *6 lastkey :0 keystep :1 limit :0"},
		{"keyword", KeySpec{Flags: []string{"RW", "access", "delete", "incomplete"}, Keyword: "KEYS", StartFrom: -2, LastKey: -1, KeyStep: 1},
			"*6 flags *4 +RW +access +delete +incomplete begin_search *4 type keyword spec *4 keyword KEYS startfrom :-2 find_keys *4 type range spec *6 lastkey :-1 keystep :1 limit :0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r respRecorder
			writeKeySpec(&r, tc.spec)
			var toks []string
			for _, l := range strings.Split(strings.TrimSuffix(r.buf.String(), "\r\n"), "\r\n") {
				if !strings.HasPrefix(l, "$") {
					toks = append(toks, l)
				}
			}
			require.Equal(t, tc.want, strings.Join(toks, " "))
		})
	}
}
