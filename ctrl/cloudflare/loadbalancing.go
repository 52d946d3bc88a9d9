// This file implements the Cloudflare Load Balancing calls: monitors,
// pools and their origins, and zone load balancers.

package cloudflare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	cf "github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/load_balancers"
)

// Several clusters can serve one hostname through Cloudflare Load
// Balancing: each adds its tunnel (<tunnel-id>.cfargotunnel.com, with the
// hostname as Host header) as an origin of a shared pool, which a load
// balancer on the hostname uses. These calls return types of our own, so
// the controller does not depend on cloudflare-go's; their errors are
// apiErrors, and the cases a controller reports on a status condition
// match the sentinels below with errors.Is.
var (
	// ErrLBNotEntitled: the account has no Load Balancing subscription.
	ErrLBNotEntitled = errors.New("the Cloudflare account does not have Load Balancing")
	// ErrLBQuota: a pool, origin or load balancer quota of the account is
	// reached.
	ErrLBQuota = errors.New("a Cloudflare Load Balancing quota of the account is reached")
	// ErrLBNameTaken: the hostname already has a load balancer.
	ErrLBNameTaken = errors.New("the hostname already has a load balancer")
	// ErrLBInUse: a monitor used by a pool, or a pool used by a load
	// balancer, cannot be deleted.
	ErrLBInUse = errors.New("still used by another Load Balancing object")
	// ErrLBNotFound: the pool whose origins were to change is gone.
	ErrLBNotFound = errors.New("no such Load Balancing object")
	// ErrOriginsChanged: the pool's origins kept changing under us.
	ErrOriginsChanged = errors.New("the pool's origins kept changing while we changed them")
)

// LBMonitor is a health monitor of the account.
type LBMonitor struct {
	ID            string
	Type          string // http or https for tunnels
	Description   string
	Method        string
	Path          string
	ExpectedCodes string
	Header        map[string][]string
	Port          int
	Interval      int
	Timeout       int
	Retries       int
}

// LBOrigin is an origin of a pool. Port and VirtualNetworkID are not
// set on a cluster's origin; they are carried so that writing the pool's
// origins back keeps them on the origins of others.
type LBOrigin struct {
	Name             string
	Address          string  // <tunnel-id>.cfargotunnel.com for a cluster
	Host             string  // the Host header Cloudflare sends; "" for none
	Enabled          bool    // false: the origin gets no traffic and no health checks
	Weight           float64 // 0–1, in steps of 0.01
	Port             int     // 0: the monitor's or the protocol's
	VirtualNetworkID string
}

// LBPool is a pool of the account.
type LBPool struct {
	ID             string
	Name           string
	Description    string
	Monitor        string // "" for none
	Enabled        bool   // false creates a disabled pool
	MinimumOrigins int    // healthy origins the pool needs; 0 is taken as 1
	Origins        []LBOrigin
}

// LoadBalancer is a load balancer of a zone.
type LoadBalancer struct {
	ID                 string
	Name               string // the hostname
	Description        string
	DefaultPools       []string
	FallbackPool       string
	Proxied            bool
	Enabled            bool   // false creates a disabled load balancer
	SteeringPolicy     string // "": geo with region, country or PoP pools, else off
	SessionAffinity    string
	SessionAffinityTTL float64 // 0: Cloudflare's default
}

// lbError classifies a failed Load Balancing call. What Cloudflare
// answers in these cases is not documented: an account without the
// subscription is taken to get a 403 whose code is not an authentication
// code (10000, 9106, 9109: those are the token's fault, as for any call);
// a quota, an error that says "quota" or "limit" (but a 429), whatever
// its status; a taken name, a 409 or
// "already exists"; a reference, a 409 or "referenced"/"in use".
// test/cffake answers each with a code of its own (1106, 1105, 1103,
// 1104), matched first.
func lbError(what string, err error, conflict error) error {
	e := wrap(what, err)
	ae, ok := e.(*apiError)
	if !ok {
		return e
	}
	var ce *cf.Error
	if !errors.As(err, &ce) {
		return e
	}
	codes := map[int64]bool{}
	for _, d := range ce.Errors {
		codes[d.Code] = true
	}
	msg := strings.ToLower(ae.msg)
	switch {
	case codes[1106]:
		ae.kind = ErrLBNotEntitled
	case codes[1105] || ce.StatusCode != http.StatusTooManyRequests && (strings.Contains(msg, "quota") || strings.Contains(msg, "limit")):
		ae.kind = ErrLBQuota
	case ce.StatusCode == http.StatusForbidden && !codes[10000] && !codes[9106] && !codes[9109]:
		ae.kind = ErrLBNotEntitled
	case conflict == ErrLBNameTaken && (codes[1103] || ce.StatusCode == http.StatusConflict || strings.Contains(msg, "already exists")):
		ae.kind = ErrLBNameTaken
	case conflict == ErrLBInUse && (codes[1104] || ce.StatusCode == http.StatusConflict || strings.Contains(msg, "referenced") || strings.Contains(msg, "in use")):
		ae.kind = ErrLBInUse
	}
	return ae
}

