// This file implements query matches.

package matcher

import (
	"regexp"
	"strings"
	"sync"
)

// maxQueryParams mirrors net/url: a query with more pairs than this parses
// to nothing, so backends written in Go would see no parameters either.
const maxQueryParams = 10000

// queryCond is one query parameter condition. The raw query is scanned in
// place: no url.Values is built, and values are compared while decoding.
type queryCond struct {
	name  string
	value string
	re    *regexp.Regexp
}

// matches finds the parameter's first value, with url.ParseQuery's rules,
// and compares it.
func (q *queryCond) matches(rawQuery string, bufs *sync.Pool) bool {
	if len(rawQuery) >= maxQueryParams && strings.Count(rawQuery, "&") >= maxQueryParams {
		return false
	}
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" || strings.IndexByte(pair, ';') >= 0 {
			continue // net/url skips these pairs
		}
		key, val, _ := strings.Cut(pair, "=")
		if !unescapedEquals(key, q.name) || !validQueryEscapes(val) {
			continue
		}
		return q.matchValue(val, bufs)
	}
	return false
}

// matchValue compares a raw (still escaped, known valid) value.
func (q *queryCond) matchValue(raw string, bufs *sync.Pool) bool {
	if q.re == nil {
		return unescapedEquals(raw, q.value)
	}
	if strings.IndexByte(raw, '%') < 0 && strings.IndexByte(raw, '+') < 0 {
		return q.re.MatchString(raw)
	}
	bp := getBuf(bufs)
	b := appendUnescaped((*bp)[:0], raw)
	ok := q.re.Match(b)
	putBuf(bufs, bp, b)
	return ok
}

// unescapedEquals reports whether url.QueryUnescape(raw) succeeds and equals
// want, decoding as it compares.
func unescapedEquals(raw, want string) bool {
	j := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(raw) {
				return false
			}
			hi, ok1 := unhex(raw[i+1])
			lo, ok2 := unhex(raw[i+2])
			if !ok1 || !ok2 {
				return false
			}
			c = hi<<4 | lo
			i += 2
		}
		if j >= len(want) || want[j] != c {
			return false
		}
		j++
	}
	return j == len(want)
}

// validQueryEscapes reports whether url.QueryUnescape(raw) would succeed.
func validQueryEscapes(raw string) bool {
	for i := strings.IndexByte(raw, '%'); i >= 0; {
		if i+2 >= len(raw) {
			return false
		}
		if _, ok := unhex(raw[i+1]); !ok {
			return false
		}
		if _, ok := unhex(raw[i+2]); !ok {
			return false
		}
		next := strings.IndexByte(raw[i+3:], '%')
		if next < 0 {
			break
		}
		i += 3 + next
	}
	return true
}

// appendUnescaped appends url.QueryUnescape(raw) to b; raw must be valid.
func appendUnescaped(b []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			hi, _ := unhex(raw[i+1])
			lo, _ := unhex(raw[i+2])
			b = append(b, hi<<4|lo)
			i += 2
		default:
			b = append(b, c)
		}
	}
	return b
}
