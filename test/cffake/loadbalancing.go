// This file fakes Cloudflare Load Balancing: monitors, pools and their
// origins, pool health, and zone load balancers.

package cffake

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Load Balancing, as Cloudflare's API v4 describes it: monitors and pools
// belong to an account, load balancers to a zone and name pools of the
// zone's account. The fake keeps the objects and the rules between them;
// it does not steer traffic or run health checks (tests set an origin's
// health with SetOriginHealth). Kept strict, chosen where Cloudflare's
// behaviour is not certain (doc.go lists the codes):
//   - A pool needs a name (letters, digits, "-" and "_") and at least one
//     origin; each origin a name, unique in the pool, and an address;
//     weights are 0–1 in steps of 0.01; the only origin header is Host,
//     with one value.
//   - A pool's monitor, and a load balancer's pools, must exist.
//   - A monitor referenced by a pool, or a pool referenced by a load
//     balancer (default_pools or fallback_pool), cannot be deleted.
//   - An HTTP or HTTPS monitor needs expected_codes (a code or a range
//     such as 2xx) and takes GET or HEAD; other types refuse path,
//     header and expected_codes, and tcp and smtp need a port. The
//     interval is 5–3600 s and at least timeout × (retries + 1).
//   - A load balancer's name is a hostname in its zone, one load balancer
//     per name; session_affinity_ttl is in the range its session_affinity
//     documents.
//   - Per-account limits (SetLBLimits) and the subscription
//     (SetLBEntitled) are checked on every call.
//   - Lists are not paged: the spec gives them no page parameters and
//     cloudflare-go reads a single page.

// LBLimits are an account's Load Balancing quotas; zero is no limit.
type LBLimits struct {
	Pools          int // pools in the account
	OriginsPerPool int // origins in one pool
	LoadBalancers  int // load balancers in all the account's zones
}

// lbAccount is an account's Load Balancing settings.
type lbAccount struct {
	notEntitled bool
	limits      LBLimits
}

type lbMonitor struct {
	acct             *account
	id               string
	m                MonitorSpec
	created, updated time.Time
}

type lbPool struct {
	acct             *account
	id               string
	name, desc       string
	enabled          bool
	minimumOrigins   int
	monitor          string
	origins          []lbOrigin
	created, updated time.Time
	disabledAt       time.Time
}

type lbOrigin struct {
	PoolOrigin
	disabledAt time.Time
}

type loadBalancer struct {
	zone               *zone
	id                 string
	lb                 LoadBalancer
	created, updated   time.Time
	sessionAffinityTTL *float64
}

// MonitorSpec is a monitor's settings, as the API takes and shows them.
type MonitorSpec struct {
	ID              string // set by the fake
	Type            string // http, https, tcp, udp_icmp, icmp_ping, smtp
	Description     string
	Method          string
	Path            string
	ExpectedCodes   string
	ExpectedBody    string
	Header          map[string][]string
	Port            int
	Interval        int
	Timeout         int
	Retries         int
	ConsecutiveUp   int
	ConsecutiveDown int
	AllowInsecure   bool
	FollowRedirects bool
	ProbeZone       string
}

// PoolOrigin is an origin of a pool.
type PoolOrigin struct {
	Name    string
	Address string
	Enabled bool
	Weight  float64
	Host    string // the Host header sent to the origin; "" for none
	Port    int
}

// Pool is a snapshot of a pool.
type Pool struct {
	ID, Name, Description string
	Enabled               bool
	MinimumOrigins        int
	Monitor               string
	Origins               []PoolOrigin
}

// LoadBalancer is a snapshot of a zone's load balancer.
type LoadBalancer struct {
	ID, Name, Description string
	Enabled, Proxied      bool
	DefaultPools          []string
	FallbackPool          string
	SteeringPolicy        string
	SessionAffinity       string
	SessionAffinityTTL    float64 // 0 when not set
	TTL                   float64
}

// HealthPoP is the one Cloudflare data centre the pool health endpoint
// reports: the fake checks from nowhere, so any name would do.
const HealthPoP = "Amsterdam, NL"

// SetLBEntitled says whether the account has Load Balancing (the default);
// without it every Load Balancing call fails as for an account without
// the subscription.
func (f *Fake) SetLBEntitled(accountID string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lbAccount(f.mustAccount(accountID)).notEntitled = !on
}

// SetLBLimits sets the account's Load Balancing quotas.
func (f *Fake) SetLBLimits(accountID string, l LBLimits) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lbAccount(f.mustAccount(accountID)).limits = l
}

func (f *Fake) lbAccount(a *account) *lbAccount {
	if f.lbAccounts == nil {
		f.lbAccounts = map[*account]*lbAccount{}
	}
	s := f.lbAccounts[a]
	if s == nil {
		s = &lbAccount{}
		f.lbAccounts[a] = s
	}
	return s
}

// AddPool adds a pool, as someone else would make it in the dashboard,
// enabled and with minimum_origins 1; it returns its ID. Origins with a
// zero Weight get weight 1.
func (f *Fake) AddPool(accountID, name string, origins ...PoolOrigin) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &lbPool{acct: f.mustAccount(accountID), id: newID(), name: name, enabled: true, minimumOrigins: 1,
		created: now()}
	p.updated = p.created
	p.origins = seedOrigins(origins, p.created)
	f.lbPools = append(f.lbPools, p)
	return p.id
}

// SetPoolOrigins replaces a pool's origins behind the API's back, as
// another writer would; it reports whether the pool exists.
func (f *Fake) SetPoolOrigins(accountID, poolID string, origins ...PoolOrigin) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.lbPool(accountID, poolID)
	if p == nil {
		return false
	}
	p.updated = now()
	p.origins = seedOrigins(origins, p.updated)
	return true
}

