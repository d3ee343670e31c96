/* Fuzzes the FunctionConfig reader (lib/krm/fnconfig): a FunctionConfig
 * file is written by whoever configures the runner, its annotations
 * included (the sandbox's settings: fn.kpt.dev/sandbox-*). The input is
 * one file of YAML documents.
 *
 * Properties: reading never crashes, refuses with a reason naming the file,
 * and what it accepts is within the bounds the flags have: each sandbox
 * limit 0 (unset) or in its range, network -1, 0 or 1; min-ready-pods -1
 * or 0-64. */
#include "fuzz_common.h"
#include "krm/fnconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fnconfig cfg = {0};
    buf err = {0};
    if (fnconfig_parse("fc.yaml", (const char *)data, size, "/functions", &cfg, &err) < 0) {
        FUZZ_CHECK(err.data && !strncmp(err.data, "fc.yaml", 7));
        FUZZ_CHECK(cfg.n == 0);
    }
    for (size_t i = 0; i < cfg.n; i++) {
        const fnconfig_entry *e = &cfg.entries[i];
        const fnconfig_sandbox *s = &e->sandbox;
        FUZZ_CHECK(s->network >= -1 && s->network <= 1);
        FUZZ_CHECK(s->memory_mib <= (1ULL << 30) && s->file_size_mib <= (1ULL << 30));
        FUZZ_CHECK(s->cpu_seconds <= (1ULL << 40));
        FUZZ_CHECK(!s->processes || (s->processes >= 300 && s->processes <= 4194303));
        FUZZ_CHECK(!s->open_files || (s->open_files >= 16 && s->open_files <= (1ULL << 20)));
        FUZZ_CHECK(e->pod.min_ready >= -1 && e->pod.min_ready <= FNCONFIG_MAX_MIN_READY);
    }
    fnconfig_free(&cfg);
    buf_free(&err);
    return 0;
}
