/* Tests for term_text: runner-client's messages never carry a control byte
 * to the terminal, whoever chose the text; line breaks stay line breaks. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/term_text.h"

static char *printed(const char *what)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_geq(term_printf(f, "runner-client: %s\n", what), 0);
    fclose(f);
    return text;
}

Test(term_text, control_bytes_are_escaped_line_breaks_kept)
{
    char *text = printed("pod p: container \"function\": Error\n  \x1b]0;owned\x07 \x1b[2J"
                         "\r\xc2\x9b \xff done");
    cr_assert_str_eq(text, "runner-client: pod p: container \"function\": Error\n"
                           "  \\x1b]0;owned\\x07 \\x1b[2J\\r\\u009b \\xff done\n");
    free(text);
}

Test(term_text, plain_and_utf8_text_unchanged)
{
    char *text = printed("naïve ✓ 100%");
    cr_assert_str_eq(text, "runner-client: naïve ✓ 100%\n");
    free(text);
}

static char *printed_line(const char *fmt, const char *what)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_geq(term_line(f, fmt, what), 0);
    fclose(f);
    return text;
}

/* A one-line message stays one line whatever its argument holds: a line
 * break or carriage return in it cannot end the line or forge the next. */
Test(term_text, one_line_message_escapes_line_breaks_of_its_arguments)
{
    char *text = printed_line("runner-client render: subpackage \"%s\" failed\n",
                              "sub\n[PASS] \"x\" in 0s\r\n\x1b[2J");
    cr_assert_str_eq(text, "runner-client render: subpackage \"sub\\n[PASS] \"x\" in 0s"
                           "\\r\\n\\x1b[2J\" failed\n");
    free(text);
}

Test(term_text, one_line_message_without_a_final_line_break)
{
    char *text = printed_line("%s", "a\nb");
    cr_assert_str_eq(text, "a\\nb");
    free(text);
}
