// Package chart checks the Helm chart in chart/ (its tests are the whole
// package; `make chart-check` runs them):
//
//   - helm lints and renders it with every chart/ci/*-values.yaml, and the
//     renders must equal the golden files in testdata/ (`make chart-check
//     UPDATE=1` rewrites them after a deliberate change);
//   - values.schema.json and the chart's own checks refuse bad values with a
//     message that says what to fix;
//   - the controller's RBAC equals config/rbac, the chart's CRDs equal
//     config/crd, and every container runs non-root, read-only, with no
//     capabilities;
//   - every rendered object is applied with server-side dry-run and strict
//     field validation to a real kube-apiserver (test/kubeenv), and helm
//     installs, upgrades and uninstalls a release there;
//   - a Gateway's dedicated data plane (ctrl/provision) has the chart's
//     proxy Pod shape, and its objects pass the API server's validation;
//   - helm installs the chart on a real node (test/realnode: kubelet,
//     containerd and runc, kube-proxy, CoreDNS) with the image built from
//     the commit under test and the connector stand-in (test/connector,
//     cloudflared and the edge) as an image of its own, both imported
//     into containerd (test/podapps holds the Pods' test programs):
//     visitors reach a backend Pod through the edge, clients in the
//     cluster through the proxies' Service, sessions hold across proxy
//     Pods, dedicated planes get their own Pods and tunnels, and rolling
//     the Deployments under load loses no request;
//   - upgrades lose nothing: the previous release (the chart and image of
//     the commit test/tools/previous builds, by default the parent) is
//     installed with its CRDs, serving a Gateway on the shared proxies and
//     one with a dedicated plane; under load through the edge the new
//     CRDs are applied server-side and helm upgrades to the working
//     tree's chart and image, then rolls back, and in each the
//     controllers, proxies and plane roll to the other image, their
//     proxies serve the config version the controller serves, and no
//     request fails;
//   - what only a real runtime shows: the security context as the kernel
//     applies it to every container's process (user, capabilities,
//     seccomp, no_new_privs, read-only root), GOMEMLIMIT equal to the
//     container's cgroup memory limit, the native sidecar started first,
//     the kubelet's readiness probe, and a proxy Pod deleted under load
//     (cloudflared stopped first, then the proxy) losing no request;
//   - with the chart's default values a WebSocket, a server-sent event
//     stream and a gRPC call go through test/connector to a backend Pod;
//     with proxy.originTransport=unix the WebSocket gets cloudflared's 502
//     (cloudflare/cloudflared#560) and the rest still pass;
//   - the Grafana dashboard and the alert rules query only metrics of
//     docs/metrics.md, and are well formed (unique panel ids, balanced
//     expressions, a severity and annotations on every alert);
//   - the Dockerfile builds the image `make image` builds: its build stage,
//     run here without a container engine, writes release/image's root
//     filesystem file for file, its final stage is that tree on scratch
//     with the same user, entrypoint and labels, and its binary is static
//     and runs as the image's non-root user;
//   - `make release` pushes to a real OCI registry on loopback (go-
//     containerregistry's) an index of linux/amd64 and linux/arm64 images
//     that run /tunnelgate as 65532 with the release's labels, whose binary
//     runs and prints the version, its SBOM as a referrer describing that
//     index and those binaries, and the chart, which `helm install oci://`
//     installs with every tunnelgate container pinned to the pushed digest;
//   - `make release` with a cosign key (without the transparency log: no
//     network) signs the index and the chart by digest and attests the SBOM
//     to the index, so that the stock cosign verifies each (payloads naming
//     those digests, the attested predicate the SBOM) and helm pulls the
//     chart by the digest verified, while another key, a tag moved to a
//     tampered manifest, and the signatures copied onto one are refused.
//
// helm and the Prometheus Operator CRDs come from the Go module proxy by
// test/tools/chart/build.sh (`make chart-tools`), cosign by
// test/tools/chart/cosign.sh (the same target), the node's programs by
// test/tools/realnode/build.sh (`make realnode`), the previous release by
// test/tools/previous/build.sh (`make chart-check` runs it), into caches;
// the tests fail, not skip, when they are missing.
package chart
