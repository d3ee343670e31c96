/* Fuzzes the ResourceList parser (lib/krm/resourcelist) on arbitrary bytes, the
 * way fn_verdict uses it on a function's stdout: parse, then on success count
 * the errors and render the results as text and JSON; on failure, the reason
 * must be a non-empty string, the same on a second parse. */
#include <string.h>

#include "krm/resourcelist.h"
#include "krm/rl_results.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exactly sized heap copies so ASan sees any read past the end. */
    char *input = malloc(size ? size : 1);
    buf err = {0};
    FUZZ_CHECK(input != NULL);
    if (size)
        memcpy(input, data, size);

    rl_list rl;
    if (rl_parse(input, size, &rl, &err) == 0) {
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
        FUZZ_CHECK(err.len > 0 && strlen(err.data) == err.len);
        buf again = {0};
        rl_list rl2;
        FUZZ_CHECK(rl_parse(input, size, &rl2, &again) < 0);
        FUZZ_CHECK(again.len == err.len && memcmp(again.data, err.data, err.len) == 0);
        buf_free(&again);
    }
    buf_free(&err);
    free(input);
    return 0;
}
