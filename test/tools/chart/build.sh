#!/usr/bin/env bash
# Builds what `make chart-check` needs into a cache directory keyed by the
# tools' versions, so a machine pays for it once (about 4 minutes on 2 cores):
#
#   ${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}/helm-vX-prometheus-operator-vY/
#     helm                                   built from this module (go.mod pins it)
#     monitoring.coreos.com_servicemonitors.yaml
#     monitoring.coreos.com_prometheusrules.yaml
#                                            the ServiceMonitor and
#                                            PrometheusRule CRDs, from the
#                                            Prometheus Operator module zip
#
# Both come from the Go module proxy, checked against the checksum database.
# Idempotent; concurrent runs are serialised by flock; the directory appears
# by renaming a finished temporary one. test/chart names the same directory
# (a test there checks its version constants against this file and go.mod).
set -euo pipefail

# The Prometheus Operator release whose CRDs the chart's ServiceMonitor and
# PrometheusRule are validated against.
prometheus_operator_version=v0.85.0

cd "$(dirname "${BASH_SOURCE[0]}")"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "../../../go.mod")
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
cache=${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}
key="helm-${helm_version}-prometheus-operator-${prometheus_operator_version}"
dest="$cache/$key"
crds=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)

complete() {
	local c
	[[ -x "$1/helm" ]] || return 1
	for c in "${crds[@]}"; do [[ -s "$1/$c" ]] || return 1; done
}

if complete "$dest"; then
	echo "chart-tools: present in $dest"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.$key.lock"
command -v flock >/dev/null && flock 9
if complete "$dest"; then
	echo "chart-tools: present in $dest"
	exit 0
fi
rm -rf "$cache/.$key.tmp."*
tmp=$(mktemp -d "$cache/.$key.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# A directory from before a CRD was added to the list has the right helm
# (the key names its version): keep it rather than build it again.
if [[ -x "$dest/helm" ]]; then
	echo "chart-tools: keeping helm $helm_version from $dest"
	cp "$dest/helm" "$tmp/helm"
else
	echo "chart-tools: building helm $helm_version (cold: about 4 minutes)"
	go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${helm_version}" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm
fi

echo "chart-tools: fetching the CRDs of Prometheus Operator $prometheus_operator_version"
dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@${prometheus_operator_version}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
for c in "${crds[@]}"; do
	cp "$dir/example/prometheus-operator-crd/$c" "$tmp/$c"
	chmod 644 "$tmp/$c"
done
chmod 755 "$tmp"

complete "$tmp" || { echo "chart-tools: the build left $tmp incomplete" >&2; exit 1; }
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
echo "chart-tools: ready in $dest"