func seedOrigins(in []PoolOrigin, at time.Time) []lbOrigin {
	out := make([]lbOrigin, len(in))
	for i, o := range in {
		if o.Weight == 0 {
			o.Weight = 1
		}
		out[i] = lbOrigin{PoolOrigin: o}
		if !o.Enabled {
			out[i].disabledAt = at
		}
	}
	return out
}

// AddLoadBalancer adds a proxied load balancer on name in the zone, as
// someone else would make it; the first pool is also the fallback. It
// returns its ID.
func (f *Fake) AddLoadBalancer(zoneID, name string, pools ...string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	z := f.zone(zoneID)
	if z == nil || len(pools) == 0 {
		panic("cffake: AddLoadBalancer needs a known zone and a pool")
	}
	lb := &loadBalancer{zone: z, id: newID(), created: now(), lb: LoadBalancer{Name: lbName(name),
		Enabled: true, Proxied: true, DefaultPools: slices.Clone(pools), FallbackPool: pools[0], SessionAffinity: "none"}}
	lb.updated = lb.created
	f.lbs = append(f.lbs, lb)
	return lb.id
}

// SetOriginHealth sets what the pool health endpoint reports for the
// origin of that name; origins are healthy until set otherwise. It reports
// whether the pool has such an origin.
func (f *Fake) SetOriginHealth(accountID, poolID, origin string, healthy bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.lbPool(accountID, poolID)
	if p == nil || !slices.ContainsFunc(p.origins, func(o lbOrigin) bool { return o.Name == origin }) {
		return false
	}
	if f.lbUnhealthy == nil {
		f.lbUnhealthy = map[string]bool{}
	}
	f.lbUnhealthy[poolID+"/"+origin] = !healthy
	return true
}

// Monitors returns the account's monitors, oldest first.
func (f *Fake) Monitors(accountID string) []MonitorSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []MonitorSpec
	for _, m := range f.lbMonitors {
		if m.acct.id == accountID {
			s := m.m
			s.ID = m.id
			s.Header = cloneHeader(m.m.Header)
			out = append(out, s)
		}
	}
	return out
}

// Pools returns the account's pools, oldest first.
func (f *Fake) Pools(accountID string) []Pool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Pool
	for _, p := range f.lbPools {
		if p.acct.id != accountID {
			continue
		}
		s := Pool{ID: p.id, Name: p.name, Description: p.desc, Enabled: p.enabled, MinimumOrigins: p.minimumOrigins,
			Monitor: p.monitor}
		for _, o := range p.origins {
			s.Origins = append(s.Origins, o.PoolOrigin)
		}
		out = append(out, s)
	}
	return out
}

// LoadBalancers returns the zone's load balancers, oldest first.
func (f *Fake) LoadBalancers(zoneID string) []LoadBalancer {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []LoadBalancer
	for _, lb := range f.lbs {
		if lb.zone.id == zoneID {
			s := lb.lb
			s.ID = lb.id
			s.DefaultPools = slices.Clone(s.DefaultPools)
			if lb.sessionAffinityTTL != nil {
				s.SessionAffinityTTL = *lb.sessionAffinityTTL
			}
			out = append(out, s)
		}
	}
	return out
}

func (f *Fake) lbPool(accountID, id string) *lbPool {
	for _, p := range f.lbPools {
		if p.acct.id == accountID && p.id == id {
			return p
		}
	}
	return nil
}

func (f *Fake) lbMonitor(accountID, id string) *lbMonitor {
	for _, m := range f.lbMonitors {
		if m.acct.id == accountID && m.id == id {
			return m
		}
	}
	return nil
}

func (f *Fake) routeLoadBalancing() {
	const mon = "/accounts/{account_id}/load_balancers/monitors"
	const pools = "/accounts/{account_id}/load_balancers/pools"
	const lbs = "/zones/{zone_id}/load_balancers"
	f.handle("GET "+mon, f.lbAccountEndpoint(f.listMonitors))
	f.handle("POST "+mon, f.lbAccountEndpoint(f.createMonitor))
	f.handle("GET "+mon+"/{monitor_id}", f.monitorEndpoint(f.getMonitor))
	f.handle("PUT "+mon+"/{monitor_id}", f.monitorEndpoint(f.putMonitor))
	f.handle("PATCH "+mon+"/{monitor_id}", f.monitorEndpoint(f.patchMonitor))
	f.handle("DELETE "+mon+"/{monitor_id}", f.monitorEndpoint(f.deleteMonitor))
	f.handle("GET "+pools, f.lbAccountEndpoint(f.listPools))
	f.handle("POST "+pools, f.lbAccountEndpoint(f.createPool))
	f.handle("GET "+pools+"/{pool_id}", f.poolEndpoint(f.getPool))
	f.handle("PUT "+pools+"/{pool_id}", f.poolEndpoint(f.putPool))
	f.handle("PATCH "+pools+"/{pool_id}", f.poolEndpoint(f.patchPool))
	f.handle("DELETE "+pools+"/{pool_id}", f.poolEndpoint(f.deletePool))
	f.handle("GET "+pools+"/{pool_id}/health", f.poolEndpoint(f.poolHealth))
	f.handle("GET "+lbs, f.lbZoneEndpoint(f.listLBs))
	f.handle("POST "+lbs, f.lbZoneEndpoint(f.createLB))
	f.handle("GET "+lbs+"/{load_balancer_id}", f.lbEndpoint(f.getLB))
	f.handle("PUT "+lbs+"/{load_balancer_id}", f.lbEndpoint(f.putLB))
	f.handle("PATCH "+lbs+"/{load_balancer_id}", f.lbEndpoint(f.patchLB))
	f.handle("DELETE "+lbs+"/{load_balancer_id}", f.lbEndpoint(f.deleteLB))
}

