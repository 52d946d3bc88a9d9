package proxycmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The proxy command with its access log on and tracing asked for by the
// standard OTEL_* variables: a request is written to the log file as a
// JSON line, and its spans reach an OTLP/HTTP collector (a fake one on
// loopback) carrying the route's name, with the log's trace id.
func TestProxyCommandAccessLogAndTracing(t *testing.T) {
	traces := make(chan []byte, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			traces <- b
		}
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "traced "+r.Header.Get("Traceparent")[:2])
	}))
	defer backend.Close()
	dir := t.TempDir()
	cfg := proxycfg.Config{
		Schema: proxycfg.SchemaVersion, Version: "obs",
		Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "gw/http", Port: 80}},
		Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "shop", Name: "storefront", Listeners: []string{"gw/http"},
			Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "web", Weight: 1}}}}}},
		Clusters: []proxycfg.Cluster{{Name: "web", Protocol: proxycfg.ProtoHTTP1,
			Endpoints: []proxycfg.Endpoint{{Address: strings.TrimPrefix(backend.URL, "http://")}}}},
	}
	raw, _ := json.Marshal(cfg)
	cfgFile, logFile := filepath.Join(dir, "config.json"), filepath.Join(dir, "access.log")
	if err := os.WriteFile(cfgFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b, stop, stderr := runProxyCommand(t, "-config", cfgFile, "-access-log", logFile, "-access-log-omit-query", "-log-format", "json")

	waitGet(t, "http://"+b.Origin+"/cart?session=secret", "shop.example.com", "traced 00")
	if code := stop(); code != 0 {
		t.Fatalf("proxy exited %d:\n%s", code, stderr)
	}

	text, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line = nil
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
	}
	if line["route"] != "shop/storefront" || line["path"] != "/cart" || line["status"] != float64(200) {
		t.Errorf("last access log line %v: want route shop/storefront, path /cart (query omitted), status 200", line)
	}
	traceID, _ := line["trace_id"].(string)
	if len(traceID) != 32 {
		t.Fatalf("access log line has trace_id %q", line["trace_id"])
	}

	// Spans are exported at shutdown at the latest. OTLP protobuf carries
	// strings as they are and trace ids as 16 raw bytes.
	var got []byte
	deadline := time.After(10 * time.Second)
	for !bytes.Contains(got, []byte("GET shop/storefront")) {
		select {
		case b := <-traces:
			got = append(got, b...)
		case <-deadline:
			t.Fatalf("no span named %q reached the collector", "GET shop/storefront")
		}
	}
	if !bytes.Contains(got, []byte("tunnelgate-proxy")) {
		t.Errorf("spans carry no service.name tunnelgate-proxy")
	}
	id := make([]byte, 16)
	for i := range id {
		id[i] = unhex(traceID[2*i])<<4 | unhex(traceID[2*i+1])
	}
	if !bytes.Contains(got, id) {
		t.Errorf("the access log's trace_id %s is in no exported span", traceID)
	}
	// The process log is JSON, as asked.
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !json.Valid([]byte(first)) {
		t.Errorf("-log-format json: first log line %q is not JSON", first)
	}
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

func TestObservabilityFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-log-level", "loud"}, "", `-log-level "loud"`},
		{[]string{"-log-format", "xml"}, "", `-log-format "xml"`},
		{[]string{"-access-log", "stdout", "-access-log-sample", "0"}, "", "-access-log-sample 0"},
		{[]string{"-access-log", filepath.Join(t.TempDir(), "no", "such", "dir")}, "", "-access-log:"},
		{nil, "sometimes", `OTEL_TRACES_SAMPLER "sometimes"`},
	} {
		t.Run(c.want, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
				t.Setenv("OTEL_TRACES_SAMPLER", c.env)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"-config", "c.json"}, c.args...)
			if code := Main(context.Background(), "tunnelgate proxy", args, &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, stderr.String(), c.want)
			}
		})
	}
}
