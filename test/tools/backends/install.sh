#!/usr/bin/env bash
# Fetches the web servers test/realbackend runs as backends (`make backends`):
# Debian bookworm's lighttpd and nginx packages, unpacked (never installed)
# into a cache directory keyed by their upstream versions, so a machine pays
# for it once:
#
#   ${TUNNELGATE_BACKENDS_CACHE:-$HOME/.cache/tunnelgate/backends}/lighttpd-X-nginx-Y/
#     usr/sbin/lighttpd, usr/lib/lighttpd/   lighttpd and its modules (lighttpd -m DIR)
#     usr/sbin/nginx                         nginx
#     usr/lib/<triplet>/, lib/<triplet>/     shared libraries the binaries need that the
#                                            machine lacks (test/realbackend puts them on
#                                            LD_LIBRARY_PATH); usually none
#     PACKAGES                               each package unpacked here and its Debian version
#
# The packages come from the machine's apt sources with `apt-get download`
# (`apt-get update` runs once, only if that fails) and are unpacked with
# `dpkg-deb -x`: nothing is installed into the system, no maintainer script
# runs, no service starts. Any Debian revision of the pinned upstream
# versions will do (security updates replace the older ones in the archive).
# After unpacking, ldd on every binary and module finds the shared libraries
# the machine does not have; those come from the packages the unpacked ones
# depend on that are not installed. The script ends by running the unpacked
# binaries (lighttpd -v and -tt, nginx -v and -t).
#
# Idempotent: returns at once when the binaries are there. Safe to run twice
# at the same time: a lock file (flock, where there is one) serialises
# installers, and the tree appears by renaming a finished temporary
# directory, so a reader never sees half of one. Keep the versions in step
# with LighttpdVersion and NginxVersion in test/realbackend (a test checks).
set -euo pipefail

lighttpd_version=1.4.69
nginx_version=1.22.1

cache=${TUNNELGATE_BACKENDS_CACHE:-$HOME/.cache/tunnelgate/backends}
key="lighttpd-$lighttpd_version-nginx-$nginx_version"
dest="$cache/$key"

die() {
	echo "backends: $*" >&2
	exit 1
}

complete() {
	[[ -x "$1/usr/sbin/lighttpd" && -x "$1/usr/sbin/nginx" && -d "$1/usr/lib/lighttpd" && -s "$1/PACKAGES" ]]
}

if complete "$dest"; then
	echo "backends: lighttpd $lighttpd_version and nginx $nginx_version present in $dest"
	exit 0
fi

# Python's http.server, the third backend, is the machine's own python3.
command -v python3 >/dev/null ||
	die "python3 is not installed; test/realbackend runs its http.server (Debian: apt-get install python3)"
for tool in apt-get apt-cache dpkg-deb dpkg-query ldd; do
	command -v "$tool" >/dev/null ||
		die "$tool not found: this fetches Debian bookworm's lighttpd and nginx packages and needs apt and dpkg (a Debian or Ubuntu machine) and ldd"
done

mkdir -p "$cache"
exec 9>"$cache/.$key.lock"
locked=false
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		echo "backends: another install of $key is running; waiting for it"
		flock 9
	fi
	locked=true
fi
# The install we waited for may have finished the job.
if complete "$dest"; then
	echo "backends: lighttpd $lighttpd_version and nginx $nginx_version present in $dest"
	exit 0
fi

# Holding the lock, any temporary directory left is from a killed install.
if $locked; then rm -rf "$cache/.$key.tmp."* "$cache/.$key.debs."*; fi
start=$SECONDS
tmp=$(mktemp -d "$cache/.$key.tmp.XXXXXX")
debs=$(mktemp -d "$cache/.$key.debs.XXXXXX")
trap 'rm -rf "$tmp" "$debs"' EXIT
log="$debs/apt.log"

echo "backends: fetching Debian's lighttpd $lighttpd_version and nginx $nginx_version into $dest"

