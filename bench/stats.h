/* stats: the one result line every benchmark program prints.
 *
 * bench/run.sh parses the same key=value line from bench-loadgen,
 * bench-pipefloor and bench-startup, so the statistics are computed in one
 * place. Header-only on purpose: the Makefile turns every bench/NAME.c into
 * its own program, so shared code cannot live in a .c file there. */
#ifndef KRM_BENCH_STATS_H
#define KRM_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static inline int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* CPU time (user + system) this process has used so far, in ns; children
 * are not included. -1 if getrusage fails. */
static inline int64_t bench_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0) {
        perror("bench: getrusage");
        return -1;
    }
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* Sorts lat_ns[0..n) and prints
 *   count=N errors=N elapsed_s=X median_us=X p99_us=X mean_us=X min_us=X
 *   calls_per_s=X cpu_us=X max_us=X
 * on stdout, one line; cpu_us is cpu_ns (this process's CPU time over the
 * measured calls) per call. n must be at least 1. */
static inline void bench_print_stats(int64_t *lat_ns, size_t n, unsigned long long errors,
                                     int64_t elapsed_ns, int64_t cpu_ns)
{
    qsort(lat_ns, n, sizeof *lat_ns, bench_cmp_i64);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)lat_ns[i];
    double median = n % 2 ? (double)lat_ns[n / 2]
                          : ((double)lat_ns[n / 2 - 1] + (double)lat_ns[n / 2]) / 2;
    size_t p99 = (n * 99 + 99) / 100;   /* ceil(0.99 n), 1-based rank */
    double secs = (double)elapsed_ns / 1e9;
    printf("count=%zu errors=%llu elapsed_s=%.4f median_us=%.1f p99_us=%.1f mean_us=%.1f "
           "min_us=%.1f calls_per_s=%.1f cpu_us=%.1f max_us=%.1f\n",
           n, errors, secs, median / 1e3, (double)lat_ns[p99 - 1] / 1e3, sum / (double)n / 1e3,
           (double)lat_ns[0] / 1e3, secs > 0 ? (double)n / secs : 0.0,
           (double)cpu_ns / (double)n / 1e3, (double)lat_ns[n - 1] / 1e3);
}

#endif
