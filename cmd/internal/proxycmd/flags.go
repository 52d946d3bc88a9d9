// This file defines the proxy command's flags and their checks.

package proxycmd

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/api/origin"
	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
)

// flags are the proxy command's flags, parsed; those for
// dataplane.ServeOptions, the pool and configwatch.Options are read straight
// into them.
type flags struct {
	file      string              // -config
	watch     configwatch.Options // -controller and the flags that go with it
	listen    dataplane.ServeOptions
	pool      dataplane.PoolSettings
	pprof     *pprofgate.Mode
	log       *cli.LogFlags
	accessLog *cli.AccessLogFlags

	listenerPorts bool    // -listen-listener-ports: dataplane.Options.ListenerPorts
	slashes       *string // -encoded-slashes: dataplane.Options.EncodedSlashes
	// -request-buffer and -buffer-memory: dataplane.Options.RequestBuffer
	// and BufferMemory.
	requestBuffer, bufferMemory byteSize
	// streams are the -stream-* flags and -max-streams.
	streams dataplane.StreamOptions
	// metricsDetail is -metrics-detail: dataplane.Options.MetricsDetail.
	metricsDetail metricsDetail
}

// parseFlags parses and checks the flags of the command called name. done
// is true when the command must return code right away (-h, a bad flag, a
// bad source).
func parseFlags(name string, args []string, stderr io.Writer) (f *flags, code int, done bool) {
	fs := cli.NewFlagSet(name, "serve a data-plane config from the controller (-controller) or a file (-config; SIGHUP reloads it)", stderr)
	f = &flags{}
	pool := http1.DefaultPoolSettings // the proxy's defaults, defined once
	fs.StringVar(&f.file, "config", "", "data-plane config `file` (JSON, proxycfg.Config)")
	fs.StringVar(&f.watch.URL, "controller", "", "controller `URL` to watch for config, e.g. https://tunnelgate-controller:9443")
	fs.StringVar(&f.watch.TokenFile, "token-file", "", "`file` with the bearer token for -controller (re-read for every request)")
	fs.StringVar(&f.watch.TunnelProtocol, "tunnel-protocol", os.Getenv("TUNNEL_TRANSPORT_PROTOCOL"),
		"the `protocol` the cloudflared sidecar runs the tunnel with (http2, quic, auto), reported to -controller: gRPC needs http2")
	fs.StringVar(&f.watch.CAFile, "ca-file", "", "PEM `file` of the CA that signed the controller's certificate (default: system roots)")
	fs.StringVar(&f.watch.CertFile, "client-cert", "", "PEM client certificate for a controller that requires one")
	fs.StringVar(&f.watch.KeyFile, "client-key", "", "PEM key of -client-cert")
	fs.StringVar(&f.watch.CacheFile, "config-cache", "", "`file` keeping the last config from the controller, served at start before the controller answers")
	fs.StringVar(&f.listen.Origin, "listen", "127.0.0.1:8080", "origin listener for cloudflared: host:port or unix:/path")
	fs.StringVar(&f.listen.OriginTLS, "listen-tls", "", "TLS origin listener (h2 and http/1.1), e.g. 127.0.0.1:8443")
	fs.StringVar(&f.listen.CertDir, "cert-dir", "", "directory for the generated TLS origin certificate and its CA")
	fs.StringVar(&f.listen.OriginServerName, "origin-server-name", origin.DefaultServerName,
		"`name` the generated TLS origin certificate is valid for, beside localhost: the GatewayClassConfig's spec.origin.serverName, which cloudflared checks")
	fs.StringVar(&f.listen.OriginCert, "tls-cert", "", "PEM certificate for -listen-tls (default: generated)")
	fs.StringVar(&f.listen.OriginKey, "tls-key", "", "PEM key for -listen-tls")
	fs.StringVar(&f.listen.OriginClientCA, "tls-client-ca", "", "PEM `file` of CAs: -listen-tls then admits only clients with a certificate they signed")
	fs.StringVar(&f.listen.Plain, "listen-plain", "", "listener for direct clients (HTTP/1.1 and h2c)")
	fs.BoolVar(&f.listen.Gateways, "listen-gateways", false, "serve each Gateway on the address the controller gave it (its port; HTTPS with its certificates); the addresses must be local")
	fs.BoolVar(&f.listenerPorts, "listen-listener-ports", false, "serve each listener of the config on its own port on every local address (the proxy of a Gateway's own data plane, behind its Service)")
	fs.StringVar(&f.listen.Admin, "admin", "127.0.0.1:9901", "admin listener (health, readiness, metrics, pprof); empty disables")
	f.pprof = cli.AddPprofFlag(fs)
	fs.BoolVar(&f.listen.OriginNetHTTP, "origin-nethttp", false, "serve the origin listener with net/http's server instead of tunnelgate's own")
	fs.IntVar(&f.pool.MaxIdle, "upstream-max-idle", pool.MaxIdle, "idle connections kept per backend endpoint")
	fs.IntVar(&f.pool.MaxConns, "upstream-max-conns", pool.MaxConns, "connections open per backend endpoint; beyond, requests get 503")
	fs.IntVar(&f.pool.MaxConnsPerClient, "upstream-max-conns-per-client", 0, "connections to one backend endpoint the requests of one client (Cf-Connecting-Ip behind the tunnel, else the peer address) may hold; beyond, its requests get 503 (0: a quarter of -upstream-max-conns)")
	fs.IntVar(&f.pool.MaxUploadConns, "upstream-max-upload-conns", 0, "connections to one backend endpoint that requests whose body is still arriving (longer than -request-buffer) may hold, a quarter of them per client; beyond, such a request gets 503 (0: half of -upstream-max-conns)")
	f.requestBuffer, f.bufferMemory = dataplane.DefaultRequestBuffer, dataplane.DefaultBufferMemory
	fs.Var(&f.requestBuffer, "request-buffer", "a request body to an HTTP/1.1 backend up to this `size` (e.g. 1MiB) is read whole before a backend connection is taken; a longer one is streamed")
	fs.Var(&f.bufferMemory, "buffer-memory", "`size` (e.g. 64MiB) the request and response bodies held whole may take together; a body that finds it taken is streamed")
	fs.DurationVar(&f.listen.BodyTimeout, "client-body-timeout", 60*time.Second, "a client's request body that sends nothing for this long gets 408")
	fs.DurationVar(&f.listen.WriteTimeout, "client-write-timeout", 60*time.Second, "a client that reads nothing of its response for this long is disconnected, and its backend connection released")
	fs.DurationVar(&f.pool.IdleTimeout, "upstream-idle-timeout", pool.IdleTimeout, "close upstream connections idle this long")
	fs.DurationVar(&f.pool.DialTimeout, "upstream-dial-timeout", pool.DialTimeout, "bound on connecting to a backend, TLS included")
	fs.Var(&f.metricsDetail, "metrics-detail", "what /metrics says of each route rule and cluster: `listener` (requests by status class or result; latency by listener) or route (with each rule's and cluster's latency histogram, and each cluster's endpoints, in-flight requests and connections: many more series)")
	addStreamFlags(fs, &f.streams)
	f.slashes = cli.AddEncodedSlashesFlag(fs)
	f.log = cli.AddLogFlags(fs)
	f.accessLog = cli.AddAccessLogFlags(fs)
	if code, done := cli.Parse(fs, args); done {
		return nil, code, true
	}
	if msg := checkSource(fs, f.file, f.watch.URL, f.watch.TokenFile); msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", name, msg)
		return nil, 2, true
	}
	if f.listen.Gateways && f.listenerPorts {
		fmt.Fprintf(stderr, "%s: -listen-gateways and -listen-listener-ports exclude each other: drop one\n", name)
		return nil, 2, true
	}
	return f, 0, false
}

