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

void rl_errors_set(char *err, size_t errlen, const char *msg, size_t len)
{
    if (!err || errlen == 0)
        return;
    size_t n = utf8_cut(msg, len, errlen - 1);
    memcpy(err, msg, n);
    err[n] = '\0';
}

int rl_errors_oom(char *err, size_t errlen)
{
    static const char msg[] = PARSE_PREFIX "out of memory";
    rl_errors_set(err, errlen, msg, sizeof msg - 1);
    return -1;
}

int rl_errors_vprintf(char *err, size_t errlen, const char *fmt, va_list ap)
{
    char *msg;
    int n = vasprintf(&msg, fmt, ap);
    if (n < 0)
        return rl_errors_oom(err, errlen);
    rl_errors_set(err, errlen, msg, (size_t)n);
    free(msg);
    return -1;
}

int rl_errors_printf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_errors_vprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
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

static int fail_kind(const rl_facts *f, char *err, size_t errlen)
{
    buf msg = {0};
    int rc = buf_append_str(&msg, "input was of unexpected kind ");
    rc |= go_quote_bytes(f->kind ? f->kind : "", f->kind ? f->kind_len : 0, &msg);
    rc |= buf_append_str(&msg, "; expected ResourceList");
    if (rc == 0)
        rl_errors_set(err, errlen, msg.data, msg.len);
    buf_free(&msg);
    return rc ? rl_errors_oom(err, errlen) : -1;
}

static int check_kind(const rl_facts *f, char *err, size_t errlen)
{
    static const char want[] = "ResourceList";
    if (f->kind && f->kind_len == sizeof want - 1 && memcmp(f->kind, want, sizeof want - 1) == 0)
        return 0;
    return fail_kind(f, err, errlen);
}

static int check_results(const rl_facts *f, const yaml_unmarshal_errors *terr, char *err,
                         size_t errlen)
{
    if (f->results_kind == YAML_V3_KIND_ALIAS ||
        (f->results_kind == YAML_V3_KIND_MAPPING && f->legacy_items_kind &&
         f->legacy_items_kind != YAML_V3_KIND_SEQUENCE)) {
        int kind = f->results_kind == YAML_V3_KIND_ALIAS ? YAML_V3_KIND_ALIAS
                                                         : f->legacy_items_kind;
        return rl_errors_printf(err, errlen,
                                "incorrect type, was %s\nfailed when trying to get results",
                                variant_name(kind));
    }
    if (terr->count == 0)
        return 0;
    /* Go accumulates every unmarshal error; the text is bounded here. */
    return rl_errors_printf(err, errlen, "yaml: unmarshal errors:\n  %s\nfailed to decode results",
                            terr->text.data ? terr->text.data : "");
}

int rl_errors_verdict(const rl_facts *f, const yaml_unmarshal_errors *terr, char *err,
                      size_t errlen)
{
    if (f->first_bad_doc_kind)
        return rl_errors_printf(err, errlen,
                                PARSE_PREFIX "failed to extract objects: unhandled node kind %d",
                                f->first_bad_doc_kind);
    if (f->n_docs != 1)
        return rl_errors_printf(err, errlen, PARSE_PREFIX "expected exactly one object, got %zu",
                                f->n_docs);
    if (check_kind(f, err, errlen) < 0)
        return -1;
    if (f->function_config_kind && f->function_config_kind != YAML_V3_KIND_MAPPING)
        return rl_errors_printf(err, errlen,
                                "failed when tried to get functionConfig: wrong type, got: %s",
                                variant_name(f->function_config_kind));
    if (f->items_kind && f->items_kind != YAML_V3_KIND_SEQUENCE)
        return rl_errors_printf(err, errlen,
                                "failed when tried to get items: incorrect type, was %s",
                                variant_name(f->items_kind));
    if (f->bad_item_kind)
        return rl_errors_printf(err, errlen,
                                "failed to extract objects from items: unhandled node kind %d",
                                f->bad_item_kind);
    return check_results(f, terr, err, errlen);
}
