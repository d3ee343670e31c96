/* Unit tests for lib/krm/rl_scan: the items of block-style lists are found and
 * counted without libyaml, anything outside the scanner's subset is left to
 * libyaml, and either way rl_parse says exactly the same thing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "krm/resourcelist.h"
#include "krm/rl_scan.h"
#include "../fuzz/rl_outcome.h"

#define HEAD "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"

/* kyaml's style: indentless sequences, quoted annotations, block scalars. */
#define KYAML_ITEMS \
    HEAD \
    "items:\n" \
    "- apiVersion: v1\n" \
    "  kind: ConfigMap\n" \
    "  metadata:\n" \
    "    name: cm\n" \
    "    annotations:\n" \
    "      config.kubernetes.io/index: '0'\n" \
    "      internal.config.kubernetes.io/path: \"a \\u00e9.yaml\"\n" \
    "  data:\n" \
    "    script: |\n" \
    "      #!/bin/sh\n" \
    "      echo \"a: b\"  # text, not a comment\n" \
    "\n" \
    "    folded: >-\n" \
    "      one\n" \
    "      two\n" \
    "    empty: \"\"\n" \
    "    list: []\n" \
    "    map: {}\n" \
    "- kind: Deployment\n" \
    "  spec:\n" \
    "    containers:\n" \
    "    - name: c\n" \
    "      args:\n" \
    "      - --flag=x\n" \
    "      - - nested\n" \
    "        - seq\n" \
    "    replicas: -1\n"

static const char kyaml_items[] = KYAML_ITEMS;
static const char kyaml_list[] = KYAML_ITEMS
    "functionConfig:\n"
    "  kind: ConfigMap\n"
    "results:\n"
    "- message: done\n"
    "  severity: info\n";

/* Both ways must say the same; returns whether the scan took the input. */
static int same_both_ways(const char *data, size_t len)
{
    buf scanned = {0}, full = {0}, automatic = {0};
    int differ = rl_outcomes_differ(data, len, &scanned, &full);
    cr_assert_geq(differ, 0, "rl_scan: %s\nlibyaml: %s\ninput:\n%s", scanned.data, full.data,
                  data);
    buf_reset(&full);
    int rc_full = rl_outcome(data, len, RL_PARSE_LIBYAML, &full);
    cr_assert_eq(rl_outcome(data, len, RL_PARSE_AUTO, &automatic), rc_full);
    cr_assert_str_eq(automatic.data, full.data, "input:\n%s", data);
    buf_free(&scanned);
    buf_free(&full);
    buf_free(&automatic);
    return differ == 0;
}

static int scans(const char *yaml)
{
    rl_items_cut cut;
    return rl_scan_items(yaml, strlen(yaml), &cut);
}

Test(rl_scan, finds_and_counts_kyaml_items)
{
    rl_items_cut cut;
    cr_assert_eq(rl_scan_items(kyaml_list, strlen(kyaml_list), &cut), 1);
    cr_assert_eq(cut.n_items, 2);
    const char *items = strstr(kyaml_list, "items:\n") + strlen("items:\n");
    const char *after = strstr(kyaml_list, "functionConfig:");
    cr_assert_eq(cut.begin, (size_t)(items - kyaml_list));
    cr_assert_eq(cut.end, (size_t)(after - kyaml_list));
    cr_assert_eq(cut.first_line, 3);
    cr_assert_eq(cut.lines, 27);
    cr_assert(same_both_ways(kyaml_list, strlen(kyaml_list)));
}

Test(rl_scan, indented_sequences_and_empty_entries_followed_by_a_mapping)
{
    const char *yaml = HEAD "items:\n  - a: 1\n    b:\n      - x\n  -\n    c: 'it''s'\n";
    rl_items_cut cut;
    cr_assert_eq(rl_scan_items(yaml, strlen(yaml), &cut), 1);
    cr_assert_eq(cut.n_items, 2);
    cr_assert_eq(cut.end, strlen(yaml));
    cr_assert_eq(cut.lines, 5);
    cr_assert(same_both_ways(yaml, strlen(yaml)));
}

