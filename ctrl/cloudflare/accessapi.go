// This file implements the Access applications and policies part of the
// Cloudflare API client.

package cloudflare

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	cf "github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/packages/pagination"
	"github.com/cloudflare/cloudflare-go/v7/zero_trust"
)

// The Access calls of the sync (accessapps.go): applications, the
// reusable policies they link, and tags. Listings are read from each
// item's JSON into our own shapes (cloudflare-go's are unions of every
// application type).

// appRecord is an Access application as listed.
type appRecord struct {
	ID              string   `json:"id"`
	AUD             string   `json:"aud"`
	Name            string   `json:"name"`
	Domain          string   `json:"domain"`
	Type            string   `json:"type"`
	SessionDuration string   `json:"session_duration"`
	Tags            []string `json:"tags"`
	Destinations    []struct {
		Type string `json:"type"`
		URI  string `json:"uri"`
	} `json:"destinations"`
	Policies []struct {
		ID         string `json:"id"`
		Precedence int    `json:"precedence"`
	} `json:"policies"`
}

// policyRecord is a reusable Access policy as listed.
type policyRecord struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Decision string            `json:"decision"`
	Include  []json.RawMessage `json:"include"`
}

// appSpec is what the sync writes of an application.
type appSpec struct {
	Name, SessionDuration string
	Destinations          []string // the first is its domain
	Policies              []string // IDs, in precedence order
	Tags                  []string
}

// policySpec is what the sync writes of a reusable policy.
type policySpec struct {
	Name, Decision string
	Include        []accessRule
}

// accessRule is one include rule: a kind and its one value ("" for the
// kinds that have none).
type accessRule struct{ kind, value string }

// The rule kinds the sync writes.
const (
	ruleEmail             = "email"
	ruleEmailDomain       = "email_domain"
	ruleAnyServiceToken   = "any_valid_service_token"
	decisionAllow         = "allow"
	decisionNonIdentity   = "non_identity"
	selfHostedApplication = "self_hosted"
)

func (r accessRule) param() zero_trust.AccessRuleUnionParam {
	switch r.kind {
	case ruleEmail:
		return zero_trust.EmailRuleParam{Email: cf.F(zero_trust.EmailRuleEmailParam{Email: cf.F(r.value)})}
	case ruleEmailDomain:
		return zero_trust.DomainRuleParam{EmailDomain: cf.F(zero_trust.DomainRuleEmailDomainParam{Domain: cf.F(r.value)})}
	}
	return zero_trust.AnyValidServiceTokenRuleParam{AnyValidServiceToken: cf.F(zero_trust.AnyValidServiceTokenRuleAnyValidServiceTokenParam{})}
}

// parseRule reads a listed rule; ok is false for kinds the sync does not
// write (a policy holding one differs from any it wants).
func parseRule(raw json.RawMessage) (accessRule, bool) {
	var m map[string]map[string]any
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return accessRule{}, false
	}
	for kind, body := range m {
		switch kind {
		case ruleEmail:
			v, _ := body["email"].(string)
			return accessRule{kind, v}, true
		case ruleEmailDomain:
			v, _ := body["domain"].(string)
			return accessRule{kind, v}, true
		case ruleAnyServiceToken:
			return accessRule{kind: kind}, len(body) == 0
		}
	}
	return accessRule{}, false
}

