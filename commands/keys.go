package commands

import (
	"github.com/redamo/redamo/dynastore"
)

func registerKeys(t *Table) {}

// DBKeyspace is one line of INFO's keyspace section.
type DBKeyspace struct {
	DB            int
	Keys, Expires int64
}

// keyspaceInfo counts the live keys, and those with an expiry, of every
// non-empty database, in ascending db order. It scans the whole table.
func keyspaceInfo(c *Ctx) ([]DBKeyspace, error) {
	var counts [NumDBs]DBKeyspace
	err := scanAll(c, c.Store, keyFilter(-1, nil, c.NowMS()), func(it dynastore.Item) error {
		pk, _ := it[dynastore.AttrPK].(dynastore.B)
		db, _, ok := redisKeyOf(pk)
		if !ok || db >= NumDBs {
			return nil
		}
		counts[db].Keys++
		if _, ok := it[attrExpiry]; ok {
			counts[db].Expires++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []DBKeyspace
	for db, ks := range counts {
		if ks.Keys > 0 {
			ks.DB = db
			out = append(out, ks)
		}
	}
	return out, nil
}