// ---- monitors ----

func monitorOf(m *load_balancers.Monitor) LBMonitor {
	return LBMonitor{ID: m.ID, Type: string(m.Type), Description: m.Description, Method: m.Method, Path: m.Path,
		ExpectedCodes: m.ExpectedCodes, Header: m.Header, Port: int(m.Port), Interval: int(m.Interval),
		Timeout: int(m.Timeout), Retries: int(m.Retries)}
}

// listMonitors lists the account's monitors (one page: the API does not
// page them).
func (a *api) listMonitors(ctx context.Context, account string) ([]LBMonitor, error) {
	ctx = withOp(ctx, opLBMonitorList)
	res, err := a.lb.Monitors.List(ctx, load_balancers.MonitorListParams{AccountID: cf.F(account)})
	if err != nil {
		return nil, lbError("listing load balancing monitors", err, nil)
	}
	out := make([]LBMonitor, 0, len(res.Result))
	for i := range res.Result {
		out = append(out, monitorOf(&res.Result[i]))
	}
	return out, nil
}

// getMonitor reads a monitor; ok is false when there is none by that ID.
func (a *api) getMonitor(ctx context.Context, account, id string) (m LBMonitor, ok bool, err error) {
	ctx = withOp(ctx, opLBMonitorGet)
	res, err := a.lb.Monitors.Get(ctx, id, load_balancers.MonitorGetParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return LBMonitor{}, false, nil
	}
	if err != nil {
		return LBMonitor{}, false, lbError("reading load balancing monitor "+id, err, nil)
	}
	return monitorOf(res), true, nil
}

// createMonitor creates a monitor with m's settings.
func (a *api) createMonitor(ctx context.Context, account string, m LBMonitor) (LBMonitor, error) {
	ctx = withOp(ctx, opLBMonitorCreate)
	p := load_balancers.MonitorNewParams{AccountID: cf.F(account), Type: cf.F(load_balancers.MonitorNewParamsType(m.Type)),
		Description: cf.F(m.Description), ExpectedCodes: cf.F(m.ExpectedCodes)}
	if m.Method != "" {
		p.Method = cf.F(m.Method)
	}
	if m.Path != "" {
		p.Path = cf.F(m.Path)
	}
	if len(m.Header) > 0 {
		p.Header = cf.F(m.Header)
	}
	if m.Port != 0 {
		p.Port = cf.F(int64(m.Port))
	}
	if m.Interval != 0 {
		p.Interval = cf.F(int64(m.Interval))
	}
	if m.Timeout != 0 {
		p.Timeout = cf.F(int64(m.Timeout))
	}
	if m.Retries != 0 {
		p.Retries = cf.F(int64(m.Retries))
	}
	res, err := a.lb.Monitors.New(ctx, p)
	if err != nil {
		return LBMonitor{}, lbError("creating a load balancing monitor", err, nil)
	}
	return monitorOf(res), nil
}

// updateMonitor replaces a monitor's settings (PUT: fields left zero take
// Cloudflare's defaults). Only for a monitor tunnelgate created: it is
// wholly ours.
func (a *api) updateMonitor(ctx context.Context, account, id string, m LBMonitor) (LBMonitor, error) {
	ctx = withOp(ctx, opLBMonitorUpdate)
	p := load_balancers.MonitorUpdateParams{AccountID: cf.F(account), Type: cf.F(load_balancers.MonitorUpdateParamsType(m.Type)),
		Description: cf.F(m.Description), ExpectedCodes: cf.F(m.ExpectedCodes)}
	if m.Method != "" {
		p.Method = cf.F(m.Method)
	}
	if m.Path != "" {
		p.Path = cf.F(m.Path)
	}
	if len(m.Header) > 0 {
		p.Header = cf.F(m.Header)
	}
	if m.Port != 0 {
		p.Port = cf.F(int64(m.Port))
	}
	if m.Interval != 0 {
		p.Interval = cf.F(int64(m.Interval))
	}
	if m.Timeout != 0 {
		p.Timeout = cf.F(int64(m.Timeout))
	}
	if m.Retries != 0 {
		p.Retries = cf.F(int64(m.Retries))
	}
	res, err := a.lb.Monitors.Update(ctx, id, p)
	if err != nil {
		return LBMonitor{}, lbError("updating load balancing monitor "+id, err, nil)
	}
	return monitorOf(res), nil
}