func (a *api) listAccessApps(ctx context.Context, account string) ([]appRecord, error) {
	ctx = withOp(ctx, opAccessAppList)
	const per = 1000
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[zero_trust.AccessApplicationListResponse], error) {
		return a.accessApps.List(ctx, zero_trust.AccessApplicationListParams{AccountID: cf.F(account),
			Page: cf.F(int64(page)), PerPage: cf.F(int64(per))})
	})
	if err != nil {
		return nil, wrap("listing Access applications", err)
	}
	out := make([]appRecord, 0, len(list))
	for _, item := range list {
		var r appRecord
		if err := json.Unmarshal([]byte(item.JSON.RawJSON()), &r); err != nil {
			return nil, fmt.Errorf("listing Access applications: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (a *api) listAccessPolicies(ctx context.Context, account string) ([]policyRecord, error) {
	ctx = withOp(ctx, opAccessPolicyList)
	const per = 1000
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[zero_trust.AccessPolicyListResponse], error) {
		return a.accessPolicies.List(ctx, zero_trust.AccessPolicyListParams{AccountID: cf.F(account),
			Page: cf.F(int64(page)), PerPage: cf.F(int64(per))})
	})
	if err != nil {
		return nil, wrap("listing Access policies", err)
	}
	out := make([]policyRecord, 0, len(list))
	for _, item := range list {
		var r policyRecord
		if err := json.Unmarshal([]byte(item.JSON.RawJSON()), &r); err != nil {
			return nil, fmt.Errorf("listing Access policies: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (a *api) listAccessTags(ctx context.Context, account string) ([]string, error) {
	ctx = withOp(ctx, opAccessTagList)
	const per = 1000
	list, err := pages(ctx, per, func(page int) (*pagination.V4PagePaginationArray[zero_trust.Tag], error) {
		return a.accessTags.List(ctx, zero_trust.AccessTagListParams{AccountID: cf.F(account),
			Page: cf.F(int64(page)), PerPage: cf.F(int64(per))})
	})
	out := make([]string, 0, len(list))
	for _, t := range list {
		out = append(out, t.Name)
	}
	return out, wrap("listing Access tags", err)
}

func (a *api) createAccessTag(ctx context.Context, account, name string) error {
	ctx = withOp(ctx, opAccessTagCreate)
	_, err := a.accessTags.New(ctx, zero_trust.AccessTagNewParams{AccountID: cf.F(account), Name: cf.F(name)})
	return wrap("creating Access tag "+name, err)
}

func rules(rs []accessRule) []zero_trust.AccessRuleUnionParam {
	out := make([]zero_trust.AccessRuleUnionParam, len(rs))
	for i, r := range rs {
		out[i] = r.param()
	}
	return out
}

// createAccessPolicy creates a reusable policy and returns its ID.
func (a *api) createAccessPolicy(ctx context.Context, account string, p policySpec) (string, error) {
	ctx = withOp(ctx, opAccessPolicyCreate)
	res, err := a.accessPolicies.New(ctx, zero_trust.AccessPolicyNewParams{AccountID: cf.F(account), Name: cf.F(p.Name),
		Decision: cf.F(zero_trust.Decision(p.Decision)), Include: cf.F(rules(p.Include))})
	if err != nil {
		return "", wrap("creating Access policy "+p.Name, err)
	}
	return res.ID, nil
}

func (a *api) updateAccessPolicy(ctx context.Context, account, id string, p policySpec) error {
	ctx = withOp(ctx, opAccessPolicyUpdate)
	_, err := a.accessPolicies.Update(ctx, id, zero_trust.AccessPolicyUpdateParams{AccountID: cf.F(account), Name: cf.F(p.Name),
		Decision: cf.F(zero_trust.Decision(p.Decision)), Include: cf.F(rules(p.Include))})
	return wrap("updating Access policy "+p.Name, err)
}

// deleteAccessPolicy deletes a reusable policy; one already gone is no
// error.
func (a *api) deleteAccessPolicy(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opAccessPolicyDelete)
	_, err := a.accessPolicies.Delete(ctx, id, zero_trust.AccessPolicyDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	return wrap("deleting Access policy "+id, err)
}

// createAccessApp creates a self-hosted application and returns it.
func (a *api) createAccessApp(ctx context.Context, account string, s appSpec) (appRecord, error) {
	ctx = withOp(ctx, opAccessAppCreate)
	body := zero_trust.AccessApplicationNewParamsBodySelfHostedApplication{
		Type: cf.F(zero_trust.ApplicationTypeSelfHosted), Name: cf.F(s.Name), Domain: cf.F(s.Destinations[0]), Tags: cf.F(s.Tags),
	}
	if s.SessionDuration != "" {
		body.SessionDuration = cf.F(s.SessionDuration)
	}
	for _, d := range s.Destinations {
		body.Destinations.Value = append(body.Destinations.Value, zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationDestinationsPublicDestination{
			Type: cf.F(zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationDestinationsPublicDestinationTypePublic), URI: cf.F(d)})
	}
	body.Destinations.Present = true
	for i, id := range s.Policies {
		body.Policies.Value = append(body.Policies.Value, zero_trust.AccessApplicationNewParamsBodySelfHostedApplicationPoliciesAccessAppPolicyLink{
			ID: cf.F(id), Precedence: cf.F(int64(i + 1))})
	}
	body.Policies.Present = true
	res, err := a.accessApps.New(ctx, zero_trust.AccessApplicationNewParams{AccountID: cf.F(account), Body: body})
	if err != nil {
		return appRecord{}, wrap("creating Access application "+s.Name, err)
	}
	var r appRecord
	if err := json.Unmarshal([]byte(res.JSON.RawJSON()), &r); err != nil {
		return appRecord{}, fmt.Errorf("creating Access application %s: %w", s.Name, err)
	}
	return r, nil
}

// updateAccessApp replaces an application's settings with s.
func (a *api) updateAccessApp(ctx context.Context, account, id string, s appSpec) error {
	ctx = withOp(ctx, opAccessAppUpdate)
	body := zero_trust.AccessApplicationUpdateParamsBodySelfHostedApplication{
		Type: cf.F(zero_trust.ApplicationTypeSelfHosted), Name: cf.F(s.Name), Domain: cf.F(s.Destinations[0]), Tags: cf.F(s.Tags),
	}
	if s.SessionDuration != "" {
		body.SessionDuration = cf.F(s.SessionDuration)
	}
	for _, d := range s.Destinations {
		body.Destinations.Value = append(body.Destinations.Value, zero_trust.AccessApplicationUpdateParamsBodySelfHostedApplicationDestinationsPublicDestination{
			Type: cf.F(zero_trust.AccessApplicationUpdateParamsBodySelfHostedApplicationDestinationsPublicDestinationTypePublic), URI: cf.F(d)})
	}
	body.Destinations.Present = true
	for i, pid := range s.Policies {
		body.Policies.Value = append(body.Policies.Value, zero_trust.AccessApplicationUpdateParamsBodySelfHostedApplicationPoliciesAccessAppPolicyLink{
			ID: cf.F(pid), Precedence: cf.F(int64(i + 1))})
	}
	body.Policies.Present = true
	_, err := a.accessApps.Update(ctx, zero_trust.AppIDParam(id), zero_trust.AccessApplicationUpdateParams{AccountID: cf.F(account), Body: body})
	return wrap("updating Access application "+s.Name, err)
}

// deleteAccessApp deletes an application; one already gone is no error.
func (a *api) deleteAccessApp(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opAccessAppDelete)
	_, err := a.accessApps.Delete(ctx, zero_trust.AppIDParam(id), zero_trust.AccessApplicationDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	return wrap("deleting Access application "+id, err)
}
