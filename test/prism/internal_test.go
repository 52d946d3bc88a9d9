package prism

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// TestVersions keeps the cache names Start looks for the ones install.sh
// writes: Prism's version as install.sh and package.json pin it, and
// cloudflare-go's as go.mod requires it.
func TestVersions(t *testing.T) {
	script, err := os.ReadFile("install.sh")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^prism_version=(\S+)$`).FindSubmatch(script); m == nil || string(m[1]) != PrismVersion {
		t.Errorf("install.sh installs Prism %q; PrismVersion is %s", m, PrismVersion)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile("package.json")
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Dependencies["@stoplight/prism-cli"] != PrismVersion {
		t.Errorf("package.json pins @stoplight/prism-cli %q (%v); PrismVersion is %s", pkg.Dependencies["@stoplight/prism-cli"], err, PrismVersion)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	b, err = os.ReadFile("package-lock.json")
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if got := lock.Packages["node_modules/@stoplight/prism-cli"].Version; err != nil || got != PrismVersion {
		t.Errorf("package-lock.json locks @stoplight/prism-cli %q (%v); run `npm install --package-lock-only` in test/prism", got, err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := "nothing"
	if m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/cloudflare/cloudflare-go/v7\s+(v\S+)`).FindSubmatch(gomod); m != nil {
		got = string(m[1])
	}
	if got != CloudflareGoVersion {
		t.Errorf("go.mod requires cloudflare-go %s; CloudflareGoVersion is %s (the spec comes from that module)", got, CloudflareGoVersion)
	}
}

// TestMissingInstall: without `make prism`, Start fails and says to run it.
func TestMissingInstall(t *testing.T) {
	t.Setenv("TUNNELGATE_PRISM_CACHE", t.TempDir())
	_, err := Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "run `make prism`") {
		t.Fatalf("want an error saying to run make prism, got %v", err)
	}
}

// TestTrim on a small document: the kept paths, the paths that could match
// the same requests, and the components they reach, nothing else.
func TestTrim(t *testing.T) {
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	op := func(schema string) map[string]any {
		return map[string]any{"get": map[string]any{"responses": map[string]any{"200": map[string]any{
			"content": map[string]any{"application/json": map[string]any{"schema": ref(schema)}}}}}}
	}
	doc := map[string]any{
		"paths": map[string]any{
			"/zones/{zone_id}/records/{id}":   op("Record"),
			"/zones/{zone_id}/records/export": op("Export"), // same requests as the one above
			"/zones/{zone_id}/records":        op("List"),   // fewer segments
			"/zones/{zone_id}/other/{id}":     op("Other"),  // "other" is not "records"
		},
		"components": map[string]any{
			"schemas": map[string]any{
				"Record":  map[string]any{"properties": map[string]any{"meta": ref("Meta~1v1")}},
				"Meta/v1": map[string]any{"type": "object"},
				"Export":  map[string]any{"type": "string"},
				"List":    map[string]any{"type": "array"},
				"Other":   map[string]any{"type": "object"},
			},
			"securitySchemes": map[string]any{"api_token": map[string]any{"type": "http"}},
		},
	}
	if err := trim(doc, []string{"/zones/{zone_id}/records/{id}"}); err != nil {
		t.Fatal(err)
	}
	keys := func(m any) []string {
		var out []string
		for k := range m.(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	comps := doc["components"].(map[string]any)
	for what, c := range map[string][2]any{
		"paths":           {keys(doc["paths"]), []string{"/zones/{zone_id}/records/export", "/zones/{zone_id}/records/{id}"}},
		"schemas":         {keys(comps["schemas"]), []string{"Export", "Meta/v1", "Record"}},
		"securitySchemes": {keys(comps["securitySchemes"]), []string{"api_token"}},
	} {
		if !slices.Equal(c[0].([]string), c[1].([]string)) {
			t.Errorf("%s kept: %v, want %v", what, c[0], c[1])
		}
	}
	if err := trim(doc, []string{"/nowhere"}); err == nil {
		t.Error("trimming to a path the spec lacks did not fail")
	}
}

// TestDefaultSpec derives the document Start serves from the cached spec:
// the patches apply and every path of DefaultPaths is there.
func TestDefaultSpec(t *testing.T) {
	_, source, err := installed()
	if err != nil {
		t.Fatal(err)
	}
	b, err := derivedSpec(source, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var extra []string
	for p := range doc.Paths {
		if !slices.Contains(DefaultPaths, p) {
			extra = append(extra, p)
		}
	}
	for _, p := range DefaultPaths {
		if doc.Paths[p] == nil {
			t.Errorf("%s missing", p)
		}
	}
	slices.Sort(extra)
	t.Logf("%d paths (%d KB), with these kept for routing: %v", len(doc.Paths), len(b)/1000, extra)
}

// TestPrismDiesWithTestProcess runs this test binary again as a test that
// starts Prism and panics without Stop, then checks that Prism died with it
// and that the next Start removes the directory it left.
func TestPrismDiesWithTestProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashingHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PRISM_CRASH_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, dir := 0, ""
	var log strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if rest, ok := strings.CutPrefix(sc.Text(), "prism pid "); ok {
			pid, _ = strconv.Atoi(rest)
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "dir "); ok {
			dir = rest
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("helper did not crash; output:\n%s", log.String())
	}
	if pid == 0 || dir == "" {
		t.Fatalf("helper reported pid %d dir %q; output:\n%s", pid, dir, log.String())
	}
	if !testproc.WaitDead(pid, 10*time.Second) {
		t.Fatalf("prism (%d) outlived the crashed test process", pid)
	}
	testproc.RemoveStaleDirs(dirPrefix)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stale directory %s not removed: %v", dir, err)
	}
}

// TestCrashingHelper is the crashing half of the test above; it does
// nothing in a normal run.
func TestCrashingHelper(t *testing.T) {
	if os.Getenv("PRISM_CRASH_HELPER") == "" {
		return
	}
	s, err := StartWith(t.Context(), Options{Paths: []string{"/accounts"}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("prism pid %d\n", s.cmd.Process.Pid)
	fmt.Printf("dir %s\n", s.dir)
	panic("crash on purpose, without Stop")
}

// TestParseViolations reads Prism's sl-violations header, whole and cut.
func TestParseViolations(t *testing.T) {
	whole := `[{"location":["request","body"],"severity":"Error","code":"required","message":"Request body must have required property 'type'"},` +
		`{"location":["response","body"],"severity":"Error","code":"required","message":"Response body must have required property 'id'"}]`
	e := Exchange{Method: "POST", Path: "/zones/z/dns_records", Status: 422, Violations: parseViolations(whole)}
	if len(e.Violations) != 2 || e.Violations[1].Location[0] != "response" {
		t.Fatalf("parsed %+v", e.Violations)
	}
	if got, want := e.String(), "POST /zones/z/dns_records -> 422: request.body: Request body must have required property 'type'"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// A 2xx whose only violations are the spec's own response's is accepted.
	if (Exchange{Status: 200, Violations: e.Violations[1:]}).Rejected() {
		t.Error("a response violation made the request rejected")
	}
	cut := parseViolations("Too many violations! " + whole[:len(whole)-40])
	if len(cut) != 2 || cut[0].Message != e.Violations[0].Message || cut[1].Location[0] != "prism" {
		t.Errorf("cut header parsed as %+v", cut)
	}
}
