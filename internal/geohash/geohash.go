package geohash

import (
	"math"
	"strconv"
	"strings"
)

// The coordinates Redis accepts: EPSG:900913 (web Mercator) limits, so the
// poles themselves cannot be indexed.
const (
	LonMin = -180.0
	LonMax = 180.0
	LatMin = -85.05112878
	LatMax = 85.05112878
)

// StepMax is the precision of a stored score: 26 bits of longitude and 26 of
// latitude, interleaved into 52 bits, which a float64 holds exactly.
const StepMax = 26

// cell is a geohash of step bits per coordinate, latitude in the even bits
// and longitude in the odd ones. The zero cell (no bits, step 0) stands for
// "no cell" among the neighbours of a search.
type cell struct {
	bits uint64
	step uint8
}

func (c cell) isZero() bool { return c.bits == 0 && c.step == 0 }

type span struct{ min, max float64 }

type area struct{ lon, lat span }

var (
	wgs84Lon = span{LonMin, LonMax}
	wgs84Lat = span{LatMin, LatMax}
	// The standard geohash latitude range, which GEOHASH strings use.
	stdLat = span{-90, 90}
)

// spread moves the 32 bits of x to the even bit positions of the result.
func spread(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000FFFF0000FFFF
	v = (v | v<<8) & 0x00FF00FF00FF00FF
	v = (v | v<<4) & 0x0F0F0F0F0F0F0F0F
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// squeeze is the inverse of spread: the even bits of v, packed.
func squeeze(v uint64) uint32 {
	v &= 0x5555555555555555
	v = (v | v>>1) & 0x3333333333333333
	v = (v | v>>2) & 0x0F0F0F0F0F0F0F0F
	v = (v | v>>4) & 0x00FF00FF00FF00FF
	v = (v | v>>8) & 0x0000FFFF0000FFFF
	v = (v | v>>16) & 0x00000000FFFFFFFF
	return uint32(v)
}

// encode is Redis's geohashEncode: the cell of step bits holding lon,lat
// within the given ranges. It fails outside the WGS84 limits whatever the
// ranges.
func encode(lonR, latR span, lon, lat float64, step uint8) (cell, bool) {
	if step == 0 || step > 32 || (latR.min == 0 && latR.max == 0) || (lonR.min == 0 && lonR.max == 0) {
		return cell{}, false
	}
	if lon > LonMax || lon < LonMin || lat > LatMax || lat < LatMin {
		return cell{}, false
	}
	if lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return cell{step: step}, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min)
	scale := float64(uint64(1) << step)
	latOff *= scale
	lonOff *= scale
	// C converts to uint32_t through a 64-bit truncation.
	return cell{spread(uint32(int64(latOff))) | spread(uint32(int64(lonOff)))<<1, step}, true
}

// decode is Redis's geohashDecode: the bounds of a cell.
func decode(lonR, latR span, c cell) (area, bool) {
	if c.isZero() || (latR.min == 0 && latR.max == 0) || (lonR.min == 0 && lonR.max == 0) {
		return area{}, false
	}
	latScale := latR.max - latR.min
	lonScale := lonR.max - lonR.min
	ilat := squeeze(c.bits)
	ilon := squeeze(c.bits >> 1)
	div := float64(uint64(1) << c.step)
	// The increments wrap as C's uint32_t arithmetic does; the explicit
	// conversions keep the compiler from fusing multiply and add.
	return area{
		lat: span{
			latR.min + float64(float64(ilat)/div*latScale),
			latR.min + float64(float64(ilat+1)/div*latScale),
		},
		lon: span{
			lonR.min + float64(float64(ilon)/div*lonScale),
			lonR.min + float64(float64(ilon+1)/div*lonScale),
		},
	}, true
}

// centre is geohashDecodeAreaToLongLat: the middle of the area, clamped to
// the WGS84 limits.
func (a area) centre() (lon, lat float64) {
	lon = (a.lon.min + a.lon.max) / 2
	lon = math.Max(math.Min(lon, LonMax), LonMin)
	lat = (a.lat.min + a.lat.max) / 2
	lat = math.Max(math.Min(lat, LatMax), LatMin)
	return lon, lat
}

// align52 is geohashAlign52Bits: the cell's bits as a prefix of a 52-bit score.
func (c cell) align52() uint64 { return c.bits << (52 - 2*uint(c.step)) }

// Encode returns the score Redis stores for lon,lat (which must satisfy
// Validate): the 52-bit interleaved geohash of step StepMax.
func Encode(lon, lat float64) uint64 {
	c, _ := encode(wgs84Lon, wgs84Lat, lon, lat, StepMax)
	return c.align52()
}

// Validate returns Redis's error reply for a longitude,latitude pair out of
// range, or "" for a valid pair.
func Validate(lon, lat float64) string {
	if lon < LonMin || lon > LonMax || lat < LatMin || lat > LatMax {
		return "ERR invalid longitude,latitude pair " + cFixed6(lon) + "," + cFixed6(lat)
	}
	return ""
}

// cFixed6 is C's printf "%f".
func cFixed6(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// ScoreBits converts a sorted-set score to geohash bits as C's (uint64_t)
// cast does on x86-64, so a score GEOADD did not write still decodes to the
// position Redis reports for it.
func ScoreBits(score float64) uint64 {
	const two63 = 1 << 63
	// cvttsd2si yields 1<<63 for NaN and out-of-range values.
	trunc := func(f float64) uint64 {
		if f >= -two63 && f < two63 {
			return uint64(int64(f))
		}
		return 1 << 63
	}
	if !(score >= two63) {
		return trunc(score)
	}
	return trunc(score-two63) ^ 1<<63
}

// Decode returns the position Redis reports for a score (GEOPOS): the centre
// of its cell, clamped to the WGS84 limits.
func Decode(score float64) (lon, lat float64) {
	a, _ := decode(wgs84Lon, wgs84Lat, cell{ScoreBits(score), StepMax})
	return a.centre()
}

const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// HashString returns GEOHASH's string for a position Decode returned: the
// position re-encoded over the standard latitude range [-90,90], 10 base-32
// characters of its 52 bits and an 11th that is always '0'.
func HashString(lon, lat float64) string {
	c, _ := encode(span{-180, 180}, stdLat, lon, lat, StepMax)
	var b strings.Builder
	b.Grow(11)
	for i := 0; i < 10; i++ {
		b.WriteByte(geoAlphabet[(c.bits>>(52-(i+1)*5))&0x1f])
	}
	b.WriteByte('0')
	return b.String()
}
