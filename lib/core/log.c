/* log: klog-like lines on stderr; see log.h.
 * Each line is formatted into one buffer and written with a single write(2)
 * so lines from the server and its children never interleave mid-line.
 *
 * Escaping happens here, in the sink, and not at the call sites: a log call
 * added later cannot forget it. A raw CR lets a request's image name
 * overwrite the start of its own line on a terminal, a raw LF starts a
 * forged klog record, ESC and C1 bytes drive terminals (`kubectl logs` in
 * one). */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/utf8.h"

int log_verbosity = 2;

/* A message longer than this is cut with "..." (a whole stderr can be
 * logged; the line stays bounded, and so does the escaping work). */
#define LOG_MESSAGE_MAX 4096
/* A line: header (under 100 bytes), the escaped message, "...\n". Plain
 * text fits whole; escaping can make a message up to 4 times longer (\xNN
 * for one byte), and what does not fit is cut like a long message. */
#define LOG_LINE_MAX 8192

static const char hex[] = "0123456789abcdef";

size_t log_escape(char *out, size_t cap, const char *in, size_t len, size_t *used)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0, i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f) {   /* the common case: one byte, as it is */
            if (o == cap)
                break;
            out[o++] = (char)c;
            i++;
            continue;
        }
        char esc[8];
        size_t esc_len = 4, in_len = 1;
        uint32_t cp = 0;
        size_t seq = c >= 0x80 ? utf8_decode(s + i, len - i, &cp) : 0;
        if (c == '\n' || c == '\r' || c == '\t') {
            esc[0] = '\\';
            esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            esc_len = 2;
        } else if (seq && cp > 0x9f) {   /* printable UTF-8: as it is */
            memcpy(esc, s + i, seq);
            esc_len = in_len = seq;
        } else if (seq) {                /* a C1 control */
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[cp >> 4];
            esc[5] = hex[cp & 15];
            esc_len = 6;
            in_len = seq;
        } else {                         /* C0, DEL, or not UTF-8 */
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[c >> 4];
            esc[3] = hex[c & 15];
        }
        if (cap - o < esc_len)
            break;
        memcpy(out + o, esc, esc_len);
        o += esc_len;
        i += in_len;
    }
    *used = i;
    return o;
}

/* Thread-local rather than on the stack: log calls run deep inside
 * nghttp2's callbacks, where 12 KiB more stack would touch pages that stay
 * in RSS; a thread that never logs never touches these. */
static _Thread_local char log_message[LOG_MESSAGE_MAX];
static _Thread_local char log_out[LOG_LINE_MAX];

/* The process id on every line, asked of the kernel once rather than once
 * a line (a system call on each call's path; glibc and musl no longer cache
 * it). A fork()ed child asks again; children made with a bare clone() exec
 * without logging (lib/core/spawn.c). */
static atomic_int log_pid;
static pthread_once_t log_pid_once = PTHREAD_ONCE_INIT;

static void log_pid_forget(void) { atomic_store_explicit(&log_pid, 0, memory_order_relaxed); }
static void log_pid_watch_forks(void) { pthread_atfork(NULL, NULL, log_pid_forget); }

static int log_pid_now(void)
{
    pthread_once(&log_pid_once, log_pid_watch_forks);
    int pid = atomic_load_explicit(&log_pid, memory_order_relaxed);
    if (!pid) {
        pid = (int)getpid();
        atomic_store_explicit(&log_pid, pid, memory_order_relaxed);
    }
    return pid;
}

void log_line(char severity, const char *file, int line, const char *fmt, ...)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;

    int n = snprintf(log_out, sizeof log_out, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ",
                     severity, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (long)tv.tv_usec, log_pid_now(), base, line);
    if (n < 0 || (size_t)n >= sizeof log_out / 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(log_message, sizeof log_message, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t msg_len = (size_t)m < sizeof log_message ? (size_t)m : sizeof log_message - 1;
    size_t used;
    size_t len = (size_t)n;
    len += log_escape(log_out + len, sizeof log_out - len - 4, log_message, msg_len, &used);
    if (used < (size_t)m) {   /* cut long lines visibly, never silently */
        memcpy(log_out + len, "...", 3);
        len += 3;
    }
    log_out[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, log_out, len);
    (void)w; /* nowhere to report a failing stderr */
}
