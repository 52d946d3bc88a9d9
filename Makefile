# tunnelgate developer tasks. `make` alone lists them.

SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# The Go toolchain is the one go.mod's toolchain line names. A machine
# starts on its own go command, which ignores that line (GOTOOLCHAIN=local
# in Go's own go.env): exported here, it makes any go command from 1.21 on
# fetch that toolchain from the module proxy once (about 76 MB) and run
# it, in every recipe and every script they call.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' $(dir $(lastword $(MAKEFILE_LIST)))go.mod)
ifeq ($(GOTOOLCHAIN),)
$(error go.mod has no toolchain line: it names the Go toolchain every command here uses)
endif

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BENCHTIME ?= 1s
COUNT     ?= 1
FUZZTIME  ?= 30s
# The race detector needs cgo, i.e. a C compiler; without one, test runs unraced.
RACE      ?= $(if $(filter 1,$(shell GOTOOLCHAIN=$(GOTOOLCHAIN) go env CGO_ENABLED 2>/dev/null)),-race)

.PHONY: help build run image release test testenv realnode prism backends chart-tools chart-check conformance conformance-check bench bench-check bench-load bench-planes fuzz lint

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-12s %s\n", $$1, $$2 }'

build: ## build bin/tunnelgate and bin/tunnelgate-proxy (the proxy alone)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/ ./cmd/tunnelgate ./cmd/tunnelgate-proxy

# Release artifacts (./release, no container engine): the image for
# linux/amd64 and linux/arm64 as one OCI index, its SBOM, and the chart,
# written to DIST (git-ignored). Every timestamp is the commit's, so the
# same commit gives the same image digest.
DIST              ?= dist
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
RELEASE_FLAGS      = -version '$(VERSION)' -revision '$(REVISION)' -source-date-epoch '$(SOURCE_DATE_EPOCH)' -dist '$(DIST)'

image: ## the multi-arch image as an OCI layout in dist/image, and its SBOM (VERSION)
	go run ./release image $(RELEASE_FLAGS)

# Signing (docs/install.md#signing-a-release), with cosign: COSIGN_KEY
# (a key file of `cosign generate-key-pair`, its password in
# COSIGN_PASSWORD, or a KMS URI) signs with a key; SIGN=keyless signs
# with the OIDC identity of a CI instead; neither: unsigned.
# COSIGN_TLOG=false keeps a key's signatures out of the public
# transparency log; COSIGN is the cosign program.
SIGN        ?=
COSIGN_KEY  ?=
COSIGN_TLOG ?= true
COSIGN      ?= cosign

release: ## push the image, its SBOM and the chart: REGISTRY=host[/path] VERSION=x.y.z, signed with COSIGN_KEY or SIGN=keyless
	@[ -n "$(REGISTRY)" ] || { echo "release: say where to push, e.g. make release REGISTRY=ghcr.io/acme VERSION=0.2.0" >&2; exit 2; }
	go run ./release publish $(RELEASE_FLAGS) -registry '$(REGISTRY)' \
		-sign '$(SIGN)' -sign-key '$(COSIGN_KEY)' -tlog='$(COSIGN_TLOG)' -cosign '$(COSIGN)'

run: build ## standalone mode on examples/quickstart/ with demo backends (LISTEN=127.0.0.1:8080)
	bash examples/quickstart/run.sh bin/tunnelgate

# go test also runs every fuzz target on its seed corpus (testdata/fuzz and
# f.Add), so fuzz regressions are caught here without fuzzing. Allocation
# budgets (TestAllocs*, built with !race) need a second pass without -race,
# because the race detector makes sync.Pool drop items on purpose.
test: lint testenv realnode prism backends chart-check conformance-check ## lint, check the chart and conformance, then run all tests with the race detector, then allocation budgets
	@[ -n "$(RACE)" ] || echo "note: cgo is off (no C compiler?), so tests run without -race"
	go test $(RACE) -count=1 $$(go list ./... | grep -v '/test/chart$$')
	$(if $(RACE),go test -count=1 -run '^TestAllocs' ./...)

# Integration tests (test/kubeenv) run a real kube-apiserver, etcd and
# kube-controller-manager built from source: 10 to 15 minutes once per machine,
# then instant. Built here, not inside go test, so test timeouts never include it.
testenv: ## build the kube-apiserver/etcd test binaries into the cache
	bash test/tools/build.sh

# test/realnode runs a real node on that control plane: kube-scheduler,
# kubelet, kube-proxy and CoreDNS built from the Go module proxy, and
# Debian's containerd, runc, CNI plugins and iptables unpacked (not
# installed) into the cache: about 3 minutes once per machine after
# testenv, then instant.
realnode: testenv ## build kube-scheduler/kubelet/kube-proxy/CoreDNS and unpack containerd/runc/CNI/iptables into the cache
	bash test/tools/realnode/build.sh

# test/prism validates our Cloudflare API requests against Cloudflare's OpenAPI
# spec with Prism (npm): installed once per machine, then instant.
prism: ## install Prism and extract Cloudflare's OpenAPI spec into the cache
	bash test/prism/install.sh

# test/realbackend runs the static file servers users put behind a proxy:
# Debian's lighttpd, nginx and OpenSSH packages, fetched with apt-get download and
# unpacked (not installed) into the cache: seconds once per machine, then
# instant.
backends: ## fetch and unpack Debian's lighttpd, nginx and OpenSSH into the cache
	bash test/tools/backends/install.sh

# helm and cosign, built from the Go module proxy (test/tools/chart pins
# them), and the ServiceMonitor CRD the chart is validated against: once
# per machine.
chart-tools: ## build helm and cosign and fetch the CRDs chart-check needs into the cache
	bash test/tools/chart/build.sh
	bash test/tools/chart/cosign.sh

