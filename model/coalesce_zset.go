package model

// Coalescing of the sorted-set writes on a hot key (see Coalescer and
// coalesce_colls.go): ZADD (with GEOADD, which is a ZADD), ZINCRBY and ZREM
// of one key share a lane, so that a leaderboard's updates batch together.
// A batch runs them in order on one view of the set (every member they
// name read at once) and commits once; each command gets its own reply
// (scores, counts, the nil of a ZADD INCR its flags refused) and its own
// error (a NaN score). A large set keeps an item per member, so a batch
// saves requests but writes every member it changes.

// zsetOp is one ZADD/ZINCRBY or ZREM of a batch.
type zsetOp struct {
	s       Scope
	rem     bool
	f       ZAddFlags
	members [][]byte
	scores  []float64
	lim     zsetLimits
}

func (op zsetOp) scope() Scope    { return op.s }
func (op zsetOp) names() [][]byte { return op.members }

// zsetRes is a sorted-set command's answer: a ZADD's outcome, or how many
// members a ZREM removed.
type zsetRes struct {
	add     ZAddResult
	removed int64
}

// zsetBatchMax caps a sorted-set batch: a member it changes in a large set
// is up to three writes (its item, its old and its new order item), and
// the batch's commit is one transaction while they fit in one.
const zsetBatchMax = collBatchMax / 3

// doZSet runs op on key's sorted set through the process's lane for it;
// alone is the command's own path.
func doZSet(c Scope, key []byte, op zsetOp, alone func() (zsetRes, error)) (zsetRes, error) {
	op.s = c
	return doColl(c, &c.Process().hotColls.zsets, TypeZSet, key, op, true, alone, func(c Scope, ops []zsetOp) ([]zsetRes, []error) {
		return runCollBatch(c, key, TypeZSet, ops, func(r *collRun, op zsetOp) (zsetRes, error) {
			if op.rem {
				return zsetRes{removed: removeFrom(r, op.members)}, nil
			}
			res, err := zaddPairs(r, op.f, op.members, op.scores, op.lim)
			return zsetRes{add: res}, err
		})
	})
}

// zsetRemove is ZREM: RemoveMembers of a sorted set.
func zsetRemove(c Scope, key []byte, members [][]byte) (int64, error) {
	r, err := doZSet(c, key, zsetOp{rem: true, members: members}, func() (zsetRes, error) {
		n, err := removeMembers(c, key, TypeZSet, members)
		return zsetRes{removed: n}, err
	})
	return r.removed, err
}
