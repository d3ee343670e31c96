/* semver: Masterminds/semver v3's versions and constraints; see semver.h.
 *
 * Masterminds reads constraints with regular expressions; the scanners here
 * accept the same strings: a version part is `v?` then [0-9|xX*]+ and up to
 * two more ".[0-9|xX*]+", then "-prerelease" and "+metadata" of
 * [0-9A-Za-z-] identifiers separated by dots, each part taken when it is
 * whole (Go's leftmost-first, greedy matching). */
#include "core/semver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_EQ, OP_NE, OP_GT, OP_LT, OP_GE, OP_LE, OP_TILDE, OP_CARET };

typedef struct atom {
    enum op op;
    int first_of_or;   /* starts a new "||" alternative */
    int dirty, minor_dirty, patch_dirty;
    semver con;
} atom;

struct semver_constraint {
    atom *atoms;
    size_t n;
};

/* Go's \s */
static int is_ws(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* [0-9|x|X|\*] as Masterminds writes the class ('|' included) */
static int is_xnum(int c)
{
    return is_digit(c) || c == '|' || c == 'x' || c == 'X' || c == '*';
}

static int is_ident(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

static size_t run(const char *s, int (*cls)(int))
{
    size_t n = 0;
    while (s[n] && cls((unsigned char)s[n]))
        n++;
    return n;
}

/* [0-9A-Za-z-]+(\.[0-9A-Za-z-]+)* */
static size_t ident_list(const char *s)
{
    size_t n = run(s, is_ident);
    while (n && s[n] == '.') {
        size_t k = run(s + n + 1, is_ident);
        if (!k)
            break;
        n += 1 + k;
    }
    return n;
}

/* A version's parts as matched; the lengths of minor, patch, pre and meta
 * include their leading '.', '-' or '+', and are 0 when absent. */
typedef struct parts {
    size_t len, v, major, minor, patch, pre, meta;
} parts;

/* Matches a version at s with the number class cls; 0 when none. */
static size_t match_version(const char *s, int (*cls)(int), parts *m)
{
    *m = (parts){0};
    m->v = s[0] == 'v';
    size_t i = m->v;
    if (!(m->major = run(s + i, cls)))
        return 0;
    i += m->major;
    size_t k;
    if (s[i] == '.' && (k = run(s + i + 1, cls))) {
        m->minor = k + 1;
        i += m->minor;
        if (s[i] == '.' && (k = run(s + i + 1, cls))) {
            m->patch = k + 1;
            i += m->patch;
        }
    }
    if (s[i] == '-' && (k = ident_list(s + i + 1))) {
        m->pre = k + 1;
        i += m->pre;
    }
    if (s[i] == '+' && (k = ident_list(s + i + 1))) {
        m->meta = k + 1;
        i += m->meta;
    }
    return m->len = i;
}

/* strconv.ParseUint(s[0..n), 10, 64); 0 or -1 (empty, not digits, too big). */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (!n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)s[i]))
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int version_error(buf *err, const char *s, const char *why)
{
    if (err)
        buf_printf(err, "version \"%s\": %s", s, why);
    return -1;
}

