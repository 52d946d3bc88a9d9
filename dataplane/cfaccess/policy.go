// This file implements Policy, what a protected rule asks of a token.

package cfaccess

import (
	"slices"
	"strings"
)

// Policy is what a protected route rule asks of a token: the team that
// issues it, the applications it may be issued for, and, optionally, who
// may pass. It is built once per config (NewPolicy) and read by every
// request.
type Policy struct {
	// Issuer is the team's iss: "https://<team domain>".
	Issuer string
	// Audiences are the Access applications' AUD tags; a token's aud
	// must hold one.
	Audiences []string
	// The requirements: with none, every valid token of the audiences
	// passes; with any, a token must match one entry of one of them.
	// Emails and EmailDomains compare case-insensitively; Groups and
	// ServiceTokens (a service token's client ID, its common_name) exactly.
	Emails, EmailDomains, Groups, ServiceTokens []string
}

// NewPolicy is a policy for the team domain ("<team>.cloudflareaccess.com",
// with or without "https://") and audiences; requirements are set on it
// after. Emails and domains are lowered here, once.
func NewPolicy(teamDomain string, audiences []string) *Policy {
	d := strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(teamDomain), "https://"), "/")
	return &Policy{Issuer: Issuer(d), Audiences: slices.Clone(audiences)}
}

// Require sets who may pass (see Policy).
func (p *Policy) Require(emails, emailDomains, groups, serviceTokens []string) {
	lower := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = strings.ToLower(strings.TrimPrefix(s, "@"))
		}
		return out
	}
	p.Emails, p.EmailDomains = lower(emails), lower(emailDomains)
	p.Groups, p.ServiceTokens = slices.Clone(groups), slices.Clone(serviceTokens)
}

// restricted says whether the policy names who may pass.
func (p *Policy) restricted() bool {
	return len(p.Emails)+len(p.EmailDomains)+len(p.Groups)+len(p.ServiceTokens) > 0
}

// admits checks a verified token's identity against the requirements.
func (p *Policy) admits(id *Identity) bool {
	if !p.restricted() {
		return true
	}
	if id.email != "" {
		if slices.Contains(p.Emails, id.email) {
			return true
		}
		if at := strings.LastIndexByte(id.email, '@'); at >= 0 && slices.Contains(p.EmailDomains, id.email[at+1:]) {
			return true
		}
	}
	if slices.ContainsFunc(p.Groups, func(g string) bool { return slices.Contains(id.Groups, g) }) {
		return true
	}
	return id.ServiceToken != "" && slices.Contains(p.ServiceTokens, id.ServiceToken)
}

// hasAudience says whether aud holds one of the policy's audiences.
func (p *Policy) hasAudience(aud []string) bool {
	for _, a := range p.Audiences {
		if slices.Contains(aud, a) {
			return true
		}
	}
	return false
}
