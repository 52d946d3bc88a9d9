// This file defines the Access applications AccessPolicies ask for.

package translate

// AccessApp is the Cloudflare Access application an AccessPolicy asks the
// controller to keep (spec.application): a self-hosted application over
// the public hostnames the policy protects, whose Access policies let in
// the policy's emails and email domains, and service tokens when it
// names any. Its audience tag becomes one of the policy's audiences once
// the Cloudflare sync reports it (TunnelState.AccessApps).
type AccessApp struct {
	// Policy is the AccessPolicy's namespace/name.
	Policy string `json:"policy"`
	// Name is the application's name in Cloudflare; unique among the
	// applications one tunnel's sync keeps.
	Name string `json:"name"`
	// SessionDuration is how long a login lasts ("24h"); empty:
	// Cloudflare's default.
	SessionDuration string `json:"sessionDuration,omitempty"`
	// Hostnames are the public hostnames covered, sorted.
	Hostnames []string `json:"hostnames"`
	// Emails and EmailDomains are who may log in.
	Emails       []string `json:"emails,omitempty"`
	EmailDomains []string `json:"emailDomains,omitempty"`
	// ServiceTokens lets any valid service token of the account in (the
	// proxy then checks the policy's client IDs).
	ServiceTokens bool `json:"serviceTokens,omitempty"`
}

// AccessAppState is what the Cloudflare sync achieved for one AccessApp:
// the application's audience tag, or why there is none yet.
type AccessAppState struct {
	AUD string
	// Problem says what failed (Cloudflare's refusal, say); the AUD of an
	// application made before stays.
	Problem string
}
