package commands

// Redis's encoding parameters (CONFIG SET hash-max-listpack-entries and the
// others) and what they mean in redamo.
//
// Redis keeps a small collection in a compact encoding (listpack, intset)
// and converts it to a hash table when it outgrows these thresholds.
// redamo honours each parameter twice over:
//
//   - OBJECT ENCODING answers as Redis 7.0.15 does, by its rules, from the
//     key's content and the current thresholds (model.Encoding). Redis 7.0
//     calls every list a quicklist and every set that is not an intset a
//     hashtable, whatever its size, so the layout alone cannot give the
//     name: a set of 3 strings is inline in redamo and a hashtable in Redis.
//   - They bound redamo's inline layout (model/collection.go, model/list.go): a
//     collection stays in its key item only while it is within the
//     parameters and within redamo's own caps (model.InlineMaxHash, model.InlineMaxSet
//     and model.InlineMaxList entries of at most model.InlineMaxBytes bytes). The caps
//     keep an inline key item to a few KB, far below DynamoDB's 400 KB item
//     limit, because each write of an inline collection is billed for the
//     whole item. Lowering a parameter below its cap pages collections
//     sooner (0 pages every one); raising one past it changes what OBJECT
//     ENCODING reports, not the layout, so every value Redis accepts can be
//     honoured.
//
// set-max-listpack-entries and set-max-listpack-value are Redis 7.2's: they
// bound inline sets, which are exactly small listpack sets there. Redis
// 7.0.15, whose CONFIG GET redamo matches, has no such parameters, so they
// answer to their exact names only, never to a pattern (Redis's hidden
// parameters, such as key-load-delay, behave so too).

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redamo/redamo/model"
)

// encodingParams are the parameters' values.
type encodingParams struct {
	hashEntries, hashValue int64
	setIntsetEntries       int64
	setEntries, setValue   int64
	listSize               int64
	zsetEntries, zsetValue int64
	// stream-node-max-bytes and -entries (model.Process.SetStreamNodeLimits).
	streamNodeBytes, streamNodeEntries int64
}

// Redis 7's compiled-in defaults (redis.conf's example lowers
// hash-max-listpack-entries to 128; a server without a file has 512).
var defaultEncodingParams = encodingParams{
	hashEntries: 512, hashValue: 64,
	setIntsetEntries: 512,
	setEntries:       128, setValue: 64,
	listSize:    -2,
	zsetEntries: 128, zsetValue: 64,
	streamNodeBytes: model.StreamNodeMaxBytes, streamNodeEntries: model.StreamNodeMaxEntries,
}

// encodingState is the parameters with the inline limits they give.
type encodingState struct {
	params                encodingParams
	hash, set, list, zset model.InlineLimits
}

func newEncodingState(p encodingParams) *encodingState {
	return &encodingState{
		params: p,
		hash:   model.InlineLimits{Entries: capped(p.hashEntries, model.InlineMaxHash), Bytes: capped(p.hashValue, model.InlineMaxBytes)},
		set:    model.InlineLimits{Entries: capped(p.setEntries, model.InlineMaxSet), Bytes: capped(p.setValue, model.InlineMaxBytes)},
		list:   model.InlineLimits{Entries: listInlineEntries(p.listSize), Bytes: model.InlineMaxBytes},
		zset:   model.InlineLimits{Entries: capped(p.zsetEntries, model.InlineMaxHash), Bytes: capped(p.zsetValue, model.InlineMaxBytes)},
	}
}

var defaultEncoding = newEncodingState(defaultEncodingParams)

func capped(v int64, limit int) int { return int(min(v, int64(limit))) }

// listInlineEntries is how many elements an inline list holds under
// list-max-listpack-size: as many as one quicklist node of that fill holds
// when every element is model.InlineMaxBytes long, within model.InlineMaxList. A
// positive fill counts elements (0 counts as 1, as in Redis); a negative
// one is a node size, 4 KB for -1 doubling to 64 KB for -5 and below
// (clamped there as Redis 7.2 does).
func listInlineEntries(fill int64) int {
	if fill >= 0 {
		return capped(max(fill, 1), model.InlineMaxList)
	}
	node := int64(4096) << min(-fill-1, 4)
	return capped(node/model.InlineMaxBytes, model.InlineMaxList)
}

// encoding returns the current encoding parameters and inline limits.
func (s *Server) encoding() *encodingState {
	if e := s.enc.Load(); e != nil {
		return e
	}
	return defaultEncoding
}

// inline returns the inline limits for collections of type typ.
func (s *Server) inline(typ string) model.InlineLimits {
	e := s.encoding()
	switch typ {
	case model.TypeHash:
		return e.hash
	case model.TypeZSet:
		return e.zset
	case model.TypeList:
		return e.list
	case model.TypeStream:
		return model.StreamInline
	}
	return e.set
}

// setEncodingParam changes one parameter (field picks it) for the
// following commands.
func (s *Server) setEncodingParam(field func(*encodingParams) *int64, v int64) {
	for {
		old := s.enc.Load()
		cur := defaultEncoding
		if old != nil {
			cur = old
		}
		p := cur.params
		*field(&p) = v
		if s.enc.CompareAndSwap(old, newEncodingState(p)) {
			return
		}
	}
}

// encodingParam builds the CONFIG table entry of an encoding parameter
// (field picks it) of the given kind.
func encodingParam(name, alias string, field func(*encodingParams) *int64, kind numericParam) configParam {
	return configParam{
		name: name, alias: alias,
		get: func(s *Server) string {
			p := s.encoding().params
			return strconv.FormatInt(*field(&p), 10)
		},
		check: kind.check,
		set:   func(s *Server, v string) { s.setEncodingParam(field, kind.parse(v)) },
	}
}

// objectEncoding is OBJECT ENCODING of key, a live collection of type typ,
// under the current parameters.
func objectEncoding(c *Ctx, key []byte, typ string) (string, error) {
	p := c.Srv.encoding().params
	enc, err := model.Encoding(c, key, typ, model.EncodingLimits{
		HashEntries: p.hashEntries, HashValue: p.hashValue, SetIntsetEntries: p.setIntsetEntries,
	})
	if errors.Is(err, model.ErrNoEncoding) {
		return "", redisError(fmt.Sprintf("ERR OBJECT ENCODING is not supported for keys of type %s", typ))
	}
	return enc, err
}
