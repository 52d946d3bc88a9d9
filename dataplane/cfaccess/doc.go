// Package cfaccess verifies Cloudflare Access application tokens, so that
// a route protected by Access is refused to any request Access did not
// approve, however it reached the proxy: through the tunnel, a second
// hostname, or from inside the cluster.
//
// # The token
//
// Access signs a JSON Web Token for each approved request and sends it in
// the Cf-Access-Jwt-Assertion header (browsers also carry it in the
// CF_Authorization cookie; the header wins when both are there). It is a
// JWS in compact serialization (RFC 7515 §3.1) whose payload is a JWT
// claims set (RFC 7519):
//
//	header   {"alg":"RS256","kid":"<key ID>","typ":"JWT"}
//	payload  {"aud":["<application AUD tag>"],"iss":"https://<team>.cloudflareaccess.com",
//	          "exp":…,"nbf":…,"iat":…,"sub":"<user ID>","email":"…","type":"app",
//	          "common_name":"<service token client ID>" (service tokens), custom claims…}
//
// # What is checked, in order
//
//  1. Size: at most MaxTokenBytes; no token at all is ReasonMissing.
//  2. Form and algorithm: the JWS is parsed by go-jose, told that RS256
//     is the one algorithm we take. The token's own alg never chooses:
//     "none", HMAC (which would verify with the public key as its
//     secret) and every other algorithm are refused before any key is
//     looked at (ReasonAlgorithm).
//  3. Key: the header's kid must name a key of the team's published set
//     (Keys, parsed from the team's certs document by ParseKeys: RSA
//     public keys of at least 2048 bits, each with a kid). A token
//     without a kid, or naming another, is ReasonUnknownKey: we never try
//     keys in turn, nor take a key the token carries (jwk, jku, x5c).
//  4. Signature, with that key alone.
//  5. Claims: iss must be the team's issuer, aud must hold one of the
//     policy's audiences, exp must be present; exp, nbf and iat are
//     compared with the clock allowing Leeway either way (clocks of
//     Cloudflare and the cluster drift; Access tokens live minutes).
//  6. The policy's requirements (Policy): when it names emails, email
//     domains, groups or service tokens, the token must match one entry
//     of one of them.
//
// # Cost, and the cache
//
// An RS256 verification costs tens of microseconds, far more than the
// rest of the request path, and a browser sends the same token with every
// request until it expires. So a token that passed steps 1 to 4, and the
// claims it carries, are kept (Verifier's cache) until it expires. A hit
// redoes step 5 and 6 on the kept claims, and checks that the key that
// signed it is still in the team's set (keys are matched by kid and by a
// digest of the key itself, so a config that republishes the same keys
// keeps the cache, and a key withdrawn invalidates what it signed). The
// cache is keyed by the whole token string, compared in full, so no
// other token can ever take a kept token's place; its size is bounded in
// bytes, expired entries go first, and when full it forgets an arbitrary
// part rather than grow.
package cfaccess
