#!/usr/bin/env bash
# rpmad's manual pages render cleanly and keep up with the code:
#   - `man --warnings` prints nothing on stderr for either page;
#   - rpmad.yaml(5) documents every key of the documented default file
#     config/rpmad.yaml, with that file's default value;
#   - rpmad(8) mentions every flag that command_line.cc defines.
# A key or flag added without documentation fails here. Pages are checked
# as rendered: what counts is what a reader sees, not the troff source.
#
#   man_pages_test.sh RPMAD_8 RPMAD_YAML_5 RPMAD_YAML COMMAND_LINE_CC
set -euo pipefail

page8=$1
page5=$2
yaml=$3
command_line=$4
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# The page as a reader sees it, at 80 columns, on stdout; warnings on stderr.
render() {
    MANWIDTH=80 man --warnings -E UTF-8 -l "$1"
}

# Rendered text with line breaks and runs of spaces made single spaces, so
# that a phrase wrapped across lines still matches.
declare -A text
for page in "$page8" "$page5"; do
    warnings=$(render "$page" 2>&1 >/dev/null) || fail "man cannot render $page"
    if [ -n "$warnings" ]; then
        fail "man --warnings complains about $page:"
        printf '%s\n' "$warnings" | sed 's/^/    /'
    fi
    text[$page]=" $(render "$page" 2>/dev/null | tr -s ' \n' '  ') "
done

# --- rpmad.yaml(5): every key of config/rpmad.yaml, with its default --------
# "key.path<TAB>value" for every leaf of the YAML file (two-space indents, as
# the file is written); comments and blank lines skipped.
keys=$(awk '
    /^[[:space:]]*(#|$)/ { next }
    match($0, /^ */) {
        depth = RLENGTH / 2
        line = substr($0, RLENGTH + 1)
        name = line; sub(/:.*/, "", name)
        value = line; sub(/^[^:]*:[[:space:]]*/, "", value)
        path[depth] = name
        if (value == "") next
        key = path[0]
        for (i = 1; i <= depth; i++) key = key "." path[i]
        print key "\t" value
    }' "$yaml")
count=$(grep -c . <<<"$keys" || true)
echo "== $yaml has $count keys"
# Guards the parser: if it found nothing, every check below would pass.
grep -q "^control.tls.require_client_cert	" <<<"$keys" ||
    fail "could not read the keys of $yaml (control.tls.require_client_cert not found)"

while IFS=$'\t' read -r key value; do
    [ -n "$key" ] || continue
    case ${text[$page5]} in
    *" $key "*) ;;
    *) fail "rpmad.yaml.5 does not document $key"; continue ;;
    esac
    # The key's heading reads "KEY (TYPE..., default VALUE)", VALUE quoted
    # exactly where the YAML file quotes it; or, for a key the installed
    # file sets to other than its default, "KEY (..., as installed VALUE)".
    escaped=${key//./\\.} # keys are [a-z_] words joined by dots
    heading=$(grep -oE " $escaped \([^)]*\)" <<<"${text[$page5]}" | head -n 1 || true)
    case $heading in
    *"default $value)" | *"as installed $value)") ;;
    *) fail "rpmad.yaml.5 gives $key as '${heading# }', but $yaml's default is $value" ;;
    esac
done <<<"$keys"

# --- rpmad(8): every flag of command_line.cc ---------------------------------
flags=$(
    {
        grep -oE -- '--[a-z][a-z-]*[a-z]' "$command_line"
        grep -oE -- '"-[a-zA-Z],' "$command_line" | tr -d '",'
    } | sort -u
)
echo "== $command_line has the flags: $(tr '\n' ' ' <<<"$flags")"
grep -qx -- '--check-config' <<<"$flags" ||
    fail "could not read the flags of $command_line (--check-config not found)"
for flag in $flags; do
    case ${text[$page8]} in
    *[\ \[\|]"$flag"[\ ,\]\|]*) ;;
    *) fail "rpmad.8 does not mention $flag" ;;
    esac
done

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
