package cffake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Cloudflare Access: self-hosted applications, the reusable policies they
// link, and the tags that label them, per account.
//
// Kept strict, chosen where Cloudflare's behaviour is not certain:
//   - An application names existing tags and existing policies only.
//   - A policy linked to an application cannot be deleted.
//   - A tag that exists cannot be created again.
//   - Only "self_hosted" applications are taken; a domain is required, and
//     every destination is {"type":"public","uri":…}.

type accessTag struct {
	acct    *account
	name    string
	created time.Time
}

type accessPolicy struct {
	acct                     *account
	id, name, decision       string
	include, exclude, requir []json.RawMessage
	sessionDuration          string
	created, updated         time.Time
}

type accessApp struct {
	acct                  *account
	id, aud, name, domain string
	destinations          []accessDestination
	sessionDuration       string
	policies              []string // IDs, in precedence order
	tags                  []string
	created, updated      time.Time
}

type accessDestination struct {
	Type string `json:"type"`
	URI  string `json:"uri"`
}

// AccessApp is a snapshot of an Access application.
type AccessApp struct {
	ID, AUD, Name, Domain string
	Destinations          []string // the public destinations' URIs
	SessionDuration       string
	Policies              []AccessPolicy // linked, in precedence order
	Tags                  []string
}

// AccessPolicy is a snapshot of a reusable Access policy: its include
// rules as JSON objects, e.g. {"email":{"email":"a@example.com"}}.
type AccessPolicy struct {
	ID, Name, Decision string
	Include            []string
}

// AddAccessTag adds a tag to an account added before.
func (f *Fake) AddAccessTag(accountID, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accessTags = append(f.accessTags, &accessTag{acct: f.mustAccount(accountID), name: name, created: now()})
}

// AddAccessApp adds a self-hosted application, as someone else would make
// it in the dashboard, with the given tags (added as needed) and no
// policies; it returns its ID.
func (f *Fake) AddAccessApp(accountID, name, domain string, tags ...string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	acct := f.mustAccount(accountID)
	for _, t := range tags {
		if f.accessTag(acct, t) == nil {
			f.accessTags = append(f.accessTags, &accessTag{acct: acct, name: t, created: now()})
		}
	}
	a := &accessApp{acct: acct, id: newUUID(), aud: newAUD(), name: name, domain: domain,
		destinations: []accessDestination{{Type: "public", URI: domain}}, tags: tags, created: now(), updated: now()}
	f.accessApps = append(f.accessApps, a)
	return a.id
}

// AccessApps returns the account's applications, oldest first.
func (f *Fake) AccessApps(accountID string) []AccessApp {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []AccessApp
	for _, a := range f.accessApps {
		if a.acct.id != accountID {
			continue
		}
		s := AccessApp{ID: a.id, AUD: a.aud, Name: a.name, Domain: a.domain, SessionDuration: a.sessionDuration,
			Tags: slices.Clone(a.tags)}
		for _, d := range a.destinations {
			s.Destinations = append(s.Destinations, d.URI)
		}
		for _, id := range a.policies {
			if p := f.accessPolicy(a.acct, id); p != nil {
				s.Policies = append(s.Policies, p.snapshot())
			}
		}
		out = append(out, s)
	}
	return out
}

// AccessPolicies returns the account's reusable policies, oldest first.
func (f *Fake) AccessPolicies(accountID string) []AccessPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []AccessPolicy
	for _, p := range f.accessPolicies {
		if p.acct.id == accountID {
			out = append(out, p.snapshot())
		}
	}
	return out
}

func (p *accessPolicy) snapshot() AccessPolicy {
	s := AccessPolicy{ID: p.id, Name: p.name, Decision: p.decision}
	for _, r := range p.include {
		s.Include = append(s.Include, string(r))
	}
	return s
}

// newAUD is an application audience tag: 64 hex digits.
func newAUD() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var (
	appPages    = pageLimits{1000, 1, 1000}
	policyPages = pageLimits{100, 1, 1000}
	tagPages    = pageLimits{50, 1, 1000}
)

