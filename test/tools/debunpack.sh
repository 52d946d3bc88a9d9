# This file implements Debian packages fetched and unpacked, never
# installed: what test/tools/realnode/build.sh and
# test/tools/backends/install.sh share. Source it; it runs nothing itself.
#
# The packages come from the machine's apt sources with `apt-get download`
# (`apt-get update` runs once, only if that fails, and only as root) and
# are unpacked with `dpkg-deb -x`: nothing is installed into the system, no
# maintainer script runs, no service starts. Any Debian revision of a
# pinned upstream version will do (security updates replace older ones in
# the archive). After unpacking, ldd on every binary and library finds the
# shared libraries the machine lacks; those come from the packages the
# unpacked ones depend on that are not installed (deb_add_missing_libs).
#
# The sourcing script sets, before calling any function:
#
#   deb_who    the prefix of its messages ("realnode", "backends")
#   deb_tree   the directory packages are unpacked into; deb_unpack
#              records each one and its version in deb_tree/PACKAGES
#   deb_dir    a scratch directory for the .deb files and the apt log
#
# and defines die MESSAGE, which exits.

deb_log= deb_apt_updated=false
deb_unpacked=()

# deb_check_tools: dies unless apt, dpkg and ldd are there. WHAT says what
# the script fetches, for the message.
deb_check_tools() {
	local tool
	for tool in apt-get apt-cache dpkg-deb dpkg-query ldd; do
		command -v "$tool" >/dev/null ||
			die "$tool not found: this fetches $1 and needs apt and dpkg (a Debian or Ubuntu machine) and ldd"
	done
}

# deb_version PKG UPSTREAM: the newest Debian version of PKG the apt
# sources offer whose upstream part (less any epoch) is UPSTREAM followed
# by a Debian suffix, e.g. 1.6.20~ds1-1+deb12u3 for 1.6.20, 1:1.4.7-1+b2
# for 1.4.7, 1.22.1-9+deb12u7 for 1.22.1.
deb_version() {
	apt-cache madison "$1" 2>>"$deb_log" |
		awk -F'|' -v up="$2" '$3 ~ /Packages/ {
			v = $2; gsub(/ /, "", v); u = v; sub(/^[0-9]+:/, "", u)
			if (index(u, up) == 1 && substr(u, length(up) + 1, 1) ~ /[-~+]/) { print v; exit }
		}'
}

# deb_download PKG[=VERSION]...: apt-get download into deb_dir.
deb_download() { (cd "$deb_dir" && apt-get download "$@") >>"$deb_log" 2>&1; }

# deb_fetch HINT PKG=UPSTREAM...: downloads the newest Debian version of
# each pinned upstream version; when that fails, runs apt-get update once
# (the package lists may be missing, in a fresh container, or stale) and
# tries again. Dies with HINT (where the packages are to be found) if it
# still fails.
deb_fetch() {
	local hint=$1
	shift
	deb_log="$deb_dir/apt.log"
	if ! deb_fetch_pinned "$@"; then
		if [[ $(id -u) -ne 0 ]]; then
			tail -n 20 "$deb_log" >&2
			die "apt-get download of $* failed and apt-get update needs root: run 'sudo apt-get update' and try again"
		fi
		echo "$deb_who: apt-get download failed; running apt-get update once"
		apt-get update >>"$deb_log" 2>&1 || { tail -n 20 "$deb_log" >&2; die "apt-get update failed"; }
		deb_apt_updated=true
		deb_fetch_pinned "$@" || { tail -n 20 "$deb_log" >&2; die "apt-get download could not fetch $* ($hint; apt-cache madison NAME shows what the apt sources offer)"; }
	fi
}

# deb_fetch_pinned PKG=UPSTREAM...: deb_fetch's one try.
deb_fetch_pinned() {
	local p v wanted=()
	for p in "$@"; do
		v=$(deb_version "${p%%=*}" "${p#*=}")
		[[ -n $v ]] || return 1
		wanted+=("${p%%=*}=$v")
	done
	deb_download "${wanted[@]}"
}

