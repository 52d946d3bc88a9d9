package fuzz

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// FuzzAccessKeys feeds bytes to cfaccess.ParseKeys as a team's certs
// document: what the controller fetches from Cloudflare and every proxy
// reads from its config. It must never panic, and what it accepts must
// agree with an independent reading of the JSON: a "keys" array of at
// most 16 entries, every entry either kept or said to be skipped, and
// no more kept than there are entries of kty RSA with a kid.
func FuzzAccessKeys(f *testing.F) {
	key := accessKey(f)
	valid := string(accessCerts(f, &key.PublicKey))
	f.Add([]byte(valid))
	f.Add([]byte(strings.Replace(valid, `"alg":"RS256"`, `"alg":"HS256"`, 1)))
	f.Add([]byte(strings.Replace(valid, `"use":"sig"`, `"use":"enc"`, 1)))
	f.Add([]byte(strings.Replace(valid, `"kid":"`+accessKid+`",`, ``, 1)))
	entry := valid[strings.Index(valid, "[")+1 : strings.Index(valid, "]")]
	f.Add([]byte(`{"keys":[` + entry + "," + entry + `]}`)) // one kid twice
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"small","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","kid":"ec","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, skipped, err := cfaccess.ParseKeys(doc)
		if err != nil {
			if keys != nil {
				t.Fatalf("refused (%v) yet keys returned", err)
			}
			return
		}
		var set struct {
			Keys []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(doc, &set); err != nil {
			t.Fatalf("accepted a document encoding/json refuses: %v", err)
		}
		n := keys.Len()
		if n < 1 || len(set.Keys) > 16 || n+len(skipped) != len(set.Keys) {
			t.Fatalf("%d kept, %d skipped, of %d entries", n, len(skipped), len(set.Keys))
		}
		rsaWithKid := 0
		for _, raw := range set.Keys {
			var e struct {
				Kty string `json:"kty"`
				Kid string `json:"kid"`
			}
			if json.Unmarshal(raw, &e) == nil && e.Kty == "RSA" && e.Kid != "" {
				rsaWithKid++
			}
		}
		if n > rsaWithKid {
			t.Fatalf("%d keys kept, but only %d entries are RSA keys with a kid", n, rsaWithKid)
		}
	})
}
