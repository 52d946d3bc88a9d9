# Build: docker build -t tunnelgate .
# The binary is static (CGO_ENABLED=0), so the runtime image needs no libc.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Module files first: the download layer is reused until they change.
COPY go.mod go.sum* ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tunnelgate ./cmd/tunnelgate

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="tunnelgate" \
      org.opencontainers.image.description="Kubernetes Gateway API implementation for Cloudflare Tunnel" \
      org.opencontainers.image.source="https://github.com/tunnelgate/tunnelgate" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/tunnelgate /tunnelgate
USER 65532:65532
ENTRYPOINT ["/tunnelgate"]
