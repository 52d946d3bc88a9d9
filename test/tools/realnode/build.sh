#!/usr/bin/env bash
# Builds and fetches what test/realnode runs besides the control plane of
# `make testenv` (`make realnode`), into two cache directories keyed by
# versions, so a machine pays for them once (on 2 cores, with an empty Go
# build cache: about 3 minutes right after make testenv, which compiled
# most of the packages; 8 minutes alone; the Go build cache grows by 3.5 GB
# alone, 4.7 GB for both):
#
#   ${TUNNELGATE_REALNODE_CACHE:-$HOME/.cache/tunnelgate/realnode}/
#     k8s-vX-coredns-vY/         kube-scheduler, kubelet, kube-proxy (from the
#                                k8s.io/kubernetes that ../go.mod pins) and
#                                coredns (from ../coredns/go.mod), static Go
#                                binaries
#     debian-containerd-A-runc-B-cni-C-iptables-D-conntrack-E/
#       usr/bin/containerd, containerd-shim-runc-v2, ctr
#       usr/sbin/runc, xtables-nft-multi, conntrack
#       usr/lib/cni/               the CNI plugins (bridge, host-local, loopback, portmap, ...)
#       usr/lib/<triplet>/xtables/ iptables' extensions (XTABLES_LIBDIR)
#       usr/lib/<triplet>/, lib/<triplet>/
#                                  shared libraries the binaries need that the
#                                  machine lacks (libnftnl, libnetfilter_conntrack, ...)
#       bin/                       iptables, iptables-save, iptables-restore (and
#                                  ip6tables-*), conntrack: wrappers that set
#                                  LD_LIBRARY_PATH and XTABLES_LIBDIR and run the
#                                  unpacked binaries, so kube-proxy, the kubelet and
#                                  the CNI plugins find them on PATH as on a node
#       PACKAGES                   each package unpacked here and its Debian version
#
# The Debian packages (bookworm) are fetched from the machine's apt sources
# and unpacked, never installed, as test/tools/debunpack.sh describes. Every
# package runs from the unpacked tree: containerd finds its shim and runc
# through PATH (test/realnode sets it), iptables finds its libraries and
# extensions through the wrappers.
#
# Idempotent: returns at once when both directories are there. Safe to run
# twice at the same time: a lock file (flock, where there is one) serialises
# builders, and each directory appears by renaming a finished temporary one,
# so a reader never sees half of one. test/realnode names the same
# directories (keep its version constants in step; a test there checks).
set -euo pipefail

containerd_version=1.6.20
runc_version=1.1.5
cni_version=1.1.1
iptables_version=1.8.9
conntrack_version=1.4.7

tools_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$tools_dir/../../go.mod")
export GOWORK=off CGO_ENABLED=0

die() {
	echo "realnode: $*" >&2
	exit 1
}
# shellcheck source=test/tools/debunpack.sh
source "$tools_dir/debunpack.sh"

