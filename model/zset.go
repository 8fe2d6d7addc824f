package model

// The sorted set layout: a sorted set is a hash of members whose values
// are scores (8 bytes, the IEEE bits, so -0 and every double survive),
// inline like a hash (hashCodec); a large one keeps beside each member
// item an order item whose sort key is the score in an order-preserving
// encoding followed by the member (its MemberOrder), so score and rank
// ranges read pages of the order, not the set.

import (
	"crypto/sha256"
	"encoding/binary"
	"math"

	"github.com/redamo/redamo/dynastore"
)

// zorderPrefixSize is the length of an order item's sort key before its
// member: SKOrder and the score's 8 bytes.
const zorderPrefixSize = 9

// ---- scores ------------------------------------------------------------------

// ZScoreValue is the stored form of a score: its IEEE bits, big-endian.
// Redis stores -0 as 0 (replies computed from scores, such as ZUNION's, may
// still say -0).
func ZScoreValue(f float64) dynastore.Value {
	if f == 0 {
		f = 0
	}
	b := make(dynastore.B, 8)
	binary.BigEndian.PutUint64(b, math.Float64bits(f))
	return b
}

// ZScoreOf decodes a stored score.
func ZScoreOf(v dynastore.Value) float64 {
	b, _ := v.(dynastore.B)
	if len(b) != 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

// ZOrderKey is the order sort key of score f without a member: SKOrder and
// the score's bits turned so that they sort as the numbers do (-0 as 0).
func ZOrderKey(f float64) []byte {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	k := make([]byte, zorderPrefixSize, zorderPrefixSize+16)
	k[0] = SKOrder
	binary.BigEndian.PutUint64(k[1:], b)
	return k
}

// ZOrderEnd sorts after every order key.
var ZOrderEnd = []byte{SKOrder + 1}

// zorderSK is the order item's sort key of member m with score v. A member
// too long for a sort key is cut and followed by its digest: such members
// sort by their first bytes, then by digest, among equal scores.
func zorderSK(m []byte, v dynastore.Value) []byte {
	k := ZOrderKey(ZScoreOf(v))
	if len(m) <= MaxPlainSK {
		return append(k, m...)
	}
	h := sha256.Sum256(m)
	return append(append(k, m[:MaxPlainSK-sha256.Size]...), h[:]...)
}

// ZScoreAbove is the order key just above every member of score f: the
// key of the next double (ZOrderEnd past +inf).
func ZScoreAbove(f float64) []byte {
	if math.IsInf(f, 1) {
		return ZOrderEnd
	}
	return ZOrderKey(math.Nextafter(f, math.Inf(1)))
}

// ZRankOf returns the rank of m (ok false when absent).
func ZRankOf(cl *Collection, m []byte, rev bool) (int64, bool, error) {
	vals, present, err := cl.Lookup([][]byte{m})
	if err != nil || !present[0] {
		return 0, false, err
	}
	sk := zorderSK(m, vals[0])
	var rank int64
	lo, hi := []byte(nil), sk
	if rev {
		lo, hi = append(sk, 0), nil
	}
	err = cl.EachOrdered(lo, hi, false, 0, func([]byte, dynastore.Value) error {
		rank++
		return nil
	})
	return rank, true, err
}
