// This file implements SPDX.

package sbom

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// MediaType is the media type of the document, as an OCI artifact's
// artifactType and layer.
const MediaType = "application/spdx+json"

// Image is what the document describes.
type Image struct {
	Name     string    // tunnelgate
	Version  string    // the release
	Revision string    // the commit, in full
	Source   string    // the repository's URL
	License  string    // SPDX license expression of our code
	Digest   string    // the image index's, sha256:<hex>
	Created  time.Time // the commit's time
}

// Binary is a binary of one platform of the image.
type Binary struct {
	Arch string // GOARCH
	Name string // its file name in the image's root: tunnelgate, tunnelgate-proxy
	Data []byte
}

// SPDX returns the document, indented, for an image and its binaries.
func SPDX(img Image, binaries []Binary) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(img.Digest, "sha256:")
	if !ok || len(hexDigest) != 64 {
		return nil, fmt.Errorf("the image digest %q is not sha256:<64 hex digits>", img.Digest)
	}
	if len(binaries) == 0 {
		return nil, fmt.Errorf("an SBOM of %s needs its binaries", img.Name)
	}
	ids := idAllocator{}
	imageID := ids.id("Image-" + img.Name)
	doc := document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              img.Name + "-" + img.Version,
		DocumentNamespace: img.Source + "/spdx/" + img.Name + "-" + img.Version + "-" + hexDigest,
		CreationInfo: creationInfo{
			Created:  img.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: " + img.Name, "Tool: " + img.Name + "-release-" + img.Version},
		},
		Packages: []pkg{{
			SPDXID:                imageID,
			Name:                  img.Name,
			VersionInfo:           img.Version,
			DownloadLocation:      "NOASSERTION",
			PrimaryPackagePurpose: "CONTAINER",
			LicenseDeclared:       img.License,
			Checksums:             []checksum{{Algorithm: "SHA256", ChecksumValue: hexDigest}},
			ExternalRefs:          purlRef("pkg:oci/" + img.Name + "@sha256%3A" + hexDigest),
			Comment:               "The OCI image index; the registry it is in is not part of its identity.",
		}},
		Relationships: []relationship{{"SPDXRef-DOCUMENT", "DESCRIBES", imageID}},
	}

	// Modules are listed once, however many binaries link them.
	modules := map[string]string{} // path@version -> SPDXID
	var moduleKeys []string
	var modulePkgs = map[string]pkg{}
	for _, b := range binaries {
		info, err := buildinfo.Read(bytes.NewReader(b.Data))
		if err != nil {
			return nil, fmt.Errorf("the linux/%s binary %s carries no Go build info (was it built by go build?): %w", b.Arch, b.Name, err)
		}
		if b.Name == "" || strings.Contains(b.Name, "/") {
			return nil, fmt.Errorf("the linux/%s binary's name %q is not a file name", b.Arch, b.Name)
		}
		sum := sha256.Sum256(b.Data)
		binID := ids.id("Binary-" + b.Name + "-linux-" + b.Arch)
		doc.Packages = append(doc.Packages, pkg{
			SPDXID:                binID,
			Name:                  b.Name + " linux/" + b.Arch,
			VersionInfo:           img.Version,
			DownloadLocation:      "git+" + img.Source + ".git@" + img.Revision,
			PrimaryPackagePurpose: "APPLICATION",
			LicenseDeclared:       img.License,
			Checksums:             []checksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
			ExternalRefs:          purlRef("pkg:golang/" + info.Main.Path + "@" + img.Version),
			Comment: "/" + b.Name + " in the image; main package " + info.Path + " of module " + info.Main.Path + ", " + info.GoVersion +
				", build settings: " + settings(info),
		})
		doc.Relationships = append(doc.Relationships, relationship{imageID, "CONTAINS", binID})

		deps := []*debug.Module{{Path: "stdlib", Version: info.GoVersion}}
		deps = append(deps, info.Deps...)
		for _, m := range deps {
			if m.Replace != nil {
				m = m.Replace
			}
			key := m.Path + "@" + m.Version
			id, ok := modules[key]
			if !ok {
				id = ids.id("Go-" + key)
				modules[key] = id
				moduleKeys = append(moduleKeys, key)
				modulePkgs[key] = modulePackage(id, m)
			}
			doc.Relationships = append(doc.Relationships, relationship{binID, "DEPENDS_ON", id})
		}
	}
	slices.Sort(moduleKeys)
	for _, k := range moduleKeys {
		doc.Packages = append(doc.Packages, modulePkgs[k])
	}
	slices.SortStableFunc(doc.Relationships[1:], func(a, b relationship) int {
		return cmp.Or(cmp.Compare(a.SPDXElementID, b.SPDXElementID), cmp.Compare(a.RelatedSPDXElement, b.RelatedSPDXElement))
	})
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// modulePackage is a Go module as a package; the standard library goes
// by the purl scanners know it by (pkg:golang/stdlib@1.26.8).
func modulePackage(id string, m *debug.Module) pkg {
	p := pkg{
		SPDXID:                id,
		Name:                  m.Path,
		VersionInfo:           m.Version,
		DownloadLocation:      "NOASSERTION",
		PrimaryPackagePurpose: "LIBRARY",
		ExternalRefs:          purlRef("pkg:golang/" + m.Path + "@" + m.Version),
	}
	if m.Path == "stdlib" {
		v := strings.TrimPrefix(m.Version, "go")
		p.ExternalRefs = purlRef("pkg:golang/stdlib@" + v)
		p.Comment = "The Go standard library of the toolchain that built the binary."
	}
	if m.Sum != "" {
		p.Comment = "go.sum hash " + m.Sum
	}
	return p
}

// settings renders the build settings the binary records (GOOS, GOARCH,
// CGO_ENABLED, -trimpath, -ldflags, vcs.*), in their recorded order.
func settings(info *debug.BuildInfo) string {
	parts := make([]string, 0, len(info.Settings))
	for _, s := range info.Settings {
		parts = append(parts, s.Key+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

var notIDChar = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// idAllocator makes SPDX identifiers (SPDXRef- and letters, digits, '.'
// and '-') from names, unique within a document.
type idAllocator map[string]bool

func (a idAllocator) id(name string) string {
	base := "SPDXRef-" + strings.Trim(notIDChar.ReplaceAllString(name, "-"), "-")
	id := base
	for n := 2; a[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	a[id] = true
	return id
}