k8s_version=$(cd "$tools_dir" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
coredns_version=$(cd "$tools_dir/coredns" && go list -m -f '{{.Version}}' github.com/coredns/coredns)
cache=${TUNNELGATE_REALNODE_CACHE:-$HOME/.cache/tunnelgate/realnode}
gokey="k8s-${k8s_version}-coredns-${coredns_version}"
debkey="debian-containerd-${containerd_version}-runc-${runc_version}-cni-${cni_version}-iptables-${iptables_version}-conntrack-${conntrack_version}"
gobins=(kube-scheduler kubelet kube-proxy coredns)

go_complete() {
	local b
	for b in "${gobins[@]}"; do [[ -x "$1/$b" ]] || return 1; done
}
deb_complete() {
	local f
	for f in usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/bin/ctr usr/sbin/runc \
		usr/lib/cni/bridge usr/lib/cni/host-local usr/lib/cni/loopback usr/lib/cni/portmap \
		bin/iptables bin/iptables-save bin/iptables-restore bin/conntrack; do
		[[ -x "$1/$f" ]] || return 1
	done
	[[ -s "$1/PACKAGES" ]]
}
complete() { go_complete "$cache/$gokey" && deb_complete "$cache/$debkey"; }

if complete; then
	echo "realnode: present in $cache/$gokey and $cache/$debkey"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.realnode.lock"
locked=false
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		echo "realnode: another build is running; waiting for it"
		flock 9
	fi
	locked=true
fi
if complete; then
	echo "realnode: present in $cache/$gokey and $cache/$debkey"
	exit 0
fi
# Holding the lock, any temporary directory left is from a killed build.
if $locked; then rm -rf "$cache/.$gokey.tmp."* "$cache/.$debkey.tmp."* "$cache/.debs."*; fi
tmps=()
trap 'rm -rf "${tmps[@]}"' EXIT

# ---- The Go binaries -------------------------------------------------------

build_go() {
	local dest="$cache/$gokey" start=$SECONDS tmp log minor
	tmp=$(mktemp -d "$cache/.$gokey.tmp.XXXXXX")
	tmps+=("$tmp")
	log="$tmp/build.log"
	# run DESCRIPTION DIR CMD...: a go build in DIR, a line every 100
	# packages instead of hundreds, and the log's tail on failure.
	run() {
		local what=$1 dir=$2 began=$SECONDS
		shift 2
		echo "realnode: building $what"
		if ! (cd "$dir" && "$@") 2>&1 | tee -a "$log" | awk '{ n++ } n % 100 == 0 { printf "realnode:   %d packages compiled\n", n; fflush() }'; then
			echo "realnode: building $what failed; end of the log:" >&2
			tail -n 40 "$log" >&2
			exit 1
		fi
		echo "realnode: built $what in $((SECONDS - began))s"
	}
	minor=${k8s_version#v1.}
	minor=${minor%%.*}
	echo "realnode: building $gokey into $dest (cold: about 3 minutes on 2 cores after make testenv, 8 minutes alone; with a warm Go build cache: about a minute)"
	run "kube-scheduler, kubelet and kube-proxy $k8s_version" "$tools_dir" \
		go build -v -trimpath -o "$tmp/" \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
	run "coredns $coredns_version" "$tools_dir/coredns" \
		go build -v -trimpath -o "$tmp/coredns" -ldflags "-s -w" github.com/coredns/coredns
	rm -f "$log"
	chmod 755 "$tmp" # mktemp made it private
	go_complete "$tmp" || die "go build did not produce all of ${gobins[*]}"
	"$tmp/kubelet" --version | grep -qF "$k8s_version" || die "the kubelet built does not say $k8s_version: $("$tmp/kubelet" --version)"
	"$tmp/coredns" -version | grep -qF "${coredns_version#v}" || die "the coredns built does not say ${coredns_version#v}: $("$tmp/coredns" -version)"
	rm -rf "$dest"
	mv -T "$tmp" "$dest"
	echo "realnode: Go binaries ready in $dest ($((SECONDS - start))s)"
}

# ---- The Debian packages ---------------------------------------------------

fetch_debian() {
	local dest="$cache/$debkey" start=$SECONDS tmp debs
	deb_check_tools "Debian bookworm's containerd, runc, CNI plugins, iptables and conntrack"
	tmp=$(mktemp -d "$cache/.$debkey.tmp.XXXXXX")
	debs=$(mktemp -d "$cache/.debs.XXXXXX")
	tmps+=("$tmp" "$debs")
	deb_who=realnode deb_tree=$tmp deb_dir=$debs
	echo "realnode: fetching Debian's containerd $containerd_version, runc $runc_version, containernetworking-plugins $cni_version, iptables $iptables_version and conntrack $conntrack_version into $dest"
	deb_fetch "Debian 12 bookworm has them" containerd="$containerd_version" runc="$runc_version" \
		containernetworking-plugins="$cni_version" iptables="$iptables_version" conntrack="$conntrack_version"
	: >"$tmp/PACKAGES"
	deb_unpack "$debs"/*.deb
	# On this machine the libraries it lacks are libnftnl11, libip6tc2,
	# libnetfilter-conntrack3 and libnfnetlink0.
	deb_add_missing_libs 'usr/bin/*' 'usr/sbin/*' 'usr/lib/cni/*' 'usr/lib/*-linux-gnu*/xtables/*.so'

	# Wrappers on PATH. iptables is Debian's nf_tables flavour (its default
	# alternative); xtables-nft-multi picks the command from argv[0], so
	# each wrapper execs it under the command's name. Paths are relative to
	# the wrapper, so the tree can be renamed into place.
	mkdir -p "$tmp/bin"
	wrapper() { # NAME TARGET
		cat >"$tmp/bin/$1" <<-EOF
			#!/bin/bash
			# Runs Debian's $2 unpacked beside this directory (test/tools/realnode/build.sh).
			root=\$(cd "\$(dirname "\$(readlink -f "\${BASH_SOURCE[0]}")")/.." && pwd)
			export LD_LIBRARY_PATH="\$(printf '%s:' "\$root"/usr/lib/*-linux-gnu* "\$root"/lib/*-linux-gnu*)\${LD_LIBRARY_PATH:-}"
			export XTABLES_LIBDIR=\$(printf '%s' "\$root"/usr/lib/*-linux-gnu*/xtables)
			exec -a $1 "\$root/usr/sbin/$2" "\$@"
		EOF
		chmod 755 "$tmp/bin/$1"
	}
	for c in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		wrapper "$c" xtables-nft-multi
	done
	wrapper conntrack conntrack

	# Everything runs from the tree.
	got=$("$tmp/usr/bin/containerd" --version 2>&1) || die "the unpacked containerd does not run: $got"
	[[ $got == *" $containerd_version"* ]] || die "the unpacked containerd says '$got', not $containerd_version"
	got=$("$tmp/usr/sbin/runc" --version 2>&1) || die "the unpacked runc does not run: $got"
	[[ $got == *"runc version $runc_version"* ]] || die "the unpacked runc says '$got', not $runc_version"
	got=$("$tmp/bin/iptables" --version 2>&1) || die "the unpacked iptables does not run: $got"
	[[ $got == *"v$iptables_version (nf_tables)"* ]] || die "the unpacked iptables says '$got', not v$iptables_version (nf_tables)"
	got=$("$tmp/bin/iptables-save" --version 2>&1) || die "the unpacked iptables-save does not run: $got"
	got=$("$tmp/bin/conntrack" --version 2>&1) || die "the unpacked conntrack does not run: $got"
	[[ $got == *"v$conntrack_version"* ]] || die "the unpacked conntrack says '$got', not v$conntrack_version"
	got=$(CNI_COMMAND=VERSION "$tmp/usr/lib/cni/bridge" 2>&1) || die "the unpacked CNI bridge plugin does not run: $got"

	chmod 755 "$tmp"
	rm -rf "$dest"
	mv -T "$tmp" "$dest"
	echo "realnode: Debian packages ready in $dest ($(paste -sd, "$dest/PACKAGES" | sed 's/,/, /g'); $((SECONDS - start))s)"
}

deb_complete "$cache/$debkey" || fetch_debian
go_complete "$cache/$gokey" || build_go
echo "realnode: ready in $cache/$gokey and $cache/$debkey"
