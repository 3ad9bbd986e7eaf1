#!/usr/bin/env bash
# man_test.sh TILEC PAGE — the generated man page tilec(1) (scripts/man-page) has a
# subsection `.SS "tilec COMMAND"` for every command that `TILEC --help` lists, holding
# that command's usage line, and renders without groff warnings where groff is installed.
set -u
tilec=$1
page=$2
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
if command -v groff >/dev/null; then
    warnings=$(groff -man -ww -z "$page" 2>&1)
    if [ -z "$warnings" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: groff warns about $page:"; echo "$warnings" | head -20; fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
