/* Fuzzes lib/krm/yaml_load against libyaml's own loader: every document
 * tree in runner-client and lib is built by yaml_load now, so on any input
 * it must build exactly the tree yaml_parser_load builds (ids, kinds, tags,
 * values, styles, children), or refuse where a limit says so, or fail
 * where libyaml fails. The known differences are allowed: a limit
 * (nesting, aliases, an alias inside its own anchor), an anchor defined
 * twice (libyaml refuses it; YAML 1.2 and yaml.v3 take the later one).
 *
 * Input: [unused] [span_at] [span_len] [reps] YAML...
 * As fuzz_kptfile, a span is repeated reps * 64 times. */
#include <string.h>
#include <yaml.h>

#include "fuzz_common.h"
#include "krm/yaml_load.h"

#define MAX_TEXT (64 * 1024)

static void same_tree(const yaml_document_t *a, const yaml_document_t *b)
{
    size_t n = (size_t)(a->nodes.top - a->nodes.start);
    FUZZ_CHECK(n == (size_t)(b->nodes.top - b->nodes.start));
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *x = &a->nodes.start[i], *y = &b->nodes.start[i];
        FUZZ_CHECK(x->type == y->type);
        FUZZ_CHECK(strcmp((const char *)x->tag, (const char *)y->tag) == 0);
        FUZZ_CHECK(x->start_mark.index == y->start_mark.index);
        if (x->type == YAML_SCALAR_NODE) {
            FUZZ_CHECK(x->data.scalar.length == y->data.scalar.length);
            FUZZ_CHECK(memcmp(x->data.scalar.value, y->data.scalar.value,
                              x->data.scalar.length) == 0);
            FUZZ_CHECK(x->data.scalar.style == y->data.scalar.style);
        } else if (x->type == YAML_SEQUENCE_NODE) {
            size_t k = (size_t)(x->data.sequence.items.top - x->data.sequence.items.start);
            FUZZ_CHECK(k == (size_t)(y->data.sequence.items.top - y->data.sequence.items.start));
            FUZZ_CHECK(k == 0 || memcmp(x->data.sequence.items.start, y->data.sequence.items.start,
                                        k * sizeof(yaml_node_item_t)) == 0);
            FUZZ_CHECK(x->data.sequence.style == y->data.sequence.style);
        } else {
            size_t k = (size_t)(x->data.mapping.pairs.top - x->data.mapping.pairs.start);
            FUZZ_CHECK(k == (size_t)(y->data.mapping.pairs.top - y->data.mapping.pairs.start));
            FUZZ_CHECK(k == 0 || memcmp(x->data.mapping.pairs.start, y->data.mapping.pairs.start,
                                        k * sizeof(yaml_node_pair_t)) == 0);
            FUZZ_CHECK(x->data.mapping.style == y->data.mapping.style);
        }
    }
    FUZZ_CHECK(a->start_implicit == b->start_implicit && a->end_implicit == b->end_implicit);
}

/* A difference libyaml's loader is allowed: what it refuses that we take. */
static int libyaml_only(const yaml_parser_t *p)
{
    return p->error == YAML_COMPOSER_ERROR && p->problem &&
           strcmp(p->problem, "second occurrence") == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    static uint8_t text[MAX_TEXT];
    size_t n = fuzz_stretch(data, data + 4, size - 4, text, MAX_TEXT);
    yaml_parser_t ours, theirs;
    FUZZ_CHECK(yaml_parser_initialize(&ours) && yaml_parser_initialize(&theirs));
    yaml_parser_set_input_string(&ours, text, n);
    yaml_parser_set_input_string(&theirs, text, n);
    for (int docs = 0; docs < 64; docs++) {
        yaml_document_t a, b;
        int ok = yaml_load(&ours, n, &a);
        if (!ok) {
            FUZZ_CHECK(ours.error != YAML_NO_ERROR);
            FUZZ_CHECK(ours.error == YAML_MEMORY_ERROR || ours.problem);
            if (ours.error != YAML_COMPOSER_ERROR && ours.error != YAML_MEMORY_ERROR) {
                /* not a limit: bad YAML, which libyaml's loader refuses too */
                int also = yaml_parser_load(&theirs, &b);
                if (also)
                    yaml_document_delete(&b);
                FUZZ_CHECK(!also);
            }
            break;
        }
        int ok_theirs = yaml_parser_load(&theirs, &b);
        if (!ok_theirs) {
            FUZZ_CHECK(libyaml_only(&theirs));
            yaml_document_delete(&a);
            break;
        }
        int end = yaml_document_get_root_node(&a) == NULL;
        FUZZ_CHECK(end == (yaml_document_get_root_node(&b) == NULL));
        same_tree(&a, &b);
        yaml_document_delete(&a);
        yaml_document_delete(&b);
        if (end)
            break;
    }
    yaml_parser_delete(&ours);
    yaml_parser_delete(&theirs);
    return 0;
}
