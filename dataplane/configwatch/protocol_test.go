package configwatch

import (
	"strings"
	"testing"
)

const validDoc = `{"version":"v1","routesHash":"r","clustersHash":"c","config":{"schema":"tunnelgate.dev/dataplane/v1","version":"v1","listeners":[],"routes":[],"clusters":[]}}`

func TestDecodeDocument(t *testing.T) {
	doc, err := DecodeDocument([]byte(validDoc))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Version != "v1" || doc.RoutesHash != "r" || doc.ClustersHash != "c" || doc.Config.Version != "v1" {
		t.Fatalf("decoded %+v", doc)
	}
	for _, c := range []struct{ name, doc, want string }{
		{"not JSON", "{", "decoding config document"},
		{"unknown field", strings.Replace(validDoc, `"version":"v1",`, `"version":"v1","extra":1,`, 1), "unknown field"},
		{"unknown config field", strings.Replace(validDoc, `"listeners":[]`, `"listeners":[],"colour":"blue"`, 1), `unknown field "colour": the controller is newer than this proxy`},
		{"trailing data", validDoc + "{}", "data after"},
		{"no version", strings.Replace(validDoc, `{"version":"v1"`, `{"version":""`, 1), "version missing"},
		{"no hashes", strings.NewReplacer(`"routesHash":"r"`, `"routesHash":""`, `"clustersHash":"c"`, `"clustersHash":""`).Replace(validDoc), "routesHash, clustersHash missing"},
		{"config of another version", strings.Replace(validDoc, `"schema":"tunnelgate.dev/dataplane/v1","version":"v1"`, `"schema":"tunnelgate.dev/dataplane/v1","version":"v0"`, 1), "differs"},
	} {
		if _, err := DecodeDocument([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestETagRoundTrip(t *testing.T) {
	for _, v := range []string{"0123abcd", "v1"} {
		if got := VersionFromETag(ETag(v)); got != v {
			t.Errorf("VersionFromETag(ETag(%q)) = %q", v, got)
		}
	}
	for _, etag := range []string{"", `"v1"`, `W/"v1`, `W/v1"`, `W/"a"b"`} {
		if got := VersionFromETag(etag); got != "" {
			t.Errorf("VersionFromETag(%q) = %q, want none", etag, got)
		}
	}
}