// deleteMonitor deletes a monitor; one already gone is no error, one a
// pool uses is ErrLBInUse.
func (a *api) deleteMonitor(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opLBMonitorDelete)
	_, err := a.lb.Monitors.Delete(ctx, id, load_balancers.MonitorDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return lbError("deleting load balancing monitor "+id, err, ErrLBInUse)
	}
	return nil
}

// ---- pools ----

func poolOf(p *load_balancers.Pool) LBPool {
	out := LBPool{ID: p.ID, Name: p.Name, Description: p.Description, Monitor: p.Monitor, Enabled: p.Enabled,
		MinimumOrigins: int(p.MinimumOrigins), Origins: make([]LBOrigin, 0, len(p.Origins))}
	for _, o := range p.Origins {
		lo := LBOrigin{Name: o.Name, Address: o.Address, Enabled: o.Enabled, Weight: o.Weight, Port: int(o.Port),
			VirtualNetworkID: o.VirtualNetworkID}
		if len(o.Header.Host) > 0 {
			lo.Host = o.Header.Host[0]
		}
		out.Origins = append(out.Origins, lo)
	}
	return out
}

func originParams(origins []LBOrigin) []load_balancers.OriginParam {
	out := make([]load_balancers.OriginParam, 0, len(origins))
	for _, o := range origins {
		p := load_balancers.OriginParam{Name: cf.F(o.Name), Address: cf.F(o.Address), Enabled: cf.F(o.Enabled),
			Weight: cf.F(o.Weight)}
		if o.Host != "" {
			p.Header = cf.F(load_balancers.HeaderParam{Host: cf.F([]string{o.Host})})
		}
		if o.Port != 0 {
			p.Port = cf.F(int64(o.Port))
		}
		if o.VirtualNetworkID != "" {
			p.VirtualNetworkID = cf.F(o.VirtualNetworkID)
		}
		out = append(out, p)
	}
	return out
}

// listPools lists the account's pools (one page: the API does not page
// them).
func (a *api) listPools(ctx context.Context, account string) ([]LBPool, error) {
	ctx = withOp(ctx, opLBPoolList)
	res, err := a.lb.Pools.List(ctx, load_balancers.PoolListParams{AccountID: cf.F(account)})
	if err != nil {
		return nil, lbError("listing load balancing pools", err, nil)
	}
	out := make([]LBPool, 0, len(res.Result))
	for i := range res.Result {
		out = append(out, poolOf(&res.Result[i]))
	}
	return out, nil
}

// getPool reads a pool; ok is false when there is none by that ID.
func (a *api) getPool(ctx context.Context, account, id string) (p LBPool, ok bool, err error) {
	ctx = withOp(ctx, opLBPoolGet)
	res, err := a.lb.Pools.Get(ctx, id, load_balancers.PoolGetParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return LBPool{}, false, nil
	}
	if err != nil {
		return LBPool{}, false, lbError("reading load balancing pool "+id, err, nil)
	}
	return poolOf(res), true, nil
}

// createPool creates a pool with p's settings and origins.
func (a *api) createPool(ctx context.Context, account string, p LBPool) (LBPool, error) {
	ctx = withOp(ctx, opLBPoolCreate)
	params := load_balancers.PoolNewParams{AccountID: cf.F(account), Name: cf.F(p.Name),
		Origins: cf.F(originParams(p.Origins)), Description: cf.F(p.Description), Enabled: cf.F(p.Enabled),
		MinimumOrigins: cf.F(int64(max(p.MinimumOrigins, 1)))}
	if p.Monitor != "" {
		params.Monitor = cf.F(p.Monitor)
	}
	res, err := a.lb.Pools.New(ctx, params)
	if err != nil {
		return LBPool{}, lbError("creating load balancing pool "+p.Name, err, nil)
	}
	return poolOf(res), nil
}

// originAttempts bounds editPoolOrigins' re-reads.
const originAttempts = 3

