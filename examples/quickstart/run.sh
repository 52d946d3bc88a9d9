#!/usr/bin/env bash
# Starts the quickstart: three echo backends and tunnelgate in standalone
# mode on examples/quickstart/, then prints the requests to try.
# Usage: examples/quickstart/run.sh [path/to/tunnelgate]  (make run does this)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$here/../../go.mod")
bin=${1:-bin/tunnelgate}
listen=${LISTEN:-127.0.0.1:8080}
echo_bin=$(mktemp -d)/echo
go build -o "$echo_bin" "$here/echo"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for b in web:9101 api-v1:9102 api-v2:9103; do
  "$echo_bin" -name "${b%%:*}" -listen "127.0.0.1:${b##*:}" 2>/dev/null &
  pids+=($!)
done

cat <<EOT

tunnelgate standalone is serving examples/quickstart/ on http://$listen
Try, in another terminal:

  curl -i -H 'Host: www.example.com' http://$listen/          # web, with X-Served-By added
  curl    -H 'Host: api.example.com' http://$listen/v2/users  # path match: api-v2
  curl    -H 'Host: api.example.com' -H 'X-Api-Version: 2' http://$listen/users  # header match: api-v2
  for i in \$(seq 20); do curl -s -H 'Host: api.example.com' http://$listen/ | head -1; done | sort | uniq -c  # 90/10 split
  curl -i -H 'Host: nope.example.com' http://$listen/        # no route: 404
  $bin standalone -check -f $here                            # the objects' conditions

Edit a file under examples/quickstart/: the change is served as you save it
(on Linux; within a second elsewhere).
Ctrl-C stops everything.

EOT
"$bin" standalone -f "$here" -listen "$listen"
