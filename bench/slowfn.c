/* bench-slowfn: a function with a fixed start-up cost, for the benchmarks.
 *
 *   bench-slowfn [MS]     sleep MS milliseconds (default 20), then copy
 *                         stdin to stdout
 *
 * Why: what pre-started functions (--prespawn) take off a call's path is
 * whatever a function does before it reads stdin (a real one: exec, page
 * faults, runtime and package init, reading its config). A sleep stands
 * for that cost without using the CPU the measured calls need on a small
 * machine, so the rows show what prespawning hides, not the machine's
 * contention. Exit status 0, 1 on an I/O error, 2 on bad usage. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/numparse.h"

int main(int argc, char **argv)
{
    unsigned long long ms = 20;
    if (argc > 2 || (argc == 2 && parse_uint(argv[1], 60000, &ms) < 0)) {
        fprintf(stderr, "usage: bench-slowfn [MS (0-60000, default 20)]\n");
        return 2;
    }
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        continue;
    char chunk[65536];
    for (;;) {
        ssize_t n = read(0, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "bench-slowfn: read: %s\n", strerror(errno));
            return 1;
        }
        if (n == 0)
            return 0;
        for (ssize_t off = 0; off < n; ) {
            ssize_t w = write(1, chunk + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                fprintf(stderr, "bench-slowfn: write: %s\n", strerror(errno));
                return 1;
            }
            off += w;
        }
    }
}
