package cffake

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Fault makes matching requests fail, slow, or both, before auth and
// routing, the way the edge or a rate limiter would.
type Fault struct {
	// Match selects requests; nil matches all. Its request carries the path
	// relative to the API base, and in Pattern the route (see Call.Route).
	// It must not call Fail or ClearFaults.
	Match func(*http.Request) bool
	// Status is the HTTP status to answer with; 0 answers normally (after
	// Delay).
	Status int
	// RetryAfter is sent as Retry-After: whole seconds as an integer, like
	// Cloudflare; a fraction as a decimal, which cloudflare-go honours and
	// keeps tests fast.
	RetryAfter time.Duration
	// Times is how many matching requests the fault applies to; 0 or less
	// means until ClearFaults.
	Times int
	// Delay holds the response back; a client that gives up (context
	// cancelled) gets nothing and is recorded with Status 0.
	Delay time.Duration
	// Code and Message override the error body; the default is 971 for
	// 429, 10000 for 401/403 and 10013 otherwise.
	Code    int
	Message string
	// RawBody, when set, is sent verbatim as text/plain instead of the JSON
	// envelope, like the edge's own error pages.
	RawBody string
}

// Route returns a Fault.Match that selects one route pattern, e.g.
// Route("PUT /accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations").
func Route(pattern string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Pattern == pattern }
}

type faultState struct {
	Fault
	left int // remaining uses; ignored when Times <= 0
}

// Fail adds a fault. Faults are tried in the order added; the first match
// applies.
func (f *Fake) Fail(flt Fault) {
	f.faultMu.Lock()
	f.faults = append(f.faults, &faultState{Fault: flt, left: flt.Times})
	f.faultMu.Unlock()
}

// ClearFaults removes all faults.
func (f *Fake) ClearFaults() {
	f.faultMu.Lock()
	f.faults = nil
	f.faultMu.Unlock()
}

// takeFault finds the first fault matching r and uses it up once.
func (f *Fake) takeFault(r *http.Request, body []byte) (Fault, bool) {
	f.faultMu.Lock()
	defer f.faultMu.Unlock()
	for i, fs := range f.faults {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if fs.Match != nil && !fs.Match(r) {
			continue
		}
		if fs.Times > 0 {
			fs.left--
			if fs.left == 0 {
				f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
			}
		}
		return fs.Fault, true
	}
	return Fault{}, false
}

func writeFault(w http.ResponseWriter, flt Fault) {
	if flt.RetryAfter > 0 {
		secs := flt.RetryAfter.Seconds()
		v := strconv.FormatFloat(secs, 'f', -1, 64)
		if flt.RetryAfter%time.Second == 0 {
			v = strconv.Itoa(int(secs))
		}
		w.Header().Set("Retry-After", v)
	}
	if flt.RawBody != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(flt.Status)
		io.WriteString(w, flt.RawBody)
		return
	}
	code, msg := flt.Code, flt.Message
	if code == 0 {
		switch flt.Status {
		case http.StatusTooManyRequests:
			code = codeRateLimited
		case http.StatusUnauthorized, http.StatusForbidden:
			code = codeAuth
		default:
			code = codeServerError
		}
	}
	if msg == "" {
		switch code {
		case codeRateLimited:
			msg = "Please wait and consider throttling your request speed"
		case codeAuth:
			msg = "Authentication error"
		default:
			msg = http.StatusText(flt.Status)
		}
	}
	writeError(w, newErr(flt.Status, code, msg))
}
