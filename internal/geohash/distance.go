package geohash

// earthRadius is the quadratic mean radius of WGS84, in meters, as Redis has it.
const earthRadius = 6372797.560856

// degToRad is C's M_PI/180.0, rounded as a double division (a Go constant
// expression would be exact, then rounded once: a different value).
var degToRad = func() float64 {
	pi := 3.141592653589793
	return pi / 180
}()

func radians(deg float64) float64 { return deg * degToRad }
func degrees(rad float64) float64 { return rad / degToRad }

// latDistance is the distance along a meridian between two latitudes.
func latDistance(lat1, lat2 float64) float64 {
	d := radians(lat2) - radians(lat1)
	if d < 0 {
		d = -d
	}
	return earthRadius * d
}

// Distance is Redis 7.0's geohashGetDistance: the haversine distance in
// meters, computed along the meridian when the longitudes' half-difference
// has a zero sine.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := radians(lon1)
	lon2r := radians(lon2)
	v := sin((lon2r - lon1r) / 2)
	if v == 0 {
		return latDistance(lat1, lat2)
	}
	lat1r := radians(lat1)
	lat2r := radians(lat2)
	u := sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(cos(lat1r)*cos(lat2r)*v*v)
	return 2.0 * earthRadius * asin(sqrt(a))
}

// Unit returns how many meters one unit is, for the units GEO commands take
// (m, km, ft, mi, any case).
func Unit(name string) (float64, bool) {
	// strcasecmp: ASCII case only.
	var low [2]byte
	if len(name) > len(low) {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low[:len(name)]) {
	case "m":
		return 1, true
	case "km":
		return 1000, true
	case "ft":
		return 0.3048, true
	case "mi":
		return 1609.34, true
	}
	return 0, false
}
