package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options are a connector's command line, as cloudflared's.
type Options struct {
	Edge        string        // --edge: host:port of the Edge
	Token       string        // --token, or the content of --token-file
	Metrics     string        // --metrics: where /ready and /healthcheck are served; "" none
	GracePeriod time.Duration // --grace-period; default 30s
	Protocol    string        // --protocol: logged, the stand-in speaks only its own (see doc.go)
	Name        string        // how the edge logs it: $HOSTNAME
	// HostPath maps a path the ingress document names (a unix socket) to
	// this machine's; default the identity.
	HostPath func(string) string
	// AccessCerts maps an Access team name to the URL of its certs
	// document (--access-certs=TEAM=URL, repeated; the stand-in's own
	// flag), for a rule's originRequest.access; a team not named is read
	// where cloudflared reads it, https://TEAM.cloudflareaccess.com.
	AccessCerts map[string]string
	Log         *slog.Logger
}

// redialDelay is the wait before a lost tunnel connection is dialed again.
const redialDelay = 500 * time.Millisecond

// ParseArgs reads cloudflared's command line as the chart writes it:
// `tunnel [--flag=value]... run [--flag=value]...`, after the official
// image's entrypoint, `cloudflared --no-autoupdate` (a flag without a
// value, which changes nothing here: the stand-in never updates itself).
func ParseArgs(args []string) (Options, error) {
	opts := Options{GracePeriod: 30 * time.Second, Name: os.Getenv("HOSTNAME")}
	var tokenFile string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "tunnel" || a == "run" {
			continue
		}
		if !strings.HasPrefix(a, "--") {
			return opts, fmt.Errorf("connector: unexpected argument %q", a)
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if name == "no-autoupdate" && !ok {
			continue
		}
		if !ok {
			if i+1 >= len(args) {
				return opts, fmt.Errorf("connector: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "edge":
			opts.Edge = value
		case "token":
			opts.Token = value
		case "token-file":
			tokenFile = value
		case "metrics":
			opts.Metrics = value
		case "protocol":
			opts.Protocol = value
		case "access-certs":
			team, url, ok := strings.Cut(value, "=")
			if !ok || team == "" || url == "" {
				return opts, fmt.Errorf("connector: --access-certs=%s: want TEAM=URL", value)
			}
			if opts.AccessCerts == nil {
				opts.AccessCerts = map[string]string{}
			}
			opts.AccessCerts[team] = url
		case "grace-period":
			d, err := time.ParseDuration(value)
			if err != nil {
				return opts, fmt.Errorf("connector: --grace-period: %w", err)
			}
			opts.GracePeriod = d
		default:
			return opts, fmt.Errorf("connector: flag --%s is not modeled", name)
		}
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return opts, fmt.Errorf("connector: --token-file: %w", err)
		}
		opts.Token = strings.TrimSpace(string(b))
	}
	if opts.Edge == "" || opts.Token == "" {
		return opts, errors.New("connector: --edge and a token (--token or --token-file) are required")
	}
	return opts, nil
}

// Main returns the connector's main function for a container image (see
// test/kubelet.Register): cloudflared's command line, and SIGTERM or
// SIGINT to stop (a second one stops at once). hostPath maps the
// container's paths to this machine's.
func Main(hostPath func(string) string) func(args []string) int {
	return func(args []string) int {
		log := slog.New(slog.NewTextHandler(os.Stderr, nil))
		opts, err := ParseArgs(args)
		if err != nil {
			log.Error("bad command line", "err", err)
			return 2
		}
		opts.HostPath, opts.Log = hostPath, log
		signals := make(chan os.Signal, 2)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		shutdown, abort := make(chan struct{}), make(chan struct{})
		go func() {
			s := <-signals
			log.Info("initiating graceful shutdown", "signal", s)
			close(shutdown)
			<-signals
			close(abort)
		}()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-abort; cancel() }()
		if err := Run(ctx, opts, shutdown); err != nil {
			log.Error("connector failed", "err", err)
			return 1
		}
		return 0
	}
}