// editPoolOrigins changes a pool's origins by read, modify, write.
// Cloudflare has no endpoint for one origin: the origins are a single
// list, written whole (PATCH of the pool with "origins"), and the API
// offers no version, ETag or If-Match to make that write conditional. So
// clusters that share a pool must each re-read before writing and change
// only their own origin: change gets the current origins and returns the
// wanted ones, and whether they differ (false: nothing is written).
//
// The write is guarded by a compare: after change decides, the pool is
// read again, and only if its origins are still those change saw is the
// PATCH sent; otherwise change runs again on the new list, up to
// originAttempts times, then ErrOriginsChanged. A race remains: another
// cluster's write that lands between that second read and our PATCH is
// overwritten, and with it that cluster's change to its own origin. It is
// not lost for good: each cluster re-asserts its own origin on its next
// sync, which re-reads the pool, so the pool converges once the writers
// stop racing. A pool that is gone is ErrLBNotFound.
func (a *api) editPoolOrigins(ctx context.Context, account, poolID string,
	change func(current []LBOrigin) (want []LBOrigin, changed bool)) (LBPool, error) {
	for range originAttempts {
		seen, ok, err := a.getPool(ctx, account, poolID)
		if err != nil {
			return LBPool{}, err
		}
		if !ok {
			return LBPool{}, fmt.Errorf("pool %s: %w", poolID, ErrLBNotFound)
		}
		want, changed := change(slices.Clone(seen.Origins))
		if !changed {
			return seen, nil
		}
		now, ok, err := a.getPool(ctx, account, poolID)
		if err != nil {
			return LBPool{}, err
		}
		if !ok {
			return LBPool{}, fmt.Errorf("pool %s: %w", poolID, ErrLBNotFound)
		}
		if !SameOrigins(now.Origins, seen.Origins) {
			continue // someone else wrote: decide again on what they wrote
		}
		res, err := a.lb.Pools.Edit(withOp(ctx, opLBPoolEdit), poolID, load_balancers.PoolEditParams{
			AccountID: cf.F(account), Origins: cf.F(originParams(want))})
		if err != nil {
			return LBPool{}, lbError("changing the origins of load balancing pool "+poolID, err, nil)
		}
		return poolOf(res), nil
	}
	return LBPool{}, fmt.Errorf("pool %s: %w", poolID, ErrOriginsChanged)
}

// setPoolMonitor makes a pool use a monitor, leaving its other settings
// and its origins as they are (a PATCH of "monitor" alone). Only for a
// pool tunnelgate created.
func (a *api) setPoolMonitor(ctx context.Context, account, poolID, monitorID string) (LBPool, error) {
	res, err := a.lb.Pools.Edit(withOp(ctx, opLBPoolEdit), poolID, load_balancers.PoolEditParams{
		AccountID: cf.F(account), Monitor: cf.F(monitorID)})
	if err != nil {
		return LBPool{}, lbError("setting the monitor of load balancing pool "+poolID, err, nil)
	}
	return poolOf(res), nil
}

// SameOrigins says whether two origin lists hold the same origins with
// the same settings, in any order (Cloudflare keeps them as a set).
func SameOrigins(a, b []LBOrigin) bool {
	if len(a) != len(b) {
		return false
	}
	byName := func(x, y LBOrigin) int { return cmp.Compare(x.Name, y.Name) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, byName)
	slices.SortFunc(b, byName)
	return slices.Equal(a, b)
}

// deletePool deletes a pool; one already gone is no error, one a load
// balancer uses is ErrLBInUse.
func (a *api) deletePool(ctx context.Context, account, id string) error {
	ctx = withOp(ctx, opLBPoolDelete)
	_, err := a.lb.Pools.Delete(ctx, id, load_balancers.PoolDeleteParams{AccountID: cf.F(account)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return lbError("deleting load balancing pool "+id, err, ErrLBInUse)
	}
	return nil
}

// ---- load balancers ----

func loadBalancerOf(l *load_balancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: l.ID, Name: strings.ToLower(l.Name), Description: l.Description,
		DefaultPools: slices.Clone(l.DefaultPools), FallbackPool: l.FallbackPool, Proxied: l.Proxied, Enabled: l.Enabled,
		SteeringPolicy: string(l.SteeringPolicy), SessionAffinity: string(l.SessionAffinity),
		SessionAffinityTTL: l.SessionAffinityTTL}
}

// listLoadBalancers lists the zone's load balancers (one page: the API
// does not page them).
func (a *api) listLoadBalancers(ctx context.Context, zoneID string) ([]LoadBalancer, error) {
	ctx = withOp(ctx, opLBList)
	res, err := a.lb.List(ctx, load_balancers.LoadBalancerListParams{ZoneID: cf.F(zoneID)})
	if err != nil {
		return nil, lbError("listing the load balancers of zone "+zoneID, err, nil)
	}
	out := make([]LoadBalancer, 0, len(res.Result))
	for i := range res.Result {
		out = append(out, loadBalancerOf(&res.Result[i]))
	}
	return out, nil
}

