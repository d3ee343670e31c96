/* rl_outcome: everything rl_parse_with says about an input, as one string,
 * so that the libyaml way and the rl_scan way can be compared whole.
 * Shared by tests/unit/test_rl_scan.c, test_resourcelist.c and
 * tests/fuzz/fuzz_rl_scan.c. */
#ifndef KRM_RL_OUTCOME_H
#define KRM_RL_OUTCOME_H

#include <string.h>

#include "core/buf.h"
#include "krm/resourcelist.h"
#include "krm/rl_results.h"

/* Appends what an rl_parse_with answer says to out; frees rl. */
static inline int rl_outcome_text(int rc, rl_list *rl, const char *err, buf *out)
{
    if (rc == -2)
        return rc;
    if (rc < 0) {
        buf_printf(out, "error: %s", err);
        return rc;
    }
    buf_printf(out, "kind=%s apiVersion=%s items=%zu functionConfig=%d results=%zu+%zu\n",
               rl->kind, rl->api_version ? rl->api_version : "(none)", rl->n_items,
               rl->has_function_config, rl->n_results, rl->n_results_omitted);
    rl_results_text(rl, out);
    buf_append_str(out, "\n");
    rl_results_json(rl, out);
    rl_free(rl);
    return rc;
}

/* Appends the outcome to out; returns rl_parse_with's answer (-2 when
 * SCAN_ONLY found the input outside the subset; out is then untouched). */
static inline int rl_outcome(const char *data, size_t len, rl_parse_mode mode, buf *out)
{
    buf err = {0};
    rl_list rl;
    int rc = rl_parse_with(data, len, mode, &rl, &err);
    rc = rl_outcome_text(rc, &rl, err.data ? err.data : "", out);
    buf_free(&err);
    return rc;
}

/* The same, judged in steps of `budget` events (rl_judge_step), as the
 * server judges; *steps counts them. */
static inline int rl_outcome_stepped(const char *data, size_t len, rl_parse_mode mode,
                                     size_t budget, buf *out, size_t *steps)
{
    buf err = {0};
    rl_list rl;
    rl_judge *j = rl_judge_new(data, len, mode);
    if (!j)
        return -3;
    int rc;
    *steps = 0;
    do {
        rc = rl_judge_step(j, budget, &rl, &err);
        ++*steps;
    } while (rc == 1);
    rl_judge_free(j);
    rc = rl_outcome_text(rc, &rl, err.data ? err.data : "", out);
    buf_free(&err);
    return rc;
}

/* 0 when judging in steps of `budget` events says exactly what one call
 * says, else -1; both outcomes are left in *whole, *stepped. */
static inline int rl_steps_differ(const char *data, size_t len, rl_parse_mode mode, size_t budget,
                                  buf *whole, buf *stepped)
{
    size_t steps;
    int rc = rl_outcome(data, len, mode, whole);
    if (rl_outcome_stepped(data, len, mode, budget, stepped, &steps) != rc)
        return -1;
    return strcmp(whole->data ? whole->data : "", stepped->data ? stepped->data : "") == 0 ? 0 : -1;
}

/* 1 when rl_scan does not take the input, 0 when it does and the outcomes
 * agree, -1 when they differ. Both outcomes are left in *scanned, *full. */
static inline int rl_outcomes_differ(const char *data, size_t len, buf *scanned, buf *full)
{
    int rc = rl_outcome(data, len, RL_PARSE_SCAN_ONLY, scanned);
    if (rc == -2)
        return 1;
    if (rl_outcome(data, len, RL_PARSE_LIBYAML, full) != rc)
        return -1;
    return strcmp(scanned->data, full->data) == 0 ? 0 : -1;
}

#endif
