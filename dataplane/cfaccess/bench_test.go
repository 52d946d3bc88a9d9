package cfaccess

import "testing"

// BenchmarkVerify: a token the verifier kept (every request of a browser
// after its first), and one it meets for the first time (RS256 and the
// claims' JSON).
func BenchmarkVerify(b *testing.B) {
	team, _ := testKeys(b)
	keys, p := teamKeys(b), NewPolicy(testTeam, []string{testAud})
	p.Require(nil, []string{"example.com"}, nil, nil)
	token := sign(b, team, testKid, claims(), nil)
	b.Run("cached", func(b *testing.B) {
		v := NewVerifier(0, 0)
		v.Verify(token, keys, p, testNow)
		b.ReportAllocs()
		for b.Loop() {
			if _, r := v.Verify(token, keys, p, testNow); r != ReasonNone {
				b.Fatal(r)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		v := NewVerifier(0, 0)
		b.ReportAllocs()
		for b.Loop() {
			id, r := verifySigned(token, keys) // what a miss does before keeping it
			if r == ReasonNone {
				r = v.checkClaims(id, p, testNow)
			}
			if r != ReasonNone {
				b.Fatal(r)
			}
		}
	})
}
