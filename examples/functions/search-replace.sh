#!/bin/sh
# search-replace: a small KRM function. It replaces every occurrence of SEARCH
# with REPLACE in the items of the ResourceList it reads on stdin, writes the
# ResourceList to stdout and says what it did on stderr. Like kpt's catalog
# functions it leaves the package's own configuration alone: the Kptfile and
# items annotated config.kubernetes.io/local-config: "true".
#
#   search-replace.sh SEARCH REPLACE    the terms as arguments (wrapper-server)
#   search-replace.sh                   the terms from the functionConfig, a
#                                       ConfigMap with data.search and
#                                       data.replace (kpt, Porch, a Kptfile)
#
# Both terms are taken literally. It reads the block-style YAML our clients
# and kpt send; it is an example, not a YAML parser.
set -eu
if [ $# -ne 0 ] && [ $# -ne 2 ]; then
    echo "usage: search-replace.sh [SEARCH REPLACE]" >&2
    exit 1
fi
exec awk -v search="${1:-}" -v replace="${2:-}" '
# The top-level key a line belongs to, and under functionConfig the second-
# level one: items are edited, functionConfig.data gives the terms.
function unquote(v) {
    if (v ~ /^".*"$/ || v ~ /^\047.*\047$/)
        v = substr(v, 2, length(v) - 2)
    return v
}
function replace_all(s,    out, p) {
    out = ""
    while ((p = index(s, search)) > 0) {
        out = out substr(s, 1, p - 1) replace
        s = substr(s, p + length(search))
    }
    return out s
}
# Items are held until the next one starts, then written edited or not.
function flush(    i, keep) {
    keep = (item_kind == "Kptfile" || item_local)
    for (i = 1; i <= n_item; i++)
        print (keep ? item[i] : replace_all(item[i]))
    n_item = 0; item_kind = ""; item_local = 0
}
{
    lines[NR] = $0
    if ($0 ~ /^[^ #-]/) {
        top = $0; sub(/:.*/, "", top); second = ""
    } else if (top == "functionConfig" && $0 ~ /^  [^ ]/) {
        second = $0; sub(/^  /, "", second); sub(/:.*/, "", second)
    } else if (top == "functionConfig" && second == "data" && $0 ~ /^    (search|replace): /) {
        key = $0; sub(/^    /, "", key); sub(/:.*/, "", key)
        val = $0; sub(/^[^:]*: */, "", val)
        config[key] = unquote(val)
    }
    in_items[NR] = (top == "items")
}
END {
    if (search == "") {
        search = config["search"]; replace = config["replace"]
    }
    if (search == "") {
        print "search-replace: nothing to search for: give SEARCH REPLACE, or a functionConfig with data.search and data.replace" > "/dev/stderr"
        exit 1
    }
    printf "replacing \"%s\" with \"%s\"\n", search, replace > "/dev/stderr"
    for (i = 1; i <= NR; i++) {
        s = lines[i]
        if (!in_items[i]) {
            flush()
            print s
            continue
        }
        if (s ~ /^- /)
            flush()
        item[++n_item] = s
        if (s ~ /^(- |  )kind: Kptfile *$/)
            item_kind = "Kptfile"
        if (s ~ /^      config\.kubernetes\.io\/local-config: ["\047]?true["\047]? *$/)
            item_local = 1
    }
    flush()
}'
