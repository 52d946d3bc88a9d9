// Package sbom writes the software bill of materials of tunnelgate's image
// as an SPDX 2.3 JSON document, from what the Go toolchain records in each
// binary (debug/buildinfo: the Go release, every module linked in with its
// version and go.sum hash, and the build settings). No scanner is needed:
// the binary is the only software in the image besides the CA bundle, and
// its module graph is exact, not guessed from file contents.
//
// The document describes the image index (by digest), which contains one
// binary per platform, each depending on the Go standard library of its
// toolchain and on its modules (purl pkg:golang/PATH@VERSION). Its
// timestamps are the commit's, so it is as reproducible as the image.
// release/publish attaches it to the index in the registry.
package sbom
