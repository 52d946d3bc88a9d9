// Package accesskeys fetches the signing keys of the Cloudflare Access
// teams that AccessPolicies name, for the proxies: they verify every
// protected request's token against them, and get them in their config,
// so a proxy never reaches out to Cloudflare itself.
//
// A Fetcher is told the teams in use (Want). It fetches a new team at
// once, then each team every Refresh, and again on demand (Stale: a token
// named a key the team's set does not hold, as after a rotation), at most
// once per MinInterval per team. A fetch that fails keeps the keys fetched
// before (the proxies keep verifying with them) and is retried sooner,
// with backoff; the failure is reported (Keys) for the policies' status.
// A response is used only if cfaccess.ParseKeys finds usable keys in it:
// the proxies are never handed a set they would refuse.
package accesskeys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	neturl "net/url"
	"slices"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// Defaults of Options.
const (
	// DefaultRefresh: Cloudflare rotates a team's key every few weeks and
	// keeps publishing the previous one a while; tokens signed with a new
	// key wait at most this long (Stale shortens it).
	DefaultRefresh     = time.Hour
	DefaultMinInterval = 30 * time.Second
	DefaultTimeout     = 10 * time.Second
	// maxDocument bounds a certs document: a team's holds a few keys and
	// certificates, a few KiB.
	maxDocument = 256 << 10
)

// Options configure a Fetcher.
type Options struct {
	// Client makes the requests (default: a client with Timeout).
	Client *http.Client
	// URL is where a team's keys are (default cfaccess.CertsURL); tests
	// point it at a local server.
	URL func(team string) string
	// Refresh, MinInterval and Timeout default to the constants above.
	Refresh, MinInterval, Timeout time.Duration
	// OnChange is called, without locks held, when a team's keys or its
	// fetch problem change: the controller then translates again.
	OnChange func()
	Log      *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Fetcher keeps the keys of the teams in use. Its methods are safe for
// concurrent use.
type Fetcher struct {
	opts Options
	wake chan struct{}

	mu    sync.Mutex
	teams map[string]*team
}

// team is one team's state.
type team struct {
	keys *translate.AccessKeys // replaced, never changed: a translation may be reading the last
	// last is when the last fetch started; next, when the next is due.
	last, next time.Time
	failures   int
	fetching   bool
	// again: Stale was called while fetching; the next fetch is then
	// due MinInterval after this one started.
	again bool
}

// New returns a Fetcher; Run makes it fetch.
func New(opts Options) *Fetcher {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: opts.Timeout}
	}
	if opts.URL == nil {
		opts.URL = cfaccess.CertsURL
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Fetcher{opts: opts, wake: make(chan struct{}, 1), teams: map[string]*team{}}
}

// Want sets the teams in use: new ones are fetched at once, those no
// longer named are forgotten. Domains that are not team domains are
// ignored (translate reports them).
func (f *Fetcher) Want(domains []string) {
	f.mu.Lock()
	added := false
	for d := range f.teams {
		if !slices.Contains(domains, d) {
			delete(f.teams, d)
		}
	}
	for _, d := range domains {
		if _, ok := f.teams[d]; !ok && cfaccess.CheckTeamDomain(d) == nil {
			f.teams[d] = &team{}
			added = true
		}
	}
	f.mu.Unlock()
	if added {
		f.poke()
	}
}

// Stale asks for a team's keys again: a token named a key its set lacks.
// It is fetched now, or MinInterval after the last fetch started when
// that is later: a request is deferred, never dropped, since the key may
// have been published just after the last fetch. One asked for while a
// fetch is on its way is fetched again after it.
func (f *Fetcher) Stale(domain string) {
	f.mu.Lock()
	tm := f.teams[domain]
	if tm == nil {
		f.mu.Unlock()
		return
	}
	if tm.fetching {
		tm.again = true
	} else if soonest := tm.last.Add(f.opts.MinInterval); tm.next.After(soonest) {
		tm.next = soonest
	}
	f.mu.Unlock()
	f.poke()
}

// Keys are the teams' keys as translate reads them, by domain; a team not
// fetched yet has no entry.
func (f *Fetcher) Keys() map[string]*translate.AccessKeys {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*translate.AccessKeys, len(f.teams))
	for d, tm := range f.teams {
		if tm.keys != nil {
			out[d] = tm.keys
		}
	}
	return out
}

func (f *Fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Run fetches what is due until ctx ends.
func (f *Fetcher) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		for _, d := range f.due() {
			go f.fetch(ctx, d)
		}
		timer.Reset(f.untilNext())
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-timer.C:
		}
	}
}

// due marks the teams whose fetch is due as fetching, and lists them.
func (f *Fetcher) due() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.opts.Now()
	var out []string
	for _, d := range slices.Sorted(maps.Keys(f.teams)) {
		if tm := f.teams[d]; !tm.fetching && !now.Before(tm.next) {
			tm.fetching, tm.last = true, now
			out = append(out, d)
		}
	}
	return out
}

// untilNext is how long until the next fetch is due (at most a minute:
// the clock of tests moves without telling).
func (f *Fetcher) untilNext() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now, wait := f.opts.Now(), time.Minute
	for _, tm := range f.teams {
		if !tm.fetching {
			wait = min(wait, max(tm.next.Sub(now), 0))
		}
	}
	return wait
}

// fetch fetches one team's keys and records the outcome.
func (f *Fetcher) fetch(ctx context.Context, domain string) {
	doc, err := f.get(ctx, domain)
	f.mu.Lock()
	tm := f.teams[domain]
	if tm == nil { // no longer wanted
		f.mu.Unlock()
		return
	}
	tm.fetching = false
	next := translate.AccessKeys{Doc: doc}
	if err != nil {
		tm.failures++
		tm.next = f.opts.Now().Add(min(f.opts.MinInterval<<min(tm.failures-1, 8), f.opts.Refresh))
		next = translate.AccessKeys{Problem: err.Error()}
		if tm.keys != nil {
			next.Doc = tm.keys.Doc // the keys fetched before stay
		}
	} else {
		tm.failures = 0
		tm.next = f.opts.Now().Add(f.opts.Refresh)
	}
	if tm.again {
		tm.again = false
		if soonest := tm.last.Add(f.opts.MinInterval); tm.next.After(soonest) {
			tm.next = soonest
		}
	}
	changed := tm.keys == nil || *tm.keys != next
	if changed {
		tm.keys = &next
	}
	f.mu.Unlock()
	if err != nil {
		f.opts.Log.Warn("Access team keys not fetched", "team", domain, "err", err)
	} else if changed {
		f.opts.Log.Info("Access team keys fetched", "team", domain)
	}
	if changed && f.opts.OnChange != nil {
		f.opts.OnChange()
	}
}

// get fetches and checks one team's certs document.
func (f *Fetcher) get(ctx context.Context, domain string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	url := f.opts.URL(domain)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.opts.Client.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, said once below
		}
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxDocument {
		return "", fmt.Errorf("GET %s: the document is larger than %d KiB", url, maxDocument>>10)
	}
	if _, _, err := cfaccess.ParseKeys(body); err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return string(body), nil
}
