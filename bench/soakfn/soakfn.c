/* soakfn: the KRM function behind `make soak` (scripts/soak.sh).
 *
 * Why a C program of its own: the soak makes 100,000 calls and every call
 * spawns the function, so the function must cost as little as a spawn can.
 * scripts/soak.sh compiles this file statically (musl-gcc when present)
 * into BUILD/soak/soakfn; a `sh -c 'case ...'` script would cost a shell
 * start and a `cat` per call. It lives in its own directory because every
 * bench/NAME.c is linked by the Makefile as a bench-NAME program.
 *
 * It reads the whole ResourceList from stdin and dispatches on a marker
 * comment at the very start of it (bench-soak puts it there):
 *   "#soak:fail"   writes "soak: asked to fail\n" to stderr, exits 1
 *   "#soak:sleep"  sleeps 600 s, past any deadline (the server kills it)
 *   anything else  writes the input back to stdout, exits 0 (like cat)
 * Exit status 2 when stdin or stdout fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* All of stdin in a malloc'd buffer (*len bytes), or NULL. */
static char *read_all(size_t *len)
{
    size_t cap = 65536, n = 0;
    char *data = malloc(cap);
    while (data) {
        if (n == cap) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger)
                break;
            data = bigger;
            cap *= 2;
        }
        ssize_t r = read(0, data + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (r == 0) {
            *len = n;
            return data;
        }
        n += (size_t)r;
    }
    free(data);
    return NULL;
}

static int starts_with(const char *data, size_t len, const char *marker)
{
    size_t m = strlen(marker);
    return len >= m && memcmp(data, marker, m) == 0;
}

int main(void)
{
    size_t len = 0;
    char *in = read_all(&len);
    if (!in) {
        perror("soakfn: reading stdin");
        return 2;
    }
    if (starts_with(in, len, "#soak:fail")) {
        static const char msg[] = "soak: asked to fail\n";
        return write_all(2, msg, sizeof msg - 1) < 0 ? 2 : 1;
    }
    if (starts_with(in, len, "#soak:sleep")) {
        struct timespec t = {.tv_sec = 600};
        while (nanosleep(&t, &t) < 0 && errno == EINTR)
            ;
        return 0;
    }
    if (write_all(1, in, len) < 0) {
        perror("soakfn: writing stdout");
        return 2;
    }
    free(in);
    return 0;
}
