//lint:file-ignore ST1005 the errors repeat cloudflared's own messages, capitals and all, as the API returns them

package cffake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// ingressRule is the part of a rule the checks below read; the document is
// stored as sent.
type ingressRule struct {
	Hostname      string          `json:"hostname"`
	Path          string          `json:"path"`
	Service       string          `json:"service"`
	OriginRequest json.RawMessage `json:"originRequest"`
}

// validateTunnelConfig applies the checks cloudflared applies before it
// accepts a configuration, so a document the fake stores is one a real
// connector would run. It returns the document compacted.
func validateTunnelConfig(raw json.RawMessage) (json.RawMessage, error) {
	var doc struct {
		Ingress       []ingressRule   `json:"ingress"`
		OriginRequest json.RawMessage `json:"originRequest"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("config must be an object")
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("config is malformed: %v", err)
	}
	if len(doc.Ingress) == 0 {
		return nil, errors.New("The config doesn't contain any ingress rules")
	}
	if err := checkOriginRequest("originRequest", doc.OriginRequest); err != nil {
		return nil, err
	}
	for i, r := range doc.Ingress {
		if err := checkRule(i, len(doc.Ingress), r); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func checkRule(i, n int, r ingressRule) error {
	if err := checkService(r.Service); err != nil {
		return fmt.Errorf("Rule #%d: %v", i+1, err)
	}
	if strings.Contains(r.Hostname, ":") {
		return errors.New("Hostname cannot contain a port")
	}
	if strings.LastIndex(r.Hostname, "*") > 0 {
		return errors.New(`Hostname patterns can have at most one wildcard character ("*") and it can only be used for subdomains, e.g. "*.example.com"`)
	}
	catchAll := (r.Hostname == "" || r.Hostname == "*") && r.Path == ""
	switch last := i == n-1; {
	case last && !catchAll:
		return errors.New("The last ingress rule must match all URLs (i.e. it should not have a hostname or path filter)")
	case !last && catchAll:
		return fmt.Errorf("Rule #%d is matching the hostname '%s', but this will match every hostname, meaning the rules which follow it will never be triggered.", i+1, r.Hostname)
	}
	if r.Path != "" {
		if _, err := regexp.Compile(r.Path); err != nil {
			return fmt.Errorf("Rule #%d has an invalid regex: %v", i+1, err)
		}
	}
	return checkOriginRequest(fmt.Sprintf("ingress[%d].originRequest", i), r.OriginRequest)
}

// checkService accepts the service forms cloudflared knows.
func checkService(s string) error {
	switch {
	case s == "":
		return errors.New("service is required")
	case strings.HasPrefix(s, "unix:"), strings.HasPrefix(s, "unix+tls:"),
		s == "hello_world", s == "hello-world", s == "bastion", s == "socks-proxy":
		return nil
	case strings.HasPrefix(s, "http_status:"):
		code, err := strconv.Atoi(strings.TrimPrefix(s, "http_status:"))
		if err != nil || code < 100 || code > 999 {
			return fmt.Errorf("invalid HTTP status code in %q", s)
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Hostname() == "" {
		return fmt.Errorf("%s is an invalid address, please make sure it has a scheme and a hostname", s)
	}
	if u.Path != "" {
		return fmt.Errorf("%s is an invalid address, ingress rules don't support proxying to a different path on the origin service", s)
	}
	return nil
}

// Durations and counts in originRequest are whole numbers (seconds); the
// API refuses Go-style strings such as "30s".
var (
	originInts  = []string{"connectTimeout", "tlsTimeout", "tcpKeepAlive", "keepAliveTimeout", "keepAliveConnections", "proxyPort"}
	originBools = []string{"noTLSVerify", "disableChunkedEncoding", "http2Origin", "noHappyEyeballs", "matchSNItoHost", "bastionMode"}
)

func checkOriginRequest(where string, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("%s must be an object", where)
	}
	for _, k := range originInts {
		if v, ok := fields[k]; ok {
			var n float64
			if json.Unmarshal(v, &n) != nil || n != math.Trunc(n) || n < 0 {
				return fmt.Errorf("%s.%s must be a whole number of seconds, got %s", where, k, v)
			}
		}
	}
	for _, k := range originBools {
		if v, ok := fields[k]; ok {
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return fmt.Errorf("%s.%s must be a boolean, got %s", where, k, v)
			}
		}
	}
	return nil
}
