// Package geohash is the arithmetic behind Redis's GEO commands, with Redis
// 7.0's numerics: the 52-bit score a GEOADD stores for a longitude/latitude,
// the cell centre GEOPOS reports for a score, the 11-character GEOHASH
// string, haversine distances, and the score ranges a GEOSEARCH scans plus
// the test each candidate passes. It knows nothing of storage or of RESP.
package geohash