int semver_parse(const char *s, semver *out, buf *err)
{
    parts m;
    *out = (semver){0};
    if (!match_version(s, is_digit, &m) || s[m.len])
        return version_error(err, s, "Invalid Semantic Version");
    const char *p = s + m.v;
    if (parse_u64(p, m.major, &out->major) < 0 ||
        (m.minor && parse_u64(p + m.major + 1, m.minor - 1, &out->minor) < 0) ||
        (m.patch && parse_u64(p + m.major + m.minor + 1, m.patch - 1, &out->patch) < 0))
        return version_error(err, s, "Error parsing version segment: value out of range");
    if (m.pre) {
        const char *pre = p + m.major + m.minor + m.patch + 1;
        size_t pre_len = m.pre - 1;
        if (pre_len > SEMVER_PRE_MAX)
            return version_error(err, s, "prerelease longer than 128 bytes");
        /* a numeric identifier has no leading zero */
        for (size_t i = 0; i < pre_len;) {
            size_t seg = strcspn(pre + i, ".");
            if (seg > pre_len - i)
                seg = pre_len - i;
            if (seg > 1 && pre[i] == '0' && run(pre + i, is_digit) >= seg)
                return version_error(err, s, "Version segment starts with 0");
            i += seg + 1;
        }
        memcpy(out->pre, pre, pre_len);
        out->pre[pre_len] = '\0';
    }
    return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* One dot-separated prerelease identifier against another, as Masterminds'
 * comparePrePart: numbers by value and before words; an absent part orders
 * before a present one. */
static int compare_pre_part(const char *a, size_t an, const char *b, size_t bn)
{
    if (an == bn && !memcmp(a, b, an))
        return 0;
    if (!an)
        return -1;
    if (!bn)
        return 1;
    uint64_t ai = 0, bi = 0;
    int a_num = parse_u64(a, an, &ai) == 0, b_num = parse_u64(b, bn, &bi) == 0;
    if (!a_num && !b_num) {
        int c = memcmp(a, b, an < bn ? an : bn);
        return c ? (c > 0 ? 1 : -1) : (an > bn ? 1 : -1);
    }
    if (!a_num)
        return 1;
    if (!b_num)
        return -1;
    return ai > bi ? 1 : -1;
}

static int compare_pre(const char *a, const char *b)
{
    while (*a || *b) {
        size_t an = strcspn(a, "."), bn = strcspn(b, ".");
        int c = compare_pre_part(a, an, b, bn);
        if (c)
            return c;
        a += an + (a[an] == '.');
        b += bn + (b[bn] == '.');
    }
    return 0;
}

int semver_compare(const semver *a, const semver *b)
{
    int c = cmp_u64(a->major, b->major);
    if (!c)
        c = cmp_u64(a->minor, b->minor);
    if (!c)
        c = cmp_u64(a->patch, b->patch);
    if (c)
        return c;
    if (!*a->pre || !*b->pre)
        return !*a->pre - !*b->pre;   /* a release orders after its prereleases */
    return compare_pre(a->pre, b->pre);
}

/* ---- constraints ----------------------------------------------------------- */

/* The operator at s (a run of its characters, possibly empty); its length
 * in *len, or -1 when the run is no operator. */
static int read_op(const char *s, size_t *len)
{
    static const struct { const char *text; enum op op; } ops[] = {
        {"", OP_EQ}, {"=", OP_EQ}, {"!=", OP_NE}, {">", OP_GT}, {"<", OP_LT},
        {">=", OP_GE}, {"=>", OP_GE}, {"<=", OP_LE}, {"=<", OP_LE}, {"~", OP_TILDE},
        {"~>", OP_TILDE}, {"^", OP_CARET},
    };
    size_t n = strspn(s, "=!<>~^");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strlen(ops[i].text) == n && !memcmp(ops[i].text, s, n)) {
            *len = n;
            return (int)ops[i].op;
        }
    return -1;
}

static int is_x(const char *s, size_t n)
{
    return n == 1 && (*s == 'x' || *s == 'X' || *s == '*');
}

/* Masterminds' parseConstraint for a version part matched at s: a part
 * with x (or missing) is "dirty", a range over what it leaves open. */
static int parse_atom(enum op op, const char *s, const parts *m, atom *a)
{
    char ver[64 + SEMVER_PRE_MAX + 2];
    const char *major = s + m->v, *minor = major + m->major, *patch = minor + m->minor;
    const char *pre = patch + m->patch;
    int pre_len = (int)m->pre;
    *a = (atom){.op = op};
    if (m->major + m->minor + m->patch > 64 || m->pre > SEMVER_PRE_MAX + 1)
        return -1;   /* no such number or prerelease: NewVersion refuses it too */
    if (is_x(major, m->major)) {
        snprintf(ver, sizeof ver, "0.0.0%.*s", pre_len, pre);
        a->dirty = 1;
    } else if (!m->minor || is_x(minor + 1, m->minor - 1)) {
        snprintf(ver, sizeof ver, "%.*s.0.0%.*s", (int)m->major, major, pre_len, pre);
        a->dirty = a->minor_dirty = 1;
    } else if (!m->patch || is_x(patch + 1, m->patch - 1)) {
        snprintf(ver, sizeof ver, "%.*s%.*s.0%.*s", (int)m->major, major, (int)m->minor, minor,
                 pre_len, pre);
        a->dirty = a->patch_dirty = 1;
    } else {
        if (m->len >= sizeof ver)
            return -1;
        memcpy(ver, s, m->len);
        ver[m->len] = '\0';
    }
    return semver_parse(ver, &a->con, NULL);
}

