/* sandbox_host_tmp: a kept sandbox's /tmp (sandbox_host.h), made anew after
 * each call.
 *
 * The host's /tmp is a tmpfs holding the directories that lead to what is
 * bound back into it (--functions, --sandbox-read and --sandbox-write
 * beneath /tmp): its skeleton, recorded at set-up with those binds. After a
 * call the host detaches its /tmp, with whatever the call left there in any
 * form (files it could not remove, directories renamed, modes, times,
 * extended attributes, inode flags), mounts a new tmpfs with the same
 * options, makes the skeleton again with its modes and attaches copies of
 * the binds taken before the call (a call may rename what leads to them):
 * the next call's /tmp is as new as a fresh sandbox's, its
 * inode numbers included (numbered after the last call's files, they told
 * how many it made). Its root is another inode each time: the spawner
 * makes the host's Landlock ruleset again. */
#ifndef KRM_SANDBOX_HOST_TMP_H
#define KRM_SANDBOX_HOST_TMP_H

#include <stddef.h>
#include <sys/types.h>

#define HOST_TMP_DIRS_MAX 256   /* the skeleton's directories beneath /tmp */
#define HOST_TMP_BINDS_MAX 64   /* what is bound into it */

typedef struct host_tmp {
    const char *options;        /* the tmpfs's */
    mode_t modes[HOST_TMP_DIRS_MAX];
    size_t dirs_at[HOST_TMP_DIRS_MAX];     /* their paths in text, parents first */
    size_t n_dirs;
    size_t binds_at[HOST_TMP_BINDS_MAX];   /* the binds' paths in text */
    int copies[HOST_TMP_BINDS_MAX];        /* of each, detached: the next /tmp's */
    size_t n_binds;
    char *text;
    size_t text_len, text_cap;
} host_tmp;

/* In the host at set-up, after its mounts: records the skeleton and the
 * binds of the tmpfs mounted on root ("/tmp") with options (kept: t->options
 * points to them). 0, or an errno with *step. */
int host_tmp_record(host_tmp *t, const char *root, const char *options, const char **step);

/* At each reset, once no other process of the namespace is left: root
 * detached and made again. 0, or an errno with *step (the host is then
 * ended: its /tmp may be half made). */
int host_tmp_remake(host_tmp *t, const char *root, const char **step);

/* What host_tmp_record allocated. */
void host_tmp_free(host_tmp *t);

#endif
