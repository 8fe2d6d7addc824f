package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// A member item: pk NsBus alone, sk the instance id, and
const (
	attrAddr    = "a"  // S: the address peers dial (host:port)
	attrStarted = "st" // N: when the instance started, Unix ms
	attrExpiry  = "x"  // N: the heartbeat's end, Unix ms; past it the member is gone
)

// ttlSlack is how long after its heartbeat's end DynamoDB may collect the
// item of an instance that died without deleting it: expiry is decided on
// x, so the TTL only needs to come eventually.
const ttlSlack = time.Hour

// ID is an instance's id: random, fresh at every start, so a restarted
// instance is a new member and a stale connection cannot pass for it.
type ID [16]byte

func newID() ID {
	var id ID
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return id
}

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Member is one instance as its item says.
type Member struct {
	ID      ID
	Addr    string
	Started time.Time
	Expiry  time.Time
}

var membersPK = []byte{model.NsBus}

func memberKey(id ID) dynastore.Key {
	return dynastore.Key{PK: membersPK, SK: append([]byte(nil), id[:]...)}
}

func ms(t time.Time) dynastore.N { return dynastore.N(strconv.FormatInt(t.UnixMilli(), 10)) }

func memberItem(m Member) dynastore.Item {
	k := memberKey(m.ID)
	return dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: attrAddr, Value: dynastore.S(m.Addr)},
		{Name: attrStarted, Value: ms(m.Started)},
		{Name: attrExpiry, Value: ms(m.Expiry)},
		{Name: dynastore.AttrTTL, Value: dynastore.N(strconv.FormatInt(m.Expiry.Add(ttlSlack).Unix(), 10))},
	}
}

func parseMember(it dynastore.Item) (Member, error) {
	var m Member
	sk, _ := it.Get(dynastore.AttrSK).(dynastore.B)
	addr, _ := it.Get(attrAddr).(dynastore.S)
	st, _ := it.Get(attrStarted).(dynastore.N)
	x, _ := it.Get(attrExpiry).(dynastore.N)
	stms, err1 := strconv.ParseInt(string(st), 10, 64)
	xms, err2 := strconv.ParseInt(string(x), 10, 64)
	if len(sk) != len(m.ID) || addr == "" || err1 != nil || err2 != nil {
		return m, fmt.Errorf("bus: malformed member item %x", []byte(sk))
	}
	copy(m.ID[:], sk)
	m.Addr = string(addr)
	m.Started = time.UnixMilli(stms)
	m.Expiry = time.UnixMilli(xms)
	return m, nil
}

// announce writes (or renews) this instance's item: one PutItem.
func announce(ctx context.Context, st dynastore.Store, m Member) error {
	_, err := st.Put(ctx, memberItem(m), dynastore.WriteOptions{})
	return err
}

// withdraw deletes this instance's item: one DeleteItem.
func withdraw(ctx context.Context, st dynastore.Store, id ID) error {
	_, err := st.Delete(ctx, memberKey(id), dynastore.WriteOptions{})
	return err
}

// members reads the members whose heartbeat has not ended at now, and
// the table's settings (model.Settings, nil when the table has none), which
// share the partition: one Query (one page for any realistic cluster). A
// malformed item is skipped: it cannot be dialed, and its TTL collects it.
func members(ctx context.Context, st dynastore.Store, now time.Time) ([]Member, *model.Settings, error) {
	var out []Member
	var settings *model.Settings
	q := dynastore.Query{PK: membersPK}
	for {
		page, err := st.Query(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range page.Items {
			if s, ok := model.SettingsOf(it); ok {
				settings = &s
				continue
			}
			m, err := parseMember(it)
			if err == nil && m.Expiry.After(now) {
				out = append(out, m)
			}
		}
		if page.Next == nil {
			return out, settings, nil
		}
		q.After = page.Next
	}
}
