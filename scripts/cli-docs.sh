#!/bin/sh
# The completions are written as text: their $ and quotes are bash's, later.
# shellcheck disable=SC2016
# Writes the man pages and bash completions of the two commands, generated
# from their --help, so they cannot drift from what the programs say.
#   scripts/cli-docs.sh BUILD OUT
# OUT/man1/wrapper-server.1, runner-client.1 and runner-client-COMMAND.1
# (help2man, Debian package help2man); OUT/bash-completion/wrapper-server
# and runner-client (commands from `runner-client --help`, each command's
# flags from its --help and its subcommands').
set -eu
BUILD=$1
OUT=$2
RC=$BUILD/bin/runner-client
WS=$BUILD/bin/wrapper-server
VERSION=$("$RC" --version | awk '{ print $2 }')

command -v help2man >/dev/null || {
    echo "cli-docs: help2man is not installed (Debian package help2man: make deps-build)" >&2
    exit 1
}
mkdir -p "$OUT/man1" "$OUT/bash-completion"

# The commands and their one-line summaries, as `runner-client --help` lists them.
commands() {
    "$RC" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }'
}
summary() {
    "$RC" --help | awk -v c="$1" '$1 == c { $1 = ""; sub(/^ +/, ""); sub(/;$/, ""); print; exit }'
}

help2man -N -n "a gRPC server that runs one KRM function per call, as Porch's wrapper server" \
    -o "$OUT/man1/wrapper-server.1" "$WS"
help2man -N -n "run, render and serve KRM functions as kpt and Porch do" \
    -o "$OUT/man1/runner-client.1" "$RC"
# A command's further usage lines ("       runner-client eval --exec ...")
# become help2man's "or:" lines, so each is a line of the SYNOPSIS.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for c in $(commands); do
    printf '#!/bin/sh\n"%s" %s "$@" | sed -E "s/^ {7}(runner-client )/   or: \\1/"\n' \
        "$(realpath "$RC")" "$c" >"$TMP/runner-client-$c"
    chmod +x "$TMP/runner-client-$c"
    help2man -N --version-string="$VERSION" -n "$(summary "$c")" \
        -o "$OUT/man1/runner-client-$c.1" "$TMP/runner-client-$c"
done

# The flags a help text shows: the words starting with - on its usage lines
# and its option lines.
flags_of() {
    "$@" --help | grep -E '^(Usage: | +runner-client | +-)' |
        grep -oE '(^|[ ,[])--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[] ,[]*//' | sort -u | tr '\n' ' '
}

{
    echo "# bash completion for runner-client, generated from its --help by scripts/cli-docs.sh"
    echo "_runner_client() {"
    echo '    local cur=${COMP_WORDS[COMP_CWORD]} flags'
    echo '    if [ "$COMP_CWORD" -eq 1 ]; then'
    echo "        COMPREPLY=(\$(compgen -W \"$(commands | tr '\n' ' ')help --help --version\" -- \"\$cur\"))"
    echo '        return'
    echo '    fi'
    echo '    case ${COMP_WORDS[1]} in'
    echo "    help) COMPREPLY=(\$(compgen -W \"$(commands | tr '\n' ' ' | sed 's/ $//')\" -- \"\$cur\")); return ;;"
    for c in $(commands); do
        case $c in
        eval) f="$(flags_of "$RC" eval) $(flags_of "$RC" eval --kube)" ;;
        pod) f="$(flags_of "$RC" pod) $(flags_of "$RC" pod list) $(flags_of "$RC" pod delete) $(flags_of "$RC" pod create)" ;;
        *) f=$(flags_of "$RC" "$c") ;;
        esac
        echo "    $c) flags=\"$(echo "$f" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/^ *//; s/ *$//')\" ;;"
    done
    echo '    *) return ;;'
    echo '    esac'
    echo '    case $cur in'
    echo '    -*) COMPREPLY=($(compgen -W "$flags" -- "$cur")) ;;'
    echo '    esac'
    echo '}'
    echo 'complete -o default -F _runner_client runner-client'
} >"$OUT/bash-completion/runner-client"

{
    echo "# bash completion for wrapper-server, generated from its --help by scripts/cli-docs.sh"
    echo "_wrapper_server() {"
    echo '    local cur=${COMP_WORDS[COMP_CWORD]} i'
    echo '    for ((i = 1; i < COMP_CWORD; i++)); do'
    echo '        [ "${COMP_WORDS[i]}" = -- ] && return   # the function'"'"'s command: files'
    echo '    done'
    echo '    case $cur in'
    echo "    -*) COMPREPLY=(\$(compgen -W \"$(flags_of "$WS" | sed 's/ *$//')\" -- \"\$cur\")) ;;"
    echo '    esac'
    echo '}'
    echo 'complete -o default -F _wrapper_server wrapper-server'
} >"$OUT/bash-completion/wrapper-server"
