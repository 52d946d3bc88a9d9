// This file implements the server's options and the long poll.

package configserver

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
)

// DefaultMaxWait is how long a request is held when Options.MaxWait is
// zero: under the idle timeouts of common load balancers and meshes
// (often 60 s or more), so a parked request is not cut by something in
// between, and long enough that idle proxies cost next to nothing.
const DefaultMaxWait = 55 * time.Second

// Options configure a Server.
type Options struct {
	// Token is the bearer token the shared proxies must present to
	// read the config given to Publish. (A dedicated plane's proxies
	// present their plane's token: see PublishPlanes.)
	Token string
	// TokenFunc, when set, is asked for the token on every request
	// instead of Token, so a rotated Secret takes effect without a
	// restart. An empty token refuses every shared proxy's request: the
	// config holds session keys and TLS keys, so there is no
	// unauthenticated mode.
	TokenFunc func() string
	// MaxWait caps how long a request is held; default DefaultMaxWait.
	// A proxy may ask for less with the wait parameter.
	MaxWait time.Duration
	// Log receives publishes and refused requests; default slog.Default().
	Log *slog.Logger
	// Meter records the metrics in metrics.go; default none.
	Meter metric.Meter
	// OnProxies is called when a proxy reports a tunnel protocol not
	// seen from it before (see Protocols).
	OnProxies func()
	// OnUnknownAccessKeys is called with each Access team domain a proxy
	// names in configwatch.HeaderUnknownAccessKeys that its config uses:
	// the controller fetches the team's keys again (it limits how often).
	OnUnknownAccessKeys func(team string)
}

// Server serves published configs to proxies. Its methods are safe for
// concurrent use.
type Server struct {
	proxies       proxies
	onProxies     func()
	onUnknownKeys func(team string)

	log     *slog.Logger
	token   func() string
	maxWait time.Duration
	m       instruments
	authLog rateLimit
	// collisionLog limits the error logged when the shared token is
	// also a plane's.
	collisionLog rateLimit

	// shared is the config of the shared proxies (Publish); planes,
	// those of dedicated data planes (PublishPlanes).
	shared *scope
	planes planeSet

	drainOnce sync.Once
	drained   chan struct{}
}

// New returns a server with nothing published yet.
func New(opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	token := opts.TokenFunc
	if token == nil {
		static := opts.Token
		token = func() string { return static }
	}
	if token() == "" {
		opts.Log.Warn("config server has no token: every shared proxy's request will be refused")
	}
	return &Server{
		log:           opts.Log,
		token:         token,
		maxWait:       opts.MaxWait,
		m:             newInstruments(opts.Meter, opts.Log),
		shared:        newSharedScope(opts.Log),
		drained:       make(chan struct{}),
		onProxies:     opts.OnProxies,
		onUnknownKeys: opts.OnUnknownAccessKeys,
		proxies:       proxies{ttl: 3 * opts.MaxWait, now: time.Now},
	}
}

// Version is the version last published, "" before the first Publish.
func (s *Server) Version() string { return s.shared.version() }

// Drain answers every held request at once (304 when nothing changed),
// and from then on answers without holding. Call it before
// http.Server.Shutdown, which otherwise waits for parked long polls to
// end; proxies ask again at once, reaching another replica.
func (s *Server) Drain() {
	s.drainOnce.Do(func() { close(s.drained) })
}

// Handler serves GET (and HEAD) /v1/config. Other paths answer 404 and
// other methods 405 with Allow (RFC 9110 §15.5.6), by http.ServeMux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+configwatch.Path, s.serveConfig)
	return mux
}

