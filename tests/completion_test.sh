#!/usr/bin/env bash
# completion_test.sh TILEC COMPLETION — sources the bash completion (completions/tilec) and
# completes as bash would: `tilec ` offers every command `TILEC --help` lists, `tilec CMD
# --` offers every option of CMD's Options list (for every command), `--backend ` and
# `--op s` offer their values, and a FILE argument is left to bash (file names).
set -u
tilec=$1
source "$2"
pass=0
fail=0

# complete WORD...: COMPREPLY for the command line "WORD...", completing the last word
complete_line() {
    COMP_WORDS=("$tilec" "$@")
    COMP_CWORD=$#
    COMPREPLY=()
    _tilec
}
# offers NAME WORD: COMPREPLY holds WORD
offers() {
    local w
    for w in "${COMPREPLY[@]}"; do [ "$w" = "$2" ] && { pass=$((pass + 1)); return; }; done
    fail=$((fail + 1)); echo "FAIL: $1: '$2' not offered (offered: ${COMPREPLY[*]})"
}
# offers_exactly NAME WORDS: COMPREPLY is WORDS (in order)
offers_exactly() {
    if [ "${COMPREPLY[*]}" = "$2" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: offered '${COMPREPLY[*]}', wanted '$2'"; fi
}

commands=$("$tilec" --help | awk '/Commands:$/ { on = 1; next }
    on && /^  [a-z]/ { print $1; seen = 1; next }
    on && seen && /^$/ { exit }')
[ -n "$commands" ] || { echo "FAIL: '$tilec --help' lists no commands"; exit 1; }

complete_line ""
for c in $commands; do offers "tilec <TAB>" "$c"; done
offers "tilec <TAB>" --help
complete_line re
offers_exactly "tilec re<TAB>" reduce

for c in $commands; do
    # the options of its "Options:" list: the names that begin its lines "  -x, --long=V  what"
    options=$("$tilec" "$c" --help | grep -E -- '^  -' | grep -oE -- '(^ +|, )-{1,2}[a-zA-Z][-a-zA-Z0-9]*' | sed 's/^ *,* *//' | sort -u)
    [ "$c" != reduce ] || [ -n "$options" ] || { fail=$((fail + 1)); echo "FAIL: no options in tilec reduce's usage"; }
    complete_line "$c" -
    for o in $options; do offers "tilec $c -<TAB>" "$o"; done
done
complete_line reduce --
for o in --op --dtype --shape --axes --check --backend; do offers "tilec reduce --<TAB>" "$o"; done

complete_line emit -
for o in --target --arch --warp-size -o --help; do offers "tilec emit -<TAB>" "$o"; done

complete_line reduce --backend ""
offers_exactly "tilec reduce --backend <TAB>" "auto cuda hip sim"
complete_line reduce --dtype f32 --op s
offers_exactly "tilec reduce --op s<TAB>" "sum sumsq std"
complete_line check ex
offers_exactly "tilec check ex<TAB> (file names, from bash)" ""

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
