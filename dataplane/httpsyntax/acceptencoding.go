// This file reads the Accept-Encoding field.

package httpsyntax

import (
	"strconv"
	"strings"
)

// AcceptsGzip reads Accept-Encoding field values (RFC 9110 §12.5.3):
// gzip is acceptable when listed (or as its alias x-gzip, RFC 9110
// §8.4.1.3) with a non-zero weight, or, when not listed, when "*" is.
// A weight of 0 means "not acceptable", so "gzip;q=0" refuses it.
func AcceptsGzip(values []string) bool {
	gzip, star := -1.0, -1.0
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(elem, ";")
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(name), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil || f < 0 || f > 1 {
						f = 0 // a weight we cannot read is no consent
					}
					q = f
				}
			}
			switch c := strings.TrimSpace(coding); {
			case strings.EqualFold(c, "gzip"), strings.EqualFold(c, "x-gzip"):
				gzip = max(gzip, q)
			case c == "*":
				star = max(star, q)
			}
		}
	}
	if gzip >= 0 {
		return gzip > 0
	}
	return star > 0
}
