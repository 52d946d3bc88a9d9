// Package image assembles tunnelgate's container image without a container
// engine: one OCI image index over an image per architecture, each a single
// layer the project writes itself.
//
// There is no base image. The layer holds exactly what the binaries need:
//
//	/tunnelgate                          the static binary of every command (the entrypoint)
//	/tunnelgate-proxy                    the proxy alone, which proxy Pods run (their command)
//	/etc/passwd, /etc/group              root, and nonroot (uid and gid 65532), whom the image runs as
//	/etc/ssl/certs/ca-certificates.crt   Mozilla's roots, from a pinned Go module (CABundle)
//
// The proxy has a binary of its own because a process's resident set
// holds the pages of its binary that start-up touches: tunnelgate links
// the controller's dependencies, whose package initialisation touches
// tens of megabytes a proxy never uses. One image with both keeps one
// artifact to release, pin and pull.
//
// no shell, no package manager and nothing to write to, so the image runs
// with a read-only root filesystem.
//
// Everything is a pure function of its inputs (the binaries, the version,
// the revision and the commit time), so two builds of one commit give the
// same index digest: tar entries are sorted, owned by 0:0 with fixed modes
// and the commit time, gzip runs at a fixed level with no name or time in
// its header, and every timestamp in the configs and annotations is the
// commit time. The binaries must be reproducible too: release/gobuild
// builds them with -trimpath and without cgo.
//
// The Dockerfile makes the same root filesystem (RootFS written to a
// directory by `go run ./release rootfs`) and copies it into a scratch
// image, for users who build with Docker.
package image
