// This file keeps a cluster's part of Cloudflare Load Balancing in step.

package cloudflare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Load balanced hostnames (Desired.LoadBalancers) are kept with a wish's
// tunnel, in its account. Several clusters share the pools, monitors and
// load balancers; each keeps only its own part:
//
//   - Its origin is the one whose address is its tunnel's
//     (<tunnel-id>.cfargotunnel.com), named originName ("tunnel-<id>")
//     when it adds it, with the hostname as Host header, and the weight
//     and enabled state asked. It is changed through editPoolOrigins, and
//     no other origin ever is.
//   - What tunnelgate creates says so in its description (lbMark): a
//     monitor "tunnelgate: monitor of pool <pool>", a pool "tunnelgate:
//     pool <pool>", a load balancer "tunnelgate: load balancer <host>".
//     Only those are ever changed beyond our origin, or deleted.
//   - A pool is found by name, and created with our origin and a monitor
//     when missing. Its monitor is the one the pool names; a pool of ours
//     without one gets ours (found by its description, else created). A
//     monitor we create carries a random token in translate.LBHealthHeader
//     (and the hostname as Host); the token is read back from the
//     monitor, whoever made it, for the proxies to answer it. A monitor
//     not ours with no token is reported (LBReasonForeignOwner), not
//     changed.
//   - A load balancer is found by name (the hostname) in the hostname's
//     zone, and created when missing with the pools of LoadBalancing.Pools
//     that exist, in order, the last as fallback. One of ours is kept in
//     step; one not ours is left as it is, and is Ready only if it uses
//     our pool (else LBReasonNameTaken).
//   - A pool we no longer want (the policy gone, or naming another pool)
//     loses our origin. When ours is its last origin (Cloudflare keeps no
//     empty pool), the origin is disabled instead (weight 0), unless the
//     LoadBalancing asked DeleteUnused and tunnelgate created the pool:
//     then the pool goes, after our load balancers stop using it (deleted
//     when it was their only pool), and its monitor if ours and unused.
//     Pools are known as left by this Syncer's memory, and by our origin's
//     name in any pool, which survives a restart.
//   - A write is made only where something differs. Everything is read
//     again when the wish changes and every DriftEvery.
//   - Cloudflare refusing a hostname's part (no Load Balancing on the
//     account, a quota, a name taken, a request refused) is its state; the
//     others go on. A 429, a 5xx or no answer fails the wish, which is
//     retried whole, keeping the health token known before.

// lbMark starts the description of what tunnelgate creates.
const lbMark = "tunnelgate:"

func monitorDescription(pool string) string { return lbMark + " monitor of pool " + pool }
func poolDescription(pool string) string    { return lbMark + " pool " + pool }
func lbDescription(hostname string) string  { return lbMark + " load balancer " + hostname }

// madeByUs says whether a description is one tunnelgate wrote.
func madeByUs(description string) bool { return strings.HasPrefix(description, lbMark) }

// originName is the name of a tunnel's origin, as the sync adds it.
func originName(tunnelID string) string { return "tunnel-" + tunnelID }

// originAddress is a tunnel's origin address.
func originAddress(tunnelID string) string { return tunnelID + translate.TunnelHostnameSuffix }

// ownOrigin finds the tunnel's origin among origins, by address; -1 for
// none.
func ownOrigin(origins []LBOrigin, tunnelID string) int {
	addr := originAddress(tunnelID)
	return slices.IndexFunc(origins, func(o LBOrigin) bool { return strings.EqualFold(o.Address, addr) })
}

// newHealthToken is a fresh monitor token: 24 random bytes, in hex.
func newHealthToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return hex.EncodeToString(b)
}

