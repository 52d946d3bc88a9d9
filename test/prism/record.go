package prism

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Exchange is one request to the Server and Prism's verdict on it.
type Exchange struct {
	Method string
	Path   string // path and query, as sent
	// RequestBody is the body sent (at most 1 MiB kept).
	RequestBody []byte
	Status      int
	// Violations are what Prism found wrong, from its sl-violations
	// header: the request's (Location starts with "request"), and the
	// spec's own canned response's against its schema ("response"), which
	// are the spec's problem and never make the request Rejected.
	Violations []Violation
	// ResponseBody is Prism's answer when Status is 4xx or 5xx: a problem
	// document ({"type","title","detail","validation":[...]}) when the
	// operation declares no error response, else the spec's example.
	ResponseBody []byte
}

// Violation is one complaint of Prism's validator.
type Violation struct {
	Location []string `json:"location"` // e.g. ["request", "body", "config", "ingress", "1"]
	Severity string   `json:"severity"` // "Error", "Warning", ...
	Code     any      `json:"code"`     // a JSON Schema keyword ("required", "type"), or 401
	Message  string   `json:"message"`
}

func (v Violation) String() string {
	return strings.Join(v.Location, ".") + ": " + v.Message
}

// Rejected reports whether Prism refused the request: a 4xx or 5xx answer,
// or a request violation of severity Error.
func (e Exchange) Rejected() bool {
	return e.Status >= 400 || len(e.RequestErrors()) > 0
}

// RequestErrors returns the request's violations of severity Error, each
// once (Prism repeats a complaint for every branch of an anyOf it tried).
func (e Exchange) RequestErrors() []Violation {
	var out []Violation
	for _, v := range e.Violations {
		if v.Severity != "Error" || len(v.Location) == 0 || v.Location[0] != "request" {
			continue
		}
		if !slices.ContainsFunc(out, func(o Violation) bool { return o.String() == v.String() }) {
			out = append(out, v)
		}
	}
	return out
}

// String is one line: method, path, status and the complaints, as a test
// failure shows them.
func (e Exchange) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %d", e.Method, e.Path, e.Status)
	// Prism complains once per branch of an anyOf (a DNS record body has
	// twenty), so the list can be long: show the first few.
	const shown = 8
	errs := e.RequestErrors()
	for i, v := range errs[:min(len(errs), shown)] {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	if len(errs) > shown {
		fmt.Fprintf(&b, "; and %d more", len(errs)-shown)
	}
	if len(errs) == 0 && e.Status >= 400 && len(e.ResponseBody) > 0 {
		b.WriteString(": ")
		b.Write(bytes.TrimSpace(e.ResponseBody))
	}
	return b.String()
}

const maxKept = 1 << 20

// recorder is a reverse proxy in front of Prism that keeps an Exchange per
// request, so a test sees Prism's verdict whatever client it used.
type recorder struct {
	mu        sync.Mutex
	exchanges []Exchange
}

func (r *recorder) add(e Exchange) {
	r.mu.Lock()
	r.exchanges = append(r.exchanges, e)
	r.mu.Unlock()
}

func (r *recorder) all() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.exchanges)
}

// serveProxy starts the recording proxy on a loopback port and sets s.url.
func (s *Server) serveProxy() error {
	target, err := url.Parse(s.prism)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.proxy = &recorder{}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		ModifyResponse: func(resp *http.Response) error {
			e := resp.Request.Context().Value(exchangeKey{}).(*Exchange)
			e.Status = resp.StatusCode
			e.Violations = parseViolations(resp.Header.Get("sl-violations"))
			if resp.StatusCode >= 400 {
				body, err := io.ReadAll(io.LimitReader(resp.Body, maxKept))
				resp.Body.Close()
				if err != nil {
					return err
				}
				e.ResponseBody = body
				resp.Body = io.NopCloser(bytes.NewReader(body))
			}
			// Recorded before the client can have the answer, so that
			// Last right after a call sees that call.
			s.proxy.add(*e)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			e := req.Context().Value(exchangeKey{}).(*Exchange)
			e.Status = http.StatusBadGateway
			e.ResponseBody = []byte("prism did not answer: " + err.Error())
			s.proxy.add(*e)
			http.Error(w, string(e.ResponseBody), http.StatusBadGateway)
		},
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		e := &Exchange{Method: req.Method, Path: req.URL.RequestURI()}
		if req.Body != nil {
			body, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			e.RequestBody = body[:min(len(body), maxKept)]
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		rp.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), exchangeKey{}, e)))
	})
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(l) }()
	s.url = "http://" + l.Addr().String() + "/"
	return nil
}

// exchangeKey carries a request's *Exchange from the handler to the proxy's
// hooks.
type exchangeKey struct{}

// parseViolations reads Prism's sl-violations header: a JSON array, which
// Prism cuts when it is long and then prefixes "Too many violations! ".
// The whole violations of a cut list are kept, and a warning says the rest
// is in Prism's log.
func parseViolations(h string) []Violation {
	if h == "" {
		return nil
	}
	rest, cut := strings.CutPrefix(h, "Too many violations! ")
	var out []Violation
	dec := json.NewDecoder(strings.NewReader(rest))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return []Violation{{Location: []string{"prism"}, Severity: "Warning", Message: "unreadable sl-violations header: " + h}}
	}
	for dec.More() {
		var v Violation
		if err := dec.Decode(&v); err != nil {
			cut = true
			break
		}
		out = append(out, v)
	}
	if cut {
		out = append(out, Violation{Location: []string{"prism"}, Severity: "Warning",
			Message: fmt.Sprintf("Prism cut its list of violations after %d; the rest is in its log", len(out))})
	}
	return out
}