Test(rl_scan, items_at_the_end_without_a_final_line_break)
{
    const char *yaml = "kind: ResourceList\nitems:\n- a: b\n- c: d";
    rl_items_cut cut;
    cr_assert_eq(rl_scan_items(yaml, strlen(yaml), &cut), 1);
    cr_assert_eq(cut.n_items, 2);
    cr_assert_eq(cut.lines, 1);
    cr_assert(same_both_ways(yaml, strlen(yaml)));
}

/* Errors after the cut must name the line of the original input. */
Test(rl_scan, lines_after_the_cut_keep_their_numbers)
{
    static const char *const tails[] = {
        "results:\n- message: x\n  file: {index: abc}\n",   /* yaml.v3 type error */
        "results:\n- message: one\n  message: two\n",        /* duplicate key */
        "results: [\n",                                      /* syntax error */
        "results:\n  - a\n - b\n",                           /* bad indentation */
    };
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        buf doc = {0};
        buf_printf(&doc, "%s%s", kyaml_items, tails[i]);
        cr_assert(same_both_ways(doc.data, doc.len), "tail %zu", i);
        buf_free(&doc);
    }
    buf doc = {0}, out = {0};
    buf_printf(&doc, "%sresults:\n- message: x\n  file: {index: abc}\n", kyaml_items);
    cr_assert_eq(rl_outcome(doc.data, doc.len, RL_PARSE_SCAN_ONLY, &out), -1);
    cr_assert(strstr(out.data, "line 33: cannot unmarshal !!str `abc` into int") != NULL, "%s",
              out.data);
    buf_free(&doc);
    buf_free(&out);
}

/* Each of these is outside the subset: the scan gives up, libyaml decides. */
Test(rl_scan, leaves_everything_else_to_libyaml)
{
    static const char *const docs[] = {
        HEAD "items:\n- a: 1 # comment\n",
        HEAD "# comment\nitems:\n- a: 1\n",
        HEAD "items:\n- a: &x 1\n  b: *x\n",
        HEAD "items:\n- a: !!str 1\n",
        HEAD "items:\n- a: [1, 2]\n",
        HEAD "items:\n- a: {b: c}\n",
        HEAD "items:\n- a: [ ]\n",
        HEAD "items:\n- a: multi\n    line\n",
        HEAD "items:\n- a: \"multi\n    line\"\n",
        HEAD "items:\n- a: 'multi\n    line'\n",
        HEAD "items:\n- a: \"bad \\q escape\"\n",
        HEAD "items:\n- a: \"\\ud800\"\n",
        HEAD "items:\n-\ta: 1\n",
        HEAD "items:\n- a: 1\r\n",
        HEAD "items:\n- a:\tb\n",
        HEAD "items:\n- a: |2\n    x\n",
        HEAD "items:\n- a: |\n  \n    x\n",
        HEAD "items:\n- a: |\n     \tx\n",
        HEAD "items:\n- a: \xc2\x85\n",
        HEAD "items:\n- a: b\xe2\x80\xa8\n",
        HEAD "items:\n- a: \xef\xbb\xbf\n",
        HEAD "items:\n- a: \xc3\x28\n",
        HEAD "items:\n- a: b: c\n",
        HEAD "items:\n- a: - b\n",
        HEAD "items:\n- a: -\n",
        HEAD "items:\n- just a scalar\n",
        HEAD "items:\n- - a\n",
        HEAD "items:\n-\n- a: 1\n",
        HEAD "items:\n  a: 1\n",
        HEAD "items:\nresults: []\n",
        HEAD "items: []\n",
        HEAD "items:\n- a: 1\n  - b\n",
        HEAD "items:\n- a: 1\n - b: 2\n",
        HEAD "items:\n  - a: 1\n- b: 2\n",
        HEAD "items:\n- a: 1\n,oops\n",
        HEAD "items:\n- ? a\n  : b\n",
        "  kind: ResourceList\n  items:\n  - a: 1\n",
        "--- !tag\nkind: ResourceList\nitems:\n- a: 1\n",
        "kind: ResourceList\n\"items\":\n- a: 1\n",
        "kind: ResourceList\nitems :\n- a: 1\n",
        "{kind: ResourceList, items: [{a: 1}]}\n",
        "kind: ResourceList\n",
        "",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        cr_assert_eq(scans(docs[i]), 0, "document %zu was scanned:\n%s", i, docs[i]);
        same_both_ways(docs[i], strlen(docs[i]));
    }
}

