// This file implements the Syncer: the loop that keeps each tunnel in
// step.

package cloudflare

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Desired is what one GatewayClass wants from Cloudflare. The controller
// builds it after each translation.
type Desired struct {
	Class string
	// Token is the API token from the credentials Secret.
	Token string
	// Problem is a local configuration error (no credentials Secret, say):
	// reported, and nothing is asked of Cloudflare.
	Problem string
	// Hold keeps Cloudflare as it is: the class is not accepted, so its
	// hostnames are unknown, and an empty list must not read as "remove
	// everything". The credentials and tunnel are still checked, so a
	// refusal can clear.
	Hold      bool
	Spec      v1alpha1.GatewayClassConfigSpec
	Hostnames []translate.Hostname // of this class
	// Since is when the wish began: a Gateway's creation, for its own
	// tunnel. Of two Gateways naming one tunnel, the elder is synced
	// first after a restart, and so keeps it (tunnelHolder).
	Since time.Time
	// AccessApps are the Cloudflare Access applications kept with the
	// tunnel (accessapps.go), their hostnames among Hostnames.
	AccessApps []translate.AccessApp
	// LoadBalancers are the load balanced hostnames this tunnel serves
	// (translate.LoadBalancing), their hostnames among Hostnames.
	LoadBalancers []translate.LoadBalancing
	// LivePlanes are the DNS owners (PlaneOwner) of the class's Gateways
	// that exist, so the class's DNS sync removes the records of a plane
	// whose Gateway was deleted; nil removes none.
	LivePlanes []string
	// Rotation is what is asked of the tunnel credential's rotation, and
	// what its token Secret records (rotation.go).
	Rotation Rotation

	// Departing marks the cleanup after a Gateway's own tunnel
	// (departure.go): Hostnames is empty, nothing is created and no token
	// saved; the report says Departed once it is done.
	Departing bool
	// DeleteTunnel, departing, deletes the tunnel if tunnelgate created it
	// for this Gateway.
	DeleteTunnel bool
	// CreatedTunnel is the tunnel the Gateway's status records as created
	// for it (translate.TunnelRecord), which after a restart no memory of
	// this Syncer holds.
	CreatedTunnel string
	// CreateIntent is the tunnel the Gateway's status says is to be
	// created for it (translate.TunnelIntent). A Gateway's own tunnel is
	// created only once its status says so, and a tunnel of that name
	// made since is known to be tunnelgate's (by whichever replica led
	// then).
	CreateIntent translate.TunnelIntent
}

// SaveTokenFunc stores a tunnel's token in the Secret ref names, with
// what it records of the credential's last rotation (none when stamp.At
// is zero).
type SaveTokenFunc func(ctx context.Context, ref v1alpha1.SecretKeyRef, token string, stamp Stamp) error

