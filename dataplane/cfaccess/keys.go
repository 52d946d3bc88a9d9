// This file implements a team's signing keys.

package cfaccess

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// MinRSABits is the smallest RSA modulus a key may have.
const MinRSABits = 2048

// maxKeys bounds a team's key set: Access publishes two (the current key
// and the one it replaced).
const maxKeys = 16

// Keys are one Access team's token signing keys, by kid.
type Keys struct {
	byID map[string]key
}

type key struct {
	pub *rsa.PublicKey
	// digest identifies the key itself, so that a cached verification
	// holds only while the same key is published under its kid.
	digest [32]byte
}

// ParseKeys reads a team's certs document (its JSON Web Key Set, RFC 7517
// §5: {"keys":[…]}; other members are ignored). It keeps the RSA public
// keys of at least MinRSABits bits that have a kid and are meant for
// signatures with RS256 (use and alg, when given, say so), and says why
// it left out the others. A set with no usable key is an error: every
// token would be refused.
func ParseKeys(doc []byte) (*Keys, []string, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, nil, fmt.Errorf("access keys: %w", err)
	}
	if len(set.Keys) > maxKeys {
		return nil, nil, fmt.Errorf("access keys: %d keys, more than the %d a team publishes", len(set.Keys), maxKeys)
	}
	k := &Keys{byID: make(map[string]key, len(set.Keys))}
	var skipped []string
	for i, raw := range set.Keys {
		kid, pub, why := usableKey(raw)
		switch {
		case why != "":
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %s", i, kid, why))
		case k.byID[kid].pub != nil:
			return nil, skipped, fmt.Errorf("access keys: kid %q names two keys", kid)
		default:
			k.byID[kid] = key{pub: pub, digest: digestOf(pub)}
		}
	}
	if len(k.byID) == 0 {
		return nil, skipped, errors.New("access keys: no usable key (RSA, at least 2048 bits, with a kid, for RS256 signatures): " + strings.Join(skipped, "; "))
	}
	return k, skipped, nil
}

// usableKey returns a key's kid and public key, or why it cannot verify
// Access tokens.
func usableKey(raw json.RawMessage) (kid string, pub *rsa.PublicKey, why string) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil {
		return "", nil, err.Error()
	}
	kid = jwk.KeyID
	rsaKey, ok := jwk.Key.(*rsa.PublicKey)
	switch {
	case kid == "":
		return kid, nil, "no kid"
	case !jwk.IsPublic():
		return kid, nil, "a private key: only public keys are taken"
	case !ok:
		return kid, nil, fmt.Sprintf("a %T, not an RSA public key", jwk.Key)
	case jwk.Use != "" && jwk.Use != "sig":
		return kid, nil, fmt.Sprintf("use %q, not sig", jwk.Use)
	case jwk.Algorithm != "" && jwk.Algorithm != string(jose.RS256):
		return kid, nil, fmt.Sprintf("alg %q, not RS256", jwk.Algorithm)
	case rsaKey.N.BitLen() < MinRSABits:
		return kid, nil, fmt.Sprintf("%d bits, fewer than %d", rsaKey.N.BitLen(), MinRSABits)
	}
	return kid, rsaKey, ""
}

func digestOf(pub *rsa.PublicKey) [32]byte {
	h := sha256.New()
	h.Write(pub.N.Bytes())
	fmt.Fprintf(h, "/%d", pub.E)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// Len is the number of usable keys.
func (k *Keys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.byID)
}

// lookup is the key of kid.
func (k *Keys) lookup(kid string) (key, bool) {
	if k == nil {
		return key{}, false
	}
	c, ok := k.byID[kid]
	return c, ok
}

// holds says whether kid still names the key of digest.
func (k *Keys) holds(kid string, digest [32]byte) bool {
	c, ok := k.lookup(kid)
	return ok && c.digest == digest
}
