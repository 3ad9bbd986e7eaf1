#!/usr/bin/env bash
# readme_test.sh TILEC ROOT — the README's sample session shows what tilec prints: each
# `$ build/tilec check …` or `$ build/tilec run …` line of ROOT/README.md is run from ROOT
# (`run` on the simulator, as the README's output is), and its output must be the lines
# the README shows after it, exactly (none for a silent check). The files it names must
# exist, so the README cannot show a program the tree does not ship. And every docs/*.md
# is linked from the README (its Documentation section).
set -u
tilec=$1
root=$2
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
# the documentation index: every page of docs/ is linked from the README
for f in docs/*.md; do
    if grep -qF "]($f)" README.md; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: README.md does not link $f (its Documentation section lists every page)"; fi
done
# the session: commands and the lines after each, as "CMD<TAB>command" and "OUT<TAB>line"
awk '/^```/ { inblock = !inblock; cmd = 0; next }
     inblock && /^\$ build\/tilec (check|run) / { sub(/^\$ /, ""); sub(/ +#.*$/, ""); print "CMD\t" $0; cmd = 1; next }
     inblock && /^\$ / { cmd = 0; next }
     inblock && cmd { print "OUT\t" $0 }' README.md >"$tmp/session"
n=$(grep -c '^CMD' "$tmp/session")
if [ "$n" -lt 2 ]; then echo "FAIL: README.md shows $n tilec check or run commands with their output (expected at least 2)"; fail=$((fail + 1)); n=0; fi
for i in $(seq 1 "$n"); do
    cmd=$(grep '^CMD' "$tmp/session" | sed -n "${i}p" | cut -f2-)
    awk -v i="$i" -F '\t' '/^CMD/ { k++; next } k == i { print $2 }' "$tmp/session" >"$tmp/want"
    args=${cmd#build/tilec }
    case "$args" in run\ *) args="$args --backend sim" ;; esac
    # shellcheck disable=SC2086 # the README's words, split as a shell would
    "$tilec" $args >"$tmp/got" 2>&1
    if diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: README.md shows another output for '$cmd' (- README, + tilec):"; tail -n +3 "$tmp/diff"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
