/* buf: a growable byte buffer.
 *
 * Every module that accumulates bytes of unknown size (request bodies,
 * function stdout and stderr, header values being encoded) uses this one
 * type, so ownership and growth rules live in one place. The data is always
 * followed by a NUL byte that is not counted in len, so text can be passed to
 * C string functions without another copy. */
#ifndef KRM_BUF_H
#define KRM_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
    char *data;   /* NULL until the first append */
    size_t len;   /* bytes in use */
    size_t cap;   /* bytes allocated, excluding the trailing NUL */
} buf;

/* Ensure room for `extra` more bytes. Returns 0, or -1 on overflow or ENOMEM. */
int buf_reserve(buf *b, size_t extra);
/* Ensure the buffer can hold `total` bytes in all, allocating exactly that
 * (no rounding up): for sizes known in advance, such as a declared message. */
int buf_reserve_exact(buf *b, size_t total);
int buf_append(buf *b, const void *data, size_t len);
int buf_append_str(buf *b, const char *s);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* A function that fails with a message in `buf *err`: appends it, as
 * buf_printf, and returns -1, so the failure is one statement:
 * `return buf_fail(err, "cannot read %s", path);` */
int buf_fail(buf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a message shown as one line whose parts (a file name, a
 * YAML problem) may hold line breaks: each '\n' or '\r' it appends becomes
 * a space. */
int buf_fail_line(buf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vfail_line(buf *err, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Drop the first n bytes (n <= len), keeping the rest. */
void buf_consume(buf *b, size_t n);
void buf_reset(buf *b);           /* len = 0, keeps the allocation */
void buf_free(buf *b);            /* releases memory, back to the zero state */
/* Hand the allocation to the caller (NUL-terminated, never NULL on success). */
char *buf_steal(buf *b, size_t *len);

/* Spare big buffers, for the servers (single-threaded). A server call of
 * megabytes allocates two big buffers (the request, the function's output)
 * and frees them at its end; fresh memory costs a page fault per page, and
 * musl's allocator maps and unmaps every such block. With spares enabled,
 * buf_free keeps up to `count` buffers of at least 1 MiB, and the next big
 * reservation of an empty buf reuses the smallest that fits.
 * buf_spares_release frees them (servers call it once idle). */
void buf_spares_enable(int count);
void buf_spares_release(void);
/* Room for `total` bytes in the empty buf b only if it already has it or a
 * spare holds it: no new memory, so a size a peer merely declared risks
 * nothing. Returns 1 when b can now hold total bytes, else 0. */
int buf_reserve_spare(buf *b, size_t total);
/* Bytes held in spares (for tests and metrics). */
size_t buf_spares_bytes(void);

#endif
