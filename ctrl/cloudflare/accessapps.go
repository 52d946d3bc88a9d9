// This file plans and applies the Access applications a tunnel's sync
// keeps.

package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Access applications (Desired.AccessApps) are kept with a wish's tunnel,
// in its account:
//
//   - What is ours is marked: an application by the tag appTag(tunnel ID)
//     ("tunnelgate-<tunnel ID>", created when missing), a reusable policy
//     by the prefix policyPrefix(tunnel ID) of its name. Anything else is
//     never changed or deleted, whatever its name or hostnames; Cloudflare
//     refusing an application of ours beside a foreign one on the same
//     hostname is reported, not worked around.
//   - Among ours, an application is the wanted one of the same name.
//     Those nobody wants are deleted, then the policies of ours nobody
//     wants (one a foreign application links is left: Cloudflare refuses).
//   - A wanted application links, in this order, a policy letting in its
//     emails and email domains (decision allow) and one letting in any
//     valid service token (decision non_identity), each when it has rules.
//   - A write is made only where something differs. The listings are
//     read again when the wish's applications change and every DriftEvery.
//   - Cloudflare refusing one application (4xx) is that application's
//     Problem; the others go on. A 429, a 5xx or no answer fails the
//     wish, which is retried whole, as every sync is, keeping the
//     audience tags known before.

// appTag marks the applications of one tunnel's sync.
func appTag(tunnelID string) string { return "tunnelgate-" + tunnelID }

// policyPrefix starts the names of one tunnel's sync's policies.
func policyPrefix(tunnelID string) string { return appTag(tunnelID) + " " }

// wantedApp is one AccessApp as the sync writes it: the application, and
// its policies, linked in order by name.
type wantedApp struct {
	policy   string // AccessApp.Policy
	app      appSpec
	policies []policySpec
}

// wantApps makes the applications and policies of apps, and the problems
// of those that cannot be made, by AccessApp.Policy.
func wantApps(tunnelID string, apps []translate.AccessApp) ([]wantedApp, map[string]string) {
	var out []wantedApp
	problems := map[string]string{}
	byName := map[string]string{}
	for _, a := range apps {
		switch {
		case byName[a.Name] != "":
			problems[a.Policy] = fmt.Sprintf("the application of AccessPolicy %s has the name %q", byName[a.Name], a.Name)
			continue
		case len(a.Hostnames) == 0:
			problems[a.Policy] = "it protects no public hostname served through this tunnel"
			continue
		}
		byName[a.Name] = a.Policy
		w := wantedApp{policy: a.Policy, app: appSpec{Name: a.Name, SessionDuration: a.SessionDuration,
			Destinations: a.Hostnames, Tags: []string{appTag(tunnelID)}}}
		var people []accessRule
		for _, e := range a.Emails {
			people = append(people, accessRule{ruleEmail, e})
		}
		for _, d := range a.EmailDomains {
			people = append(people, accessRule{ruleEmailDomain, d})
		}
		if len(people) > 0 {
			w.policies = append(w.policies, policySpec{Name: policyPrefix(tunnelID) + a.Name + ": people", Decision: decisionAllow, Include: people})
		}
		if a.ServiceTokens {
			w.policies = append(w.policies, policySpec{Name: policyPrefix(tunnelID) + a.Name + ": service tokens",
				Decision: decisionNonIdentity, Include: []accessRule{{kind: ruleAnyServiceToken}}})
		}
		if len(w.policies) == 0 {
			problems[a.Policy] = "nobody could log in: it names no emails, email domains or service tokens"
			delete(byName, a.Name)
			continue
		}
		out = append(out, w)
	}
	return out, problems
}

// accessPlan is what the sync does, in order: policies created and
// updated, then applications (linking policies by name), then what is
// ours and unwanted deleted.
type accessPlan struct {
	createPolicies []policySpec
	updatePolicies []policyUpdate
	createApps     []wantedApp
	updateApps     []appUpdate
	keptApps       map[string]string // AUD by AccessApp.Policy, of applications left as they are
	deleteApps     []appRecord
	deletePolicies []policyRecord
}

type policyUpdate struct {
	id   string
	spec policySpec
}

type appUpdate struct {
	id, aud string
	want    wantedApp
}