// Options configure a Syncer.
type Options struct {
	// BaseURL of Cloudflare's API; default the real one. Tests point it at
	// a fake.
	BaseURL    string
	HTTPClient *http.Client
	// SaveToken writes tunnel tokens to Secrets (tunnel.tokenSecretRef).
	SaveToken SaveTokenFunc
	// Roll rolls the Deployments that mount a token Secret after a
	// rotation wrote it; nil rolls none.
	Roll RollFunc
	// OnRotation is told of each rotation's steps, for events; called
	// from Run's goroutine, without locks held.
	OnRotation func(RotationEvent)
	// OnChange is called, without locks held, when a TunnelState changed,
	// so the controller translates again.
	OnChange func()
	// DriftEvery is how often an applied ingress document is read back to
	// catch a change made elsewhere (default 5 minutes): the steady-state
	// cost, one GET per tunnel.
	DriftEvery time.Duration
	// DNSEvery is how often every allowed zone is listed again to repair
	// records changed elsewhere (default 30 minutes).
	DNSEvery time.Duration
	// DNSRecheck is how soon a class whose hostname another owner holds
	// looks again (default 15 s): when a Gateway moves between the
	// class's tunnel and one of its own, the old owner deletes its records
	// a moment later, and the new one takes them at its next look.
	DNSRecheck time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failure (defaults
	// 1 s and 5 minutes); a longer Retry-After wins.
	MinBackoff, MaxBackoff time.Duration
	// TracerProvider traces each class's sync and every API call in it;
	// nil traces nothing.
	TracerProvider trace.TracerProvider
	// Meter gets the API call metrics; nil records none.
	Meter metric.Meter
	Log   *slog.Logger
	Now   func() time.Time
}

// Syncer keeps each class's tunnel and DNS records in step with what the
// controller wants, one class after the other, in its own goroutine (Run),
// so the controller's sync never waits on Cloudflare.
type Syncer struct {
	opts  Options
	Stats Stats
	obs   *observer

	mu      sync.Mutex
	classes map[string]*classSync
	wake    chan struct{}
}

// classSync is the Syncer's memory of one class. The fields up to state
// are guarded by Syncer.mu; learned belongs to Run's goroutine.
type classSync struct {
	desired Desired
	wantKey string    // hash of desired
	doneKey string    // wantKey of the last complete sync
	doneAt  time.Time // when that sync ended

	failures  int
	next      time.Time // no attempt before: the back-off
	notBefore time.Time // nor before this: the server's Retry-After

	state *translate.TunnelState
	// cause is the span of the controller sync that made the current
	// wish, linked from the class syncs that carry it out.
	cause trace.SpanContext

	l   learned
	rot rotationMemory // Run's goroutine's, like l
}

// learned is what Cloudflare told about a class, reset when the token
// changes.
type learned struct {
	api        *api
	tokenKey   string
	account    string
	tunnelID   string
	tunnelFor  string // the tunnel spec tunnelID was resolved for
	savedToken string // hash of ref and token last saved
	zones      []zone
	dnsZones   map[string]bool // zones that held our hostnames

	// created is the tunnel this Syncer created for the wish, and the
	// wish's Since then: a Gateway made anew under the same name is
	// another wish.
	created      string
	createdSince time.Time

	applied   string // hash of the ingress document last applied
	lastDrift time.Time
	dnsKey    string // hash of the DNS inputs last applied
	lastDNS   time.Time
	// dnsContested: a hostname was another owner's at the last pass, which
	// it may give up at any time (a Gateway moving between the class's
	// tunnel and one of its own): looked at again after dnsRecheck.
	dnsContested bool
	livePlanes   []string // DNSOptions.LivePlanes of the last DNS pass

	accessKey  string // hash of the tunnel and the AccessApps last applied
	lastAccess time.Time
	appTag     string // the application tag seen or made in the account

	lbKey  string // hash of the tunnel and the LoadBalancers last applied
	lastLB time.Time
	// lbSwept: the account's pools were looked at once for origins of
	// ours to take out (after a restart, the memory below is empty).
	lbSwept bool
	// lbJoined are the LoadBalancings whose pools the last pass joined,
	// by pool: when one is no longer wanted, our origin leaves it.
	lbJoined map[string]translate.LoadBalancing
	lbTunnel string // the tunnel whose origins lbJoined are
	// lbHosts: whether a load balanced hostname has a load balancer,
	// which its DNS then belongs to.
	lbHosts map[string]bool
}

// New returns a Syncer; Run starts it.
func New(opts Options) *Syncer {
	if opts.DriftEvery == 0 {
		opts.DriftEvery = 5 * time.Minute
	}
	if opts.DNSEvery == 0 {
		opts.DNSEvery = 30 * time.Minute
	}
	if opts.DNSRecheck == 0 {
		opts.DNSRecheck = 15 * time.Second
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Syncer{opts: opts, classes: map[string]*classSync{}, wake: make(chan struct{}, 1),
		obs: newObserver(opts.TracerProvider, opts.Meter, opts.Log)}
}

// Update replaces what every class wants. Classes left out are forgotten
// (Cloudflare keeps what they had: a class that disappears is not a
// request to delete a tunnel's routes). A new class reports Pending at
// once, so its Gateways do not look programmed before the tunnel is.
func (s *Syncer) Update(desired []Desired) { s.UpdateContext(context.Background(), desired) }

// UpdateContext is Update from within a traced controller sync: the class
// syncs that carry out a changed wish link to ctx's span.
func (s *Syncer) UpdateContext(ctx context.Context, desired []Desired) {
	cause := trace.SpanContextFromContext(ctx)
	changed := false
	s.mu.Lock()
	seen := map[string]bool{}
	for _, d := range desired {
		seen[d.Class] = true
		c := s.classes[d.Class]
		if c == nil {
			c = &classSync{state: &translate.TunnelState{Pending: "waiting for the first sync with Cloudflare"}}
			s.classes[d.Class] = c
			changed = true
		}
		c.desired = d
		if k := desiredKey(d); k != c.wantKey {
			// A new wish is tried at once, unless Cloudflare asked us to
			// wait: a burst of changes must not defeat a rate limit.
			c.wantKey = k
			c.next = c.notBefore
			c.cause = cause
		}
	}
	for name := range s.classes {
		if !seen[name] {
			delete(s.classes, name)
			changed = true
		}
	}
	s.mu.Unlock()
	s.poke()
	if changed && s.opts.OnChange != nil {
		s.opts.OnChange()
	}
}

// States are the classes' last reports, by class. translate's Cache
// compares them by value (TunnelState.Equal).
func (s *Syncer) States() map[string]*translate.TunnelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*translate.TunnelState, len(s.classes))
	for name, c := range s.classes {
		out[name] = c.state
	}
	return out
}

