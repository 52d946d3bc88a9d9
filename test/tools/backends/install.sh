#!/usr/bin/env bash
# Fetches the servers test/realbackend runs as backends (`make backends`):
# Debian bookworm's lighttpd, nginx, openssh-server and openssh-client
# packages, unpacked (never installed) into a cache directory keyed by their
# upstream versions, so a machine pays for it once:
#
#   ${TUNNELGATE_BACKENDS_CACHE:-$HOME/.cache/tunnelgate/backends}/lighttpd-X-nginx-Y-openssh-Z/
#     usr/sbin/lighttpd, usr/lib/lighttpd/   lighttpd and its modules (lighttpd -m DIR)
#     usr/sbin/nginx                         nginx
#     usr/sbin/sshd, usr/bin/ssh             OpenSSH's server (run unprivileged) and client
#     usr/lib/<triplet>/, lib/<triplet>/     shared libraries the binaries need that the
#                                            machine lacks (test/realbackend puts them on
#                                            LD_LIBRARY_PATH); usually none
#     PACKAGES                               each package unpacked here and its Debian version
#
# The packages are fetched from the machine's apt sources and unpacked,
# never installed, as test/tools/debunpack.sh describes. The script ends
# by running the unpacked binaries (lighttpd -v and -tt, nginx -v and -t,
# ssh -V and sshd -V; sshd -t needs the user sshd when run as root, which a
# machine without OpenSSH's server lacks, so test/realbackend runs sshd
# unprivileged).
#
# Idempotent: returns at once when the binaries are there. Safe to run twice
# at the same time: a lock file (flock, where there is one) serialises
# installers, and the tree appears by renaming a finished temporary
# directory, so a reader never sees half of one. Keep the versions in step
# with LighttpdVersion, NginxVersion and OpenSSHVersion in test/realbackend
# (a test checks).
set -euo pipefail

lighttpd_version=1.4.69
nginx_version=1.22.1
openssh_version=9.2p1

cache=${TUNNELGATE_BACKENDS_CACHE:-$HOME/.cache/tunnelgate/backends}
key="lighttpd-$lighttpd_version-nginx-$nginx_version-openssh-$openssh_version"
dest="$cache/$key"

die() {
	echo "backends: $*" >&2
	exit 1
}
# shellcheck source=test/tools/debunpack.sh
source "$(dirname "${BASH_SOURCE[0]}")/../debunpack.sh"

complete() {
	[[ -x "$1/usr/sbin/lighttpd" && -x "$1/usr/sbin/nginx" && -d "$1/usr/lib/lighttpd" &&
		-x "$1/usr/sbin/sshd" && -x "$1/usr/bin/ssh" && -s "$1/PACKAGES" ]]
}

if complete "$dest"; then
	echo "backends: lighttpd $lighttpd_version, nginx $nginx_version and openssh $openssh_version present in $dest"
	exit 0
fi

# Python's http.server, the third HTTP backend, is the machine's own python3.
command -v python3 >/dev/null ||
	die "python3 is not installed; test/realbackend runs its http.server (Debian: apt-get install python3)"
deb_check_tools "Debian bookworm's lighttpd, nginx and openssh packages"

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
	echo "backends: lighttpd $lighttpd_version, nginx $nginx_version and openssh $openssh_version present in $dest"
	exit 0
fi

# Holding the lock, any temporary directory left is from a killed install.
if $locked; then rm -rf "$cache/.$key.tmp."* "$cache/.$key.debs."*; fi
start=$SECONDS
tmp=$(mktemp -d "$cache/.$key.tmp.XXXXXX")
debs=$(mktemp -d "$cache/.$key.debs.XXXXXX")
trap 'rm -rf "$tmp" "$debs"' EXIT
deb_who=backends deb_tree=$tmp deb_dir=$debs

echo "backends: fetching Debian's lighttpd $lighttpd_version, nginx $nginx_version and openssh $openssh_version into $dest"
deb_fetch "they are in Debian 12 bookworm and bookworm-security" lighttpd="$lighttpd_version" nginx="$nginx_version" \
	openssh-server="$openssh_version" openssh-client="$openssh_version"
: >"$tmp/PACKAGES"
deb_unpack "$debs"/lighttpd_*.deb "$debs"/nginx_*.deb "$debs"/openssh-server_*.deb "$debs"/openssh-client_*.deb
deb_add_missing_libs usr/sbin/lighttpd usr/sbin/nginx 'usr/lib/lighttpd/*.so' usr/sbin/sshd usr/bin/ssh

# The binaries run.
export LD_LIBRARY_PATH
LD_LIBRARY_PATH=$(deb_libpath)
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
got=$("$tmp/usr/bin/ssh" -V 2>&1) || die "the unpacked ssh does not run: $got"
[[ $got == "OpenSSH_$openssh_version "* ]] || die "the unpacked ssh says '$got', not OpenSSH_$openssh_version"
got=$("$tmp/usr/sbin/sshd" -V 2>&1) || die "the unpacked sshd does not run: $got"
# (sshd -V leaves the portable release's p1 out.)
[[ $got == "OpenSSH_${openssh_version%%p*},"* ]] || die "the unpacked sshd says '$got', not OpenSSH_${openssh_version%%p*}"
unset LD_LIBRARY_PATH

chmod 755 "$tmp" # mktemp made it private
# Replace whatever incomplete tree was there; the rename is atomic.
rm -rf "$dest"
mv -T "$tmp" "$dest"
rm -rf "$debs"
trap - EXIT
echo "backends: ready in $dest ($(paste -sd, "$dest/PACKAGES" | sed 's/,/, /g'); $((SECONDS - start))s)"
