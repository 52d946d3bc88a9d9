// Package crd embeds tunnelgate's CustomResourceDefinitions (group
// tunnelgate.dev), so that the integration environment (test/kubeenv) and
// the Helm chart install the very same YAML.
//
// The YAML is written by hand to match api/v1alpha1: the tests in this
// package compare each schema with its Go type, field by field, so a field
// added to one and not the other fails `go test`.
package crd

import (
	"embed"
	"io/fs"
	"slices"
)

//go:embed *.yaml
var files embed.FS

// Files returns the CRDs, one per file named <group>_<plural>.yaml.
func Files() fs.FS { return files }

// YAML returns every CRD as one multi-document YAML stream, in file name
// order.
func YAML() []byte {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	slices.Sort(names)
	var out []byte
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time, so always readable
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out
}
