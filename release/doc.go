// Command release makes tunnelgate's release artifacts on a machine with
// Go and no container engine, and pushes them to an OCI registry.
//
//	go run ./release image   -version V -revision SHA -source-date-epoch T [-dist dist]
//	go run ./release publish -version V -revision SHA -source-date-epoch T -registry R [-dist dist] [-sign-key K | -sign keyless] [-tlog=false] [-cosign C]
//	go run ./release rootfs  -version V -arch ARCH -out DIR
//	go run ./release binaries [-version V] [-dist dist]
//
// image (`make image`) builds the binaries, tunnelgate and
// tunnelgate-proxy, for linux/amd64 and linux/arm64 (release/gobuild),
// assembles one OCI image index over an image per architecture
// (release/image: both binaries, CA certificates and the nonroot user, no
// base image), and writes it to DIST/image as an OCI
// image layout, with its SBOM (release/sbom) as DIST/tunnelgate.spdx.json.
// The same commit gives the same index digest: every timestamp is the
// commit's (T, as SOURCE_DATE_EPOCH), and everything else is a function of
// the source.
//
// publish (`make release`) does the same, packages chart/ with the
// release's version and the image's digest (release/chartpkg) into
// DIST/tunnelgate-V.tgz, and pushes the index, the SBOM and the chart
// under R (release/publish says where each goes). With -sign-key (or
// -sign keyless) it then signs the index and the chart by digest and
// attests the SBOM to the index with cosign (release/sign), and prints how
// to verify them; then how to install the chart.
//
// rootfs writes the image's root filesystem for one architecture to a
// directory: the Dockerfile copies it into a scratch image, so a Docker
// build holds the same files. binaries builds the binaries alone (`make
// chart-check` fills the build cache with it).
package main
