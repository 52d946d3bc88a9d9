#!/usr/bin/env bash
# Load benchmark: the Go backend served directly, and the same backend behind
# tunnelgate, a tuned httputil.ReverseProxy and nginx, all on loopback with
# pinned CPUs. The "hop" target (not in the defaults) measures tunnelgate's
# origin listener over loopback TCP against a unix socket, with a
# cloudflared-shaped client (bench/load/hop) instead of wrk. Each request
# shape (SHAPES) is measured in rounds of its own and gets its own table,
# with the system calls each proxy makes per request, counted in a short
# run of its own after the shape's rounds. See bench/README.md for what it
# measures and how to read it.
#
# Environment (defaults in brackets):
#   TARGETS      targets to run, in order ["direct httputil nginx tunnelgate"];
#                also "hop", "baseline" (needs BASELINE), and "floor", the
#                least a Go proxy does (test/floorrelay; it does not route,
#                so it sits out routes5k)
#   BASELINE     a tunnelgate binary built from another commit, measured as
#                the "baseline" target in the same rounds, for a before and
#                after: git worktree add /tmp/base COMMIT && (cd /tmp/base &&
#                go build -o /tmp/base.bin ./cmd/tunnelgate)
#   SHAPES       request shapes to measure, in order
#                ["get headers body64k routes5k"]: get, a 100-byte GET on /;
#                headers, the same with 20 browser and Cloudflare headers;
#                body64k, a GET answered with 64 KiB; routes5k, GETs spread
#                over 5,000 routes (500 hostnames, 10 path prefixes each).
#                The hop target measures get only.
#   SYSCALLS     1: count each proxy's system calls per request, in a run
#                of SYSCALL_DURATION after each shape's rounds; 0: skip [1]
#   SYSCALL_DURATION  length of that run [3s]
#   ROUNDS       interleaved rounds per target [3]
#   DURATION     length of each measured wrk run [8s]
#   WARMUP       length of the unmeasured wrk run before each one [1s]
#   CONNECTIONS  wrk connections, and the hop client's [50]
#   OUT          also write the result tables as Markdown to this file [unset]
set -euo pipefail

TARGETS=${TARGETS:-"direct httputil nginx tunnelgate"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-50}
OUT=${OUT:-}
SHAPES=${SHAPES:-"get headers body64k routes5k"}
SYSCALLS=${SYSCALLS:-1}
SYSCALL_DURATION=${SYSCALL_DURATION:-3s}

# The routes5k shape: ROUTE_HOSTS hostnames rN.ROUTE_DOMAIN, each with
# ROUTE_PREFIXES path prefixes /p0/ and on, every route to the backend.
ROUTE_HOSTS=500
ROUTE_PREFIXES=10
ROUTE_DOMAIN=bench.test

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# Go: the toolchain go.mod's toolchain line names (the Makefile says why).
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$ROOT/go.mod")

say() { printf '%s\n' "load: $*" >&2; }
die() {
	printf '%s\n' "load: error: $*" >&2
	exit 1
}

# ---- arguments --------------------------------------------------------------

read -ra TARGET_LIST <<<"$TARGETS"
[ ${#TARGET_LIST[@]} -gt 0 ] || die "TARGETS is empty"
for t in "${TARGET_LIST[@]}"; do
	case $t in
	direct | httputil | nginx | tunnelgate | hop | baseline | floor) ;;
	*) die "unknown target '$t' in TARGETS (known: direct httputil nginx tunnelgate hop baseline floor)" ;;
	esac
done
want() { [[ " ${TARGET_LIST[*]} " == *" $1 "* ]]; }
# MEASURED: what the rounds rotate through; "hop" is measured as two
# transports, hop-tcp and hop-unix. WRK_LIST: the targets wrk loads.
MEASURED=()
WRK_LIST=()
for t in "${TARGET_LIST[@]}"; do
	if [ "$t" = hop ]; then
		MEASURED+=(hop-tcp hop-unix)
	else
		MEASURED+=("$t")
		WRK_LIST+=("$t")
	fi
done
is_hop() { [[ $1 == hop-* ]]; }
# in_shape SHAPE TARGET: whether TARGET is measured in SHAPE: the hop
# transports in get only, the floor relay (which does not route) in all
# but routes5k.
in_shape() {
	if is_hop "$2"; then [ "$1" = get ]; elif [ "$2" = floor ]; then [ "$1" != routes5k ]; fi
}
read -ra SHAPE_LIST <<<"$SHAPES"
[ ${#SHAPE_LIST[@]} -gt 0 ] || die "SHAPES is empty"
for s in "${SHAPE_LIST[@]}"; do
	case $s in
	get | headers | body64k | routes5k) ;;
	*) die "unknown shape '$s' in SHAPES (known: get headers body64k routes5k)" ;;
	esac
