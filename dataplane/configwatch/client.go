// This file implements the client's options and the poll loop.

package configwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// Defaults of Options.
const (
	// DefaultWait is the wait asked of the server, the same as the
	// server's own cap (configserver.DefaultMaxWait).
	DefaultWait = 55 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the pause after a
	// failed request; it doubles from the first to the second.
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// Options configure a Client. URL is required.
type Options struct {
	// URL is the controller's base URL, http:// or https://, e.g.
	// https://tunnelgate-controller.tunnelgate-system.svc:9443; Path is
	// appended.
	URL string
	// TokenFile holds the bearer token (a mounted Secret); it is read
	// for every request. Empty sends no token, which a configserver
	// refuses.
	TokenFile string
	// CAFile verifies the controller's certificate (default: the system
	// roots). CertFile and KeyFile are the proxy's client certificate,
	// for a controller that requires one. All are read for every
	// request, so rotated files take effect without a restart.
	CAFile, CertFile, KeyFile string
	// CacheFile, when set, keeps the last applied document; Run loads it
	// before asking the controller.
	CacheFile string
	// Wait is how long the server is asked to hold a request; default
	// DefaultWait.
	Wait time.Duration
	// ProxyID and TunnelProtocol are reported to the controller (see
	// HeaderProxy): this proxy's name, and the protocol of its
	// cloudflared sidecar; empty reports nothing.
	ProxyID, TunnelProtocol string
	// MinBackoff and MaxBackoff bound the pause after a failure;
	// defaults DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Log receives what the client does; default slog.Default().
	Log *slog.Logger
}

// transferAllowance is added to Wait for a request's deadline: the time
// to send a document of megabytes once the server stops holding. A
// server that vanished without closing the connection is noticed then.
const transferAllowance = 15 * time.Second

// Client keeps a proxy's config in step with the controller's.
type Client struct {
	p     Proxy
	opts  Options
	base  string // URL with Path, without query
	log   *slog.Logger
	stats Stats
	tr    transport

	cache *cacheWriter // nil without a cache file

	// Only Run's goroutine touches these.
	asked string // the version sent: the last one applied or refused
	// whole asks for the next config whole, not as a delta: the last
	// delta did not apply.
	whole bool
}

// New returns a client that will keep p in step with the controller at
// opts.URL once Run is called.
func New(p Proxy, opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("controller URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("controller URL %q: want http:// or https:// with a host and no query, such as https://tunnelgate-controller:9443", opts.URL)
	}
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("a client certificate needs both a certificate and a key file")
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	c := &Client{
		p:    p,
		opts: opts,
		base: strings.TrimSuffix(u.String(), "/") + Path,
		log:  opts.Log,
	}
	if opts.CacheFile != "" {
		c.cache = newCacheWriter(opts.CacheFile, opts.Log, &c.stats)
	}
	return c, nil
}

// Stats are the client's counters, also exported by RegisterMetrics.
func (c *Client) Stats() *Stats { return &c.stats }

// Run loads the cache file, if any and the proxy has no config yet, then
// watches the controller until ctx ends. It returns nil then: every
// failure is retried, since the proxy keeps serving meanwhile.
func (c *Client) Run(ctx context.Context) error {
	if c.opts.CacheFile != "" && !c.p.Ready() {
		c.loadCache()
	}
	if c.cache != nil {
		cctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); c.cache.run(cctx) }()
		defer func() { stop(); <-done }() // the last document applied is written before Run returns
	}
	failures := 0
	for ctx.Err() == nil {
		pause, err := c.poll(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			failures++
			pause = max(pause, backoff(failures, c.opts.MinBackoff, c.opts.MaxBackoff))
			c.log.Warn("config watch failed; still serving the current config", "err", err,
				"failures", failures, "retryIn", pause.Round(time.Millisecond), "version", c.p.Version())
		} else if failures > 0 {
			c.log.Info("config watch: controller answering again", "after", failures)
			failures = 0
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
	return nil
}

// poll makes one request and acts on the answer. It returns how long to
// pause before the next, and an error when the next should back off.
func (c *Client) poll(ctx context.Context) (time.Duration, error) {
	token, err := readToken(c.opts.TokenFile)
	if err != nil {
		c.stats.fail(FailToken)
		return 0, err
	}
	hc, err := c.tr.client(&c.opts)
	if err != nil {
		c.stats.fail(FailTLSFiles)
		return 0, err
	}
	q := url.Values{ParamVersion: {c.asked}, ParamWait: {c.opts.Wait.String()}}
	if served := c.p.Config(); served != nil && served.Version != "" && !c.whole {
		q.Set(ParamBase, served.Version)
	}
	c.whole = false
	rctx, cancel := context.WithTimeout(ctx, c.opts.Wait+transferAllowance)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, c.base+"?"+q.Encode(), nil)
	if err != nil {
		return 0, err // New checked the URL
	}
	unknown := c.p.UnknownAccessKeys()
	teams := unknown.Take()
	if len(teams) > 0 {
		req.Header.Set(HeaderUnknownAccessKeys, strings.Join(teams, ","))
		c.stats.AccessKeyRequests.Add(int64(len(teams)))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token) // RFC 6750 §2.1
	}
	req.Header.Set("User-Agent", "tunnelgate-proxy")
	if c.opts.TunnelProtocol != "" {
		req.Header.Set(HeaderProxy, c.opts.ProxyID)
		req.Header.Set(HeaderTunnelProtocol, c.opts.TunnelProtocol)
	}
	// Accept-Encoding: gzip is added, and the answer decompressed, by
	// net/http's Transport.
	start := time.Now()
	c.stats.Requests.Add(1)
	stopWatch := c.cutShort(unknown, cancel)
	res, err := hc.Do(req)
	cut := stopWatch()
	if err != nil {
		unknown.Put(teams) // perhaps never sent; asking twice is harmless
		if ctx.Err() != nil || cut {
			return 0, nil // Run is ending, or teams wait to be named: not a failure
		}
		c.stats.fail(FailUnreachable)
		return 0, fmt.Errorf("asking %s: %w", c.base, err)
	}
	defer res.Body.Close()

	switch res.StatusCode {
	case http.StatusNotModified:
		c.stats.success()
		// A server answers 304 at once only when it shuts down (or
		// when asked to wait 0); one that always did would otherwise be
		// asked in a tight loop. So a 304 faster than MinBackoff is
		// followed by a pause to MinBackoff.
		if took := time.Since(start); took < c.opts.MinBackoff {
			return c.opts.MinBackoff - took, nil
		}
		return 0, nil
	case http.StatusOK:
		return 0, c.receive(ctx, res)
	case http.StatusUnauthorized:
		c.stats.fail(FailUnauthorized)
		return 0, fmt.Errorf("the controller refused the token from %q (401 %s); is it the controller's current token?",
			c.opts.TokenFile, res.Header.Get("WWW-Authenticate"))
	default:
		c.stats.fail(FailBadAnswer)
		snippet, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return 0, fmt.Errorf("the controller answered %s: %q", res.Status, snippet)
	}
}

