/* Fuzzes the Kptfile reader (lib/pkg/pipeline.c on lib/krm/yaml_load):
 * a package's Kptfile is other people's data, read by `eval --pipeline`.
 * Whatever it holds, reading it must end with steps or with a one-line
 * error, within the time and memory libFuzzer allows: a Kptfile nested
 * 2,000,000 deep once cost 800 MiB before it was refused, and an alias
 * inside its own anchor made a cycle. Each step's functionConfig must
 * then survive what the pipeline does with it: written out, read back.
 *
 * Input: [unused] [span_at] [span_len] [reps] Kptfile...
 * The span of span_len (1-32) bytes at span_at is repeated reps * 64 times
 * (tests/fuzz/fuzz_common.h: fuzz_stretch), so a seed whose span is "- "
 * or "[" or "*a, " becomes a Kptfile thousands of levels deep or an alias
 * storm with a four-byte change; libFuzzer alone grows inputs too slowly
 * to get there. configPath is read from an empty directory. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "fuzz_common.h"
#include "pkg/pipeline.h"

#define MAX_KPTFILE (64 * 1024)   /* 32,000 levels of "- " */

static char empty[] = "/tmp/fuzz_kptfile.XXXXXX";

static void remove_empty_dir(void)
{
    rmdir(empty);
}

/* One empty package for every input's configPath, removed at exit. */
static const char *empty_dir(void)
{
    static int made;
    if (!made) {
        FUZZ_CHECK(mkdtemp(empty) != NULL);
        atexit(remove_empty_dir);
        made = 1;
    }
    return empty;
}

/* A step's functionConfig is emitted into each request: it must emit, and
 * what it emits must load again. */
static void check_config(const rl_doc *config)
{
    buf text = { 0 };
    buf err = { 0 };
    if (rl_doc_emit(config, NULL, &text, &err) == 0) {
        rl_doc *again = rl_doc_load_object(text.data, text.len, &err);
        FUZZ_CHECK(again != NULL);
        rl_doc_free(again);
    } else {
        FUZZ_CHECK(err.len > 0);
    }
    buf_free(&text);
    buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    static uint8_t text[MAX_KPTFILE];
    size_t n = fuzz_stretch(data, data + 4, size - 4, text, MAX_KPTFILE);
    pipeline p = { 0 };
    buf err = { 0 };
    int rc = pipeline_parse_kptfile(&p, "Kptfile", empty_dir(), (const char *)text, n, MAX_KPTFILE, &err);
    if (rc == 0) {
        FUZZ_CHECK(p.n_steps > 0);
        for (size_t i = 0; i < p.n_steps; i++) {
            FUZZ_CHECK(p.steps[i].image && p.steps[i].image[0]);
            if (p.steps[i].config)
                check_config(p.steps[i].config);
        }
    } else {
        FUZZ_CHECK(rc == -1 && err.len > 0 && !memchr(err.data, '\n', err.len));
    }
    pipeline_free(&p);
    buf_free(&err);
    return 0;
}
