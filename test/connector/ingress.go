package connector

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
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
	origin   *url.URL       // http://host:port
	socket   string         // unix:PATH, PATH mapped to this machine
}

// parseIngress reads the "config" object the controller PUT to the
// Cloudflare API. hostPath maps a unix socket's path as the connector's
// container sees it to this machine's.
func parseIngress(raw json.RawMessage, hostPath func(string) string) (ingress, error) {
	var doc struct {
		Ingress []struct {
			Hostname string `json:"hostname"`
			Path     string `json:"path"`
			Service  string `json:"service"`
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
		switch {
		case strings.HasPrefix(r.Service, "http_status:"):
			n, err := strconv.Atoi(strings.TrimPrefix(r.Service, "http_status:"))
			if err != nil || n < 100 || n > 999 {
				return nil, fmt.Errorf("rule %d: service %q", i+1, r.Service)
			}
			rl.status = n
		case strings.HasPrefix(r.Service, "unix:"):
			rl.socket = hostPath(strings.TrimPrefix(r.Service, "unix:"))
		case strings.HasPrefix(r.Service, "http://"):
			u, err := url.Parse(r.Service)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("rule %d: service %q", i+1, r.Service)
			}
			rl.origin = u
		default:
			// https://, unix+tls:, tcp:// and the rest: not modeled; such a
			// rule answers 502 (see doc.go).
		}
		in = append(in, rl)
	}
	return in, nil
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