// headerValue is the first value of a header, its name in any case.
func headerValue(h map[string][]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// wantMonitor is the monitor of ours a LoadBalancing asks for.
func wantMonitor(lb translate.LoadBalancing, token string) LBMonitor {
	m := LBMonitor{Type: "https", Description: monitorDescription(lb.Pool), Method: "GET", Path: lb.Monitor.Path,
		ExpectedCodes: lb.Monitor.ExpectedCodes, Interval: lb.Monitor.Interval, Timeout: lb.Monitor.Timeout,
		Retries: lb.Monitor.Retries,
		Header:  map[string][]string{"Host": {lb.Hostname}, translate.LBHealthHeader: {token}}}
	if m.Path == "" {
		m.Path = "/"
	}
	if m.ExpectedCodes == "" {
		m.ExpectedCodes = "200"
	}
	return m
}

// sameMonitor says whether a monitor has the settings want asks; a zero
// number in want is Cloudflare's default, whatever it is, and a header
// want does not name is not compared: one added elsewhere does not make
// a write at every drift check.
func sameMonitor(have, want LBMonitor) bool {
	num := func(h, w int) bool { return w == 0 || h == w }
	if have.Type != want.Type || have.Description != want.Description || !strings.EqualFold(have.Method, want.Method) ||
		have.Path != want.Path || have.ExpectedCodes != want.ExpectedCodes || !num(have.Port, want.Port) ||
		!num(have.Interval, want.Interval) || !num(have.Timeout, want.Timeout) || !num(have.Retries, want.Retries) {
		return false
	}
	for k, v := range want.Header {
		if headerValue(have.Header, k) != v[0] {
			return false
		}
	}
	return true
}

// sameLB says whether a load balancer of ours has the settings want asks.
func sameLB(have, want LoadBalancer) bool {
	affinity := have.SessionAffinity
	if affinity == "" {
		affinity = "none"
	}
	return have.Description == want.Description && slices.Equal(have.DefaultPools, want.DefaultPools) &&
		have.FallbackPool == want.FallbackPool && have.Proxied == want.Proxied && have.Enabled == want.Enabled &&
		(want.SteeringPolicy == "" || have.SteeringPolicy == want.SteeringPolicy) &&
		(want.SessionAffinity == "" || affinity == want.SessionAffinity) &&
		(want.SessionAffinityTTL == 0 || have.SessionAffinityTTL == want.SessionAffinityTTL)
}

// joinOrigin is the change to a pool's origins that puts ours as want
// asks, found by address (a name someone else gave it is kept).
func joinOrigin(tunnelID string, want LBOrigin) func([]LBOrigin) ([]LBOrigin, bool) {
	return func(cur []LBOrigin) ([]LBOrigin, bool) {
		i := ownOrigin(cur, tunnelID)
		if i < 0 {
			return append(cur, want), true
		}
		want.Name = cur[i].Name
		if cur[i] == want {
			return cur, false
		}
		cur[i] = want
		return cur, true
	}
}

// leaveOrigin is the change that takes our origin out of a pool, or, when
// it is the pool's last, disables it (weight 0).
func leaveOrigin(tunnelID string) func([]LBOrigin) ([]LBOrigin, bool) {
	return func(cur []LBOrigin) ([]LBOrigin, bool) {
		i := ownOrigin(cur, tunnelID)
		switch {
		case i < 0:
			return cur, false
		case len(cur) > 1:
			return slices.Delete(cur, i, i+1), true
		case !cur[i].Enabled && cur[i].Weight == 0:
			return cur, false
		}
		cur[i].Enabled, cur[i].Weight = false, 0
		return cur, true
	}
}

// lbView is what one pass learned of the account: its pools (kept up to
// date with our writes), and, when needed, its monitors and the load
// balancers of zones.
type lbView struct {
	pools    []LBPool
	monitors []LBMonitor // nil until listed
	lbs      map[string][]LoadBalancer
	hasLB    map[string]bool // hostname → it has a load balancer, when learned
}

func (v *lbView) pool(name string) int {
	return slices.IndexFunc(v.pools, func(p LBPool) bool { return p.Name == name })
}

func (v *lbView) monitorByDescription(ctx context.Context, a *api, account, desc string) (LBMonitor, bool, error) {
	if v.monitors == nil {
		ms, err := a.listMonitors(ctx, account)
		if err != nil {
			return LBMonitor{}, false, err
		}
		v.monitors = ms
	}
	i := slices.IndexFunc(v.monitors, func(m LBMonitor) bool { return m.Description == desc })
	if i < 0 {
		return LBMonitor{}, false, nil
	}
	return v.monitors[i], true, nil
}

func (v *lbView) loadBalancers(ctx context.Context, a *api, zoneID string) ([]LoadBalancer, error) {
	if l, ok := v.lbs[zoneID]; ok {
		return l, nil
	}
	l, err := a.listLoadBalancers(ctx, zoneID)
	if err != nil {
		return nil, err
	}
	v.lbs[zoneID] = l
	return l, nil
}

// syncLoadBalancers keeps the wish's part of Load Balancing
// (d.LoadBalancers) and returns its states by policy; last are the states
// reported before, whose health tokens stay known while a sync fails. It
// records in c which hostnames have a load balancer, for the DNS sync.
func (s *Syncer) syncLoadBalancers(ctx context.Context, c *classSync, d Desired, last map[string]translate.LBState) (map[string]translate.LBState, error) {
	return s.keepLoadBalancers(ctx, c, d, last, false)
}

// leaveLoadBalancers takes the departing wish's tunnel out of every pool
// it is an origin of (by our origin's name, or as remembered), as leaving
// a LoadBalancing does. An account without Load Balancing, or a token
// without its permission, has nothing to leave; any other failure is
// retried.
func (s *Syncer) leaveLoadBalancers(ctx context.Context, c *classSync, d Desired) error {
	none := d
	none.LoadBalancers = nil
	c.l.lbSwept, c.l.lbKey = false, ""
	_, err := s.keepLoadBalancers(ctx, c, none, nil, true)
	return err
}

// keepLoadBalancers is syncLoadBalancers; strict retries a failure to
// list the pools when nothing is wanted and nothing remembered, which a
// class's sync does not (it only looks for origins of ours left from
// before a restart).
func (s *Syncer) keepLoadBalancers(ctx context.Context, c *classSync, d Desired, last map[string]translate.LBState, strict bool) (map[string]translate.LBState, error) {
	if len(d.LoadBalancers) == 0 && len(c.l.lbJoined) == 0 && c.l.lbSwept {
		c.l.lbHosts = nil
		return nil, nil // nothing asked, nothing left to leave
	}
	key := hashJSON(struct {
		T string
		L []translate.LoadBalancing
	}{c.l.tunnelID, d.LoadBalancers})
	now := s.opts.Now()
	if key == c.l.lbKey && now.Sub(c.l.lastLB) < s.opts.DriftEvery {
		return last, nil
	}
	api, account, tunnel := c.l.api, c.l.account, c.l.tunnelID
	states := map[string]translate.LBState{}
	fail := func(err error) (map[string]translate.LBState, error) {
		var retry []error
		for _, lb := range d.LoadBalancers {
			st, r := lbFailure(lb, err)
			states[lb.Policy] = keepToken(st, last[lb.Policy])
			if r != nil {
				retry = append(retry, r)
			}
		}
		return states, errors.Join(retry...)
	}

	pools, err := api.listPools(ctx, account)
	if err != nil && len(d.LoadBalancers) == 0 {
		// Only looking for origins of ours to take out: an account
		// without Load Balancing, or a token without its permission, has
		// none we could have added.
		if len(c.l.lbJoined) == 0 && !strict || errors.Is(err, ErrLBNotEntitled) || refusal(err) {
			s.opts.Log.Debug("no Load Balancing pools to leave", "class", d.Class, "err", err)
			c.l.lbSwept, c.l.lbJoined, c.l.lbHosts = true, nil, nil
			return nil, nil
		}
		return nil, fmt.Errorf("leaving load balancing pools: %w", err)
	}
	if err != nil {
		return fail(err)
	}
	if c.l.zones == nil {
		zs, err := api.listZones(ctx, account)
		if err != nil {
			return fail(err)
		}
		var allow []string
		if d.Spec.DNS != nil {
			allow = d.Spec.DNS.Zones
		}
		c.l.zones = allowedZones(zs, allow)
	}
	v := &lbView{pools: pools, lbs: map[string][]LoadBalancer{}, hasLB: map[string]bool{}}

	var errs []error
	joined := map[string]translate.LoadBalancing{}
	hosts := map[string]string{} // hostname → policy
	for _, lb := range d.LoadBalancers {
		if other, dup := joined[lb.Pool]; dup {
			states[lb.Policy] = translate.LBState{Reason: translate.LBReasonInvalid, Message: fmt.Sprintf(
				"LoadBalancingPolicy %s already puts this cluster in pool %s; a cluster is one origin of a pool", other.Policy, lb.Pool)}
			continue
		}
		if other, dup := hosts[lb.Hostname]; dup {
			states[lb.Policy] = translate.LBState{Reason: translate.LBReasonInvalid, Message: fmt.Sprintf(
				"LoadBalancingPolicy %s already load balances %s", other, lb.Hostname)}
			continue
		}
		joined[lb.Pool], hosts[lb.Hostname] = lb, lb.Policy
		st, err := s.keepLB(ctx, c, lb, v)
		if err != nil {
			var retry error
			st, retry = lbFailure(lb, err)
			if retry != nil {
				errs = append(errs, retry)
			}
		}
		states[lb.Policy] = keepToken(st, last[lb.Policy])
	}

	// Pools this cluster left: remembered, or holding our origin by the
	// name we give it.
	left := map[string]bool{}
	for name := range c.l.lbJoined {
		left[name] = true
	}
	for _, p := range v.pools {
		if i := ownOrigin(p.Origins, tunnel); i >= 0 && p.Origins[i].Name == originName(tunnel) {
			left[p.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(left)) {
		if _, ok := joined[name]; ok {
			continue
		}
		rem, remembered := c.l.lbJoined[name]
		i := v.pool(name)
		if i < 0 {
			continue // gone: nothing of ours left there
		}
		if err := s.leavePool(ctx, c, v, tunnel, v.pools[i], rem, remembered); err != nil {
			if refusal(err) || errors.Is(err, ErrLBNotEntitled) {
				s.opts.Log.Warn("could not leave a load balancing pool; left as it is", "class", d.Class, "pool", name, "err", err)
				continue
			}
			errs = append(errs, fmt.Errorf("leaving load balancing pool %s: %w", name, err))
			joined[name] = rem // try again with what we knew
		}
	}

	// The wish's tunnel changed: the origins the last one had as ours
	// leave (the new ones joined above, so none is left empty).
	oldOK := true
	if old := c.l.lbTunnel; old != "" && old != tunnel {
		for i := range v.pools {
			if j := ownOrigin(v.pools[i].Origins, old); j < 0 || v.pools[i].Origins[j].Name != originName(old) {
				continue
			}
			if err := s.leavePool(ctx, c, v, old, v.pools[i], translate.LoadBalancing{}, false); err != nil {
				if refusal(err) || errors.Is(err, ErrLBNotEntitled) {
					s.opts.Log.Warn("could not take the former tunnel out of a load balancing pool; left as it is",
						"class", d.Class, "pool", v.pools[i].Name, "tunnel", old, "err", err)
					continue
				}
				errs = append(errs, fmt.Errorf("taking tunnel %s out of load balancing pool %s: %w", old, v.pools[i].Name, err))
				oldOK = false
			}
		}
	}
	if oldOK {
		c.l.lbTunnel = tunnel
	}

	c.l.lbJoined, c.l.lbSwept = joined, true
	lbHosts := map[string]bool{}
	for h := range hosts {
		if has, ok := v.hasLB[h]; ok {
			lbHosts[h] = has
		} else {
			lbHosts[h] = c.l.lbHosts[h]
		}
	}
	c.l.lbHosts = lbHosts
	if len(states) == 0 {
		states = nil
	}
	if len(errs) > 0 {
		return states, errors.Join(errs...)
	}
	c.l.lbKey, c.l.lastLB = key, now
	return states, nil
}

// keepToken keeps the health token reported before in a state that has
// none: a failed sync must not take it from the proxies, which would then
// fail the monitor's probes.
func keepToken(st, last translate.LBState) translate.LBState {
	if st.HealthToken == "" {
		st.HealthToken = last.HealthToken
	}
	return st
}

// lbFailure is the state a failed call leaves a LoadBalancing in, and,
// for a failure worth retrying (a 429, a 5xx, no answer), the error that
// fails the wish.
func lbFailure(lb translate.LoadBalancing, err error) (translate.LBState, error) {
	switch {
	case errors.Is(err, ErrLBNotEntitled):
		return translate.LBState{Reason: translate.LBReasonNotEntitled, Message: "Load Balancing is not enabled on the Cloudflare account: " +
			"subscribe to it, or remove the LoadBalancingPolicy (" + err.Error() + ")"}, nil
	case errors.Is(err, ErrLBQuota):
		return translate.LBState{Reason: translate.LBReasonQuota, Message: err.Error() +
			"; raise the account's Load Balancing quota, or remove pools, origins or load balancers it no longer needs"}, nil
	case errors.Is(err, ErrLBNameTaken):
		return translate.LBState{Reason: translate.LBReasonNameTaken, Message: err.Error()}, nil
	case refusal(err):
		msg := err.Error()
		var ae *apiError
		if errors.As(err, &ae) && ae.refused() {
			msg += "; the API token needs Account: Load Balancing: Monitors and Pools: Edit, and Zone: Load Balancers: Edit"
		}
		return translate.LBState{Reason: translate.LBReasonInvalid, Message: msg}, nil
	}
	return translate.LBState{Reason: translate.LBReasonAPIError, Message: err.Error() + "; retrying"},
		fmt.Errorf("load balancing of %s (LoadBalancingPolicy %s): %w", lb.Hostname, lb.Policy, err)
}

// keepLB puts this cluster's origin in its pool as lb asks, with the
// pool's monitor and the hostname's load balancer, creating what is
// missing and keeping what tunnelgate created in step.
func (s *Syncer) keepLB(ctx context.Context, c *classSync, lb translate.LoadBalancing, v *lbView) (translate.LBState, error) {
	api, account, tunnel := c.l.api, c.l.account, c.l.tunnelID
	z, ok := zoneOf(lb.Hostname, c.l.zones)
	if !ok {
		return translate.LBState{Reason: translate.LBReasonInvalid, Message: "no zone the API token can edit (and dns.zones allows) contains " +
			lb.Hostname + ", so it can have no load balancer"}, nil
	}
	var problem string // a part not ours that is not as needed: reported, the rest done

	// The monitor: the pool's, else ours.
	pi := v.pool(lb.Pool)
	ownPool := pi < 0 || madeByUs(v.pools[pi].Description)
	var mon LBMonitor
	haveMon := false
	if pi >= 0 && v.pools[pi].Monitor != "" {
		m, ok, err := api.getMonitor(ctx, account, v.pools[pi].Monitor)
		if err != nil {
			return translate.LBState{}, err
		}
		mon, haveMon = m, ok
	}
	if !haveMon && ownPool {
		m, ok, err := v.monitorByDescription(ctx, api, account, monitorDescription(lb.Pool))
		if err != nil {
			return translate.LBState{}, err
		}
		if !ok {
			if m, err = api.createMonitor(ctx, account, wantMonitor(lb, newHealthToken())); err != nil {
				return translate.LBState{}, err
			}
			v.monitors = append(v.monitors, m)
			s.opts.Log.Info("load balancing monitor created", "hostname", lb.Hostname, "pool", lb.Pool, "monitor", m.ID)
		}
		mon, haveMon = m, true
	}
	token := ""
	switch {
	case !haveMon:
		problem = fmt.Sprintf("pool %s, not created by tunnelgate, has no monitor: add one that sends the header %s (or create the pool anew through tunnelgate)",
			lb.Pool, translate.LBHealthHeader)
	case madeByUs(mon.Description):
		token = headerValue(mon.Header, translate.LBHealthHeader)
		if token == "" {
			token = newHealthToken()
		}
		if want := wantMonitor(lb, token); !sameMonitor(mon, want) {
			m, err := api.updateMonitor(ctx, account, mon.ID, want)
			if err != nil {
				return translate.LBState{}, err
			}
			mon = m
			s.opts.Log.Info("load balancing monitor updated", "hostname", lb.Hostname, "pool", lb.Pool, "monitor", mon.ID)
		}
	default:
		if token = headerValue(mon.Header, translate.LBHealthHeader); token == "" {
			problem = fmt.Sprintf("the monitor of pool %s (%s) was not created by tunnelgate and sends no %s header, so the proxies cannot answer it; add the header with a random value to it",
				lb.Pool, mon.ID, translate.LBHealthHeader)
		}
	}

	// The pool, with our origin.
	origin := LBOrigin{Name: originName(tunnel), Address: originAddress(tunnel), Host: lb.Hostname, Enabled: lb.Enabled, Weight: lb.Weight}
	var pool LBPool
	if pi < 0 {
		p, err := api.createPool(ctx, account, LBPool{Name: lb.Pool, Description: poolDescription(lb.Pool), Monitor: mon.ID,
			Enabled: true, MinimumOrigins: 1, Origins: []LBOrigin{origin}})
		if err != nil {
			return translate.LBState{HealthToken: token}, err
		}
		v.pools = append(v.pools, p)
		pool = p
		s.opts.Log.Info("load balancing pool created", "hostname", lb.Hostname, "pool", lb.Pool, "id", p.ID)
	} else {
		p := v.pools[pi]
		if _, changed := joinOrigin(tunnel, origin)(slices.Clone(p.Origins)); changed {
			var err error
			if p, err = api.editPoolOrigins(ctx, account, p.ID, joinOrigin(tunnel, origin)); err != nil {
				return translate.LBState{HealthToken: token}, err
			}
			s.opts.Log.Info("origin set in load balancing pool", "hostname", lb.Hostname, "pool", lb.Pool,
				"weight", origin.Weight, "enabled", origin.Enabled)
		}
		if ownPool && haveMon && p.Monitor != mon.ID {
			var err error
			if p, err = api.setPoolMonitor(ctx, account, p.ID, mon.ID); err != nil {
				return translate.LBState{HealthToken: token}, err
			}
		}
		v.pools[pi] = p
		pool = p
	}
	st := translate.LBState{HealthToken: token, Origins: len(pool.Origins)}

	// The load balancer.
	var ids []string
	names := lb.Pools
	if !slices.Contains(names, lb.Pool) {
		names = append(slices.Clone(names), lb.Pool)
	}
	for _, name := range names {
		if i := v.pool(name); i >= 0 && !slices.Contains(ids, v.pools[i].ID) {
			ids = append(ids, v.pools[i].ID)
		}
	}
	if !slices.Contains(ids, pool.ID) { // its name as Cloudflare spells it may differ
		ids = append(ids, pool.ID)
	}
	want := LoadBalancer{Name: lb.Hostname, Description: lbDescription(lb.Hostname), DefaultPools: ids, FallbackPool: ids[len(ids)-1],
		Proxied: true, Enabled: true, SteeringPolicy: lb.Steering, SessionAffinity: lb.SessionAffinity,
		SessionAffinityTTL: float64(lb.SessionAffinityTTL)}
	cur, found, err := s.findLB(ctx, c, v, z.id, lb.Hostname)
	if err != nil {
		return st, err
	}
	v.hasLB[lb.Hostname] = found
	if !found {
		created, err := api.createLoadBalancer(ctx, z.id, want)
		switch {
		case errors.Is(err, ErrLBNameTaken):
			// Made since we listed: another cluster's, most likely.
			delete(v.lbs, z.id)
			if cur, found, err = s.findLB(ctx, c, v, z.id, lb.Hostname); err != nil {
				return st, err
			}
			if !found {
				return st, fmt.Errorf("creating load balancer %s: %w", lb.Hostname, ErrLBNameTaken)
			}
		case err != nil:
			return st, err
		default:
			v.lbs[z.id] = append(v.lbs[z.id], created)
			v.hasLB[lb.Hostname] = true
			s.opts.Log.Info("load balancer created", "hostname", lb.Hostname, "pools", len(ids), "id", created.ID)
			if problem != "" {
				return translate.LBState{Reason: translate.LBReasonForeignOwner, Message: problem, Origins: st.Origins}, nil
			}
			st.Ready = true
			return st, nil
		}
	}
	v.hasLB[lb.Hostname] = true
	switch {
	case madeByUs(cur.Description):
		if !sameLB(cur, want) {
			if _, err := api.updateLoadBalancer(ctx, z.id, cur.ID, want); err != nil {
				return st, err
			}
			s.opts.Log.Info("load balancer updated", "hostname", lb.Hostname, "pools", len(ids), "id", cur.ID)
		}
	case !slices.Contains(cur.DefaultPools, pool.ID) && cur.FallbackPool != pool.ID:
		return translate.LBState{Reason: translate.LBReasonNameTaken, HealthToken: token, Origins: st.Origins, Message: fmt.Sprintf(
			"%s already has a load balancer, not created by tunnelgate, that does not use pool %s; add the pool to it, or delete it for tunnelgate to create one",
			lb.Hostname, lb.Pool)}, nil
	}
	if problem != "" {
		return translate.LBState{Reason: translate.LBReasonForeignOwner, Message: problem, HealthToken: token, Origins: st.Origins}, nil
	}
	st.Ready = true
	return st, nil
}

// findLB finds the zone's load balancer on hostname.
func (s *Syncer) findLB(ctx context.Context, c *classSync, v *lbView, zoneID, hostname string) (LoadBalancer, bool, error) {
	all, err := v.loadBalancers(ctx, c.l.api, zoneID)
	if err != nil {
		return LoadBalancer{}, false, err
	}
	hostname = strings.ToLower(strings.TrimSuffix(hostname, "."))
	i := slices.IndexFunc(all, func(l LoadBalancer) bool { return l.Name == hostname })
	if i < 0 {
		return LoadBalancer{}, false, nil
	}
	return all[i], true, nil
}

// leavePool takes this cluster's origin (tunnel's) out of a pool it no longer joins,
// or disables it when it is the pool's last; with rem.DeleteUnused (as
// remembered) and a pool tunnelgate created, deletes the pool instead,
// and what of ours only it used.
func (s *Syncer) leavePool(ctx context.Context, c *classSync, v *lbView, tunnel string, pool LBPool, rem translate.LoadBalancing, remembered bool) error {
	api, account := c.l.api, c.l.account
	if ownOrigin(pool.Origins, tunnel) < 0 {
		return nil
	}
	if len(pool.Origins) == 1 && remembered && rem.DeleteUnused && madeByUs(pool.Description) {
		deleted, err := s.deleteUnusedPool(ctx, c, v, pool, rem)
		if err != nil || deleted {
			return err
		}
	}
	p, err := api.editPoolOrigins(ctx, account, pool.ID, leaveOrigin(tunnel))
	if err != nil {
		return err
	}
	if i := v.pool(pool.Name); i >= 0 {
		v.pools[i] = p
	}
	if ownOrigin(p.Origins, tunnel) >= 0 {
		s.opts.Log.Info("origin disabled in load balancing pool: it is the pool's last", "pool", pool.Name, "tunnel", tunnel)
	} else {
		s.opts.Log.Info("origin taken out of load balancing pool", "pool", pool.Name, "tunnel", tunnel)
	}
	return nil
}

// deleteUnusedPool deletes a pool of ours whose only origin is ours: our
// load balancer on rem.Hostname stops using it first (deleted if it was
// its only pool), then the pool goes, then its monitor if ours and no
// other pool uses it. deleted is false when something not ours still
// uses the pool: it stays.
func (s *Syncer) deleteUnusedPool(ctx context.Context, c *classSync, v *lbView, pool LBPool, rem translate.LoadBalancing) (deleted bool, err error) {
	api, account := c.l.api, c.l.account
	if z, ok := zoneOf(rem.Hostname, c.l.zones); ok {
		lbs, err := v.loadBalancers(ctx, api, z.id)
		if err != nil {
			return false, err
		}
		for _, l := range lbs {
			if !slices.Contains(l.DefaultPools, pool.ID) && l.FallbackPool != pool.ID {
				continue
			}
			if !madeByUs(l.Description) {
				s.opts.Log.Info("load balancing pool kept: a load balancer not created by tunnelgate uses it", "pool", pool.Name, "load balancer", l.Name)
				return false, nil
			}
			rest := slices.DeleteFunc(slices.Clone(l.DefaultPools), func(id string) bool { return id == pool.ID })
			if len(rest) == 0 {
				if err := api.deleteLoadBalancer(ctx, z.id, l.ID); err != nil {
					return false, err
				}
				s.opts.Log.Info("load balancer deleted", "hostname", l.Name, "id", l.ID)
				continue
			}
			l.DefaultPools = rest
			if l.FallbackPool == pool.ID {
				l.FallbackPool = rest[len(rest)-1]
			}
			if _, err := api.updateLoadBalancer(ctx, z.id, l.ID, l); err != nil {
				return false, err
			}
			s.opts.Log.Info("load balancer no longer uses pool", "hostname", l.Name, "pool", pool.Name)
		}
		delete(v.lbs, z.id)
	}
	if err := api.deletePool(ctx, account, pool.ID); err != nil {
		if errors.Is(err, ErrLBInUse) {
			s.opts.Log.Info("load balancing pool kept: still used", "pool", pool.Name, "err", err)
			return false, nil
		}
		return false, err
	}
	v.pools = slices.DeleteFunc(v.pools, func(p LBPool) bool { return p.ID == pool.ID })
	s.opts.Log.Info("load balancing pool deleted", "pool", pool.Name, "id", pool.ID)
	if pool.Monitor == "" || slices.ContainsFunc(v.pools, func(p LBPool) bool { return p.Monitor == pool.Monitor }) {
		return true, nil
	}
	m, ok, err := api.getMonitor(ctx, account, pool.Monitor)
	if err != nil || !ok || !madeByUs(m.Description) {
		return true, err
	}
	if err := api.deleteMonitor(ctx, account, m.ID); err != nil {
		if errors.Is(err, ErrLBInUse) {
			return true, nil
		}
		return true, err
	}
	s.opts.Log.Info("load balancing monitor deleted", "pool", pool.Name, "monitor", m.ID)
	return true, nil
}

// loadBalancedHostnames are the hostnames of d's LoadBalancers known to
// have a load balancer: their DNS is the load balancer's. Until one is
// known to exist (Load Balancing not enabled, say) the hostname keeps its
// CNAME to this tunnel.
func loadBalancedHostnames(d Desired, has map[string]bool) []string {
	var out []string
	for _, lb := range d.LoadBalancers {
		if has[lb.Hostname] {
			out = append(out, lb.Hostname)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
