#!/usr/bin/env bash
# Slow clients from many addresses against tunnelgate and nginx (issue 39):
# each proxy in front of the same backend, served by the attack program
# (bench/slowclients), which reports what the backend saw. See
# bench/README.md.
#
# Environment (defaults in brackets):
#   TARGETS     proxies to attack, in order ["tunnelgate nginx"]
#   ADDRS       attacking client addresses [4]
#   PER_ADDR    uploads from each [260]
#   LENGTH      Content-Length each announces, 0 for chunked [100000]
#   FIRST       body bytes each sends at once [1]
#   EVERY       then one more byte every [10s]
#   DURATION    how long each attack lasts [35s]
#   VICTIMS     victim requests per second [10]
#   TUNNELGATE  a tunnelgate-proxy binary to use [built from this tree]
#   TG_FLAGS    more flags for tunnelgate-proxy [none]
#   NGINX_BIN   an nginx binary to use [Debian's nginx package, fetched
#               with apt-get download and unpacked into a temporary
#               directory: nothing is installed]
set -euo pipefail

TARGETS=${TARGETS:-"tunnelgate nginx"}
ADDRS=${ADDRS:-4}
PER_ADDR=${PER_ADDR:-260}
LENGTH=${LENGTH:-100000}
FIRST=${FIRST:-1}
EVERY=${EVERY:-10s}
DURATION=${DURATION:-35s}
VICTIMS=${VICTIMS:-10}
TG_FLAGS=${TG_FLAGS:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$ROOT/go.mod")
say() { printf 'slowclients: %s\n' "$*" >&2; }
die() {
	printf 'slowclients: error: %s\n' "$*" >&2
	exit 1
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tunnelgate-slowclients.XXXXXX")
PIDS=()
cleanup() {
	set +e
	local pid
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	die "nothing listens on port $1"
}

say "building the attack"
go build -o "$TMP/slowclients" ./bench/slowclients
BACKEND_PORT=$(free_port)

for t in $TARGETS; do
	case $t in
	tunnelgate)
		if [ -z "${TUNNELGATE:-}" ]; then
			say "building tunnelgate-proxy"
			go build -o "$TMP/tunnelgate-proxy" ./cmd/tunnelgate-proxy
			TUNNELGATE=$TMP/tunnelgate-proxy
		fi
		p=$(free_port)
		cat >"$TMP/tunnelgate.json" <<EOF
{"schema":"tunnelgate.dev/dataplane/v1","listeners":[{"name":"bench","protocol":"HTTP"}],"routes":[{"kind":"HTTPRoute","namespace":"bench","name":"r","created":"2026-01-01T00:00:00Z","listeners":["bench"],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"}}],"backends":[{"cluster":"backend","weight":1}]}]}],"clusters":[{"name":"backend","protocol":"http1","endpoints":[{"address":"127.0.0.1:$BACKEND_PORT"}]}]}
EOF
		# shellcheck disable=SC2086 # TG_FLAGS are words
		"$TUNNELGATE" -config "$TMP/tunnelgate.json" -listen "127.0.0.1:$p" -admin "" $TG_FLAGS 2>"$TMP/tunnelgate.log" &
		PIDS+=($!)
		;;
	nginx)
		if [ -z "${NGINX_BIN:-}" ]; then
			say "fetching Debian's nginx package (apt-get download; not installed)"
			(cd "$TMP" && apt-get download nginx >/dev/null 2>&1) || die "apt-get download nginx failed; set NGINX_BIN to an nginx binary"
			dpkg-deb -x "$TMP"/nginx_*.deb "$TMP/nginx-root"
			NGINX_BIN=$TMP/nginx-root/usr/sbin/nginx
		fi
		p=$(free_port)
		NG=$TMP/nginx
		mkdir -p "$NG/tmp"
		chmod 755 "$TMP" "$NG"
		# As bench/load's nginx (one worker, keepalive upstream), with no
		# cap on the body size (client_max_body_size 0), so that every
		# upload is taken as tunnelgate takes it. nginx reads a body whole
		# (to a temporary file past 16 KiB) before it connects to the
		# backend: proxy_request_buffering is on by default.
		cat >"$NG/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 16384;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events {
    worker_connections 8192;
}
http {
    access_log off;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    client_max_body_size 0;
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 256;
    }
    server {
        listen 127.0.0.1:$p;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
        }
    }
}
EOF
		"$NGINX_BIN" -p "$NG" -e "$NG/error.log" -c "$NG/nginx.conf" -g 'daemon off;' &
		PIDS+=($!)
		;;
	*) die "unknown target $t (known: tunnelgate nginx)" ;;
	esac
	wait_port "$p"
	version=$t
	[ "$t" = nginx ] && version=$("$NGINX_BIN" -v 2>&1 | sed 's/.*version: //')
	say "attacking $version on port $p"
	echo "## $version"
	"$TMP/slowclients" -target "127.0.0.1:$p" -backend "127.0.0.1:$BACKEND_PORT" -addrs "$ADDRS" -per-addr "$PER_ADDR" \
		-length "$LENGTH" -first "$FIRST" -every "$EVERY" -duration "$DURATION" -victims "$VICTIMS"
	kill -TERM "${PIDS[-1]}"
	wait "${PIDS[-1]}" 2>/dev/null || true
	unset 'PIDS[-1]'
done