/* Masterminds' rewriteRange: every "A - B" becomes ">= A, <= B". */
static int rewrite_ranges(const char *s, buf *out)
{
    for (size_t i = 0; s[i];) {
        size_t j = i + run(s + i, is_ws), ws;
        parts a, b;
        if (match_version(s + j, is_xnum, &a) && (ws = run(s + j + a.len, is_ws)) &&
            s[j + a.len + ws] == '-' && run(s + j + a.len + ws + 1, is_ws)) {
            size_t k = j + a.len + ws + 1;
            k += run(s + k, is_ws);
            if (match_version(s + k, is_xnum, &b)) {
                if (buf_printf(out, ">= %.*s, <= %.*s", (int)a.len, s + j, (int)b.len, s + k) < 0)
                    return -1;
                i = k + b.len;
                i += run(s + i, is_ws);
                continue;
            }
        }
        if (buf_append(out, s + i, 1) < 0)
            return -1;
        i++;
    }
    return buf_append(out, "", 0);   /* a string, also when empty */
}

static int add_atom(semver_constraint *c, const atom *a)
{
    atom *grown = realloc(c->atoms, (c->n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    c->atoms = grown;
    c->atoms[c->n++] = *a;
    return 0;
}

/* One "||" alternative, s[0..n): ops and versions separated by spaces or a
 * comma. 0, -1 improper, -2 out of memory, -3 a version NewVersion refuses. */
static int parse_alternative(semver_constraint *c, const char *s, size_t n)
{
    char *seg = strndup(s, n);
    if (!seg)
        return -2;
    size_t i = run(seg, is_ws);
    int first = 1, rc = 0;
    for (;;) {
        size_t op_len;
        int op = read_op(seg + i, &op_len);
        if (op < 0) {
            rc = -1;
            break;
        }
        i += op_len;
        i += run(seg + i, is_ws);
        parts m;
        atom a;
        if (!match_version(seg + i, is_xnum, &m)) {
            rc = -1;
            break;
        }
        if (parse_atom((enum op)op, seg + i, &m, &a) < 0) {
            rc = -3;
            break;
        }
        a.first_of_or = first;
        first = 0;
        if (add_atom(c, &a) < 0) {
            rc = -2;
            break;
        }
        i += m.len;
        /* the next one after (?:\s+|,\s*), past this one's trailing \s* */
        size_t ws = run(seg + i, is_ws);
        i += ws;
        if (!seg[i])
            break;
        if (seg[i] == ',')
            i += 1 + run(seg + i + 1, is_ws);
        else if (!ws) {
            rc = -1;
            break;
        }
    }
    free(seg);
    return rc;
}

semver_constraint *semver_constraint_parse(const char *s, buf *err)
{
    size_t len = strlen(s);
    if (len > SEMVER_CONSTRAINT_MAX) {
        buf_printf(err, "constraint of %zu bytes is longer than %d (the limit)", len,
                   SEMVER_CONSTRAINT_MAX);
        return NULL;
    }
    buf text = {0};
    semver_constraint *c = calloc(1, sizeof *c);
    if (!c || rewrite_ranges(s, &text) < 0)
        goto oom;
    for (const char *alt = text.data;;) {
        const char *bar = strstr(alt, "||");
        size_t n = bar ? (size_t)(bar - alt) : strlen(alt);
        int rc = parse_alternative(c, alt, n);
        if (rc == -2)
            goto oom;
        if (rc == -3) {
            buf_append_str(err, "constraint Parser Error");
            goto fail;
        }
        if (rc < 0) {
            buf_printf(err, "improper constraint: %.*s", (int)n, alt);
            goto fail;
        }
        if (!bar)
            break;
        alt = bar + 2;
    }
    buf_free(&text);
    return c;
oom:
    buf_append_str(err, "out of memory");
fail:
    buf_free(&text);
    semver_constraint_free(c);
    return NULL;
}

/* ---- checks: Masterminds' constraint functions ------------------------------ */

static int check_tilde(const atom *a, const semver *v)
{
    if (semver_compare(v, &a->con) < 0)
        return 0;
    if (!a->con.major && !a->con.minor && !a->con.patch && !a->minor_dirty && !a->patch_dirty)
        return 1;   /* ~0.0.0 (also ~* and "*"): anything */
    if (v->major != a->con.major)
        return 0;
    return v->minor == a->con.minor || a->minor_dirty;
}

static int check_caret(const atom *a, const semver *v)
{
    if (semver_compare(v, &a->con) < 0)
        return 0;
    if (a->con.major > 0 || a->minor_dirty)
        return v->major == a->con.major;
    if (v->major > 0)
        return 0;
    if (a->con.minor > 0 || a->patch_dirty)
        return v->minor == a->con.minor;
    if (v->minor > 0)
        return 0;
    return v->patch == a->con.patch;
}

static int check_ne(const atom *a, const semver *v)
{
    if (a->dirty) {
        if (a->con.major != v->major)
            return 1;
        if (a->con.minor != v->minor && !a->minor_dirty)
            return 1;
        if (a->minor_dirty)
            return 0;
        if (a->con.patch != v->patch && !a->patch_dirty)
            return 1;
        if (a->patch_dirty)
            return (*v->pre || *a->con.pre) && compare_pre(v->pre, a->con.pre) != 0;
    }
    return semver_compare(v, &a->con) != 0;
}

static int check_gt(const atom *a, const semver *v)
{
    if (!a->dirty || v->major != a->con.major)
        return a->dirty ? v->major > a->con.major : semver_compare(v, &a->con) > 0;
    if (a->minor_dirty)
        return 0;   /* >11 wants 12 or more */
    if (a->patch_dirty)
        return v->minor > a->con.minor;
    return semver_compare(v, &a->con) > 0;
}

static int check_le(const atom *a, const semver *v)
{
    if (!a->dirty)
        return semver_compare(v, &a->con) <= 0;
    if (v->major > a->con.major)
        return 0;
    return !(v->major == a->con.major && v->minor > a->con.minor && !a->minor_dirty);
}

static int check_atom(const atom *a, const semver *v)
{
    /* a prerelease only for a constraint that names one (Masterminds issue 21);
     * != checks it only when dirty */
    if (*v->pre && !*a->con.pre && (a->op != OP_NE || a->dirty))
        return 0;
    switch (a->op) {
    case OP_EQ:
        return a->dirty ? check_tilde(a, v) : semver_compare(v, &a->con) == 0;
    case OP_NE:
        return check_ne(a, v);
    case OP_GT:
        return check_gt(a, v);
    case OP_LT:
        return semver_compare(v, &a->con) < 0;
    case OP_GE:
        return semver_compare(v, &a->con) >= 0;
    case OP_LE:
        return check_le(a, v);
    case OP_TILDE:
        return check_tilde(a, v);
    case OP_CARET:
        return check_caret(a, v);
    }
    return 0;
}

int semver_constraint_check(const semver_constraint *c, const semver *v)
{
    for (size_t i = 0; i < c->n;) {
        int all = 1;
        size_t j = i;
        do {
            all = all && check_atom(&c->atoms[j], v);
            j++;
        } while (j < c->n && !c->atoms[j].first_of_or);
        if (all)
            return 1;
        i = j;
    }
    return 0;
}

const char *semver_highest(const semver_constraint *c, char *const *tags, size_t n,
                           int (*skip)(const char *tag))
{
    const char *best = NULL;
    semver best_v, v;
    for (size_t i = 0; i < n; i++) {
        if ((skip && skip(tags[i])) || semver_parse(tags[i], &v, NULL) < 0 ||
            !semver_constraint_check(c, &v))
            continue;
        if (!best || semver_compare(&v, &best_v) > 0) {
            best = tags[i];
            best_v = v;
        }
    }
    return best;
}

void semver_constraint_free(semver_constraint *c)
{
    if (c) {
        free(c->atoms);
        free(c);
    }
}
