#!/usr/bin/env bash
# rpmactl(1) renders cleanly and keeps up with the code, and so does the
# bash completion:
#   - `man --warnings` prints nothing on stderr;
#   - the page names every subcommand ("region create", "stats", ...) and
#     every flag the sources register with CLI11;
#   - the completion script offers every subcommand and flag.
# Pages are checked as rendered: what counts is what a reader sees.
#
#   man_page_test.sh RPMACTL_1 COMPLETION SOURCE.cc...
set -euo pipefail

page=$1
completion=$2
shift 2
sources=("$@")
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

render() {
    MANWIDTH=80 man --warnings -E UTF-8 -l "$1"
}
warnings=$(render "$page" 2>&1 >/dev/null) || fail "man cannot render $page"
if [ -n "$warnings" ]; then
    fail "man --warnings complains about $page:"
    printf '%s\n' "$warnings" | sed 's/^/    /'
fi
# Line breaks and runs of spaces made single spaces, so that a phrase
# wrapped across lines still matches.
text=" $(render "$page" 2>/dev/null | tr -s ' \n' '  ') "
completion_text=" $(tr -s ' \n' '  ' <"$completion") "

# Subcommands: `app.add_subcommand("x"` is top level; `parent->add_subcommand("y"`
# is "parent y" (the sources name each parent's variable after it).
# Sources are joined into one line first: clang-format wraps calls.
joined=$(cat "${sources[@]}" | tr -s ' \n' '  ')
commands=$(
    grep -oE '(app\.|[a-z]+->)add_subcommand\( ?"[a-z]+"' <<<"$joined" |
        sed -E 's/^app\.add_subcommand\( ?"([a-z]+)"/\1/; s/^([a-z]+)->add_subcommand\( ?"([a-z]+)"/\1 \2/' |
        sort -u
)
echo "== subcommands: $(tr '\n' ',' <<<"$commands")"
grep -qx 'region create' <<<"$commands" ||
    fail "could not read the subcommands of the sources (region create not found)"
while IFS= read -r command; do
    [ -n "$command" ] || continue
    case $text in
    *" $command "* | *" $command"[,.\;]*) ;;
    *) fail "rpmactl.1 does not document '$command'" ;;
    esac
    for word in $command; do
        case $completion_text in
        *[\ \"]"$word"[\ \"\)]*) ;;
        *) fail "rpmactl.bash-completion does not offer '$word'" ;;
        esac
    done
done <<<"$commands"

# Flags: every "--name" (and "-x,") registered with add_option or add_flag.
flags=$(
    {
        grep -oE 'add_(option|flag)\( ?"[^"]*"' <<<"$joined" | grep -oE -- '--[a-z][a-z-]*[a-z]'
        grep -oE 'add_(option|flag)\( ?"-[a-zA-Z],' <<<"$joined" | grep -oE -- '-[a-zA-Z]'
        grep -oE 'set_version_flag\( ?"--[a-z]+"' <<<"$joined" | grep -oE -- '--[a-z]+'
    } | sort -u
)
echo "== flags: $(tr '\n' ' ' <<<"$flags")"
grep -qx -- '--admin-token-file' <<<"$flags" ||
    fail "could not read the flags of the sources (--admin-token-file not found)"
for flag in $flags; do
    case $text in
    *[\ \[\|]"$flag"[\ ,\]\|]*) ;;
    *) fail "rpmactl.1 does not mention $flag" ;;
    esac
    case $completion_text in
    *[\ \"]"$flag"[\ \"\)]*) ;;
    *) fail "rpmactl.bash-completion does not offer $flag" ;;
    esac
done

# The completion script is valid bash.
bash -n "$completion" || fail "rpmactl.bash-completion is not valid bash"

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