func (f *Fake) routeAccess() {
	const base = "/accounts/{account_id}/access"
	f.handle("GET "+base+"/tags", f.accountEndpoint(f.listAccessTags))
	f.handle("POST "+base+"/tags", f.accountEndpoint(f.createAccessTag))
	f.handle("GET "+base+"/policies", f.accountEndpoint(f.listAccessPolicies))
	f.handle("POST "+base+"/policies", f.accountEndpoint(f.createAccessPolicy))
	f.handle("GET "+base+"/policies/{policy_id}", f.accountEndpoint(f.getAccessPolicy))
	f.handle("PUT "+base+"/policies/{policy_id}", f.accountEndpoint(f.updateAccessPolicy))
	f.handle("DELETE "+base+"/policies/{policy_id}", f.accountEndpoint(f.deleteAccessPolicy))
	f.handle("GET "+base+"/apps", f.accountEndpoint(f.listAccessApps))
	f.handle("POST "+base+"/apps", f.accountEndpoint(f.createAccessApp))
	f.handle("GET "+base+"/apps/{app_id}", f.accountEndpoint(f.getAccessApp))
	f.handle("PUT "+base+"/apps/{app_id}", f.accountEndpoint(f.updateAccessApp))
	f.handle("DELETE "+base+"/apps/{app_id}", f.accountEndpoint(f.deleteAccessApp))
}

// accountEndpoint resolves the path's account.
func (f *Fake) accountEndpoint(ep func(*account, *http.Request, []byte) (reply, error)) endpoint {
	return func(r *http.Request, body []byte) (reply, error) {
		acct := f.account(r.PathValue("account_id"))
		if acct == nil {
			return reply{}, notRoutable(r.URL.Path)
		}
		return ep(acct, r, body)
	}
}

func accessErr(status, code int, msg string) *apiError {
	return newErr(status, code, "access.api.error."+msg)
}

// Tags.

func (f *Fake) accessTag(acct *account, name string) *accessTag {
	for _, t := range f.accessTags {
		if t.acct == acct && t.name == name {
			return t
		}
	}
	return nil
}

type tagJSON struct {
	Name      string    `json:"name"`
	AppCount  int       `json:"app_count"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (f *Fake) tagJSON(t *accessTag) tagJSON {
	n := 0
	for _, a := range f.accessApps {
		if a.acct == t.acct && slices.Contains(a.tags, t.name) {
			n++
		}
	}
	return tagJSON{Name: t.name, AppCount: n, CreatedAt: t.created, UpdatedAt: t.created}
}

func (f *Fake) listAccessTags(acct *account, r *http.Request, _ []byte) (reply, error) {
	var all []tagJSON
	for _, t := range f.accessTags {
		if t.acct == acct {
			all = append(all, f.tagJSON(t))
		}
	}
	page, info, err := paginate(r.URL.Query(), all, tagPages)
	if err != nil {
		return reply{}, err
	}
	return reply{result: nonNil(page), info: info}, nil
}

func (f *Fake) createAccessTag(acct *account, _ *http.Request, body []byte) (reply, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	if strings.TrimSpace(in.Name) == "" {
		return reply{}, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: name is required")
	}
	if f.accessTag(acct, in.Name) != nil {
		return reply{}, accessErr(http.StatusConflict, codeAccessConflict, "conflict: a tag with this name already exists")
	}
	t := &accessTag{acct: acct, name: in.Name, created: now()}
	f.accessTags = append(f.accessTags, t)
	return reply{result: f.tagJSON(t)}, nil
}

// Policies.

func (f *Fake) accessPolicy(acct *account, id string) *accessPolicy {
	for _, p := range f.accessPolicies {
		if p.acct == acct && p.id == id {
			return p
		}
	}
	return nil
}

type policyBody struct {
	Name            string            `json:"name"`
	Decision        string            `json:"decision"`
	Include         []json.RawMessage `json:"include"`
	Exclude         []json.RawMessage `json:"exclude"`
	Require         []json.RawMessage `json:"require"`
	SessionDuration string            `json:"session_duration"`
}

type policyJSON struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Decision        string            `json:"decision"`
	Include         []json.RawMessage `json:"include"`
	Exclude         []json.RawMessage `json:"exclude"`
	Require         []json.RawMessage `json:"require"`
	SessionDuration string            `json:"session_duration,omitempty"`
	Reusable        bool              `json:"reusable"`
	AppCount        int               `json:"app_count"`
	Precedence      int               `json:"precedence,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
}

