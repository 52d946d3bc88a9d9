#!/usr/bin/env bash
# Builds what `make chart-check` needs into a cache directory keyed by the
# tools' versions, so a machine pays for it once (about 4 minutes on 2 cores):
#
#   ${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}/helm-vX-prometheus-operator-vY/
#     helm                                   built from this module (go.mod pins it)
#     monitoring.coreos.com_servicemonitors.yaml
#                                            the ServiceMonitor CRD, from the
#                                            Prometheus Operator module zip
#
# Both come from the Go module proxy, checked against the checksum database.
# Idempotent; concurrent runs are serialised by flock; the directory appears
# by renaming a finished temporary one. test/chart names the same directory
# (a test there checks its version constants against this file and go.mod).
set -euo pipefail

# The Prometheus Operator release whose ServiceMonitor CRD the chart's
# ServiceMonitor is validated against.
prometheus_operator_version=v0.85.0

cd "$(dirname "${BASH_SOURCE[0]}")"
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

helm_version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
cache=${TUNNELGATE_TOOLS_CACHE:-$HOME/.cache/tunnelgate/tools}
key="helm-${helm_version}-prometheus-operator-${prometheus_operator_version}"
dest="$cache/$key"
crd=monitoring.coreos.com_servicemonitors.yaml

complete() { [[ -x "$1/helm" && -s "$1/$crd" ]]; }

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

echo "chart-tools: building helm $helm_version (cold: about 4 minutes)"
go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${helm_version}" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm

echo "chart-tools: fetching the ServiceMonitor CRD of Prometheus Operator $prometheus_operator_version"
dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@${prometheus_operator_version}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp "$dir/example/prometheus-operator-crd/$crd" "$tmp/$crd"
chmod 644 "$tmp/$crd"
chmod 755 "$tmp"

complete "$tmp" || { echo "chart-tools: the build left $tmp incomplete" >&2; exit 1; }
rm -rf "$dest"
mv -T "$tmp" "$dest"
trap - EXIT
echo "chart-tools: ready in $dest"
