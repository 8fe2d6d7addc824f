package geohash

// Redis computes distances with glibc's sin, cos and asin, which are
// accurate to about half an ulp. Go's math package is only faithful (within
// one ulp) and disagrees with glibc for a fifth to a third of arguments. The
// functions here evaluate in double-double arithmetic (about 106 bits) and
// round once: the correctly rounded result, which is glibc's except for
// arguments whose result lies very near a rounding midpoint (about one in a
// thousand), where glibc itself is off by an ulp.

import (
	"math"
	"math/big"
)

// dd is an unevaluated sum hi+lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s = quickTwoSum(s.hi, s.lo+t.hi)
	return quickTwoSum(s.hi, s.lo+t.lo)
}

func ddNeg(a dd) dd { return dd{-a.hi, -a.lo} }

func ddMul(a, b dd) dd {
	p := twoProd(a.hi, b.hi)
	p.lo += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p.hi, p.lo)
}

func ddMulF(a dd, b float64) dd {
	p := twoProd(a.hi, b)
	p.lo += a.lo * b
	return quickTwoSum(p.hi, p.lo)
}

// ddSqrtF is the square root of a non-negative double.
func ddSqrtF(a float64) dd {
	if a == 0 {
		return dd{}
	}
	s := math.Sqrt(a)
	r := ddAdd(dd{a, 0}, ddNeg(twoProd(s, s)))
	return quickTwoSum(s, r.hi/(2*s))
}

func bigToDD(x *big.Float) dd {
	hi, _ := x.Float64()
	rest := new(big.Float).SetPrec(x.Prec()).Sub(x, big.NewFloat(hi))
	lo, _ := rest.Float64()
	return dd{hi, lo}
}

var (
	// halfPi is pi/2 in three parts, so that subtracting a small multiple
	// of it keeps full precision near the multiple.
	halfPi1, halfPi2, halfPi3 float64
	halfPiDD                  dd
	// sinCoef[k] = (-1)^k/(2k+1)!, cosCoef[k] = (-1)^k/(2k)!
	sinCoef, cosCoef [15]dd
)

func init() {
	const prec = 400
	pi, _, err := big.ParseFloat("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651328230664709384460955058223172535940812848111745028410270193852110555964462294895493038196", 10, prec, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	h := new(big.Float).SetPrec(prec).Quo(pi, big.NewFloat(2))
	halfPi1, _ = h.Float64()
	h.Sub(h, big.NewFloat(halfPi1))
	halfPi2, _ = h.Float64()
	h.Sub(h, big.NewFloat(halfPi2))
	halfPi3, _ = h.Float64()
	halfPiDD = dd{halfPi1, halfPi2}

	fact := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := 0; n < 30; n++ {
		if n > 0 {
			fact.Mul(fact, new(big.Float).SetInt64(int64(n)))
		}
		c := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1), fact)
		if (n/2)%2 == 1 {
			c.Neg(c)
		}
		if n%2 == 0 {
			cosCoef[n/2] = bigToDD(c)
		} else {
			sinCoef[n/2] = bigToDD(c)
		}
	}
}

// reduce returns r and q with x = q*pi/2 + r, |r| <= pi/4 (about), for the
// moderate |x| the geo code passes (a few radians).
func reduce(x float64) (dd, int) {
	q := math.Round(x / halfPi1)
	r := ddAdd(dd{x, 0}, ddNeg(twoProd(q, halfPi1)))
	r = ddAdd(r, ddNeg(twoProd(q, halfPi2)))
	r = ddAdd(r, ddNeg(twoProd(q, halfPi3)))
	return r, int(q) & 3
}

// sinTaylor and cosTaylor evaluate the series for |r| <= pi/4.
func sinTaylor(r dd) dd {
	r2 := ddMul(r, r)
	s := sinCoef[len(sinCoef)-1]
	for k := len(sinCoef) - 2; k >= 0; k-- {
		s = ddAdd(ddMul(s, r2), sinCoef[k])
	}
	return ddMul(s, r)
}

func cosTaylor(r dd) dd {
	r2 := ddMul(r, r)
	s := cosCoef[len(cosCoef)-1]
	for k := len(cosCoef) - 2; k >= 0; k-- {
		s = ddAdd(ddMul(s, r2), cosCoef[k])
	}
	return s
}

func ddSin(x float64) dd {
	r, q := reduce(x)
	switch q {
	case 0:
		return sinTaylor(r)
	case 1:
		return cosTaylor(r)
	case 2:
		return ddNeg(sinTaylor(r))
	default:
		return ddNeg(cosTaylor(r))
	}
}

func ddCos(x float64) dd {
	r, q := reduce(x)
	switch q {
	case 0:
		return cosTaylor(r)
	case 1:
		return ddNeg(sinTaylor(r))
	case 2:
		return ddNeg(cosTaylor(r))
	default:
		return sinTaylor(r)
	}
}

// sin is glibc's sin for the arguments geo uses.
func sin(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return math.Sin(x)
	}
	return ddSin(x).hi
}

// cos is glibc's cos for the arguments geo uses.
func cos(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.Cos(x)
	}
	return ddCos(x).hi
}

// ddAsin is asin of a double-double in [0, 0.5]: one Newton step on sin
// from math.Asin's estimate, which is within an ulp.
func ddAsin(y dd) dd {
	z := math.Asin(y.hi)
	diff := ddAdd(ddSin(z), ddNeg(y))
	return ddAdd(dd{z, 0}, dd{-diff.hi / ddCos(z).hi, 0})
}

// asin is glibc's asin.
func asin(y float64) float64 {
	if math.IsNaN(y) || y > 1 || y < -1 || y == 0 {
		return math.Asin(y)
	}
	neg := y < 0
	if neg {
		y = -y
	}
	var r dd
	if y <= 0.5 {
		r = ddAsin(dd{y, 0})
	} else {
		// asin(y) = pi/2 - 2*asin(sqrt((1-y)/2)); 1-y and the halving are exact.
		t := ddSqrtF((1 - y) / 2)
		a := ddAsin(t)
		r = ddAdd(halfPiDD, ddNeg(ddMulF(a, 2)))
	}
	if neg {
		return -r.hi
	}
	return r.hi
}

func sqrt(x float64) float64 { return math.Sqrt(x) }
