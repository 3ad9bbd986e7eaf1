#!/usr/bin/env bash
# man_test.sh TILEC PAGE ROOT — the generated man page tilec(1) (scripts/man-page) has a
# subsection `.SS "tilec COMMAND"` for every command that `TILEC --help` lists, holding
# that command's usage line; sections ENVIRONMENT (every TILEC_* variable the code in
# ROOT/src reads, and no other), EXAMPLES (each command runs) and SEE ALSO; no paragraph
# twice; every docs/ path said to be in the source tree; and it renders without groff
# warnings where groff is installed.
set -u
tilec=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: the examples run elsewhere
page=$2
root=$3
pass=0
fail=0
commands=$("$tilec" --help | awk '/Commands:$/ { on = 1; next }
    on && /^  [a-z]/ { print $1; seen = 1; next }
    on && seen && /^$/ { exit }')
if [ -z "$commands" ]; then echo "FAIL: '$tilec --help' lists no commands"; exit 1; fi
# the reading above is the one the man page and the completion make; it must find at least
# the commands tilec has today, so a change of --help's layout cannot hide one from all three
for c in check fmt explain run emit compile reduce; do
    if grep -qx "$c" <<<"$commands"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: '$tilec --help' as read here lists no '$c' (read: $(echo $commands))"; fi
done
for c in $commands; do
    # the subsection, then (before the next one) the command's usage line
    if awk -v want=".SS \"tilec $c\"" -v usage="Usage: tilec $c" '
        $0 == want { on = 1; next }
        on && /^\.SS/ { exit }
        on { gsub(/\\-/, "-"); if (index($0, usage) == 1) found = 1 }
        END { exit !found }' "$page"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL: $page has no section 'tilec $c' with its usage line"
    fi
done
# ok NAME STATUS: one check
ok() { if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi; }
for sec in COMMANDS ENVIRONMENT EXAMPLES '"SEE ALSO"'; do
    grep -qx "\.SH $sec" "$page"; ok "$page has no section $sec" $?
done
# section NAME: the roff lines of section NAME
section() { awk -v want=".SH $1" '$0 == want { on = 1; next } on && /^\.SH / { exit } on' "$page"; }

# no paragraph (text between blank lines or macros) of 80 characters or more twice: each
# command's --help ends with the same paragraph, which the page once had seven times
dups=$(awk '
    function flush() { gsub(/[ \t]+/, " ", para); if (length(para) >= 80) n[para]++; para = "" }
    /^$/ || /^\./ { flush(); next }
    { para = para " " $0 }
    END { flush(); for (p in n) if (n[p] > 1) print n[p] " times:" substr(p, 1, 100) "..." }' "$page")
ok "paragraphs repeated in $page: $dups" "$([ -z "$dups" ]; echo $?)"

# ENVIRONMENT: every variable the library and the CLI read (each "TILEC_..." string of
# src/, as getenv's argument or a name passed to it), one entry each, and no other
want=$(grep -rhoE '"TILEC_[A-Z0-9_]+"' "$root/src" | tr -d '"' | sort -u)
have=$(section ENVIRONMENT | awk '/^\.TP/ { getline; if ($1 == ".B") print $2 }' | grep '^TILEC_' | sort -u)
[ -n "$want" ]; ok "no TILEC_ variable found in $root/src (the reading of the source is wrong)" $?
missing=$(comm -23 <(echo "$want") <(echo "$have"))
extra=$(comm -13 <(echo "$want") <(echo "$have"))
ok "ENVIRONMENT of $page lacks $(echo $missing)" "$([ -z "$missing" ]; echo $?)"
ok "ENVIRONMENT of $page names variables src/ does not read: $(echo $extra)" "$([ -z "$extra" ]; echo $?)"

# a docs/ path is in the source tree only (an install has no docs/): the page says so
named=$(grep -oE 'docs/[A-Za-z0-9_\\-]+\.md' "$page" | wc -l)
said=$(grep -oE "docs/[A-Za-z0-9_\\\\-]+\\.md in tilec's source tree" "$page" | wc -l)
ok "$page names docs/ paths $named times, $said of them said to be in the source tree" "$([ "$named" -eq "$said" ]; echo $?)"
twice=$(grep -c "source tree in tilec's source tree" "$page")
ok "$page says 'in tilec's source tree' twice in a row $twice times (the help already says it)" "$([ "$twice" -eq 0 ]; echo $?)"

# EXAMPLES: each command line runs (in a copy of the examples, writing there what it would
# write in /tmp; exit 3, a compiler not installed here, is a skip)
ex=$(mktemp -d)
trap 'rm -rf "$ex"' EXIT
cp -r "$root/examples" "$ex/examples"
n=0
while IFS= read -r line; do
    cmd=$(sed -e 's/\\-/-/g' -e 's#/tmp/#./#g' -e 's/^\(\([A-Z_]*=[^ ]* \)*\)tilec /\1"$tilec" /' <<<"$line")
    n=$((n + 1))
    rc=0
    (cd "$ex" && eval "$cmd") >"$ex/out" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: the example '$line' exited $rc:"; head -5 "$ex/out"; fi
done < <(section EXAMPLES | grep -E '^([A-Z_]+=[^ ]+ )*tilec ')
ok "EXAMPLES of $page has no command line" "$([ "$n" -gt 0 ]; echo $?)"

if command -v groff >/dev/null; then
    warnings=$(groff -man -ww -z "$page" 2>&1)
    if [ -z "$warnings" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: groff warns about $page:"; echo "$warnings" | head -20; fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
