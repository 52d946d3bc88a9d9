package cffake

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// pageLimits are an endpoint's per_page default and bounds, from
// Cloudflare's OpenAPI description. Out-of-range values are refused rather
// than clamped, so a caller relying on a large page finds out here.
type pageLimits struct{ def, min, max int }

var (
	accountPages = pageLimits{20, 5, 50}
	zonePages    = pageLimits{20, 5, 50}
	tunnelPages  = pageLimits{20, 1, 1000}
	recordPages  = pageLimits{100, 1, 5000000}
)

// paginate cuts one page out of items. A page past the end is empty, not an
// error: cloudflare-go's auto-pager stops on the first empty page.
func paginate[T any](q url.Values, items []T, lim pageLimits) ([]T, *resultInfo, error) {
	page, err := intParam(q, "page", 1, 1, math.MaxInt32)
	if err != nil {
		return nil, nil, err
	}
	per, err := intParam(q, "per_page", lim.def, lim.min, lim.max)
	if err != nil {
		return nil, nil, err
	}
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	out := items[start:end]
	return out, &resultInfo{
		Page: page, PerPage: per, Count: len(out), TotalCount: len(items),
		TotalPages: (len(items) + per - 1) / per,
	}, nil
}

// whole is the result_info of a list the API does not page (Load
// Balancing's): everything on one page.
func whole(n int) *resultInfo {
	return &resultInfo{Page: 1, PerPage: max(n, 1), Count: n, TotalCount: n, TotalPages: 1}
}

// intParam parses a whole number; cloudflare-go sends these as floats
// formatted without a fraction ("2").
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		return 0, newErr(http.StatusBadRequest, codeInvalidRequest,
			fmt.Sprintf("Invalid request: %s must be an integer between %d and %d", name, lo, hi))
	}
	return int(v), nil
}

// boolParam parses an optional boolean filter.
func boolParam(q url.Values, name string) (val, set bool, err error) {
	s := q.Get(name)
	if s == "" {
		return false, false, nil
	}
	v, perr := strconv.ParseBool(s)
	if perr != nil {
		return false, false, newErr(http.StatusBadRequest, codeInvalidRequest,
			fmt.Sprintf("Invalid request: %s must be true or false", name))
	}
	return v, true, nil
}

// filters combines predicates the way Cloudflare's match=all|any does.
type filters[T any] struct{ preds []func(T) bool }

func (fs *filters[T]) add(p func(T) bool) { fs.preds = append(fs.preds, p) }

func (fs *filters[T]) apply(items []T, matchAny bool) []T {
	var out []T
	for _, it := range items {
		if fs.keep(it, matchAny) {
			out = append(out, it)
		}
	}
	return out
}

func (fs *filters[T]) keep(it T, matchAny bool) bool {
	if len(fs.preds) == 0 {
		return true
	}
	for _, p := range fs.preds {
		if p(it) == matchAny {
			return matchAny
		}
	}
	return !matchAny
}

func matchAnyParam(q url.Values) (bool, error) {
	switch q.Get("match") {
	case "", "all":
		return false, nil
	case "any":
		return true, nil
	}
	return false, newErr(http.StatusBadRequest, codeInvalidRequest, "Invalid request: match must be all or any")
}

// textOp builds a case-insensitive string test for DNS-style filters
// (name.exact, name.contains, ...).
func textOp(op, want string) func(string) bool {
	want = strings.ToLower(want)
	return func(got string) bool {
		got = strings.ToLower(got)
		switch op {
		case "contains":
			return strings.Contains(got, want)
		case "startswith":
			return strings.HasPrefix(got, want)
		case "endswith":
			return strings.HasSuffix(got, want)
		}
		return got == want
	}
}
