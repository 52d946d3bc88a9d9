package sbom

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

var testImage = Image{
	Name:     "tunnelgate",
	Version:  "1.2.3",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Source:   "https://github.com/tunnelgate/tunnelgate",
	License:  "Apache-2.0",
	Digest:   "sha256:" + strings.Repeat("ab", 32),
	Created:  time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
}

// The test binary is a Go binary with build info and a module graph: it
// stands in for both binaries of both platforms.
func testBinaries(t *testing.T) []Binary {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	var bins []Binary
	for _, arch := range []string{"amd64", "arm64"} {
		for _, name := range []string{"tunnelgate", "tunnelgate-proxy"} {
			bins = append(bins, Binary{Arch: arch, Name: name, Data: b})
		}
	}
	return bins
}

// What the document holds, read back as a consumer reads it.
type readDoc struct {
	SPDXVersion, DataLicense, SPDXID, Name, DocumentNamespace string
	CreationInfo                                              struct {
		Created  string
		Creators []string
	}
	Packages []struct {
		SPDXID, Name, VersionInfo, DownloadLocation, PrimaryPackagePurpose string
		Checksums                                                          []struct{ Algorithm, ChecksumValue string }
		ExternalRefs                                                       []struct{ ReferenceType, ReferenceLocator string }
	}
	Relationships []struct{ SPDXElementID, RelationshipType, RelatedSPDXElement string }
}

func TestSPDXDescribesTheImageAndEveryModule(t *testing.T) {
	bins := testBinaries(t)
	out, err := SPDX(testImage, bins)
	if err != nil {
		t.Fatal(err)
	}
	var doc readDoc
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" ||
		doc.CreationInfo.Created != "2026-03-04T05:06:07Z" || len(doc.CreationInfo.Creators) == 0 ||
		!strings.Contains(doc.DocumentNamespace, strings.Repeat("ab", 32)) {
		t.Errorf("document header: %+v", doc)
	}

	ids := map[string]int{}
	purls := map[string]bool{}
	validID := regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)
	for i, p := range doc.Packages {
		if !validID.MatchString(p.SPDXID) {
			t.Errorf("package %s has an invalid SPDXID %q", p.Name, p.SPDXID)
		}
		if _, dup := ids[p.SPDXID]; dup {
			t.Errorf("SPDXID %s used twice", p.SPDXID)
		}
		ids[p.SPDXID] = i
		if p.DownloadLocation == "" {
			t.Errorf("package %s has no downloadLocation", p.Name)
		}
		for _, r := range p.ExternalRefs {
			if r.ReferenceType == "purl" {
				purls[r.ReferenceLocator] = true
			}
		}
	}
	if !purls["pkg:oci/tunnelgate@sha256%3A"+strings.Repeat("ab", 32)] {
		t.Error("no purl for the image by digest")
	}
	info, err := buildinfo.Read(bytes.NewReader(bins[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		if !purls["pkg:golang/"+m.Path+"@"+m.Version] {
			t.Errorf("module %s@%s is not in the SBOM", m.Path, m.Version)
		}
	}
	if !purls["pkg:golang/stdlib@"+strings.TrimPrefix(info.GoVersion, "go")] {
		t.Errorf("the standard library %s is not in the SBOM", info.GoVersion)
	}
	// Each module is listed once though four binaries link it.
	if want := 1 + 4 + 1 + len(info.Deps); len(doc.Packages) != want {
		t.Errorf("%d packages, want the image, 4 binaries, stdlib and %d modules", len(doc.Packages), len(info.Deps))
	}
	names := map[string]bool{}
	for _, p := range doc.Packages {
		if p.PrimaryPackagePurpose == "APPLICATION" {
			names[p.Name] = true
		}
	}
	for _, want := range []string{"tunnelgate linux/amd64", "tunnelgate-proxy linux/amd64", "tunnelgate linux/arm64", "tunnelgate-proxy linux/arm64"} {
		if !names[want] {
			t.Errorf("no package %q among the binaries %v", want, names)
		}
	}

	contains, dependsOn := 0, 0
	for _, r := range doc.Relationships {
		for _, id := range []string{r.SPDXElementID, r.RelatedSPDXElement} {
			if _, ok := ids[id]; !ok && id != "SPDXRef-DOCUMENT" {
				t.Errorf("relationship %+v names an element that is not in the document", r)
			}
		}
		switch r.RelationshipType {
		case "CONTAINS":
			contains++
		case "DEPENDS_ON":
			dependsOn++
		}
	}
	if r := doc.Relationships[0]; r.SPDXElementID != "SPDXRef-DOCUMENT" || r.RelationshipType != "DESCRIBES" ||
		doc.Packages[ids[r.RelatedSPDXElement]].PrimaryPackagePurpose != "CONTAINER" {
		t.Errorf("the document does not describe the image first: %+v", r)
	}
	if contains != 4 || dependsOn != 4*(1+len(info.Deps)) {
		t.Errorf("%d CONTAINS and %d DEPENDS_ON; want 4 and %d", contains, dependsOn, 4*(1+len(info.Deps)))
	}

	again, err := SPDX(testImage, bins)
	if err != nil || !bytes.Equal(out, again) {
		t.Error("two documents of the same image differ")
	}
}

func TestSPDXRefusesWhatItCannotDescribe(t *testing.T) {
	bad := testImage
	bad.Digest = "abab"
	if _, err := SPDX(bad, testBinaries(t)); err == nil {
		t.Error("a digest that is not sha256:<hex> was taken")
	}
	if _, err := SPDX(testImage, []Binary{{Arch: "amd64", Name: "tunnelgate", Data: []byte("not a binary")}}); err == nil {
		t.Error("a binary without build info was taken")
	}
	unnamed := testBinaries(t)[:1]
	unnamed[0].Name = ""
	if _, err := SPDX(testImage, unnamed); err == nil {
		t.Error("a binary without a name was taken")
	}
	if _, err := SPDX(testImage, nil); err == nil {
		t.Error("an image without binaries was taken")
	}
}
