/* Fuzzes lib/krm/rl_scan differentially: whenever the scanner takes an input
 * (it is in its subset of block YAML), the parse with the items cut out must
 * say exactly what the parse of the whole input by libyaml says — same
 * success, same error text, same counts and results. And judging in steps
 * (rl_judge_step, as the server does) must say what one call says, at a
 * budget of 1 to 8 events per step chosen by the input's length. */
#include <string.h>

#include "fuzz_common.h"
#include "rl_outcome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *input = malloc(size ? size : 1);   /* exact size: ASan sees overreads */
    FUZZ_CHECK(input != NULL);
    if (size)
        memcpy(input, data, size);
    buf scanned = {0}, full = {0};
    if (rl_outcomes_differ(input, size, &scanned, &full) < 0) {
        fprintf(stderr, "rl_scan: %s\nlibyaml: %s\n", scanned.data, full.data);
        FUZZ_CHECK(!"the two ways disagree");
    }
    buf_free(&scanned);
    buf_free(&full);
    buf whole = {0}, stepped = {0};
    if (rl_steps_differ(input, size, RL_PARSE_AUTO, 1 + size % 8, &whole, &stepped) < 0) {
        fprintf(stderr, "in one call: %s\nin steps: %s\n", whole.data, stepped.data);
        FUZZ_CHECK(!"judging in steps disagrees");
    }
    buf_free(&whole);
    buf_free(&stepped);
    free(input);
    return 0;
}
