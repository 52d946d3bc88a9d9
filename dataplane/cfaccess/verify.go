// This file implements the Verifier.

package cfaccess

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// MaxTokenBytes bounds a token: Access tokens are about a kilobyte, more
// with many custom claims.
const MaxTokenBytes = 16 << 10

// DefaultLeeway is how far the clock may be off Cloudflare's either way
// when exp, nbf and iat are compared.
const DefaultLeeway = 30 * time.Second

// Identity is what a verified token says of the requester. It is shared
// by every request that presents the same token: read it, never change it.
type Identity struct {
	// Email is the user's, as the token has it; empty for a service token.
	Email string
	// Subject is the user's ID (sub).
	Subject string
	// Groups are the token's groups claim (or its custom claims' groups),
	// when the identity provider sends them.
	Groups []string
	// ServiceToken is a service token's client ID (common_name); empty
	// for a user.
	ServiceToken string

	groupsValue       string // Groups joined by ", ", for a header
	email             string // Email, lowered, for the policy
	issuer            string
	audience          []string
	expiry, notBefore time.Time // notBefore: the later of nbf and iat
	kid               string
	keyDigest         [32]byte
}

// GroupsValue is Groups joined by ", ", as a header carries them.
func (id *Identity) GroupsValue() string { return id.groupsValue }

// Verifier verifies tokens and keeps those that passed (see the package
// doc). It is safe for concurrent use.
type Verifier struct {
	leeway time.Duration
	cache  *cache
}

// NewVerifier is a verifier allowing leeway on the clock (DefaultLeeway
// when 0), keeping verified tokens in at most cacheBytes.
func NewVerifier(leeway time.Duration, cacheBytes int64) *Verifier {
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	return &Verifier{leeway: leeway, cache: newCache(cacheBytes)}
}

// Verify checks token against the team's keys and the policy at time now.
// It returns the requester's identity, or why the token is refused.
func (v *Verifier) Verify(token string, keys *Keys, p *Policy, now time.Time) (*Identity, Reason) {
	switch {
	case token == "":
		return nil, ReasonMissing
	case len(token) > MaxTokenBytes:
		return nil, ReasonTooLarge
	case keys.Len() == 0:
		return nil, ReasonNoKeys
	}
	id, ok := v.cache.get(token)
	if !ok || !keys.holds(id.kid, id.keyDigest) {
		var r Reason
		if id, r = verifySigned(token, keys); r != ReasonNone {
			return nil, r
		}
		if now.Before(id.expiry.Add(v.leeway)) {
			v.cache.put(token, id, now)
		}
	}
	if r := v.checkClaims(id, p, now); r != ReasonNone {
		return nil, r
	}
	return id, ReasonNone
}

// verifySigned is steps 2 to 4 of the package doc: the token's form, its
// algorithm, its key and its signature, then the claims it carries.
func verifySigned(token string, keys *Keys) (*Identity, Reason) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		if _, ok := errors.AsType[*jose.ErrUnexpectedSignatureAlgorithm](err); ok {
			return nil, ReasonAlgorithm
		}
		return nil, ReasonMalformed
	}
	if len(tok.Headers) != 1 {
		return nil, ReasonMalformed
	}
	kid := tok.Headers[0].KeyID
	k, ok := keys.lookup(kid)
	if kid == "" || !ok {
		return nil, ReasonUnknownKey
	}
	var std jwt.Claims
	var own ownClaims
	if err := tok.Claims(k.pub, &std, &own); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return nil, ReasonBadSignature
		}
		return nil, ReasonMalformed
	}
	if std.Expiry == nil {
		return nil, ReasonExpired // a token for ever is none we take
	}
	id := &Identity{
		Email: own.Email, Subject: std.Subject, Groups: own.groups(), ServiceToken: own.CommonName,
		email: strings.ToLower(own.Email), issuer: std.Issuer, audience: std.Audience,
		expiry: std.Expiry.Time(), kid: kid, keyDigest: k.digest,
	}
	id.groupsValue = strings.Join(id.Groups, ", ")
	// The identity goes to the backend in header fields: a value those
	// could not carry (a control character) is no identity we pass on.
	for _, v := range []string{id.Email, id.Subject, id.groupsValue, id.ServiceToken} {
		if !httpsyntax.ValidFieldValue(v) {
			return nil, ReasonMalformed
		}
	}
	for _, t := range []*jwt.NumericDate{std.NotBefore, std.IssuedAt} {
		if t != nil && t.Time().After(id.notBefore) {
			id.notBefore = t.Time()
		}
	}
	return id, ReasonNone
}

// checkClaims is step 5 and 6: issuer, audience, time and the policy's
// requirements, on a verified token's claims (kept or new).
func (v *Verifier) checkClaims(id *Identity, p *Policy, now time.Time) Reason {
	switch {
	case id.issuer != p.Issuer:
		return ReasonWrongIssuer
	case !p.hasAudience(id.audience):
		return ReasonWrongAudience
	case !now.Before(id.expiry.Add(v.leeway)):
		return ReasonExpired
	case now.Before(id.notBefore.Add(-v.leeway)):
		return ReasonNotYetValid
	case !p.admits(id):
		return ReasonNotAllowed
	}
	return ReasonNone
}

// ownClaims are the claims of Access tokens beyond RFC 7519's.
type ownClaims struct {
	Email      string          `json:"email"`
	CommonName string          `json:"common_name"`
	Groups     json.RawMessage `json:"groups"`
	Custom     struct {
		Groups json.RawMessage `json:"groups"`
	} `json:"custom"`
}

// groups are the groups claim, at the top or among the custom claims,
// as a list of strings or one string; anything else is no groups.
func (c *ownClaims) groups() []string {
	raw := c.Groups
	if len(raw) == 0 {
		raw = c.Custom.Groups
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return []string{one}
	}
	return nil
}