# deb_unpack DEB...: dpkg-deb -x into deb_tree, each recorded in PACKAGES.
deb_unpack() {
	local deb
	for deb in "$@"; do
		dpkg-deb -x "$deb" "$deb_tree"
		deb_unpacked+=("$deb")
		dpkg-deb -f "$deb" Package Version | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 } END { print "" }' >>"$deb_tree/PACKAGES"
	done
}

# deb_libpath: the unpacked libraries' directories, for LD_LIBRARY_PATH.
deb_libpath() {
	local d p=
	for d in "$deb_tree"/usr/lib/*-linux-gnu* "$deb_tree"/lib/*-linux-gnu*; do
		[[ -d $d ]] && p+="${p:+:}$d"
	done
	echo "$p"
}

# deb_missing PATTERN...: the sonames ldd cannot find for any file the
# patterns (relative to deb_tree) name, or any unpacked library, one a
# line.
deb_missing() {
	local f lp pat files=()
	lp=$(deb_libpath)
	for pat in "$@" 'usr/lib/*-linux-gnu*/*.so*' 'lib/*-linux-gnu*/*.so*'; do
		# shellcheck disable=SC2206 # the pattern is meant to expand
		files+=("$deb_tree"/$pat)
	done
	for f in "${files[@]}"; do
		[[ -f $f && ! -L $f ]] || continue
		LD_LIBRARY_PATH=$lp ldd "$f" 2>/dev/null || true
	done | awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u
}

# deb_installed PKG: whether dpkg has PKG installed.
deb_installed() { [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) == ii* ]]; }

# deb_candidates: the packages the unpacked ones depend on that are
# neither installed nor downloaded (of alternatives the first, unless one
# is installed), one a line.
deb_candidates() {
	local deb
	for deb in "${deb_unpacked[@]}"; do
		dpkg-deb -f "$deb" Pre-Depends
		dpkg-deb -f "$deb" Depends
	done | tr ',' '\n' | sed 's/([^)]*)//g; s/:[a-z0-9]*//g; s/[[:space:]]//g' | sort -u |
		while IFS= read -r alts; do
			[[ -n $alts ]] || continue
			local alt a first= skip=false
			IFS='|' read -ra alt <<<"$alts"
			for a in "${alt[@]}"; do
				[[ -n $first ]] || first=$a
				if deb_installed "$a" || [[ -n $(compgen -G "$deb_dir/${a}_*.deb") ]]; then skip=true; fi
			done
			$skip || echo "$first"
		done | sort -u
}

# deb_add_missing_libs PATTERN...: the shared libraries the machine lacks
# for the files PATTERN names (as deb_missing): fetches the dependencies
# that are not installed and unpacks those holding a missing library,
# until ldd finds them all. Dies when no dependency holds one.
deb_add_missing_libs() {
	local sonames p deb new tried=" "
	while sonames=$(deb_missing "$@") && [[ -n $sonames ]]; do
		new=()
		while IFS= read -r p; do
			[[ $tried == *" $p "* ]] || new+=("$p")
		done < <(deb_candidates)
		((${#new[@]} > 0)) ||
			die "the unpacked binaries need ${sonames//$'\n'/ }, which neither the machine nor the packages' dependencies provide"
		echo "$deb_who: the machine lacks ${sonames//$'\n'/ }; looking in ${new[*]}"
		for p in "${new[@]}"; do
			tried+="$p "
			if ! deb_download "$p" && ! $deb_apt_updated && [[ $(id -u) -eq 0 ]]; then
				apt-get update >>"$deb_log" 2>&1 || true
				deb_apt_updated=true
				deb_download "$p" || true
			fi
		done
		for p in "${new[@]}"; do
			deb=$(compgen -G "$deb_dir/${p}_*.deb") || { echo "$deb_who: apt-get download $p failed: $(tail -n 1 "$deb_log")"; continue; }
			# grep without -q reads to the end, so dpkg-deb gets no SIGPIPE.
			if dpkg-deb -c "$deb" | awk '{ n = split($6, a, "/"); print a[n] }' | grep -xF "$sonames" >/dev/null; then
				echo "$deb_who: unpacking $p for the libraries the machine lacks"
				deb_unpack "$deb"
			fi
		done
	done
}
