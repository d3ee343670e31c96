/* proto_index: lookups in the embedded FileDescriptorSet; see proto_index.h.
 *
 * The set is read as protobuf wire data each time (a few KiB; reflection
 * is rare), with no table built and nothing allocated. Only the
 * length-delimited fields of descriptor.proto that carry names are used:
 *
 *   FileDescriptorSet    file 1
 *   FileDescriptorProto  name 1, package 2, message_type 4, enum_type 5,
 *                        service 6, extension 7
 *   DescriptorProto      name 1, field 2, nested_type 3, enum_type 4,
 *                        extension 6, oneof_decl 8
 *   EnumDescriptorProto  name 1, value 2        (values named beside the enum)
 *   ServiceDescriptorProto name 1, method 2
 *   Field/Oneof/EnumValue/MethodDescriptorProto  name 1
 *
 * A symbol is matched component by component: `off` is where, in the
 * symbol, the name at the current scope starts, so no full name is ever
 * built. */
#include "runtime/proto_index.h"

#include <string.h>

extern const unsigned char krm_descriptor_set[];   /* build/gen/descriptor_set.c */
extern const size_t krm_descriptor_set_len;

typedef struct pb_span {
    const uint8_t *p, *end;
} pb_span;

static int read_varint(pb_span *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && s->p < s->end; shift += 7) {
        uint8_t b = *s->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* The next field: 1 with a length-delimited one's number and bytes in
 * *field and *val, 0 after skipping any other kind, -1 at the end (or on
 * malformed data, which ends the walk the same way). */
static int next_field(pb_span *s, uint32_t *field, pb_span *val)
{
    uint64_t key, n;
    if (s->p >= s->end || read_varint(s, &key) < 0)
        return -1;
    switch (key & 7) {
    case 0:
        return read_varint(s, &n) < 0 ? -1 : 0;
    case 1:
    case 5: {
        size_t w = (key & 7) == 1 ? 8 : 4;
        if ((size_t)(s->end - s->p) < w)
            return -1;
        s->p += w;
        return 0;
    }
    case 2:
        if (read_varint(s, &n) < 0 || n > (uint64_t)(s->end - s->p))
            return -1;
        *field = (uint32_t)(key >> 3);
        val->p = s->p;
        val->end = s->p + n;
        s->p += n;
        return 1;
    default:
        return -1;   /* groups: descriptor.proto has none */
    }
}

/* The name (field 1) of a descriptor message. */
static pb_span name_of(pb_span msg)
{
    pb_span val = {0};
    uint32_t f;
    int rc;
    while ((rc = next_field(&msg, &f, &val)) >= 0)
        if (rc == 1 && f == 1)
            return val;
    return (pb_span){0};
}

typedef struct want {
    const char *sym;
    size_t len;
} want;

/* symbol[off..] is exactly name. */
static int is_name(const want *w, size_t off, pb_span name)
{
    size_t n = (size_t)(name.end - name.p);
    return name.p && w->len - off == n && !memcmp(w->sym + off, name.p, n);
}

/* symbol[off..] is name, then a dot and more: where the more starts, or 0. */
static size_t under_name(const want *w, size_t off, pb_span name)
{
    size_t n = (size_t)(name.end - name.p);
    if (!name.p || w->len - off <= n + 1 || memcmp(w->sym + off, name.p, n) ||
        w->sym[off + n] != '.')
        return 0;
    return off + n + 1;
}

/* An enum at this scope: the enum itself, or one of its values (which
 * protobuf names beside the enum, not inside it). */
static int enum_declares(const want *w, size_t off, pb_span e)
{
    if (is_name(w, off, name_of(e)))
        return 1;
    pb_span val;
    uint32_t f;
    int rc;
    while ((rc = next_field(&e, &f, &val)) >= 0)
        if (rc == 1 && f == 2 && is_name(w, off, name_of(val)))
            return 1;
    return 0;
}

/* A service, or one of its methods. */
static int service_declares(const want *w, size_t off, pb_span svc)
{
    pb_span name = name_of(svc);
    if (is_name(w, off, name))
        return 1;
    size_t inner = under_name(w, off, name);
    if (!inner)
        return 0;
    pb_span val;
    uint32_t f;
    int rc;
    while ((rc = next_field(&svc, &f, &val)) >= 0)
        if (rc == 1 && f == 2 && is_name(w, inner, name_of(val)))
            return 1;
    return 0;
}

/* A message, or anything declared inside it. */
static int message_declares(const want *w, size_t off, pb_span msg, int depth)
{
    pb_span name = name_of(msg);
    if (is_name(w, off, name))
        return 1;
    size_t inner = under_name(w, off, name);
    if (!inner || depth > 32)
        return 0;
    pb_span val;
    uint32_t f;
    int rc;
    while ((rc = next_field(&msg, &f, &val)) >= 0) {
        if (rc != 1)
            continue;
        if ((f == 2 || f == 6 || f == 8) && is_name(w, inner, name_of(val)))
            return 1;   /* field, extension, oneof */
        if (f == 3 && message_declares(w, inner, val, depth + 1))
            return 1;
        if (f == 4 && enum_declares(w, inner, val))
            return 1;
    }
    return 0;
}

static int file_declares(const want *w, pb_span file)
{
    pb_span val, pkg = {0};
    uint32_t f;
    int rc;
    for (pb_span s = file; (rc = next_field(&s, &f, &val)) >= 0;)
        if (rc == 1 && f == 2)
            pkg = val;
    size_t off = 0;
    if (pkg.p && pkg.end > pkg.p && !(off = under_name(w, 0, pkg)))
        return 0;
    while ((rc = next_field(&file, &f, &val)) >= 0) {
        if (rc != 1)
            continue;
        if ((f == 4 && message_declares(w, off, val, 0)) || (f == 5 && enum_declares(w, off, val)) ||
            (f == 6 && service_declares(w, off, val)) || (f == 7 && is_name(w, off, name_of(val))))
            return 1;
    }
    return 0;
}

/* Walks the set's files; the first for which match says yes goes to out. */
static int find_file(int (*match)(const want *, pb_span), const want *w, proto_file *out)
{
    pb_span set = {krm_descriptor_set, krm_descriptor_set + krm_descriptor_set_len}, file;
    uint32_t f;
    int rc;
    while ((rc = next_field(&set, &f, &file)) >= 0)
        if (rc == 1 && f == 1 && match(w, file)) {
            *out = (proto_file){file.p, (size_t)(file.end - file.p)};
            return 0;
        }
    return -1;
}

static int file_named(const want *w, pb_span file)
{
    return is_name(w, 0, name_of(file));
}

int proto_file_by_name(const char *name, size_t name_len, proto_file *out)
{
    want w = {name, name_len};
    return find_file(file_named, &w, out);
}

int proto_file_by_symbol(const char *symbol, size_t symbol_len, proto_file *out)
{
    want w = {symbol, symbol_len};
    return find_file(file_declares, &w, out);
}
