package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// prefetchRecorder is a store that records what Prefetch is given.
type prefetchRecorder struct {
	dynastore.Store
	calls [][]dynastore.Key
}

func (p *prefetchRecorder) Prefetch(keys []dynastore.Key) {
	cp := make([]dynastore.Key, len(keys))
	for i, k := range keys {
		cp[i] = dynastore.Key{PK: append([]byte(nil), k.PK...), SK: append([]byte(nil), k.SK...)}
	}
	p.calls = append(p.calls, cp)
}

func TestPrefetch(t *testing.T) {
	up := func(name, arg string) Upcoming { return Upcoming{Name: []byte(name), Arg: []byte(arg)} }
	long := string(make([]byte, MaxKeyLen+1))
	cases := []struct {
		name   string
		db     int
		authed bool
		reqs   []Upcoming
		want   []string // Redis keys prefetched, in order (nil: no call)
	}{
		{"reads in order", 0, true,
			[]Upcoming{up("GET", "a"), up("strlen", "b"), up("HGET", "c")}, []string{"a", "b", "c"}},
		{"writes are left out, but counters", 0, true,
			[]Upcoming{up("GET", "a"), up("SET", "b"), up("INCR", "c"), up("APPEND", "d"), up("decrby", "e"), up("GET", "f")},
			[]string{"a", "c", "e", "f"}},
		{"commands without a key at 1 are left out", 0, true,
			[]Upcoming{up("GET", "a"), up("PING", "x"), up("SELECT", "1"), up("NOSUCH", "y"), up("OBJECT", "ENCODING"), up("MGET", "m")},
			[]string{"a", "m"}},
		{"in the selected database", 3, true, []Upcoming{up("GET", "a"), up("GET", "b")}, []string{"a", "b"}},
		{"a missing argument is skipped", 0, true,
			[]Upcoming{{Name: []byte("GET")}, up("GET", "a"), up("GET", "b")}, []string{"a", "b"}},
		{"a key too long to exist is skipped", 0, true,
			[]Upcoming{up("GET", long), up("GET", "a"), up("GET", "b")}, []string{"a", "b"}},
		{"one request: nothing to overlap", 0, true, []Upcoming{up("GET", "a")}, nil},
		{"one key left: nothing to overlap", 0, true, []Upcoming{up("GET", "a"), up("PING", "")}, nil},
		{"not before AUTH", 0, false, []Upcoming{up("GET", "a"), up("GET", "b")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &prefetchRecorder{Store: memory.New(memory.Options{})}
			srv := &Server{Store: rec, Table: NewTable()}
			srv.SetRequirePass("secret")
			cn := &Conn{DB: c.db, Authed: c.authed}
			srv.Prefetch(cn, c.reqs)
			if c.want == nil {
				require.Empty(t, rec.calls)
				return
			}
			require.Len(t, rec.calls, 1)
			var want []dynastore.Key
			for _, k := range c.want {
				want = append(want, itemKey(c.db, []byte(k)))
			}
			require.Equal(t, want, rec.calls[0])
		})
	}
}

// The scratch memory is reused from call to call, and a call with huge
// keys does not leave it pinned.
func TestPrefetchScratch(t *testing.T) {
	rec := &prefetchRecorder{Store: memory.New(memory.Options{})}
	srv := &Server{Store: rec, Table: NewTable()}
	cn := &Conn{Authed: true}
	big := string(make([]byte, MaxKeyLen))
	srv.Prefetch(cn, []Upcoming{{Name: []byte("GET"), Arg: []byte("a")}, {Name: []byte("GET"), Arg: []byte("b")}})
	require.NotNil(t, cn.prefetch.pks)
	var reqs []Upcoming
	for range 20 {
		reqs = append(reqs, Upcoming{Name: []byte("GET"), Arg: []byte(big)})
	}
	srv.Prefetch(cn, reqs)
	require.Len(t, rec.calls, 2)
	require.Len(t, rec.calls[1], 20)
	require.Nil(t, cn.prefetch.pks, "over maxPrefetchScratch: let go")
}

// Every write Prefetch hints is a registered command with its key first.
func TestPrefetchedWrites(t *testing.T) {
	tab := NewTable()
	for _, name := range prefetchedWrites {
		c := tab.Lookup(name)
		require.NotNil(t, c, name)
		require.Equal(t, 1, c.FirstKey, name)
		require.True(t, c.prefetch, name)
	}
	require.False(t, tab.Lookup("set").prefetch)
}