// Run serves the tunnel until shutdown is closed, then stops as
// cloudflared does (see doc.go), or until ctx ends, at once.
func Run(ctx context.Context, opts Options, shutdown <-chan struct{}) error {
	if opts.HostPath == nil {
		opts.HostPath = func(p string) string { return p }
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	c := &connector{opts: opts, origins: map[string]*originClient{}}
	if opts.Metrics != "" {
		ms, err := c.serveMetrics()
		if err != nil {
			return err
		}
		defer ms.Close()
	}
	for {
		err := c.serveConnection(ctx, shutdown)
		select {
		case <-shutdown:
			return err
		case <-ctx.Done():
			return nil
		default:
		}
		opts.Log.Info("tunnel connection lost; dialing again", "err", err, "in", redialDelay)
		select {
		case <-time.After(redialDelay):
		case <-shutdown:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

type connector struct {
	opts       Options
	registered atomic.Bool
	rules      atomic.Pointer[ingress]

	mu      sync.Mutex
	origins map[string]*originClient // by service and originRequest
}

// serveConnection dials the edge, registers and serves visitors' requests
// until the connection ends; once shutdown closes it stops as doc.go says.
func (c *connector) serveConnection(ctx context.Context, shutdown <-chan struct{}) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: c, Protocols: new(http.Protocols), ReadHeaderTimeout: 10 * time.Second}
	hs.Protocols.SetUnencryptedHTTP2(true)
	ln := newOneConnListener(conn)
	hs.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			ln.closed()
		}
	}
	c.registered.Store(true)
	defer c.registered.Store(false)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ln.done:
		hs.Close()
		<-served
		return errors.New("the edge closed the tunnel connection")
	case <-ctx.Done():
		hs.Close()
		<-served
		return nil
	case <-shutdown:
	}
	// Stop: GOAWAY (the edge sends no new request), then wait for the
	// requests in flight, at most the grace period.
	c.registered.Store(false)
	c.opts.Log.Info("unregistering: waiting for requests in flight", "gracePeriod", c.opts.GracePeriod)
	grace, cancel := context.WithTimeout(ctx, c.opts.GracePeriod)
	defer cancel()
	err = hs.Shutdown(grace)
	if err != nil {
		hs.Close()
		c.opts.Log.Info("grace period over with requests in flight", "err", err)
	}
	<-served
	return nil
}

// dial opens the tunnel connection and runs the handshake.
func (c *connector) dial(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: handshakeTimeout}
	conn, err := d.DialContext(ctx, "tcp", c.opts.Edge)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := writeLine(conn, hello{Token: c.opts.Token, Connector: c.opts.Name}); err != nil {
		conn.Close()
		return nil, err
	}
	answer, err := readLine(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("the edge's answer: %w", err)
	}
	if answer != answerOK {
		conn.Close()
		return nil, fmt.Errorf("the edge refused the connection: %s", answer)
	}
	_ = conn.SetDeadline(time.Time{})
	c.opts.Log.Info("registered tunnel connection", "edge", c.opts.Edge, "protocol", c.opts.Protocol)
	return conn, nil
}

// ServeHTTP takes the edge's configuration pushes and visitors' requests.
func (c *connector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host == configHost {
		c.applyConfig(w, r)
		return
	}
	rules := c.rules.Load()
	if rules == nil {
		http.Error(w, "connector: no configuration yet", http.StatusServiceUnavailable)
		return
	}
	rl := rules.match(r.Host, r.URL.Path)
	switch {
	case rl == nil:
		http.Error(w, "connector: no ingress rule matches", http.StatusNotFound)
	case rl.access != nil && !rl.access.admit(w, r):
	case rl.status != 0:
		w.WriteHeader(rl.status)
	case rl.stream != "":
		c.stream(w, r, rl)
	case rl.origin == nil && rl.socket == "":
		http.Error(w, "connector: service "+rl.service+" is not modeled", http.StatusBadGateway)
	case r.Header.Get(upgradeHeader) == websocketUpgrade:
		c.origin(rl).websocket(w, r)
	default:
		c.origin(rl).proxy.ServeHTTP(w, r)
	}
}

func (c *connector) applyConfig(w http.ResponseWriter, r *http.Request) {
	var p configPush
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&p); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in, err := parseIngress(p.Config, c.opts.HostPath, c.opts.AccessCerts)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.rules.Store(&in)
	c.opts.Log.Info("updated to new configuration", "version", p.Version)
	w.WriteHeader(http.StatusNoContent)
}

// origin returns the rule's origin, one per service and originRequest,
// built once.
func (c *connector) origin(rl *rule) *originClient {
	key := fmt.Sprintf("%s %+v", rl.service, rl.request)
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.origins[key]; ok {
		return o
	}
	o := newOrigin(rl, c.opts.Log)
	c.origins[key] = o
	return o
}

// serveMetrics serves /ready and /healthcheck as cloudflared's metrics
// server does.
func (c *connector) serveMetrics() (*http.Server, error) {
	ln, err := net.Listen("tcp", c.opts.Metrics)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		n, status := 0, http.StatusServiceUnavailable
		if c.registered.Load() {
			n, status = 1, http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"status":%d,"readyConnections":%d}`, status, n)
	})
	mux.HandleFunc("GET /healthcheck", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "OK\n") })
	ms := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ms.Serve(ln) }()
	return ms, nil
}

// oneConnListener hands http.Server one connection, then blocks Accept
// until it is closed, so Serve returns only when the server is closed.
type oneConnListener struct {
	conn      net.Conn
	take      chan net.Conn
	done      chan struct{} // closed when the connection is
	closeOnce sync.Once
	doneOnce  sync.Once
	stop      chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{conn: c, take: make(chan net.Conn, 1), done: make(chan struct{}), stop: make(chan struct{})}
	l.take <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.take:
		return c, nil
	case <-l.stop:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.closeOnce.Do(func() { close(l.stop) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

func (l *oneConnListener) closed() { l.doneOnce.Do(func() { close(l.done) }) }
