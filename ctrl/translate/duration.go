// This file parses Gateway API durations.

package translate

import (
	"fmt"
	"time"
)

// parseDuration reads a Gateway API duration (GEP-2257): one to four
// <number><unit> pairs, numbers of at most five digits, units h, m, s or
// ms, e.g. "1h30m" or "500ms". It is stricter than time.ParseDuration on
// purpose: values another implementation would reject are rejected here.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var total time.Duration
	pairs := 0
	for i := 0; i < len(s); {
		start := i
		var n int64
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int64(s[i]-'0')
			i++
		}
		if digits := i - start; digits == 0 || digits > 5 {
			return 0, fmt.Errorf("duration %q: each number needs 1 to 5 digits", s)
		}
		var unit time.Duration
		switch {
		case i+1 < len(s) && s[i] == 'm' && s[i+1] == 's':
			unit, i = time.Millisecond, i+2
		case i < len(s) && s[i] == 'h':
			unit, i = time.Hour, i+1
		case i < len(s) && s[i] == 'm':
			unit, i = time.Minute, i+1
		case i < len(s) && s[i] == 's':
			unit, i = time.Second, i+1
		default:
			return 0, fmt.Errorf("duration %q: unit must be h, m, s or ms", s)
		}
		if pairs++; pairs > 4 {
			return 0, fmt.Errorf("duration %q: at most 4 number-unit pairs", s)
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}