func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The config carries session keys and TLS keys: no cache may keep
	// it (RFC 9111 §5.2.2.5). A 304 carries the fields a 200 would
	// (RFC 9110 §15.4.5), so these are set before either.
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Accept-Encoding")

	g, ok, presented := s.authorize(r)
	if !ok {
		s.refuse(w, r, presented)
		return
	}
	s.proxies.seen(r.Header.Get(configwatch.HeaderProxy), r.Header.Get(configwatch.HeaderTunnelProtocol), s.onProxies)
	s.unknownKeys(g, r.Header.Get(configwatch.HeaderUnknownAccessKeys))
	q := r.URL.Query()
	have := q.Get(configwatch.ParamVersion)
	wait := s.maxWait
	if v := q.Get(configwatch.ParamWait); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			s.m.request(r.Context(), resultBadRequest)
			http.Error(w, "wait must be a non-negative duration such as 30s", http.StatusBadRequest)
			return
		}
		wait = min(wait, d)
	}

	doc, res := s.await(r.Context(), g, have, wait)
	if res == resultUnauthorized {
		// The plane went, or its token changed, while the request
		// was held or on its way.
		s.refuse(w, r, true)
		return
	}
	s.m.request(r.Context(), res)
	switch res {
	case resultCanceled:
		// The proxy went away; nobody reads an answer.
	case resultNotModified:
		if doc != nil {
			h.Set("ETag", configwatch.ETag(doc.version))
		}
		w.WriteHeader(http.StatusNotModified)
	case resultChanged:
		h.Set("ETag", configwatch.ETag(doc.version))
		h.Set("Content-Type", "application/json")
		body, gzipped := doc.bytes, doc.gzipped // made at the first request that wants them
		if base := q.Get(configwatch.ParamBase); base != "" && base != doc.version {
			if db, ok := doc.deltaFrom(base, g.sc.bases()); ok {
				s.m.delta(r.Context())
				body, gzipped = db.bytes, db.gzipped
			}
		}
		writeBody(w, r, body, gzipped)
	}
}

// writeBody answers 200 with a body: gzipped's when the client takes
// gzip and it gives one (not nil: the body is worth compressing), else
// body's.
func writeBody(w http.ResponseWriter, r *http.Request, body, gzipped func() []byte) {
	h := w.Header()
	var b []byte
	if httpsyntax.AcceptsGzip(r.Header.Values("Accept-Encoding")) {
		if b = gzipped(); b != nil {
			h.Set("Content-Encoding", "gzip")
		}
	}
	if b == nil {
		b = body()
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b) // an error is a proxy gone; it will ask again
}

// await returns the document to send for a request granted g that has
// version have: at once when the scope's version differs, else when one
// is published within wait (resultChanged); at the end of the wait, or
// when draining, the current document, if any, for its ETag
// (resultNotModified); nothing when the request's context ends first
// (resultCanceled), or when the grant no longer holds: its plane went or
// took another token (resultUnauthorized).
func (s *Server) await(ctx context.Context, g grant, have string, wait time.Duration) (*document, result) {
	doc, changed, ok := g.look()
	if !ok {
		return nil, resultUnauthorized
	}
	if doc != nil && doc.version != have {
		return doc, resultChanged
	}
	select {
	case <-s.drained:
		return doc, resultNotModified
	default:
	}
	if wait <= 0 {
		return doc, resultNotModified
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	s.m.watching(ctx, 1)
	defer s.m.watching(ctx, -1)
	for {
		select {
		case <-changed:
		case <-timer.C:
			return notModified(g)
		case <-s.drained:
			return notModified(g)
		case <-ctx.Done():
			return nil, resultCanceled
		}
		doc, changed, ok = g.look()
		if !ok {
			return nil, resultUnauthorized
		}
		// A publish that went back to the version the proxy has (A, B,
		// A within one wait) is no change for it: keep waiting.
		if doc != nil && doc.version != have {
			return doc, resultChanged
		}
	}
}

// notModified ends a wait with the current document, for its ETag, or
// with a refusal when the grant ended meanwhile (the wake-up that says
// so may have lost the race with the timer).
func notModified(g grant) (*document, result) {
	doc, _, ok := g.look()
	if !ok {
		return nil, resultUnauthorized
	}
	return doc, resultNotModified
}