func (s *Syncer) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run syncs the classes that need it until ctx ends: a changed wish at
// once, a failure after its back-off, an applied document every
// DriftEvery, the zones every DNSEvery.
func (s *Syncer) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := s.runDue(ctx)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// runDue syncs every class that is due and returns how long until the
// next one is.
func (s *Syncer) runDue(ctx context.Context) time.Duration {
	s.mu.Lock()
	names := s.runOrder()
	s.mu.Unlock()
	wait := time.Hour
	for _, name := range names {
		if ctx.Err() != nil {
			return wait
		}
		s.mu.Lock()
		c := s.classes[name]
		if c == nil {
			s.mu.Unlock()
			continue
		}
		d, key, cause := c.desired, c.wantKey, c.cause
		now := s.opts.Now()
		due := s.dueAt(c, key)
		s.mu.Unlock()
		if due.After(now) {
			wait = min(wait, due.Sub(now))
			continue
		}
		sctx, span := s.startClassSpan(ctx, name, cause)
		st, err := s.syncWish(sctx, c, d)
		s.mu.Lock()
		o := s.finish(name, c, key, st, err)
		s.mu.Unlock()
		endClassSpan(span, st, o.changed, err)
		if o.changed && s.opts.OnChange != nil {
			s.opts.OnChange()
		}
		wait = min(wait, max(o.at.Sub(s.opts.Now()), 0))
	}
	return max(wait, 10*time.Millisecond)
}

