#!/usr/bin/env bash
# scripts/subproject-check.sh — tilec as a Meson subproject, as a parent project uses it:
# configures examples/meson-subproject (whose subprojects/tilec is this tree) in a scratch
# build directory, builds it, runs its consumer (tilec_reduce on the simulator), and checks
# that tilec built only its library there: no tilec test in `meson introspect --tests`, no
# executable of tilec's among the targets; and that the parent's install would install
# tilec's library (shared and static) and tilec.h (its programs need them) and nothing else of tilec's
# (no CLI, tilec.pc, CMake package, man page, completion or Python package), as the README says.
# Exit 3 when meson or ninja is not installed (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in meson ninja; do
    command -v "$tool" >/dev/null || { echo "subproject check: $tool not found; run scripts/setup.sh" >&2; exit 3; }
done
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
# --force-fallback-for: the subproject even where an installed tilec.pc would satisfy dependency()
if ! meson setup "$build" examples/meson-subproject --force-fallback-for=tilec >"$build/setup.log" 2>&1; then
    cat "$build/setup.log" >&2
    echo "subproject check: meson could not configure examples/meson-subproject (log above)" >&2
    exit 1
fi
ninja -C "$build" >"$build/ninja.log" 2>&1 || { cat "$build/ninja.log" >&2; echo "subproject check: the build failed (log above)" >&2; exit 1; }
"$build/consumer"

meson introspect "$build" --tests >"$build/tests.json"
meson introspect "$build" --targets >"$build/targets.json"
meson introspect "$build" --installed >"$build/installed.json"
/usr/bin/python3 - "$build" <<'PY' || exit 1
import json, os, sys
build = sys.argv[1]
load = lambda name: json.load(open(os.path.join(build, name)))
problems = []
tests = [t["name"] for t in load("tests.json")]
if tests != ["consumer"]:
    problems.append(f"tests {tests}: only the parent's 'consumer' should be there (tilec's tests must not be built as a subproject)")
for t in load("targets.json"):
    if t.get("subproject") == "tilec" and not (t["name"] == "tilec" and t["type"].endswith(" library")):
        problems.append(f"tilec built its {t['type']} '{t['name']}' as a subproject (only the library tilec should be)")
installed = list(load("installed.json").values())
for path in installed:
    name = os.path.basename(path)
    if name == "tilec" and "/bin/" in path:
        problems.append(f"tilec's CLI would be installed as {path}")
    elif name.startswith("libtilec.so") or name in ("libtilec.a", "tilec.h", "consumer"):
        pass  # the library and header the parent's programs need, and the parent's own program
    else:
        problems.append(f"the parent would install tilec's own {path}")
for want in ("libtilec.so", "tilec.h"):
    if not any(os.path.basename(p).startswith(want) for p in installed):
        problems.append(f"the parent would not install {want}, which its programs need (README says it does)")
for p in problems:
    print("subproject check:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
echo "subproject check: examples/meson-subproject built tilec's library alone and its consumer ran"
