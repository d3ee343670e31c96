/* rl_errors: the SDK's words for a bad ResourceList and the order of its
 * checks; see rl_errors.h. */
#include "krm/rl_errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/go_quote.h"
#include "core/utf8.h"
#include "krm/yaml_v3.h"

/* ------------------------------------------------------------------------ */
/* Writing the reason                                                        */

int rl_errors_oom(buf *err)
{
    return buf_fail(err, PARSE_PREFIX "out of memory");
}

/* ------------------------------------------------------------------------ */
/* Verdict, in ParseResourceList's order                                     */

/* The SDK's variant types as %T prints them. Go panics on an alias here. */
static const char *variant_name(int kind)
{
    switch (kind) {
    case YAML_V3_KIND_SEQUENCE: return "*internal.SliceVariant";
    case YAML_V3_KIND_MAPPING: return "*internal.MapVariant";
    case YAML_V3_KIND_SCALAR: return "*internal.scalarVariant";
    default: return "an alias (aliases are not followed)";
    }
}

static int fail_kind(const rl_facts *f, buf *err)
{
    buf msg = {0};
    int rc = buf_append_str(&msg, "input was of unexpected kind ");
    rc |= go_quote_bytes(f->kind ? f->kind : "", f->kind ? f->kind_len : 0, &msg);
    rc |= buf_append_str(&msg, "; expected ResourceList");
    if (rc == 0)
        buf_append(err, msg.data, msg.len);
    buf_free(&msg);
    return rc ? rl_errors_oom(err) : -1;
}

static int check_kind(const rl_facts *f, buf *err)
{
    static const char want[] = "ResourceList";
    if (f->kind && f->kind_len == sizeof want - 1 && memcmp(f->kind, want, sizeof want - 1) == 0)
        return 0;
    return fail_kind(f, err);
}

static int check_results(const rl_facts *f, const yaml_unmarshal_errors *terr, buf *err)
{
    if (f->results_kind == YAML_V3_KIND_ALIAS ||
        (f->results_kind == YAML_V3_KIND_MAPPING && f->legacy_items_kind &&
         f->legacy_items_kind != YAML_V3_KIND_SEQUENCE)) {
        int kind = f->results_kind == YAML_V3_KIND_ALIAS ? YAML_V3_KIND_ALIAS
                                                         : f->legacy_items_kind;
        return buf_fail(err, "incorrect type, was %s\nfailed when trying to get results",
                        variant_name(kind));
    }
    if (terr->count == 0)
        return 0;
    /* Go accumulates every unmarshal error; the text is bounded here. */
    return buf_fail(err, "yaml: unmarshal errors:\n  %s\nfailed to decode results",
                    terr->text.data ? terr->text.data : "");
}

int rl_errors_verdict(const rl_facts *f, const yaml_unmarshal_errors *terr, buf *err)
{
    if (f->first_bad_doc_kind)
        return buf_fail(err, PARSE_PREFIX "failed to extract objects: unhandled node kind %d",
                        f->first_bad_doc_kind);
    if (f->n_docs != 1)
        return buf_fail(err, PARSE_PREFIX "expected exactly one object, got %zu",
                        f->n_docs);
    if (check_kind(f, err) < 0)
        return -1;
    if (f->function_config_kind && f->function_config_kind != YAML_V3_KIND_MAPPING)
        return buf_fail(err, "failed when tried to get functionConfig: wrong type, got: %s",
                        variant_name(f->function_config_kind));
    if (f->items_kind && f->items_kind != YAML_V3_KIND_SEQUENCE)
        return buf_fail(err, "failed when tried to get items: incorrect type, was %s",
                        variant_name(f->items_kind));
    if (f->bad_item_kind)
        return buf_fail(err, "failed to extract objects from items: unhandled node kind %d",
                        f->bad_item_kind);
    return check_results(f, terr, err);
}
