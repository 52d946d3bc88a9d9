package cloudflare

import (
	"encoding/json"
	"testing"
)

// FuzzParseRule: a listed policy's rule, whatever Cloudflare (or someone
// in between) sends, is read without a panic; a rule read as one the sync
// writes encodes back, through cloudflare-go's types, to the same rule,
// so samePolicy never calls a policy ours that differs from the wanted
// one.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{`{"email":{"email":"a@example.com"}}`, `{"email_domain":{"domain":"example.org"}}`,
		`{"any_valid_service_token":{}}`, `{"any_valid_service_token":{"x":1}}`, `{"email":{"email":1}}`,
		`{"group":{"id":"g"}}`, `{"email":{},"email_domain":{}}`, `[]`, `null`, `{"email":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, ok := parseRule(raw)
		if !ok {
			return
		}
		b, err := json.Marshal(r.param())
		if err != nil {
			t.Fatalf("%+v does not encode: %v", r, err)
		}
		back, ok := parseRule(b)
		if !ok || back != r {
			t.Fatalf("%s read as %+v, written as %s, read back as %+v (%v)", raw, r, b, back, ok)
		}
	})
}
