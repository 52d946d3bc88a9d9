// Package chartpkg packages the Helm chart (chart/ of the repository) for
// a release, without helm: a chart archive is a gzipped tar of the chart's
// files under a directory named after the chart, and an OCI chart is that
// archive beside a config made of Chart.yaml (helm's own layout, media
// types and annotations, see Package).
//
// The packaged copy differs from chart/ in three lines, changed in the
// text so every comment stays: Chart.yaml's version and appVersion become
// the release's, and values.yaml's image.repository and image.digest name
// the image the release pushed, by digest, so an install runs exactly the
// image that was built with the chart, whatever a tag points at later.
// The repository's chart/ is not edited. Like the image, the archive is a
// pure function of its inputs (sorted entries, fixed modes and owner, the
// commit time), so a release made twice pushes the same chart digest.
package chartpkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Helm's media types for a chart in an OCI registry (helm.sh/helm's
// pkg/registry constants).
const (
	ConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	LayerMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Release is what the packaged chart is made for.
type Release struct {
	Version         string    // SemVer 2 without a leading v: the chart's version and appVersion
	ImageRepository string    // where the image was pushed, without tag or digest
	ImageDigest     string    // the image index's digest, sha256:<hex>
	Created         time.Time // the commit's time
}

// Chart is a packaged chart.
type Chart struct {
	Name, Version string
	Archive       []byte            // NAME-VERSION.tgz
	Config        []byte            // Chart.yaml as JSON: the OCI config helm writes
	Annotations   map[string]string // the OCI manifest's annotations helm writes
}

// FileName is the archive's name, as helm package names it.
func (c Chart) FileName() string { return c.Name + "-" + c.Version + ".tgz" }

// semver is SemVer 2.0.0's own regular expression.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// CheckVersion says whether v can be a chart's version.
func CheckVersion(v string) error {
	if !semver.MatchString(v) {
		return fmt.Errorf("version %q is not a semantic version (e.g. 0.2.0 or 0.2.0-rc.1, no leading v): charts need one", v)
	}
	return nil
}

// Package packages the chart in dir (chart/ read as an fs.FS) for r.
func Package(dir fs.FS, r Release) (Chart, error) {
	if err := CheckVersion(r.Version); err != nil {
		return Chart{}, err
	}
	if !digestPattern.MatchString(r.ImageDigest) {
		return Chart{}, fmt.Errorf("image digest %q is not sha256:<64 hex digits>", r.ImageDigest)
	}
	if r.ImageRepository == "" || strings.Contains(r.ImageRepository, "@") ||
		strings.Contains(r.ImageRepository[strings.LastIndex(r.ImageRepository, "/")+1:], ":") {
		return Chart{}, fmt.Errorf("image repository %q: give it without a tag or digest", r.ImageRepository)
	}

	files := map[string][]byte{}
	var names []string
	err := fs.WalkDir(dir, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: a chart holds files and directories only", p)
		}
		b, err := fs.ReadFile(dir, p)
		files[p] = b
		names = append(names, p) // WalkDir walks in lexical order
		return err
	})
	if err != nil {
		return Chart{}, fmt.Errorf("reading the chart: %w", err)
	}

	chartYAML, err := setChartVersion(files["Chart.yaml"], r.Version)
	if err != nil {
		return Chart{}, err
	}
	values, err := setImage(files["values.yaml"], r.ImageRepository, r.ImageDigest)
	if err != nil {
		return Chart{}, err
	}
	files["Chart.yaml"], files["values.yaml"] = chartYAML, values

	var meta struct {
		Name        string            `json:"name"`
		Version     string            `json:"version"`
		Description string            `json:"description"`
		Home        string            `json:"home"`
		Sources     []string          `json:"sources"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		return Chart{}, fmt.Errorf("chart/Chart.yaml: %w", err)
	}
	if meta.Name == "" {
		return Chart{}, fmt.Errorf("chart/Chart.yaml has no name")
	}
	config, err := yaml.YAMLToJSON(chartYAML)
	if err != nil {
		return Chart{}, fmt.Errorf("chart/Chart.yaml: %w", err)
	}

	archive, err := writeArchive(meta.Name, names, files, r.Created)
	if err != nil {
		return Chart{}, err
	}

	// The annotations helm push writes, from Chart.yaml; the chart's own
	// annotations join them but never replace the version or title.
	ann := map[string]string{}
	for k, v := range meta.Annotations {
		ann[k] = v
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":       meta.Name,
		"org.opencontainers.image.version":     meta.Version,
		"org.opencontainers.image.description": meta.Description,
		"org.opencontainers.image.url":         meta.Home,
		"org.opencontainers.image.created":     r.Created.UTC().Format(time.RFC3339),
	} {
		if v != "" {
			ann[k] = v
		}
	}
	if len(meta.Sources) > 0 {
		ann["org.opencontainers.image.source"] = meta.Sources[0]
	}
	return Chart{Name: meta.Name, Version: meta.Version, Archive: archive, Config: config, Annotations: ann}, nil
}

// writeArchive writes the files, in the order of names, as helm package
// does: regular files only, under name/, here with mode 0644, owner 0:0
// and the commit time.
func writeArchive(name string, names []string, files map[string][]byte, mtime time.Time) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name + "/" + n,
			Mode:     0o644,
			Size:     int64(len(files[n])),
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatPAX,
		}); err != nil {
			return nil, fmt.Errorf("packaging %s: %w", n, err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