// planAccess compares what is wanted with what the account holds. It is
// pure: policy IDs of policies yet to be made are resolved when applied.
func planAccess(tunnelID string, want []wantedApp, apps []appRecord, policies []policyRecord) accessPlan {
	p := accessPlan{keptApps: map[string]string{}}
	tag, prefix := appTag(tunnelID), policyPrefix(tunnelID)
	ourPolicies := map[string]policyRecord{} // by name; a second of one name is unwanted
	for _, pr := range policies {
		if !strings.HasPrefix(pr.Name, prefix) {
			continue
		}
		if _, dup := ourPolicies[pr.Name]; dup {
			p.deletePolicies = append(p.deletePolicies, pr)
			continue
		}
		ourPolicies[pr.Name] = pr
	}
	wantedPolicies := map[string]bool{}
	for _, w := range want {
		for _, ps := range w.policies {
			wantedPolicies[ps.Name] = true
			have, ok := ourPolicies[ps.Name]
			switch {
			case !ok:
				p.createPolicies = append(p.createPolicies, ps)
			case !samePolicy(have, ps):
				p.updatePolicies = append(p.updatePolicies, policyUpdate{have.ID, ps})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ourPolicies)) {
		if !wantedPolicies[name] {
			p.deletePolicies = append(p.deletePolicies, ourPolicies[name])
		}
	}

	ourApps := map[string]appRecord{}
	for _, a := range apps {
		if !slices.Contains(a.Tags, tag) {
			continue
		}
		if _, dup := ourApps[a.Name]; dup {
			p.deleteApps = append(p.deleteApps, a)
			continue
		}
		ourApps[a.Name] = a
	}
	wantedNames := map[string]bool{}
	for _, w := range want {
		wantedNames[w.app.Name] = true
		have, ok := ourApps[w.app.Name]
		switch {
		case !ok:
			p.createApps = append(p.createApps, w)
		case !sameApp(have, w, ourPolicies):
			p.updateApps = append(p.updateApps, appUpdate{have.ID, have.AUD, w})
		default:
			p.keptApps[w.policy] = have.AUD
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ourApps)) {
		if !wantedNames[name] {
			p.deleteApps = append(p.deleteApps, ourApps[name])
		}
	}
	return p
}

// samePolicy says whether a listed policy is the wanted one.
func samePolicy(have policyRecord, want policySpec) bool {
	if have.Decision != want.Decision || len(have.Include) != len(want.Include) {
		return false
	}
	for i, raw := range have.Include {
		if r, ok := parseRule(raw); !ok || r != want.Include[i] {
			return false
		}
	}
	return true
}

// sameApp says whether a listed application is the wanted one, its
// policies being ours by name (a policy yet to be made differs from any).
func sameApp(have appRecord, w wantedApp, ours map[string]policyRecord) bool {
	if have.Type != selfHostedApplication || (w.app.SessionDuration != "" && have.SessionDuration != w.app.SessionDuration) ||
		len(have.Destinations) != len(w.app.Destinations) || len(have.Policies) != len(w.policies) {
		return false
	}
	for i, d := range have.Destinations {
		if d.Type != "public" || d.URI != w.app.Destinations[i] {
			return false
		}
	}
	linked := slices.Clone(have.Policies)
	slices.SortStableFunc(linked, func(a, b struct {
		ID         string `json:"id"`
		Precedence int    `json:"precedence"`
	}) int {
		return a.Precedence - b.Precedence
	})
	for i, ps := range w.policies {
		if pr, ok := ours[ps.Name]; !ok || pr.ID != linked[i].ID {
			return false
		}
	}
	return true
}

// syncAccessApps keeps the wish's applications (d.AccessApps) and returns
// their states; last are the states reported before, whose audience tags
// stay known while a sync fails.
func (s *Syncer) syncAccessApps(ctx context.Context, c *classSync, d Desired, last map[string]translate.AccessAppState) (map[string]translate.AccessAppState, error) {
	key := hashJSON(struct {
		Tunnel string
		Apps   []translate.AccessApp
	}{c.l.tunnelID, d.AccessApps})
	if len(d.AccessApps) == 0 && c.l.accessKey == "" {
		return nil, nil // never had any: nothing to list
	}
	now := s.opts.Now()
	if key == c.l.accessKey && now.Sub(c.l.lastAccess) < s.opts.DriftEvery {
		return last, nil
	}
	want, problems := wantApps(c.l.tunnelID, d.AccessApps)
	states, err := s.applyAccess(ctx, c, want)
	for policy, p := range problems {
		states[policy] = translate.AccessAppState{Problem: p}
	}
	if err != nil {
		return keepAUDs(states, last, d.AccessApps), err
	}
	c.l.accessKey, c.l.lastAccess = key, now
	if len(states) == 0 {
		states = nil
	}
	return states, nil
}

// keepAUDs completes the states of a failed sync: an application whose
// state it did not learn keeps the one reported before.
func keepAUDs(states, last map[string]translate.AccessAppState, apps []translate.AccessApp) map[string]translate.AccessAppState {
	for _, a := range apps {
		if _, ok := states[a.Policy]; !ok {
			if st, ok := last[a.Policy]; ok {
				states[a.Policy] = st
			}
		}
	}
	return states
}

// applyAccess lists the account's applications and policies, plans and
// carries out the plan. An error means "retry the wish"; the states
// learned so far are returned with it.
func (s *Syncer) applyAccess(ctx context.Context, c *classSync, want []wantedApp) (map[string]translate.AccessAppState, error) {
	states := map[string]translate.AccessAppState{}
	api, account, tunnelID := c.l.api, c.l.account, c.l.tunnelID
	apps, err := api.listAccessApps(ctx, account)
	if err != nil {
		return states, err
	}
	policies, err := api.listAccessPolicies(ctx, account)
	if err != nil {
		return states, err
	}
	p := planAccess(tunnelID, want, apps, policies)
	for policy, aud := range p.keptApps {
		states[policy] = translate.AccessAppState{AUD: aud}
	}
	if len(p.createApps)+len(p.updateApps) > 0 {
		if err := s.ensureAppTag(ctx, c); err != nil {
			return states, err
		}
	}

	ids := map[string]string{} // policy name → ID
	for _, pr := range policies {
		ids[pr.Name] = pr.ID
	}
	failed := map[string]string{} // policy name → why it could not be written
	for _, ps := range p.createPolicies {
		id, err := api.createAccessPolicy(ctx, account, ps)
		if err != nil && !refusal(err) {
			return states, err
		}
		if err != nil {
			failed[ps.Name] = err.Error()
			continue
		}
		ids[ps.Name] = id
		s.opts.Log.Info("Access policy created", "tunnel", tunnelID, "name", ps.Name)
	}
	for _, u := range p.updatePolicies {
		if err := api.updateAccessPolicy(ctx, account, u.id, u.spec); err != nil {
			if !refusal(err) {
				return states, err
			}
			failed[u.spec.Name] = err.Error()
		}
	}
	// linked resolves a wanted application's policies, or says why one
	// cannot be linked.
	linked := func(w wantedApp) ([]string, string) {
		out := make([]string, 0, len(w.policies))
		for _, ps := range w.policies {
			if why := failed[ps.Name]; why != "" {
				return nil, why
			}
			out = append(out, ids[ps.Name])
		}
		return out, ""
	}
	for _, w := range p.createApps {
		spec := w.app
		var why string
		if spec.Policies, why = linked(w); why != "" {
			states[w.policy] = translate.AccessAppState{Problem: why}
			continue
		}
		rec, err := api.createAccessApp(ctx, account, spec)
		if err != nil {
			if !refusal(err) {
				return states, err
			}
			states[w.policy] = translate.AccessAppState{Problem: err.Error()}
			continue
		}
		states[w.policy] = translate.AccessAppState{AUD: rec.AUD}
		s.opts.Log.Info("Access application created", "tunnel", tunnelID, "name", spec.Name, "aud", rec.AUD)
	}
	for _, u := range p.updateApps {
		spec := u.want.app
		var why string
		if spec.Policies, why = linked(u.want); why != "" {
			states[u.want.policy] = translate.AccessAppState{AUD: u.aud, Problem: why}
			continue
		}
		if err := api.updateAccessApp(ctx, account, u.id, spec); err != nil {
			if !refusal(err) {
				return states, err
			}
			states[u.want.policy] = translate.AccessAppState{AUD: u.aud, Problem: err.Error()}
			continue
		}
		states[u.want.policy] = translate.AccessAppState{AUD: u.aud}
		s.opts.Log.Info("Access application updated", "tunnel", tunnelID, "name", spec.Name)
	}
	for _, a := range p.deleteApps {
		if err := api.deleteAccessApp(ctx, account, a.ID); err != nil {
			return states, err
		}
		s.opts.Log.Info("Access application deleted", "tunnel", tunnelID, "name", a.Name)
	}
	for _, pr := range p.deletePolicies {
		if err := api.deleteAccessPolicy(ctx, account, pr.ID); err != nil {
			if !refusal(err) {
				return states, err
			}
			s.opts.Log.Warn("Access policy of ours left: Cloudflare refuses to delete it (linked by an application not ours?)",
				"tunnel", tunnelID, "name", pr.Name, "err", err)
		}
	}
	return states, nil
}

// ensureAppTag creates the tunnel's application tag unless the account has
// it (remembered once seen).
func (s *Syncer) ensureAppTag(ctx context.Context, c *classSync) error {
	tag := appTag(c.l.tunnelID)
	if c.l.appTag == tag {
		return nil
	}
	tags, err := c.l.api.listAccessTags(ctx, c.l.account)
	if err != nil {
		return err
	}
	if !slices.Contains(tags, tag) {
		if err := c.l.api.createAccessTag(ctx, c.l.account, tag); err != nil {
			return err
		}
	}
	c.l.appTag = tag
	return nil
}

// refusal says whether Cloudflare refused a request for what it asks
// (4xx but 429): retrying the same request cannot help, so it is the one
// application's problem. A rate limit, a server error or no answer is the
// wish's, retried.
func refusal(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status >= 400 && ae.status < 500 && ae.status != 429
}