done
has_shape() { [[ " ${SHAPE_LIST[*]} " == *" $1 "* ]]; }
if want hop && [ ${#WRK_LIST[@]} -eq 0 ] && ! has_shape get; then
	die "the hop target measures the get shape only, and SHAPES=\"$SHAPES\" has none"
fi
[[ $SYSCALLS =~ ^[01]$ ]] || die "SYSCALLS must be 0 or 1, not '$SYSCALLS'"
[[ $SYSCALL_DURATION =~ ^[1-9][0-9]*[smh]?$ ]] || die "SYSCALL_DURATION must look like 3s, not '$SYSCALL_DURATION'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$ROUNDS'"
[[ $CONNECTIONS =~ ^[1-9][0-9]*$ ]] || die "CONNECTIONS must be a positive integer"
[[ $DURATION =~ ^[1-9][0-9]*[smh]?$ ]] || die "DURATION must look like 8s, not '$DURATION'"
[[ $WARMUP =~ ^[1-9][0-9]*[smh]?$ ]] || die "WARMUP must look like 1s, not '$WARMUP'"
[ -r /proc/self/stat ] || die "needs Linux /proc to measure CPU time"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
command -v go >/dev/null || die "go not found"

# ---- processes and cleanup --------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tunnelgate-load.XXXXXX")
PIDS=()
WRK_PID=
POLICY_RC_CREATED=

cleanup() {
	set +e
	local pid i
	[ -z "$WRK_PID" ] || kill -TERM "$WRK_PID" 2>/dev/null
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do
		for ((i = 0; i < 30; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	[ -z "$POLICY_RC_CREATED" ] || rm -f /usr/sbin/policy-rc.d
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- tools: wrk and nginx from Debian ---------------------------------------

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
APT_UPDATED=

apt_try() {
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >>"$TMP/apt.log" 2>&1
}

# apt_install PKG...: install, running apt-get update once if the first try fails.
apt_install() {
	command -v apt-get >/dev/null || die "$* missing and apt-get not found; install them by hand"
	if [ -n "$SUDO" ] && ! command -v sudo >/dev/null; then
		die "$* missing; need root or sudo to install them"
	fi
	say "installing $* (log: $TMP/apt.log)"
	apt_try "$@" && return 0
	if [ -z "$APT_UPDATED" ]; then
		APT_UPDATED=1
		$SUDO apt-get update >>"$TMP/apt.log" 2>&1 || true
		apt_try "$@" && return 0
	fi
	return 1
}

find_nginx() {
	command -v nginx 2>/dev/null && return 0
	[ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx && return 0
	return 1
}

WRK=
if [ ${#WRK_LIST[@]} -gt 0 ]; then
	if ! command -v wrk >/dev/null; then
		apt_install wrk || { tail -n 20 "$TMP/apt.log" >&2; die "could not install wrk"; }
	fi
	WRK=$(command -v wrk)
fi

NGINX=
if want nginx; then
	if ! NGINX=$(find_nginx); then
		# The package's postinst would start the system nginx service; a
		# policy-rc.d that denies everything stops that (Docker images ship
		# one already). Only made here when absent, and removed right after.
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
			$SUDO chmod 755 /usr/sbin/policy-rc.d
			POLICY_RC_CREATED=1
		fi
		apt_install nginx-light || apt_install nginx ||
			{ tail -n 20 "$TMP/apt.log" >&2; die "could not install nginx"; }
		if [ -n "$POLICY_RC_CREATED" ]; then
			$SUDO rm -f /usr/sbin/policy-rc.d
			POLICY_RC_CREATED=
		fi
		NGINX=$(find_nginx) || die "nginx installed but not found on PATH or in /usr/sbin"
	fi
fi

# ---- build ------------------------------------------------------------------

say "building into $TMP"
go build -o "$TMP/backend" ./bench/load/backend
if want httputil; then go build -o "$TMP/rproxy" ./bench/load/rproxy; fi
if want hop; then go build -o "$TMP/hop" ./bench/load/hop; fi
if want floor; then go build -o "$TMP/floor" ./test/floorrelay/floor; fi
if want baseline; then
	[ -n "${BASELINE:-}" ] && [ -x "$BASELINE" ] || die "the baseline target needs BASELINE, a tunnelgate binary of another commit"
fi
if want tunnelgate || want hop; then
	go build -o "$TMP/tunnelgate" ./cmd/tunnelgate ||
		die "building ./cmd/tunnelgate failed; skip it with TARGETS=\"direct httputil nginx\""
	if ! "$TMP/tunnelgate" proxy --help >"$TMP/tunnelgate-help.txt" 2>&1; then
		sed 's/^/  | /' "$TMP/tunnelgate-help.txt" | head -n 8 >&2
		die "'tunnelgate proxy --help' failed: this build has no proxy subcommand yet. Skip it with TARGETS=\"direct httputil nginx\""
	fi
fi

# ---- CPUs -------------------------------------------------------------------

# expand_cpus "0-2,5" prints 0 1 2 5, one a line.
expand_cpus() {
	local part lo hi
	local -a parts
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		part=${part%%:*} # drop a stride, if any
		if [[ $part == *-* ]]; then
			lo=${part%-*} hi=${part#*-}
			seq "$lo" "$hi"
		elif [ -n "$part" ]; then
			echo "$part"
		fi
	done
}

CPU_LIST=$(taskset -cp $$ 2>/dev/null | sed -n 's/.*list: *//p' || true)
mapfile -t CPUS < <(expand_cpus "$CPU_LIST" | sort -n)
if [ ${#CPUS[@]} -eq 0 ]; then mapfile -t CPUS < <(seq 0 $(($(nproc) - 1))); fi
LOAD_CPU=${CPUS[0]}
SERVER_CPU=${CPUS[${#CPUS[@]} - 1]}
if [ "$LOAD_CPU" = "$SERVER_CPU" ]; then
	say "warning: only CPU $LOAD_CPU is allowed, so the load client shares it with the servers"
fi
CLK_TCK=$(getconf CLK_TCK)
LOADAVG=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$LOADAVG" 'BEGIN { exit !(l > 0.5) }'; then
	say "warning: load average $LOADAVG before the run: something else is busy, expect noisy numbers"
fi

# ---- system calls -----------------------------------------------------------

# SYSCALL_TOOL: perf (counting tracepoints: cheap, exact), strace (-c: it
# stops the target at every call, which slows it and so changes its calls:
# fewer reads that find nothing), or empty (not counted). SYSCALL_EVENTS:
# the per-call tracepoints this kernel has, of those worth showing.
SYSCALL_TOOL=
SYSCALL_EVENTS=
SYSCALL_NAMES="read write readv writev recvfrom sendto recvmsg sendmsg epoll_wait epoll_pwait epoll_ctl getsockopt setsockopt ioctl futex nanosleep sendfile64 splice pread64 pwrite64 accept4 close"
if [ "$SYSCALLS" = 1 ] && [ ${#WRK_LIST[@]} -gt 0 ]; then
	tracefs=
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		if [ -d "$d/events/raw_syscalls/sys_enter" ]; then
			tracefs=$d
			break
		fi
	done
	if [ -n "$tracefs" ] && command -v perf >/dev/null &&
		perf stat -x, -e raw_syscalls:sys_enter -- true 2>&1 | grep -q '^[0-9][0-9]*,.*raw_syscalls:sys_enter'; then
		SYSCALL_TOOL=perf
		SYSCALL_EVENTS=raw_syscalls:sys_enter
		for c in $SYSCALL_NAMES; do
			[ ! -d "$tracefs/events/syscalls/sys_enter_$c" ] || SYSCALL_EVENTS+=,syscalls:sys_enter_$c
		done
	elif command -v strace >/dev/null && strace -c -o /dev/null true >/dev/null 2>&1; then
		SYSCALL_TOOL=strace
		say "warning: perf is missing or may not count syscall tracepoints; counting system calls with strace -c," \
			"which slows the target, so its counts differ from an unslowed run's (fewer reads that find nothing)"
	else
		say "warning: neither perf nor strace can count system calls here: the syscalls/req column will be -"
	fi
fi

# ---- ports ------------------------------------------------------------------

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ports come from below the kernel's ephemeral range: a port there may be
# held by some outgoing connection, which a connect test cannot see.
EPHEMERAL_LO=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[[ $EPHEMERAL_LO =~ ^[0-9]+$ ]] || EPHEMERAL_LO=32768
NEXT_PORT=$((20000 + RANDOM % (EPHEMERAL_LO > 22000 ? EPHEMERAL_LO - 21000 : 20000)))
# alloc_port VAR: store in VAR a loopback port that nothing listens on.
alloc_port() {
	while port_open "$NEXT_PORT"; do NEXT_PORT=$((NEXT_PORT + 1)); done
	printf -v "$1" '%s' "$NEXT_PORT"
	NEXT_PORT=$((NEXT_PORT + 1))
}

# wait_port NAME PORT PID: wait until PORT accepts, failing if PID dies.
wait_port() {
	local i
	for ((i = 0; i < 150; i++)); do
		port_open "$2" && return 0
		if ! kill -0 "$3" 2>/dev/null; then
			tail -n 20 "$TMP/$1.log" >&2 || true
			die "$1 exited before accepting on port $2 (log above)"
		fi
		sleep 0.1
	done
	tail -n 20 "$TMP/$1.log" >&2 || true
	die "$1 did not accept on port $2 within 15 s"
}

# start NAME CMD...: run CMD on the server CPU in the background.
declare -A PID PORT
start() {
	local name=$1
	shift
	taskset -c "$SERVER_CPU" "$@" >"$TMP/$name.log" 2>&1 &
	PIDS+=("$!")
	PID[$name]=$!
}

# ---- servers ----------------------------------------------------------------

alloc_port BACKEND_PORT
start backend "$TMP/backend" -listen "127.0.0.1:$BACKEND_PORT"
wait_port backend "$BACKEND_PORT" "${PID[backend]}"
PORT[direct]=$BACKEND_PORT
PID[direct]=${PID[backend]}

# The routes5k shape has proxies of its own, configured with its 5,000
# routes, named after their target with -routes (httputil-routes and so
# on); the direct target serves it as is. They wait idle while the other
# shapes are measured, and the others while it is.
ROUTED=
if has_shape routes5k && [ ${#WRK_LIST[@]} -gt 0 ]; then ROUTED=1; fi

# key SHAPE TARGET: the name of the process that serves TARGET in SHAPE.
key() {
	if [ "$1" = routes5k ] && [ "$2" != direct ]; then echo "$2-routes"; else echo "$2"; fi
}

if want httputil; then
	alloc_port p
	start httputil "$TMP/rproxy" -listen "127.0.0.1:$p" -backend "http://127.0.0.1:$BACKEND_PORT"
	PORT[httputil]=$p
	wait_port httputil "$p" "${PID[httputil]}"
	if [ -n "$ROUTED" ]; then
		alloc_port p
		start httputil-routes "$TMP/rproxy" -listen "127.0.0.1:$p" -backend "http://127.0.0.1:$BACKEND_PORT" \
			-route-hosts "$ROUTE_HOSTS" -route-prefixes "$ROUTE_PREFIXES" -route-domain "$ROUTE_DOMAIN"
		PORT[httputil-routes]=$p
		wait_port httputil-routes "$p" "${PID[httputil-routes]}"
	fi
fi

if want floor; then
	alloc_port p
	start floor "$TMP/floor" -listen "127.0.0.1:$p" -backend "127.0.0.1:$BACKEND_PORT"
	PORT[floor]=$p
	wait_port floor "$p" "${PID[floor]}"
fi

# nginx_servers PORT ROUTED: the server blocks of an nginx config: one
# sending everything to the backend, or with ROUTED=1 one per routes5k
# hostname with a location per prefix, each sending to the backend alike.
nginx_servers() {
	local location="proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;"
	if [ "$2" != 1 ]; then
		printf '    server {\n        listen 127.0.0.1:%s;\n        location / {\n            %s\n        }\n    }\n' "$1" "$location"
		return
	fi
	awk -v port="$1" -v hosts="$ROUTE_HOSTS" -v prefixes="$ROUTE_PREFIXES" -v domain="$ROUTE_DOMAIN" -v loc="$location" 'BEGIN {
		for (h = 0; h < hosts; h++) {
			printf "    server {\n        listen 127.0.0.1:%s;\n        server_name r%d.%s;\n", port, h, domain
			for (p = 0; p < prefixes; p++) printf "        location /p%d/ {\n            %s\n        }\n", p, loc
			printf "    }\n"
		}
	}'
}

# start_nginx NAME ROUTED: an nginx as the target NAME, in $TMP/NAME.
start_nginx() {
	local name=$1 ng=$TMP/$1 p
	alloc_port p
	mkdir -p "$ng/tmp"
	chmod 755 "$TMP" "$ng" # the workers may run as another user
	# keepalive_requests is raised on both sides: the Go servers never close
	# a kept-alive connection, and nginx otherwise would after 1000 requests.
	cat >"$ng/nginx.conf" <<NGINX
worker_processes 1;
pid $ng/nginx.pid;
error_log $ng/error.log warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    client_body_temp_path $ng/tmp/body;
    proxy_temp_path $ng/tmp/proxy;
    keepalive_requests 1000000;
    server_names_hash_max_size 4096;
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 256;
        keepalive_requests 1000000;
    }
$(nginx_servers "$p" "$2")
}
NGINX
	start "$name" "$NGINX" -p "$ng" -e "$ng/error.log" -c "$ng/nginx.conf" -g 'daemon off;'
	PORT[$name]=$p
	wait_port "$name" "$p" "${PID[$name]}"
}

if want nginx; then
	start_nginx nginx 0
	[ -z "$ROUTED" ] || start_nginx nginx-routes 1
fi

if want tunnelgate || want hop || want baseline; then
	cat >"$TMP/tunnelgate.json" <<JSON
{"schema":"tunnelgate.dev/dataplane/v1","listeners":[{"name":"bench","protocol":"HTTP"}],"routes":[{"kind":"HTTPRoute","namespace":"bench","name":"r","created":"2026-01-01T00:00:00Z","listeners":["bench"],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"}}],"backends":[{"cluster":"backend","weight":1}]}]}],"clusters":[{"name":"backend","protocol":"http1","endpoints":[{"address":"127.0.0.1:$BACKEND_PORT"}]}]}
JSON
	# The routes5k config: an HTTPRoute per hostname and prefix, each
	# with one rule to the backend.
	if [ -n "$ROUTED" ]; then
		awk -v hosts="$ROUTE_HOSTS" -v prefixes="$ROUTE_PREFIXES" -v domain="$ROUTE_DOMAIN" -v port="$BACKEND_PORT" 'BEGIN {
			printf "{\"schema\":\"tunnelgate.dev/dataplane/v1\",\"listeners\":[{\"name\":\"bench\",\"protocol\":\"HTTP\"}],\"routes\":["
			sep = ""
			for (h = 0; h < hosts; h++) for (p = 0; p < prefixes; p++) {
				printf "%s\n{\"kind\":\"HTTPRoute\",\"namespace\":\"bench\",\"name\":\"r%d-p%d\",\"created\":\"2026-01-01T00:00:00Z\",\"listeners\":[\"bench\"],\"hostnames\":[\"r%d.%s\"],\"rules\":[{\"matches\":[{\"path\":{\"type\":\"PathPrefix\",\"value\":\"/p%d/\"}}],\"backends\":[{\"cluster\":\"backend\",\"weight\":1}]}]}", sep, h, p, h, domain, p
				sep = ","
			}
			printf "],\n\"clusters\":[{\"name\":\"backend\",\"protocol\":\"http1\",\"endpoints\":[{\"address\":\"127.0.0.1:%s\"}]}]}\n", port
		}' >"$TMP/tunnelgate-routes.json"
	fi
fi

if want tunnelgate; then
	alloc_port p
	start tunnelgate "$TMP/tunnelgate" proxy --config "$TMP/tunnelgate.json" --listen "127.0.0.1:$p"
	PORT[tunnelgate]=$p
	wait_port tunnelgate "$p" "${PID[tunnelgate]}"
	# Its admin listener is off, so that it does not collide with the
	# tunnelgate target's.
	if [ -n "$ROUTED" ]; then
		alloc_port p
		start tunnelgate-routes "$TMP/tunnelgate" proxy --config "$TMP/tunnelgate-routes.json" --listen "127.0.0.1:$p" --admin ""
		PORT[tunnelgate-routes]=$p
		wait_port tunnelgate-routes "$p" "${PID[tunnelgate-routes]}"
	fi
fi

# The baseline target: another build with the same config; its admin
# listener is off, so that it does not collide with the tunnelgate
# target's.
if want baseline; then
	alloc_port p
	start baseline "$BASELINE" proxy --config "$TMP/tunnelgate.json" --listen "127.0.0.1:$p" --admin ""
	PORT[baseline]=$p
	wait_port baseline "$p" "${PID[baseline]}"
	if [ -n "$ROUTED" ]; then
		alloc_port p
		start baseline-routes "$BASELINE" proxy --config "$TMP/tunnelgate-routes.json" --listen "127.0.0.1:$p" --admin ""
		PORT[baseline-routes]=$p
		wait_port baseline-routes "$p" "${PID[baseline-routes]}"
	fi
fi

# The hop target: two proxies with the tunnelgate target's config, one whose
# origin listener is on loopback TCP, one on a unix socket; each waits
# idle while the other is measured. Their admin listeners are off, so that
# they do not collide with the tunnelgate target's (or with each other).
declare -A ADDR
if want hop; then
	alloc_port p
	start hop-tcp "$TMP/tunnelgate" proxy --config "$TMP/tunnelgate.json" --listen "127.0.0.1:$p" --admin ""
	ADDR[hop-tcp]=127.0.0.1:$p
	wait_port hop-tcp "$p" "${PID[hop-tcp]}"
	SOCK=$TMP/origin.sock
	start hop-unix "$TMP/tunnelgate" proxy --config "$TMP/tunnelgate.json" --listen "unix:$SOCK" --admin ""
	ADDR[hop-unix]=unix:$SOCK
	for ((i = 0; i < 150; i++)); do
		[ -S "$SOCK" ] && break
		kill -0 "${PID[hop-unix]}" 2>/dev/null || { tail -n 20 "$TMP/hop-unix.log" >&2; die "hop-unix exited before listening on $SOCK (log above)"; }
		sleep 0.1
	done
	[ -S "$SOCK" ] || die "hop-unix did not listen on $SOCK within 15 s"
fi

# status PORT [PATH [HOST]]: the status code of one GET of PATH (/) with
# Host HOST (127.0.0.1) on PORT, over a bash socket.
status() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "${2:-/}" "${3:-127.0.0.1}" >&3
		IFS=' ' read -r -t 5 _ code _ <&3 && echo "$code"
	) 2>/dev/null || echo none
}

# Every target must answer 200 before anything is measured (the hop client
# exits 1 on anything but a 2xx): to a GET / and, when the shapes ask,
# to a GET of the 64 KiB answer and to the first and last of the routes,
# and 404 to a path no route takes (so that routes are what answers).
for t in "${MEASURED[@]}"; do
	if is_hop "$t"; then
		"$TMP/hop" -addr "${ADDR[$t]}" -connections 1 -max-requests 1 -duration 5s >"$TMP/check.txt" 2>&1 ||
			die "target $t on ${ADDR[$t]} did not answer 2xx: $(tail -n 2 "$TMP/check.txt") (log: $TMP/$t.log)"
		continue
	fi
	checks=("200 $t /")
	if has_shape body64k; then checks+=("200 $t /64k"); fi
	if [ -n "$ROUTED" ] && in_shape routes5k "$t"; then
		k=$(key routes5k "$t")
		checks+=("200 $k /p0/ r0.$ROUTE_DOMAIN" "200 $k /p$((ROUTE_PREFIXES - 1))/x r$((ROUTE_HOSTS - 1)).$ROUTE_DOMAIN")
		[ "$t" = direct ] || checks+=("404 $k /x/ r0.$ROUTE_DOMAIN")
	fi
	for c in "${checks[@]}"; do
		read -r want_code k path host <<<"$c"
		code=$(status "${PORT[$k]}" "$path" "$host")
		[ "$code" = "$want_code" ] ||
			die "target $k on port ${PORT[$k]} answered '$code' to GET $path${host:+ (Host: $host)}, not $want_code (log: $TMP/$k.log)"
	done
done

# ---- shapes -----------------------------------------------------------------

# HEADERS: the headers shape's request headers (besides wrk's Host), as a
# browser behind Cloudflare sends them and the edge adds to them.
HEADERS=(
	"User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"
	"Accept-Language: en-US,en;q=0.9,de;q=0.8"
	"Accept-Encoding: gzip, deflate, br, zstd"
	"Cookie: session=7f3a9c2e5b1d4f8a6c0e2b4d6f8a0c2e4b6d8f0a; csrftoken=Yx8kQ2mP4vR7tW1zB5nC9dF3gH6jK0lM; theme=dark; lang=en-US; _ga=GA1.1.1234567890.1735689600; cf_clearance=abc123def456ghi789jkl012mno345pqr678"
	"Cf-Connecting-Ip: 203.0.113.42"
	"Cf-Ray: 8f2b6c1d9e3a4f57-FRA"
	"Cf-Visitor: {\"scheme\":\"https\"}"
	"Cf-Ipcountry: DE"
	"Cdn-Loop: cloudflare"
	"X-Forwarded-For: 203.0.113.42"
	"X-Forwarded-Proto: https"
	"Referer: https://app.example.com/dashboard"
	"Sec-Ch-Ua: \"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\""
	"Sec-Ch-Ua-Mobile: ?0"
	"Sec-Ch-Ua-Platform: \"Windows\""
	"Sec-Fetch-Dest: document"
	"Sec-Fetch-Mode: navigate"
	"Sec-Fetch-Site: same-origin"
	"Upgrade-Insecure-Requests: 1"
)
HEADER_ARGS=()
for h in "${HEADERS[@]}"; do HEADER_ARGS+=(-H "$h"); done

# The routes5k shape's wrk script: every request the next of the 5,000
# routes, hostname first, so that every target sees the same sequence.
cat >"$TMP/routes.lua" <<LUA
-- wrk script of the routes5k shape: steps through r0..r$((ROUTE_HOSTS - 1)).$ROUTE_DOMAIN, then /p0/.. /p$((ROUTE_PREFIXES - 1))/.
local reqs, n, i = {}, 0, 0
function init(args)
	for p = 0, $ROUTE_PREFIXES - 1 do
		for h = 0, $ROUTE_HOSTS - 1 do
			n = n + 1
			reqs[n] = wrk.format("GET", "/p" .. p .. "/", { Host = "r" .. h .. ".$ROUTE_DOMAIN" })
		end
	end
end
function request()
	i = i % n + 1
	return reqs[i]
end
LUA

# describe SHAPE: one line on what SHAPE requests.
describe() {
	case $1 in
	get) echo "GET / answered with 100 bytes" ;;
	headers) echo "GET / with ${#HEADERS[@]} request headers of a browser behind Cloudflare ($(printf '%s\r\n' "${HEADERS[@]}" | wc -c) bytes), answered with 100 bytes" ;;
	body64k) echo "GET /64k answered with 65,536 bytes" ;;
	routes5k) echo "GETs over $((ROUTE_HOSTS * ROUTE_PREFIXES)) HTTPRoutes ($ROUTE_HOSTS hostnames r0.$ROUTE_DOMAIN and on, $ROUTE_PREFIXES path prefixes /p0/ and on each), each request the next route, answered with 100 bytes" ;;
	esac
}

# set_shape SHAPE: SHAPE's wrk arguments (WRK_ARGS) and request path
# (WRK_PATH), and the targets measured in it (SHAPE_MEASURED: the hop
# target's transports in the get shape only).
set_shape() {
	WRK_ARGS=()
	WRK_PATH=/
	case $1 in
	headers) WRK_ARGS=("${HEADER_ARGS[@]}") ;;
	body64k) WRK_PATH=/64k ;;
	routes5k) WRK_ARGS=(-s "$TMP/routes.lua") ;;
	esac
	SHAPE_MEASURED=()
	local t
	for t in "${MEASURED[@]}"; do
		if in_shape "$1" "$t"; then SHAPE_MEASURED+=("$t"); fi
	done
}

# ---- measurement ------------------------------------------------------------

# proc_ticks PID [user]: utime+stime of PID, in clock ticks; with user,
# utime alone (the time in the program, not in the kernel for it).
proc_ticks() {
	local stat rest
	stat=$(<"/proc/$1/stat")
	rest=${stat##*) } # fields from 3 on; the command name may hold spaces
	local -a f
	read -ra f <<<"$rest"
	if [ "${2:-}" = user ]; then echo "${f[11]}"; else echo $((f[11] + f[12])); fi
}

# tree_pids PID: PID and its descendants (nginx's master and workers).
tree_pids() {
	echo "$1"
	local kids k
	kids=$(cat /proc/"$1"/task/*/children 2>/dev/null || true)
	if [ ! -e "/proc/$1/task/$1/children" ]; then
		kids=$(awk -v p="$1" '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); if (f[2] == p) print FILENAME }' \
			/proc/[0-9]*/stat 2>/dev/null | sed 's|/proc/||; s|/stat||' || true)
	fi
	for k in $kids; do tree_pids "$k"; done
}

# tree_ticks PID [user]: CPU ticks of PID and its descendants (with
# user, their user time alone).
tree_ticks() {
	local total=0 p
	for p in $(tree_pids "$1"); do
		total=$((total + $(proc_ticks "$p" "${2:-}" 2>/dev/null || echo 0)))
	done
	echo "$total"
}

# parse_wrk FILE: prints rps, requests, p50 and p99 (µs) and errors.
parse_wrk() {
	awk '
	function us(v,   n, u) {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		if (u == "us") return n
		if (u == "ms") return n * 1000
		if (u == "s") return n * 1000000
		if (u == "m") return n * 60000000
		return -1
	}
	/^Requests\/sec:/ { rps = $2 }
	/ requests in / { reqs = $1 }
	$1 == "50%" { p50 = us($2) }
	$1 == "99%" { p99 = us($2) }
	/Non-2xx or 3xx responses:/ { errs += $NF }
	/Socket errors:/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) errs += $i + 0 }
	END { printf "%s %s %s %s %d\n", rps, reqs, p50, p99, errs }
	' "$1"
}

# parse_hop FILE: the same from the hop client's key=value line, then the
# client's own CPU time in µs (wrk's is not measured).
parse_hop() {
	awk '
	/^requests=/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "%s %s %s %s %d %s\n", v["rps"], v["requests"], v["p50_us"], v["p99_us"], v["errors"], v["cpu_us"]
	}' "$1"
}

# run_load KEY DURATION FILE [PREFIX...]: one run of the load client on
# the load CPU: wrk with the shape's arguments against the process KEY, or
# the hop client for hop-tcp and hop-unix; PREFIX runs it (perf stat). It
# runs in the background so that a signal stops the script at once, not
# after the run.
run_load() {
	local k=$1 d=$2 file=$3
	shift 3
	if is_hop "$k"; then
		taskset -c "$LOAD_CPU" "$@" "$TMP/hop" -addr "${ADDR[$k]}" -connections "$CONNECTIONS" -duration "$d" >"$file" 2>&1 &
	else
		taskset -c "$LOAD_CPU" "$@" "$WRK" -t1 -c"$CONNECTIONS" -d"$d" --latency "${WRK_ARGS[@]}" "http://127.0.0.1:${PORT[$k]}$WRK_PATH" >"$file" 2>&1 &
	fi
	WRK_PID=$!
	local rc=0
	wait "$WRK_PID" || rc=$?
	WRK_PID=
	return "$rc"
}

# cpu_stat N: busy and total ticks of CPU N so far, from /proc/stat. Busy
# is user, nice, system and steal: interrupt and softirq time is left out,
# as much of it is the benchmark's own loopback traffic.
cpu_stat() {
	awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat
}

# cpu TICKS REQUESTS: microseconds of CPU per request.
cpu() { awk -v d="$1" -v hz="$CLK_TCK" -v n="$2" 'BEGIN { printf "%.2f", d / hz / n * 1e6 }'; }

# load_ok TARGET FILE: whether a load run left a result to read. The hop
# client also exits 1 when some requests failed; those are counted, as
# wrk's are.
load_ok() { grep -q '^requests=[1-9]' "$2"; }

# measure SHAPE: the interleaved rounds of SHAPE, a line per run in
# RESULTS (target, round, rps, p50, p99, proxy CPU, backend CPU, errors,
# other load, client CPU, proxy user CPU).
measure() {
	local shape=$1 n r i t k out busy0 total0 busy1 total1 b0 b1 p0 p1 u0 u1 pid
	local rps reqs p50 p99 errs cus ccpu bcpu pcpu ucpu other
	n=${#SHAPE_MEASURED[@]}
	: >"$RESULTS"
	for ((r = 1; r <= ROUNDS; r++)); do
		for ((i = 0; i < n; i++)); do
			# Each round starts one target later, so no target always goes first.
			t=${SHAPE_MEASURED[$(((i + r - 1) % n))]}
			k=$(key "$shape" "$t")
			run_load "$k" "$WARMUP" "$TMP/warmup.txt" || { is_hop "$t" && load_ok "$t" "$TMP/warmup.txt"; } ||
				die "$shape: warm-up against $t failed: $(tail -n 3 "$TMP/warmup.txt")"
			read -r busy0 total0 < <(cpu_stat "$SERVER_CPU")
			b0=$(tree_ticks "${PID[backend]}")
			p0=0 u0=0
			[ "$t" = direct ] || { p0=$(tree_ticks "${PID[$k]}"); u0=$(tree_ticks "${PID[$k]}" user); }
			out=$TMP/load-$shape-$t-$r.txt
			run_load "$k" "$DURATION" "$out" || { is_hop "$t" && load_ok "$t" "$out"; } ||
				die "$shape: load against $t failed: $(tail -n 3 "$out")"
			read -r busy1 total1 < <(cpu_stat "$SERVER_CPU")
			b1=$(tree_ticks "${PID[backend]}")
			p1=0 u1=0
			[ "$t" = direct ] || { p1=$(tree_ticks "${PID[$k]}"); u1=$(tree_ticks "${PID[$k]}" user); }
			for pid in "${PID[backend]}" "${PID[$k]}"; do
				kill -0 "$pid" 2>/dev/null || die "$shape: $t: a server exited during the run (see $TMP/$k.log)"
			done
			ccpu=-
			if is_hop "$t"; then
				read -r rps reqs p50 p99 errs cus < <(parse_hop "$out")
			else
				read -r rps reqs p50 p99 errs < <(parse_wrk "$out")
			fi
			[[ ${reqs:-} =~ ^[1-9][0-9]*$ ]] || die "$shape: could not read the load client's output for $t: $(cat "$out")"
			if is_hop "$t"; then ccpu=$(awk -v c="$cus" -v n="$reqs" 'BEGIN { printf "%.2f", c / n }'); fi
			bcpu=$(cpu $((b1 - b0)) "$reqs")
			pcpu=- ucpu=-
			[ "$t" = direct ] || { pcpu=$(cpu $((p1 - p0)) "$reqs"); ucpu=$(cpu $((u1 - u0)) "$reqs"); }
			# The server CPU's busy time that was not the backend's or the
			# proxy's: other programs or the hypervisor, a measure of the noise.
			other=$(awk -v b=$((busy1 - busy0)) -v o=$((b1 - b0 + p1 - p0)) -v t=$((total1 - total0)) \
				'BEGIN { x = t > 0 ? (b - o) * 100 / t : 0; printf "%.0f", x < 0 ? 0 : x }')
			echo "$t $r $rps $p50 $p99 $pcpu $bcpu $errs $other $ccpu $ucpu" >>"$RESULTS"
			say "$shape round $r/$ROUNDS $(printf '%-10s' "$t") $(printf '%8.0f' "$rps") rps  p50 $(printf '%7.0f' "$p50") µs" \
				" p99 $(printf '%7.0f' "$p99") µs  proxy CPU $pcpu µs/req ($ucpu user)  backend CPU $bcpu µs/req  errors $errs  other $other%${ADDR[$t]:+  client CPU $ccpu µs/req}"
		done
	done
}

# syscall_pids KEY: the processes of KEY whose system calls are per
# request: nginx's workers (not its master), a Go program's one process.
syscall_pids() {
	if [[ $1 == nginx* ]]; then
		tree_pids "${PID[$1]}" | grep -vx "${PID[$1]}"
	else
		echo "${PID[$1]}"
	fi
}

# count_syscalls SHAPE: for each proxy target, a wrk run of
# SYSCALL_DURATION of its own while perf (or strace) counts the target's
# system calls; a line per target in SYSCALLS_FILE: the target, calls per
# request in all, then NAME=CALLS_PER_REQUEST for the calls named in
# SYSCALL_NAMES (perf) or for every call (strace), most first.
count_syscalls() {
	local shape=$1 t k out pids reqs tool
	: >"$SYSCALLS_FILE"
	for t in "${WRK_LIST[@]}"; do
		[ "$t" != direct ] && in_shape "$shape" "$t" || continue
		k=$(key "$shape" "$t")
		out=$TMP/syscalls-$shape-$t
		pids=$(syscall_pids "$k" | paste -sd, -)
		[ -n "$pids" ] || die "$shape: no process of $t to count system calls of"
		case $SYSCALL_TOOL in
		perf)
			run_load "$k" "$SYSCALL_DURATION" "$out.wrk" perf stat -x, -o "$out.count" -e "$SYSCALL_EVENTS" -p "$pids" -- ||
				die "$shape: the system call run against $t failed: $(tail -n 3 "$out.wrk")"
			;;
		strace)
			local -a sargs=()
			local p spid
			for p in ${pids//,/ }; do sargs+=(-p "$p"); done
			taskset -c "$LOAD_CPU" strace -c -f -q -o "$out.count" "${sargs[@]}" 2>"$out.strace.log" &
			spid=$!
			sleep 1 # strace attaches
			run_load "$k" "$SYSCALL_DURATION" "$out.wrk" || { kill -INT "$spid" 2>/dev/null; die "$shape: the system call run against $t failed"; }
			kill -INT "$spid" 2>/dev/null
			wait "$spid" || true
			;;
		esac
		read -r _ reqs _ < <(parse_wrk "$out.wrk")
		[[ ${reqs:-} =~ ^[1-9][0-9]*$ ]] || die "$shape: could not read wrk's output of the system call run against $t: $(cat "$out.wrk")"
		tool=$SYSCALL_TOOL
		# perf -x, lines: COUNT,UNIT,EVENT,...; strace -c lines: % time,
		# seconds, usecs/call, calls, [errors,] syscall.
		awk -v t="$t" -v n="$reqs" -v tool="$tool" -F, '
			tool == "perf" && $3 == "raw_syscalls:sys_enter" { total = $1 + 0; next }
			tool == "perf" && $3 ~ /^syscalls:sys_enter_/ { c = $3; sub(/^syscalls:sys_enter_/, "", c); calls[c] = $1 + 0; next }
			tool == "strace" {
				nf = split($0, f, " ")
				if (f[1] ~ /^[0-9.]+$/ && f[nf] != "total") { calls[f[nf]] = f[4] + 0; total += f[4] }
			}
			END {
				if (n <= 0 || total <= 0) { print t, "-"; exit }
				named = 0
				line = ""
				for (c in calls) { named += calls[c]; if (calls[c] / n >= 0.005) line = line sprintf(" %s=%.2f", c, calls[c] / n) }
				if (tool == "perf" && (total - named) / n >= 0.005) line = line sprintf(" other=%.2f", (total - named) / n)
				printf "%s %.2f%s\n", t, total / n, line
			}' "$out.count" | awk '{ printf "%s %s", $1, $2; n = split($0, f, " "); m = 0
				for (i = 3; i <= n; i++) { split(f[i], kv, "="); if (kv[1] != "other") { k[++m] = f[i]; v[m] = kv[2] + 0 } else o = f[i] }
				for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] > v[i]) { x = v[i]; v[i] = v[j]; v[j] = x; x = k[i]; k[i] = k[j]; k[j] = x }
				for (i = 1; i <= m; i++) printf " %s", k[i]
				if (o != "") printf " %s", o
				printf "\n" }' >>"$SYSCALLS_FILE"
		say "$shape syscalls $(printf '%-10s' "$t") $(tail -n 1 "$SYSCALLS_FILE" | cut -d' ' -f2-) (per request, $SYSCALL_TOOL, $reqs requests)"
	done
}

# ---- report -----------------------------------------------------------------

# median COLUMN TARGET: median over rounds of one column of RESULTS, or -.
median() {
	awk -v c="$1" -v t="$2" '$1 == t && $c != "-" { print $c }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END {
			if (NR == 0) { print "-"; exit }
			if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { # A B: A/B with 2 decimals, or - when either is missing
	if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf (b > 0 ? "%.2f" : "-"), a / b }'; fi
}
num() { # FORMAT VALUE: printf VALUE, or - when missing
	if [ "$2" = - ]; then echo -; else awk -v v="$2" -v f="$1" 'BEGIN { printf f, v }'; fi
}

# pair_ratios COLUMN: hop-unix over hop-tcp of one column, a round a line.
pair_ratios() {
	awk -v c="$1" '$1 == "hop-tcp" && $c != "-" { tcp[$2] = $c } $1 == "hop-unix" && $c != "-" { unix[$2] = $c }
		END { for (r in unix) if ((r in tcp) && tcp[r] > 0) printf "%.3f\n", unix[r] / tcp[r] }' "$RESULTS" | sort -g
}
# pair_median COLUMN: the median of pair_ratios, with 2 decimals, or -.
pair_median() {
	pair_ratios "$1" | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "-"; exit }
		printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# round_ratio_median TARGET: the median over rounds of TARGET's proxy CPU
# over nginx's in the same round, with 2 decimals, or -. A round runs
# every target back to back, so a slow spell of the machine (a noisy VM)
# that lasts a round or more weighs on both sides of a ratio alike, where
# it moves one side of the ratio of medians.
round_ratio_median() {
	awk -v t="$1" '$1 == t && $6 != "-" { x[$2] = $6 } $1 == "nginx" && $6 != "-" { n[$2] = $6 }
		END { for (r in x) if ((r in n) && n[r] > 0) printf "%.4f\n", x[r] / n[r] }' "$RESULTS" | sort -g |
		awk '{ v[NR] = $1 } END {
			if (NR == 0) { print "-"; exit }
			printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# syscall_cell TARGET: TARGET's system calls per request, or -.
syscall_cell() {
	local v
	v=$(awk -v t="$1" '$1 == t { print $2 }' "$SYSCALLS_FILE")
	echo "${v:--}"
}

# syscall_breakdown TARGET: TARGET's calls per request by name, as
# "read 3.95 write 2.00", or empty.
syscall_breakdown() {
	awk -v t="$1" '$1 == t { for (i = 3; i <= NF; i++) { sub(/=/, " ", $i); printf "%s%s", (i > 3 ? " " : ""), $i } }' "$SYSCALLS_FILE"
}

# syscall_how: a line on how the system calls were counted.
syscall_how() {
	case $SYSCALL_TOOL in
	perf) echo "counted with perf stat (raw_syscalls:sys_enter; named: the syscalls:sys_enter_* tracepoints of $(echo "$SYSCALL_NAMES" | wc -w) calls, the rest as other) over the proxy's own process (nginx: its workers) during a wrk run of $SYSCALL_DURATION after the rounds, divided by that run's requests" ;;
	strace) echo "counted with strace -c -f during a wrk run of $SYSCALL_DURATION after the rounds, divided by that run's requests; strace slows the target, so these counts differ from an unslowed run's (fewer reads that find nothing)" ;;
	*) echo "not counted" ;;
	esac
}

# report SHAPE: SHAPE's table on stdout, and its Markdown section in
# $TMP/report-SHAPE.md for OUT.
report() {
	local shape=$1 t rps vd p50 p99 pcpu ucpu vn vr bcpu errs other sys direct_rps=- nginx_cpu=- c name
	local rows=$TMP/rows-$shape.txt hop_rows=$TMP/hop-rows.txt pairs=$TMP/hop-pairs.txt md=$TMP/report-$shape.md
	want direct && direct_rps=$(median 3 direct)
	want nginx && nginx_cpu=$(median 6 nginx)
	: >"$rows"
	for t in "${WRK_LIST[@]}"; do
		in_shape "$shape" "$t" || continue
		rps=$(median 3 "$t")
		p50=$(median 4 "$t")
		p99=$(median 5 "$t")
		pcpu=$(median 6 "$t")
		ucpu=$(median 11 "$t")
		bcpu=$(median 7 "$t")
		other=$(median 9 "$t")
		errs=$(awk -v t="$t" '$1 == t { s += $8 } END { print s + 0 }' "$RESULTS")
		vn=- vr=-
		[ "$t" = direct ] || vn=$(ratio "$pcpu" "$nginx_cpu")
		[ "$t" = direct ] || ! want nginx || vr=$(round_ratio_median "$t")
		sys=-
		[ "$t" = direct ] || sys=$(syscall_cell "$t")
		echo "$t $(num %.0f "$rps") $(ratio "$rps" "$direct_rps") $(num %.2f "$(ratio "$p50" 1000)") $(num %.2f "$(ratio "$p99" 1000)") $(num %.1f "$pcpu") $(num %.1f "$ucpu") $vn $vr $(num %.1f "$bcpu") $errs $(num %.0f "$other")% $sys" >>"$rows"
	done

	# The hop target (get only): a row per transport, then unix over TCP.
	# The ratios are the medians of the per-round ratios (the two
	# transports run back to back in every round, so they share that
	# round's noise); pairs keeps each round's, to show their spread.
	local hop=
	if want hop && [ "$shape" = get ]; then
		hop=1
		: >"$hop_rows"
		: >"$pairs"
		for t in hop-tcp hop-unix; do
			errs=$(awk -v t="$t" '$1 == t { s += $8 } END { print s + 0 }' "$RESULTS")
			echo "${t#hop-} $(num %.0f "$(median 3 "$t")") $(num %.2f "$(ratio "$(median 4 "$t")" 1000)") $(num %.2f "$(ratio "$(median 5 "$t")" 1000)")" \
				"$(num %.1f "$(median 6 "$t")") $(num %.1f "$(median 7 "$t")") $(num %.1f "$(median 10 "$t")") $errs $(num %.0f "$(median 9 "$t")")%" >>"$hop_rows"
		done
		echo "unix/TCP $(pair_median 3) $(pair_median 4) $(pair_median 5) $(pair_median 6) $(pair_median 7) $(pair_median 10) - -" >>"$hop_rows"
		for c in 3 6 10; do
			case $c in 3) name=rps ;; 6) name="proxy CPU" ;; 10) name="client CPU" ;; esac
			echo "$name: $(pair_ratios $c | paste -sd ' ')" >>"$pairs"
		done
	fi

	echo
	echo "== $shape: $(describe "$shape")"
	if [ ${#WRK_LIST[@]} -gt 0 ]; then
		echo
		printf '%-11s %8s %9s %8s %8s %16s %13s %8s %15s %18s %6s %6s %12s\n' target rps vs_direct p50_ms p99_ms proxy_cpu_us/req of_it_user vs_nginx vs_nginx_rounds backend_cpu_us/req errors other syscalls/req
		while read -r t rps vd p50 p99 pcpu ucpu vn vr bcpu errs other sys; do
			printf '%-11s %8s %9s %8s %8s %16s %13s %8s %15s %18s %6s %6s %12s\n' "$t" "$rps" "$vd" "$p50" "$p99" "$pcpu" "$ucpu" "$vn" "$vr" "$bcpu" "$errs" "$other" "$sys"
		done <"$rows"
		echo
		echo "medians of $ROUNDS interleaved round(s); wrk -t1 -c$CONNECTIONS -d$DURATION on CPU $LOAD_CPU, servers on CPU $SERVER_CPU;"
		echo "other: share of CPU $SERVER_CPU busy with anything but the backend and the proxy (above a few % = noisy numbers);"
		echo "of_it_user: the part of proxy_cpu spent in the proxy's own code (user time), the rest being the kernel's work for it"
		echo "vs_nginx: the ratio of the medians; vs_nginx_rounds: the median of each round's ratio (steadier on a noisy machine)"
		if [ -s "$SYSCALLS_FILE" ]; then
			echo "syscalls/req: $(syscall_how); by call:"
			while read -r t _; do
				printf '  %-11s %s\n' "$t" "$(syscall_breakdown "$t")"
			done <"$SYSCALLS_FILE"
		fi
		[ ! -s "$TMP/notes-$shape.txt" ] || cat "$TMP/notes-$shape.txt"
	fi
	if [ -n "$hop" ]; then
		echo
		echo "hop: tunnelgate's origin listener over loopback TCP and over a unix socket, hop client -connections $CONNECTIONS"
		printf '%-9s %8s %8s %8s %16s %18s %17s %6s %6s\n' transport rps p50_ms p99_ms proxy_cpu_us/req backend_cpu_us/req client_cpu_us/req errors other
		while read -r t rps p50 p99 pcpu bcpu ccpu errs other; do
			printf '%-9s %8s %8s %8s %16s %18s %17s %6s %6s\n' "$t" "$rps" "$p50" "$p99" "$pcpu" "$bcpu" "$ccpu" "$errs" "$other"
		done <"$hop_rows"
		echo
		echo "unix/TCP: medians of the per-round ratios, which were:"
		sed 's/^/  /' "$pairs"
	fi

	{
		echo
		echo "## Shape \`$shape\`: $(describe "$shape")"
		if [ ${#WRK_LIST[@]} -gt 0 ]; then
			echo
			echo "| target | rps | rps vs direct | p50 ms | p99 ms | proxy CPU µs/request | of it user time | CPU vs nginx | CPU vs nginx, per round | backend CPU µs/request | errors | other load | syscalls/request |"
			echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
			while read -r t rps vd p50 p99 pcpu ucpu vn vr bcpu errs other sys; do
				echo "| $t | $rps | $vd | $p50 | $p99 | $pcpu | $ucpu | $vn | $vr | $bcpu | $errs | $other | $sys |"
			done <"$rows"
			if [ -s "$SYSCALLS_FILE" ]; then
				echo
				echo "System calls per request, $(syscall_how):"
				echo
				while read -r t _; do
					echo "- $t: \`$(syscall_breakdown "$t")\`"
				done <"$SYSCALLS_FILE"
			fi
			if [ -s "$TMP/notes-$shape.txt" ]; then
				echo
				cat "$TMP/notes-$shape.txt"
			fi
		fi
		if [ -n "$hop" ]; then
			echo
			echo "The hop: tunnelgate's origin listener over loopback TCP and over a unix socket"
			echo "(\`bench/load/hop -connections $CONNECTIONS -duration $DURATION\`, cloudflared-shaped, pinned to CPU $LOAD_CPU after a"
			echo "$WARMUP warm-up; backend and proxy pinned to CPU $SERVER_CPU; medians of $ROUNDS interleaved round(s); 100-byte"
			echo "responses; unix/TCP: medians of the per-round ratios.)"
			echo
			echo "| origin listener | rps | p50 ms | p99 ms | proxy CPU µs/request | backend CPU µs/request | client CPU µs/request | errors | other load |"
			echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
			while read -r t rps p50 p99 pcpu bcpu ccpu errs other; do
				echo "| $t | $rps | $p50 | $p99 | $pcpu | $bcpu | $ccpu | $errs | $other |"
			done <"$hop_rows"
			echo
			echo "Per-round unix/TCP ratios:"
			echo
			sed 's/^/- /' "$pairs"
		fi
	} >"$md"
}

# nginx_temp_files KEY: how many answers nginx KEY has buffered to a
# temporary file so far (it logs each at warn).
nginx_temp_files() {
	if [ -f "$TMP/$1/error.log" ]; then grep -c 'buffered to a temporary file' "$TMP/$1/error.log" || true; else echo 0; fi
}

# ---- run --------------------------------------------------------------------

say "CPUs: load client on $LOAD_CPU, backend and proxies on $SERVER_CPU; shapes ${SHAPE_LIST[*]};" \
	"$ROUNDS round(s) of ${MEASURED[*]} per shape, $WARMUP warm-up + $DURATION each," \
	"${WRK:+wrk -t1 -c$CONNECTIONS}${WRK:+${ADDR[hop-tcp]:+, }}${ADDR[hop-tcp]:+hop -connections $CONNECTIONS}${SYSCALL_TOOL:+; system calls with $SYSCALL_TOOL over $SYSCALL_DURATION per proxy}"
if want hop && [ "${SHAPE_LIST[*]}" != get ]; then
	say "the hop target measures the get shape only: it is left out of the others"
fi
DONE_SHAPES=()
for shape in "${SHAPE_LIST[@]}"; do
	set_shape "$shape"
	if [ ${#SHAPE_MEASURED[@]} -eq 0 ]; then
		say "$shape: skipped, nothing to measure in it (the hop target measures get only)"
		continue
	fi
	RESULTS=$TMP/results-$shape.txt
	SYSCALLS_FILE=$TMP/syscalls-$shape.txt
	: >"$SYSCALLS_FILE"
	: >"$TMP/notes-$shape.txt"
	ngk=$(key "$shape" nginx)
	want nginx && tf0=$(nginx_temp_files "$ngk")
	measure "$shape"
	if [ -n "$SYSCALL_TOOL" ]; then count_syscalls "$shape"; fi
	if want nginx; then
		tf=$(($(nginx_temp_files "$ngk") - tf0))
		if [ "$tf" -gt 0 ]; then
			echo "nginx buffered $tf answers to temporary files during this shape (its error.log: \"an upstream response is buffered to a temporary file\")." >"$TMP/notes-$shape.txt"
		fi
	fi
	report "$shape"
	DONE_SHAPES+=("$shape")
done

if [ -n "$OUT" ]; then
	cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
	{
		echo "# Load benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
		echo
		echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) CPUs, Linux $(uname -r), $(go env GOVERSION)${WRK:+, $("$WRK" -v 2>&1 | awk 'NR == 1 { print $1, $2 }')}${NGINX:+, $("$NGINX" -v 2>&1 | sed 's|.*version: ||')};" \
			"load average $LOADAVG before the run."
		echo "Command: \`SHAPES=\"$SHAPES\" TARGETS=\"$TARGETS\" ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP CONNECTIONS=$CONNECTIONS SYSCALLS=$SYSCALLS${SYSCALL_TOOL:+ SYSCALL_DURATION=$SYSCALL_DURATION} bash bench/load/run.sh\`"
		if [ ${#WRK_LIST[@]} -gt 0 ]; then
			echo "(\`wrk -t1 -c$CONNECTIONS -d$DURATION --latency\` pinned to CPU $LOAD_CPU after a $WARMUP warm-up;"
			echo "backend and proxy pinned to CPU $SERVER_CPU; medians of $ROUNDS interleaved round(s) per shape;"
			echo "\`other load\`: share of CPU $SERVER_CPU busy with anything but the backend and the proxy during the runs.)"
		fi
		for shape in "${DONE_SHAPES[@]}"; do cat "$TMP/report-$shape.md"; done
	} >"$OUT"
	say "wrote $OUT"
fi
