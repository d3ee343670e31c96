#!/bin/sh
# A function for bench-standing that tries to reach the other processes of
# its sandbox: it prints LEAK (so the call counts as an error) for each one
# whose standard input it can resolve through /proc (the process started
# for the next call, whose input it could then read or write), then
# answers its input. bench/README.md, issue 24's seventh pass:
#   bench-standing --cmd bench/standing_reach.sh --input FILE --modes cd \
#       --calls 20 --rounds 2 [--own-domain yes]
for p in /proc/[0-9]*; do
    case "$p" in /proc/1 | "/proc/$$") continue ;; esac
    readlink "$p/fd/0" >/dev/null 2>&1 && echo LEAK
done
exec cat
