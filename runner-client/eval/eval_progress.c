/* eval_progress: kpt's progress lines; see eval_progress.h. */
#include "eval/eval_progress.h"

#include <string.h>

#include "core/go_quote.h"
#include "krm/rl_results.h"
#include "core/term_text.h"

#define NS_PER_MS 1000000LL
#define TENTH_NS (100 * NS_PER_MS)
#define INDENT "    "

int progress_duration(int64_t ns, buf *out)
{
    int64_t tenths = ns > 0 ? ns / TENTH_NS : 0;
    if (tenths == 0)
        return buf_append_str(out, "0s");
    if (tenths < 10)
        return buf_printf(out, "%dms", (int)(tenths * 100));
    int64_t secs = tenths / 10, h = secs / 3600, m = secs % 3600 / 60, s = secs % 60;
    int rc = 0;
    if (h)
        rc |= buf_printf(out, "%lldh", (long long)h);
    if (h || m)
        rc |= buf_printf(out, "%lldm", (long long)m);
    rc |= buf_printf(out, "%lld", (long long)s);
    if (tenths % 10)
        rc |= buf_printf(out, ".%d", (int)(tenths % 10));
    return rc | buf_append_str(out, "s");
}

int progress_running(const char *name, buf *out)
{
    int rc = buf_append_str(out, "[RUNNING] ");
    rc |= go_quote(name, out);
    return rc | buf_append_str(out, "\n");
}

/* One line of a block: indented, line breaks inside it made spaces; text a
 * function chose is quoted (stderr) or escaped (term_text.h). */
static int block_line(const char *text, size_t len, int quote, buf *out)
{
    int rc = buf_append_str(out, INDENT);
    if (quote) {
        rc |= go_quote_bytes(text, len, out);
    } else {
        for (size_t i = 0, run; rc == 0 && i < len; i += run) {
            run = strcspn(text + i, "\n\r");
            run = run < len - i ? run : len - i;
            rc = term_escape(text + i, run, out);
            if (run < len - i) {
                rc |= buf_append_str(out, " ");
                run++;
            }
        }
    }
    return rc | buf_append_str(out, "\n");
}

static int truncated_note(size_t left_out, buf *out)
{
    return buf_printf(out,
                      INDENT "...(%zu line(s) truncated, use '--truncate-output=false' to disable)\n",
                      left_out);
}

static int results_block(const rl_list *rl, int truncate, buf *out)
{
    size_t total = rl->n_results + (rl->n_results_omitted ? 1 : 0);
    if (total == 0)
        return 0;
    size_t shown = truncate && total > PROGRESS_TRUNCATE_LINES ? PROGRESS_TRUNCATE_LINES : total;
    int rc = buf_append_str(out, "  Results:\n");
    buf line = { 0 };
    for (size_t i = 0; rc == 0 && i < shown && i < rl->n_results; i++) {
        buf_reset(&line);
        rc = rl_result_text(&rl->results[i], &line) < 0 ? -1
                                                         : block_line(line.data, line.len, 0, out);
    }
    if (rc == 0 && shown == total && rl->n_results_omitted)
        rc = buf_printf(out, INDENT "(%zu more results not shown)\n", rl->n_results_omitted);
    buf_free(&line);
    if (rc == 0 && shown < total)
        rc = truncated_note(rl->n_results + rl->n_results_omitted - shown, out);
    return rc;
}

/* The function's stderr, a line each; the empty piece after a final line
 * break is not a line. */
static int stderr_block(const char *log, size_t len, int truncate, buf *out)
{
    if (len && log[len - 1] == '\n')
        len--;
    if (len == 0)
        return 0;
    int rc = buf_append_str(out, "  Stderr:\n");
    size_t lines = 0, shown = 0;
    for (const char *p = log, *end = log + len; p <= end && rc == 0; lines++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!truncate || lines < PROGRESS_TRUNCATE_LINES) {
            rc = block_line(p, n, 1, out);
            shown++;
        }
        p += n + 1;
    }
    if (rc == 0 && shown < lines)
        rc = truncated_note(lines - shown, out);
    return rc;
}

/* "  Error: ..." with the lines after the first indented under it. */
static int error_block(const char *error, buf *out)
{
    int rc = buf_append_str(out, "  Error: ");
    for (const char *p = error; *p && rc == 0;) {
        size_t run = strcspn(p, "\n\r");
        rc = term_escape(p, run, out);
        p += run;
        if (*p == '\n' && p[1] && rc == 0)
            rc = buf_append_str(out, "\n" INDENT);
        if (*p)
            p++;
    }
    return rc | buf_append_str(out, "\n");
}

int progress_done(const progress_step *s, int truncate, buf *out)
{
    int rc = buf_append_str(out, s->failed ? "[FAIL] " : "[PASS] ");
    rc |= go_quote(s->name, out);
    rc |= buf_append_str(out, " in ");
    rc |= progress_duration(s->elapsed_ns, out);
    rc |= buf_append_str(out, "\n");
    if (rc == 0 && s->results)
        rc = results_block(s->results, truncate, out);
    if (rc == 0)
        rc = stderr_block(s->log ? s->log : "", s->log ? s->log_len : 0, truncate, out);
    if (rc == 0 && s->error)
        rc = error_block(s->error, out);
    return rc;
}
