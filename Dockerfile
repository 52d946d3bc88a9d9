# Build: docker build -t tunnelgate --build-arg VERSION=0.2.0 .
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 ...
#
# The same image `make image` assembles without Docker (release/image): the
# static binaries (/tunnelgate, the entrypoint, and /tunnelgate-proxy, the
# proxy alone, which proxy Pods run), CA certificates and the nonroot user
# (65532), on nothing else. The build stage writes that root filesystem
# with the release tool (which builds the binaries the release's way), and
# the final stage copies it into an empty image. No shell, nothing to
# write to.

FROM --platform=$BUILDPLATFORM golang:1.27-bookworm AS build
WORKDIR /src
# Module files first: the download layer is reused until they change. The
# build uses the toolchain go.mod's toolchain line names, as `make` does
# (the Makefile says why), so the binaries match `make image`'s.
COPY go.mod go.sum* ./
RUN go env -w GOTOOLCHAIN="$(sed -n 's/^toolchain //p' go.mod)" && go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH
RUN go run ./release rootfs -version "${VERSION}" -arch "${TARGETARCH:-$(go env GOARCH)}" -out /rootfs

FROM scratch
ARG VERSION=dev
ARG REVISION=
ARG CREATED=
COPY --from=build /rootfs/ /
LABEL org.opencontainers.image.title="tunnelgate" \
      org.opencontainers.image.description="Kubernetes Gateway API implementation for Cloudflare Tunnel" \
      org.opencontainers.image.source="https://github.com/tunnelgate/tunnelgate" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/tunnelgate"]
