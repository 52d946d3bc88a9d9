// Package sbom writes the software bill of materials of tunnelgate's image
// as an SPDX 2.3 JSON document, from what the Go toolchain records in each
// binary (debug/buildinfo: the Go release, every module linked in with its
// version and go.sum hash, and the build settings). No scanner is needed:
// the binaries are the only software in the image besides the CA bundle,
// and their module graphs are exact, not guessed from file contents.
//
// The document describes the image index (by digest), which contains the
// binaries of each platform (tunnelgate and tunnelgate-proxy, packages
// named "NAME linux/ARCH"), each depending on the Go standard library of
// its toolchain and on the modules it links (purl pkg:golang/PATH@VERSION;
// a module two binaries link is listed once). Its
// timestamps are the commit's, so it is as reproducible as the image.
// release/publish attaches it to the index in the registry.
package sbom
