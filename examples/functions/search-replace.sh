#!/bin/sh
# A minimal KRM function: replaces every occurrence of $1 with $2 in the
# ResourceList it reads on stdin, and says what it did on stderr.
# Usage: search-replace.sh SEARCH REPLACE
set -eu
if [ $# -ne 2 ]; then
    echo "usage: search-replace.sh SEARCH REPLACE" >&2
    exit 1
fi
echo "replacing \"$1\" with \"$2\"" >&2
exec sed -e "s/$1/$2/g"
