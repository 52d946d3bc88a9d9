package cffake_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
)

// An application with a tag and a reusable policy, through cloudflare-go:
// created, listed, changed and deleted, with the rules the fake keeps.
func TestAccessApplicationLifecycle(t *testing.T) {
	f, c := setup(t)
	ctx := t.Context()
	apps, policies, tags := c.ZeroTrust.Access.Applications, c.ZeroTrust.Access.Policies, c.ZeroTrust.Access.Tags

	app := func(domain string, tags []string, policy string) zero_trust.AccessApplicationNewParams {
		body := zero_trust.AccessApplicationNewParamsBodySelfHostedApplication{
			Domain: cloudflare.F(domain), Type: cloudflare.F(zero_trust.ApplicationTypeSelfHosted), Name: cloudflare.F("app"),
			SessionDuration: cloudflare.F("12h"), Tags: cloudflare.F(tags),
			Destinations: cloudflare.F([]zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationDestinationUnion{
				zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationDestinationsPublicDestination{
					Type: cloudflare.F(zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationDestinationsPublicDestinationTypePublic),
					URI:  cloudflare.F(domain)}}),
		}
		if policy != "" {
			body.Policies = cloudflare.F([]zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationPolicyUnion{
				zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationPoliciesAccessAppPolicyLink{ID: cloudflare.F(policy), Precedence: cloudflare.F(int64(1))}})
		}
		return zero_trust.AccessApplicationNewParams{AccountID: cloudflare.F(acctID), Body: body}
	}

	// A tag must exist first.
	_, err := apps.New(ctx, app("app.example.com", []string{"ours"}, ""))
	apiErr(t, err, http.StatusBadRequest, 12130)
	_, err = tags.New(ctx, zero_trust.AccessTagNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("ours")})
	check(t, err)
	_, err = tags.New(ctx, zero_trust.AccessTagNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("ours")})
	apiErr(t, err, http.StatusConflict, 12132)

	// A policy needs a rule it understands.
	_, err = policies.New(ctx, zero_trust.AccessPolicyNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("p"),
		Decision: cloudflare.F(zero_trust.DecisionAllow), Include: cloudflare.F([]zero_trust.AccessRuleUnionParam{})})
	apiErr(t, err, http.StatusBadRequest, 12130)
	p, err := policies.New(ctx, zero_trust.AccessPolicyNewParams{AccountID: cloudflare.F(acctID), Name: cloudflare.F("p"),
		Decision: cloudflare.F(zero_trust.DecisionAllow), Include: cloudflare.F([]zero_trust.AccessRuleUnionParam{
			zero_trust.EmailRuleParam{Email: cloudflare.F(zero_trust.EmailRuleEmailParam{Email: cloudflare.F("ana@example.com")})},
			zero_trust.DomainRuleParam{EmailDomain: cloudflare.F(zero_trust.DomainRuleEmailDomainParam{Domain: cloudflare.F("example.org")})},
		})})
	check(t, err)

	created, err := apps.New(ctx, app("app.example.com", []string{"ours"}, p.ID))
	check(t, err)
	if len(created.AUD) != 64 || created.ID == "" {
		t.Fatalf("created: id %q aud %q", created.ID, created.AUD)
	}
	got := f.AccessApps(acctID)
	if len(got) != 1 || got[0].AUD != created.AUD || !slices.Equal(got[0].Tags, []string{"ours"}) || len(got[0].Policies) != 1 ||
		!slices.Equal(got[0].Policies[0].Include, []string{`{"email":{"email":"ana@example.com"}}`, `{"email_domain":{"domain":"example.org"}}`}) ||
		got[0].SessionDuration != "12h" || !slices.Equal(got[0].Destinations, []string{"app.example.com"}) {
		t.Fatalf("stored %+v", got)
	}
	var listed []string
	iter := apps.ListAutoPaging(ctx, zero_trust.AccessApplicationListParams{AccountID: cloudflare.F(acctID)})
	for iter.Next() {
		listed = append(listed, iter.Current().AUD)
	}
	check(t, iter.Err())
	if !slices.Equal(listed, []string{created.AUD}) {
		t.Errorf("listed %q", listed)
	}

	// In use, the policy stays; the application goes first.
	_, err = policies.Delete(ctx, p.ID, zero_trust.AccessPolicyDeleteParams{AccountID: cloudflare.F(acctID)})
	apiErr(t, err, http.StatusBadRequest, 12133)
	_, err = apps.Delete(ctx, zero_trust.AppIDParam(created.ID), zero_trust.AccessApplicationDeleteParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
	_, err = policies.Delete(ctx, p.ID, zero_trust.AccessPolicyDeleteParams{AccountID: cloudflare.F(acctID)})
	check(t, err)
	if len(f.AccessApps(acctID)) != 0 || len(f.AccessPolicies(acctID)) != 0 {
		t.Errorf("left: %+v %+v", f.AccessApps(acctID), f.AccessPolicies(acctID))
	}
}