// runOrder is the order wishes are synced in: classes, then Gateways'
// own tunnels, oldest Gateway first, so that after a restart a tunnel two
// wishes name goes back to the one that held it (tunnelHolder). Called
// with s.mu held.
func (s *Syncer) runOrder() []string {
	names := slices.Collect(maps.Keys(s.classes))
	slices.SortFunc(names, func(a, b string) int {
		da, db := s.classes[a].desired, s.classes[b].desired
		return cmp.Or(cmpBool(isPlane(a), isPlane(b)), da.Since.Compare(db.Since), strings.Compare(a, b))
	})
	return names
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// dueAt is when c next needs a sync. Called with s.mu held.
func (s *Syncer) dueAt(c *classSync, key string) time.Time {
	if !c.next.IsZero() {
		return c.next // a back-off runs its course, whatever else is due
	}
	if key != c.doneKey {
		return time.Time{}
	}
	// A class whose document was never applied (a problem only the user
	// can fix, or held) has no drift check to wait for: it is looked at
	// again DriftEvery after its last sync, not at once and forever.
	last := c.l.lastDrift
	if last.IsZero() {
		last = c.doneAt
	}
	due := last.Add(s.opts.DriftEvery)
	// A rotation due before the last sync ended, which did not rotate (a
	// problem, a class held), waits for the next drift check like the
	// rest: counted, it would make the class due at once, forever.
	if next := s.rotationDueAt(c); !next.IsZero() && next.After(c.doneAt) {
		due = minTime(due, next)
	}
	if c.l.dnsKey != "" {
		due = minTime(due, c.l.lastDNS.Add(s.dnsInterval(c)))
	}
	return due
}

// outcome is what finish decided: whether the report changed, and when the
// class is next due.
type outcome struct {
	changed bool
	at      time.Time
}

// finish records a sync's outcome: the back-off, and the report, replaced
// when it changed. Called with s.mu held.
func (s *Syncer) finish(name string, c *classSync, key string, st *translate.TunnelState, err error) outcome {
	now := s.opts.Now()
	if err != nil {
		c.failures++
		wait := s.opts.MinBackoff << min(c.failures-1, 20)
		if wait > s.opts.MaxBackoff || wait <= 0 {
			wait = s.opts.MaxBackoff
		}
		c.notBefore = time.Time{}
		var ae *apiError
		if errors.As(err, &ae) && ae.retryAfter > 0 {
			c.notBefore = now.Add(ae.retryAfter)
			wait = max(wait, ae.retryAfter)
		}
		c.next = now.Add(wait)
		s.opts.Log.Warn("Cloudflare sync failed; retrying", "class", name, "in", wait.Round(time.Millisecond), "err", err)
	} else {
		c.failures, c.next, c.notBefore = 0, time.Time{}, time.Time{}
		c.doneKey, c.doneAt = key, now
	}
	o := outcome{at: s.dueAt(c, c.wantKey)}
	if st != nil && !reflect.DeepEqual(st, c.state) && s.classes[name] == c {
		c.state = st
		o.changed = true
	}
	return o
}

// syncWish does one wish's work, a class's or a Gateway's own tunnel's,
// or the cleanup after one (departure.go).
func (s *Syncer) syncWish(ctx context.Context, c *classSync, d Desired) (*translate.TunnelState, error) {
	if d.Problem != "" {
		return &translate.TunnelState{Problem: d.Problem}, nil
	}
	if d.Departing {
		return s.syncDeparture(ctx, c, d)
	}
	return s.syncClass(ctx, c, d)
}

// useToken starts c's memory afresh when the API token changed: what the
// old one showed may not hold.
func (s *Syncer) useToken(c *classSync, d Desired) {
	if tk := hash(d.Token); tk != c.l.tokenKey {
		c.l = learned{tokenKey: tk, api: newAPI(s.opts.BaseURL, d.Token, s.opts.HTTPClient, &s.Stats, s.obs)}
	}
}

// failure is the report of a failed call: a Problem when Cloudflare
// refused the token, else st, pending with the error.
func failure(st *translate.TunnelState, err error) (*translate.TunnelState, error) {
	var ae *apiError
	if errors.As(err, &ae) && ae.refused() {
		return &translate.TunnelState{Problem: "Cloudflare refused the API token: " + ae.msg +
			"; it needs Account: Cloudflare Tunnel: Edit, and Zone: DNS: Edit for DNS"}, err
	}
	st.Pending = "not applied: " + err.Error()
	return st, err
}

// syncClass does one class's work, or a Gateway's own tunnel's, and
// returns its report. An error means "try again later"; the report then
// says what is known so far.
func (s *Syncer) syncClass(ctx context.Context, c *classSync, d Desired) (*translate.TunnelState, error) {
	s.mu.Lock()
	prev := c.state
	s.mu.Unlock()
	if d.Spec.Tunnel == nil || d.Spec.Tunnel.ID == "" && d.Spec.Tunnel.Name == "" {
		return &translate.TunnelState{Problem: "the GatewayClassConfig names no tunnel (tunnel.id or tunnel.name)"}, nil
	}
	s.useToken(c, d)
	st := &translate.TunnelState{ID: c.l.tunnelID, Pending: prev.Pending, DNS: prev.DNS, AccessApps: prev.AccessApps,
		LoadBalancers: prev.LoadBalancers}

	if err := s.resolveAccount(ctx, c, d); err != nil {
		if p, ok := err.(problem); ok {
			return &translate.TunnelState{Problem: string(p)}, nil
		}
		return failure(st, err)
	}
	if err := s.resolveTunnel(ctx, c, d); err != nil {
		if p, ok := err.(problem); ok {
			return &translate.TunnelState{Problem: string(p)}, nil
		}
		if l, ok := err.(limit); ok {
			return &translate.TunnelState{Problem: string(l), NoResources: true}, nil
		}
		if w, ok := err.(awaitingIntent); ok {
			return &translate.TunnelState{Pending: string(w), AwaitsIntent: true}, nil
		}
		return failure(st, err)
	}
	if holder := s.tunnelHolder(c, d); holder != "" {
		return s.refuseHeldTunnel(ctx, c, d, holder)
	}
	st.ID = c.l.tunnelID
	st.Created = s.createdFor(c, d, st.ID)
	st.Rotation = s.rotationState(c, d)
	if err := s.saveToken(ctx, c, d); err != nil {
		return failure(st, err)
	}
	if d.Hold {
		st.Problem = ""
		return st, nil
	}
	err := s.rotate(ctx, c, d)
	st.Rotation = s.rotationState(c, d)
	if err != nil {
		return failure(st, err)
	}

	doc, refused := buildDocument(d.Hostnames, d.Spec.Origin)
	docKey := hashJSON(doc)
	now := s.opts.Now()
	if docKey != c.l.applied {
		for _, msg := range refused {
			s.opts.Log.Error("tunnel ingress rule refused", "class", d.Class, "problem", msg)
		}
	}
	if docKey != c.l.applied || now.Sub(c.l.lastDrift) >= s.opts.DriftEvery {
		remote, err := c.l.api.getConfig(ctx, c.l.account, c.l.tunnelID)
		if err != nil {
			return failure(st, err)
		}
		if !SameDocument(remote, doc) {
			if err := c.l.api.putConfig(ctx, c.l.account, c.l.tunnelID, doc); err != nil {
				return failure(st, err)
			}
			s.opts.Log.Info("tunnel ingress document written", "class", d.Class, "tunnel", c.l.tunnelID, "rules", len(doc.Ingress))
		}
		c.l.applied, c.l.lastDrift = docKey, now
	}
	st.Pending = ""

	// Load balancers before DNS: a hostname's CNAME gives way to its load
	// balancer only once that exists.
	lbs, lbErr := s.syncLoadBalancers(ctx, c, d, prev.LoadBalancers)
	st.LoadBalancers = lbs
	st.DNS = nil
	if d.Spec.DNS != nil && d.Spec.DNS.Enabled {
		dns, err := s.syncDNS(ctx, c, d, prev.DNS)
		st.DNS = dns
		if err != nil {
			return st, errors.Join(lbErr, err)
		}
	}
	apps, err := s.syncAccessApps(ctx, c, d, prev.AccessApps)
	st.AccessApps = apps
	return st, errors.Join(lbErr, err)
}

// One tunnel serves one wish: two would write their documents over each
// other's, and a Gateway's plane would be handed the token of a tunnel
// another class or Gateway serves, and with it that tunnel's traffic. A
// GatewayConfig may name any tunnel of its class's account (by name or
// id), so a tunnel that another wish of this controller already holds is
// refused. A class's wish takes the tunnel from a Gateway's (classes are
// the cluster admin's, GatewayConfigs a tenant's); otherwise the wish that
// held it first keeps it, and after a restart classes are synced first,
// then Gateways oldest first (runOrder).

// tunnelHolder names the other wish that holds the tunnel c resolved to, or
// "". Called from Run's goroutine, which owns every classSync's learned.
func (s *Syncer) tunnelHolder(c *classSync, d Desired) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, o := range s.classes {
		if o == c || o.l.tunnelID != c.l.tunnelID || o.l.account != c.l.account {
			continue
		}
		if isPlane(d.Class) || !isPlane(name) {
			return name // held first, or by a class
		}
		// A class takes the tunnel from a Gateway: that one is refused at
		// its next sync, which comes at once.
		o.doneKey, o.next = "", time.Time{}
		s.poke()
	}
	return ""
}

