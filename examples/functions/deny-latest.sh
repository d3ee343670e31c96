#!/bin/sh
# deny-latest: a small KRM validator. It passes the ResourceList it reads on
# stdin through unchanged and adds an error result for every container image
# that has no tag or the tag :latest (a moving target a package should not
# pin), naming the resource and the field, and then exits 1 (as the KRM
# function spec asks); no result and exit 0 when every image is pinned. A
# validator in a Kptfile pipeline, as kpt's catalog has them.
#
# It reads the block-style YAML our clients and kpt send (items only, no
# existing results); it is an example, not a YAML parser.
set -eu
exec awk '
function field(s) { sub(/^[^:]*: */, "", s); gsub(/^["\047]|["\047]$/, "", s); return s }
{ print }
/^[^ #-]/ { top = $0; sub(/:.*/, "", top) }
top != "items" { next }
/^- / { kind = ""; name = ""; ns = ""; api = ""; container = 0 }
/^(- |  )apiVersion: / { api = field($0) }
/^(- |  )kind: / { kind = field($0) }
/^    name: / && name == "" { name = field($0) }
/^    namespace: / { ns = field($0) }
/^ +image: / {
    image = field($0)
    tail = image; sub(/.*\//, "", tail)
    if (image ~ /@sha256:/ || (tail ~ /:/ && tail !~ /:latest$/))
        next
    bad[++n] = image; bad_api[n] = api; bad_kind[n] = kind; bad_name[n] = name; bad_ns[n] = ns
}
END {
    if (n == 0)
        exit 0
    print "results:"
    for (i = 1; i <= n; i++) {
        printf "- message: \"image %s is not pinned: give it a tag other than latest, or a digest\"\n", bad[i]
        print "  severity: error"
        print "  resourceRef:"
        printf "    apiVersion: %s\n    kind: %s\n    name: %s\n", bad_api[i], bad_kind[i], bad_name[i]
        if (bad_ns[i] != "")
            printf "    namespace: %s\n", bad_ns[i]
        print "  field:"
        print "    path: spec.template.spec.containers[].image"
    }
    printf "deny-latest: %d image(s) not pinned\n", n > "/dev/stderr"
    exit 1   # the KRM function spec: error results, non-zero exit
}'