func (f *Fake) policyJSON(p *accessPolicy) policyJSON {
	n := 0
	for _, a := range f.accessApps {
		if a.acct == p.acct && slices.Contains(a.policies, p.id) {
			n++
		}
	}
	return policyJSON{ID: p.id, Name: p.name, Decision: p.decision, Include: nonNil(p.include), Exclude: nonNil(p.exclude),
		Require: nonNil(p.requir), SessionDuration: p.sessionDuration, Reusable: true, AppCount: n, CreatedAt: p.created, UpdatedAt: p.updated}
}

// accessRules are the rule kinds the fake knows, and the field each must
// carry (empty: an empty object).
var accessRules = map[string]string{
	"email": "email", "email_domain": "domain", "everyone": "", "any_valid_service_token": "",
	"service_token": "token_id", "group": "id", "ip": "ip", "email_list": "id",
}

// checkAccessRule refuses a rule that is not one object of a known kind with
// its field.
func checkAccessRule(raw json.RawMessage) error {
	var rule map[string]map[string]any
	if err := json.Unmarshal(raw, &rule); err != nil || len(rule) != 1 {
		return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: a rule is one object such as {\"email\":{\"email\":\"…\"}}")
	}
	for kind, body := range rule {
		field, ok := accessRules[kind]
		if !ok {
			return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: unknown rule "+kind)
		}
		if field == "" {
			continue
		}
		if v, _ := body[field].(string); v == "" || kind == "email" && !strings.Contains(v, "@") {
			return accessErr(http.StatusBadRequest, codeAccessInvalid, fmt.Sprintf("invalid_request: rule %s needs %s", kind, field))
		}
	}
	return nil
}

func (in *policyBody) check() error {
	if strings.TrimSpace(in.Name) == "" {
		return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: name is required")
	}
	if !slices.Contains([]string{"allow", "deny", "non_identity", "bypass"}, in.Decision) {
		return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: decision must be allow, deny, non_identity or bypass")
	}
	if len(in.Include) == 0 {
		return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: include needs a rule")
	}
	for _, list := range [][]json.RawMessage{in.Include, in.Exclude, in.Require} {
		for _, r := range list {
			if err := checkAccessRule(r); err != nil {
				return err
			}
		}
	}
	if in.SessionDuration != "" {
		if _, err := time.ParseDuration(in.SessionDuration); err != nil {
			return accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: session_duration")
		}
	}
	return nil
}

func (f *Fake) listAccessPolicies(acct *account, r *http.Request, _ []byte) (reply, error) {
	var all []policyJSON
	for _, p := range f.accessPolicies {
		if p.acct == acct {
			all = append(all, f.policyJSON(p))
		}
	}
	page, info, err := paginate(r.URL.Query(), all, policyPages)
	if err != nil {
		return reply{}, err
	}
	return reply{result: nonNil(page), info: info}, nil
}

func (f *Fake) createAccessPolicy(acct *account, _ *http.Request, body []byte) (reply, error) {
	var in policyBody
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	if err := in.check(); err != nil {
		return reply{}, err
	}
	p := &accessPolicy{acct: acct, id: newUUID(), created: now()}
	p.set(&in)
	f.accessPolicies = append(f.accessPolicies, p)
	return reply{result: f.policyJSON(p)}, nil
}

