#!/usr/bin/env bash
# Load benchmark: the Go backend served directly, and the same backend behind
# tunnelgate, a tuned httputil.ReverseProxy and nginx, all on loopback with
# pinned CPUs. The "hop" target (not in the defaults) measures tunnelgate's
# origin listener over loopback TCP against a unix socket, with a
# cloudflared-shaped client (bench/load/hop) instead of wrk. See
# bench/README.md for what it measures and how to read it.
#
# Environment (defaults in brackets):
#   TARGETS      targets to run, in order ["direct httputil nginx tunnelgate"];
#                also "hop", and "baseline" (needs BASELINE)
#   BASELINE     a tunnelgate binary built from another commit, measured as
#                the "baseline" target in the same rounds, for a before and
#                after: git worktree add /tmp/base COMMIT && (cd /tmp/base &&
#                go build -o /tmp/base.bin ./cmd/tunnelgate)
#   ROUNDS       interleaved rounds per target [3]
#   DURATION     length of each measured wrk run [8s]
#   WARMUP       length of the unmeasured wrk run before each one [1s]
#   CONNECTIONS  wrk connections, and the hop client's [50]
#   OUT          also write the result table as Markdown to this file [unset]
set -euo pipefail

TARGETS=${TARGETS:-"direct httputil nginx tunnelgate"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-1s}
CONNECTIONS=${CONNECTIONS:-50}
OUT=${OUT:-}

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
	direct | httputil | nginx | tunnelgate | hop | baseline) ;;
	*) die "unknown target '$t' in TARGETS (known: direct httputil nginx tunnelgate hop baseline)" ;;
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

if want httputil; then
	alloc_port p
	start httputil "$TMP/rproxy" -listen "127.0.0.1:$p" -backend "http://127.0.0.1:$BACKEND_PORT"
	PORT[httputil]=$p
	wait_port httputil "$p" "${PID[httputil]}"
fi

if want nginx; then
	alloc_port p
	NG=$TMP/nginx
	mkdir -p "$NG/tmp"
	chmod 755 "$TMP" "$NG" # the workers may run as another user
	# keepalive_requests is raised on both sides: the Go servers never close
	# a kept-alive connection, and nginx otherwise would after 1000 requests.
	cat >"$NG/nginx.conf" <<EOF
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    keepalive_requests 1000000;
    upstream backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 256;
        keepalive_requests 1000000;
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
	start nginx "$NGINX" -p "$NG" -e "$NG/error.log" -c "$NG/nginx.conf" -g 'daemon off;'
	PORT[nginx]=$p
	wait_port nginx "$p" "${PID[nginx]}"
fi

if want tunnelgate || want hop || want baseline; then
	cat >"$TMP/tunnelgate.json" <<EOF
{"schema":"tunnelgate.dev/dataplane/v1","listeners":[{"name":"bench","protocol":"HTTP"}],"routes":[{"kind":"HTTPRoute","namespace":"bench","name":"r","created":"2026-01-01T00:00:00Z","listeners":["bench"],"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"}}],"backends":[{"cluster":"backend","weight":1}]}]}],"clusters":[{"name":"backend","protocol":"http1","endpoints":[{"address":"127.0.0.1:$BACKEND_PORT"}]}]}
EOF
fi

if want tunnelgate; then
	alloc_port p
	start tunnelgate "$TMP/tunnelgate" proxy --config "$TMP/tunnelgate.json" --listen "127.0.0.1:$p"
	PORT[tunnelgate]=$p
	wait_port tunnelgate "$p" "${PID[tunnelgate]}"
fi

# The baseline target: another build with the same config; its admin
# listener is off, so that it does not collide with the tunnelgate
# target's.
if want baseline; then
	alloc_port p
	start baseline "$BASELINE" proxy --config "$TMP/tunnelgate.json" --listen "127.0.0.1:$p" --admin ""
	PORT[baseline]=$p
	wait_port baseline "$p" "${PID[baseline]}"
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

# status PORT: the status code of one GET / on PORT, over a bash socket.
status() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
		IFS=' ' read -r -t 5 _ code _ <&3 && echo "$code"
	) 2>/dev/null || echo none
}