# Lints and renders chart/ with each chart/ci/*-values.yaml, compares the
# renders with test/chart/testdata, server-side dry-runs them on a real
# kube-apiserver, and installs, upgrades and uninstalls with helm on a real
# node (test/realnode) running the image built from the working tree, where
# the installed releases serve, roll and drain; also runs `make release`
# against a registry on loopback and installs the chart from it. The tests
# run in a network namespace without the module proxy, so the modules the
# release builds with are downloaded first, and the release's binaries are
# built first so that a machine's first arm64 build (minutes) is not inside
# go test's timeout. The upgrade test installs the previous release first:
# test/tools/previous builds its image and takes its chart, from the
# commit PREVIOUS (default HEAD^, the previous state of main; a tag works),
# cached per commit.
# UPDATE=1 rewrites the golden renders.
chart-check: chart-tools testenv realnode ## lint, render, validate and install the Helm chart, and run it on a real node (UPDATE=1 rewrites golden files; PREVIOUS=commit to upgrade from)
	go mod download
	go run ./release binaries -dist $(DIST)
	bash test/tools/previous/build.sh $(PREVIOUS)
	go test -count=1 -timeout 40m ./test/chart $(if $(UPDATE),-args -update)

# The upstream Gateway API conformance suite (test/conformance, a module of
# its own) against tunnelgate on the local cluster: about two minutes once
# the binaries are built. conformance-check (part of `make test`) fails when
# a run falls behind the committed report; `make conformance` writes a new
# one, to commit when it raises the bar. The report goes where upstream's
# conformance/reports wants it (v1.7/tunnelgate/, named
# <channel>-<version>-<mode>-report.yaml) and names the commit it ran at, so
# the tree must be committed. A run that passes replaces the report there,
# and its row in the README.md upstream asks for; one that fails leaves its
# report beside the log.
CONFORMANCE_DIR    ?= $(CURDIR)/test/conformance/reports/v1.7/tunnelgate
CONFORMANCE_REPORT ?= $(CONFORMANCE_DIR)/experimental-$(VERSION)-default-report.yaml
CONFORMANCE_LOG    ?= $(CURDIR)/test/conformance/reports/last-run.log
CONFORMANCE_RUN    ?= $(CURDIR)/test/conformance/reports/last-run-report.yaml
conformance-check: testenv ## run the Gateway API conformance suite; fail if it falls behind the committed report
	cd test/conformance && GOWORK=off go test -count=1 -timeout 30m .

conformance: testenv ## run the Gateway API conformance suite, write its report, list the results
	@case '$(VERSION)' in *-dirty) echo "conformance: the tree has uncommitted changes, and the report names the commit it ran at ($(VERSION)): commit first" >&2; exit 2;; esac
	@echo "conformance: the whole log goes to $(CONFORMANCE_LOG)"
	cd test/conformance && GOWORK=off TUNNELGATE_CONFORMANCE_REPORT=$(CONFORMANCE_RUN) TUNNELGATE_CONFORMANCE_VERSION=$(VERSION) \
		go test -count=1 -timeout 30m -run '^TestConformance$$' -v . > $(CONFORMANCE_LOG) 2>&1 && status=0 || status=$$?; \
	grep -E '^    --- (PASS|FAIL|SKIP)' $(CONFORMANCE_LOG) || true; \
	if [ $$status = 0 ]; then mkdir -p $(CONFORMANCE_DIR); find $(CONFORMANCE_DIR) -name '*-report.yaml' -delete; mv $(CONFORMANCE_RUN) $(CONFORMANCE_REPORT); \
		sed -i 's#^| experimental | .*#| experimental | [$(VERSION)](https://github.com/tunnelgate/tunnelgate/tree/$(VERSION)) | default | [$(VERSION) report](./$(notdir $(CONFORMANCE_REPORT))) |#' $(CONFORMANCE_DIR)/README.md; \
		echo "conformance: wrote $(CONFORMANCE_REPORT) and its row in README.md there"; fi; exit $$status

bench: ## run all benchmarks (BENCHTIME=1s COUNT=1)
	go test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) ./...

bench-planes: ## PLANES (default 100) Gateways with planes of their own, from apply to Programmed, then deleted, on a local cluster
	go test -run '^$$' -bench BenchmarkPlanesToProgrammed -benchtime 1x -timeout 30m ./test/chart

bench-check: ## enforce the gates in BENCHMARKS.md
	go run ./bench/benchcheck -file BENCHMARKS.md

# Targets are found by grep, so a new func FuzzXxx is picked up with no edit here.
bench-load: ## load benchmark: direct, httputil, nginx, tunnelgate, per request shape with syscalls/req; TARGETS=hop: TCP against unix socket (TARGETS, SHAPES, SYSCALLS, ROUNDS, DURATION, OUT)
	bash bench/load/run.sh

fuzz: ## run every fuzz target for FUZZTIME each (FUZZTIME=30s)
	@{ grep -rEo --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git \
		'^func Fuzz[A-Za-z0-9_]*\(' . || true; } | sort -u | \
	while IFS=: read -r file decl; do \
		name=$${decl#func }; name=$${name%(}; \
		echo "== $$name ($$(dirname "$$file"))"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$(dirname "$$file")" </dev/null; \
	done

# staticcheck is built from the Go module proxy at the version
# test/tools/lint pins, once per machine (about a minute).
# gofmt is the toolchain's own (GOTOOLCHAIN's), not the one on the PATH.
lint: ## fail on unformatted files, then go vet and staticcheck
	@unformatted=$$("$$(go env GOROOT)/bin/gofmt" -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	staticcheck=$$(bash test/tools/lint/build.sh) && "$$staticcheck" ./...