func (p *accessPolicy) set(in *policyBody) {
	p.name, p.decision, p.include, p.exclude, p.requir, p.sessionDuration = in.Name, in.Decision, in.Include, in.Exclude, in.Require, in.SessionDuration
	p.updated = now()
}

func (f *Fake) policyOf(acct *account, r *http.Request) (*accessPolicy, error) {
	p := f.accessPolicy(acct, r.PathValue("policy_id"))
	if p == nil {
		return nil, accessErr(http.StatusNotFound, codeAccessNotFound, "not_found: policy not found")
	}
	return p, nil
}

func (f *Fake) getAccessPolicy(acct *account, r *http.Request, _ []byte) (reply, error) {
	p, err := f.policyOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	return reply{result: f.policyJSON(p)}, nil
}

func (f *Fake) updateAccessPolicy(acct *account, r *http.Request, body []byte) (reply, error) {
	p, err := f.policyOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	var in policyBody
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	if err := in.check(); err != nil {
		return reply{}, err
	}
	p.set(&in)
	return reply{result: f.policyJSON(p)}, nil
}

func (f *Fake) deleteAccessPolicy(acct *account, r *http.Request, _ []byte) (reply, error) {
	p, err := f.policyOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	if n := f.policyJSON(p).AppCount; n > 0 {
		return reply{}, accessErr(http.StatusBadRequest, codeAccessInUse, fmt.Sprintf("invalid_request: the policy is used by %d applications", n))
	}
	f.accessPolicies = slices.DeleteFunc(f.accessPolicies, func(q *accessPolicy) bool { return q == p })
	return reply{result: map[string]string{"id": p.id}}, nil
}

// Applications.

type appBody struct {
	Name            string              `json:"name"`
	Domain          string              `json:"domain"`
	Type            string              `json:"type"`
	Destinations    []accessDestination `json:"destinations"`
	SessionDuration string              `json:"session_duration"`
	Policies        []json.RawMessage   `json:"policies"`
	Tags            []string            `json:"tags"`
}

type appJSON struct {
	ID              string              `json:"id"`
	AUD             string              `json:"aud"`
	Name            string              `json:"name"`
	Domain          string              `json:"domain"`
	Type            string              `json:"type"`
	Destinations    []accessDestination `json:"destinations"`
	SessionDuration string              `json:"session_duration,omitempty"`
	Policies        []policyJSON        `json:"policies"`
	Tags            []string            `json:"tags"`
	CreatedAt       time.Time           `json:"created_at"`
	UpdatedAt       time.Time           `json:"updated_at"`
}

func (f *Fake) appJSON(a *accessApp) appJSON {
	out := appJSON{ID: a.id, AUD: a.aud, Name: a.name, Domain: a.domain, Type: "self_hosted", Destinations: nonNil(a.destinations),
		SessionDuration: a.sessionDuration, Policies: []policyJSON{}, Tags: nonNil(a.tags), CreatedAt: a.created, UpdatedAt: a.updated}
	for i, id := range a.policies {
		if p := f.accessPolicy(a.acct, id); p != nil {
			pj := f.policyJSON(p)
			pj.Precedence = i + 1
			out.Policies = append(out.Policies, pj)
		}
	}
	return out
}

// policyLink reads one entry of an application's policies: a policy ID,
// or {"id":…,"precedence":…}.
func policyLink(raw json.RawMessage) (id string, precedence int, err error) {
	if json.Unmarshal(raw, &id) == nil {
		return id, 0, nil
	}
	var link struct {
		ID         string `json:"id"`
		Precedence int    `json:"precedence"`
	}
	if json.Unmarshal(raw, &link) != nil || link.ID == "" {
		return "", 0, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: a policy link needs an id")
	}
	return link.ID, link.Precedence, nil
}

