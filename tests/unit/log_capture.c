/* log_capture: a unit test's log lines shown only when it fails; see log_capture.h. */
#include "log_capture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fdio.h"

#define LOG_CAPTURE_MAX (16u << 20)   /* shown of a failing test's log: its first 16 MiB */

/* Under a sanitizer: called before its report ends the process. */
void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static int real_stderr = -1;   /* fd 2 as it was; -1: not capturing */
static int captured = -1;      /* the temporary file fd 2 writes to */

static void stop_capturing(void)
{
    dup2(real_stderr, STDERR_FILENO);
    close(real_stderr);
    close(captured);
    real_stderr = captured = -1;
}

/* The test did not reach its end: what it logged, then fd 2 as it was. */
static void show_captured(void)
{
    if (real_stderr < 0)
        return;
    buf log = {0};
    static const char head[] = "---- the log of the test that failed ----\n";
    int whole = lseek(captured, 0, SEEK_SET) == 0 &&
                fd_read_all(captured, &log, LOG_CAPTURE_MAX) == 0;
    fd_write_all(real_stderr, head, sizeof head - 1);
    if (log.len)
        fd_write_all(real_stderr, log.data, log.len);
    if (!whole) {
        static const char cut[] = "---- (not all of it: too long, or unreadable) ----\n";
        fd_write_all(real_stderr, cut, sizeof cut - 1);
    }
    buf_free(&log);
    stop_capturing();
}

void log_capture_start(void)
{
    static int hooked;
    cr_assert_eq(real_stderr, -1, "the log is captured already");
    FILE *f = tmpfile();
    cr_assert(f, "a temporary file for the test's log");
    captured = dup(fileno(f));
    fclose(f);
    real_stderr = dup(STDERR_FILENO);
    cr_assert(captured >= 0 && real_stderr >= 0 && dup2(captured, STDERR_FILENO) == STDERR_FILENO,
              "capturing the test's log");
    if (!hooked) {
        hooked = 1;
        atexit(show_captured);
        if (__sanitizer_set_death_callback)
            __sanitizer_set_death_callback(show_captured);
    }
}

void log_capture_text(buf *out)
{
    cr_assert(real_stderr >= 0, "the log is not being captured");
    /* fd 2 shares the file's offset: it is put back at the end for the next line */
    int read = lseek(captured, 0, SEEK_SET) == 0 && fd_read_all(captured, out, LOG_CAPTURE_MAX) == 0;
    lseek(captured, 0, SEEK_END);
    cr_assert(read, "reading the test's log");
}

void log_capture_end(void)
{
    if (real_stderr >= 0)
        stop_capturing();
}
