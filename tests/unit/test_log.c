/* Unit tests for lib/core/log: the escaper (each class of byte, cuts at the
 * output's end, never inside an escape or a character) and log_line's
 * records, read back from a pipe standing in for stderr: one line each,
 * no control byte, whatever the message held. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"

static char *escape(const char *in, size_t len)
{
    static char out[1024];
    size_t used;
    size_t n = log_escape(out, sizeof out - 1, in, len, &used);
    cr_assert_eq(used, len);
    out[n] = '\0';
    return out;
}

#define ESC(lit) escape(lit, sizeof lit - 1)

Test(log, printable_text_and_utf8_pass_unchanged)
{
    cr_assert_str_eq(ESC("ghcr.io/kptdev/fn:v1 \"quoted\" back\\slash ~"),
                     "ghcr.io/kptdev/fn:v1 \"quoted\" back\\slash ~");
    cr_assert_str_eq(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0"),   /* é € 😀 NBSP */
                     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
}

Test(log, c0_controls_and_del_are_escaped)
{
    cr_assert_str_eq(ESC("a\nb\rc\td"), "a\\nb\\rc\\td");
    cr_assert_str_eq(ESC("\x1b[31mred\x07"), "\\x1b[31mred\\x07");
    cr_assert_str_eq(ESC("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
    cr_assert_str_eq(escape("a\0b", 3), "a\\x00b");
}

Test(log, c1_controls_are_escaped)
{
    cr_assert_str_eq(ESC("\xc2\x80 \xc2\x85 \xc2\x9b[31m \xc2\x9f"), "\\u0080 \\u0085 \\u009b[31m \\u009f");
}

Test(log, invalid_utf8_bytes_are_escaped_one_by_one)
{
    cr_assert_str_eq(ESC("\x80\xff"), "\\x80\\xff");
    cr_assert_str_eq(ESC("\xc0\xaf"), "\\xc0\\xaf");                  /* overlong '/' */
    cr_assert_str_eq(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");          /* a surrogate */
    cr_assert_str_eq(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  /* above U+10FFFF */
    cr_assert_str_eq(ESC("\xe2\x82x"), "\\xe2\\x82x");                  /* cut short */
    cr_assert_str_eq(ESC("\xc2"), "\\xc2");                              /* at the end */
    cr_assert_str_eq(ESC("\x9b[2J"), "\\x9b[2J");                       /* raw 8-bit CSI */
}

/* The output ends where the next piece would not fit: never half an
 * escape, never half a character, and `used` says where it stopped. */
Test(log, stops_before_what_does_not_fit)
{
    char out[8];
    size_t used;
    cr_assert_eq(log_escape(out, 5, "abc\x1b", 4, &used), 3);
    cr_assert_eq(used, 3);
    cr_assert_eq(log_escape(out, 4, "ab\xe2\x82\xac", 5, &used), 2);
    cr_assert_eq(used, 2);
    cr_assert_eq(log_escape(out, 5, "ab\xe2\x82\xac", 5, &used), 5);
    cr_assert_eq(used, 5);
    cr_assert_eq(log_escape(out, 0, "a", 1, &used), 0);
    cr_assert_eq(used, 0);
}

/* ---- log_line, through a pipe as stderr --------------------------------- */

static int capture(void)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
    cr_assert_eq(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    return p[0];
}

static size_t drain(int fd, char *out, size_t cap)
{
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(fd, out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    return n;
}

static void assert_one_clean_line(const char *text, size_t len)
{
    cr_assert_gt(len, 0);
    cr_assert_eq(text[len - 1], '\n');
    for (size_t i = 0; i < len - 1; i++) {
        unsigned char c = (unsigned char)text[i];
        cr_assert(c >= 0x20 && c != 0x7f, "raw byte 0x%02x at %zu in: %s", c, i, text);
        cr_assert(!(c == 0xc2 && (unsigned char)text[i + 1] < 0xa0), "raw C1 at %zu", i);
    }
}

Test(log, a_forged_record_stays_inside_its_own_line)
{
    int fd = capture();
    const char *image = "img\r\x1b[31mE1124 00:00:00.000000       1 fake.go:1] forged\x07\n"
                        "I0101 00:00:00.000000 1 x.c:1] second forged\x1b]0;title\x07";
    log_info("Evaluating \"%s\" in executable mode", image);
    char got[8192];
    size_t n = drain(fd, got, sizeof got);
    assert_one_clean_line(got, n);
    cr_assert(strstr(got, "] Evaluating \"img\\r\\x1b[31mE1124 00:00:00.000000       1 fake.go:1] "
                          "forged\\x07\\nI0101 00:00:00.000000 1 x.c:1] second forged"
                          "\\x1b]0;title\\x07\" in executable mode\n"), "%s", got);
    cr_assert_eq(got[0], 'I');
}

/* A huge message (a whole stderr, all escapes) is one bounded line, cut
 * with "..."; plain text is cut the same way. */
Test(log, huge_messages_are_cut_visibly)
{
    size_t big = 1 << 20;
    char *text = malloc(big + 1);
    cr_assert_not_null(text);
    memset(text, '\x1b', big);
    text[big] = '\0';
    int fd = capture();
    log_warn("stderr: %s", text);
    static char got[1 << 16];
    size_t n = drain(fd, got, sizeof got);
    assert_one_clean_line(got, n);
    cr_assert_leq(n, 8192);
    cr_assert(n > 4 && !memcmp(got + n - 4, "...\n", 4), "%s", got + (n > 64 ? n - 64 : 0));
    cr_assert(!strstr(got, "\\x1...") && !strstr(got, "\\x...") && !strstr(got, "\\...") ,
              "an escape was cut: %s", got + n - 16);

    memset(text, 'a', big);
    log_error("%s", text);
    n = drain(fd, got, sizeof got);
    assert_one_clean_line(got, n);
    cr_assert(n > 4000 && n < 4200, "%zu", n);
    cr_assert(!memcmp(got + n - 4, "...\n", 4));
    free(text);
}

Test(log, short_messages_are_not_cut)
{
    int fd = capture();
    log_info("%s", "a\nb");
    char got[256];
    size_t n = drain(fd, got, sizeof got);
    cr_assert(n > 7 && !strcmp(got + n - 7, "] a\\nb\n"), "%s", got);
}

/* The pid field of a line is the process that wrote it: the id is asked of
 * the kernel once, and again in a fork()ed child (which would otherwise
 * print its parent's). */
static long line_pid(const char *line)
{
    /* "I1126 20:00:00.000000   12345 file.c:1] ..." */
    const char *p = strchr(line, ' ');
    cr_assert(p && (p = strchr(p + 1, ' ')), "%s", line);
    return strtol(p, NULL, 10);
}

Test(log, each_line_names_the_process_that_wrote_it_forked_children_too)
{
    int fd = capture();
    char got[512];
    log_info("parent");
    drain(fd, got, sizeof got);
    cr_assert_eq(line_pid(got), (long)getpid(), "%s", got);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        log_info("child");
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    drain(fd, got, sizeof got);
    cr_assert(strstr(got, "] child\n"), "%s", got);
    cr_assert_eq(line_pid(got), (long)child, "%s", got);
    log_info("parent again");
    drain(fd, got, sizeof got);
    cr_assert_eq(line_pid(got), (long)getpid(), "%s", got);
}
