package translate

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// gep2257 is the grammar of GEP-2257 as the Gateway API CRDs spell it.
var gep2257 = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// FuzzParseDuration checks parseDuration against the GEP-2257 grammar: it
// accepts exactly the strings the grammar accepts, and sums their parts.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1h", "1h30m", "500ms", "0s", "99999ms", "1h2m3s4ms", "", "1", "1.5s", "1d", "123456s", "1h1m1s1ms1s", "1msm"} {
		f.Add(s)
	}
	pair := regexp.MustCompile(`([0-9]+)(ms|h|m|s)`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if ok := gep2257.MatchString(s); ok != (err == nil) {
			t.Fatalf("parseDuration(%q) error %v; grammar says valid=%v", s, err, ok)
		}
		if err != nil {
			return
		}
		var want time.Duration
		for _, m := range pair.FindAllStringSubmatch(s, -1) {
			n, _ := strconv.Atoi(m[1])
			unit := map[string]time.Duration{"h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond}[m[2]]
			want += time.Duration(n) * unit
		}
		if d != want {
			t.Fatalf("parseDuration(%q) = %v, want %v", s, d, want)
		}
	})
}
