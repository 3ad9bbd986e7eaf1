#!/usr/bin/env bash
# scripts/install-check.sh BUILD — installs BUILD into a scratch root and builds
# examples/embed.c and examples/jit_sum.c against it as a user of the installed library
# would: with `pkg-config --cflags --libs tilec`, and with CMake (examples/cmake:
# find_package(tilec) and tilec::tilec); then runs them (jit_sum on a GPU when one is
# usable, else on the simulator). Checks that the installed tilec starts with no
# LD_LIBRARY_PATH (its RUNPATH names the install's libdir), and that the CLI, its bash completion and (where
# help2man is installed) its man page were installed too, and that the Python package went
# where /usr/bin/python3 looks under the prefix; imports it from there and reduces with it.
set -euo pipefail
build=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" >/dev/null
pc=$(dirname "$(find "$root" -name tilec.pc | head -1)")
export PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$root
libdir=$(dirname "$(find "$root" -name 'libtilec.so' | head -1)")
test -x "$(find "$root" -name tilec -type f -path '*/bin/*' | head -1)"
test -f "$(find "$root" -path '*/bash-completion/completions/tilec' | head -1)" ||
    { echo "install check: the bash completion (share/bash-completion/completions/tilec) was not installed" >&2; exit 1; }
if command -v help2man >/dev/null; then
    test -f "$(find "$root" -path '*/man1/tilec.1' | head -1)" ||
        { echo "install check: help2man is installed but man1/tilec.1 was not; reconfigure $build (meson setup --reconfigure $build)" >&2; exit 1; }
fi
cc -std=c11 -Wall -Wextra -Werror examples/embed.c $(pkg-config --cflags --libs tilec) -o "$root/embed"
LD_LIBRARY_PATH=$libdir "$root/embed"
cc -std=c11 -Wall -Wextra -Werror examples/jit_sum.c $(pkg-config --cflags --libs tilec) -lm -o "$root/jit_sum"
LD_LIBRARY_PATH=$libdir "$root/jit_sum"