# Every target must answer 200 before anything is measured (the hop client
# exits 1 on anything but a 2xx).
for t in "${MEASURED[@]}"; do
	if is_hop "$t"; then
		"$TMP/hop" -addr "${ADDR[$t]}" -connections 1 -max-requests 1 -duration 5s >"$TMP/check.txt" 2>&1 ||
			die "target $t on ${ADDR[$t]} did not answer 2xx: $(tail -n 2 "$TMP/check.txt") (log: $TMP/$t.log)"
		continue
	fi
	code=$(status "${PORT[$t]}")
	[ "$code" = 200 ] || die "target $t on port ${PORT[$t]} answered '$code', not 200 (log: $TMP/$t.log)"
done

# ---- measurement ------------------------------------------------------------

# proc_ticks PID: utime+stime of PID, in clock ticks.
proc_ticks() {
	local stat rest
	stat=$(<"/proc/$1/stat")
	rest=${stat##*) } # fields from 3 on; the command name may hold spaces
	local -a f
	read -ra f <<<"$rest"
	echo $((f[11] + f[12]))
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

# tree_ticks PID: CPU ticks of PID and its descendants.
tree_ticks() {
	local total=0 p
	for p in $(tree_pids "$1"); do
		total=$((total + $(proc_ticks "$p" 2>/dev/null || echo 0)))
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

# run_load TARGET DURATION FILE: one run of the load client on the load
# CPU: wrk, or the hop client for hop-tcp and hop-unix. It runs in the
# background so that a signal stops the script at once, not after the run.
run_load() {
	if is_hop "$1"; then
		taskset -c "$LOAD_CPU" "$TMP/hop" -addr "${ADDR[$1]}" -connections "$CONNECTIONS" -duration "$2" >"$3" 2>&1 &
	else
		taskset -c "$LOAD_CPU" "$WRK" -t1 -c"$CONNECTIONS" -d"$2" --latency "http://127.0.0.1:${PORT[$1]}/" >"$3" 2>&1 &
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

RESULTS=$TMP/results.txt
: >"$RESULTS"
# load_ok TARGET FILE: whether a load run left a result to read. The hop
# client also exits 1 when some requests failed; those are counted, as
# wrk's are.
load_ok() { grep -q '^requests=[1-9]' "$2"; }

n=${#MEASURED[@]}
say "CPUs: load client on $LOAD_CPU, backend and proxies on $SERVER_CPU; $ROUNDS round(s) of ${MEASURED[*]}," \
	"$WARMUP warm-up + $DURATION each, ${WRK:+wrk -t1 -c$CONNECTIONS}${WRK:+${ADDR[hop-tcp]:+, }}${ADDR[hop-tcp]:+hop -connections $CONNECTIONS}"
for ((r = 1; r <= ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		# Each round starts one target later, so no target always goes first.
		t=${MEASURED[$(((i + r - 1) % n))]}
		run_load "$t" "$WARMUP" "$TMP/warmup.txt" || { is_hop "$t" && load_ok "$t" "$TMP/warmup.txt"; } ||
			die "warm-up against $t failed: $(tail -n 3 "$TMP/warmup.txt")"
		read -r busy0 total0 < <(cpu_stat "$SERVER_CPU")
		b0=$(tree_ticks "${PID[backend]}")
		p0=0
		[ "$t" = direct ] || p0=$(tree_ticks "${PID[$t]}")
		out=$TMP/load-$t-$r.txt
		run_load "$t" "$DURATION" "$out" || { is_hop "$t" && load_ok "$t" "$out"; } ||
			die "load against $t failed: $(tail -n 3 "$out")"
		read -r busy1 total1 < <(cpu_stat "$SERVER_CPU")
		b1=$(tree_ticks "${PID[backend]}")
		p1=0
		[ "$t" = direct ] || p1=$(tree_ticks "${PID[$t]}")
		for pid in "${PID[backend]}" "${PID[$t]}"; do
			kill -0 "$pid" 2>/dev/null || die "$t: a server exited during the run (see $TMP/$t.log)"
		done
		ccpu=-
		if is_hop "$t"; then
			read -r rps reqs p50 p99 errs cus < <(parse_hop "$out")
		else
			read -r rps reqs p50 p99 errs < <(parse_wrk "$out")
		fi
		[[ ${reqs:-} =~ ^[1-9][0-9]*$ ]] || die "could not read the load client's output for $t: $(cat "$out")"
		if is_hop "$t"; then ccpu=$(awk -v c="$cus" -v n="$reqs" 'BEGIN { printf "%.2f", c / n }'); fi
		bcpu=$(cpu $((b1 - b0)) "$reqs")
		pcpu=-
		[ "$t" = direct ] || pcpu=$(cpu $((p1 - p0)) "$reqs")
		# The server CPU's busy time that was not the backend's or the
		# proxy's: other programs or the hypervisor, a measure of the noise.
		other=$(awk -v b=$((busy1 - busy0)) -v o=$((b1 - b0 + p1 - p0)) -v t=$((total1 - total0)) \
			'BEGIN { x = t > 0 ? (b - o) * 100 / t : 0; printf "%.0f", x < 0 ? 0 : x }')
		echo "$t $r $rps $p50 $p99 $pcpu $bcpu $errs $other $ccpu" >>"$RESULTS"
		say "round $r/$ROUNDS $(printf '%-10s' "$t") $(printf '%8.0f' "$rps") rps  p50 $(printf '%7.0f' "$p50") µs" \
			" p99 $(printf '%7.0f' "$p99") µs  proxy CPU $pcpu µs/req  backend CPU $bcpu µs/req  errors $errs  other $other%${ADDR[$t]:+  client CPU $ccpu µs/req}"
	done
done

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

direct_rps=-
nginx_cpu=-
want direct && direct_rps=$(median 3 direct)
want nginx && nginx_cpu=$(median 6 nginx)

ROWS=$TMP/rows.txt
: >"$ROWS"
for t in "${WRK_LIST[@]}"; do
	rps=$(median 3 "$t")
	p50=$(median 4 "$t")
	p99=$(median 5 "$t")
	pcpu=$(median 6 "$t")
	bcpu=$(median 7 "$t")
	other=$(median 9 "$t")
	errs=$(awk -v t="$t" '$1 == t { s += $8 } END { print s + 0 }' "$RESULTS")
	vs_nginx=-
	[ "$t" = direct ] || vs_nginx=$(ratio "$pcpu" "$nginx_cpu")
	echo "$t $(num %.0f "$rps") $(ratio "$rps" "$direct_rps") $(num %.2f "$(ratio "$p50" 1000)") $(num %.2f "$(ratio "$p99" 1000)") $(num %.1f "$pcpu") $vs_nginx $(num %.1f "$bcpu") $errs $(num %.0f "$other")%" >>"$ROWS"
done

# The hop target: a row per transport, then unix over TCP. The ratios are
# the medians of the per-round ratios (the two transports run back to back
# in every round, so they share that round's noise); PAIRS keeps each
# round's, to show their spread.
HOP_ROWS=$TMP/hop-rows.txt
PAIRS=$TMP/hop-pairs.txt
: >"$HOP_ROWS"
: >"$PAIRS"
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
if want hop; then
	for t in hop-tcp hop-unix; do
		errs=$(awk -v t="$t" '$1 == t { s += $8 } END { print s + 0 }' "$RESULTS")
		echo "${t#hop-} $(num %.0f "$(median 3 "$t")") $(num %.2f "$(ratio "$(median 4 "$t")" 1000)") $(num %.2f "$(ratio "$(median 5 "$t")" 1000)")" \
			"$(num %.1f "$(median 6 "$t")") $(num %.1f "$(median 7 "$t")") $(num %.1f "$(median 10 "$t")") $errs $(num %.0f "$(median 9 "$t")")%" >>"$HOP_ROWS"
	done
	echo "unix/TCP $(pair_median 3) $(pair_median 4) $(pair_median 5) $(pair_median 6) $(pair_median 7) $(pair_median 10) - -" >>"$HOP_ROWS"
	for c in 3 6 10; do
		case $c in 3) name=rps ;; 6) name="proxy CPU" ;; 10) name="client CPU" ;; esac
		echo "$name: $(pair_ratios $c | paste -sd ' ')" >>"$PAIRS"
	done
fi

if [ ${#WRK_LIST[@]} -gt 0 ]; then
	echo
	printf '%-11s %8s %9s %8s %8s %16s %8s %18s %6s %6s\n' target rps vs_direct p50_ms p99_ms proxy_cpu_us/req vs_nginx backend_cpu_us/req errors other
	while read -r t rps vd p50 p99 pcpu vn bcpu errs other; do
		printf '%-11s %8s %9s %8s %8s %16s %8s %18s %6s %6s\n' "$t" "$rps" "$vd" "$p50" "$p99" "$pcpu" "$vn" "$bcpu" "$errs" "$other"
	done <"$ROWS"
	echo
	echo "medians of $ROUNDS interleaved round(s); wrk -t1 -c$CONNECTIONS -d$DURATION on CPU $LOAD_CPU, servers on CPU $SERVER_CPU;"
	echo "other: share of CPU $SERVER_CPU busy with anything but the backend and the proxy (above a few % = noisy numbers)"
fi
if want hop; then
	echo
	echo "hop: tunnelgate's origin listener over loopback TCP and over a unix socket, hop client -connections $CONNECTIONS"
	printf '%-9s %8s %8s %8s %16s %18s %17s %6s %6s\n' transport rps p50_ms p99_ms proxy_cpu_us/req backend_cpu_us/req client_cpu_us/req errors other
	while read -r t rps p50 p99 pcpu bcpu ccpu errs other; do
		printf '%-9s %8s %8s %8s %16s %18s %17s %6s %6s\n' "$t" "$rps" "$p50" "$p99" "$pcpu" "$bcpu" "$ccpu" "$errs" "$other"
	done <"$HOP_ROWS"
	echo
	echo "unix/TCP: medians of the per-round ratios, which were:"
	sed 's/^/  /' "$PAIRS"
fi

if [ -n "$OUT" ]; then
	cpu_model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
	{
		echo "# Load benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
		echo
		echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) CPUs, Linux $(uname -r), $(go env GOVERSION)${WRK:+, $("$WRK" -v 2>&1 | awk 'NR == 1 { print $1, $2 }')}${NGINX:+, $("$NGINX" -v 2>&1 | sed 's|.*version: ||')};" \
			"load average $LOADAVG before the run."
		echo "Command: \`TARGETS=\"$TARGETS\" ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP CONNECTIONS=$CONNECTIONS bash bench/load/run.sh\`"
		if [ ${#WRK_LIST[@]} -gt 0 ]; then
			echo "(\`wrk -t1 -c$CONNECTIONS -d$DURATION --latency\` pinned to CPU $LOAD_CPU after a $WARMUP warm-up;"
			echo "backend and proxy pinned to CPU $SERVER_CPU; medians of $ROUNDS interleaved round(s); 100-byte responses;"
			echo "\`other load\`: share of CPU $SERVER_CPU busy with anything but the backend and the proxy during the runs.)"
			echo
			echo "| target | rps | rps vs direct | p50 ms | p99 ms | proxy CPU µs/request | CPU vs nginx | backend CPU µs/request | errors | other load |"
			echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
			while read -r t rps vd p50 p99 pcpu vn bcpu errs other; do
				echo "| $t | $rps | $vd | $p50 | $p99 | $pcpu | $vn | $bcpu | $errs | $other |"
			done <"$ROWS"
		fi
		if want hop; then
			[ ${#WRK_LIST[@]} -eq 0 ] || echo
			echo "The hop: tunnelgate's origin listener over loopback TCP and over a unix socket"
			echo "(\`bench/load/hop -connections $CONNECTIONS -duration $DURATION\`, cloudflared-shaped, pinned to CPU $LOAD_CPU after a"
			echo "$WARMUP warm-up; backend and proxy pinned to CPU $SERVER_CPU; medians of $ROUNDS interleaved round(s); 100-byte"
			echo "responses; unix/TCP: medians of the per-round ratios.)"
			echo
			echo "| origin listener | rps | p50 ms | p99 ms | proxy CPU µs/request | backend CPU µs/request | client CPU µs/request | errors | other load |"
			echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
			while read -r t rps p50 p99 pcpu bcpu ccpu errs other; do
				echo "| $t | $rps | $p50 | $p99 | $pcpu | $bcpu | $ccpu | $errs | $other |"
			done <"$HOP_ROWS"
			echo
			echo "Per-round unix/TCP ratios:"
			echo
			sed 's/^/- /' "$PAIRS"
		fi
	} >"$OUT"
	say "wrote $OUT"
fi
