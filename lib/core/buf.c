/* buf: a growable byte buffer; see buf.h. */
#include "core/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_SPARE_MIN (1u << 20)
#define BUF_SPARES_MAX 4

static struct spare {
    char *data;
    size_t cap;
} spares[BUF_SPARES_MAX];
static int spares_enabled;   /* how many may be kept */

/* The smallest spare holding `need` bytes, taken out of the list; NULL if
 * none does. */
static struct spare spare_take(size_t need)
{
    int best = -1;
    for (int i = 0; i < spares_enabled; i++)
        if (spares[i].data && spares[i].cap >= need &&
            (best < 0 || spares[i].cap < spares[best].cap))
            best = i;
    struct spare s = {0};
    if (best >= 0) {
        s = spares[best];
        spares[best] = (struct spare){0};
    }
    return s;
}

/* Keeps data as a spare when it is big and there is room (replacing a
 * smaller spare if needed). Returns 1 when kept. */
static int spare_keep(char *data, size_t cap)
{
    if (cap < BUF_SPARE_MIN || !spares_enabled)
        return 0;
    int slot = -1;
    for (int i = 0; i < spares_enabled; i++) {
        if (!spares[i].data) {
            slot = i;
            break;
        }
        if (spares[i].cap < cap && (slot < 0 || spares[i].cap < spares[slot].cap))
            slot = i;
    }
    if (slot < 0)
        return 0;
    free(spares[slot].data);
    spares[slot] = (struct spare){data, cap};
    return 1;
}

void buf_spares_enable(int count)
{
    spares_enabled = count < 0 ? 0 : count > BUF_SPARES_MAX ? BUF_SPARES_MAX : count;
}

void buf_spares_release(void)
{
    for (int i = 0; i < BUF_SPARES_MAX; i++) {
        free(spares[i].data);
        spares[i] = (struct spare){0};
    }
}

size_t buf_spares_bytes(void)
{
    size_t n = 0;
    for (int i = 0; i < BUF_SPARES_MAX; i++)
        n += spares[i].data ? spares[i].cap : 0;
    return n;
}

/* b about to hold `need` (>= 1 MiB) bytes: move its contents (small, or
 * none) into a spare that fits, if there is one. */
static int buf_adopt_spare(buf *b, size_t need)
{
    if (need < BUF_SPARE_MIN)
        return 0;
    struct spare s = spare_take(need);
    if (!s.data)
        return 0;
    if (b->len)
        memcpy(s.data, b->data, b->len);
    s.data[b->len] = '\0';
    free(b->data);
    b->data = s.data;
    b->cap = s.cap;
    return 1;
}

int buf_reserve_spare(buf *b, size_t total)
{
    if (b->data && b->cap >= total)
        return 1;
    return b->len == 0 && total < SIZE_MAX && buf_adopt_spare(b, total);
}

int buf_reserve_exact(buf *b, size_t total)
{
    if (b->data && b->cap >= total)
        return 0;
    if (total == SIZE_MAX) {
        errno = EOVERFLOW;
        return -1;
    }
    if (buf_adopt_spare(b, total))
        return 0;
    char *grown = realloc(b->data, total + 1);
    if (!grown)
        return -1;
    grown[b->len] = '\0';
    b->data = grown;
    b->cap = total;
    return 0;
}

int buf_reserve(buf *b, size_t extra)
{
    if (extra > SIZE_MAX - 1 - b->len) {
        errno = EOVERFLOW;
        return -1;
    }
    size_t need = b->len + extra;
    if (b->data && need <= b->cap)
        return 0;
    if (buf_adopt_spare(b, need))
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap + 1);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append(buf *b, const void *data, size_t len)
{
    if (buf_reserve(b, len) < 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n >= 0 && buf_reserve(b, (size_t)n) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    } else {
        n = -1;
    }
    va_end(again);
    return n < 0 ? -1 : 0;
}

int buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int buf_fail(buf *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)buf_vprintf(err, fmt, ap);   /* out of memory: the -1 still tells */
    va_end(ap);
    return -1;
}

int buf_vfail_line(buf *err, const char *fmt, va_list ap)
{
    size_t start = err->len;
    (void)buf_vprintf(err, fmt, ap);
    for (size_t i = start; i < err->len; i++)
        if (err->data[i] == '\n' || err->data[i] == '\r')
            err->data[i] = ' ';
    return -1;
}

int buf_fail_line(buf *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vfail_line(err, fmt, ap);
    va_end(ap);
    return -1;
}

void buf_consume(buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_reset(buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(buf *b)
{
    if (!b->data || !spare_keep(b->data, b->cap))
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *buf_steal(buf *b, size_t *len)
{
    if (!b->data && buf_reserve(b, 0) < 0)
        return NULL;
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
