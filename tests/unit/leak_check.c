/* leak_check: under AddressSanitizer, a unit test that leaks memory fails,
 * by its name, below LeakSanitizer's report.
 *
 * Criterion runs each test in a process of its own (BoxFort forks and
 * execs the binary again), which tells the runner the verdict as the body
 * returns, then runs the .fini functions, says the test ended, and exits.
 * LeakSanitizer's own check comes at that exit, after the verdict: a leak
 * found there fails no test (sanitizer_options.c makes it a warning that
 * fails the run). So the check runs as the test's body returns, still in
 * its main phase: the link (Makefile, SAN=1 only) sends the call each
 * Test() makes to criterion_internal_test_main here, which runs the body,
 * then the check. Memory a .fini frees is still reachable from the
 * fixture's statics then, so it is not reported. Left to the check at
 * exit: what a .fini leaks, and what a body that failed an assertion
 * leaked (it failed already). Without AddressSanitizer this file declares
 * nothing. */
#include <criterion/criterion.h>

#ifdef __SANITIZE_ADDRESS__
#include <fcntl.h>
#include <sanitizer/lsan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void __real_criterion_internal_test_main(void (*fn)(void));
void __wrap_criterion_internal_test_main(void (*fn)(void));

static void (*test_body)(void);
static int leak_reported;
static int real_stderr = STDERR_FILENO;   /* fd 2 as the process started */

/* Some tests leave fd 2 sent to a pipe or file of theirs (cr_redirect_stderr,
 * test_log.c, log_capture): the report goes to the stderr the process
 * started with, kept from before any test ran. */
__attribute__((constructor)) static void keep_real_stderr(void)
{
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0)
        real_stderr = fd;
}

/* Once the report is printed, the check at exit would print the same leaks
 * again, as a crash in the teardown: the process ends before it. Registered before the
 * body runs, so it runs after the exit handlers the body registers
 * (log_capture's) and before LeakSanitizer's, registered at start. */
static void end_before_second_report(void)
{
    if (leak_reported) {
        fflush(NULL);
        _exit(EXIT_FAILURE);
    }
}

static void check_for_leaks(void)
{
    __sanitizer_set_report_fd((void *)(intptr_t)real_stderr);
    int leaked = __lsan_do_recoverable_leak_check();
    __sanitizer_set_report_fd((void *)(intptr_t)STDERR_FILENO);   /* the default again */
    if (leaked) {
        leak_reported = 1;
        cr_assert_fail("memory leaked: LeakSanitizer's report is above");
    }
}

static void body_then_leak_check(void)
{
    test_body();
    check_for_leaks();
}

/* A ParameterizedTest's body: Criterion calls it with its parameter. */
static void param_body_then_leak_check(void *param)
{
    ((void (*)(void *))test_body)(param);
    check_for_leaks();
}

void __wrap_criterion_internal_test_main(void (*fn)(void))
{
    /* copied: this process's copy of the test's data is not aligned */
    struct criterion_test_extra_data data;
    memcpy(&data, criterion_current_test->data, sizeof data);
    test_body = fn;
    atexit(end_before_second_report);
    __real_criterion_internal_test_main(data.param_
                                            ? (void (*)(void))param_body_then_leak_check
                                            : body_then_leak_check);
}
#endif
