/* The unit binary's sanitizer settings, built in so that they hold however
 * it is run (make unit, by hand, CI).
 *
 * Each test is checked for leaks as its body returns (leak_check.c: a leak
 * fails the test). What its .fini functions leak is found only by
 * LeakSanitizer's check at the test process's exit, after the test has
 * reported its end: Criterion ignores that process's exit status
 * (LeakSanitizer's exitcode). abort_on_error makes such a leak an abort,
 * which Criterion reports as "Warning! The test `suite::name` crashed
 * during its setup or teardown" below the leak's report and counts as a
 * warning: the run exits 1. (Read by AddressSanitizer only: without it, an
 * unused function.) */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
    return "abort_on_error=1";
}
