package connector

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// ingress is a tunnel's ingress rules, ready to match.
type ingress []rule

type rule struct {
	hostname string         // "" matches every host; "*.d" every subdomain of d
	path     *regexp.Regexp // nil matches every path
	service  string         // as written, for errors
	status   int            // http_status:NNN
	origin   *url.URL       // http://host:port or https://host:port
	socket   string         // unix:PATH, PATH mapped to this machine
	request  originRequest  // the rule's originRequest, as written
	roots    *x509.CertPool // https://: the roots it verifies the origin with
	stream   string         // tcp://, ssh://, rdp://: the origin's host:port
	access   *accessCheck   // originRequest.access with required: true; nil none
}

// originRequest is the part of a rule's originRequest the stand-in models:
// the fields ctrl/cloudflare writes (see doc.go). Any other field refuses
// the document, so a field the controller starts to write is not silently
// ignored here.
type originRequest struct {
	HTTP2Origin      bool          `json:"http2Origin,omitempty"`
	OriginServerName string        `json:"originServerName,omitempty"`
	CAPool           string        `json:"caPool,omitempty"`
	Access           *accessConfig `json:"access,omitempty"`
}

// streamPorts are the ports cloudflared gives a stream service that
// names none (ingress/origin_service.go: tcp's is arbitrary).
var streamPorts = map[string]string{"tcp": "7864", "ssh": "22", "rdp": "3389"}

// parseIngress reads the "config" object the controller PUT to the
// Cloudflare API. hostPath maps a path as the connector's container sees
// it (a unix socket, a caPool file) to this machine's. certs maps an
// Access team to where its keys are read (Options.AccessCerts).
func parseIngress(raw json.RawMessage, hostPath func(string) string, certs map[string]string) (ingress, error) {
	var doc struct {
		Ingress []struct {
			Hostname      string          `json:"hostname"`
			Path          string          `json:"path"`
			Service       string          `json:"service"`
			OriginRequest json.RawMessage `json:"originRequest"`
		} `json:"ingress"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("ingress document: %w", err)
	}
	var in ingress
	for i, r := range doc.Ingress {
		rl := rule{hostname: strings.ToLower(r.Hostname), service: r.Service}
		if r.Path != "" {
			re, err := regexp.Compile(r.Path)
			if err != nil {
				return nil, fmt.Errorf("rule %d: path: %w", i+1, err)
			}
			rl.path = re
		}
		if len(r.OriginRequest) > 0 && string(r.OriginRequest) != "null" {
			d := json.NewDecoder(bytes.NewReader(r.OriginRequest))
			d.DisallowUnknownFields()
			if err := d.Decode(&rl.request); err != nil {
				return nil, fmt.Errorf("rule %d: originRequest (the stand-in models http2Origin, originServerName, caPool and access): %w", i+1, err)
			}
		}
		var err error
		if rl.access, err = newAccessCheck(rl.request.Access, certs); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		switch {
		case strings.HasPrefix(r.Service, "http_status:"):
			n, err := strconv.Atoi(strings.TrimPrefix(r.Service, "http_status:"))
			if err != nil || n < 100 || n > 999 {
				return nil, fmt.Errorf("rule %d: service %q", i+1, r.Service)
			}
			rl.status = n
		case strings.HasPrefix(r.Service, "unix:"):
			rl.socket = hostPath(strings.TrimPrefix(r.Service, "unix:"))
		case strings.HasPrefix(r.Service, "http://"), strings.HasPrefix(r.Service, "https://"):
			u, err := url.Parse(r.Service)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("rule %d: service %q", i+1, r.Service)
			}
			rl.origin = u
			if u.Scheme == "https" {
				if rl.roots, err = originRoots(rl.request.CAPool, hostPath); err != nil {
					return nil, fmt.Errorf("rule %d: %w", i+1, err)
				}
			}
		case streamPorts[strings.SplitN(r.Service, "://", 2)[0]] != "":
			u, err := url.Parse(r.Service)
			if err != nil || u.Hostname() == "" {
				return nil, fmt.Errorf("rule %d: service %q", i+1, r.Service)
			}
			port := u.Port()
			if port == "" {
				port = streamPorts[u.Scheme]
			}
			rl.stream = net.JoinHostPort(u.Hostname(), port)
		default:
			// unix+tls:, smb://, bastion and the rest: not modeled; such
			// a rule answers 502 (see doc.go).
		}
		in = append(in, rl)
	}
	return in, nil
}

// originRoots are the CAs an https:// origin is verified with: the
// system's, plus those of the caPool file when the rule names one, as
// cloudflared adds them. A caPool that cannot be read refuses the
// document.
func originRoots(caPool string, hostPath func(string) string) (*x509.CertPool, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if caPool == "" {
		return roots, nil
	}
	pem, err := os.ReadFile(hostPath(caPool))
	if err != nil {
		return nil, fmt.Errorf("originRequest.caPool: %w", err)
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("originRequest.caPool %s: no PEM certificate in it", caPool)
	}
	return roots, nil
}

// match returns the first rule that takes the request, or nil.
func (in ingress) match(host, path string) *rule {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	for i := range in {
		r := &in[i]
		switch {
		case r.hostname == "":
		case strings.HasPrefix(r.hostname, "*."):
			if !strings.HasSuffix(host, r.hostname[1:]) {
				continue
			}
		case r.hostname != host:
			continue
		}
		if r.path != nil && !r.path.MatchString(path) {
			continue
		}
		return r
	}
	return nil
}