// refuseHeldTunnel reports a tunnel held by another wish, forgets it, and
// empties the token Secret this wish had been given, if any, so its
// cloudflared stops serving a tunnel that is not its own.
func (s *Syncer) refuseHeldTunnel(ctx context.Context, c *classSync, d Desired, holder string) (*translate.TunnelState, error) {
	id := c.l.tunnelID
	c.l.tunnelID, c.l.tunnelFor, c.l.applied, c.l.dnsKey = "", "", "", ""
	what := "GatewayClass " + holder
	if isPlane(holder) {
		what = "Gateway " + strings.SplitN(holder, "/", 2)[1] + " (its own tunnel)"
	}
	st := &translate.TunnelState{Problem: fmt.Sprintf("tunnel %s is already %s's: a tunnel serves one GatewayClass or Gateway", id, what)}
	if ref := d.Spec.Tunnel.TokenSecretRef; ref != nil && c.l.savedToken != "" && s.opts.SaveToken != nil {
		if err := s.opts.SaveToken(ctx, *ref, "", Stamp{}); err != nil {
			return st, fmt.Errorf("emptying the tunnel token in Secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		c.l.savedToken = ""
	}
	s.opts.Log.Warn("tunnel refused: another class or Gateway holds it", "class", d.Class, "tunnel", id, "holder", holder)
	return st, nil
}

// isPlane says whether a wish's key is a Gateway's own tunnel's
// (translate.PlaneTunnelKey) rather than a class's.
func isPlane(key string) bool { return strings.Contains(key, "/") }

// problem is a configuration error only the user can fix.
type problem string

func (p problem) Error() string { return string(p) }

// limit is one of Cloudflare's limits reached: only a user can make room.
type limit string

func (l limit) Error() string { return string(l) }

// awaitingIntent is a Gateway's own tunnel to create once the Gateway's
// status says tunnelgate creates it (Desired.CreateIntent): the next wish
// brings it, so this is not a failure to retry.
type awaitingIntent string

func (w awaitingIntent) Error() string { return string(w) }

// MaxTunnelsPerAccount is how many tunnels Cloudflare lets an account
// have. A tunnel is not created beyond it: the Gateway says so instead.
const MaxTunnelsPerAccount = 1000

func (s *Syncer) resolveAccount(ctx context.Context, c *classSync, d Desired) error {
	if d.Spec.AccountID != "" {
		c.l.account = d.Spec.AccountID
		return nil
	}
	if c.l.account != "" {
		return nil
	}
	ids, err := c.l.api.accountIDs(ctx)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return problem(fmt.Sprintf("the API token sees %d accounts; set accountID in the GatewayClassConfig", len(ids)))
	}
	c.l.account = ids[0]
	return nil
}

// resolveTunnel finds the tunnel: by ID it must exist; by name it is
// created when missing. A tunnel is never deleted here.
func (s *Syncer) resolveTunnel(ctx context.Context, c *classSync, d Desired) error {
	t := d.Spec.Tunnel
	want := c.l.account + "/" + t.ID + "/" + t.Name
	if c.l.tunnelID != "" && c.l.tunnelFor == want {
		return nil
	}
	c.l.tunnelID, c.l.applied, c.l.dnsKey = "", "", ""
	if t.ID != "" {
		_, ok, err := c.l.api.getTunnel(ctx, c.l.account, t.ID)
		if err != nil {
			return err
		}
		if !ok {
			return problem(fmt.Sprintf("tunnel %s does not exist in account %s (or was deleted)", t.ID, c.l.account))
		}
		c.l.tunnelID = t.ID
	} else {
		id, createdAt, err := c.l.api.tunnelByName(ctx, c.l.account, t.Name)
		if err != nil {
			return err
		}
		intended := d.CreateIntent.Name == t.Name
		switch {
		case id == "" && isPlane(d.Class) && !intended:
			return awaitingIntent(fmt.Sprintf("tunnel %q is created once the Gateway's status records that tunnelgate creates it", t.Name))
		case id != "" && isPlane(d.Class) && intended && !createdAt.Before(d.CreateIntent.Since):
			// Made since the Gateway's status said tunnelgate creates it:
			// by a replica that stopped (or stopped leading) before it
			// recorded so.
			c.l.created, c.l.createdSince = id, d.Since
			s.opts.Log.Info("tunnel found, created for the Gateway before this replica led", "class", d.Class, "name", t.Name, "tunnel", id)
		}
		if id == "" {
			n, err := c.l.api.countTunnels(ctx, c.l.account)
			if err != nil {
				return err
			}
			if n >= MaxTunnelsPerAccount {
				return limit(fmt.Sprintf("account %s has %d tunnels, Cloudflare's limit; tunnel %q is not created: delete unused tunnels, or use an existing one (tunnel.id)",
					c.l.account, n, t.Name))
			}
			if id, err = c.l.api.createTunnel(ctx, c.l.account, t.Name); err != nil {
				return err
			}
			c.l.created, c.l.createdSince = id, d.Since
			s.opts.Log.Info("tunnel created", "class", d.Class, "name", t.Name, "tunnel", id)
		}
		c.l.tunnelID = id
	}
	c.l.tunnelFor = want
	return nil
}

// saveToken keeps the tunnel's token in tunnel.tokenSecretRef, writing it
// when the tunnel or the Secret named changes.
func (s *Syncer) saveToken(ctx context.Context, c *classSync, d Desired) error {
	ref := d.Spec.Tunnel.TokenSecretRef
	if ref == nil || s.opts.SaveToken == nil {
		return nil
	}
	key := tokenKey(c.l.tunnelID, *ref)
	if key == c.l.savedToken {
		return nil
	}
	tok, err := c.l.api.tunnelToken(ctx, c.l.account, c.l.tunnelID)
	if err != nil {
		return err
	}
	if err := s.opts.SaveToken(ctx, *ref, tok, c.rot.current(d.Rotation)); err != nil {
		return fmt.Errorf("storing the tunnel token in Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	c.l.savedToken = key
	return nil
}

// tokenKey is what c.l.savedToken remembers: the tunnel and the Secret
// its token was last written to.
func tokenKey(tunnelID string, ref v1alpha1.SecretKeyRef) string {
	return hash(tunnelID + "/" + ref.Namespace + "/" + ref.Name + "/" + ref.Key)
}

// syncDNS brings the records of every zone that holds, or held, one of
// the class's hostnames to the plan, and returns each hostname's state;
// last is the previous report's.
func (s *Syncer) syncDNS(ctx context.Context, c *classSync, d Desired, last map[string]translate.DNSState) (map[string]translate.DNSState, error) {
	o := dnsOptions(d, c.l.tunnelID)
	o.LoadBalanced = loadBalancedHostnames(d, c.l.lbHosts)
	for _, h := range d.Hostnames {
		if h.UnmanagedDNS {
			o.Unmanaged = append(o.Unmanaged, h.Name)
		}
	}
	key := hashJSON(struct {
		H []translate.Hostname
		O DNSOptions
		Z []string
	}{d.Hostnames, o, d.Spec.DNS.Zones})
	now := s.opts.Now()
	full := now.Sub(c.l.lastDNS) >= s.dnsInterval(c)
	if key == c.l.dnsKey && !full {
		return last, nil
	}
	if c.l.zones == nil || full {
		zs, err := c.l.api.listZones(ctx, c.l.account)
		if err != nil {
			return last, err
		}
		c.l.zones = allowedZones(zs, d.Spec.DNS.Zones)
	}
	states := map[string]translate.DNSState{}
	byZone := map[string][]string{}
	for _, h := range d.Hostnames {
		z, ok := zoneOf(h.Name, c.l.zones)
		switch {
		case !ok && h.UnmanagedDNS && !slices.Contains(o.LoadBalanced, h.Name):
			states[h.Name] = translate.DNSState{Ready: true, Unmanaged: true} // nothing of ours to remove
			continue
		case !ok:
			states[h.Name] = translate.DNSState{Reason: translate.DNSReasonNoZone, Message: "no zone the API token can edit (and dns.zones allows) contains it"}
			continue
		}
		byZone[z.id] = append(byZone[z.id], h.Name)
	}
	if c.l.dnsZones == nil {
		c.l.dnsZones = map[string]bool{}
	}
	var errs []error
	// A plane gone since the last pass may have records in any zone.
	sweep := slices.ContainsFunc(c.l.livePlanes, func(p string) bool { return !slices.Contains(o.LivePlanes, p) })
	for _, z := range c.l.zones {
		want := byZone[z.id]
		if len(want) == 0 && !c.l.dnsZones[z.id] && !full && !sweep {
			continue // never ours, nothing to clean
		}
		records, err := c.l.api.listRecords(ctx, z.id)
		if err != nil {
			errs = append(errs, err)
			keepStates(states, last, want, err)
			continue
		}
		plan := PlanDNS(want, records, o)
		if !plan.Empty() {
			if err := c.l.api.apply(ctx, z.id, plan); err != nil {
				errs = append(errs, err)
				keepStates(states, last, want, err)
				continue
			}
			s.opts.Log.Info("DNS records changed", "class", d.Class, "zone", z.name,
				"deleted", len(plan.Deletes), "updated", len(plan.Updates), "created", len(plan.Creates))
		}
		maps.Copy(states, plan.States)
		if len(want) > 0 {
			c.l.dnsZones[z.id] = true
		} else {
			delete(c.l.dnsZones, z.id)
		}
	}
	if len(errs) > 0 {
		return states, errors.Join(errs...)
	}
	c.l.dnsKey, c.l.lastDNS, c.l.livePlanes = key, now, o.LivePlanes
	c.l.dnsContested = slices.ContainsFunc(slices.Collect(maps.Values(states)), func(st translate.DNSState) bool {
		return st.Reason == translate.DNSReasonOwnedByOther
	})
	return states, nil
}

// dnsInterval is how long after a pass the zones are listed again.
func (s *Syncer) dnsInterval(c *classSync) time.Duration {
	if c.l.dnsContested {
		return min(s.opts.DNSRecheck, s.opts.DNSEvery)
	}
	return s.opts.DNSEvery
}

// keepStates carries the last known state of hosts whose zone failed;
// a host with none gets the failure, so a new hostname in a zone the
// token may not edit says why rather than stay pending.
func keepStates(into, last map[string]translate.DNSState, hosts []string, err error) {
	for _, h := range hosts {
		if st, ok := last[h]; ok {
			into[h] = st
			continue
		}
		msg := err.Error() + "; retrying"
		var ae *apiError
		if errors.As(err, &ae) && ae.refused() {
			msg = err.Error() + "; the API token needs Zone: DNS: Edit on this zone"
		}
		into[h] = translate.DNSState{Reason: translate.DNSReasonAPIError, Message: msg}
	}
}

func dnsOptions(d Desired, tunnelID string) DNSOptions {
	o := DNSOptions{Owner: d.Spec.DNS.OwnerID, TunnelID: tunnelID, Proxied: true, Takeover: d.Spec.DNS.Takeover, LivePlanes: d.LivePlanes}
	if o.Owner == "" {
		o.Owner = d.Class
	}
	if d.Spec.DNS.Proxied != nil {
		o.Proxied = *d.Spec.DNS.Proxied
	}
	return o
}

// allowedZones keeps the zones the allowlist names (all when it is empty).
func allowedZones(zs []zone, allow []string) []zone {
	if len(allow) == 0 {
		return zs
	}
	var out []zone
	for _, z := range zs {
		if slices.ContainsFunc(allow, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "."), z.name) }) {
			out = append(out, z)
		}
	}
	return out
}

// zoneOf finds the zone a hostname belongs to: the longest zone name that
// is the hostname or a suffix of it at a label boundary.
func zoneOf(host string, zs []zone) (zone, bool) {
	host = strings.TrimPrefix(host, "*.")
	var best zone
	for _, z := range zs {
		if (host == z.name || strings.HasSuffix(host, "."+z.name)) && len(z.name) > len(best.name) {
			best = z
		}
	}
	return best, best.name != ""
}

func desiredKey(d Desired) string {
	return hashJSON(struct {
		T       string
		P       string
		H       bool
		S       v1alpha1.GatewayClassConfigSpec
		Servers []translate.Hostname
		L       []string
		Dep     bool
		Del     bool
		Created string
		Intent  translate.TunnelIntent
		Apps    []translate.AccessApp
		LBs     []translate.LoadBalancing
		Rot     Rotation
	}{hash(d.Token), d.Problem, d.Hold, d.Spec, d.Hostnames, d.LivePlanes, d.Departing, d.DeleteTunnel, d.CreatedTunnel, d.CreateIntent, d.AccessApps,
		d.LoadBalancers, d.Rotation})
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func hashJSON(v any) string {
	b, _ := json.Marshal(v) // plain data: cannot fail
	return hash(string(b))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
