// This file names why a token was refused.

package cfaccess

// Reason says why a token was refused; ReasonNone when it was not. Each
// has a name fit for a metric label (String).
type Reason uint8

const (
	ReasonNone Reason = iota
	// ReasonMissing: the request carries no token.
	ReasonMissing
	// ReasonTooLarge: the token is over MaxTokenBytes.
	ReasonTooLarge
	// ReasonMalformed: not a compact JWS with a JSON claims set.
	ReasonMalformed
	// ReasonAlgorithm: signed with another algorithm than RS256.
	ReasonAlgorithm
	// ReasonUnknownKey: its kid names no key of the team's set, or it has
	// none.
	ReasonUnknownKey
	// ReasonNoKeys: no key of the team is known, so nothing can pass.
	ReasonNoKeys
	// ReasonBadSignature: the named key did not sign it.
	ReasonBadSignature
	// ReasonExpired: past its exp (with Leeway), or without one.
	ReasonExpired
	// ReasonNotYetValid: before its nbf or iat (with Leeway).
	ReasonNotYetValid
	// ReasonWrongIssuer: issued by another team.
	ReasonWrongIssuer
	// ReasonWrongAudience: issued for another application.
	ReasonWrongAudience
	// ReasonNotAllowed: valid, but not who the policy names.
	ReasonNotAllowed

	numReasons
)

// NumReasons is the number of reasons, ReasonNone included: the length of
// an array indexed by Reason.
const NumReasons = int(numReasons)

var reasonNames = [numReasons]string{
	ReasonNone:          "none",
	ReasonMissing:       "missing",
	ReasonTooLarge:      "too_large",
	ReasonMalformed:     "malformed",
	ReasonAlgorithm:     "algorithm",
	ReasonUnknownKey:    "unknown_key",
	ReasonNoKeys:        "no_keys",
	ReasonBadSignature:  "bad_signature",
	ReasonExpired:       "expired",
	ReasonNotYetValid:   "not_yet_valid",
	ReasonWrongIssuer:   "wrong_issuer",
	ReasonWrongAudience: "wrong_audience",
	ReasonNotAllowed:    "not_allowed",
}

// Reasons lists every refusal reason, for metrics that want them all.
func Reasons() []Reason {
	out := make([]Reason, 0, numReasons-1)
	for r := ReasonMissing; r < numReasons; r++ {
		out = append(out, r)
	}
	return out
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}