func lbErr(status, code int, format string, args ...any) *apiError {
	return newErr(status, code, fmt.Sprintf(format, args...))
}

func lbInvalid(format string, args ...any) *apiError {
	return lbErr(http.StatusBadRequest, codeLBInvalid, format, args...)
}

// entitled refuses every call of an account without Load Balancing.
func (f *Fake) entitled(a *account) error {
	if f.lbAccount(a).notEntitled {
		return lbErr(http.StatusForbidden, codeLBNotEntitled,
			"Load Balancing is not enabled for this account; it needs a Load Balancing subscription")
	}
	return nil
}

type lbAccountEP func(a *account, r *http.Request, body []byte) (reply, error)

func (f *Fake) lbAccountEndpoint(ep lbAccountEP) endpoint {
	return func(r *http.Request, body []byte) (reply, error) {
		a := f.account(r.PathValue("account_id"))
		if a == nil {
			return reply{}, notRoutable(r.URL.Path)
		}
		if err := f.entitled(a); err != nil {
			return reply{}, err
		}
		return ep(a, r, body)
	}
}

func (f *Fake) monitorEndpoint(ep func(*lbMonitor, []byte) (reply, error)) endpoint {
	return f.lbAccountEndpoint(func(a *account, r *http.Request, body []byte) (reply, error) {
		m := f.lbMonitor(a.id, r.PathValue("monitor_id"))
		if m == nil {
			return reply{}, lbErr(http.StatusNotFound, codeLBNotFound, "monitor not found")
		}
		return ep(m, body)
	})
}

func (f *Fake) poolEndpoint(ep func(*lbPool, []byte) (reply, error)) endpoint {
	return f.lbAccountEndpoint(func(a *account, r *http.Request, body []byte) (reply, error) {
		p := f.lbPool(a.id, r.PathValue("pool_id"))
		if p == nil {
			return reply{}, lbErr(http.StatusNotFound, codeLBNotFound, "pool not found")
		}
		return ep(p, body)
	})
}

func (f *Fake) lbZoneEndpoint(ep func(*zone, *http.Request, []byte) (reply, error)) endpoint {
	return func(r *http.Request, body []byte) (reply, error) {
		z := f.zone(r.PathValue("zone_id"))
		if z == nil {
			return reply{}, notRoutable(r.URL.Path)
		}
		if err := f.entitled(z.acct); err != nil {
			return reply{}, err
		}
		return ep(z, r, body)
	}
}

func (f *Fake) lbEndpoint(ep func(*loadBalancer, []byte) (reply, error)) endpoint {
	return f.lbZoneEndpoint(func(z *zone, r *http.Request, body []byte) (reply, error) {
		id := r.PathValue("load_balancer_id")
		for _, lb := range f.lbs {
			if lb.zone == z && lb.id == id {
				return ep(lb, body)
			}
		}
		return reply{}, lbErr(http.StatusNotFound, codeLBNotFound, "load balancer not found")
	})
}

// ---- monitors ----

type monitorInput struct {
	Type            *string              `json:"type"`
	Description     *string              `json:"description"`
	Method          *string              `json:"method"`
	Path            *string              `json:"path"`
	ExpectedCodes   *string              `json:"expected_codes"`
	ExpectedBody    *string              `json:"expected_body"`
	Header          *map[string][]string `json:"header"`
	Port            *int                 `json:"port"`
	Interval        *int                 `json:"interval"`
	Timeout         *int                 `json:"timeout"`
	Retries         *int                 `json:"retries"`
	ConsecutiveUp   *int                 `json:"consecutive_up"`
	ConsecutiveDown *int                 `json:"consecutive_down"`
	AllowInsecure   *bool                `json:"allow_insecure"`
	FollowRedirects *bool                `json:"follow_redirects"`
	ProbeZone       *string              `json:"probe_zone"`
}

// defaultMonitor is a monitor with the spec's defaults.
func defaultMonitor() MonitorSpec {
	return MonitorSpec{Type: "http", Interval: 60, Timeout: 5, Retries: 2, ConsecutiveUp: 1, ConsecutiveDown: 1}
}

// merge lays the given fields over m.
func (in *monitorInput) merge(m MonitorSpec) MonitorSpec {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	seti := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&m.Type, in.Type)
	set(&m.Description, in.Description)
	set(&m.Method, in.Method)
	set(&m.Path, in.Path)
	set(&m.ExpectedCodes, in.ExpectedCodes)
	set(&m.ExpectedBody, in.ExpectedBody)
	set(&m.ProbeZone, in.ProbeZone)
	if in.Header != nil {
		m.Header = cloneHeader(*in.Header)
	}
	seti(&m.Port, in.Port)
	seti(&m.Interval, in.Interval)
	seti(&m.Timeout, in.Timeout)
	seti(&m.Retries, in.Retries)
	seti(&m.ConsecutiveUp, in.ConsecutiveUp)
	seti(&m.ConsecutiveDown, in.ConsecutiveDown)
	if in.AllowInsecure != nil {
		m.AllowInsecure = *in.AllowInsecure
	}
	if in.FollowRedirects != nil {
		m.FollowRedirects = *in.FollowRedirects
	}
	return m
}

