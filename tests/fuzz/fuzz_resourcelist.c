/* Fuzzes the ResourceList parser (lib/krm/resourcelist) on arbitrary bytes, the
 * way fn_verdict uses it on a function's stdout: parse, then on success count
 * the errors and render the results as text and JSON; on failure, the reason
 * must be a NUL-terminated string in the buffer, and a smaller buffer must
 * hold a prefix of the same reason. */
#include <string.h>

#include "krm/resourcelist.h"
#include "krm/rl_results.h"
#include "fuzz_common.h"

#define ERR_LEN 4096  /* as fn_verdict */
#define SHORT_ERR_LEN 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exactly sized heap copies so ASan sees any read past the end. */
    char *input = malloc(size ? size : 1);
    char *err = malloc(ERR_LEN);
    FUZZ_CHECK(input && err);
    if (size)
        memcpy(input, data, size);

    rl_list rl;
    if (rl_parse(input, size, &rl, err, ERR_LEN) == 0) {
        FUZZ_CHECK(rl.kind && strcmp(rl.kind, "ResourceList") == 0);
        FUZZ_CHECK(rl.n_results == 0 || rl.results != NULL);
        size_t errors = rl_error_count(&rl);
        FUZZ_CHECK(errors <= rl.n_results);
        for (size_t i = 0; i < rl.n_results; i++) {
            const rl_result *r = &rl.results[i];
            FUZZ_CHECK(r->n_tags == 0 || r->tags != NULL);
            for (size_t t = 0; t < r->n_tags; t++)
                FUZZ_CHECK(r->tags[t].key != NULL);
        }
        buf text = {0}, json = {0};
        FUZZ_CHECK(rl_results_text(&rl, &text) == 0);
        FUZZ_CHECK(rl_results_json(&rl, &json) == 0);
        FUZZ_CHECK(rl.n_results + rl.n_results_omitted == 0 ? text.len == 0 : 1);
        if (json.len) {
            FUZZ_CHECK(json.data[0] == '[' && json.data[json.len - 1] == ']');
            FUZZ_CHECK(strlen(json.data) == json.len);
        }
        buf_free(&text);
        buf_free(&json);
        rl_free(&rl);
    } else {
        FUZZ_CHECK(!rl.api_version && !rl.kind && !rl.results && rl.n_items == 0 &&
                   rl.n_results == 0 && rl.n_results_omitted == 0 && !rl.has_function_config);
        size_t n = strnlen(err, ERR_LEN);
        FUZZ_CHECK(n > 0 && n < ERR_LEN);
        char *short_err = malloc(SHORT_ERR_LEN);
        FUZZ_CHECK(short_err != NULL);
        rl_list rl2;
        FUZZ_CHECK(rl_parse(input, size, &rl2, short_err, SHORT_ERR_LEN) < 0);
        size_t m = strnlen(short_err, SHORT_ERR_LEN);
        FUZZ_CHECK(m < SHORT_ERR_LEN);
        FUZZ_CHECK(m <= n && memcmp(short_err, err, m) == 0);
        free(short_err);
    }
    free(err);
    free(input);
    return 0;
}
