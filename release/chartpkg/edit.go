// This file edits Chart.yaml and the values for a release.

package chartpkg

import (
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// setChartVersion sets Chart.yaml's version and appVersion lines to v.
func setChartVersion(chartYAML []byte, v string) ([]byte, error) {
	out, err := replaceLine(string(chartYAML), `version: .*`, "version: "+v, "chart/Chart.yaml")
	if err != nil {
		return nil, err
	}
	if out, err = replaceLine(out, `appVersion: .*`, fmt.Sprintf("appVersion: %q", v), "chart/Chart.yaml"); err != nil {
		return nil, err
	}
	var got struct{ Version, AppVersion string }
	if err := yaml.Unmarshal([]byte(out), &got); err != nil || got.Version != v || got.AppVersion != v {
		return nil, fmt.Errorf("chart/Chart.yaml with version %s reads back as %+v (%v)", v, got, err)
	}
	return []byte(out), nil
}

// setImage sets image.repository and image.digest in values.yaml, within
// its top-level image: block (cloudflared.image has the same keys).
func setImage(values []byte, repository, digest string) ([]byte, error) {
	lines := strings.SplitAfter(string(values), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimRight(l, " \r\n") == "image:" {
			if start >= 0 {
				return nil, fmt.Errorf("chart/values.yaml has two top-level image: keys")
			}
			start = i
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("chart/values.yaml has no top-level image: block to set the release's image in")
	}
	end := start + 1
	for end < len(lines) && (lines[end] == "\n" || strings.HasPrefix(lines[end], " ") || strings.HasPrefix(lines[end], "#")) {
		end++
	}
	block := strings.Join(lines[start+1:end], "")
	block, err := replaceLine(block, `  repository: .*`, "  repository: "+repository, "chart/values.yaml image:")
	if err != nil {
		return nil, err
	}
	if block, err = replaceLine(block, `  digest: .*`, fmt.Sprintf("  digest: %q", digest), "chart/values.yaml image:"); err != nil {
		return nil, err
	}
	out := strings.Join(lines[:start+1], "") + block + strings.Join(lines[end:], "")

	var got struct {
		Image struct{ Repository, Digest string }
	}
	if err := yaml.Unmarshal([]byte(out), &got); err != nil || got.Image.Repository != repository || got.Image.Digest != digest {
		return nil, fmt.Errorf("chart/values.yaml with the release's image reads back as %+v (%v)", got.Image, err)
	}
	return []byte(out), nil
}

// replaceLine replaces the one line of text that matches pattern whole.
func replaceLine(text, pattern, with, where string) (string, error) {
	re := regexp.MustCompile(`(?m)^` + pattern + `$`)
	if n := len(re.FindAllStringIndex(text, -1)); n != 1 {
		return "", fmt.Errorf("%s has %d lines matching %q, want exactly one to set for the release", where, n, pattern)
	}
	return re.ReplaceAllLiteralString(text, with), nil
}
