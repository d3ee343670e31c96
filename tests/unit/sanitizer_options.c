/* The unit binary's sanitizer settings, built in so that they hold however
 * it is run (make unit, by hand, CI).
 *
 * A leak is found by LeakSanitizer as a test's process exits, after the
 * test has reported its end: Criterion ignores that process's exit status
 * (LeakSanitizer's exitcode), so a leaking test passed. abort_on_error
 * makes the leak an abort instead, which Criterion reports as "Warning!
 * The test `suite::name` crashed during its setup or teardown" below the
 * leak's report and counts as a warning: the run exits 1. (Read by
 * AddressSanitizer only: without it, an unused function.) */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
    return "abort_on_error=1";
}