// addStreamFlags adds the flags of TCPRoutes and TLSRoutes' relaying,
// read into o.
func addStreamFlags(fs *flag.FlagSet, o *dataplane.StreamOptions) {
	def := dataplane.DefaultStreamOptions()
	fs.DurationVar(&o.HandshakeTimeout, "stream-handshake-timeout", def.HandshakeTimeout, "a TLS listener's client that sends no whole ClientHello within this is disconnected")
	fs.DurationVar(&o.ConnectTimeout, "stream-connect-timeout", def.ConnectTimeout, "bound on connecting to one endpoint of a TCPRoute's or TLSRoute's backend (three endpoints are tried)")
	fs.DurationVar(&o.Idle, "stream-idle-timeout", def.Idle, "a TCPRoute's or TLSRoute's connection that moves no byte either way for this long is closed")
	fs.DurationVar(&o.HalfClose, "stream-half-close-timeout", def.HalfClose, "a TCPRoute's or TLSRoute's connection is closed this long after one side ended while the other goes on")
	fs.IntVar(&o.MaxStreams, "max-streams", def.MaxStreams, "connections the TCP and TLS listeners and origin ports hold at once; beyond, a new one is closed at once")
}

// checkSource says what is wrong with where the config comes from, or
// "": exactly one of -config and -controller, and the watch flags only
// with -controller.
func checkSource(fs *flag.FlagSet, file, controller, tokenFile string) string {
	switch {
	case file == "" && controller == "":
		return "-config is required unless -controller is given"
	case file != "" && controller != "":
		return "-config and -controller exclude each other"
	case controller != "" && tokenFile == "":
		return "-controller needs -token-file: the controller answers only proxies with its token"
	}
	if file != "" {
		var stray []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "token-file", "ca-file", "client-cert", "client-key", "config-cache", "tunnel-protocol":
				stray = append(stray, "-"+f.Name)
			}
		})
		if len(stray) > 0 {
			return fmt.Sprintf("%v only go with -controller", stray)
		}
	}
	return ""
}

// metricsDetail is the -metrics-detail flag, an observe.Detail by name.
type metricsDetail observe.Detail

func (d *metricsDetail) String() string { return observe.Detail(*d).String() }

func (d *metricsDetail) Set(s string) error {
	v, err := observe.ParseDetail(s)
	*d = metricsDetail(v)
	return err
}

// byteSize is a flag of a size in bytes: a number, with KiB, MiB or GiB
// after it for those units.
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	num, shift := s, uint(0)
	for suffix, sh := range map[string]uint{"KiB": 10, "MiB": 20, "GiB": 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			num, shift = rest, sh
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)>>shift {
		return fmt.Errorf("want a positive number of bytes, with KiB, MiB or GiB after it for those units (1MiB), at most 1TiB: %q", s)
	}
	*b = byteSize(n << shift)
	return nil
}
