package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	// The metric catalogue: every metric the processes serve.
	metricsCatalogue = "../../docs/metrics.md"
	dashboardFile    = "dashboards/tunnelgate.json" // in chartDir
)

// The dashboard and the alert rules may only query what the processes
// serve, and docs/metrics.md lists exactly that (the command tests of
// cmd/tunnelgate and cmd/internal/proxycmd hold it to the code). A renamed or
// dropped metric would otherwise leave
// an empty panel or an alert that can never fire, and nobody would notice.
func TestDashboardAndRulesUseCatalogueMetrics(t *testing.T) {
	catalogue := readCatalogue(t, metricsCatalogue)
	dashboard, err := os.ReadFile(filepath.Join(chartDir, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	_, rules := renderedObservability(t)
	for _, c := range []struct {
		what, text string
		exprs      []string
	}{
		{"the dashboard (chart/" + dashboardFile + ")", string(dashboard), dashboardExprs(t, dashboard)},
		{"the alert rules (chart/templates/_alerts.tpl)", rules.text, rules.exprs},
	} {
		for _, name := range metricNames(c.text) {
			if _, ok := catalogue[catalogueName(name, catalogue)]; !ok {
				t.Errorf("%s: %s is not in docs/metrics.md", c.what, name)
			}
		}
		// A histogram's own name has no series: only its _bucket, _sum
		// and _count do.
		for _, e := range c.exprs {
			for _, name := range metricNames(e) {
				if catalogue[name] == "histogram" {
					t.Errorf("%s queries the histogram %s by its bare name, which has no series; use %s_bucket:\n%s", c.what, name, name, e)
				}
			}
		}
	}
}

// The rules are valid enough for Prometheus to load: each alert has a
// balanced expression, a severity and both annotations, and the thresholds
// in the values reach the expressions. The ConfigMap holds the same rules.
func TestAlertRules(t *testing.T) {
	objs, rules := renderedObservability(t)
	if len(rules.alerts) < 10 {
		t.Fatalf("%d alerts rendered; want the dozen of _alerts.tpl", len(rules.alerts))
	}
	seen := map[string]bool{}
	for _, a := range rules.alerts {
		if !regexp.MustCompile(`^Tunnelgate[A-Z][A-Za-z]+$`).MatchString(a.Alert) || seen[a.Alert] {
			t.Errorf("alert name %q: want Tunnelgate<CamelCase>, each once", a.Alert)
		}
		seen[a.Alert] = true
		if err := balanced(a.Expr); err != nil {
			t.Errorf("%s: %v in %s", a.Alert, err, a.Expr)
		}
		if !slices.Contains([]string{"critical", "warning", "info"}, a.Labels["severity"]) {
			t.Errorf("%s: severity %q; want critical, warning or info", a.Alert, a.Labels["severity"])
		}
		if a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
			t.Errorf("%s: want a summary and a description", a.Alert)
		}
		if a.For != "" && !regexp.MustCompile(`^[0-9]+[smh]$`).MatchString(a.For) {
			t.Errorf("%s: for %q is not a duration", a.Alert, a.For)
		}
	}
	// chart/ci/ha-values.yaml sets route5xxRatio to 0.02.
	for _, a := range rules.alerts {
		if a.Alert == "TunnelgateRouteErrors" && !strings.Contains(a.Expr, "> 0.02\n") {
			t.Errorf("TunnelgateRouteErrors does not use the route5xxRatio of the values:\n%s", a.Expr)
		}
	}

	pr := find(t, objs, "PrometheusRule", "tunnelgate")
	if pr.GetLabels()["release"] != "prometheus" {
		t.Errorf("the PrometheusRule's labels %v lack metrics.prometheusRule.labels", pr.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	cm := find(t, objs, "ConfigMap", "-prometheus-rules")
	file, _, _ := unstructured.NestedString(cm.Object, "data", "tunnelgate.rules.yaml")
	var fromFile struct {
		Groups []any `json:"groups"`
	}
	if err := sigsyaml.UnmarshalStrict([]byte(file), &fromFile); err != nil {
		t.Fatalf("the rules file in ConfigMap %s: %v", cm.GetName(), err)
	}
	if fmt.Sprint(fromFile.Groups) != fmt.Sprint(groups) {
		t.Errorf("the rules file in ConfigMap %s differs from the PrometheusRule's groups", cm.GetName())
	}
}

// The dashboard is JSON Grafana loads: unique panel ids, panels that do
// not overlap, every query on the data source variable, every variable it
// refers to defined, every expression balanced; the ConfigMap carries it
// unchanged with the sidecar's label.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("chart/%s is not JSON: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and a current schema", d.UID, d.Title, d.SchemaVersion)
	}

	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["datasource"] {
		t.Error("no datasource variable: the dashboard would be bound to one Prometheus")
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.allPanels() {
		if p.ID <= 0 || ids[p.ID] != "" {
			t.Errorf("panel %q: id %d is missing or also %q's", p.Title, p.ID, ids[p.ID])
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is off the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other := taken[cell{x, y}]; other != "" {
					t.Errorf("panels %q and %q overlap at %d,%d", other, p.Title, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: want queries on ${datasource}, got %q with %d queries", p.Title, p.Datasource.UID, len(p.Targets))
		}
	}

	exprs := dashboardExprs(t, raw)
	for _, e := range exprs {
		if err := balanced(e); err != nil {
			t.Errorf("%v in %s", err, e)
		}
		for _, m := range regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(e, -1) {
			if !strings.HasPrefix(m[1], "__") && !vars[m[1]] {
				t.Errorf("$%s is not a variable of the dashboard: %s", m[1], e)
			}
		}
	}

	objs, _ := renderedObservability(t)
	cm := find(t, objs, "ConfigMap", "-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "Gateways" {
		t.Errorf("dashboard ConfigMap labels %v, annotations %v: want the sidecar's label and the values' annotations", cm.GetLabels(), cm.GetAnnotations())
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "tunnelgate.json"); got != strings.TrimSuffix(string(raw), "\n") {
		t.Error("the dashboard ConfigMap does not hold chart/" + dashboardFile + " as it is")
	}

	// Off by default: both need something installed beside the chart.
	for _, o := range decode(t, mustRender(t, valuesFiles(t)["default"])) {
		if o.GetKind() == "PrometheusRule" || (o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-dashboard")) {
			t.Errorf("the default values render %s %s", o.GetKind(), o.GetName())
		}
	}
}

// readCatalogue maps the metrics of docs/metrics.md's tables under
// "## Proxy", "## Controller" and "## Runtime and process" to their types.
func readCatalogue(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\|\\s*`((?:tunnelgate|go|process)_[a-z0-9_]+)`\\s*\\|\\s*([a-z]+)\\s*\\|")
	m := map[string]string{}
	section := ""
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		if section != "Proxy" && section != "Controller" && section != "Runtime and process" {
			continue
		}
		if r := row.FindStringSubmatch(l); r != nil {
			m[r[1]] = r[2]
		}
	}
	if len(m) < 20 {
		t.Fatalf("%s: found %d metrics in the Proxy, Controller and runtime tables; has its layout changed?", path, len(m))
	}
	return m
}

var metricName = regexp.MustCompile(`\b(?:tunnelgate|go|process)_[a-z0-9_]+`)

// metricNames lists the distinct tunnelgate_, go_ and process_ names in a
// text.
func metricNames(text string) []string {
	names := metricName.FindAllString(text, -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// catalogueName is the catalogue entry a series name belongs to: a
// histogram's _bucket, _sum and _count series are the histogram's.
func catalogueName(name string, catalogue map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && catalogue[base] == "histogram" {
			return base
		}
	}
	return name
}

// balanced reports the first bracket of a PromQL expression that is not
// closed or not opened, outside string literals. No PromQL parser is a
// dependency; this catches what a template slip most often breaks.
func balanced(expr string) error {
	var stack []rune
	var quote rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for i, r := range expr {
		switch {
		case quote != 0:
			if r == quote && (i == 0 || expr[i-1] != '\\') {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unopened %q at offset %d", r, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 {
		return fmt.Errorf("unterminated string")
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Definition string          `json:"definition"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func (d dashboard) allPanels() []panel {
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

// dashboardExprs returns the dashboard's PromQL: its panels' queries and
// its query variables'.
func dashboardExprs(t *testing.T, raw []byte) []string {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("chart/%s is not JSON: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.allPanels() {
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		exprs = append(exprs, q.Query, v.Definition)
	}
	return exprs
}

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type renderedRules struct {
	text   string // the PrometheusRule, as YAML
	exprs  []string
	alerts []alertRule
}

// renderedObservability renders chart/ci/ha-values.yaml, which enables the
// dashboard and the rules, and returns its objects and the PrometheusRule.
func renderedObservability(t *testing.T) ([]*unstructured.Unstructured, renderedRules) {
	t.Helper()
	objs := decode(t, mustRender(t, valuesFiles(t)["ha"]))
	pr := find(t, objs, "PrometheusRule", "tunnelgate")
	b, err := json.Marshal(pr.Object)
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Spec struct {
			Groups []struct {
				Name  string      `json:"name"`
				Rules []alertRule `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	text, err := sigsyaml.JSONToYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	r := renderedRules{text: string(text)}
	for _, g := range spec.Spec.Groups {
		for _, a := range g.Rules {
			r.exprs = append(r.exprs, a.Expr)
			r.alerts = append(r.alerts, a)
		}
	}
	return objs, r
}
