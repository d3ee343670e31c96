/* kptfile_fields: kpt's Kptfile v1 field names; see kptfile_fields.h. */
#include "pkg/kptfile_fields.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

/* A Go struct of kpt's Kptfile v1: its name as yaml.v3 prints it and its
 * fields, each with the struct its value decodes into (NULL: a scalar, a
 * string map or a list of strings, nothing named to check). */
typedef struct kpt_type kpt_type;
typedef struct kpt_field {
    const char *name;
    const kpt_type *type;
    int list;           /* the value is a list of `type` */
} kpt_field;
struct kpt_type {
    const char *go_name;
    const kpt_field *fields;
    unsigned bit;       /* its bit in walk.checked */
};

#define END { 0 }
static const kpt_type git = { "v1.Git", (const kpt_field[]){
    { "repo" }, { "directory" }, { "ref" }, END }, 1u << 0 };
static const kpt_type git_lock = { "v1.GitLock", (const kpt_field[]){
    { "repo" }, { "directory" }, { "ref" }, { "commit" }, END }, 1u << 1 };
static const kpt_type upstream = { "v1.Upstream", (const kpt_field[]){
    { "type" }, { "git", &git }, { "updateStrategy" }, END }, 1u << 2 };
static const kpt_type upstream_lock = { "v1.UpstreamLock", (const kpt_field[]){
    { "type" }, { "git", &git_lock }, END }, 1u << 3 };
static const kpt_type package_info = { "v1.PackageInfo", (const kpt_field[]){
    { "site" }, { "emails" }, { "license" }, { "licenseFile" }, { "description" },
    { "keywords" }, { "man" }, END }, 1u << 4 };
static const kpt_type selector = { "v1.Selector", (const kpt_field[]){
    { "apiVersion" }, { "kind" }, { "name" }, { "namespace" }, { "labels" },
    { "annotations" }, END }, 1u << 5 };
/* tag: the semver constraint Porch's engine sends with the call */
static const kpt_type function = { "v1.Function", (const kpt_field[]){
    { "image" }, { "tag" }, { "exec" }, { "configPath" }, { "configMap" }, { "name" },
    { "selectors", &selector, 1 }, { "exclude", &selector, 1 }, END }, 1u << 6 };
static const kpt_type pipeline = { "v1.Pipeline", (const kpt_field[]){
    { "mutators", &function, 1 }, { "validators", &function, 1 }, END }, 1u << 7 };
static const kpt_type inventory = { "v1.Inventory", (const kpt_field[]){
    { "namespace" }, { "name" }, { "inventoryID" }, { "labels" }, { "annotations" }, END },
    1u << 8 };
static const kpt_type object_meta = { "yaml.ObjectMeta", (const kpt_field[]){
    { "name" }, { "namespace" }, { "labels" }, { "annotations" }, END }, 1u << 9 };
static const kpt_type kptfile = { "v1.KptFile", (const kpt_field[]){
    { "apiVersion" }, { "kind" }, { "metadata", &object_meta }, { "upstream", &upstream },
    { "upstreamLock", &upstream_lock }, { "info", &package_info }, { "pipeline", &pipeline },
    { "inventory", &inventory }, { "status" }, END }, 1u << 10 };
#undef END

/* The walk over one document. An alias is the node it names, so a list of
 * N aliases of a step whose selectors are M aliases would be N x M visits;
 * each node is checked against each type once (`checked`, a bit per type),
 * so the walk costs at most the nodes times the types. */
typedef struct walk {
    const yaml_document_t *doc;
    uint16_t *checked;   /* per node id - 1 */
    buf *why;
} walk;

static const kpt_field *find_field(const kpt_type *t, const char *name, size_t len)
{
    for (const kpt_field *f = t->fields; f->name; f++)
        if (strlen(f->name) == len && !memcmp(f->name, name, len))
            return f;
    return NULL;
}

static int unknown_field(const kpt_type *t, const yaml_node_t *key, buf *why)
{
    buf known = { 0 };
    for (const kpt_field *f = t->fields; f->name; f++)
        buf_printf(&known, "%s%s", f == t->fields ? "" : ", ", f->name);
    /* %.*s: a key holding a NUL byte is shown up to it; it is unknown all the same */
    buf_printf(why, "line %zu: field %.*s not found in type %s (it has: %s)",
               key->start_mark.line + 1, (int)key->data.scalar.length,
               (const char *)key->data.scalar.value, t->go_name,
               known.data ? known.data : "out of memory");
    buf_free(&known);
    return -1;
}

/* The recursion follows the types above (four deep at most: a selector of
 * a step of the pipeline), not the input's nesting. */
static int check_node(walk *w, int id, const kpt_type *t);

static int check_value(walk *w, int id, const kpt_field *f)
{
    const yaml_node_t *n = yaml_document_get_node((yaml_document_t *)w->doc, id);
    if (!f->type || !n)
        return 0;
    if (!f->list)
        return check_node(w, id, f->type);
    if (n->type != YAML_SEQUENCE_NODE)
        return 0; /* the wrong shape is the reader's to report */
    for (const yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top; it++)
        if (check_node(w, *it, f->type) < 0)
            return -1;
    return 0;
}

static int check_node(walk *w, int id, const kpt_type *t)
{
    const yaml_node_t *n = yaml_document_get_node((yaml_document_t *)w->doc, id);
    if (!n || n->type != YAML_MAPPING_NODE || (w->checked[id - 1] & t->bit))
        return 0;
    w->checked[id - 1] |= (uint16_t)t->bit;
    for (const yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *key = yaml_document_get_node((yaml_document_t *)w->doc, p->key);
        if (!key || key->type != YAML_SCALAR_NODE)
            return buf_fail(w->why, "line %zu: a key of %s is not a string",
                            key ? key->start_mark.line + 1 : 0, t->go_name);
        const kpt_field *f =
            find_field(t, (const char *)key->data.scalar.value, key->data.scalar.length);
        if (!f)
            return unknown_field(t, key, w->why);
        if (check_value(w, p->value, f) < 0)
            return -1;
    }
    return 0;
}

int kptfile_fields_check(const yaml_document_t *doc, buf *why)
{
    size_t n = (size_t)(doc->nodes.top - doc->nodes.start);
    if (n == 0)
        return 0;
    walk w = { doc, calloc(n, sizeof *w.checked), why };
    if (!w.checked)
        return buf_fail(why, "out of memory");
    int rc = check_node(&w, 1, &kptfile); /* node 1 is the root */
    free(w.checked);
    return rc;
}
