#!/usr/bin/env bash
# scripts/rocm-root.sh — builds, once, a minimal Debian 13 (trixie) root holding ROCm 5.7.1's
# hiprtc (libamdhip64.so.5), its builtins, comgr 6.0 (libamd_comgr.so.2) and the ROCm
# device libraries: the ROCm that compiles for gfx940-gfx942 (MI300) and gfx1100-gfx1103
# (RDNA3), which Debian 12's ROCm 5.2 does not know. Its libraries need glibc 2.38 or later
# (trixie has 2.41), so they are never installed over the system: programs use them under
# the root's own dynamic loader (scripts/with-rocm-root).
#
# Prints the root's path on stdout; messages go to stderr.
#   root: $TILEC_ROCM_ROOT, else ${XDG_CACHE_HOME:-$HOME/.cache}/tilec-rocm/trixie-rocm5.7-v1
#         (kept between runs, as a CI machine keeps $HOME; ~270 MB)
#   mirror: $TILEC_ROCM_MIRROR, else the Debian mirror of this machine's apt sources
#
# The root is built into a temporary directory next to it (mmdebstrap --variant=extract
# --mode=chrootless: the packages are unpacked, no maintainer script runs, nothing is
# mounted, root is not needed) and renamed into place only when complete, so an
# interrupted build is never taken for a root; builders of the same root take turns (flock).
# Exit status: 0 the root is ready; 3 it cannot be built here (no mmdebstrap, no mirror,
# no network: the message says which); 1 anything else.
set -euo pipefail

recipe_version=v1
suite=trixie
packages=(libamdhip64-5 libhiprtc-builtins5 libamd-comgr2 rocm-device-libs-17)
recipe="tilec rocm root $recipe_version: suite $suite, mmdebstrap --variant=extract, ${packages[*]}"

say() { echo "rocm-root: $*" >&2; }
skip() { say "$*"; exit 3; }

cache=${XDG_CACHE_HOME:-${HOME:-}/.cache}
if [ -n "${TILEC_ROCM_ROOT:-}" ]; then root=$TILEC_ROCM_ROOT
elif [ -n "${XDG_CACHE_HOME:-}${HOME:-}" ]; then root=$cache/tilec-rocm/trixie-rocm5.7-$recipe_version
else skip "neither TILEC_ROCM_ROOT nor HOME is set: set TILEC_ROCM_ROOT to where the ROCm root should live"; fi
case $root in /*) ;; *) root=$PWD/$root ;; esac
root=${root%/}
marker=$root/.tilec-rocm-root

# complete: the root at $root is one this recipe built
complete() { [ -f "$marker" ] && [ "$(head -n 1 "$marker")" = "$recipe" ]; }

if complete; then echo "$root"; exit 0; fi

command -v mmdebstrap >/dev/null ||
    skip "mmdebstrap is not installed (Debian 12 has it: apt-get install mmdebstrap; scripts/setup.sh installs it as root)"
command -v flock >/dev/null || skip "flock (util-linux) is not installed"

# The Debian mirror this machine's apt uses: an entry for its own codename in
# /etc/apt/sources.list, sources.list.d/*.list (one-line) or sources.list.d/*.sources (deb822).
apt_mirror() {
    local codename
    # shellcheck disable=SC1091 # the machine's own
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 1
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        # deb [options] URI SUITE COMPONENTS...
        awk -v c="$codename" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                                          if ($(i + 1) == c) { print $i; exit } }' "$f"
    done | head -n 1 | grep . && return 0
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # stanzas separated by blank lines; Types: deb, Suites: holding the codename, not Enabled: no
        awk -v c="$codename" 'function flush() { if (deb && suite && on && uri != "") { print uri; found = 1; exit }
                                               deb = suite = 0; on = 1; uri = "" }
            BEGIN { on = 1 }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]*#/ { next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == c) suite = 1 }
            tolower($1) == "enabled:" { if (tolower($2) == "no") on = 0 }
            END { if (!found) flush() }' "$f"
    done | head -n 1 | grep .
}
if [ -n "${TILEC_ROCM_MIRROR:-}" ]; then mirror=$TILEC_ROCM_MIRROR
elif mirror=$(apt_mirror); then :
else
    mirror=http://deb.debian.org/debian
    say "no Debian mirror found in this machine's apt sources; using $mirror (set TILEC_ROCM_MIRROR to choose)"
fi

parent=$(dirname "$root")
mkdir -p "$parent" || skip "cannot create $parent: set TILEC_ROCM_ROOT to a writable place"
exec 9>"$parent/.$(basename "$root").lock"
flock 9
if complete; then echo "$root"; exit 0; fi # another builder finished while this one waited

# what an interrupted build left: never mounted into (chrootless), removed without
# crossing a file system boundary all the same
for old in "$parent/.$(basename "$root").tmp."*; do
    [ -e "$old" ] || continue
    say "removing $old, left by an interrupted build"
    rm -rf --one-file-system "$old"
done

tmp=$(mktemp -d "$parent/.$(basename "$root").tmp.XXXXXX")
log=$tmp.log
trap 'rm -rf --one-file-system "$tmp"; rm -f "$log"' EXIT

say "building $root: Debian $suite from $mirror with ${packages[*]} (about 10 s on a fast network)"
start=$(date +%s)
include=$(IFS=,; echo "${packages[*]}")
if ! mmdebstrap --mode=chrootless --variant=extract --skip=cleanup/apt/cache --include="$include" \
    "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    skip "mmdebstrap could not build the root from $mirror (no network, or the mirror lacks $suite?): see above; set TILEC_ROCM_MIRROR to another Debian mirror"
fi

lib=$tmp/usr/lib/x86_64-linux-gnu
for f in "$lib/ld-linux-x86-64.so.2" "$lib/libc.so.6" "$lib/libamdhip64.so.5" "$lib/libamd_comgr.so.2" \
    "$lib/libhiprtc-builtins.so.5"; do
    [ -e "$f" ] || { say "the built root lacks ${f#"$tmp"/}: the packages of $suite changed; update this script"; exit 1; }
done
ls "$tmp"/usr/lib/llvm-*/lib/clang/*/amdgcn/bitcode/ocml.bc >/dev/null 2>&1 ||
    { say "the built root has no ROCm device libraries (ocml.bc): the packages of $suite changed; update this script"; exit 1; }

# the marker: the recipe, then the package files that went in (name_version_arch.deb)
{
    echo "$recipe"
    echo "mirror: $mirror"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    (cd "$tmp/var/cache/apt/archives" && ls -- *.deb)
} >"$tmp/.tilec-rocm-root.new"
grep -q '^libamdhip64-5_5\.7\.' "$tmp/.tilec-rocm-root.new" ||
    { say "the root's libamdhip64-5 is not ROCm 5.7: $(grep '^libamdhip64' "$tmp/.tilec-rocm-root.new" || echo none)"; exit 1; }
rm -f "$tmp"/var/cache/apt/archives/*.deb
mv "$tmp/.tilec-rocm-root.new" "$tmp/.tilec-rocm-root"

if [ -e "$root" ]; then # a root of another recipe, or an incomplete one: replaced
    say "replacing $root (built by another recipe)"
    mv -T "$root" "$tmp.old"
    rm -rf --one-file-system "$tmp.old"
fi
mv -T "$tmp" "$root"
say "built $root in $(($(date +%s) - start)) s ($(du -sh "$root" | cut -f1))"
echo "$root"