# version PKG UPSTREAM: the newest Debian version of PKG the apt sources
# offer whose upstream part is UPSTREAM (e.g. 1.22.1-9+deb12u7 for 1.22.1).
version() {
	apt-cache madison "$1" 2>>"$log" |
		awk -F'|' -v up="$2-" '$3 ~ /Packages/ { gsub(/ /, "", $2); if (index($2, up) == 1) { print $2; exit } }'
}

# download PKG=VERSION...: apt-get download into $debs.
download() {
	(cd "$debs" && apt-get download "$@") >>"$log" 2>&1
}

# fetch_main: finds the pinned versions and downloads them.
lighttpd_deb_version= nginx_deb_version=
fetch_main() {
	lighttpd_deb_version=$(version lighttpd "$lighttpd_version")
	nginx_deb_version=$(version nginx "$nginx_version")
	[[ -n $lighttpd_deb_version && -n $nginx_deb_version ]] &&
		download "lighttpd=$lighttpd_deb_version" "nginx=$nginx_deb_version"
}

apt_updated=false
if ! fetch_main; then
	# The package lists may be missing (a fresh container) or stale (the
	# archive replaced a version): refresh them, once.
	if [[ $(id -u) -ne 0 ]]; then
		tail -n 20 "$log" >&2
		die "apt-get download of lighttpd $lighttpd_version and nginx $nginx_version failed and apt-get update needs root: run 'sudo apt-get update' and try again"
	fi
	echo "backends: apt-get download failed; running apt-get update once"
	apt-get update >>"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get update failed"; }
	apt_updated=true
	if ! fetch_main; then
		tail -n 20 "$log" >&2
		die "apt-get download could not fetch lighttpd ${lighttpd_deb_version:-$lighttpd_version-*} and nginx ${nginx_deb_version:-$nginx_version-*} (they are in Debian 12 bookworm and bookworm-security; apt-cache madison lighttpd nginx shows what the apt sources offer)"
	fi
fi

: >"$tmp/PACKAGES"
unpacked=()
# unpack DEB: dpkg-deb -x into the tree, recorded in PACKAGES.
unpack() {
	dpkg-deb -x "$1" "$tmp"
	unpacked+=("$1")
	dpkg-deb -f "$1" Package Version | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 } END { print "" }' >>"$tmp/PACKAGES"
}
unpack "$debs"/lighttpd_*.deb
unpack "$debs"/nginx_*.deb

# The unpacked libraries' directories, for LD_LIBRARY_PATH (as
# test/realbackend sets it).
libpath() {
	local d p=
	for d in "$tmp"/usr/lib/*-linux-gnu* "$tmp"/lib/*-linux-gnu*; do
		[[ -d $d ]] && p+="${p:+:}$d"
	done
	echo "$p"
}

# missing: the sonames ldd cannot find for any binary, module or unpacked
# library, one a line.
missing() {
	local f lp
	lp=$(libpath)
	for f in "$tmp"/usr/sbin/lighttpd "$tmp"/usr/sbin/nginx "$tmp"/usr/lib/lighttpd/*.so \
		"$tmp"/usr/lib/*-linux-gnu*/*.so* "$tmp"/lib/*-linux-gnu*/*.so*; do
		[[ -f $f ]] || continue
		LD_LIBRARY_PATH=$lp ldd "$f" 2>/dev/null || true
	done | awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u
}

# installed PKG: whether dpkg has PKG installed.
installed() {
	[[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) == ii* ]]
}

# candidates: the packages the unpacked ones depend on that are neither
# installed nor downloaded (of alternatives, the first, unless one is
# installed), one a line.
candidates() {
	local deb
	for deb in "${unpacked[@]}"; do
		dpkg-deb -f "$deb" Pre-Depends
		dpkg-deb -f "$deb" Depends
	done | tr ',' '\n' | sed 's/([^)]*)//g; s/:[a-z0-9]*//g; s/[[:space:]]//g' | sort -u |
		while IFS= read -r alts; do
			[[ -n $alts ]] || continue
			local alt first= skip=false
			IFS='|' read -ra alt <<<"$alts"
			for a in "${alt[@]}"; do
				[[ -n $first ]] || first=$a
				if installed "$a" || [[ -n $(compgen -G "$debs/${a}_*.deb") ]]; then skip=true; fi
			done
			$skip || echo "$first"
		done | sort -u
}