// cutShort watches for teams noted by unknown while the request is held,
// and cancels it then, so that the next request names them at once
// rather than when the server stops holding. stop ends the watch, before
// the answer's body is read, and reports whether it cancelled.
func (c *Client) cutShort(unknown *cfaccess.UnknownKeys, cancel context.CancelFunc) (stop func() bool) {
	var mu sync.Mutex
	stopped, cut := false, false
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-unknown.Ready():
				if !unknown.Pending() {
					continue // a signal left from teams already taken
				}
				mu.Lock()
				if !stopped {
					cut = true
					cancel()
				}
				mu.Unlock()
				return
			}
		}
	}()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			close(done)
		}
		return cut
	}
}

// receive reads a 200 answer and applies its document.
func (c *Client) receive(ctx context.Context, res *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(res.Body, maxDocument+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil // Run is ending, not a failure
		}
		c.stats.fail(FailUnreachable)
		return fmt.Errorf("reading the config from %s: %w", c.base, err)
	}
	doc, err := DecodeDocument(body)
	if err != nil {
		c.stats.fail(FailBadAnswer)
		// Ask with the version it was, if the server named it, so the
		// next answer is a new version and not these bytes again.
		if v := VersionFromETag(res.Header.Get("ETag")); v != "" {
			c.asked = v
		}
		return err
	}
	if doc.Version == c.asked {
		c.stats.fail(FailBadAnswer)
		return fmt.Errorf("the controller answered with version %s, which the proxy said it has", doc.Version)
	}
	if doc.Delta != nil {
		cfg, err := doc.Delta.Apply(c.p.Config())
		if err != nil {
			c.stats.fail(FailBadAnswer)
			c.whole = true
			return err
		}
		doc.Config, doc.Delta, body = *cfg, nil, nil
		c.stats.Deltas.Add(1)
	}
	c.stats.success()
	c.accept(doc, body)
	return nil
}

// accept applies doc and remembers that it was offered, whether the
// proxy took it or not: the next request asks with its version, so a
// refused config is not sent again, and the server holds the request
// until the next one.
func (c *Client) accept(doc *Document, raw []byte) {
	c.asked = doc.Version
	kind, err := c.apply(doc)
	if err != nil {
		c.stats.fail(FailRejected)
		c.log.Error("config refused; still serving the previous one until the controller publishes another",
			"refused", doc.Version, "serving", c.p.Version(), "err", err)
		return
	}
	c.stats.Loads[kind].Add(1)
	c.log.Info("config applied", "version", doc.Version, "how", loadKindNames[kind],
		"routes", len(doc.Config.Routes), "clusters", len(doc.Config.Clusters))
	if c.cache != nil {
		c.cache.offer(doc, raw)
	}
}
