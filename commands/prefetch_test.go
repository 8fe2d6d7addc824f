package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/model"
)

// prefetchRecorder is a store that records what Prefetch is given.
type prefetchRecorder struct {
	dynastore.Store
	calls [][2][]dynastore.Key // reads, replaced
}

func (p *prefetchRecorder) Prefetch(reads, replaced []dynastore.Key) {
	cp := func(keys []dynastore.Key) []dynastore.Key {
		var out []dynastore.Key
		for _, k := range keys {
			out = append(out, dynastore.Key{PK: append([]byte(nil), k.PK...), SK: append([]byte(nil), k.SK...)})
		}
		return out
	}
	p.calls = append(p.calls, [2][]dynastore.Key{cp(reads), cp(replaced)})
}

func TestPrefetch(t *testing.T) {
	up := func(name, arg string) Upcoming { return Upcoming{Name: []byte(name), Arg: []byte(arg)} }
	long := string(make([]byte, model.MaxKeyLen+1))
	cases := []struct {
		name           string
		db             int
		authed         bool
		reqs           []Upcoming
		reads, replace []string // Redis keys prefetched, in order (both nil: no call)
	}{
		{"reads in order", 0, true,
			[]Upcoming{up("GET", "a"), up("strlen", "b"), up("HGET", "c")}, []string{"a", "b", "c"}, nil},
		{"counters read, SETs replace, other writes are left out", 0, true,
			[]Upcoming{up("GET", "a"), up("SET", "b"), up("INCR", "c"), up("APPEND", "d"), up("decrby", "e"), up("psetex", "f"), up("DEL", "g"), up("GET", "h")},
			[]string{"a", "c", "e", "h"}, []string{"b", "f"}},
		{"replaced alone", 0, true, []Upcoming{up("SET", "a"), up("SETEX", "b")}, nil, []string{"a", "b"}},
		{"commands without a key at 1 are left out", 0, true,
			[]Upcoming{up("GET", "a"), up("PING", "x"), up("SELECT", "1"), up("NOSUCH", "y"), up("OBJECT", "ENCODING"), up("MGET", "m")},
			[]string{"a", "m"}, nil},
		{"in the selected database", 3, true, []Upcoming{up("GET", "a"), up("GET", "b")}, []string{"a", "b"}, nil},
		{"a missing argument is skipped", 0, true,
			[]Upcoming{{Name: []byte("GET")}, up("GET", "a"), up("GET", "b")}, []string{"a", "b"}, nil},
		{"a key too long to exist is skipped", 0, true,
			[]Upcoming{up("GET", long), up("GET", "a"), up("GET", "b")}, []string{"a", "b"}, nil},
		{"one request: nothing to overlap", 0, true, []Upcoming{up("GET", "a")}, nil, nil},
		{"one key left: nothing to overlap", 0, true, []Upcoming{up("GET", "a"), up("PING", "")}, nil, nil},
		{"not before AUTH", 0, false, []Upcoming{up("GET", "a"), up("GET", "b")}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &prefetchRecorder{Store: memory.New(memory.Options{})}
			srv := &Server{Store: model.On(rec), Table: NewTable()}
			srv.SetRequirePass("secret")
			cn := &Conn{DB: c.db, Authed: c.authed}
			srv.Prefetch(cn, c.reqs)
			if c.reads == nil && c.replace == nil {
				require.Empty(t, rec.calls)
				return
			}
			require.Len(t, rec.calls, 1)
			keys := func(names []string) []dynastore.Key {
				var out []dynastore.Key
				for _, k := range names {
					out = append(out, model.ItemKey(c.db, []byte(k)))
				}
				return out
			}
			require.Equal(t, keys(c.reads), rec.calls[0][0], "reads")
			require.Equal(t, keys(c.replace), rec.calls[0][1], "replaced")
		})
	}
}

// Every write Prefetch hints (its row says ReadsFirst or Replaces) is a
// registered command with its key first.
func TestPrefetchedWrites(t *testing.T) {
	tab := NewTable()
	var readsFirst, replaces []string
	for _, c := range tab.All() {
		if c.readsFirst {
			readsFirst = append(readsFirst, c.Name)
		}
		if c.replaces {
			replaces = append(replaces, c.Name)
		}
	}
	require.ElementsMatch(t, []string{"incr", "decr", "incrby", "decrby", "incrbyfloat"}, readsFirst)
	require.ElementsMatch(t, []string{"set", "setex", "psetex"}, replaces)
	for _, names := range [][]string{readsFirst, replaces} {
		for _, name := range names {
			c := tab.Lookup(name)
			require.NotNil(t, c, name)
			require.Equal(t, 1, c.FirstKey, name)
			require.NotEqual(t, hintNone, c.hint, name)
		}
	}
	require.Equal(t, hintRead, tab.Lookup("get").hint)
	require.Equal(t, hintRead, tab.Lookup("incr").hint)
	require.Equal(t, hintReplace, tab.Lookup("set").hint)
	require.Equal(t, hintNone, tab.Lookup("del").hint)
}