func cloneHeader(h map[string][]string) map[string][]string {
	if h == nil {
		return nil
	}
	out := make(map[string][]string, len(h))
	for k, v := range h {
		out[k] = slices.Clone(v)
	}
	return out
}

var (
	monitorTypes    = []string{"http", "https", "tcp", "udp_icmp", "icmp_ping", "smtp"}
	expectedCodesRE = regexp.MustCompile(`^[1-5]([0-9][0-9]|[0-9]x|xx)$`)
)

// check validates a whole monitor and fills the defaults that depend on
// its type.
func checkMonitor(m *MonitorSpec) error {
	var errs []string
	if !slices.Contains(monitorTypes, m.Type) {
		errs = append(errs, "type must be one of "+strings.Join(monitorTypes, ", "))
	}
	web := m.Type == "http" || m.Type == "https"
	if web {
		if m.ExpectedCodes == "" {
			errs = append(errs, "expected_codes is required for HTTP and HTTPS monitors")
		} else if !expectedCodesRE.MatchString(m.ExpectedCodes) {
			errs = append(errs, "expected_codes must be a status code or a range such as 2xx")
		}
		if m.Method == "" {
			m.Method = "GET"
		}
		if m.Method != "GET" && m.Method != "HEAD" {
			errs = append(errs, "method must be GET or HEAD for HTTP and HTTPS monitors")
		}
		if m.Path == "" {
			m.Path = "/"
		}
		if !strings.HasPrefix(m.Path, "/") {
			errs = append(errs, "path must start with /")
		}
	} else {
		if m.Method == "" && m.Type == "tcp" {
			m.Method = "connection_established"
		}
		if m.ExpectedCodes != "" || m.Path != "" || len(m.Header) > 0 {
			errs = append(errs, "expected_codes, path and header are only valid for HTTP and HTTPS monitors")
		}
		if (m.Type == "tcp" || m.Type == "smtp") && m.Port == 0 {
			errs = append(errs, "port is required for "+m.Type+" monitors")
		}
	}
	if m.Port < 0 || m.Port > 65535 {
		errs = append(errs, "port must be between 0 and 65535")
	}
	if m.Timeout < 1 || m.Retries < 0 || m.Retries > 5 || m.ConsecutiveUp < 0 || m.ConsecutiveDown < 0 {
		errs = append(errs, "timeout must be at least 1, retries between 0 and 5, consecutive_up and consecutive_down not negative")
	} else if m.Interval < 5 || m.Interval > 3600 || m.Interval < m.Timeout*(m.Retries+1) {
		errs = append(errs, "interval must be between 5 and 3600 seconds and at least timeout × (retries + 1)")
	}
	if len(errs) > 0 {
		return lbInvalid("monitor: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (f *Fake) listMonitors(a *account, _ *http.Request, _ []byte) (reply, error) {
	out := []monitorJSON{}
	for _, m := range f.lbMonitors {
		if m.acct == a {
			out = append(out, m.json())
		}
	}
	return reply{result: out, info: whole(len(out))}, nil
}

func (f *Fake) createMonitor(a *account, _ *http.Request, body []byte) (reply, error) {
	var in monitorInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	spec := in.merge(defaultMonitor())
	if err := checkMonitor(&spec); err != nil {
		return reply{}, err
	}
	m := &lbMonitor{acct: a, id: newID(), m: spec, created: now()}
	m.updated = m.created
	f.lbMonitors = append(f.lbMonitors, m)
	return reply{result: m.json()}, nil
}

func (f *Fake) getMonitor(m *lbMonitor, _ []byte) (reply, error) { return reply{result: m.json()}, nil }

// putMonitor replaces the monitor: fields not sent take their defaults.
func (f *Fake) putMonitor(m *lbMonitor, body []byte) (reply, error) {
	return f.writeMonitor(m, body, defaultMonitor())
}

// patchMonitor changes only the fields sent.
func (f *Fake) patchMonitor(m *lbMonitor, body []byte) (reply, error) {
	return f.writeMonitor(m, body, m.m)
}

func (f *Fake) writeMonitor(m *lbMonitor, body []byte, base MonitorSpec) (reply, error) {
	var in monitorInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	spec := in.merge(base)
	if err := checkMonitor(&spec); err != nil {
		return reply{}, err
	}
	m.m, m.updated = spec, now()
	return reply{result: m.json()}, nil
}

func (f *Fake) deleteMonitor(m *lbMonitor, _ []byte) (reply, error) {
	var users []string
	for _, p := range f.lbPools {
		if p.acct == m.acct && p.monitor == m.id {
			users = append(users, p.name)
		}
	}
	if len(users) > 0 {
		return reply{}, lbErr(http.StatusConflict, codeLBInUse,
			"monitor is referenced by pools (%s); remove it from them first", strings.Join(users, ", "))
	}
	f.lbMonitors = slices.DeleteFunc(f.lbMonitors, func(x *lbMonitor) bool { return x == m })
	return reply{result: idJSON{ID: m.id}}, nil
}

type idJSON struct {
	ID string `json:"id"`
}

type monitorJSON struct {
	ID              string              `json:"id"`
	Type            string              `json:"type"`
	Description     string              `json:"description"`
	Method          string              `json:"method,omitempty"`
	Path            string              `json:"path,omitempty"`
	ExpectedCodes   string              `json:"expected_codes"`
	ExpectedBody    string              `json:"expected_body"`
	Header          map[string][]string `json:"header,omitempty"`
	Port            *int                `json:"port"`
	Interval        int                 `json:"interval"`
	Timeout         int                 `json:"timeout"`
	Retries         int                 `json:"retries"`
	ConsecutiveUp   int                 `json:"consecutive_up"`
	ConsecutiveDown int                 `json:"consecutive_down"`
	AllowInsecure   bool                `json:"allow_insecure"`
	FollowRedirects bool                `json:"follow_redirects"`
	ProbeZone       string              `json:"probe_zone"`
	CreatedOn       time.Time           `json:"created_on"`
	ModifiedOn      time.Time           `json:"modified_on"`
}

func (m *lbMonitor) json() monitorJSON {
	s := m.m
	j := monitorJSON{ID: m.id, Type: s.Type, Description: s.Description, Method: s.Method, Path: s.Path,
		ExpectedCodes: s.ExpectedCodes, ExpectedBody: s.ExpectedBody, Header: cloneHeader(s.Header),
		Interval: s.Interval, Timeout: s.Timeout, Retries: s.Retries, ConsecutiveUp: s.ConsecutiveUp,
		ConsecutiveDown: s.ConsecutiveDown, AllowInsecure: s.AllowInsecure, FollowRedirects: s.FollowRedirects,
		ProbeZone: s.ProbeZone, CreatedOn: m.created, ModifiedOn: m.updated}
	if s.Port != 0 {
		p := s.Port
		j.Port = &p
	}
	return j
}

// ---- pools ----

type originInput struct {
	Name    *string   `json:"name"`
	Address *string   `json:"address"`
	Enabled *bool     `json:"enabled"`
	Weight  *float64  `json:"weight"`
	Port    *int      `json:"port"`
	Header  *struct { // only Host is supported; decodePool sees the others
		Host []string `json:"Host"`
	} `json:"header"`
}

type poolInput struct {
	Name           *string        `json:"name"`
	Description    *string        `json:"description"`
	Enabled        *bool          `json:"enabled"`
	MinimumOrigins *int           `json:"minimum_origins"`
	Monitor        *string        `json:"monitor"`
	Origins        *[]originInput `json:"origins"`
	// Headers are read a second time, loosely, to refuse any but Host.
	rawOrigins []struct {
		Header map[string]any `json:"header"`
	}
}

var poolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func decodePool(body []byte) (poolInput, error) {
	var in poolInput
	if err := decodeBody(body, &in); err != nil {
		return in, err
	}
	var raw struct {
		Origins []struct {
			Header map[string]any `json:"header"`
		} `json:"origins"`
	}
	if err := decodeBody(body, &raw); err != nil {
		return in, err
	}
	in.rawOrigins = raw.Origins
	return in, nil
}

// origins validates a pool's origins.
func (f *Fake) origins(a *account, in poolInput, old []lbOrigin) ([]lbOrigin, error) {
	var errs []string
	if len(*in.Origins) == 0 {
		errs = append(errs, "origins: a pool needs at least one origin")
	}
	if lim := f.lbAccount(a).limits.OriginsPerPool; lim > 0 && len(*in.Origins) > lim {
		return nil, lbErr(http.StatusBadRequest, codeLBQuota,
			"quota exceeded: a pool may have at most %d origins on this account (%d given)", lim, len(*in.Origins))
	}
	seen := map[string]bool{}
	out := make([]lbOrigin, 0, len(*in.Origins))
	t := now()
	for i, o := range *in.Origins {
		at := fmt.Sprintf("origins[%d]", i)
		var po PoolOrigin
		if o.Name == nil || strings.TrimSpace(*o.Name) == "" {
			errs = append(errs, at+".name is required")
		} else {
			po.Name = *o.Name
			if seen[po.Name] {
				errs = append(errs, fmt.Sprintf("%s.name %q is not unique in the pool", at, po.Name))
			}
			seen[po.Name] = true
		}
		if o.Address == nil || strings.TrimSpace(*o.Address) == "" {
			errs = append(errs, at+".address is required")
		} else {
			po.Address = *o.Address
		}
		po.Enabled = o.Enabled == nil || *o.Enabled
		po.Weight = 1
		if o.Weight != nil {
			w := *o.Weight
			if w < 0 || w > 1 || math.Abs(w*100-math.Round(w*100)) > 1e-6 {
				errs = append(errs, fmt.Sprintf("%s.weight must be between 0 and 1 in steps of 0.01 (got %v)", at, w))
			}
			po.Weight = w
		}
		if o.Port != nil {
			if *o.Port < 0 || *o.Port > 65535 {
				errs = append(errs, at+".port must be between 0 and 65535")
			}
			po.Port = *o.Port
		}
		if i < len(in.rawOrigins) {
			for k := range in.rawOrigins[i].Header {
				if k != "Host" {
					errs = append(errs, fmt.Sprintf("%s.header: only Host is supported (got %q)", at, k))
				}
			}
		}
		if o.Header != nil {
			switch len(o.Header.Host) {
			case 0:
			case 1:
				po.Host = o.Header.Host[0]
			default:
				errs = append(errs, at+".header.Host takes one value")
			}
		}
		lo := lbOrigin{PoolOrigin: po}
		if !po.Enabled {
			lo.disabledAt = t
			for _, prev := range old {
				if prev.Name == po.Name && !prev.Enabled {
					lo.disabledAt = prev.disabledAt
				}
			}
		}
		out = append(out, lo)
	}
	if len(errs) > 0 {
		return nil, lbInvalid("pool: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// writePool applies in to p (a new pool when p.id is ""), whole is true
// for POST and PUT, where name and origins are required and absent fields
// take their defaults.
func (f *Fake) writePool(p *lbPool, in poolInput, whole bool) error {
	var errs []string
	if whole {
		if in.Name == nil {
			errs = append(errs, "name is required")
		}
		if in.Origins == nil {
			errs = append(errs, "origins is required")
		}
		if len(errs) > 0 {
			return lbInvalid("pool: %s", strings.Join(errs, "; "))
		}
		p.desc, p.enabled, p.minimumOrigins, p.monitor = "", true, 1, ""
	}
	name := p.name
	if in.Name != nil {
		name = *in.Name
		if !poolNameRE.MatchString(name) {
			return lbInvalid("pool: name must be letters, digits, hyphens and underscores (got %q)", name)
		}
	}
	origins := p.origins
	if in.Origins != nil {
		var err error
		if origins, err = f.origins(p.acct, in, p.origins); err != nil {
			return err
		}
	}
	if in.Monitor != nil && *in.Monitor != "" && f.lbMonitor(p.acct.id, *in.Monitor) == nil {
		return lbInvalid("pool: monitor %s does not exist", *in.Monitor)
	}
	if in.MinimumOrigins != nil && *in.MinimumOrigins < 0 {
		return lbInvalid("pool: minimum_origins must not be negative")
	}
	p.name, p.origins = name, origins
	if in.Description != nil {
		p.desc = *in.Description
	}
	if in.Enabled != nil {
		if !*in.Enabled && p.enabled {
			p.disabledAt = now()
		}
		p.enabled = *in.Enabled
	}
	if in.MinimumOrigins != nil {
		p.minimumOrigins = *in.MinimumOrigins
	}
	if in.Monitor != nil {
		p.monitor = *in.Monitor
	}
	p.updated = now()
	return nil
}

func (f *Fake) listPools(a *account, r *http.Request, _ []byte) (reply, error) {
	mon := r.URL.Query().Get("monitor")
	out := []poolJSON{}
	for _, p := range f.lbPools {
		if p.acct == a && (mon == "" || p.monitor == mon) {
			out = append(out, p.json())
		}
	}
	return reply{result: out, info: whole(len(out))}, nil
}

func (f *Fake) createPool(a *account, _ *http.Request, body []byte) (reply, error) {
	in, err := decodePool(body)
	if err != nil {
		return reply{}, err
	}
	n := 0
	for _, p := range f.lbPools {
		if p.acct == a {
			n++
		}
	}
	if lim := f.lbAccount(a).limits.Pools; lim > 0 && n >= lim {
		return reply{}, lbErr(http.StatusBadRequest, codeLBQuota,
			"quota exceeded: this account may have at most %d pools", lim)
	}
	p := &lbPool{acct: a, id: newID(), created: now()}
	if err := f.writePool(p, in, true); err != nil {
		return reply{}, err
	}
	f.lbPools = append(f.lbPools, p)
	return reply{result: p.json()}, nil
}

func (f *Fake) getPool(p *lbPool, _ []byte) (reply, error) { return reply{result: p.json()}, nil }

// putPool and patchPool work on a copy, so a refused change leaves the
// pool as it was.
func (f *Fake) putPool(p *lbPool, body []byte) (reply, error)   { return f.changePool(p, body, true) }
func (f *Fake) patchPool(p *lbPool, body []byte) (reply, error) { return f.changePool(p, body, false) }

func (f *Fake) changePool(p *lbPool, body []byte, whole bool) (reply, error) {
	in, err := decodePool(body)
	if err != nil {
		return reply{}, err
	}
	next := *p
	if err := f.writePool(&next, in, whole); err != nil {
		return reply{}, err
	}
	*p = next
	return reply{result: p.json()}, nil
}

func (f *Fake) deletePool(p *lbPool, _ []byte) (reply, error) {
	var users []string
	for _, lb := range f.lbs {
		if lb.zone.acct == p.acct && (lb.lb.FallbackPool == p.id || slices.Contains(lb.lb.DefaultPools, p.id)) {
			users = append(users, lb.lb.Name)
		}
	}
	if len(users) > 0 {
		return reply{}, lbErr(http.StatusConflict, codeLBInUse,
			"pool is referenced by load balancers (%s); remove it from them first", strings.Join(users, ", "))
	}
	f.lbPools = slices.DeleteFunc(f.lbPools, func(x *lbPool) bool { return x == p })
	return reply{result: idJSON{ID: p.id}}, nil
}

type originHealthJSON struct {
	Healthy       bool    `json:"healthy"`
	RTT           string  `json:"rtt"`
	FailureReason string  `json:"failure_reason"`
	ResponseCode  float64 `json:"response_code"`
}

type popHealthJSON struct {
	Healthy bool                          `json:"healthy"`
	Origins []map[string]originHealthJSON `json:"origins"`
}

// poolHealth answers in the shape of the spec's example (health by data
// centre, then by origin address), which is what the API returns; the
// spec's schema flattens both maps. Disabled origins are not checked and
// not listed; the pool is healthy while at least minimum_origins of its
// origins are.
func (f *Fake) poolHealth(p *lbPool, _ []byte) (reply, error) {
	pop := popHealthJSON{Origins: []map[string]originHealthJSON{}}
	healthy := 0
	for _, o := range p.origins {
		if !o.Enabled {
			continue
		}
		h := originHealthJSON{Healthy: true, RTT: "12.1ms", FailureReason: "No failures", ResponseCode: 200}
		if f.lbUnhealthy[p.id+"/"+o.Name] {
			h = originHealthJSON{Healthy: false, RTT: "0ms", FailureReason: "HTTP timeout occurred", ResponseCode: 0}
		} else {
			healthy++
		}
		pop.Origins = append(pop.Origins, map[string]originHealthJSON{o.Address: h})
	}
	pop.Healthy = p.enabled && healthy >= p.minimumOrigins
	return reply{result: struct {
		PoolID    string                   `json:"pool_id"`
		PopHealth map[string]popHealthJSON `json:"pop_health"`
	}{p.id, map[string]popHealthJSON{HealthPoP: pop}}}, nil
}

type originJSON struct {
	Name       string     `json:"name"`
	Address    string     `json:"address"`
	Enabled    bool       `json:"enabled"`
	Weight     float64    `json:"weight"`
	Port       int        `json:"port"`
	Header     any        `json:"header"`
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
}

type poolJSON struct {
	ID             string       `json:"id"`
	Name           string       `json:"name"`
	Description    string       `json:"description"`
	Enabled        bool         `json:"enabled"`
	MinimumOrigins int          `json:"minimum_origins"`
	Monitor        *string      `json:"monitor"`
	Origins        []originJSON `json:"origins"`
	CheckRegions   []string     `json:"check_regions"`
	CreatedOn      time.Time    `json:"created_on"`
	ModifiedOn     time.Time    `json:"modified_on"`
	DisabledAt     *time.Time   `json:"disabled_at,omitempty"`
}

func (p *lbPool) json() poolJSON {
	j := poolJSON{ID: p.id, Name: p.name, Description: p.desc, Enabled: p.enabled, MinimumOrigins: p.minimumOrigins,
		Origins: make([]originJSON, len(p.origins)), CreatedOn: p.created, ModifiedOn: p.updated}
	if p.monitor != "" {
		m := p.monitor
		j.Monitor = &m
	}
	if !p.enabled {
		d := p.disabledAt
		j.DisabledAt = &d
	}
	for i, o := range p.origins {
		oj := originJSON{Name: o.Name, Address: o.Address, Enabled: o.Enabled, Weight: o.Weight, Port: o.Port,
			Header: struct{}{}}
		if o.Host != "" {
			oj.Header = map[string][]string{"Host": {o.Host}}
		}
		if !o.Enabled {
			d := o.disabledAt
			oj.DisabledAt = &d
		}
		j.Origins[i] = oj
	}
	return j
}

// ---- load balancers ----

type lbInput struct {
	Name               *string   `json:"name"`
	Description        *string   `json:"description"`
	Enabled            *bool     `json:"enabled"`
	Proxied            *bool     `json:"proxied"`
	TTL                *float64  `json:"ttl"`
	DefaultPools       *[]string `json:"default_pools"`
	FallbackPool       *string   `json:"fallback_pool"`
	SteeringPolicy     *string   `json:"steering_policy"`
	SessionAffinity    *string   `json:"session_affinity"`
	SessionAffinityTTL *float64  `json:"session_affinity_ttl"`
}

var (
	steeringPolicies  = []string{"off", "geo", "random", "dynamic_latency", "proximity", "least_outstanding_requests", "least_connections", ""}
	sessionAffinities = []string{"none", "cookie", "ip_cookie", "header"}
	hostLabelRE       = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?|\*)$`)
)

// lbName is a load balancer's name as stored: lower case, no trailing dot.
func lbName(name string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
}

// inZone says whether name is the zone's apex or a name under it.
func inZone(name, zoneName string) bool {
	return name == zoneName || strings.HasSuffix(name, "."+zoneName)
}

// writeLB applies in to lb (new when lb.id is ""); whole is true for POST
// and PUT.
func (f *Fake) writeLB(lb *loadBalancer, in lbInput, whole bool) error {
	z := lb.zone
	var errs []string
	if whole {
		for field, missing := range map[string]bool{"name": in.Name == nil, "default_pools": in.DefaultPools == nil,
			"fallback_pool": in.FallbackPool == nil} {
			if missing {
				errs = append(errs, field+" is required")
			}
		}
		if len(errs) > 0 {
			slices.Sort(errs)
			return lbInvalid("load balancer: %s", strings.Join(errs, "; "))
		}
		lb.lb = LoadBalancer{Enabled: true, SessionAffinity: "none"}
		lb.sessionAffinityTTL = nil
	}
	next := lb.lb
	next.DefaultPools = slices.Clone(next.DefaultPools)
	if in.Name != nil {
		next.Name = lbName(*in.Name)
		labels := strings.Split(next.Name, ".")
		ok := inZone(next.Name, z.name)
		for i, l := range labels {
			ok = ok && hostLabelRE.MatchString(l) && (l != "*" || i == 0)
		}
		if !ok {
			errs = append(errs, fmt.Sprintf("name %q is not a hostname in zone %s", *in.Name, z.name))
		}
		for _, other := range f.lbs {
			if other.zone == z && other.id != lb.id && other.lb.Name == next.Name { // lb may be a copy
				return lbErr(http.StatusConflict, codeLBConflict,
					"a load balancer named %s already exists in this zone", next.Name)
			}
		}
	}
	pool := func(id string) bool { return f.lbPool(z.acct.id, id) != nil }
	if in.DefaultPools != nil {
		if len(*in.DefaultPools) == 0 {
			errs = append(errs, "default_pools needs at least one pool")
		}
		for _, id := range *in.DefaultPools {
			if !pool(id) {
				errs = append(errs, "default_pools: pool "+id+" does not exist")
			}
		}
		next.DefaultPools = slices.Clone(*in.DefaultPools)
	}
	if in.FallbackPool != nil {
		if !pool(*in.FallbackPool) {
			errs = append(errs, "fallback_pool: pool "+*in.FallbackPool+" does not exist")
		}
		next.FallbackPool = *in.FallbackPool
	}
	if in.SteeringPolicy != nil {
		if !slices.Contains(steeringPolicies, *in.SteeringPolicy) {
			errs = append(errs, fmt.Sprintf("steering_policy %q is not one of %q", *in.SteeringPolicy, steeringPolicies))
		}
		next.SteeringPolicy = *in.SteeringPolicy
	}
	if in.SessionAffinity != nil {
		if !slices.Contains(sessionAffinities, *in.SessionAffinity) {
			errs = append(errs, fmt.Sprintf("session_affinity %q is not one of %q", *in.SessionAffinity, sessionAffinities))
		}
		next.SessionAffinity = *in.SessionAffinity
	}
	ttl := lb.sessionAffinityTTL
	if in.SessionAffinityTTL != nil {
		v := *in.SessionAffinityTTL
		ttl = &v
	}
	if ttl != nil {
		lo, hi := 1800.0, 604800.0 // cookie and ip_cookie
		if next.SessionAffinity == "header" {
			lo, hi = 30, 3600
		}
		if next.SessionAffinity != "none" && (*ttl < lo || *ttl > hi) {
			errs = append(errs, fmt.Sprintf("session_affinity_ttl must be between %v and %v seconds for %s", lo, hi, next.SessionAffinity))
		}
	}
	if in.TTL != nil {
		if *in.TTL < 0 {
			errs = append(errs, "ttl must not be negative")
		}
		next.TTL = *in.TTL
	}
	if in.Description != nil {
		next.Description = *in.Description
	}
	if in.Enabled != nil {
		next.Enabled = *in.Enabled
	}
	if in.Proxied != nil {
		next.Proxied = *in.Proxied
	}
	if len(errs) > 0 {
		return lbInvalid("load balancer: %s", strings.Join(errs, "; "))
	}
	lb.lb, lb.sessionAffinityTTL, lb.updated = next, ttl, now()
	return nil
}

func (f *Fake) listLBs(z *zone, _ *http.Request, _ []byte) (reply, error) {
	out := []lbJSON{}
	for _, lb := range f.lbs {
		if lb.zone == z {
			out = append(out, lb.json())
		}
	}
	return reply{result: out, info: whole(len(out))}, nil
}

func (f *Fake) createLB(z *zone, _ *http.Request, body []byte) (reply, error) {
	var in lbInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	n := 0
	for _, lb := range f.lbs {
		if lb.zone.acct == z.acct {
			n++
		}
	}
	if lim := f.lbAccount(z.acct).limits.LoadBalancers; lim > 0 && n >= lim {
		return reply{}, lbErr(http.StatusBadRequest, codeLBQuota,
			"quota exceeded: this account may have at most %d load balancers", lim)
	}
	lb := &loadBalancer{zone: z, id: newID(), created: now()}
	if err := f.writeLB(lb, in, true); err != nil {
		return reply{}, err
	}
	f.lbs = append(f.lbs, lb)
	return reply{result: lb.json()}, nil
}

func (f *Fake) getLB(lb *loadBalancer, _ []byte) (reply, error) { return reply{result: lb.json()}, nil }

func (f *Fake) putLB(lb *loadBalancer, body []byte) (reply, error) { return f.changeLB(lb, body, true) }
func (f *Fake) patchLB(lb *loadBalancer, body []byte) (reply, error) {
	return f.changeLB(lb, body, false)
}

func (f *Fake) changeLB(lb *loadBalancer, body []byte, whole bool) (reply, error) {
	var in lbInput
	if err := decodeBody(body, &in); err != nil {
		return reply{}, err
	}
	next := *lb
	if err := f.writeLB(&next, in, whole); err != nil {
		return reply{}, err
	}
	*lb = next
	return reply{result: lb.json()}, nil
}

func (f *Fake) deleteLB(lb *loadBalancer, _ []byte) (reply, error) {
	f.lbs = slices.DeleteFunc(f.lbs, func(x *loadBalancer) bool { return x == lb })
	return reply{result: idJSON{ID: lb.id}}, nil
}

type lbJSON struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	ZoneName           string              `json:"zone_name"`
	Description        string              `json:"description"`
	Enabled            bool                `json:"enabled"`
	Proxied            bool                `json:"proxied"`
	TTL                float64             `json:"ttl,omitempty"`
	DefaultPools       []string            `json:"default_pools"`
	FallbackPool       string              `json:"fallback_pool"`
	SteeringPolicy     string              `json:"steering_policy"`
	SessionAffinity    string              `json:"session_affinity"`
	SessionAffinityTTL *float64            `json:"session_affinity_ttl,omitempty"`
	RegionPools        map[string][]string `json:"region_pools"`
	CountryPools       map[string][]string `json:"country_pools"`
	PopPools           map[string][]string `json:"pop_pools"`
	CreatedOn          time.Time           `json:"created_on"`
	ModifiedOn         time.Time           `json:"modified_on"`
}

func (lb *loadBalancer) json() lbJSON {
	s := lb.lb
	return lbJSON{ID: lb.id, Name: s.Name, ZoneName: lb.zone.name, Description: s.Description, Enabled: s.Enabled,
		Proxied: s.Proxied, TTL: s.TTL, DefaultPools: slices.Clone(s.DefaultPools), FallbackPool: s.FallbackPool,
		SteeringPolicy: s.SteeringPolicy, SessionAffinity: s.SessionAffinity, SessionAffinityTTL: lb.sessionAffinityTTL,
		RegionPools: map[string][]string{}, CountryPools: map[string][]string{}, PopPools: map[string][]string{},
		CreatedOn: lb.created, ModifiedOn: lb.updated}
}
