package geohash

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The commands package's GEO golden test checks this package's results
// against redis-server replies; these tests pin a few values and the
// agreement of the trigonometry with glibc's.

func TestGeoKnownValues(t *testing.T) {
	// Redis's documentation example: Palermo and Catania.
	p := Encode(13.361389, 38.115556)
	c := Encode(15.087269, 37.502669)
	require.Equal(t, uint64(3479099956230698), p)
	require.Equal(t, uint64(3479447370796909), c)
	lon, lat := Decode(float64(p))
	require.Equal(t, "sqc8b49rny0", HashString(lon, lat))
	lon2, lat2 := Decode(float64(c))
	require.InDelta(t, 166274.1516, Distance(lon, lat, lon2, lat2), 0.0001)

	for _, tc := range []struct {
		lon, lat float64
		want     string
	}{
		{0, 0, ""},
		{180, 85.05112878, ""},
		{200, 100, "ERR invalid longitude,latitude pair 200.000000,100.000000"},
		{math.Inf(-1), 1, "ERR invalid longitude,latitude pair -inf,1.000000"},
		{-180.0000001, 0, "ERR invalid longitude,latitude pair -180.000000,0.000000"},
	} {
		require.Equal(t, tc.want, Validate(tc.lon, tc.lat), "%v,%v", tc.lon, tc.lat)
	}

	for _, tc := range []struct {
		name string
		m    float64
		ok   bool
	}{{"m", 1, true}, {"KM", 1000, true}, {"Ft", 0.3048, true}, {"mi", 1609.34, true}, {"yd", 0, false}, {"\u212am", 0, false}} {
		m, ok := Unit(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.m, m, tc.name)
	}
}

// TestGeoTrigMatchesGlibc compares with glibc's results (testdata/libm.txt,
// printed by testdata/glibc.c): the correctly rounded results differ from
// glibc only where glibc is off by an ulp, rarely.
func TestGeoTrigMatchesGlibc(t *testing.T) {
	f, err := os.Open("testdata/libm.txt")
	require.NoError(t, err)
	defer f.Close()
	fns := map[string]func(float64) float64{"sin": sin, "cos": cos, "asin": asin}
	n, differ := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		x, err := strconv.ParseFloat(p[1], 64)
		require.NoError(t, err)
		want, err := strconv.ParseFloat(p[2], 64)
		require.NoError(t, err)
		got := fns[p[0]](x)
		n++
		if got != want {
			differ++
			require.Equal(t, math.Nextafter(want, got), got, "%s(%v) more than an ulp off", p[0], x)
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 9000, n)
	require.Less(t, differ, n/200, "%d of %d differ", differ, n)
}

func TestGeoRangesCoverSearch(t *testing.T) {
	s := Shape{Lon: 2.35, Lat: 48.85, Radius: 50, ToMeters: 1000}
	r := s.Ranges()
	require.NotEmpty(t, r)
	score := float64(Encode(2.3522, 48.8566))
	in := false
	for _, x := range r {
		require.Less(t, x.Min, x.Max)
		if score >= float64(x.Min) && score < float64(x.Max) {
			in = true
		}
	}
	require.True(t, in)
}