// checkApp refuses what the fake does not take (see the top of the file)
// and returns the linked policies' IDs in precedence order.
func (f *Fake) checkApp(acct *account, in *appBody) ([]string, error) {
	if in.Type != "self_hosted" {
		return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: the fake takes self_hosted applications only")
	}
	if strings.TrimSpace(in.Domain) == "" {
		return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: domain is required")
	}
	for _, d := range in.Destinations {
		if d.Type != "public" || d.URI == "" {
			return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: a destination is {\"type\":\"public\",\"uri\":…}")
		}
	}
	if in.SessionDuration != "" {
		if _, err := time.ParseDuration(in.SessionDuration); err != nil {
			return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: session_duration")
		}
	}
	for _, t := range in.Tags {
		if f.accessTag(acct, t) == nil {
			return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: no tag "+t)
		}
	}
	type link struct {
		id         string
		precedence int
	}
	var links []link
	for i, raw := range in.Policies {
		id, prec, err := policyLink(raw)
		if err != nil {
			return nil, err
		}
		if f.accessPolicy(acct, id) == nil {
			return nil, accessErr(http.StatusBadRequest, codeAccessInvalid, "invalid_request: no policy "+id)
		}
		if prec == 0 {
			prec = i + 1
		}
		links = append(links, link{id, prec})
	}
	slices.SortStableFunc(links, func(a, b link) int { return a.precedence - b.precedence })
	ids := make([]string, len(links))
	for i, l := range links {
		ids[i] = l.id
	}
	return ids, nil
}

func (a *accessApp) set(in *appBody, policies []string) {
	a.name, a.domain, a.sessionDuration, a.policies, a.tags = in.Name, in.Domain, in.SessionDuration, policies, in.Tags
	a.destinations = in.Destinations
	if len(a.destinations) == 0 {
		a.destinations = []accessDestination{{Type: "public", URI: in.Domain}}
	}
	a.updated = now()
}

func (f *Fake) listAccessApps(acct *account, r *http.Request, _ []byte) (reply, error) {
	q := r.URL.Query()
	var all []appJSON
	for _, a := range f.accessApps {
		if a.acct != acct || q.Get("name") != "" && a.name != q.Get("name") || q.Get("domain") != "" && a.domain != q.Get("domain") {
			continue
		}
		all = append(all, f.appJSON(a))
	}
	page, info, err := paginate(q, all, appPages)
	if err != nil {
		return reply{}, err
	}
	return reply{result: nonNil(page), info: info}, nil
}

func (f *Fake) createAccessApp(acct *account, _ *http.Request, body []byte) (reply, error) {
	var in appBody
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	policies, err := f.checkApp(acct, &in)
	if err != nil {
		return reply{}, err
	}
	a := &accessApp{acct: acct, id: newUUID(), aud: newAUD(), created: now()}
	a.set(&in, policies)
	f.accessApps = append(f.accessApps, a)
	return reply{result: f.appJSON(a)}, nil
}

func (f *Fake) appOf(acct *account, r *http.Request) (*accessApp, error) {
	for _, a := range f.accessApps {
		if a.acct == acct && a.id == r.PathValue("app_id") {
			return a, nil
		}
	}
	return nil, accessErr(http.StatusNotFound, codeAccessNotFound, "not_found: application not found")
}

func (f *Fake) getAccessApp(acct *account, r *http.Request, _ []byte) (reply, error) {
	a, err := f.appOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	return reply{result: f.appJSON(a)}, nil
}

func (f *Fake) updateAccessApp(acct *account, r *http.Request, body []byte) (reply, error) {
	a, err := f.appOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	var in appBody
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	policies, err := f.checkApp(acct, &in)
	if err != nil {
		return reply{}, err
	}
	a.set(&in, policies)
	return reply{result: f.appJSON(a)}, nil
}

func (f *Fake) deleteAccessApp(acct *account, r *http.Request, _ []byte) (reply, error) {
	a, err := f.appOf(acct, r)
	if err != nil {
		return reply{}, err
	}
	f.accessApps = slices.DeleteFunc(f.accessApps, func(b *accessApp) bool { return b == a })
	return reply{result: map[string]string{"id": a.id}}, nil
}

// nonNil makes an empty list encode as [], as Cloudflare sends it.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
