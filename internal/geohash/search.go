package geohash

import "math"

// Shape is the area of a GEOSEARCH: a circle or an axis-aligned box around
// a centre. Sizes are in the query's unit; ToMeters converts them.
type Shape struct {
	Lon, Lat float64
	// Box selects a box of Width x Height, else a circle of Radius.
	Box           bool
	Radius        float64
	Width, Height float64
	ToMeters      float64
}

// bounds is geohashBoundingBox: the longitude and latitude limits of the
// shape, its longitudes taken at the edge farther from the equator.
func (s *Shape) bounds() (minLon, minLat, maxLon, maxLat float64) {
	var height, width float64
	if s.Box {
		height = s.ToMeters * (s.Height / 2)
		width = s.ToMeters * (s.Width / 2)
	} else {
		height = s.ToMeters * s.Radius
		width = s.ToMeters * s.Radius
	}
	latDelta := degrees(height / earthRadius)
	lonDeltaTop := degrees(width / earthRadius / cos(radians(s.Lat+latDelta)))
	lonDeltaBottom := degrees(width / earthRadius / cos(radians(s.Lat-latDelta)))
	if s.Lat < 0 {
		minLon, maxLon = s.Lon-lonDeltaBottom, s.Lon+lonDeltaBottom
	} else {
		minLon, maxLon = s.Lon-lonDeltaTop, s.Lon+lonDeltaTop
	}
	return minLon, s.Lat - latDelta, maxLon, s.Lat + latDelta
}

// estimateStep is geohashEstimateStepsByRadius: the precision at which a
// cell and its neighbours cover a search of the given radius.
func estimateStep(meters, lat float64) uint8 {
	const mercatorMax = 20037726.37
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2
	// Meridians converge towards the poles: wider cells.
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// moveX and moveY step a cell one column east/west or one row north/south,
// wrapping around.
func (c cell) moveX(d int) cell {
	x := c.bits & 0xaaaaaaaaaaaaaaaa
	y := c.bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - 2*uint(c.step))
	if d > 0 {
		x += zz + 1
	} else {
		x = (x | zz) - (zz + 1)
	}
	x &= 0xaaaaaaaaaaaaaaaa >> (64 - 2*uint(c.step))
	return cell{x | y, c.step}
}

func (c cell) moveY(d int) cell {
	x := c.bits & 0xaaaaaaaaaaaaaaaa
	y := c.bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - 2*uint(c.step))
	if d > 0 {
		y += zz + 1
	} else {
		y = (y | zz) - (zz + 1)
	}
	y &= 0x5555555555555555 >> (64 - 2*uint(c.step))
	return cell{x | y, c.step}
}

// The nine cells of a search, in the order Redis scans them.
const (
	self = iota
	north
	south
	east
	west
	northEast
	northWest
	southEast
	southWest
)

// cells is geohashCalculateAreasByShapeWGS84: the cell holding the centre
// and its eight neighbours, at a step estimated from the shape's size and
// lowered once when a neighbour does not reach the bounding box; neighbours
// lying wholly outside the box are zero.
func (s *Shape) cells() [9]cell {
	minLon, minLat, maxLon, maxLat := s.bounds()
	meters := s.Radius
	if s.Box {
		meters = math.Sqrt(float64(s.Width/2*(s.Width/2)) + float64(s.Height/2*(s.Height/2)))
	}
	meters *= s.ToMeters
	step := estimateStep(meters, s.Lat)

	around := func(step uint8) (area, [9]cell) {
		c, _ := encode(wgs84Lon, wgs84Lat, s.Lon, s.Lat, step)
		var n [9]cell
		n[self] = c
		n[east], n[west] = c.moveX(1), c.moveX(-1)
		n[north], n[south] = c.moveY(1), c.moveY(-1)
		n[northWest] = c.moveX(-1).moveY(1)
		n[northEast] = c.moveX(1).moveY(1)
		n[southEast] = c.moveX(1).moveY(-1)
		n[southWest] = c.moveX(-1).moveY(-1)
		a, _ := decode(wgs84Lon, wgs84Lat, c)
		return a, n
	}
	a, n := around(step)

	// When the centre sits near an edge of its cell, a neighbour may end
	// before the bounding box does: then use cells twice as large.
	nArea := func(i int) area {
		x, _ := decode(wgs84Lon, wgs84Lat, n[i])
		return x
	}
	if step > 1 && (nArea(north).lat.max < maxLat || nArea(south).lat.min > minLat ||
		nArea(east).lon.max < maxLon || nArea(west).lon.min > minLon) {
		step--
		a, n = around(step)
	}

	if step >= 2 {
		if a.lat.min < minLat {
			n[south], n[southWest], n[southEast] = cell{}, cell{}, cell{}
		}
		if a.lat.max > maxLat {
			n[north], n[northEast], n[northWest] = cell{}, cell{}, cell{}
		}
		if a.lon.min < minLon {
			n[west], n[southWest], n[northWest] = cell{}, cell{}, cell{}
		}
		if a.lon.max > maxLon {
			n[east], n[southEast], n[northEast] = cell{}, cell{}, cell{}
		}
	}
	return n
}

// ScoreRange is the scores of one cell: Min <= score < Max.
type ScoreRange struct{ Min, Max uint64 }

// Ranges returns the score ranges a search scans, in Redis's order: the
// centre's cell, then N, S, E, W, NE, NW, SE, SW, leaving out the neighbours
// outside the search and a neighbour equal to the one scanned just before
// it (as Redis does, which never compares with the centre's cell itself).
func (s *Shape) Ranges() []ScoreRange {
	n := s.cells()
	out := make([]ScoreRange, 0, len(n))
	last := 0
	for i, c := range n {
		if c.isZero() {
			continue
		}
		if last != 0 && c == n[last] {
			continue
		}
		next := cell{c.bits + 1, c.step}
		out = append(out, ScoreRange{c.align52(), next.align52()})
		last = i
	}
	return out
}

// Contains reports whether the point lon,lat (a decoded score) is inside
// the shape, and its distance in meters from the centre.
func (s *Shape) Contains(lon, lat float64) (meters float64, ok bool) {
	if !s.Box {
		d := Distance(s.Lon, s.Lat, lon, lat)
		return d, !(d > s.Radius*s.ToMeters)
	}
	width, height := s.Width*s.ToMeters, s.Height*s.ToMeters
	if latDistance(lat, s.Lat) > height/2 {
		return 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > width/2 {
		return 0, false
	}
	return Distance(s.Lon, s.Lat, lon, lat), true
}
