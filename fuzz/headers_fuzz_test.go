package fuzz

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// FuzzHeaderFilters builds a rule whose RequestHeaderModifier and
// ResponseHeaderModifier come from fuzzed names and values, and checks
// Load's verdict against a reference (names must be tokens, values free of
// control characters, and the headers the proxy manages are refused). A
// config Load accepts serves one request through a real proxy listener to
// a loopback backend, and the headers on both sides must be what applying
// set, then add, then remove to the client's (or backend's) headers gives.
//
// An empty name leaves that operation out.

// hdrValueOK reports whether v is a field value: no control characters
// but HTAB, no DEL.
func hdrValueOK(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// hdrManaged lists the headers no modifier may touch: framing, Host and
// the hop-by-hop fields of RFC 9110 §7.6.1.
var hdrManaged = map[string]bool{
	"Host": true, "Content-Length": true, "Expect": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
}

// hdrProxyWritten are the request headers the proxy writes itself. A
// modifier that sets or removes one overrides the proxy's value
// (docs/proxy.md); one that only adds sends its values besides the
// proxy's, in an order the proxy chooses.
var hdrProxyWritten = map[string]bool{"X-Forwarded-For": true, "X-Forwarded-Proto": true}

// hdrOp is one fuzzed operation: set, add or remove of name.
type hdrOp struct {
	kind        byte // 's', 'a', 'r'
	name, value string
}

func hdrModifier(ops []hdrOp) *proxycfg.HeaderModifier {
	m := &proxycfg.HeaderModifier{}
	for _, o := range ops {
		switch o.kind {
		case 's':
			m.Set = append(m.Set, proxycfg.Header{Name: o.name, Value: o.value})
		case 'a':
			m.Add = append(m.Add, proxycfg.Header{Name: o.name, Value: o.value})
		case 'r':
			m.Remove = append(m.Remove, o.name)
		}
	}
	return m
}

// hdrApply is the reference: set, then add, then remove on h.
func hdrApply(h map[string][]string, ops []hdrOp) {
	trim := func(v string) string { return strings.Trim(v, " \t") }
	for _, o := range ops {
		if o.kind == 's' {
			h[textproto.CanonicalMIMEHeaderKey(o.name)] = []string{trim(o.value)}
		}
	}
	for _, o := range ops {
		if o.kind == 'a' {
			k := textproto.CanonicalMIMEHeaderKey(o.name)
			h[k] = append(h[k], trim(o.value))
		}
	}
	for _, o := range ops {
		if o.kind == 'r' {
			delete(h, textproto.CanonicalMIMEHeaderKey(o.name))
		}
	}
}

// hdrOverrides reports whether ops set or remove the canonical name k.
func hdrOverrides(ops []hdrOp, k string) bool {
	for _, o := range ops {
		if o.kind != 'a' && textproto.CanonicalMIMEHeaderKey(o.name) == k {
			return true
		}
	}
	return false
}

// hdrValid reports whether Load must accept modifiers made of ops.
func hdrValid(ops []hdrOp) bool {
	for _, o := range ops {
		if !refIsToken(o.name) || !hdrValueOK(o.value) || hdrManaged[textproto.CanonicalMIMEHeaderKey(o.name)] {
			return false
		}
	}
	return true
}

// hdrOps makes the operations of the non-empty names.
func hdrOps(setName, setValue, addName, addValue, rmName string) []hdrOp {
	var ops []hdrOp
	if setName != "" {
		ops = append(ops, hdrOp{'s', setName, setValue})
	}
	if addName != "" {
		ops = append(ops, hdrOp{'a', addName, addValue})
	}
	if rmName != "" {
		ops = append(ops, hdrOp{'r', rmName, ""})
	}
	return ops
}

// hdrEchoBackend answers with the request's headers as JSON (values as
// bytes, so that obs-text survives) and first sets a response header
// "backend" for every name in the "emit" query parameters.
func hdrEchoBackend(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	for _, name := range r.URL.Query()["emit"] {
		h[textproto.CanonicalMIMEHeaderKey(name)] = []string{"backend"}
	}
	seen := map[string][][]byte{}
	for k, vs := range r.Header {
		for _, v := range vs {
			seen[k] = append(seen[k], []byte(v))
		}
	}
	json.NewEncoder(w).Encode(seen)
}

func FuzzHeaderFilters(f *testing.F) {
	backend := httptest.NewServer(http.HandlerFunc(hdrEchoBackend))
	p := quietProxy()
	front := httptest.NewServer(p.Handler(0, true))
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	f.Cleanup(func() {
		client.CloseIdleConnections()
		front.Close()
		p.Close()
		backend.Close()
	})
	backendAddr := backend.Listener.Addr().String()

	// More seeds, named for what they try, are in
	// testdata/fuzz/FuzzHeaderFilters.
	f.Add(false, "X-Set", "v", "X-Add", "w", "X-Rm", "X-Resp", "r", "X-Resp-Add", "q", "X-Resp-Rm")

	f.Fuzz(func(t *testing.T, onBackend bool, reqSet, reqSetV, reqAdd, reqAddV, reqRm, respSet, respSetV, respAdd, respAddV, respRm string) {
		reqOps := hdrOps(reqSet, reqSetV, reqAdd, reqAddV, reqRm)
		respOps := hdrOps(respSet, respSetV, respAdd, respAddV, respRm)
		filters := []proxycfg.Filter{
			{Type: proxycfg.FilterRequestHeaderModifier, RequestHeaderModifier: hdrModifier(reqOps)},
			{Type: proxycfg.FilterResponseHeaderModifier, ResponseHeaderModifier: hdrModifier(respOps)},
		}
		rule := proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "be", Weight: 1}}}
		if onBackend {
			rule.Backends[0].Filters = filters
		} else {
			rule.Filters = filters
		}
		cfg := &proxycfg.Config{
			Schema:    proxycfg.SchemaVersion,
			Version:   "fuzz",
			Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "gw/http", Port: 80}},
			Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "ns", Name: "r", Listeners: []string{"gw/http"},
				Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Rules: []proxycfg.Rule{rule}}},
			Clusters: []proxycfg.Cluster{{Name: "be", Protocol: proxycfg.ProtoHTTP1, Endpoints: []proxycfg.Endpoint{{Address: backendAddr}}}},
		}
		err := p.Load(cfg)
		valid := hdrValid(reqOps) && hdrValid(respOps)
		switch {
		case valid && err != nil:
			t.Fatalf("Load rejected valid modifiers: %v", err)
		case !valid && err == nil:
			t.Fatalf("Load accepted invalid modifiers: request %q, response %q", reqOps, respOps)
		case err != nil:
			return
		}

		// The client sends "client" for every request name the modifiers
		// touch, so that set, add and remove all have something to act on.
		// Expect is not sent (net/http answers 417 to an unknown one), nor
		// checked: a backend answers 417 to what a filter sets.
		canon := textproto.CanonicalMIMEHeaderKey
		for _, o := range reqOps {
			if canon(o.name) == "Expect" {
				return
			}
		}
		sent := map[string][]string{"User-Agent": {"fuzz-agent"}}
		for _, o := range reqOps {
			sent[canon(o.name)] = []string{"client"}
		}
		q := url.Values{}
		for _, o := range respOps {
			q.Add("emit", o.name)
		}
		req, err := http.NewRequest("GET", front.URL+"/fuzz?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "app.example.com"
		for k, v := range sent {
			req.Header[k] = slices.Clone(v)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("request through the proxy: %v", err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		if res.StatusCode != 200 {
			t.Fatalf("status %d: %q", res.StatusCode, body)
		}
		var seenBytes map[string][][]byte
		if err := json.Unmarshal(body, &seenBytes); err != nil {
			t.Fatalf("backend answer %q: %v", body, err)
		}

		wantReq := map[string][]string{}
		for k, v := range sent {
			wantReq[k] = slices.Clone(v)
		}
		hdrApply(wantReq, reqOps)
		// What the proxy writes itself for a client that sent "client" to
		// the trusted listener, unless a set or remove overrides it.
		proxyValue := map[string]string{"X-Forwarded-For": "client, 127.0.0.1", "X-Forwarded-Proto": "http"}
		for _, o := range reqOps {
			k := canon(o.name)
			var got []string
			for _, v := range seenBytes[k] {
				got = append(got, string(v))
			}
			want := wantReq[k]
			if hdrProxyWritten[k] && !hdrOverrides(reqOps, k) {
				// Only added to: the proxy's value and the added ones, in
				// any order.
				want = append([]string{proxyValue[k]}, want[1:]...)
				got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("request header %s: backend saw %q, want %q (ops %q)", k, got, want, reqOps)
			}
		}

		wantResp := map[string][]string{"Content-Type": {"application/json"}}
		for _, o := range respOps {
			wantResp[canon(o.name)] = []string{"backend"}
		}
		hdrApply(wantResp, respOps)
		for _, o := range respOps {
			k := canon(o.name)
			if k == "Date" {
				continue // net/http writes its own when there is none
			}
			if got := res.Header[k]; !slices.Equal(got, wantResp[k]) {
				t.Fatalf("response header %s: client got %q, want %q (ops %q)", k, got, wantResp[k], respOps)
			}
		}
	})
}