/* Valid and invalid documents the scan takes, each checked against libyaml. */
Test(rl_scan, agrees_with_libyaml_where_it_scans)
{
    static const char *const docs[] = {
        "---\nkind: ResourceList\nitems:\n- a: 1\n",
        "kind: ResourceList\nitems:\n- a: 1\n---\nkind: ResourceList\n",
        "kind: ResourceList\nitems:\n- a: 1\n...\n",
        "kind: ResourceList\nitems:\n- a: 1\nitems: again\n",
        "kind: ConfigMap\nitems:\n- a: 1\n",
        "kind: ResourceList\nitems:\n- a: 1\nfunctionConfig: 3\n",
        "kind: ResourceList\nitems:\n- a: 1\nresults: {items: 3}\n",
        "kind: ResourceList\nitems:\n- a: 1\n\"quoted key\": [\n",
        "kind: ResourceList\nitems:\n- key: |\n    text\n  next: 1\n",
        "kind: ResourceList\nitems:\n- key: >+\n\n    text\n\n\nlast: 1\n",
        "kind: ResourceList\nitems:\n- 'q': \"\\x41\\u00e9\\U0001F600\\t\\\\ \\\"\"\n",
        "kind: ResourceList\nitems:\n- \"k\": v\n  a:b: c:d\n  u: caf\xc3\xa9\n",
        "kind: ResourceList\nitems:\n- a:\n  - b\n  - c:\n    - d\n",
        "kind: ResourceList\nitems:\n- a:\n  b: 1\n",
        "kind: ResourceList\nitems:\n- a: -1\n  -b: x\n  c: -x\n",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
        cr_assert(same_both_ways(docs[i], strlen(docs[i])), "document %zu was not scanned:\n%s",
                  i, docs[i]);
}

Test(rl_scan, deep_nesting_is_left_to_libyaml)
{
    buf doc = {0};
    buf_append_str(&doc, "kind: ResourceList\nitems:\n");
    for (int i = 0; i < 300; i++)
        buf_printf(&doc, "%*s- k:\n", 2 * i, "");
    cr_assert_eq(scans(doc.data), 0);
    same_both_ways(doc.data, doc.len);
    buf_free(&doc);
}

/* The scan looks at scalars 16 and 8 bytes at a time and only then byte by
 * byte: a byte that matters must be seen wherever it falls in a block. Each
 * one goes at every offset of a long plain, quoted and block-scalar value. */
Test(rl_scan, special_bytes_at_every_offset_of_a_long_scalar)
{
    static const char *const specials[] = {
        " ", " #", ": ", ":", "\t", "\x7f", "\x01", "'", "''", "\"", "\\", "\\n", "\\q",
        "\xc3\xa9", "\xe2\x80\xa8", "\xff", "-", "{",
    };
    static const char *const shapes[] = {
        "kind: ResourceList\nitems:\n- a: %s\n  b: 1\n",
        "kind: ResourceList\nitems:\n- a: '%s'\n  b: 1\n",
        "kind: ResourceList\nitems:\n- a: \"%s\"\n  b: 1\n",
        "kind: ResourceList\nitems:\n- a: |\n    %s\n  b: 1\n",
    };
    const char run[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL";   /* 48 bytes */
    int scanned = 0, checked = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t k = 0; k < sizeof specials / sizeof *specials; k++)
            for (size_t at = 0; at <= sizeof run - 1; at++) {
                char value[128];
                snprintf(value, sizeof value, "%.*s%s%s", (int)at, run, specials[k], run + at);
                buf doc = {0};
                buf_printf(&doc, shapes[s], value);
                scanned += same_both_ways(doc.data, doc.len);
                checked++;
                buf_free(&doc);
            }
    /* most are in the subset (the rest are left to libyaml, also checked) */
    cr_assert_gt(scanned, checked / 2, "%d of %d scanned", scanned, checked);
}