prefix=$(meson introspect "$build" --buildoptions |
    /usr/bin/python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')

# The installed executables start with no LD_LIBRARY_PATH and no ldconfig (Meson 1.0 runs
# none after installing): each names the install's library directory in its RUNPATH, and
# the installed tilec runs from the final prefix. The install went to $root (DESTDIR),
# while the RUNPATH names the prefix, so the run happens where the prefix is the staged
# tree: in a mount namespace with $root$prefix bound over $prefix and the loader's cache
# emptied (so a libtilec that ldconfig found earlier cannot stand in). Where namespaces are
# not allowed, the RUNPATH entries are looked up under $root instead, through
# LD_LIBRARY_PATH: the library must be where the RUNPATH says.
final_libdir=${libdir#"$root"}
case "$final_libdir" in
/lib|/lib64|/usr/lib|/usr/lib64|/lib/*-linux-*|/usr/lib/*-linux-*) system_libdir=1 ;; # the loader searches these
*) system_libdir= ;;
esac
for exe in "$root$prefix"/bin/*; do
    readelf -h "$exe" >/dev/null 2>&1 || continue # a script
    runpath=$(readelf -d "$exe" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    case ":$runpath:" in
    *":$final_libdir:"*) ;;
    *) [ -n "$system_libdir" ] ||
        { echo "install check: the installed ${exe#"$root"} has RUNPATH '$runpath', not $final_libdir, where" \
               "libtilec went: it fails with 'error while loading shared libraries' until ldconfig runs" >&2; exit 1; } ;;
    esac
done
if [ -z "$system_libdir" ] && [ -d "$prefix" ] && unshare -rm true 2>/dev/null; then
    how="from $prefix in a mount namespace, with no LD_LIBRARY_PATH and no loader cache"
    version=$(env -u LD_LIBRARY_PATH unshare -rm sh -c 'mount --bind "$1" "$2" && { [ ! -e /etc/ld.so.cache ] ||
        mount --bind /dev/null /etc/ld.so.cache; } && exec "$2/bin/tilec" --version' sh "$root$prefix" "$prefix") || version=
else
    how="from $root$prefix, with LD_LIBRARY_PATH set to its RUNPATH (or the system libdir) under $root"
    runpath=$(readelf -d "$root$prefix/bin/tilec" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    [ -z "$system_libdir" ] || runpath=$final_libdir # found there without one
    version=$(LD_LIBRARY_PATH=$(echo "$runpath" | sed "s|^/|$root/|; s|:/|:$root/|g") "$root$prefix/bin/tilec" --version) || version=
fi
case "$version" in
tilec\ *) ;;
*) echo "install check: the installed tilec does not start ($how)" >&2; exit 1 ;;
esac

# CMake: find_package(tilec 0.2) through the installed tilecConfig.cmake
if ! command -v cmake >/dev/null; then
    echo "install check: cmake not found; install it (scripts/setup.sh, or apt-get install cmake)" >&2
    exit 1
fi
test -f "$(find "$root$prefix" -path '*/cmake/tilec/tilecConfig.cmake' | head -1)" ||
    { echo "install check: tilecConfig.cmake was not installed under $prefix (is cmake found when $build is configured?)" >&2; exit 1; }
cmake -S examples/cmake -B "$root/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$root$prefix" >"$root/cmake.log" 2>&1 ||
    { cat "$root/cmake.log" >&2; echo "install check: cmake could not configure examples/cmake against $root$prefix" >&2; exit 1; }
cmake --build "$root/cmake-build" >>"$root/cmake.log" 2>&1 ||
    { cat "$root/cmake.log" >&2; echo "install check: examples/cmake did not build" >&2; exit 1; }
soname=$(readelf -d "$libdir/libtilec.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
readelf -d "$root/cmake-build/jit_sum" | grep -q "(NEEDED).*\[$soname\]" ||
    { echo "install check: the CMake-built jit_sum does not need $soname (tilecConfig.cmake names the wrong file)" >&2; exit 1; }
LD_LIBRARY_PATH=$libdir "$root/cmake-build/jit_sum"

# the Python package, as installed: where /usr/bin/python3 looks for packages under the
# prefix (the first entry of its sys.path below PREFIX/lib*: /usr/local/lib/python3.11/
# dist-packages for Debian's python3 and /usr/local), or for a prefix it does not search,
# the purelib path sysconfig gives for it (PREFIX/lib/python3.X/site-packages), which its
# user puts on PYTHONPATH. The package must be there; it is imported from there, staged
# under $root, with its note of the library's directory pointed there as a package
# manager's unpacking would, and reduces through that note (TILEC_LIB unset).
pydir=$(/usr/bin/python3 - "$prefix" <<'EOF'
import os, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
searched = [os.path.normpath(p) for p in sys.path if p.endswith("-packages") and
            os.path.relpath(os.path.normpath(p), prefix).startswith("lib")]
print(searched[0] if searched else os.path.normpath(
    sysconfig.get_path("purelib", "posix_prefix", {"base": prefix, "platbase": prefix})))
EOF
)
pkg=$root$pydir/tilec
[ -f "$pkg/__init__.py" ] && [ -f "$pkg/_install.py" ] || {
    echo "install check: the Python package is not in $pydir/tilec, where /usr/bin/python3 looks under $prefix;" \
         "it went to: $(dirname "$(find "$root" -path '*/tilec/__init__.py' | head -1)")" >&2; exit 1; }
grep -qF "LIBDIR = '${libdir#"$root"}'" "$pkg/_install.py" ||
    { echo "install check: $pkg/_install.py does not name ${libdir#"$root"}" >&2; exit 1; }
sed -i "s|^LIBDIR = '|LIBDIR = '$root|" "$pkg/_install.py"
(cd "$root" && env -u TILEC_LIB -u TILEC_BACKEND PYTHONPATH="$root$pydir" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import sys, numpy, tilec
assert tilec.__file__ == sys.argv[2] + "/tilec/__init__.py", (tilec.__file__, sys.argv[2])
assert tilec.library_path == sys.argv[1], (tilec.library_path, sys.argv[1])
got = tilec.sum(numpy.array([3, -7, 2**31 - 1], dtype=numpy.int64), backend="sim")
assert got == 2**31 - 5, got
# the compiled core installed in the package, and what serves a repeated call
assert tilec._CORE is not None and tilec._CORE.__file__ == sys.argv[2] + "/tilec/_core.abi3.so", tilec._CORE
import os; os.environ["TILEC_BACKEND"] = "sim"  # the core serves backend=None calls
x = numpy.arange(12, dtype=numpy.int32).reshape(3, 4)
for _ in range(2):
    assert tilec.sum(x, axis=1).tolist() == [6, 22, 38]
assert tilec._CORE.stats()[0] >= 1, tilec._CORE.stats()
' "$libdir/libtilec.so" "$root$pydir")
echo "install check: header, library, pkg-config file, CMake package, Python package and its compiled core, tilec (which starts: its RUNPATH), its completion and man page installed; embed.c and jit_sum.c built (pkg-config, CMake) and ran; the Python package reduced, a repeated call through its compiled core"
