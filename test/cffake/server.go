package cffake

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// apiPrefix is the path cloudflare-go's default base URL ends in; keeping it
// means request paths look exactly as they do against api.cloudflare.com.
const apiPrefix = "/client/v4"

// Options configures a Fake.
type Options struct {
	// Token is the API token every request must send as
	// "Authorization: Bearer <Token>". Empty turns the check off.
	Token string
}

// Call is one request the fake received.
type Call struct {
	Method string
	// Path is relative to the API base, e.g. "/zones/abc/dns_records"
	// (the full path for requests outside it).
	Path  string
	Query string // raw query string
	// Route is the matched pattern, e.g.
	// "PUT /accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations";
	// empty for unknown routes.
	Route  string
	Status int // 0 when the client went away during a Delay
	Body   []byte
}

// Fake is a running fake Cloudflare API. It is safe for concurrent use.
type Fake struct {
	opts      Options
	srv       *httptest.Server
	mux       *http.ServeMux
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex // guards the state below
	accounts []*account
	zones    []*zone
	tunnels  []*tunnel

	accessTags     []*accessTag
	accessPolicies []*accessPolicy
	accessApps     []*accessApp

	lbAccounts  map[*account]*lbAccount
	lbMonitors  []*lbMonitor
	lbPools     []*lbPool
	lbs         []*loadBalancer
	lbUnhealthy map[string]bool // "<pool ID>/<origin name>" set unhealthy

	faultMu sync.Mutex
	faults  []*faultState

	callMu sync.Mutex
	calls  []Call
}

// New starts a fake on 127.0.0.1 with a random port. Close it when done.
func New(opts Options) *Fake {
	f := &Fake{opts: opts, mux: http.NewServeMux(), closed: make(chan struct{})}
	f.routeAccounts()
	f.routeZones()
	f.routeTunnels()
	f.routeDNS()
	f.routeAccess()
	f.routeLoadBalancing()
	f.srv = httptest.NewServer(f)
	return f
}

// URL is the base URL for option.WithBaseURL, ending in "/client/v4/".
func (f *Fake) URL() string { return f.srv.URL + apiPrefix + "/" }

// Close stops the server, cutting short any Delay in progress.
func (f *Fake) Close() {
	f.closeOnce.Do(func() { close(f.closed) })
	f.srv.Close()
}

// Calls returns a copy of the requests received so far, oldest first.
func (f *Fake) Calls() []Call {
	f.callMu.Lock()
	defer f.callMu.Unlock()
	out := make([]Call, len(f.calls))
	copy(out, f.calls)
	return out
}

// ResetCalls forgets the recorded requests.
func (f *Fake) ResetCalls() {
	f.callMu.Lock()
	f.calls = nil
	f.callMu.Unlock()
}

// ServeHTTP handles one request: faults and delays first, then auth, then
// the route.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rel, inAPI := strings.CutPrefix(r.URL.Path, apiPrefix)
	inAPI = inAPI && strings.HasPrefix(rel, "/")

	// inner is what handlers and Fault.Match see: the path relative to the
	// base and, in Pattern, the route it matches.
	inner := r.Clone(r.Context())
	inner.Body = io.NopCloser(bytes.NewReader(body))
	call := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body}
	if inAPI {
		inner.URL.Path, inner.URL.RawPath = rel, ""
		call.Path = rel
		_, inner.Pattern = f.mux.Handler(inner)
		call.Route = inner.Pattern
	}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		call.Status = sw.status
		f.callMu.Lock()
		f.calls = append(f.calls, call)
		f.callMu.Unlock()
	}()

	if flt, ok := f.takeFault(inner, body); ok {
		if flt.Delay > 0 && !f.wait(r, flt.Delay) {
			// Drop the connection rather than answer 200 with no body.
			panic(http.ErrAbortHandler)
		}
		if flt.Status != 0 {
			writeFault(sw, flt)
			return
		}
	}
	if err := f.authorize(r); err != nil {
		writeError(sw, err)
		return
	}
	switch {
	case inner.Pattern != "":
		inner.Body = io.NopCloser(bytes.NewReader(body))
		f.mux.ServeHTTP(sw, inner)
	case inAPI && f.otherMethodMatches(inner):
		writeError(sw, newErr(http.StatusMethodNotAllowed, codeMethod, "Method not allowed for this route."))
	default:
		writeError(sw, notRoutable(call.Path))
	}
}

// wait sleeps for d unless the client gives up or the fake closes first.
func (f *Fake) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-f.closed:
	}
	return false
}

func (f *Fake) authorize(r *http.Request) error {
	if f.opts.Token == "" {
		return nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return newErr(http.StatusBadRequest, codeAuthMissing, "Missing X-Auth-Key, X-Auth-Email or Authorization headers")
	}
	got, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(f.opts.Token)) != 1 {
		return newErr(http.StatusForbidden, codeAuth, "Authentication error")
	}
	return nil
}

func (f *Fake) otherMethodMatches(r *http.Request) bool {
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := f.mux.Handler(probe); p != "" {
			return true
		}
	}
	return false
}

func notRoutable(path string) *apiError {
	return newErr(http.StatusNotFound, codeRoute,
		fmt.Sprintf("Could not route to %s, perhaps your object identifier is invalid?", path))
}

// endpoint is one route's logic. It runs with f.mu held and returns either
// a result or an *apiError.
type endpoint func(r *http.Request, body []byte) (reply, error)

type reply struct {
	result any
	info   *resultInfo // set for lists
}

func (f *Fake) handle(pattern string, ep endpoint) {
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		rep, err := ep(r, body)
		f.mu.Unlock()
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, envelope{Success: true, Errors: []errorInfo{}, Messages: []errorInfo{},
			Result: rep.result, ResultInfo: rep.info})
	})
}

type envelope struct {
	Success    bool        `json:"success"`
	Errors     []errorInfo `json:"errors"`
	Messages   []errorInfo `json:"messages"`
	Result     any         `json:"result"`
	ResultInfo *resultInfo `json:"result_info,omitempty"`
}

type errorInfo struct {
	Code    int          `json:"code"`
	Message string       `json:"message"`
	Source  *errorSource `json:"source,omitempty"`
}

type errorSource struct {
	Pointer string `json:"pointer"`
}

type resultInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
	TotalPages int `json:"total_pages"`
}

// apiError is a Cloudflare error response.
type apiError struct {
	status int
	info   errorInfo
}

func newErr(status, code int, msg string) *apiError {
	return &apiError{status: status, info: errorInfo{Code: code, Message: msg}}
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %d %s", e.status, e.info.Code, e.info.Message)
}

func writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = newErr(http.StatusInternalServerError, codeServerError, err.Error())
	}
	writeJSON(w, e.status, envelope{Errors: []errorInfo{e.info}, Messages: []errorInfo{}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"success":false,"errors":[{"code":10013,"message":"fake: encoding failed"}],"messages":[],"result":null}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// decodeBody reads a JSON object body, as Cloudflare rejects anything else.
func decodeBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return newErr(http.StatusBadRequest, codeBadBody, "Request body is invalid.")
	}
	return nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// newID returns a 32-hex-digit identifier like Cloudflare's zone, account
// and record IDs.
func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUID returns a random (version 4) UUID, the form of tunnel IDs.
func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
