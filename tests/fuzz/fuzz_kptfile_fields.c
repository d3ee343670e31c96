/* Fuzzes runner-client's check of a Kptfile's field names (kptfile_fields)
 * with any YAML document read as the pipeline reader reads a Kptfile (one
 * object, flow nesting limited), deep and aliased ones included: a Kptfile
 * comes with a package, from others. The check must answer 0, or -1 with a
 * one-line reason that names a line, whatever the nodes are; its walk
 * follows kpt's types, not the input's nesting, so no input makes it
 * recurse deeper than they go. The first four bytes stretch the rest
 * (fuzz_stretch), so a seed becomes a long run of keys or "- ". */
#include "fuzz_common.h"
#include "pkg/kptfile_fields.h"
#include "krm/rl_edit.h"

#define MAX_INPUT (256u << 10)

static uint8_t *scratch;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    if (!scratch)
        FUZZ_CHECK((scratch = malloc(MAX_INPUT)) != NULL);
    size_t len = fuzz_stretch(data, data + 4, size - 4, scratch, MAX_INPUT);
    buf why = { 0 };
    /* read as the pipeline reader reads a Kptfile (one object, nesting limited) */
    rl_doc *d = rl_doc_load_object((const char *)scratch, len, &why);
    buf_reset(&why);
    if (!d) {
        buf_free(&why);
        return 0;
    }
    int rc = kptfile_fields_check(rl_doc_yaml(d), &why);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc < 0)
        FUZZ_CHECK(why.data && (!strncmp(why.data, "line ", 5) || !strcmp(why.data, "out of memory")) &&
                   !strchr(why.data, '\n'));
    rl_doc_free(d);
    buf_free(&why);
    return 0;
}
