/* Unit tests for lib/pkg/results_text: results kept as YAML text,
 * each with its step's tags, within a bound past which a warning result
 * says how many were dropped. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "pkg/results_text.h"

static rl_tag OWN_TAGS[] = { { "owner", "me" }, { "fn.kpt.dev/step", "99" } };
static rl_result RESULTS[] = {
    { .message = "bad replicas", .severity = "error", .tags = OWN_TAGS, .n_tags = 2 },
    { .message = "note", .severity = "info" },
    { .message = "third", .severity = "warning", .has_field = 1, .field_path = "spec.x",
      .field_current_value = "3", .field_current_type = RL_VALUE_INT },
};
static const rl_kv STEP[] = { { "fn.kpt.dev/step", "1" }, { "fn.kpt.dev/image", "img" } };

static rl_list list_of(size_t n, size_t omitted)
{
    return (rl_list){ .kind = "ResourceList", .results = RESULTS, .n_results = n,
                      .n_results_omitted = omitted };
}

Test(results_text, each_result_gets_the_step_tags_over_its_own)
{
    buf out = { 0 };
    rl_list l = list_of(3, 0);
    size_t dropped = 99;
    cr_assert_eq(results_text_append(&out, 1 << 20, 1 << 20, &l, "UNAVAILABLE: down", STEP, 2,
                                     &dropped), 0);
    cr_assert_eq(dropped, 0);
    cr_assert_str_eq(out.data,
                     "- message: bad replicas\n  severity: error\n"
                     "  tags:\n    owner: me\n    fn.kpt.dev/step: '1'\n"
                     "    fn.kpt.dev/image: img\n"
                     "- message: note\n  severity: info\n"
                     "  tags:\n    fn.kpt.dev/step: '1'\n    fn.kpt.dev/image: img\n"
                     "- message: third\n  severity: warning\n"
                     "  field:\n    path: spec.x\n    currentValue: 3\n"
                     "  tags:\n    fn.kpt.dev/step: '1'\n    fn.kpt.dev/image: img\n"
                     "- message: 'UNAVAILABLE: down'\n  severity: error\n"
                     "  tags:\n    fn.kpt.dev/step: '1'\n    fn.kpt.dev/image: img\n");
    buf_free(&out);
}

Test(results_text, past_the_room_a_warning_says_how_many_were_dropped)
{
    buf out = { 0 };
    rl_list l = list_of(3, 0);
    size_t dropped = 0;
    cr_assert_eq(results_text_append(&out, 100, 4096, &l, "failed", NULL, 0, &dropped), 0);
    cr_assert_eq(dropped, 3);   /* "note", "third" and the error */
    cr_assert(strncmp(out.data, "- message: bad replicas\n", 24) == 0, "%s", out.data);
    cr_assert(strstr(out.data, "- message: 'runner-client dropped 3 of this function''s 4 "
                               "results: the results kept for this report reached their "
                               "limit of 4096 bytes (8 x --max-message)'\n  severity: warning\n"),
              "%s", out.data);
    cr_assert_null(strstr(out.data, "note"));
    /* once full, every later step keeps only its note */
    size_t before = out.len;
    cr_assert_eq(results_text_append(&out, 100, 4096, &l, NULL, STEP, 2, &dropped), 0);
    cr_assert_eq(dropped, 3);
    cr_assert(strstr(out.data + before, "dropped 3 of this function''s 3 results"), "%s",
              out.data + before);
    buf_free(&out);
}

Test(results_text, results_the_judge_did_not_keep_are_counted_too)
{
    buf out = { 0 };
    rl_list l = list_of(2, 5);
    size_t dropped = 0;
    cr_assert_eq(results_text_append(&out, 1 << 20, 1 << 20, &l, NULL, NULL, 0, &dropped), 0);
    cr_assert_eq(dropped, 5);
    cr_assert(strstr(out.data, "runner-client dropped 5 of this function''s 7 results: it keeps "
                               "at most 2 results of one answer"), "%s", out.data);
    buf_free(&out);
}

Test(results_text, the_bound_is_8_messages_and_saturates)
{
    cr_assert_eq(results_text_bound(6291456), 8 * (size_t)6291456);
    cr_assert_eq(results_text_bound(SIZE_MAX / 2), SIZE_MAX);
}