# Shared libraries the machine lacks: fetch the dependencies that are not
# installed and unpack those that hold a missing library, until ldd finds
# them all.
tried=" "
while sonames=$(missing) && [[ -n $sonames ]]; do
	new=()
	while IFS= read -r p; do
		[[ $tried == *" $p "* ]] || new+=("$p")
	done < <(candidates)
	if ((${#new[@]} == 0)); then
		die "the unpacked binaries need ${sonames//$'\n'/ }, which neither the machine nor the packages lighttpd and nginx depend on provide"
	fi
	echo "backends: the machine lacks ${sonames//$'\n'/ }; looking in ${new[*]}"
	for p in "${new[@]}"; do
		tried+="$p "
		if ! download "$p" && ! $apt_updated && [[ $(id -u) -eq 0 ]]; then
			apt-get update >>"$log" 2>&1 || true
			apt_updated=true
			download "$p" || true
		fi
	done
	for p in "${new[@]}"; do
		deb=$(compgen -G "$debs/${p}_*.deb") || { echo "backends: apt-get download $p failed: $(tail -n 1 "$log")"; continue; }
		# grep without -q reads to the end, so dpkg-deb gets no SIGPIPE.
		if dpkg-deb -c "$deb" | awk '{ n = split($6, a, "/"); print a[n] }' | grep -xF "$sonames" >/dev/null; then
			echo "backends: unpacking $p for the libraries the machine lacks"
			unpack "$deb"
		fi
	done
done

# The binaries run.
export LD_LIBRARY_PATH
LD_LIBRARY_PATH=$(libpath)
got=$("$tmp/usr/sbin/lighttpd" -v 2>&1) || die "the unpacked lighttpd does not run: $got"
[[ $got == *"lighttpd/$lighttpd_version "* ]] || die "the unpacked lighttpd says '$got', not lighttpd/$lighttpd_version"
got=$("$tmp/usr/sbin/nginx" -v 2>&1) || die "the unpacked nginx does not run: $got"
[[ $got == *"nginx/$nginx_version" ]] || die "the unpacked nginx says '$got', not nginx/$nginx_version"
# And load a configuration (lighttpd -tt also loads its modules).
check="$debs/check"
mkdir -p "$check/root"
printf 'server.document-root = "%s"\nserver.bind = "127.0.0.1"\nserver.port = 8080\n' "$check/root" >"$check/lighttpd.conf"
got=$("$tmp/usr/sbin/lighttpd" -tt -f "$check/lighttpd.conf" -m "$tmp/usr/lib/lighttpd" 2>&1) ||
	die "the unpacked lighttpd refuses a minimal configuration: $got"
# Every path nginx writes is set: its compiled-in ones are under /var.
cat >"$check/nginx.conf" <<-EOF
	daemon off;
	master_process off;
	pid $check/nginx.pid;
	error_log stderr;
	events {}
	http {
		access_log off;
		client_body_temp_path $check/body;
		proxy_temp_path $check/proxy;
		fastcgi_temp_path $check/fastcgi;
		uwsgi_temp_path $check/uwsgi;
		scgi_temp_path $check/scgi;
		server { listen 127.0.0.1:8080; root $check/root; }
	}
EOF
got=$("$tmp/usr/sbin/nginx" -t -p "$check" -c "$check/nginx.conf" -e stderr 2>&1) ||
	die "the unpacked nginx refuses a minimal configuration: $got"
unset LD_LIBRARY_PATH

chmod 755 "$tmp" # mktemp made it private
# Replace whatever incomplete tree was there; the rename is atomic.
rm -rf "$dest"
mv -T "$tmp" "$dest"
rm -rf "$debs"
trap - EXIT
echo "backends: ready in $dest ($(paste -sd, "$dest/PACKAGES" | sed 's/,/, /g'); $((SECONDS - start))s)"
