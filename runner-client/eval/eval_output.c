/* eval_output: -o and the writing of eval's output; see eval_output.h. */
#include "eval/eval_output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fdio.h"
#include "pkg/pkg_write.h"
#include "core/term_text.h"

const char *eval_command = "eval";


int eval_cli_out_prepare(const eval_cli_out *o, buf *err)
{
    if (!o->results_dir)
        return 0;
    if (!*o->results_dir)
        return buf_fail(err, "--results-dir needs a directory");
    buf why = { 0 };
    int rc = 0;
    if (pkg_make_dirs(o->results_dir, &why) < 0)
        rc = buf_fail(err, "cannot read or create results dir \"%s\": %s", o->results_dir,
                      why.data ? why.data : "out of memory");
    buf_free(&why);
    return rc;
}

int eval_output_choose(eval_output *o, const char *input, const char *flag, buf *err)
{
    struct stat st;
    *o = (eval_output){ .kind = EVAL_OUT_STDOUT };
    if (!flag) {
        if (input && strcmp(input, "-") && stat(input, &st) == 0 && S_ISDIR(st.st_mode))
            *o = (eval_output){ .kind = EVAL_OUT_IN_PLACE, .dir = input };
        return 0;
    }
    if (!strcmp(flag, "stdout"))
        return 0;
    if (!strcmp(flag, "unwrap")) {
        o->kind = EVAL_OUT_UNWRAP;
        return 0;
    }
    if (!*flag)
        return buf_fail(err, "-o needs stdout, unwrap or a directory");
    if (lstat(flag, &st) == 0 || errno != ENOENT)
        return buf_fail(err, "-o %s: directory \"%s\" already exists, please delete the "
                             "directory and retry", flag, flag);
    *o = (eval_output){ .kind = EVAL_OUT_DIR, .dir = flag };
    return 0;
}

static int write_stdout(const char *data, size_t len)
{
    if (fd_write_all(STDOUT_FILENO, data, len) < 0) {
        term_line(stderr, "runner-client %s: write: %s\n", eval_command, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_package(const eval_output *o, const buf *input, const char *final, size_t len,
                         buf *err)
{
    pkg_layout in = { 0 }, out = { 0 };
    int rc = pkg_layout_build(final, len, "the output", &out, err);
    if (rc == 0 && o->kind == EVAL_OUT_IN_PLACE)
        rc = pkg_layout_build(input->data, input->len, "the input", &in, err);
    if (rc == 0)
        rc = o->kind == EVAL_OUT_IN_PLACE ? pkg_write_in_place(o->dir, &in, &out, err)
                                          : pkg_write_new(o->dir, &out, err);
    pkg_layout_free(&in);
    pkg_layout_free(&out);
    return rc;
}

int eval_output_write(const eval_output *o, const buf *input, const char *final, size_t len,
                      int failed)
{
    buf why = { 0 };
    int rc = 0;
    if (!final)
        return 0; /* no answer: the failure is already reported */
    if (o->kind == EVAL_OUT_STDOUT)
        return write_stdout(final, len);
    if (failed)
        return 0;
    if (o->kind == EVAL_OUT_UNWRAP) {
        buf text = { 0 };
        rc = pkg_unwrap(final, len, "the output", &text, &why);
        if (rc == 0)
            rc = write_stdout(text.data ? text.data : "", text.len);
        else
            term_line(stderr, "runner-client %s: %s\n", eval_command,
                      why.data ? why.data : "out of memory");
        buf_free(&text);
        buf_free(&why);
        return rc;
    }
    rc = write_package(o, input, final, len, &why);
    if (rc < 0)
        term_line(stderr, "runner-client %s: cannot write the package: %s\n", eval_command,
                  why.data ? why.data : "out of memory");
    buf_free(&why);
    return rc;
}