// loadBalancerByName finds the zone's load balancer on hostname; ok is
// false when there is none. The API has no filter by name: it lists.
func (a *api) loadBalancerByName(ctx context.Context, zoneID, hostname string) (lb LoadBalancer, ok bool, err error) {
	all, err := a.listLoadBalancers(ctx, zoneID)
	if err != nil {
		return LoadBalancer{}, false, err
	}
	hostname = strings.ToLower(strings.TrimSuffix(hostname, "."))
	for _, l := range all {
		if l.Name == hostname {
			return l, true, nil
		}
	}
	return LoadBalancer{}, false, nil
}

// getLoadBalancer reads a load balancer; ok is false when there is none
// by that ID.
func (a *api) getLoadBalancer(ctx context.Context, zoneID, id string) (lb LoadBalancer, ok bool, err error) {
	ctx = withOp(ctx, opLBGet)
	res, err := a.lb.Get(ctx, id, load_balancers.LoadBalancerGetParams{ZoneID: cf.F(zoneID)})
	if status(err) == http.StatusNotFound {
		return LoadBalancer{}, false, nil
	}
	if err != nil {
		return LoadBalancer{}, false, lbError("reading load balancer "+id, err, nil)
	}
	return loadBalancerOf(res), true, nil
}

// createLoadBalancer creates a load balancer on l.Name; a name that has
// one already is ErrLBNameTaken.
func (a *api) createLoadBalancer(ctx context.Context, zoneID string, l LoadBalancer) (LoadBalancer, error) {
	ctx = withOp(ctx, opLBCreate)
	p := load_balancers.LoadBalancerNewParams{ZoneID: cf.F(zoneID), Name: cf.F(l.Name),
		DefaultPools: cf.F(l.DefaultPools), FallbackPool: cf.F(l.FallbackPool), Description: cf.F(l.Description),
		Proxied: cf.F(l.Proxied), Enabled: cf.F(l.Enabled),
		SteeringPolicy: cf.F(load_balancers.SteeringPolicy(l.SteeringPolicy))}
	if l.SessionAffinity != "" {
		p.SessionAffinity = cf.F(load_balancers.SessionAffinity(l.SessionAffinity))
	}
	if l.SessionAffinityTTL != 0 {
		p.SessionAffinityTTL = cf.F(l.SessionAffinityTTL)
	}
	res, err := a.lb.New(ctx, p)
	if err != nil {
		return LoadBalancer{}, lbError("creating load balancer "+l.Name, err, ErrLBNameTaken)
	}
	return loadBalancerOf(res), nil
}

// updateLoadBalancer sets the fields LoadBalancer holds, and only those:
// a PATCH, so what tunnelgate does not manage (rules, region pools,
// adaptive routing...) stays as someone set it, where a PUT would reset
// it.
func (a *api) updateLoadBalancer(ctx context.Context, zoneID, id string, l LoadBalancer) (LoadBalancer, error) {
	ctx = withOp(ctx, opLBUpdate)
	p := load_balancers.LoadBalancerEditParams{ZoneID: cf.F(zoneID), Name: cf.F(l.Name),
		DefaultPools: cf.F(l.DefaultPools), FallbackPool: cf.F(l.FallbackPool), Description: cf.F(l.Description),
		Proxied: cf.F(l.Proxied), Enabled: cf.F(l.Enabled),
		SteeringPolicy: cf.F(load_balancers.SteeringPolicy(l.SteeringPolicy))}
	if l.SessionAffinity != "" {
		p.SessionAffinity = cf.F(load_balancers.SessionAffinity(l.SessionAffinity))
	}
	if l.SessionAffinityTTL != 0 {
		p.SessionAffinityTTL = cf.F(l.SessionAffinityTTL)
	}
	res, err := a.lb.Edit(ctx, id, p)
	if err != nil {
		return LoadBalancer{}, lbError("updating load balancer "+id, err, ErrLBNameTaken)
	}
	return loadBalancerOf(res), nil
}

// deleteLoadBalancer deletes a load balancer; one already gone is no
// error.
func (a *api) deleteLoadBalancer(ctx context.Context, zoneID, id string) error {
	ctx = withOp(ctx, opLBDelete)
	_, err := a.lb.Delete(ctx, id, load_balancers.LoadBalancerDeleteParams{ZoneID: cf.F(zoneID)})
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return lbError("deleting load balancer "+id, err, nil)
	}
	return nil
}
